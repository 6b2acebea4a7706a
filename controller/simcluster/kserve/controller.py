"""The simulated KServe controller: what KServe (and Knative, in Knative mode) does with an
InferenceService, on the simulated cluster.

What KServe decides is ``controller.core.kserve`` (validation, strategy resolution, the
Deployments and traffic of ``materialize``); this module applies it through
``workloads.WorkloadStore`` and reports it in the InferenceService's status, as KServe does:

- **Standard mode** (raw Deployments): one Deployment per component, named as KServe names them
  (``materialize.deployments``), with the resolved ``spec.strategy``, ``revisionHistoryLimit`` and
  ``progressDeadlineSeconds``; a ``spec.canary[]`` entry gets its own Deployment and a weight once
  it is Ready (the stable predictor gives up the Ready canaries' replicas); Deployments it no longer
  wants (a removed canary, a predictor renamed by a promotion) are deleted. Only the fields KServe
  sets are enforced (KServe compares with ``equality.Semantic.DeepDerivative``), so a user's
  ``kubectl rollout pause`` (``spec.paused``) stays.
- **Knative mode** (legacy name Serverless): per component, a new revision per change of the
  revision template (containers, min/max replicas), each one a Deployment ``<isvc>-<component>-<NNNNN>-deployment``;
  the traffic is ``materialize.serverless_traffic``: 100% to the latest ready revision, or, with
  ``canaryTrafficPercent``, that percentage to it and the rest to the last rolled-out one. A
  revision keeps ``minReplicas`` pods while it is the latest one or takes traffic, and is scaled
  to zero ``SCALE_TO_ZERO_GRACE`` seconds after it stops taking traffic (Knative's
  scale-to-zero grace period). Status as KServe reports it: ``latestCreatedRevision``,
  ``latestReadyRevision``, ``latestRolledoutRevision`` (the newest revision that took 100%),
  ``previousRolledoutRevision``, ``traffic[]``; a rolled-out latest revision whose canary share
  drops below 100% (a rollback after promotion) gives ``latestRolledoutRevision`` back to the
  previous one, so the traffic goes back to it.

Status conditions: ``PredictorReady`` (``TransformerReady``, ``ExplainerReady``), ``CanaryReady``
when there are ``spec.canary[]`` entries, and ``Ready``. An InferenceService KServe's webhook
would have refused gets ``Ready=False, reason InvalidSpec`` with the field path, and nothing else.
``status.deploymentMode`` is the mode's current name (``Standard``, ``Knative``, ``ModelMesh``).

- **ModelMesh mode**: KServe skips the InferenceService (ModelMesh Serving serves it) and only
  records its status: the mode, the generation and ``Ready`` Unknown.
- **An unreadable ConfigMap** (a ``deploy`` key without ``defaultDeploymentMode``, say): KServe's
  reconcile fails before it looks at the InferenceService, so nothing is written at all.

Pure Python (no Django); times are the caller's.
"""

from __future__ import annotations

from controller.core.kserve import apps
from controller.core.kserve.config import (
    CONFIG_MAP_NAME,
    CONFIG_MAP_NAMESPACE,
    DeployConfig,
    from_config_map,
    parse_deploy_config,
)
from controller.core.kserve.errors import KServeError
from controller.core.kserve.materialize import (
    LABEL_CANARY,
    LABEL_COMPONENT,
    LABEL_ISVC,
    DeploymentPlan,
    deployments,
    serverless_traffic,
)
from controller.core.kserve.runtimes import ServingRuntime, installed_runtimes
from controller.core.kserve.spec import Component, InferenceService, parse_inferenceservice
from controller.core.kserve.strategy import DEFAULT_PROGRESS_DEADLINE_SECONDS, resolve_rollout
from controller.core.mergepatch import copy_json, diff
from controller.core.ports import ClusterError, NotFound, Obj

from .. import deployments as kube
from .. import objects, workloads
from ..objects import (
    CLUSTERSERVINGRUNTIME,
    CONFIGMAP,
    DEPLOYMENT,
    INFERENCESERVICE,
    SERVINGRUNTIME,
    parse_rfc3339,
    rfc3339,
)
from ..workloads import WorkloadStore

