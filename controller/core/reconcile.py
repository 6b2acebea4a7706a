"""One reconcile pass, written against the ports.

1. Read the ModelServing, its pods and its revisions from the cluster.
2. Validate the spec; an invalid spec gets a ``SpecInvalid`` condition and nothing else is done.
3. Observe (pods -> instances -> groups, in-flight counts from the router) and ``plan()``.
4. Write status with optimistic concurrency, before acting: on a conflict, start again from fresh
   state (never overwrite what another writer did), nothing done yet. Status is what recovery reads
   after a restart, so what the actions start is recorded before they run.
5. Apply: the headless Service the pods resolve through (``network``) and revision objects first
   (a pod is never created for a revision that is not stored, nor before its name can resolve), then
   pod actions in plan order. A pod that already exists or is already gone is not an error: the
   next pass sees the truth. Then the analysis' spec patch (pause or rollback), if any.

Nothing survives the pass in memory; the next pass starts from the cluster again.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from . import digests, gang, naming, network, phases
from .observe import GroupObs, Observed, observe
from .passcache import INSTANCES_LIMIT, PassCache, bounded_put
from .plan import CREATE, DELETE, DRAIN, PATCH_IMAGE, PATCH_LABELS, SET_GATE, UNDRAIN, VERIFY, Action, Plan
from .planner import plan
from .planner.canary import windows_to_fetch
from .ports import (
    PODGROUP,
    SERVICE,
    Clock,
    ClusterPort,
    Conflict,
    MetricsPort,
    NotFound,
    Obj,
    RouterPort,
    VerifierPort,
    in_flight_many,
    routed_pods,
)
from .revisions import History, revision_object
from .spec import ModelServing, ValidationError, Verification, parse_modelserving_cached
from .strategy import ClusterSettings
from .view import build_view, expand_waiting

log = logging.getLogger(__name__)

MAX_STATUS_ATTEMPTS = 5
# The reason given with requests cut off when a drain timed out (``controller.runtime.interruptions``
# uses the same words).
INTERRUPTED_AT_DRAIN_TIMEOUT = "drain timeout"


@dataclass(slots=True)
class ReconcileResult:
    namespace: str
    name: str
    found: bool = True
    actions: list[Action] = field(default_factory=list)
    blocked: list[dict[str, Any]] = field(default_factory=list)
    requeue_after: float | None = None
    # How long the plan holds for the same inputs (``Plan.holds_for``; None: for ever).
    holds_for: float | None = None
    status: dict[str, Any] = field(default_factory=dict)
    view: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    duration_seconds: float = 0.0
    audit: list[dict[str, Any]] = field(default_factory=list)  # what the pass did that must be audited
    analysis: list[dict[str, Any]] = field(default_factory=list)  # canary analysis windows judged
    # The pods as the pass observed them, before its actions: after the pass too when it took no
    # pod action (``actions`` empty), so a caller that follows convergence need not observe again.
    observed: Observed | None = None
    # The spec moved on while the pass planned: it did nothing and built no status or view (both
    # stay empty), so there is nothing to publish, sample or hand to hooks; it runs again at once.
    superseded: bool = False

    @property
    def planned(self) -> bool:
        """The pass planned on a valid spec and stands: its status was decided (and written when
        it changed) and its actions taken. False when the ModelServing was gone, its spec invalid,
        every status write conflicted, or the spec moved on meanwhile (``superseded``)."""
        return self.found and self.error is None and not self.superseded and bool(self.status)


def reconcile(
    cluster: ClusterPort,
    router: RouterPort,
    clock: Clock,
    namespace: str,
    name: str,
    *,
    settings: ClusterSettings | None = None,
    build_state_view: bool = True,
    verifier: VerifierPort | None = None,
    metrics: MetricsPort | None = None,
    parse_cache: dict | None = None,
    cache: PassCache | None = None,
) -> ReconcileResult:
    """``build_state_view=False``: the result has no state view (a caller that follows the
    rollout through its status and its ``observed`` pods and never draws the page: the
    simulator's preview). ``metrics`` gives the canary analysis its figures (no analysis without
    it). ``verifier`` sends ``spec.verification`` requests; without one, a verification the spec
    asks for is recorded as failed with that reason (never as passed). ``parse_cache``: a dict the
    caller keeps from pass to pass, so an unchanged manifest is not parsed again
    (``spec.parse_modelserving_cached``). ``cache``: what the caller keeps from pass to pass for
    observation, planning and the view (``passcache``); None computes everything."""
    started = time.perf_counter()
    result = ReconcileResult(namespace, name)
    for attempt in range(MAX_STATUS_ATTEMPTS):
        try:
            _reconcile_once(
                cluster,
                router,
                clock,
                namespace,
                name,
                settings,
                result,
                build_state_view,
                verifier,
                metrics,
                parse_cache,
                cache,
            )
            break
        except Conflict:
            # Someone else changed the object between our read and our status write: re-read and
            # re-plan from fresh state. Pod actions already applied are visible to the next plan.
            log.info("status conflict on %s/%s, retrying (attempt %d)", namespace, name, attempt + 1)
            continue
    result.duration_seconds = time.perf_counter() - started
    return result


def _reconcile_once(
    cluster: ClusterPort,
    router: RouterPort,
    clock: Clock,
    namespace: str,
    name: str,
    settings: ClusterSettings | None,
    result: ReconcileResult,
    build_state_view: bool,
    verifier: VerifierPort | None = None,
    metrics: MetricsPort | None = None,
    parse_cache: dict | None = None,
    cache: PassCache | None = None,
) -> None:
    """One attempt at a pass: read, plan, write the status and act (``_write_and_act``), then the
    page's view (``_state_view``). An invalid spec is only reported (``_refuse_invalid_spec``); a
    plan whose spec moved on meanwhile is dropped (``_superseded``)."""
    try:
        obj = cluster.read_modelserving(namespace, name)  # never changed: the store may share it
    except NotFound:
        result.found = False
        return
    now = clock.now()
    prev_status = obj.get("status") or {}
    try:
        ms = parse_modelserving_cached(obj, parse_cache)
    except ValidationError as err:
        _refuse_invalid_spec(cluster, namespace, name, obj, err, now, result)
        return
    pods = cluster.list_pods(namespace, name)
    revision_objs = cluster.list_revisions(namespace, name)
    owned = _owned_revisions(revision_objs, ms.uid)
    history = History.from_objects(owned, cache)
    reads_routed = plan_reads_routed(ms)
    observed = result.observed = _observe_for_pass(cluster, router, namespace, name, pods, cache, reads_routed)
    figures = _analysis_figures(metrics, namespace, name, ms, prev_status, now)
    the_plan = plan(
        ms, history, observed, now, status=prev_status, settings=settings, analysis_figures=figures, cache=cache
    )
    if _superseded(cluster, namespace, name, ms, the_plan, result):
        return
    _write_and_act(cluster, namespace, name, obj, ms, the_plan, verifier, pods, owned, observed, now, cache)
    _record_result(result, the_plan, now)
    if build_state_view:
        if not reads_routed and not the_plan.actions:
            # The view draws this observation: the router's table, which the plan did not need, is
            # read now that the pass has written.
            observed = _with_routed(cluster, router, namespace, name, pods, observed)
        view_inputs = _view_inputs(cluster, clock, namespace, name, the_plan, pods, observed, revision_objs, now)
        result.view = _state_view(
            cluster, router, namespace, name, obj, the_plan, observed, view_inputs, parse_cache, cache
        )


def _refuse_invalid_spec(
    cluster: ClusterPort, namespace: str, name: str, obj: Obj, err: ValidationError, now: float, result: ReconcileResult
) -> None:
    """An invalid spec (edited around the API's validation) stops the controller from acting on
    it; the reason is in status (condition SpecInvalid, phase Blocked, one refused wait), and what
    runs keeps running. The status is written only when that changes it."""
    prev_status = obj.get("status") or {}
    resource_version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
    result.error = str(err)
    status = dict(prev_status)
    status["conditions"] = [c for c in prev_status.get("conditions") or [] if c.get("type") != "SpecInvalid"] + [
        {
            "type": "SpecInvalid",
            "status": "True",
            "reason": "ValidationFailed",
            "message": str(err),
            "lastTransitionTime": now,
        }
    ]
    status["phase"] = phases.BLOCKED
    status["waiting"] = [{"reason": f"spec invalid: {err}", "kind": "refused", "role": None, "groups": [None]}]
    if status != prev_status:
        cluster.replace_modelserving_status(namespace, name, status, resource_version=resource_version)
    result.status = status
    result.blocked = expand_waiting(status["waiting"])


def plan_reads_routed(ms: ModelServing) -> bool:
    """Whether ``plan()`` reads the router's table (``Observed.routed``): only to send
    ``spec.verification`` to instances once routed (``planner.verification``). Without it the
    table is read after the pass's writes, and only when the page's view draws this observation:
    with 1,000 groups the table costs a walk of every pod (~11 ms, ``bench reaction --profile``),
    which stood between a pod's Ready and the write it unblocks."""
    return ms.verification is not None


def _observe_for_pass(
    cluster: ClusterPort,
    router: RouterPort,
    namespace: str,
    name: str,
    pods: list[Obj],
    cache: PassCache | None = None,
    with_routed: bool = True,
) -> Observed:
    """The pods observed, with the router's in-flight counts and (``with_routed``) the pods it
    routes to; without, ``routed`` stays None (``_with_routed`` adds it later).

    In-flight counts matter only for pods leaving routing: marked draining, or taken out by the
    in-place readiness gate (``PodObs.leaving_routing``, found while parsing the pod, so cached
    with its parse). Asking the router about every pod would cost a lookup per pod."""
    observed = observe(pods, cache=cache)
    in_flight = {}
    for pod_obs in observed.leaving_routing:
        in_flight[pod_obs.name] = router.in_flight(namespace, pod_obs.name)
    observed = dataclasses.replace(observed, in_flight=in_flight)
    return _with_routed(cluster, router, namespace, name, pods, observed) if with_routed else observed


def _with_routed(
    cluster: ClusterPort, router: RouterPort, namespace: str, name: str, pods: list[Obj], observed: Observed
) -> Observed:
    """``observed`` with the pods the router routes to, of ``pods`` (``ports.routed_pods``)."""
    return dataclasses.replace(observed, routed=routed_pods(router, cluster, namespace, name, pods))


def _superseded(
    cluster: ClusterPort, namespace: str, name: str, ms: ModelServing, the_plan: Plan, result: ReconcileResult
) -> bool:
    """The spec changed while this pass read and planned (an operator's rollback, pause or new
    image): its actions were decided for a spec that no longer stands, so it takes none of them and
    plans again at once from the new one. Without this a slow pass (a loaded worker) finished a
    drain the rollback had cancelled: the fault soak saw group 0 deleted and created again at the
    revision it already ran. A plan without actions has nothing to drop."""
    if not the_plan.actions or not _spec_moved_on(cluster, namespace, name, ms.generation):
        return False
    result.superseded = True
    result.requeue_after = 0.0
    return True


def _write_and_act(
    cluster: ClusterPort,
    namespace: str,
    name: str,
    obj: Obj,
    ms: ModelServing,
    the_plan: Plan,
    verifier: VerifierPort | None,
    pods: list[Obj],
    owned: list[Obj],
    observed: Observed,
    now: float,
    cache: PassCache | None = None,
) -> None:
    """Status first: it is the commit point of the pass. It records what recovery must know of the
    actions that follow (a group whose replacement starts is recorded on the update revision), and
    it is written only if the ModelServing is still the one read (resourceVersion): on a conflict
    the pass starts again from fresh state having changed nothing. Written after the pod actions,
    a conflict (an operator's pause landing mid-pass) lost that record once the pods were gone: the
    retry, paused, rebuilt the group on the revision it had just left (found by the soak, seed 123,
    24 rollouts: group 1 deleted for the update and created again at its old revision). Then the
    actions, the digests the revisions run, and the plan's spec patch."""
    prev_status = obj.get("status") or {}
    status = the_plan.status
    if _status_changed(prev_status, status):
        resource_version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        cluster.replace_modelserving_status(namespace, name, status, resource_version=resource_version)
        _record_transitions(cluster, namespace, name, prev_status, status)
    verify = _verifying(verifier, namespace, ms.verification, pods, now)
    _apply(cluster, ms, the_plan, verify, pods)
    record_digests(cluster, namespace, owned, observed, cache)
    if the_plan.spec_patch is not None:
        _apply_spec_patch(cluster, namespace, name, the_plan)


def _record_result(result: ReconcileResult, the_plan: Plan, now: float) -> None:
    """What the pass decided, on its result (audit entries stamped with the pass's time)."""
    result.actions = the_plan.actions
    result.blocked = [b.to_json() for b in the_plan.blocked]
    result.requeue_after = the_plan.requeue_after
    result.holds_for = the_plan.holds_for
    result.audit = [{**entry, "t": now} for entry in the_plan.audit]
    result.analysis = the_plan.analysis
    result.status = the_plan.status


def _view_inputs(
    cluster: ClusterPort,
    clock: Clock,
    namespace: str,
    name: str,
    the_plan: Plan,
    pods: list[Obj],
    observed: Observed,
    revision_objs: list[Obj],
    now: float,
) -> tuple[float, list[Obj], Observed | None, list[Obj]]:
    """``(listed at, pods, their observation or None, revisions)`` the page's view is drawn from.

    After actions: the pods as listed after them, so the view bears the time of that list: the
    pass's ``now`` (read before its first list, and before the actions) would make the page's
    figure of how old its state is too high by the whole pass. The spec in it was checked unchanged
    just before the actions (``_spec_moved_on``). In a simulation the clock stands still during a
    pass: both times are the same. Without actions: what the pass read (the revisions listed again
    only when the plan changed them)."""
    if the_plan.actions:
        listed_at = clock.now()
        return listed_at, cluster.list_pods(namespace, name), None, cluster.list_revisions(namespace, name)
    revs = cluster.list_revisions(namespace, name) if the_plan.revision_actions else revision_objs
    return now, pods, observed, revs


def _state_view(
    cluster: ClusterPort,
    router: RouterPort,
    namespace: str,
    name: str,
    obj: Obj,
    the_plan: Plan,
    observed: Observed,
    view_inputs: tuple[float, list[Obj], Observed | None, list[Obj]],
    parse_cache: dict | None,
    cache: PassCache | None = None,
) -> dict[str, Any]:
    """The page's view of the state after the pass (``build_view``), with the status it wrote.

    It shows every pod's in-flight count (the tooltip's "N in flight", the capacity panel) when the
    router gives them in one round trip, as the dashboard's own read of the state does: otherwise
    each pass's publish showed 0 on every serving pod and the next read of the state showed their
    load."""
    listed_at, view_pods, view_observed, revs = view_inputs
    state_obj = dict(obj)
    state_obj["status"] = the_plan.status
    every_pod = in_flight_many(router, namespace, view_pods)
    view_in_flight = observed.in_flight if every_pod is None else every_pod
    view_routed = (
        observed.routed if view_observed is not None else routed_pods(router, cluster, namespace, name, view_pods)
    )
    return build_view(
        state_obj,
        view_pods,
        revs,
        view_in_flight,
        listed_at,
        observed=view_observed,
        routed=view_routed,
        parse_cache=parse_cache,
        cache=cache,
    )


def _spec_moved_on(cluster: ClusterPort, namespace: str, name: str, generation: int) -> bool:
    """The ModelServing's spec is no longer the one read at the start of the pass (its generation
    grew; status writes leave it alone), or the ModelServing is gone. Only the generation is read
    (``generation_of``): the whole object, copied by the embedded database store, cost ~10 ms of a
    1,000-group pass before its first write (``bench reaction --profile``)."""
    try:
        return cluster.generation_of(namespace, name) != generation
    except NotFound:
        return True


def _analysis_figures(
    metrics: MetricsPort | None, namespace: str, name: str, ms: Any, status: dict[str, Any], now: float
) -> dict[tuple[float, float], dict[str, Any]]:
    """The figures of the canary analysis windows that are due, stable and canary side by side,
    as of ``now`` (a request still running then is evidence by its age). A metrics source that
    cannot answer makes the window an Error window (``{"error": why}``), and the windows due after
    it too, without asking again in this pass."""
    windows = windows_to_fetch(ms.canary, status, now)
    if metrics is None or not windows:
        return {}
    canary = status.get("canary") or {}
    out: dict[tuple[float, float], dict[str, Any]] = {}
    failed: str | None = None
    for start, end in windows:
        if failed is None:
            try:
                out[(start, end)] = {
                    "stable": metrics.window(namespace, name, canary["stable"], start, end, at=now),
                    "canary": metrics.window(namespace, name, canary["revision"], start, end, at=now),
                }
                continue
            except Exception as exc:  # the provider's failure is the window's verdict (Error)
                failed = str(exc) or type(exc).__name__
                log.warning(
                    "canary analysis of %s/%s: figures of [%s, %s) unavailable: %s", namespace, name, start, end, exc
                )
        out[(start, end)] = {"error": failed}
    return out


def _apply_spec_patch(cluster: ClusterPort, namespace: str, name: str, the_plan: Plan) -> None:
    """The analysis pauses or rolls back: a spec change like an operator's, saying who and why."""
    cause = "; ".join(f"analysis: {a['action']}: {a['reason']}" for a in the_plan.audit) or "analysis"
    patch = dict(the_plan.spec_patch or {})
    patch["metadata"] = {"annotations": {naming.ANNOTATION_CHANGE_CAUSE: cause[:1000]}}
    cluster.patch_modelserving(namespace, name, patch)


def _owned_revisions(revision_objs: list[dict[str, Any]], uid: str) -> list[dict[str, Any]]:
    """Ignore leftovers of an earlier ModelServing with the same name (a different owner UID)."""
    if not uid:
        return revision_objs
    out = []
    for rev in revision_objs:
        owners = (rev.get("metadata") or {}).get("ownerReferences") or []
        if owners and not any(o.get("uid") == uid for o in owners):
            continue
        out.append(rev)
    return out


# At most this much of a verification response is kept on the pod.
MAX_RESPONSE_CHARS = 300


def _verifying(
    verifier: VerifierPort | None, namespace: str, verification: Verification | None, pods: list[Obj], now: float
):
    """The answer to a ``verify`` action, as the annotation patch that records it on the pod."""
    by_name: dict[str, Obj] = {}  # filled on the first verify action: most passes verify nothing
    spec = verification.to_json() if verification is not None else None

    def verify(pod_name: str, revision: str) -> Obj | None:
        if not by_name:
            by_name.update(((p.get("metadata") or {}).get("name"), p) for p in pods)
        pod = by_name.get(pod_name)
        if pod is None or spec is None:
            return None
        if verifier is None:
            answer = {"passed": False, "status": None, "error": "this controller has no verifier configured"}
        else:
            try:
                answer = verifier.verify(namespace, pod, spec)
            except Exception as exc:  # a verifier bug must not stop the pass; it is recorded instead
                log.exception("verification of %s/%s raised", namespace, pod_name)
                answer = {"passed": False, "status": None, "error": f"{type(exc).__name__}: {exc}"}
        record = {
            "revision": revision,
            "passed": bool(answer.get("passed")),
            "at": now,
            "status": answer.get("status"),
            "error": answer.get("error"),
            "body": str(answer.get("body") or "")[:MAX_RESPONSE_CHARS],
            "latencyMs": answer.get("latencyMs"),
        }
        value = json.dumps(record, sort_keys=True, separators=(",", ":"))
        return {"metadata": {"annotations": {naming.ANNOTATION_VERIFICATION: value}}}

    return verify


def ensure_service(cluster: ClusterPort, ms_obj: dict[str, Any]) -> None:
    """The ModelServing's headless Service exists and selects its pods (created, or its spec put
    back if someone changed it). Checked every pass: a deleted Service would leave every entry
    address unresolvable, and pods are not the only time it is needed."""
    meta = ms_obj.get("metadata") or {}
    namespace, name = meta.get("namespace") or "default", meta.get("name") or ""
    wanted = network.headless_service(ms_obj)
    current = next(
        (
            s
            for s in cluster.list_owned(SERVICE, namespace, name)
            if s["metadata"]["name"] == wanted["metadata"]["name"]
        ),
        None,
    )
    if current is None:
        try:
            cluster.create_owned(wanted)
        except Conflict:
            pass  # created by a pass that raced this one, or a Service of that name someone else owns
    elif not network.service_matches(current, wanted):
        cluster.patch_owned(SERVICE, namespace, wanted["metadata"]["name"], {"spec": wanted["spec"]})


def record_digests(
    cluster: ClusterPort, namespace: str, revision_objs: list[Obj], observed: Observed, cache: PassCache | None = None
) -> None:
    """The digest each revision's tags first ran from, and a tag that moved since (``digests``),
    kept on the revision objects. Best effort: a revision deleted meanwhile is skipped."""
    seen = frozenset().union(*(_running(group, cache) for group in observed.groups.values()))
    for name, value in digests.updates(revision_objs, seen).items():
        try:
            cluster.annotate_revision(namespace, name, {digests.ANNOTATION_DIGESTS: value})
        except NotFound:
            pass


def _running(group: GroupObs, cache: PassCache | None) -> digests.Running:
    """What the group's pods run, taken once per observed group with a cache (every pass asks);
    a group rebuilt since takes each instance that is the very InstanceObs it was then from the
    cache (``_instance_running``)."""
    if cache is None:
        return group.running()
    memo = cache.memo_of(group)
    if memo.running is None:
        memo.running = frozenset().union(*_instance_running(group, cache))
    return memo.running


def _instance_running(group: GroupObs, cache: PassCache) -> list[digests.Running]:
    """What each instance's pods run (``digests.running``), kept per instance place (group, role,
    ordinal) with the instance it was taken from: the seed example's 160-instance group, one pod
    changed, reads that instance's pods only. The group's set is the union of its instances'."""
    table = cache.instance_running
    ordinal = group.ordinal
    parts = []
    for (role, k), inst in group.instances.items():
        key = (ordinal, role, k)
        hit = table.get(key)
        if hit is None or hit[0] is not inst:
            hit = bounded_put(table, INSTANCES_LIMIT, key, (inst, digests.running(inst.pods.values())))
        parts.append(hit[1])
    return parts


def ensure_podgroups(cluster: ClusterPort, ms: ModelServing, pods: list[Obj]) -> None:
    """Volcano's PodGroups (``gang``): each group's exists with the figures the spec gives before
    any of its pods is created (a pod naming a missing PodGroup is never placed by Volcano), and
    one whose group is gone (not wanted, and none of its pods left) is deleted. Nothing at all
    when the ModelServing is not scheduled by Volcano and owns no PodGroup."""
    if not gang.enabled(ms.scheduler_name):
        # Not gang scheduled: no PodGroup is read (a cluster without Volcano has no such API);
        # one left from when it was goes with the ModelServing (owner reference).
        return
    namespace, name = ms.namespace, ms.name
    wanted = {pg["metadata"]["name"]: pg for pg in gang.podgroups(ms, gang.instances_of(pods))}
    current = {pg["metadata"]["name"]: pg for pg in cluster.list_owned(PODGROUP, namespace, name)}
    for pg_name, pg in wanted.items():
        have = current.get(pg_name)
        if have is None:
            try:
                cluster.create_owned(pg)
            except Conflict:
                pass  # created by a pass that raced this one
        elif not gang.podgroup_matches(have, pg):
            cluster.patch_owned(PODGROUP, namespace, pg_name, {"spec": pg["spec"]})
    for pg_name in current.keys() - wanted.keys():
        try:
            cluster.delete_owned(PODGROUP, namespace, pg_name)
        except NotFound:
            pass


def _apply(cluster: ClusterPort, ms: ModelServing, the_plan: Plan, verify=None, pods: list[Obj] | None = None) -> None:
    ms_obj = ms.manifest
    meta = ms_obj.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    ensure_service(cluster, ms_obj)
    # The pods about to be created count too: a surge group (ordinal >= replicas) gets its
    # PodGroup in the same pass, before its first pod.
    creating = [pod for action in the_plan.actions if action.verb == CREATE for pod in action.pods]
    ensure_podgroups(cluster, ms, [*(pods or []), *creating])
    for action in the_plan.revision_actions:
        if action.verb == "create":
            try:
                cluster.create_revision(revision_object(ms_obj, action))
            except Conflict:
                pass  # created by an earlier pass that died before writing status
        elif action.verb == "renumber":
            cluster.set_revision_number(namespace, action.name, action.number)
    for action in the_plan.actions:
        _apply_action(cluster, namespace, action, verify)
        if action.interrupted:
            _report_interrupted(cluster, namespace, ms.name, action)
    for action in the_plan.revision_actions:
        if action.verb == "delete":
            try:
                cluster.delete_revision(namespace, action.name)
            except NotFound:
                pass


def _apply_action(cluster: ClusterPort, namespace: str, action: Action, verify=None) -> None:
    if action.verb == CREATE:
        for pod in action.pods:
            try:
                cluster.create_pod(pod)
            except Conflict:
                pass  # still terminating or already created; the next pass sees which
    elif action.verb == DELETE:
        uids = action.pod_uids or [None] * len(action.pod_names)
        for pod_name, uid in zip(action.pod_names, uids):
            try:
                cluster.delete_pod(namespace, pod_name, uid=uid or None)
            except (NotFound, Conflict):
                pass
    elif action.verb in (DRAIN, UNDRAIN, PATCH_IMAGE, PATCH_LABELS):
        for pod_name in action.pod_names:
            try:
                cluster.patch_pod(namespace, pod_name, action.patches[pod_name])
            except NotFound:
                pass
    elif action.verb == SET_GATE:
        for pod_name in action.pod_names:
            try:
                if action.condition is not None:
                    cluster.set_pod_condition(namespace, pod_name, action.condition)
            except NotFound:
                pass
        for pod_name, patch in action.patches.items():
            try:
                cluster.patch_pod(namespace, pod_name, patch)
            except NotFound:
                pass
    elif action.verb == VERIFY and verify is not None:
        for pod_name in action.pod_names:
            patch = verify(pod_name, action.revision)
            if patch is not None:
                try:
                    cluster.patch_pod(namespace, pod_name, patch)
                except NotFound:
                    pass


def _report_interrupted(cluster: ClusterPort, namespace: str, name: str, action: Action) -> None:
    """Requests the router still had in flight on pods deleted at their drain timeout, told to the
    cluster (``ClusterPort.report_interrupted``: the Kubernetes adapter records an Event and the
    audit; the simulated clusters count the requests they cut off themselves and do nothing). Best
    effort: a report that fails never fails the pass."""
    for pod_name, count in sorted(action.interrupted.items()):
        try:
            cluster.report_interrupted(namespace, name, pod_name, count, INTERRUPTED_AT_DRAIN_TIMEOUT)
        except Exception:
            log.exception("could not report %d interrupted requests on %s/%s", count, namespace, pod_name)


def _status_changed(prev: dict[str, Any], new: dict[str, Any]) -> bool:
    return prev != new


def _record_transitions(
    cluster: ClusterPort, namespace: str, name: str, prev: dict[str, Any], new: dict[str, Any]
) -> None:
    """Kubernetes Events on rollout transitions (what `kubectl describe` shows)."""
    try:
        if prev.get("updateRevision") and prev.get("updateRevision") != new.get("updateRevision"):
            cluster.record_event(
                namespace,
                name,
                reason="RolloutStarted",
                message=f"rolling out revision {new.get('updateRevision')} (was {prev.get('updateRevision')})",
            )
        if prev.get("phase") != new.get("phase") and prev:
            event_type = "Warning" if new.get("phase") in (phases.BLOCKED, phases.DEGRADED) else "Normal"
            reason = {
                phases.HEALTHY: "RolloutHealthy",
                phases.PROGRESSING: "RolloutProgressing",
                phases.PAUSED: "RolloutPaused",
                phases.BLOCKED: "RolloutBlocked",
                phases.DEGRADED: "RolloutDegraded",
            }.get(new.get("phase") or "", "RolloutPhaseChanged")
            detail = ""
            if new.get("phase") == phases.BLOCKED:
                stuck = [
                    b["reason"]
                    for b in new.get("waiting") or []
                    if b.get("kind") in ("unschedulable", "revision", "refused", "failing", "deadlock")
                ]
                detail = f": {stuck[0]}" if stuck else ""
            cluster.record_event(
                namespace,
                name,
                reason=reason,
                message=f"phase {prev.get('phase')} -> {new.get('phase')}{detail}",
                type=event_type,
            )
    except Exception:  # events are best effort; never fail a reconcile for one
        log.exception("could not record event for %s/%s", namespace, name)
