"""The state of an InferenceService, read from its objects: one function for the dashboard, the
REST API, ``simulate``'s trace and (later) the Kubernetes adapter. Pure Python.

``inferenceservice_view(isvc, deployments, replica_sets, pods, config, now)`` takes what any cluster
has (the InferenceService with its status, the Deployments it owns, their ReplicaSets and pods, the
``inferenceservice-config`` ``deploy`` settings) and says:

- the **components** and, per Deployment, its ReplicaSets old and new (revision, hash, counts,
  pods), its counts and conditions, and the **effective strategy** with the source of each value
  and the mode (``strategy.resolve_rollout``, the resolution KServe applies);
- the **instances**: every pod with its component, Deployment, ReplicaSet, revision (Standard
  mode: the pod-template-hash; Knative: the Knative revision), state (``Pending``,
  ``Creating``, ``Ready``, ``Deleting``, ``Failed``) and the highest serving **gate** it reached,
  by the rules of ``controller.core.gates`` (``Created``, ``Scheduled``, ``Started``, ``Loaded``:
  the model is loaded and the pod Ready; ``Routed``, then ``Verified`` and ``Serving`` at once
  since KServe sends no verification request: its revision or backend takes a share of the
  traffic), with ``gateFailed`` when it cannot go on (unschedulable, crash loop);
- **why it waits**, per Deployment (``blocked``): paused, the surge or unavailability budget
  (``rolling.blocked_reasons``), the progress deadline, unschedulable pods; a canary not Ready
  yet, a Knative revision that is not ready or failed;
- the **traffic** split (revision, percent, component) and the **canary** state;
- ``converged``: KServe reports Ready for the current generation, every Deployment's rollout is
  complete (Knative: every revision without traffic is scaled to zero), no pod is terminating,
  the traffic is where the spec puts it (no canary: the latest revision rolled out; canaries:
  Ready and weighted).

Example (Standard mode, 8 replicas, nothing configured, mid-rollout)::

    strategy  {"predictor": {"maxSurge": {"value": "25%", "source": "default", "count": 2}, ...,
               "mode": "Custom"}}
    blocked   [{"component": "predictor", "reason": "maxUnavailable reached: 6 available, at least
               6 required (waiting for 2 new pod(s) to become available)"}]
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .. import gates, naming, phases, podresources
from ..gates import instance_gates
from ..observe import instance_of, parse_pod
from . import apps, handover
from .config import KNATIVE, DeployConfig, current_mode_name
from .errors import KServeError
from .materialize import LABEL_CANARY, LABEL_COMPONENT
from .materialize import deployments as plan_deployments
from .rolling import blocked_reasons
from .runtimes import GPU_RESOURCES
from .spec import MODELMESH_REASON, InferenceService, parse_inferenceservice
from .strategy import EffectiveRollout, resolve_rollout

Obj = dict[str, Any]

STATE_PENDING = "Pending"
STATE_CREATING = "Creating"
STATE_READY = "Ready"
STATE_DELETING = "Deleting"
STATE_FAILED = "Failed"


def component_of(deployment: Obj) -> str:
    """``predictor``, ``predictor-worker``, ``transformer``, ``explainer`` or ``canary:<name>``."""
    lab = apps.labels(deployment)
    if lab.get(LABEL_CANARY):
        return f"canary:{lab[LABEL_CANARY]}"
    return lab.get(LABEL_COMPONENT) or "predictor"


def pod_state(pod: Obj) -> str:
    if apps.is_terminating(pod):
        return STATE_DELETING
    status = pod.get("status") or {}
    if status.get("phase") == "Failed" or apps.waiting_reason(pod) == "CrashLoopBackOff":
        return STATE_FAILED
    if apps.is_ready(pod):
        return STATE_READY
    if not apps.is_scheduled(pod):
        return STATE_PENDING
    return STATE_CREATING


def pod_gates(pod: Obj, routed: bool) -> tuple[str | None, str | None]:
    """(the highest serving gate the pod reached, the gate it failed or None), by the same rules as
    a ModelServing's role instances (``controller.core.gates``): an InferenceService pod is a
    one-pod instance; KServe has no verification request, so Verified and Serving follow Routed.
    ``routed``: the pod's revision or backend has a share of the traffic; without it the pod stops
    at Loaded (a canary not weighted yet, a Knative revision without traffic)."""
    meta = apps.meta(pod)
    labels = {
        **apps.labels(pod),
        naming.LABEL_GROUP_ORDINAL: "0",
        naming.LABEL_ROLE: "pod",
        naming.LABEL_ROLE_ORDINAL: "0",
        naming.LABEL_POD_INDEX: "0",
    }
    obs = parse_pod({**pod, "metadata": {**meta, "labels": labels}})
    if obs is None:
        return None, None
    inst = instance_of(0, "pod", 0, {0: obs})
    result = instance_gates(inst, 1, verification_required=False)
    highest = result.highest
    if not routed and highest in (gates.ROUTED, gates.VERIFIED, gates.SERVING):
        highest = gates.LOADED
    return highest, result.failed


def _parse(isvc: Obj, config: DeployConfig, runtimes=None) -> tuple[InferenceService | None, Obj | None]:
    try:
        return parse_inferenceservice(isvc, config, runtimes), None
    except KServeError as err:
        # "configMap": KServe cannot read its ConfigMap (nothing is reconciled until it is fixed);
        # "spec": KServe's webhook refuses this InferenceService.
        source = "configMap" if config.error is not None else "spec"
        return None, {"field": err.field, "rule": err.rule, "source": source}


def _strategies(parsed: InferenceService | None, config: DeployConfig, deployments: list[Obj]) -> dict[str, Any]:
    """Effective strategy per Deployment name, with its sources: what KServe resolves for it
    (Standard mode), or the apps/v1 defaults Knative's revision Deployments get (Knative)."""
    out: dict[str, EffectiveRollout] = {}
    if parsed is not None and parsed.standard:
        for plan in plan_deployments(parsed, config):
            out[plan.name] = plan.strategy
    default = resolve_rollout(None, DeployConfig(), multi_node_worker=False)
    return {apps.name(d): out.get(apps.name(d), default) for d in deployments}