CONFIG_NAMESPACE = CONFIG_MAP_NAMESPACE
CONFIG_NAME = CONFIG_MAP_NAME
LABEL_APP = apps.LABEL_APP
LABEL_REVISION = apps.LABEL_KNATIVE_REVISION
LABEL_CONFIGURATION = apps.LABEL_KNATIVE_CONFIGURATION
LABEL_SERVICE = apps.LABEL_KNATIVE_SERVICE
ANNOTATION_TEMPLATE_HASH = "sim.rolloutui.io/revision-template-hash"
ANNOTATION_UNROUTED_SINCE = "sim.rolloutui.io/unrouted-since"
ANNOTATION_MIN_SCALE = "autoscaling.knative.dev/min-scale"
ANNOTATION_MAX_SCALE = "autoscaling.knative.dev/max-scale"
SCALE_TO_ZERO_GRACE = 30.0
KEEP_IDLE_REVISIONS = 10  # revisions at zero beyond these are deleted, oldest first

CONDITION_OF = {"predictor": "PredictorReady", "transformer": "TransformerReady", "explainer": "ExplainerReady"}


def read_runtimes(store: WorkloadStore, namespace: str) -> tuple[ServingRuntime, ...]:
    """The ServingRuntimes KServe may pick from in ``namespace`` (``runtimes.installed_runtimes``)."""
    found: dict[str, list[Obj]] = {}
    for kind, ns in ((CLUSTERSERVINGRUNTIME, None), (SERVINGRUNTIME, namespace)):
        try:
            found[kind] = store.list_objects(kind, ns)
        except (ClusterError, KeyError):  # a store that keeps no runtimes
            found[kind] = []
    return installed_runtimes(found[CLUSTERSERVINGRUNTIME], found[SERVINGRUNTIME])


def read_deploy_config(store: WorkloadStore) -> DeployConfig:
    """The ``inferenceservice-config`` ConfigMap's ``deploy`` settings (``config.from_config_map``)."""
    try:
        return from_config_map(store.get_object(CONFIGMAP, CONFIG_NAMESPACE, CONFIG_NAME))
    except NotFound:
        return from_config_map(None)


def config_map(deploy: str) -> Obj:
    """The ConfigMap object for a ``deploy`` value (a scenario's ``kserveConfig``, the demo's)."""
    return {
        "apiVersion": "v1",
        "kind": CONFIGMAP,
        "metadata": {"name": CONFIG_NAME, "namespace": CONFIG_NAMESPACE},
        "data": {"deploy": deploy},
    }


def deployment_app(deployment_name: str) -> str:
    """The ``app`` label KServe puts on a raw Deployment's pods (their Service selects it)."""
    return f"isvc.{deployment_name}"


def component_of(deployment: Obj) -> str:
    """The component a Deployment serves, as the read side names it: ``predictor``,
    ``predictor-worker``, ``transformer``, ``explainer``, or ``canary:<name>``."""
    lab = workloads.labels(deployment)
    if lab.get(LABEL_CANARY):
        return f"canary:{lab[LABEL_CANARY]}"
    return lab.get(LABEL_COMPONENT) or "predictor"


def sync_inferenceservice(store: WorkloadStore, namespace: str, name: str, now: float) -> float | None:
    """One pass of the simulated KServe controller over ``namespace/name``. Returns when it must
    look again by itself (a Knative revision's scale-to-zero), or None."""
    try:
        obj = store.get_object(INFERENCESERVICE, namespace, name)
    except NotFound:
        return None
    config = read_deploy_config(store)
    if config.error is not None:
        return None  # KServe's reconcile fails on its ConfigMap ("fails to create DeployConfig")
    status = dict(obj.get("status") or {})
    try:
        isvc = parse_inferenceservice(obj, config, read_runtimes(store, namespace))
    except KServeError as err:
        status = _conditions(status, {"Ready": ("False", "InvalidSpec", str(err))}, now)
        status["observedGeneration"] = obj["metadata"].get("generation")
        _write_status(store, obj, status)
        return None
    if not isvc.managed:
        _sync_modelmesh(store, obj, isvc, status, now)
        return None
    problems = {kind: c.runtime_problem for kind, c in isvc.components.items() if c.runtime_problem}
    if problems:
        # KServe's predictor reconcile fails before it writes any Deployment, and says why.
        wanted = {CONDITION_OF[kind]: ("False", "NoSupportingRuntime", problem) for kind, problem in problems.items()}
        wanted["Ready"] = ("False", "NoSupportingRuntime", next(iter(problems.values())))
        status = _conditions(status, wanted, now)
        status.update(observedGeneration=obj["metadata"].get("generation"), deploymentMode=isvc.deployment_mode)
        _write_status(store, obj, status)
        return None
    if isvc.standard:
        requeue = _sync_standard(store, obj, isvc, config, status, now)
    else:
        requeue = _sync_serverless(store, obj, isvc, status, now)
    return requeue


