"""An InferenceService run's kind (``run.WorkloadKind``): the simulated KServe, Deployment and
ReplicaSet controllers (``memory.workloads``) on the simulated cluster (the same pod physics,
scheduler and kubelets as a ModelServing run, and the same loop: ``run.ScenarioRun``), traffic split
by the InferenceService's weights (``kserve.router``), and the trace
(``trace.InferenceServiceTraceWriter``).

Frames come from ``controller.core.kserve.view.inferenceservice_view`` (the read side the
dashboard and the REST API use), built after every instant at which any object changed. Events:

- ``apply`` creates the InferenceService (the ``kserveConfig`` ConfigMap exists from t=0);
- ``setImage``, ``patch``, ``promote``, ``rollback`` patch it through
  ``controller.core.kserve.controls`` (what a user of KServe changes), with the change cause as an
  annotation; ``rollback`` with ``toRevision`` restores the component's pod template of that
  revision. A Standard-mode canary's ``promote`` and ``rollback`` go in the product's steps
  (``controller.core.kserve.handover``): the runner takes the next one as the product would, as
  soon as KServe has done the current one, and records it as a ``handover`` action;
- ``pause``/``resume`` set ``spec.paused`` on its Deployments (Standard mode);
- ``deletePods`` (matched on the view's instances) and ``restartController``, which restarts the
  simulated controllers (their queues are lost; they start again from a full list); ``failNode``
  and ``addNodes`` are the run's own (``run.ScenarioRun``).

Convergence is the view's ``converged``, told to the run's ``Settling`` after every frame: the run
ends 60 s after it once every event ran, and traffic starts when it first converges, as in a
ModelServing run.
"""

from __future__ import annotations

import random
from typing import Any

from controller.core import naming
from controller.core.controls import ControlError
from controller.core.kserve import apps, controls, handover
from controller.core.kserve.view import inferenceservice_view
from controller.core.ports import NotFound, Obj

from ..memory.cluster import SimCluster
from ..memory.store import Change
from ..memory.workloads import ACTOR
from ..objects import DEPLOYMENT, INFERENCESERVICE, REPLICASET
from ..scenario import Event, Scenario, isvc_control_patch
from ..settling import Settling
from ..trace import InferenceServiceTraceWriter
from . import controller as kserve_controller
from .router import InferenceServiceRouter