def spread_by_ready_pods(percent: int, ready: list[int]) -> list[int]:
    """A backend's ``percent`` spread over its ReplicaSets in proportion to their Ready pods, whole
    percents by the largest remainder (ties to the earlier). Example: 100% over 1 and 2 Ready pods
    -> [33, 67]; no Ready pod anywhere -> all 0."""
    total = sum(ready)
    if total == 0:
        return [0] * len(ready)
    exact = [percent * n / total for n in ready]
    shares = [int(x) for x in exact]
    order = sorted(range(len(ready)), key=lambda i: (-(exact[i] - shares[i]), i))
    for i in order[: percent - sum(shares)]:
        shares[i] += 1
    return shares


def _over_ready_pods(traffic: list[Obj], rs_by_deployment: dict[str, list[Obj]], pods_by_rs) -> list[Obj]:
    """Standard mode's traffic as a Kubernetes Service sends it: a backend's share goes to the Ready
    pods of every ReplicaSet of its Deployment (they carry the same ``app`` label), old and new
    alike, one entry per ReplicaSet with Ready pods, the revision its pod-template-hash. A backend
    without a Ready pod keeps the entry KServe wrote (nothing can answer it)."""
    out: list[Obj] = []
    for entry in traffic:
        rss = apps.oldest_first(rs_by_deployment.get(entry.get("backend") or "", []))
        ready = [
            sum(1 for p in pods_by_rs.get(apps.name(rs), []) if apps.is_ready(p) and not apps.is_terminating(p))
            for rs in rss
        ]
        if not sum(ready):
            out.append(entry)
            continue
        for rs, count, share in zip(rss, ready, spread_by_ready_pods(entry["percent"], ready), strict=True):
            if count:
                out.append({**entry, "revision": apps.labels(rs).get(apps.LABEL_TEMPLATE_HASH), "percent": share})
    return out


