"""Simulated-cluster services: fault injection for the dashboard, and the preview of a change.

Only for the "sim" backend (``ControlError`` otherwise). Faults need the operate permission and a
reason, and are audited like the controls (action ``kill_pod``, ``fail_node``, ``add_node``).

``preview(namespace, name, patch)`` answers "what will this change do?" without touching anything:
it asks the simulated cluster's public preview (``preview_from``, which the services reach through
``controller.runtime.simulator``: the real reconcile pass on a virtual clock) to copy the
ModelServing as it runs (its object, revisions and pods, each where it is in its life) onto a
cluster with the live cluster's nodes (less the GPUs other workloads hold there), phase timings,
image behaviour and traffic, apply ``patch`` as an operator would and run until the change has
rolled out; and it shapes that timeline for the page (capacity steps, distinct blocked reasons, the
budget's floor).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django.conf import settings

from controller.core import naming
from controller.core.controls import ControlError
from controller.core.mergepatch import PatchTooLarge, check_patch_limits, merge_patch
from controller.core.podresources import pod_gpus
from controller.core.ports import NotFound
from controller.core.spec import ValidationError, parse_modelserving
from controller.models import SimTraffic
from controller.runtime import clustersettings
from controller.runtime.simulator import (
    LiveState,
    PreviewCluster,
    SimulatorPort,
    Span,
    Traffic,
    get_simulator,
    preview_from,
)

from ..models import AuditRecord, PreviewJob
from . import jobs
from .cluster import backend_name
from .controls import ControlDenied, audit, audited, check_permission, check_reason, check_source
from .jobs import PreviewTooLong as PreviewTooLong  # re-exported: callers and tests name it here


def _sim_cluster() -> SimulatorPort:
    """The simulated cluster's extras; a ``ControlError`` naming ``backend`` where there are none."""
    simulator = get_simulator(actor="operator")
    if simulator is None:
        raise ControlError(
            f"simulation is only available on the simulated cluster (backend is {backend_name()!r})", field="backend"
        )
    return simulator


def _fault(
    user,
    action: str,
    reason: Any,
    source: str,
    namespace: str,
    name: str,
    details: dict[str, Any],
    do,
    *,
    scope: str | None,
) -> AuditRecord:
    """Run the fault ``do`` and audit it. ``scope``: the namespace whose operate permission it needs
    (a pod's), None for a cluster-wide fault (a node's: operate in every namespace)."""
    with audited(
        user, action=action, namespace=namespace, name=name, reason=reason, source=source, details=details
    ) as control:
        check_source(source)
        check_permission(user, namespace=scope)
        reason = check_reason(reason)
        try:
            details.update(do() or {})
        except ControlError:  # a ValueError too, already naming its field
            raise
        except ValueError as exc:  # the simulated cluster's refusal of the fault: bad input, a 400
            raise ControlError(str(exc)) from exc
    return control.record


def kill_pod(user, namespace: str, pod_name: str, *, reason: str, source: str) -> AuditRecord:
    """The pod's containers are killed for good (phase Failed): the controller's recovery replaces
    it. Requests in flight on it are interrupted."""
    details: dict[str, Any] = {"pod": pod_name}

    def do() -> dict[str, Any]:
        cluster = _sim_cluster()
        try:
            pod = cluster.get_pod(namespace, pod_name)
        except NotFound:
            raise ControlError(f"pod {namespace}/{pod_name} does not exist", field="pod") from None
        if (pod.get("status") or {}).get("phase") == "Failed" or (pod.get("metadata") or {}).get("deletionTimestamp"):
            raise ControlError(f"pod {namespace}/{pod_name} is already failed or terminating", field="pod")
        message = f"killed by {getattr(user, 'username', user)}: {reason}"
        cluster.kill_pod(namespace, pod_name, message)
        return {"node": (pod.get("spec") or {}).get("nodeName")}

    # The audit row names the ModelServing the pod belongs to, so it shows on that page.
    try:
        label = ((_sim_cluster().get_pod(namespace, pod_name).get("metadata") or {}).get("labels") or {}).get(
            naming.LABEL_NAME, ""
        )
    except (NotFound, ControlError):
        label = ""
    return _fault(user, "kill_pod", reason, source, namespace, label or pod_name, details, do, scope=namespace)