def _sync_modelmesh(store: WorkloadStore, obj: Obj, isvc: InferenceService, status: Obj, now: float) -> None:
    """KServe skips a ModelMesh InferenceService: the status records the mode and the generation,
    ``Ready`` stays Unknown (KServe's ``InitializeConditions``); Deployments it had are left to
    their owner references, as KServe leaves them."""
    new_status = _conditions(status, {"Ready": ("Unknown", None, None)}, now)
    new_status.update(observedGeneration=obj["metadata"].get("generation"), deploymentMode=isvc.deployment_mode)
    if new_status != status:
        _write_status(store, obj, new_status)


def _write_status(store: WorkloadStore, obj: Obj, status: Obj) -> None:
    meta = obj["metadata"]
    store.replace_object_status(INFERENCESERVICE, meta["namespace"], meta["name"], status)


def _conditions(status: Obj, wanted: dict[str, tuple[str, str | None, str | None]], now: float) -> Obj:
    """``status`` with each condition of ``wanted`` (type -> (status, reason, message)) set, and
    every other condition this controller owns removed."""
    owned = set(CONDITION_OF.values()) | {"Ready", "CanaryReady"}
    kept = [c for c in status.get("conditions") or [] if c.get("type") not in owned or c.get("type") in wanted]
    status = {**status, "conditions": kept}
    for ctype, (state, reason, message) in wanted.items():
        cond: Obj = {"type": ctype, "status": state}
        if reason:
            cond["reason"] = reason
        if message:
            cond["message"] = message
        existing = next((c for c in kept if c.get("type") == ctype), None)
        if existing is not None and {k: v for k, v in existing.items() if k != "lastTransitionTime"} == cond:
            continue
        others = [c for c in status["conditions"] if c.get("type") != ctype]
        since = existing.get("lastTransitionTime") if existing and existing.get("status") == state else rfc3339(now)
        status = {**status, "conditions": [*others, {**cond, "lastTransitionTime": since}]}
    order = {t: i for i, t in enumerate(["Ready", "PredictorReady", "TransformerReady", "ExplainerReady"])}
    status["conditions"] = sorted(status["conditions"], key=lambda c: (order.get(c.get("type"), 9), c.get("type")))
    return status


def _ensure_deployment(store: WorkloadStore, existing: Obj | None, desired: Obj) -> Obj:
    """Create the Deployment, or patch the fields KServe sets when they differ (DeepDerivative:
    fields KServe leaves unset, such as ``spec.paused``, are not touched)."""
    if existing is None:
        return store.create_object(desired)
    patch: Obj = {}
    old_spec = existing.get("spec") or {}
    # Per field KServe sets, the merge patch from what is there to what it wants: a template that
    # lost an env var or an annotation must lose it on the Deployment too.
    spec_patch = {k: diff(old_spec.get(k), v) for k, v in desired["spec"].items() if old_spec.get(k) != v}
    if spec_patch:
        patch["spec"] = spec_patch
    old_labels = workloads.labels(existing)
    new_labels = desired["metadata"].get("labels") or {}
    if old_labels != new_labels:
        label_patch: Obj = {k: v for k, v in new_labels.items() if old_labels.get(k) != v}
        label_patch.update({k: None for k in old_labels if k not in new_labels})
        patch["metadata"] = {"labels": label_patch}
    annotations = desired["metadata"].get("annotations") or {}
    old_annotations = (existing["metadata"].get("annotations") or {}) if existing else {}
    changed = {k: v for k, v in annotations.items() if old_annotations.get(k) != v}
    if changed:
        patch.setdefault("metadata", {})["annotations"] = changed
    if not patch:
        return existing
    meta = existing["metadata"]
    return store.patch_object(DEPLOYMENT, meta["namespace"], meta["name"], patch)


def _deployment_object(isvc: Obj, name: str, labels: dict[str, str], spec: Obj, annotations: dict | None = None) -> Obj:
    meta: Obj = {
        "name": name,
        "namespace": isvc["metadata"]["namespace"],
        "labels": labels,
        "ownerReferences": [objects.owner_reference(isvc)],
    }
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": kube.API_VERSION, "kind": DEPLOYMENT, "metadata": meta, "spec": spec}