def _traffic(isvc: Obj, by_name: dict[str, Obj]) -> list[Obj]:
    out = []
    components = (isvc.get("status") or {}).get("components") or {}
    for kind in sorted(components):
        for entry in components[kind].get("traffic") or []:
            item: Obj = {"revision": entry.get("revisionName"), "percent": int(entry.get("percent") or 0)}
            if entry.get("backend"):
                item["backend"] = entry["backend"]
                item["component"] = component_of(by_name[entry["backend"]]) if entry["backend"] in by_name else kind
            else:
                item["component"] = kind
            if entry.get("tag"):
                item["tag"] = entry["tag"]
            if entry.get("latestRevision"):
                item["latest"] = True
            out.append(item)
    return out


def inferenceservice_view(
    isvc: Obj,
    deployments: list[Obj],
    replica_sets: list[Obj],
    pods: list[Obj],
    config: DeployConfig,
    now: float,
    *,
    in_flight: dict[str, int] | None = None,
    runtimes=None,
) -> dict[str, Any]:
    meta = apps.meta(isvc)
    status = isvc.get("status") or {}
    parsed, error = _parse(isvc, config, runtimes)
    deployments = sorted(deployments, key=apps.name)
    by_name = {apps.name(d): d for d in deployments}
    traffic = _traffic(isvc, by_name)
    routes = _Routes(
        revisions={t["revision"] for t in traffic if t["percent"] > 0 and "backend" not in t},
        backends={t["backend"] for t in traffic if t["percent"] > 0 and "backend" in t},
    )
    strategies = _strategies(parsed, config, deployments)
    rs_by_deployment, pods_by_rs = _owned(by_name, replica_sets, pods)
    traffic = _over_ready_pods(traffic, rs_by_deployment, pods_by_rs)
    rollouts = [
        _deployment_rollout(
            d, strategies[apps.name(d)], rs_by_deployment.get(apps.name(d), []), pods_by_rs, routes, in_flight or {}
        )
        for d in deployments
    ]
    instances = [i for r in rollouts for i in r.instances]
    canary, canary_reasons = _canary(parsed, status, by_name)
    revisions, revision_reasons, settled = _serverless(parsed, status, by_name)
    blocked = [
        *_isvc_reasons(error, status, meta.get("generation")),
        *(b for r in rollouts for b in r.blocked),
        *_runtime_reasons(parsed),
        *canary_reasons,
        *revision_reasons,
    ]
    managed = parsed is None or parsed.managed
    converged = _converged(isvc, error, managed, all(r.complete for r in rollouts), settled, instances, canary)
    view = {
        "kind": "InferenceService",
        "namespace": meta.get("namespace") or "default",
        "name": meta.get("name"),
        "generation": meta.get("generation"),
        "observedGeneration": status.get("observedGeneration"),
        # The current name (Standard, Knative, ModelMesh), also for a status an older KServe wrote
        # with a legacy name.
        "deploymentMode": parsed.deployment_mode
        if parsed
        else current_mode_name(status.get("deploymentMode")) or status.get("deploymentMode"),
        "managed": managed,
        "unmanagedReason": None if managed else MODELMESH_REASON,
        "warnings": [w.to_json() for w in parsed.warnings] if parsed else [],
        "error": error,
        "spec": _spec_summary(parsed, deployments),
        "conditions": _conditions(isvc),
        "deployments": [r.view for r in rollouts],
        "instances": instances,
        "strategy": _strategy_by_component(rollouts),
        "traffic": traffic,
        "revisions": revisions,
        "canary": canary,
        # A promote or rollback the product is taking in steps (None when there is none).
        "handover": handover.describe(isvc, deployments, parsed),
        "blocked": blocked,
        "converged": converged,
        "time": now,
    }
    view["phase"] = inferenceservice_phase(view)
    return view


class _Routes(NamedTuple):
    """What takes traffic now: Knative revisions by name, Standard mode's backends (Deployments)."""

    revisions: set[Any]
    backends: set[Any]


class _Rollout(NamedTuple):
    """One Deployment's part of the view: its entry in ``deployments``, its pods as instances,
    why it waits, whether its rollout is complete, the component it serves and its strategy."""

    view: Obj
    instances: list[Obj]
    blocked: list[Obj]
    complete: bool
    component: str
    strategy: Obj