def fail_node(user, node_name: str, *, reason: str, source: str) -> AuditRecord:
    """The node is lost: its pods fail and are removed (requests on them interrupted); it schedules
    nothing any more."""
    details: dict[str, Any] = {"node": node_name}

    def do() -> dict[str, Any]:
        cluster = _sim_cluster()
        try:
            pods = cluster.fail_node(node_name)
        except NotFound:
            raise ControlError(f"node {node_name} does not exist", field="node") from None
        except Exception as exc:
            if "already failed" in str(exc):
                raise ControlError(str(exc), field="node") from None
            raise
        return {"pods": pods}

    return _fault(user, "fail_node", reason, source, "", node_name, details, do, scope=None)


def add_node(user, *, gpus: int, reason: str, source: str) -> AuditRecord:
    details: dict[str, Any] = {"gpus": gpus}

    def do() -> dict[str, Any]:
        if isinstance(gpus, bool) or not isinstance(gpus, int) or not 0 <= gpus <= 1024:
            raise ControlError(f"gpus must be an integer between 0 and 1024, got {gpus!r}", field="gpus")
        node = _sim_cluster().add_node(gpus)
        details["node"] = node.name
        return {"node": node.name, "ip": node.ip}

    return _fault(user, "add_node", reason, source, "", "", details, do, scope=None)


def list_nodes() -> list[dict[str, Any]]:
    """Every node (failed ones too): name, ip, gpus, GPUs in use, pods on it, failed."""
    cluster = _sim_cluster()
    used = cluster.gpus_used()
    pods = cluster.pods_per_node()
    return [
        {
            "name": n.name,
            "ip": n.ip,
            "gpus": n.gpus,
            "gpusUsed": used.get(n.name, 0) if not n.failed else 0,
            "pods": pods.get(n.name, 0) if not n.failed else 0,
            "failed": n.failed,
        }
        for n in cluster.list_nodes(include_failed=True)
    ]


# -- preview -------------------------------------------------------------------------------------------
#
# A preview simulates hours of virtual time; at 2,000 pods one costs over a minute of CPU. So it is
# bounded four ways: it needs the operate permission in the namespace (it reveals what a change
# would do), the API throttles it per user (``preview`` rate), the copy may have at most
# ROLLOUTUI_PREVIEW_MAX_PODS pods before and after the change, and it runs in a Celery worker
# (``rolloutui.tasks.run_preview``), never in the web server, stopped after ROLLOUTUI_PREVIEW_SECONDS
# of wall time. The page polls the ``PreviewJob`` for its progress and result.


def _pods(parsed) -> int:
    """Pods of a ModelServing at full size: groups x the pods of one group. Example: 4 groups of
    prefill (1 instance x (entry + 1 worker)) and decode (2 instances x 1 entry) = 4 x (2 + 2) = 16."""
    return parsed.replicas * sum(role.replicas * role.pods_per_instance for role in parsed.roles)


def check_preview(user, namespace: str, name: str, patch: dict[str, Any], *, source: str):
    """Everything a preview is refused for, checked before any simulation: the permission
    (``ControlDenied``, audited as action ``preview``), a patch that would make the ModelServing
    invalid, a copy too large (``ControlError`` naming the field). Returns (base manifest, body,
    parsed spec after the change)."""
    try:
        check_permission(user, namespace=namespace)
    except ControlDenied as denied:
        audit(user, action="preview", namespace=namespace, name=name, reason="", source=source, error=denied)
        raise
    return _prepare(namespace, name, patch)