def _deployment_available(deployment: Obj | None) -> bool:
    if deployment is None:
        return False
    cond = workloads.condition(deployment, "Available") or {}
    return cond.get("status") == "True"


def _deployment_rolled_out(deployment: Obj | None) -> bool:
    """Every wanted pod runs the current template and is available (what KServe calls Ready for a
    canary: ``status.canaryStatuses[].ready``)."""
    if deployment is None:
        return False
    status = deployment.get("status") or {}
    return apps.is_complete(deployment, status) and int(status.get("observedGeneration") or 0) >= int(
        deployment["metadata"].get("generation") or 1
    )


def _rolled_out_as_planned(deployment: Obj | None, desired: Obj) -> bool:
    """Rolled out (``_deployment_rolled_out``) with the replica count and pod template KServe wants."""
    if not _deployment_rolled_out(deployment):
        return False
    spec, wanted = deployment.get("spec") or {}, desired["spec"]
    return apps.replicas_of(deployment) == wanted["replicas"] and spec.get("template") == wanted["template"]


# -- Standard mode ----------------------------------------------------------------------------------


def standard_deployment(isvc: Obj, plan: DeploymentPlan) -> Obj:
    app = deployment_app(plan.name)
    template = copy_json(plan.template)
    template.setdefault("metadata", {})["labels"] = {**(template["metadata"].get("labels") or {}), LABEL_APP: app}
    labels = {
        LABEL_ISVC: isvc["metadata"]["name"],
        LABEL_COMPONENT: template_component(plan),
        LABEL_APP: app,
    }
    if plan.canary:
        labels[LABEL_CANARY] = plan.canary
    spec = {
        "replicas": plan.replicas,
        "selector": {"matchLabels": {LABEL_APP: app}},
        "template": template,
        "strategy": plan.strategy.deployment_strategy(),
        "revisionHistoryLimit": plan.strategy.revision_history_limit,
        "progressDeadlineSeconds": plan.strategy.progress_deadline_seconds,
    }
    return _deployment_object(isvc, plan.name, labels, spec)


def template_component(plan: DeploymentPlan) -> str:
    return (plan.template.get("metadata") or {}).get("labels", {}).get(LABEL_COMPONENT) or plan.component


def _sync_standard(
    store: WorkloadStore, obj: Obj, isvc: InferenceService, config: DeployConfig, status: Obj, now: float
) -> float | None:
    existing = {workloads.name(d): d for d in kube.owned(store, DEPLOYMENT, obj)}
    # A canary is Ready once the Deployment the spec asks for is rolled out. One still at the count
    # or template of before this change (a canary scaled up for a promotion) is not: judged Ready,
    # the stable predictor would give up replicas for pods that do not exist yet.
    canary_plans = {
        p.canary: p for p in deployments(isvc, config, ready_canaries=frozenset(c.name for c in isvc.canaries))
    }
    ready_canaries = frozenset(
        c.name
        for c in isvc.canaries
        if _rolled_out_as_planned(
            existing.get(canary_plans[c.name].name), standard_deployment(obj, canary_plans[c.name])
        )
    )
    plans = deployments(isvc, config, ready_canaries=ready_canaries)
    current: dict[str, Obj] = {}
    for plan in plans:
        current[plan.name] = _ensure_deployment(store, existing.get(plan.name), standard_deployment(obj, plan))
    for name_ in existing:
        if name_ not in current:  # a removed canary, a predictor renamed by a promotion, a mode change
            try:
                store.delete_object(DEPLOYMENT, obj["metadata"]["namespace"], name_)
            except NotFound:
                pass
    # Traffic (Gateway API weights in KServe): only Ready canaries get theirs; the stable predictor
    # the rest. Each backend is named by its Deployment and the template hash it runs now.
    traffic = []
    canary_status = []
    for plan in plans:
        if plan.traffic_percent is None:
            continue
        deployment = current[plan.name]
        entry: Obj = {"backend": plan.name, "percent": plan.traffic_percent}
        entry["revisionName"] = _current_hash(deployment)
        if plan.canary:
            entry["tag"] = plan.canary
            canary_status.append(
                {"name": plan.canary, "ready": plan.canary in ready_canaries, "trafficPercent": plan.traffic_percent}
            )
        traffic.append(entry)
    wanted: dict[str, tuple[str, str | None, str | None]] = {}
    for kind in isvc.components:
        names = [p.name for p in plans if p.component in (kind, f"{kind}-worker")]
        ready = all(_deployment_available(current.get(n)) for n in names)
        wanted[CONDITION_OF[kind]] = (
            ("True", None, None)
            if ready
            else ("False", "MinimumReplicasUnavailable", f"Deployment {names[0]} does not have minimum availability")
        )
    if isvc.canaries:
        all_ready = all(c.name in ready_canaries for c in isvc.canaries)
        waiting = [c.name for c in isvc.canaries if c.name not in ready_canaries]
        wanted["CanaryReady"] = (
            ("True", None, None) if all_ready else ("False", "CanaryNotReady", f"canary {', '.join(waiting)} not Ready")
        )
    every = all(state == "True" for ctype, (state, _, _) in wanted.items() if ctype != "CanaryReady")
    new_status = _status_with_ready(status, wanted, every, now, obj, isvc, {"predictor": {"traffic": traffic}})
    if isvc.canaries:
        new_status["canaryStatuses"] = canary_status
    else:
        new_status.pop("canaryStatuses", None)
    _write_status(store, obj, new_status)
    return None