def _owned(
    by_name: dict[str, Obj], replica_sets: list[Obj], pods: list[Obj]
) -> tuple[dict[str, list[Obj]], dict[str, list[Obj]]]:
    """The ReplicaSets of each Deployment (by its controller reference) and the pods of each of
    those ReplicaSets, by name and in name order; anything another controller owns is left out."""
    rs_by_deployment: dict[str, list[Obj]] = {}
    deployment_of_rs: dict[str, str] = {}
    for rs in replica_sets:
        ref = apps.controller_ref(rs)
        if ref and ref.get("name") in by_name:
            rs_by_deployment.setdefault(ref["name"], []).append(rs)
            deployment_of_rs[apps.name(rs)] = ref["name"]
    pods_by_rs: dict[str, list[Obj]] = {}
    for pod in sorted(pods, key=apps.name):
        ref = apps.controller_ref(pod)
        if ref and ref.get("name") in deployment_of_rs:
            pods_by_rs.setdefault(ref["name"], []).append(pod)
    return rs_by_deployment, pods_by_rs


def _deployment_rollout(
    d: Obj,
    effective: EffectiveRollout,
    replica_sets: list[Obj],
    pods_by_rs: dict[str, list[Obj]],
    routes: _Routes,
    in_flight: dict[str, int],
) -> _Rollout:
    """One Deployment (``replica_sets``: its own): its ReplicaSets old then new with their pods,
    its counts, strategy and conditions, why it waits and whether its rollout is complete."""
    dname = apps.name(d)
    component = component_of(d)
    knative_revision = apps.labels(d).get(apps.LABEL_KNATIVE_REVISION)
    new, olds = apps.split_replica_sets(d, replica_sets)
    desired = apps.replicas_of(d)
    surge, unavailable = apps.fenceposts(d)
    gpus_per_pod = _gpus_per_pod(d)
    strategy = _deployment_strategy(effective, desired, gpus_per_pod)
    rs_views: list[Obj] = []
    instances: list[Obj] = []
    for rs in [*olds, *([new] if new is not None else [])]:
        rs_pods = pods_by_rs.get(apps.name(rs), [])
        rs_views.append(_replica_set_view(rs, rs is new, rs_pods))
        revision = knative_revision or apps.labels(rs).get(apps.LABEL_TEMPLATE_HASH)
        routed = (revision in routes.revisions) if knative_revision else (dname in routes.backends)
        instances += [_instance(pod, component, dname, rs, revision, routed, in_flight) for pod in rs_pods]
    reasons = _deployment_reasons(d, new, olds, desired, surge, unavailable, rs_pods_of(new, pods_by_rs))
    done = _deployment_done(d, knative_revision, desired, rs_views, pods_by_rs)
    view = {
        "name": dname,
        "component": component,
        "knativeRevision": knative_revision,
        "revision": apps.revision_of(d),
        "replicas": desired,
        "gpusPerPod": gpus_per_pod,
        "paused": bool((d.get("spec") or {}).get("paused")),
        "strategy": strategy,
        "surge": surge,
        "unavailable": unavailable,
        "counts": {k: int((d.get("status") or {}).get(k) or 0) for k in DEPLOYMENT_COUNTS},
        "conditions": _conditions(d),
        "progressDeadlineSeconds": apps.progress_deadline(d),
        "progressDeadlineExceeded": apps.deadline_exceeded(d),
        "complete": done,
        "replicaSets": rs_views,
    }
    blocked = [{"component": component, "deployment": dname, "reason": r} for r in reasons]
    complete = done and not olds_with_pods(olds, pods_by_rs)
    return _Rollout(view, instances, blocked, complete, component, strategy)


# The status counts of a Deployment the view shows (0 when not reported).
DEPLOYMENT_COUNTS = ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas")