class InferenceServiceKind:
    def __init__(self, scenario: Scenario, cluster: SimCluster, settling: Settling) -> None:
        self.scenario = scenario
        self.namespace = scenario.namespace
        self.name = scenario.ms_name
        self.cluster = cluster
        self.settling = settling
        self.loop = cluster.loop
        self.store = cluster.store
        self.router = InferenceServiceRouter(
            self.store,
            self.loop,
            cluster.config,
            self.namespace,
            self.name,
            scenario.traffic,
            random.Random(f"{scenario.seed}:traffic"),
        )
        cluster.kubelets.on_stop.append(self.router.interrupt)
        self.trace = InferenceServiceTraceWriter(scenario.name, scenario.seed)
        self._frame_pending = False
        self._handover_pending = False
        self.store.add_listener(self._on_change)
        # The kserveConfig ConfigMap exists from t=0, before the scenario's events.
        if scenario.kserve_config is not None:
            self.store.create_object(kserve_controller.config_map(scenario.kserve_config))

    # -- the run's hooks (``run.WorkloadKind``) ------------------------------------------------------

    def begin(self) -> None:
        self.loop.call_at(0.0, lambda: self._frame(force=True))

    # -- observing ------------------------------------------------------------------------------------

    def _on_change(self, change: Change) -> None:
        if change.by == ACTOR:
            self._record_action(change)
        if not self._frame_pending:
            self._frame_pending = True
            self.loop.call_later(0, self._frame)
        # The product watches the InferenceService it is handing over (a promote or rollback in
        # steps) and takes the next step as soon as KServe has done the current one.
        if not self._handover_pending:
            self._handover_pending = True
            self.loop.call_later(0, self._advance_handover)

    def _record_action(self, change: Change) -> None:
        now = self.loop.now()
        obj, old = change.obj, change.old
        if change.kind == REPLICASET:
            if change.type == "ADDED":
                self.trace.action(
                    now,
                    {
                        "verb": "createReplicaSet",
                        "replicaSet": change.name,
                        "replicas": apps.replicas_of(obj),
                        "revision": apps.revision_of(obj),
                    },
                )
            elif change.type == "DELETED":
                self.trace.action(now, {"verb": "deleteReplicaSet", "replicaSet": change.name})
            elif apps.replicas_of(obj) != apps.replicas_of(old):
                self.trace.action(
                    now,
                    {
                        "verb": "scale",
                        "replicaSet": change.name,
                        "from": apps.replicas_of(old),
                        "to": apps.replicas_of(obj),
                    },
                )
        elif change.kind == DEPLOYMENT and change.type in ("ADDED", "DELETED"):
            verb = "createDeployment" if change.type == "ADDED" else "deleteDeployment"
            self.trace.action(now, {"verb": verb, "deployment": change.name})
        elif change.kind == "Pod":
            ref = apps.controller_ref(obj) or {}
            if change.type == "ADDED":
                self.trace.action(now, {"verb": "create", "pod": change.name, "replicaSet": ref.get("name")})
            elif obj["metadata"].get("deletionTimestamp") and not (old or {})["metadata"].get("deletionTimestamp"):
                self.trace.action(now, {"verb": "delete", "pod": change.name, "replicaSet": ref.get("name")})

    def view(self) -> dict[str, Any] | None:
        try:
            isvc = self.store.get_object(INFERENCESERVICE, self.namespace, self.name)
        except NotFound:
            return None
        deployments = self.store.list_objects(DEPLOYMENT, self.namespace, owner=self.name)
        rss: list[Obj] = []
        for d in deployments:
            rss += self.store.list_objects(REPLICASET, self.namespace, owner=apps.name(d))
        pods: list[Obj] = []
        for rs in rss:
            pods += self.store.list_controlled_pods(self.namespace, apps.name(rs))
        return inferenceservice_view(
            isvc,
            deployments,
            rss,
            pods,
            kserve_controller.read_deploy_config(self.store),
            self.loop.now(),
            in_flight=self.router.in_flight_by_pod(),
            runtimes=kserve_controller.read_runtimes(self.store, self.namespace),
        )

    def _frame(self, *, force: bool = False) -> None:
        self._frame_pending = False
        view = self.view()
        if view is None:
            if force:
                empty = {"spec": None, "conditions": [], "instances": [], "deployments": []}
                self.trace.offer_isvc_frame(self.loop.now(), empty, force=True)
            return
        self.trace.offer_isvc_frame(self.loop.now(), view, force=force)
        self.settling.observe(bool(view.get("converged")))

    def _advance_handover(self) -> None:
        self._handover_pending = False
        try:
            isvc = self._isvc()
        except NotFound:
            return
        if handover.ANNOTATION not in apps.annotations(isvc):
            return
        deployments = self.store.list_objects(DEPLOYMENT, self.namespace, owner=self.name)
        patch, step = handover.advance(isvc, deployments, kserve_controller.read_deploy_config(self.store))
        if patch is None:
            return
        ongoing = handover.read(isvc)
        previous, self.store.actor = self.store.actor, "rolloutui"
        try:
            self.store.patch_object(INFERENCESERVICE, self.namespace, self.name, patch)
        finally:
            self.store.actor = previous
        action = {"verb": "handover", "step": step}
        if ongoing is not None:
            action.update(action=ongoing.action, canary=ongoing.canary)
        self.trace.action(self.loop.now(), action)

    # -- events ---------------------------------------------------------------------------------------

    def _isvc(self) -> Obj:
        return self.store.get_object(INFERENCESERVICE, self.namespace, self.name)

    def do(self, e: Event) -> str | None:
        s, store, ns = self.scenario, self.store, self.namespace
        config = kserve_controller.read_deploy_config(store)
        if e.do == "apply":
            store.create_object(s.manifest)
            return None
        if e.do in ("pause", "resume"):
            controls.check_pausable(self._isvc(), config)
            patch = controls.pause_patch() if e.do == "pause" else controls.resume_patch()
            for d in store.list_objects(DEPLOYMENT, ns, owner=self.name):
                store.patch_object(DEPLOYMENT, ns, apps.name(d), patch)
            return None
        if e.do in ("setImage", "patch", "promote", "rollback"):
            isvc = self._isvc()
            if e.do == "rollback" and "toRevision" in e.args:
                patch = self._rollback_to_revision(isvc, config, e)
            elif e.do == "promote":
                patch = handover.begin_promote(isvc, config, canary=e.args.get("canary"))
            elif e.do == "rollback":
                patch = handover.begin_rollback(
                    isvc, config, canary=e.args.get("canary"), component=e.args.get("component", "predictor")
                )
            else:
                patch = isvc_control_patch(isvc, e, config)
            cause = f"simulate: {e.do}" + (f": {e.reason}" if e.reason else "")
            meta = patch.get("metadata") or {}
            annotations = {**(meta.get("annotations") or {}), naming.ANNOTATION_CHANGE_CAUSE: cause}
            store.patch_object(
                INFERENCESERVICE, ns, self.name, {**patch, "metadata": {**meta, "annotations": annotations}}
            )
            return None
        if e.do == "deletePods":
            view = self.view() or {}
            victims = [
                i
                for i in view.get("instances") or []
                if i["state"] != "Deleting"
                and all(i.get(k) == e.args[k] for k in ("component", "revision", "pod") if k in e.args)
            ]
            for i in victims:
                store.delete_pod(ns, i["pod"])
            return None if victims else "no pod matched"
        if e.do == "restartController":
            self.cluster.workloads.restart()
            return None
        raise AssertionError(e.do)

    def _rollback_to_revision(self, isvc: Obj, config, e: Event) -> Obj:
        component = e.args.get("component", "predictor")
        number = e.args["toRevision"]
        for d in self.store.list_objects(DEPLOYMENT, self.namespace, owner=self.name):
            if kserve_controller.component_of(d) != component:
                continue
            revision = apps.labels(d).get(apps.LABEL_KNATIVE_REVISION)
            if revision is not None:
                if kserve_controller.revision_number(d) == number:
                    return controls.rollback_to_template(
                        isvc, config, component=component, template=d["spec"]["template"]
                    )
                continue
            for rs in self.store.list_objects(REPLICASET, self.namespace, owner=apps.name(d)):
                if apps.revision_of(rs) == number:
                    return controls.rollback_to_template(
                        isvc, config, component=component, template=rs["spec"]["template"]
                    )
        raise ControlError(f"{component} has no revision {number}")