def _status_with_ready(
    status: Obj,
    wanted: dict[str, tuple[str, str | None, str | None]],
    every_ready: bool,
    now: float,
    obj: Obj,
    isvc: InferenceService,
    components: Obj,
) -> Obj:
    """``status`` with the ``wanted`` conditions and ``Ready`` (True when ``every_ready``, else
    ``ComponentsNotReady``), and what KServe writes beside them in either mode: the generation it
    observed, the mode, the URL and ``components``."""
    wanted["Ready"] = ("True", None, None) if every_ready else ("False", "ComponentsNotReady", None)
    new_status = _conditions(status, wanted, now)
    new_status.update(
        observedGeneration=obj["metadata"].get("generation"),
        deploymentMode=isvc.deployment_mode,
        url=f"http://{isvc.name}.{isvc.namespace}.example.com",
        components=components,
    )
    return new_status


def _current_hash(deployment: Obj) -> str:
    """The pod-template-hash of the Deployment's current template (its new ReplicaSet's)."""
    template = (deployment.get("spec") or {}).get("template") or {}
    collisions = int((deployment.get("status") or {}).get("collisionCount") or 0)
    return apps.template_hash(template, collisions)


# -- Knative mode --------------------------------------------------------------------------------


def revision_template(isvc: InferenceService, component: Component) -> Obj:
    """What a Knative revision is made of: the pod template and the scale bounds (a change of any
    of them is a new revision; ``canaryTrafficPercent`` is a traffic setting, not part of it)."""
    annotations = {ANNOTATION_MIN_SCALE: str(component.min_replicas)}
    if component.max_replicas:
        annotations[ANNOTATION_MAX_SCALE] = str(component.max_replicas)
    return {
        "metadata": {
            "labels": {LABEL_ISVC: isvc.name, LABEL_COMPONENT: component.kind},
            "annotations": annotations,
        },
        "spec": {"containers": [dict(c) for c in component.containers]},
    }


def revision_name(isvc: str, component: str, number: int) -> str:
    return f"{isvc}-{component}-{number:05d}"


def revision_number(deployment: Obj) -> int:
    return int(workloads.labels(deployment).get(LABEL_REVISION, "0").rsplit("-", 1)[-1] or 0)


def _revision_deployment(obj: Obj, isvc: InferenceService, component: Component, number: int, hash_: str) -> Obj:
    rev = revision_name(isvc.name, component.kind, number)
    configuration = f"{isvc.name}-{component.kind}"
    template = revision_template(isvc, component)
    template["metadata"]["labels"].update({LABEL_REVISION: rev, LABEL_CONFIGURATION: configuration, LABEL_APP: rev})
    labels = {
        LABEL_ISVC: isvc.name,
        LABEL_COMPONENT: component.kind,
        LABEL_REVISION: rev,
        LABEL_CONFIGURATION: configuration,
        LABEL_SERVICE: configuration,
        LABEL_APP: rev,
    }
    # Knative's revision Deployments get apps/v1 defaults; the revision's own progress deadline is
    # Knative's default (600 s).
    rollout = resolve_rollout(None, parse_deploy_config(None), multi_node_worker=False)
    spec = {
        "replicas": max(component.min_replicas, 1),
        "selector": {"matchLabels": {LABEL_REVISION: rev}},
        "template": template,
        "strategy": rollout.deployment_strategy(),
        "revisionHistoryLimit": rollout.revision_history_limit,
        "progressDeadlineSeconds": DEFAULT_PROGRESS_DEADLINE_SECONDS,
    }
    return _deployment_object(obj, f"{rev}-deployment", labels, spec, {ANNOTATION_TEMPLATE_HASH: hash_})