def _deployment_strategy(effective: EffectiveRollout, desired: int, gpus_per_pod: int) -> Obj:
    """The effective strategy at ``desired`` replicas, with what a surge costs in GPUs when the pods
    have any. Example: a multi-node worker of 2 replicas, 8 GPUs per pod, maxSurge 100% ->
    ``surgeGpus`` 2 x 8 = 16 (as many GPUs again)."""
    strategy = effective.to_json(desired)
    if gpus_per_pod:
        strategy["surgeGpus"] = effective.surge_count(desired) * gpus_per_pod
    return strategy


def _replica_set_view(rs: Obj, new: bool, rs_pods: list[Obj]) -> Obj:
    """One ReplicaSet of a Deployment: its revision and hash, whether it is the new one, its
    counts and its pods' names."""
    return {
        "name": apps.name(rs),
        "revision": apps.revision_of(rs),
        "hash": apps.labels(rs).get(apps.LABEL_TEMPLATE_HASH),
        "new": new,
        "replicas": apps.replicas_of(rs),
        "readyReplicas": apps.status_count(rs, "readyReplicas"),
        "availableReplicas": apps.status_count(rs, "availableReplicas"),
        "pods": [apps.name(p) for p in rs_pods],
    }


def _instance(
    pod: Obj, component: str, dname: str, rs: Obj, revision: Any, routed: bool, in_flight: dict[str, int]
) -> Obj:
    """One pod as an instance: where it belongs, its state, the highest gate it reached (``Routed``
    and beyond only when its revision or backend takes traffic), its node, restarts and in-flight
    requests."""
    return {
        "pod": apps.name(pod),
        "component": component,
        "deployment": dname,
        "replicaSet": apps.name(rs),
        "revision": revision,
        "state": pod_state(pod),
        **dict(zip(("gate", "gateFailed"), pod_gates(pod, routed), strict=True)),
        "node": (pod.get("spec") or {}).get("nodeName"),
        "restarts": apps.restarts(pod),
        "inFlight": int(in_flight.get(apps.name(pod), 0)),
    }


def _deployment_done(
    d: Obj, knative_revision: str | None, desired: int, rs_views: list[Obj], pods_by_rs: dict[str, list[Obj]]
) -> bool:
    """A Deployment's rollout is complete for its current generation; a Knative revision scaled to
    zero is done once none of its ReplicaSets has a pod left."""
    done = apps.is_complete(d) and int((d.get("status") or {}).get("observedGeneration") or 0) >= int(
        apps.meta(d).get("generation") or 1
    )
    if knative_revision and desired == 0:
        done = not any(pods_by_rs.get(r["name"]) for r in rs_views)
    return done


def _strategy_by_component(rollouts: list[_Rollout]) -> dict[str, Any]:
    """Each component's strategy as its first Deployment has it (the fields the page shows)."""
    out: dict[str, Any] = {}
    for r in rollouts:
        if r.component not in out:
            out[r.component] = {
                k: r.strategy[k] for k in ("maxSurge", "maxUnavailable", "mode", "note", "surgeGpus") if k in r.strategy
            }
    return out


def _isvc_reasons(error: Obj | None, status: Obj, generation: Any) -> list[Obj]:
    """Why the InferenceService as a whole waits, shown first: KServe refuses it or cannot read its
    ConfigMap, else KServe has not reconciled its current generation yet."""
    if error is not None:
        what = "KServe cannot read its ConfigMap" if error["source"] == "configMap" else "KServe refuses the spec"
        return [{"component": "InferenceService", "reason": f"{what}: {error['field']}: {error['rule']}"}]
    if status.get("observedGeneration") != generation:
        return [
            {
                "component": "InferenceService",
                "reason": f"KServe has not reconciled generation {generation} yet "
                f"(observed {status.get('observedGeneration')})",
            }
        ]
    return []


def _runtime_reasons(parsed: InferenceService | None) -> list[Obj]:
    """A component no ServingRuntime can serve, in the words of its runtime problem."""
    return [
        {"component": kind, "reason": f"KServe cannot serve the {kind}: {comp.runtime_problem}"}
        for kind, comp in (parsed.components if parsed else {}).items()
        if comp.runtime_problem
    ]