def _prepare(namespace: str, name: str, patch: dict[str, Any]):
    cluster = _sim_cluster()
    ms = cluster.get_modelserving(namespace, name)
    if not isinstance(patch, dict) or not patch:
        raise ControlError("patch must be a non-empty JSON merge patch object", field="patch")
    base = {
        "apiVersion": ms.get("apiVersion") or naming.API_VERSION,
        "kind": ms.get("kind") or naming.KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": ms.get("spec") or {},
    }
    body = {k: v for k, v in patch.items() if k in ("spec", "metadata")}
    try:
        check_patch_limits(body)
        parsed = parse_modelserving(merge_patch(base, body))
    except PatchTooLarge as err:
        raise ControlError(str(err), field="patch") from None
    except ValidationError as err:
        raise ControlError(
            f"the change would make the ModelServing invalid: {err}", field=f"patch.{err.field}"
        ) from None
    limit = settings.ROLLOUTUI_PREVIEW_MAX_PODS
    try:
        before = _pods(parse_modelserving(base))
    except ValidationError:
        before = 0
    pods = max(before, _pods(parsed))
    if pods > limit:
        raise ControlError(
            f"a preview simulates at most {limit} pods; this one needs {pods} (groups x pods per group)",
            field="patch.spec.replicas",
        )
    return base, body, parsed


def start_preview(user, namespace: str, name: str, patch: dict[str, Any], *, source: str) -> PreviewJob:
    """Check the preview (``check_preview``) and queue it; returns the ``PreviewJob`` to poll."""
    from rolloutui.tasks import run_preview

    check_preview(user, namespace, name, patch, source=source)
    jobs.forget_old_jobs()
    progress = {"phase": "queued", "limitSeconds": settings.ROLLOUTUI_PREVIEW_SECONDS}
    return jobs.queue(user, namespace, name, patch, task=run_preview, progress=progress)


def run_preview_job(job_id: str) -> None:
    """The worker's half: run one queued preview, keeping its progress and then its result (or the
    error naming the field) on the job."""
    job = jobs.claim(job_id)
    if job is not None:
        jobs.run(job, lambda: preview(job.namespace, job.name, job.patch, job_id=job.pk), what="preview")


def preview(namespace: str, name: str, patch: dict[str, Any], *, job_id=None) -> dict[str, Any]:
    """Simulated timeline of applying ``patch`` (a JSON merge patch of the manifest) to a copy.

    Returns ``{"durationSeconds", "minAvailable", "capacity": [[t, available], ...], "converged",
    "blockedReasons": [...], "desired", "floor", "simulatedSeconds", "requests"}``; ``t`` counts
    virtual seconds from the moment the change is applied; ``available`` is available ServingGroups.
    A patch that would make the ModelServing invalid, or a copy too large, is a ``ControlError``
    naming the field; past ROLLOUTUI_PREVIEW_SECONDS of wall time it stops with ``PreviewTooLong``.
    With ``job_id`` the job's progress is updated as the simulation advances.
    """
    _, body, parsed = _prepare(namespace, name, patch)
    cluster = _sim_cluster()
    traffic = _offered_traffic(namespace, name)
    live = LiveState.read(cluster, namespace, name, cluster.clock.now())
    copy = _preview_cluster(cluster, live, traffic)
    progress = _progress_reporter(settings.ROLLOUTUI_PREVIEW_SECONDS, job_id)
    timeline = preview_from(live, body, copy, progress=progress)
    return _preview_result(timeline, parsed)


def _offered_traffic(namespace: str, name: str) -> Traffic | None:
    """The simulated load the ModelServing takes now (None when it takes none), for the copy."""
    row = SimTraffic.objects.filter(namespace=namespace, name=name, rps__gt=0).first()
    if not row:
        return None
    return Traffic(row.rps, Span(row.duration_low, max(row.duration_high, row.duration_low)))


def _preview_cluster(cluster: SimulatorPort, live: LiveState, traffic: Traffic | None) -> PreviewCluster:
    """The copy's cluster: the live nodes less the GPUs other workloads hold there, the live
    cluster's timings and images, ``traffic``, and the cluster settings the live passes use."""
    nodes = cluster.list_nodes()
    return PreviewCluster(
        node_gpus=_gpus_for_the_copy(nodes, cluster.gpus_used(), live.pods),
        node_names=[node.name for node in nodes],
        config=cluster.config,
        traffic=traffic,
        settings=clustersettings.cluster_settings(),  # the copy resolves budgets as the live passes do
    )


