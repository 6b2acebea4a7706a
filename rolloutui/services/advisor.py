"""The strategy advisor: the fastest rollout strategy that keeps a floor, found by previews of a change.

Place in the flow: the detail page's Advisor panel (``static/js/detail/panels/advisor.js``) ->
``POST /api/modelservings/<ns>/<name>/advise/`` -> ``start`` -> a ``PreviewJob`` (its progress
``kind`` is ``advice``) run by the preview worker (``rolloutui.tasks.run_advice`` -> ``run_job``) ->
the page polls ``GET /api/previews/<id>/`` (progress: candidates done of total) -> the operator
applies the advice with the ``apply-advice`` control (``apply_advice``, one audited action: the
change and the recommended strategy together, or the change alone with ``keepStrategy``).
``manage.py rollout advise`` runs ``advise_for`` in its own process and stores the advice the same
way, so its id can be applied.

The search itself is pure (``controller.core.advisor``); here are its inputs, read once from the
simulated cluster: the ModelServing as it runs (``LiveState``), the copy's nodes (each node's GPUs
less what other workloads hold), timings, image behaviour and traffic, the cluster settings, the
free GPUs, and the load floor from the capacity signals (``services.capacity``: the groups the
offered load needs at the safe concurrency). Every candidate's preview starts from the same copy,
with the same seed: the same input gives the same advice.

Bounds, as for a preview: the operate permission in the namespace (a refusal audited as
``advise``), the API's per-user ``preview`` rate, at most ``ROLLOUTUI_ADVISOR_CANDIDATES``
candidates simulated (12), at most ``ROLLOUTUI_ADVISOR_SECONDS`` of wall time for the whole
search (the preview limit by default); candidates past the time limit are listed, not simulated.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings

from controller.core import advisor as core
from controller.core.controls import ControlError
from controller.core.mergepatch import merge_patch
from controller.core.podresources import pod_gpus
from controller.models import SimTraffic
from controller.runtime import clustersettings
from controller.runtime.simulator import STEP, LiveState, PreviewCluster, Span, Traffic, preview_from

from ..models import PreviewJob
from . import capacity, controls, jobs, preview, simulation
from .controls import ControlDenied, audit, check_permission

log = logging.getLogger(__name__)

KIND = "advice"
ACTION = "advise"
APPLY_ACTION = "apply_advice"


def candidate_limit() -> int:
    return int(getattr(settings, "ROLLOUTUI_ADVISOR_CANDIDATES", core.DEFAULT_LIMIT))


def time_limit() -> float:
    return float(getattr(settings, "ROLLOUTUI_ADVISOR_SECONDS", settings.ROLLOUTUI_PREVIEW_SECONDS))


# --- the inputs, read once ---------------------------------------------------------------------------------
def _change(namespace: str, name: str, patch, set_image) -> dict[str, Any]:
    """The change as a merge patch (a raw patch, or the set-image control's own patch)."""
    return preview._patch(namespace, name, patch, set_image)


def _load_floor(namespace: str, name: str) -> tuple[int | None, str]:
    """The groups the offered load needs at the safe concurrency, from the capacity signals.

    The offered load, not the requests in flight this second (which come and go with the traffic
    and would make the advice change from one run to the next): per role, its request rate x the
    mean request duration, at the safe concurrency per instance with the capacity panel's headroom
    (``capacity.TARGET_UTILISATION``), rounded up to instances, then to groups by the role's
    instances per group; the role that needs the most groups sets it. Example: decode, 1.9 req/s
    x 11 s = 20.9 offered, 16 safe x 0.8 = 12.8 per instance -> 2 instances -> 1 group at 2 per
    group."""
    try:
        signals = capacity.capacity(namespace, name)
    except Exception as exc:  # the signals are advice: without them the strategy's floor stands
        log.info("advisor: no capacity signals for %s/%s: %s", namespace, name, exc)
        return None, "the capacity signals could not be read"
    traffic = signals.get("traffic") or {}
    span = traffic.get("durationSeconds") or []
    mean = sum(span) / len(span) if span else None
    best: tuple[int, str] | None = None
    unknown = "the safe concurrency per instance is unknown: no release with batching targets it"
    for role in signals.get("roles") or []:
        safe, rate = role.get("safeConcurrency"), role.get("requestRate")
        if not safe:
            continue
        if rate is None or mean is None:
            unknown = "no offered load is known (no request rate)"
            continue
        offered = rate * mean
        per_instance = safe * capacity.TARGET_UTILISATION
        instances = math.ceil(offered / per_instance - 1e-9) if offered > 0 else 0
        per_group = max(int(role.get("perGroup") or 1), 1)
        groups = max(math.ceil(instances / per_group), capacity.MIN_REPLICAS)
        why = (
            f"capacity signals: {role['name']} is offered {offered:.1f} requests at once ({rate:g} req/s x "
            f"{mean:g} s), at {safe} safe per instance with {round((1 - capacity.TARGET_UTILISATION) * 100)}% "
            f"headroom {instances} instance{'s' if instances != 1 else ''}, at {per_group} per group "
            f"{groups} group{'s' if groups != 1 else ''}"
        )
        if best is None or groups > best[0]:
            best = (groups, why)
    if best is None:
        return None, unknown
    return best


def _copy_of(namespace: str, name: str) -> tuple[LiveState, PreviewCluster, int]:
    """The live ModelServing, the copy's cluster (as ``simulation.preview`` builds it) and the GPUs
    free there for this ModelServing's surge."""
    cluster = simulation._sim_cluster()
    row = SimTraffic.objects.filter(namespace=namespace, name=name, rps__gt=0).first()
    traffic = Traffic(row.rps, Span(row.duration_low, max(row.duration_high, row.duration_low))) if row else None
    live = LiveState.read(cluster, namespace, name, cluster.clock.now())
    nodes = cluster.list_nodes()
    gpus = simulation._gpus_for_the_copy(nodes, cluster.gpus_used(), live.pods)
    ours = sum(pod_gpus(p.get("spec")) for p in live.pods if (p.get("spec") or {}).get("nodeName"))
    copy = PreviewCluster(
        node_gpus=gpus,
        node_names=[node.name for node in nodes],
        config=cluster.config,
        traffic=traffic,
        settings=clustersettings.cluster_settings(),
    )
    return live, copy, max(sum(gpus) - ours, 0)


def advise(
    namespace: str,
    name: str,
    *,
    patch: Mapping[str, Any] | None = None,
    set_image: Mapping[str, Any] | None = None,
    limit: int | None = None,
    floor: int | None = None,
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """The advice for a change (exactly one of ``patch`` / ``set_image``, as for a preview):
    ``{"floor": {"groups", "why"}, "candidates": [...], "recommended": index, "summary",
    "change", "generation", "elapsedSeconds"}``. Raises ``ControlError`` naming the field or
    ``NotFound``."""
    limit = candidate_limit() if limit is None else limit
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= candidate_limit():
        raise ControlError(f"limit must be between 1 and {candidate_limit()} candidates", field="limit")
    change = _change(namespace, name, patch, set_image)
    base, body, parsed = simulation._prepare(namespace, name, change)
    after = merge_patch(base, body)
    live, copy, free = _copy_of(namespace, name)
    load_groups, load_why = _load_floor(namespace, name)
    preview_budget = settings.ROLLOUTUI_PREVIEW_SECONDS

    def run(candidate: core.Candidate, rollout_limit: float | None) -> core.Outcome:
        full = body if candidate.current else merge_patch(body, core.strategy_patch(after, candidate.strategy))
        kwargs = {"rollout_limit": rollout_limit} if rollout_limit is not None else {}
        stop = jobs.stop_past(preview_budget, lambda phase, simulated: f"one preview ran past {preview_budget} s")
        try:
            timeline = preview_from(live, full, copy, progress=stop, **kwargs)
        except jobs.PreviewTooLong as err:
            return core.Outcome(False, None, None, None, parsed.replicas, error=str(err))
        return core.outcome_of(timeline, parsed.replicas)

    try:
        advice = core.search(
            after,
            run,
            settings=copy.settings,
            free_gpus=free,
            load_groups=load_groups,
            load_why=load_why,
            limit=limit,
            seconds=time_limit(),
            floor=floor,
            progress=progress,
            step=STEP,
            clock=time.monotonic,
        )
    except core.AdvisorError as err:
        raise ControlError(str(err), field=err.field) from None
    advice["change"] = body
    advice["generation"] = (live.modelserving.get("metadata") or {}).get("generation")
    advice["freeGpus"] = free
    return advice


# --- the job and its entry points ------------------------------------------------------------------------
def _check(user, namespace: str, name: str, source: str) -> None:
    try:
        check_permission(user, namespace=namespace)
    except ControlDenied as denied:
        audit(user, action=ACTION, namespace=namespace, name=name, reason="", source=source, error=denied)
        raise


def _request(patch, set_image, limit, floor) -> dict[str, Any]:
    return {"patch": dict(patch or {}), "setImage": dict(set_image or {}), "limit": limit, "floor": floor}


def start(
    user,
    namespace: str,
    name: str,
    *,
    patch: Mapping[str, Any] | None = None,
    set_image: Mapping[str, Any] | None = None,
    limit: int | None = None,
    floor: int | None = None,
    source: str,
) -> PreviewJob:
    """Check the request (permission, the change, the size of the copy) and queue the advice on the
    preview worker; returns the job to poll (``GET /api/previews/<id>/``)."""
    from rolloutui.tasks import run_advice

    _check(user, namespace, name, source)
    change = _change(namespace, name, patch, set_image)
    simulation._prepare(namespace, name, change)
    if limit is not None and (
        isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= candidate_limit()
    ):
        raise ControlError(f"limit must be between 1 and {candidate_limit()} candidates", field="limit")
    progress = {
        "kind": KIND,
        "phase": "queued",
        "limitSeconds": time_limit(),
        "request": _request(patch, set_image, limit, floor),
    }
    # An advice is a dozen previews: on the preview worker, like one.
    return jobs.queue(user, namespace, name, change, task=run_advice, progress=progress)


def run_job(job_id: str) -> None:
    """The worker's half: compute one queued advice, keeping its progress and then its result."""
    job = jobs.claim(job_id, kind=KIND, progress={"phase": "simulating", "done": 0})
    if job is None:
        return
    request = (job.progress or {}).get("request") or {}
    started = time.monotonic()

    def elapsed() -> float:
        return round(time.monotonic() - started, 1)

    def progress(done: int, total: int, strategy: dict[str, Any]) -> None:
        jobs.report(
            job.pk,
            {
                "kind": KIND,
                "phase": "simulating",
                "done": done,
                "total": total,
                "last": strategy,
                "elapsedSeconds": elapsed(),
                "limitSeconds": time_limit(),
            },
        )

    def compute() -> dict[str, Any]:
        result = advise(
            job.namespace,
            job.name,
            patch=job.patch,
            limit=request.get("limit"),
            floor=request.get("floor"),
            progress=progress,
        )
        result["id"] = str(job.pk)
        return result

    def progress_at_end(failed: bool) -> dict[str, Any]:
        return {"kind": KIND, "phase": "error" if failed else "done", "elapsedSeconds": elapsed()}

    jobs.run(job, compute, what="advice", progress_at_end=progress_at_end)


def advise_for(
    user,
    namespace: str,
    name: str,
    *,
    patch: Mapping[str, Any] | None = None,
    set_image: Mapping[str, Any] | None = None,
    limit: int | None = None,
    floor: int | None = None,
    source: str,
) -> dict[str, Any]:
    """``advise`` in the caller's process (``manage.py rollout advise``) for ``user``, who needs
    the operate permission in the namespace; the advice is stored as a finished job, so its ``id``
    can be applied (``apply-advice``)."""
    _check(user, namespace, name, source)
    result = advise(namespace, name, patch=patch, set_image=set_image, limit=limit, floor=floor)
    request = _request(patch, set_image, limit, floor)
    job = jobs.store_done(
        user, namespace, name, result["change"], progress={"kind": KIND, "phase": "done", "request": request}
    )
    result["id"] = str(job.pk)
    jobs.finish(job.pk, result=result, error=None)
    return result


# --- applying it -------------------------------------------------------------------------------------------
def apply_advice(
    user,
    namespace: str,
    name: str,
    *,
    advice: str,
    candidate: int | None = None,
    keep_strategy: bool = False,
    reason: str,
    source: str,
):
    """Apply an advice's change with its recommended strategy (or ``candidate``, an index into its
    candidates, which must be feasible) in one audited action ``apply_advice``; ``keep_strategy``:
    the change alone, the strategy as it is. Refused (``ControlError`` on field ``advice``) when the
    advice is not this ModelServing's, not finished, or the ModelServing changed since."""
    details: dict[str, Any] = {}

    def build(ms: dict[str, Any], revisions) -> dict[str, Any]:
        job = _advice_job(advice, namespace, name)
        result = job.result or {}
        generation = (ms.get("metadata") or {}).get("generation")
        if result.get("generation") is not None and generation != result.get("generation"):
            raise ControlError(
                f"the ModelServing changed since this advice (generation {result.get('generation')}, now "
                f"{generation}): advise again",
                field="advice",
            )
        rows = result.get("candidates") or []
        index = result.get("recommended") if candidate is None else candidate
        change = dict(result.get("change") or job.patch or {})
        if keep_strategy:
            details.update(candidate=None, strategy="current")
            return change
        if index is None:
            raise ControlError(
                "this advice recommends nothing: apply the change alone (keepStrategy)", field="candidate"
            )
        if not 0 <= index < len(rows):
            raise ControlError(f"candidate must be between 0 and {len(rows) - 1}", field="candidate")
        row = rows[index]
        if not row.get("feasible"):
            raise ControlError(f"candidate {index} is not feasible: {row.get('why')}", field="candidate")
        details.update(candidate=index, strategy=row["strategy"], why=row.get("why"), floor=result.get("floor"))
        if row.get("current"):
            return change
        base = {"spec": ms.get("spec") or {}}
        return merge_patch(change, core.strategy_patch(merge_patch(base, change), row["strategy"]))

    args = {"advice": advice, "candidate": candidate, "keepStrategy": bool(keep_strategy)}
    return controls._control(
        user, namespace, name, APPLY_ACTION, reason, source, build, args, extra={"advice": details}
    )


def _advice_job(advice: str, namespace: str, name: str) -> PreviewJob:
    import uuid

    try:
        key = uuid.UUID(str(advice))
    except ValueError:
        raise ControlError("advice must be the id of an advice (from advise)", field="advice") from None
    job = PreviewJob.objects.filter(pk=key).first()
    if job is None or (job.progress or {}).get("kind") != KIND or (job.namespace, job.name) != (namespace, name):
        raise ControlError(f"no advice {advice} for {namespace}/{name}", field="advice")
    if job.status != PreviewJob.Status.DONE or not job.result:
        raise ControlError(f"advice {advice} is {job.status}, not done", field="advice")
    return job


__all__ = ["advise", "advise_for", "apply_advice", "run_job", "start", "strategy_text"]


def strategy_text(strategy: Mapping[str, Any]) -> str:
    """A candidate's strategy in a line: "maxUnavailable 1, maxSurge 3" or, role level,
    "decode 1/0, prefill 1/1 (unavailable/surge), maxSkew 50%"."""
    if "roles" not in strategy:
        return f"maxUnavailable {strategy.get('maxUnavailable')}, maxSurge {strategy.get('maxSurge')}"
    roles = ", ".join(f"{n} {b.get('maxUnavailable')}/{b.get('maxSurge')}" for n, b in strategy["roles"].items())
    skew = f", maxSkew {strategy['maxSkew']}" if strategy.get("maxSkew") else ""
    return f"{roles} (unavailable/surge){skew}"