def _converged(
    isvc: Obj,
    error: Obj | None,
    managed: bool,
    complete: bool,
    settled: bool,
    instances: list[Obj],
    canary: Obj | None,
) -> bool:
    """KServe reports Ready for the current generation (ModelMesh's: only the generation), every
    Deployment's rollout is complete and every Knative revision settled, no pod is terminating and
    every canary is Ready."""
    status = isvc.get("status") or {}
    # ModelMesh Serving serves an unmanaged one: nothing to converge but KServe's own record of the generation.
    ready = not managed or (apps.condition(isvc, "Ready") or {}).get("status") == "True"
    return bool(
        error is None
        and ready
        and status.get("observedGeneration") == apps.meta(isvc).get("generation")
        and complete
        and settled
        and not any(i["state"] == STATE_DELETING for i in instances)
        and (canary is None or all(c.get("ready", True) for c in canary.get("canaries", [])))
    )


def _gpus_per_pod(deployment: Obj) -> int:
    """The GPUs one pod of the Deployment's template needs, of any GPU resource type
    (``core.podresources``: requests, else limits; init containers as Kubernetes counts them)."""
    return podresources.template_gpus((deployment.get("spec") or {}).get("template"), GPU_RESOURCES)


def inferenceservice_phase(view: dict[str, Any]) -> str:
    """The phase in the ModelServings' words, for the list and the page's badge: Unmanaged
    (ModelMesh: listed, not rolled out by RolloutUI), Degraded (KServe refuses the spec or cannot
    read its ConfigMap, or a Deployment passed its progress deadline), Paused (a Deployment is),
    else Healthy once converged, Progressing until then."""
    if view.get("managed") is False:
        return phases.UNMANAGED
    if view.get("error") or any(d["progressDeadlineExceeded"] for d in view["deployments"]):
        return phases.DEGRADED
    if any(d["paused"] for d in view["deployments"]):
        return phases.PAUSED
    return phases.HEALTHY if view["converged"] else phases.PROGRESSING


def rs_pods_of(rs: Obj | None, pods_by_rs: dict[str, list[Obj]]) -> list[Obj]:
    return pods_by_rs.get(apps.name(rs), []) if rs is not None else []


def olds_with_pods(olds: list[Obj], pods_by_rs: dict[str, list[Obj]]) -> bool:
    return any(pods_by_rs.get(apps.name(rs)) for rs in olds)


def _conditions(obj: Obj) -> list[Obj]:
    return [
        {k: c[k] for k in ("type", "status", "reason", "message") if c.get(k) is not None}
        for c in (obj.get("status") or {}).get("conditions") or []
    ]


def _deployment_reasons(
    d: Obj, new: Obj | None, olds: list[Obj], desired: int, surge: int, unavailable: int, new_pods: list[Obj]
) -> list[str]:
    """Why this Deployment's rollout waits, in an operator's words (empty when it does not)."""
    reasons = []
    if (d.get("spec") or {}).get("paused"):
        reasons.append("paused: the Deployment takes no rollout step until it is resumed")
    if apps.deadline_exceeded(d):
        deadline = apps.progress_deadline(d)
        reasons.append(
            f"progress deadline exceeded: no progress for {deadline} s (Progressing=False, ProgressDeadlineExceeded)"
        )
    observed = int((d.get("status") or {}).get("observedGeneration") or 0)
    if observed < int(apps.meta(d).get("generation") or 1):
        reasons.append("the Deployment controller has not seen the new spec yet")
    elif not (d.get("spec") or {}).get("paused"):
        reasons += blocked_reasons(
            desired, surge, unavailable, apps.replica_set_count(new), [apps.replica_set_count(rs) for rs in olds]
        )
    unschedulable = [p for p in new_pods if apps.is_active(p) and apps.unschedulable_message(p)]
    if unschedulable:
        reasons.append(f"{len(unschedulable)} new pod(s) unschedulable: {apps.unschedulable_message(unschedulable[0])}")
    crashing = [p for p in new_pods if apps.waiting_reason(p) == "CrashLoopBackOff" and not apps.is_terminating(p)]
    if crashing:
        reasons.append(f"{len(crashing)} new pod(s) in CrashLoopBackOff (e.g. {apps.name(crashing[0])})")
    return reasons


