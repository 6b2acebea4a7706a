"""Run an InferenceService scenario: the simulated KServe, Deployment and ReplicaSet controllers
(``memory.workloads``) on the simulated cluster (the same pod physics, scheduler and kubelets as a
ModelServing run), the scenario's events, traffic split by the InferenceService's weights
(``kserve.router``), and the trace (``trace.InferenceServiceTraceWriter``).

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
- ``deletePods``, ``failNode``, ``addNodes``: the faults; ``restartController`` restarts the
  simulated controllers (their queues are lost; they start again from a full list).

The run ends at ``until``, or 60 s after the InferenceService converged (the view's
``converged``) once every event ran; traffic starts when it first converges, as in a ModelServing
run.
"""

from __future__ import annotations

import random
from typing import Any

from controller.core import naming
from controller.core.controls import ControlError
from controller.core.kserve import apps, controls, handover
from controller.core.kserve.view import inferenceservice_view
from controller.core.ports import ClusterError, NotFound, Obj

from ..memory.cluster import SimCluster
from ..memory.store import Change
from ..memory.workloads import ACTOR
from ..objects import DEPLOYMENT, INFERENCESERVICE, REPLICASET
from ..scenario import Event, Scenario, isvc_control_patch
from ..trace import InferenceServiceTraceWriter, dumps
from . import controller as kserve_controller
from .router import InferenceServiceRouter

SETTLE = 60.0


class InferenceServiceRunner:
    def __init__(self, scenario: Scenario, *, copy_reads: bool = False) -> None:
        self.scenario = scenario
        self.namespace = scenario.namespace
        self.name = scenario.ms_name
        self.cluster = SimCluster(
            scenario.cluster, seed=scenario.seed, namespace=self.namespace, traffic=None, copy_reads=copy_reads
        )
        self.loop = self.cluster.loop
        self.store = self.cluster.store
        self.router = InferenceServiceRouter(
            self.store,
            self.loop,
            self.cluster.config,
            self.namespace,
            self.name,
            scenario.traffic,
            random.Random(f"{scenario.seed}:traffic"),
        )
        self.cluster.kubelets.on_stop.append(self.router.interrupt)
        self.trace = InferenceServiceTraceWriter(scenario.name, scenario.seed)
        self.converged = False
        self.converged_at: float | None = None
        self.events_left = len(scenario.events)
        self.last_event_at = max((e.at for e in scenario.events), default=0.0)
        self._end_timer = None
        self._frame_pending = False
        self._handover_pending = False
        self.store.add_listener(self._on_change)

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
        self._check_convergence(view)

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

    # -- convergence ----------------------------------------------------------------------------------

    def _check_convergence(self, view: dict[str, Any]) -> None:
        conv = bool(view.get("converged"))
        if conv and not self.converged:
            self.converged_at = self.loop.now()
            self.router.start()
        if not conv:
            self.converged_at = None
        self.converged = conv
        self._maybe_schedule_end()

    def _maybe_schedule_end(self) -> None:
        if not self.converged or self.events_left > 0 or self.converged_at is None:
            return
        end_at = max(self.converged_at, self.last_event_at) + SETTLE
        if self._end_timer is not None and not self._end_timer.cancelled and self._end_timer.at == end_at:
            return
        if self._end_timer is not None:
            self._end_timer.cancel()
        since = self.converged_at
        self._end_timer = self.loop.call_at(end_at, lambda: self._end_if_settled(since))

    def _end_if_settled(self, since: float) -> None:
        if self.converged and self.converged_at == since:
            self.loop.stop()

    # -- events ---------------------------------------------------------------------------------------

    def _apply_event(self, e: Event) -> None:
        self.events_left -= 1
        error = None
        previous, self.store.actor = self.store.actor, "operator"
        try:
            error = self._do(e)
        except (ClusterError, ValueError) as exc:
            error = f"{type(exc).__name__}: {exc}"
        finally:
            self.store.actor = previous
        self.trace.event(self.loop.now(), e.describe(), error=error)
        self._maybe_schedule_end()

    def _isvc(self) -> Obj:
        return self.store.get_object(INFERENCESERVICE, self.namespace, self.name)

    def _do(self, e: Event) -> str | None:
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
        if e.do == "failNode":
            self.cluster.fail_node(e.args["node"])
            return None
        if e.do == "addNodes":
            self.cluster.add_nodes(e.args.get("count", 1), e.args.get("gpusPerNode", s.cluster.gpus_per_node))
            return None
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

    # -- run ------------------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        if self.scenario.kserve_config is not None:
            self.store.create_object(kserve_controller.config_map(self.scenario.kserve_config))
        for e in self.scenario.events:
            self.loop.call_at(e.at, lambda e=e: self._apply_event(e))
        self.loop.call_at(0.0, lambda: self._frame(force=True))
        end = self.loop.run_until(self.scenario.until)
        doc = self.trace.document(
            converged=self.converged, converged_at=self.converged_at, end_time=end, requests=self.router.summary(end)
        )
        errors = self.cluster.workloads.errors
        if errors:
            doc["controllerErrors"] = [*doc.get("controllerErrors", []), *({"t": t, "message": m} for t, m in errors)]
        return doc


def run_inferenceservice_scenario(scenario: Scenario, *, copy_reads: bool = False) -> dict[str, Any]:
    return InferenceServiceRunner(scenario, copy_reads=copy_reads).run()


def run_to_json(scenario: Scenario) -> str:
    return dumps(run_inferenceservice_scenario(scenario))