def revision_ready(deployment: Obj | None) -> bool:
    """A Knative revision is Ready once its initial scale (``min-scale``, at least 1) is available."""
    if deployment is None:
        return False
    template = (deployment.get("spec") or {}).get("template") or {}
    min_scale = int(apps.annotations(template).get(ANNOTATION_MIN_SCALE, "1"))
    return apps.status_count(deployment, "availableReplicas") >= max(min_scale, 1)


def revision_failed(deployment: Obj | None) -> bool:
    cond = workloads.condition(deployment or {}, "Progressing") or {}
    return cond.get("reason") == apps.PROGRESSING_TIMED_OUT


def _sync_serverless(store: WorkloadStore, obj: Obj, isvc: InferenceService, status: Obj, now: float) -> float | None:
    """Knative's way: one Deployment per revision of each component, traffic split between the
    latest ready revision and the one rolled out before it, idle revisions scaled to zero."""
    owned_all = kube.owned(store, DEPLOYMENT, obj)
    components_status: Obj = {}
    wanted: dict[str, tuple[str, str | None, str | None]] = {}
    requeue: float | None = None
    old_components = status.get("components") or {}
    for kind, component in isvc.components.items():
        revs, latest = _revisions(store, obj, isvc, kind, component, owned_all)
        by_name = {workloads.labels(d)[LABEL_REVISION]: d for d in revs}
        latest_created = workloads.labels(latest)[LABEL_REVISION]
        before = old_components.get(kind) or {}
        latest_ready = latest_created if revision_ready(latest) else before.get("latestReadyRevision")
        if latest_ready not in by_name:
            latest_ready = None
        split, rolled, previous = _routed(component.canary_traffic_percent, latest_created, latest_ready, before)
        shares = dict(split)
        # Scale: the latest revision and every routed one keep their pods; the others go to zero
        # SCALE_TO_ZERO_GRACE seconds after they stopped taking traffic.
        for rev, deployment in by_name.items():
            wait = _scale_revision(store, deployment, component, rev == latest_created or shares.get(rev, 0) > 0, now)
            if wait is not None:
                requeue = wait if requeue is None else min(requeue, wait)
        _collect_idle(store, revs, shares, latest_created)
        entry_status: Obj = {"latestCreatedRevision": latest_created, "traffic": _traffic_entries(split, latest_ready)}
        if latest_ready:
            entry_status["latestReadyRevision"] = latest_ready
        if rolled:
            entry_status["latestRolledoutRevision"] = rolled
        if previous:
            entry_status["previousRolledoutRevision"] = previous
        components_status[kind] = entry_status
        wanted[CONDITION_OF[kind]] = _revision_condition(latest, latest_created)
    _delete_unowned_components(store, owned_all, isvc)
    every = all(state == "True" for state, _, _ in wanted.values())
    new_status = _status_with_ready(status, wanted, every, now, obj, isvc, components_status)
    new_status.pop("canaryStatuses", None)
    _write_status(store, obj, new_status)
    return requeue


def _revisions(
    store: WorkloadStore, obj: Obj, isvc: InferenceService, kind: str, component: Component, owned_all: list[Obj]
) -> tuple[list[Obj], Obj]:
    """A component's revision Deployments, oldest first, and the latest: a new revision is created
    when the component's template changed since the latest (its template hash differs)."""
    mine = [d for d in owned_all if workloads.labels(d).get(LABEL_COMPONENT) == kind]
    revs = sorted((d for d in mine if LABEL_REVISION in workloads.labels(d)), key=revision_number)
    hash_ = apps.template_hash(revision_template(isvc, component))
    latest = revs[-1] if revs else None
    if latest is None or (latest["metadata"].get("annotations") or {}).get(ANNOTATION_TEMPLATE_HASH) != hash_:
        number = (revision_number(latest) if latest else 0) + 1
        latest = store.create_object(_revision_deployment(obj, isvc, component, number, hash_))
        revs.append(latest)
    return revs, latest