def _canary(parsed: InferenceService | None, status: Obj, by_name: dict[str, Obj]) -> tuple[Obj | None, list[Obj]]:
    if parsed is None:
        return None, []
    reasons = []
    if parsed.standard and parsed.canaries:
        ready = {c.get("name"): bool(c.get("ready")) for c in status.get("canaryStatuses") or []}
        canaries = []
        for c in parsed.canaries:
            deployment = f"{parsed.name}-{c.name}-predictor"
            canaries.append(
                {
                    "name": c.name,
                    "trafficPercent": c.traffic_percent,
                    "ready": ready.get(c.name, False),
                    "deployment": deployment,
                    "image": c.predictor.image,
                }
            )
            if not ready.get(c.name, False):
                reasons.append(
                    {
                        "component": f"canary:{c.name}",
                        "deployment": deployment,
                        "reason": f"canary {c.name} is not Ready: no traffic until its Deployment is rolled out",
                    }
                )
        return {"mode": "Standard", "canaries": canaries, "stable": parsed.predictor.name or "predictor"}, reasons
    if not parsed.standard:
        for kind, comp in parsed.components.items():
            if comp.canary_traffic_percent is not None:
                entry = (status.get("components") or {}).get(kind) or {}
                return {
                    "mode": KNATIVE,
                    "component": kind,
                    "canaryTrafficPercent": comp.canary_traffic_percent,
                    "latestRevision": entry.get("latestReadyRevision"),
                    "stableRevision": entry.get("latestRolledoutRevision"),
                }, []
    return None, []


def _serverless(
    parsed: InferenceService | None, status: Obj, by_name: dict[str, Obj]
) -> tuple[dict[str, Any], list[Obj], bool]:
    """Per component: the revisions KServe reports, why the traffic has not moved yet, and whether
    it is where the spec puts it."""
    if parsed is None or parsed.standard:
        return {}, [], True
    out: dict[str, Any] = {}
    reasons = []
    settled = True
    components = status.get("components") or {}
    for kind, comp in parsed.components.items():
        entry = components.get(kind) or {}
        out[kind] = {
            k: entry.get(k)
            for k in (
                "latestCreatedRevision",
                "latestReadyRevision",
                "latestRolledoutRevision",
                "previousRolledoutRevision",
            )
        }
        created, ready = entry.get("latestCreatedRevision"), entry.get("latestReadyRevision")
        if created is None or created != ready:
            settled = False
            deployment = by_name.get(f"{created}-deployment") if created else None
            if created is None:
                why = "waiting for KServe to create the first revision"
            elif deployment is not None and apps.deadline_exceeded(deployment):
                why = f"revision {created} failed (progress deadline exceeded); traffic stays on {ready}"
            else:
                why = f"revision {created} is not ready yet; traffic stays on {ready or 'nothing'}"
            reasons.append({"component": kind, "reason": why})
        elif comp.canary_traffic_percent is None and entry.get("latestRolledoutRevision") != ready:
            settled = False
    return out, reasons, settled


def _spec_summary(parsed: InferenceService | None, deployments: list[Obj]) -> Obj | None:
    """What the spec asks for, in the trace's and the dashboard's words."""
    if parsed is None:
        return None
    components = {}
    for kind, comp in parsed.components.items():
        item: Obj = {"replicas": comp.min_replicas, "image": comp.image}
        if comp.runtime:
            item["runtime"] = comp.runtime
        if comp.name:
            item["name"] = comp.name
        if comp.canary_traffic_percent is not None:
            item["canaryTrafficPercent"] = comp.canary_traffic_percent
        components[kind] = item
    out: Obj = {"deploymentMode": parsed.deployment_mode, "components": components}
    if parsed.canaries:
        out["canary"] = [
            {"name": c.name, "trafficPercent": c.traffic_percent, "image": c.predictor.image} for c in parsed.canaries
        ]
    paused = sorted(apps.name(d) for d in deployments if (d.get("spec") or {}).get("paused"))
    if paused:
        out["paused"] = paused
    return out