def _progress_reporter(budget: float, job_id) -> Callable[[str, float], None]:
    """The simulation's progress callback: it stops the preview with ``PreviewTooLong`` past
    ``budget`` seconds of wall time from now, and with ``job_id`` keeps the job's progress at most
    every half second of wall time."""
    stop = jobs.stop_past(
        budget,
        lambda phase, simulated: (
            f"the preview was stopped after {budget} s of computation ({phase}, {simulated:.0f} simulated "
            "seconds): try a smaller change"
        ),
    )
    last_saved = [0.0]

    def progress(phase: str, simulated: float) -> None:
        elapsed = stop(phase, simulated)
        if job_id is not None and elapsed - last_saved[0] >= 0.5:
            last_saved[0] = elapsed
            jobs.report(
                job_id,
                {
                    "phase": phase,
                    "simulatedSeconds": round(simulated, 1),
                    "elapsedSeconds": round(elapsed, 1),
                    "limitSeconds": budget,
                },
            )

    return progress


def _preview_result(timeline, parsed) -> dict[str, Any]:
    """The timeline shaped for the page: capacity steps, distinct blocked reasons, and the floor
    the budget keeps. Example: 4 groups with maxUnavailable 1 -> floor 3."""
    from controller.core.strategy import resolve

    eff = resolve(parsed, clustersettings.cluster_settings())
    return {
        "durationSeconds": timeline.converged_after,
        "converged": timeline.converged,
        "baselineConverged": timeline.baseline_converged,
        "minAvailable": min((sample.available for sample in timeline.samples), default=None),
        "capacity": capacity_steps(timeline.samples),
        "desired": parsed.replicas,
        "floor": max(parsed.replicas - eff.group.max_unavailable.count, 0),
        "blockedReasons": distinct_reasons(timeline.samples),
        "simulatedSeconds": timeline.simulated_seconds,
        "nodes": timeline.nodes,
        "requests": timeline.requests,
    }


def capacity_steps(samples) -> list[list[float]]:
    """``[t, available]`` at each change of the available ServingGroups (the first sample always).
    Example: available 4, 4, 3, 3, 4 at t 0..4 -> [[0, 4], [2, 3], [4, 4]]."""
    steps: list[list[float]] = []
    for sample in samples:
        if not steps or steps[-1][1] != sample.available:
            steps.append([sample.t, sample.available])
    return steps


def distinct_reasons(samples) -> list[str]:
    """The samples' blocked reasons, each once, first wording kept: "waiting for 5 in-flight
    request(s)" and "... 4 ..." are one reason (numbers are masked for the comparison only)."""
    reasons: list[str] = []
    seen: set[str] = set()
    for sample in samples:
        for reason in sample.blocked:
            shape = re.sub(r"\d+", "N", reason or "")
            if reason and shape not in seen:
                seen.add(shape)
                reasons.append(reason)
    return reasons


def _gpus_for_the_copy(nodes, used_by_all: dict[str, int], pods: list[dict[str, Any]]) -> list[int]:
    """Each node's GPUs less what other workloads' pods hold there: the copy has only this
    ModelServing's pods, so the GPUs the others hold stay taken. Example: node-0 has 8 GPUs, its
    pods hold 6, of which 2 are this ModelServing's: the copy's node-0 has 8 - (6 - 2) = 4."""
    ours: dict[str, int] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            ours[node] = ours.get(node, 0) + pod_gpus(pod.get("spec"))
    return [max(node.gpus - (used_by_all.get(node.name, 0) - ours.get(node.name, 0)), 0) for node in nodes]


def traffic(namespace: str, name: str) -> dict[str, Any] | None:
    """The simulated request load of one ModelServing and its totals (None: no traffic configured;
    ``SimulatorPort.traffic_of``).

    ``interrupted`` counts requests cut off because their pod stopped serving (deleted while busy,
    container restarted, node failed, pod killed): zero during a rollout means every drain finished.
    """
    return _sim_cluster().traffic_of(namespace, name)