def _routed(
    percent: int | None, latest_created: str, latest_ready: str | None, before: Obj
) -> tuple[list[tuple[str, int]], str | None, str | None]:
    """The traffic split, and the rolled-out and previous revisions after it.

    Example: canaryTrafficPercent 10, revision 2 Ready, revision 1 rolled out: 10 % to 2, 90 % to
    1. Once a split gives the latest ready revision 100 %, it becomes the rolled-out one and the
    one before it the previous."""
    rolled = before.get("latestRolledoutRevision")
    previous = before.get("previousRolledoutRevision")
    if (
        percent is not None
        and percent < 100
        and latest_ready is not None
        and latest_ready == latest_created
        and latest_ready == rolled
        and previous
    ):
        rolled = previous  # the rolled-out latest revision lost traffic: back to the previous one
    split = serverless_traffic(percent, latest_ready, rolled)
    if latest_ready is not None and dict(split).get(latest_ready) == 100 and latest_ready != rolled:
        previous, rolled = rolled, latest_ready
    return split, rolled, previous


def _traffic_entries(split: list[tuple[str, int]], latest_ready: str | None) -> list[Obj]:
    """status.components.<c>.traffic as KServe writes it: tagged "latest" and "prev" when split."""
    traffic = []
    for i, (rev, pct) in enumerate(split):
        entry: Obj = {"revisionName": rev, "percent": pct, "latestRevision": rev == latest_ready and i == 0}
        if len(split) > 1:
            entry["tag"] = "latest" if i == 0 else "prev"
        traffic.append(entry)
    return traffic


def _revision_condition(latest: Obj, latest_created: str) -> tuple[str, str | None, str | None]:
    """The component's Ready condition (status, reason, message) from its latest revision."""
    if revision_ready(latest):
        return ("True", None, None)
    if revision_failed(latest):
        return ("False", "RevisionFailed", f"Revision {latest_created} failed: progress deadline exceeded")
    return ("Unknown", "RevisionNotReady", f"Revision {latest_created} is not ready yet")


def _delete_unowned_components(store: WorkloadStore, owned_all: list[Obj], isvc: InferenceService) -> None:
    """Deployments of a removed component, or of the Standard mode before a mode change, go."""
    for d in owned_all:
        lab = workloads.labels(d)
        if lab.get(LABEL_COMPONENT) not in isvc.components or LABEL_REVISION not in lab:
            try:
                store.delete_object(DEPLOYMENT, d["metadata"]["namespace"], workloads.name(d))
            except NotFound:
                pass


def _scale_revision(store: WorkloadStore, deployment: Obj, component: Component, serving: bool, now: float):
    meta = deployment["metadata"]
    annotations = meta.get("annotations") or {}
    since = annotations.get(ANNOTATION_UNROUTED_SINCE)
    want = apps.replicas_of(deployment)
    patch: Obj = {}
    wait = None
    if serving:
        want = max(component.min_replicas, 1)
        if since:
            patch["metadata"] = {"annotations": {ANNOTATION_UNROUTED_SINCE: None}}
    elif apps.replicas_of(deployment) > 0:
        if not since:
            patch["metadata"] = {"annotations": {ANNOTATION_UNROUTED_SINCE: rfc3339(now)}}
            wait = SCALE_TO_ZERO_GRACE
        elif parse_rfc3339(since) + SCALE_TO_ZERO_GRACE <= now:
            want = 0
        else:
            wait = parse_rfc3339(since) + SCALE_TO_ZERO_GRACE - now
    if want != apps.replicas_of(deployment):
        patch["spec"] = {"replicas": want}
    if patch:
        store.patch_object(DEPLOYMENT, meta["namespace"], meta["name"], patch)
    return wait


def _collect_idle(store: WorkloadStore, revs: list[Obj], shares: dict[str, int], latest: str) -> None:
    """Delete idle revisions (no pods wanted, no traffic, not the latest) beyond
    ``KEEP_IDLE_REVISIONS``, oldest first (Knative's revision garbage collection)."""
    idle = [
        d
        for d in revs
        if workloads.labels(d)[LABEL_REVISION] not in shares
        and workloads.labels(d)[LABEL_REVISION] != latest
        and apps.replicas_of(d) == 0
    ]
    for d in idle[: max(len(idle) - KEEP_IDLE_REVISIONS, 0)]:
        try:
            store.delete_object(DEPLOYMENT, d["metadata"]["namespace"], workloads.name(d))
        except NotFound:
            pass
