"""A ModelServing run's kind (``run.WorkloadKind``): the real controller on the simulated cluster.

The controller here is the production reconcile pass (``controller.core.reconcile.reconcile``)
behind a work queue that lives in a ``SimController`` object, following the same policy as the live
app's Celery tasks (``controller.core.workqueue``):

- every real change in the store that concerns a ModelServing (its spec, its pods, its revisions;
  nodes concern all) enqueues a reconcile of it ``COALESCE_SECONDS`` (5 ms) of virtual time later,
  coalesced: ten pod changes in the same 5 ms make one pass. The controller's own status writes do
  not wake it (its pass already knew that status); its pod and revision writes do, so a pass that
  changed the cluster is followed by one that observes the result, like a watch-driven controller;
- ``requeue_after`` from a pass (a drain timeout, ...) schedules a pass at that time;
- a periodic resync every ``RESYNC_SECONDS`` (30 virtual s) enqueues every ModelServing;
- a pass that raises (a lost race: Conflict, or a bug) is retried with exponential backoff
  (0.1 s, 0.2 s, ... at most 10 s) and the error is recorded in the trace;
- a hot loop (a pass changing the cluster on every pass) is slowed down and reported in the trace.

``restartController`` drops the ``SimController`` (its queue, timers and anything else in memory)
and builds a new one, which starts with a full list like a fresh informer. Whatever the controller
has to remember must come back from the store.

Convergence is decided after every pass that planned, on the pods as they stand after it
(``convergence.is_converged``), and told to the run's ``Settling``; the frames are the pass's state
views (``core.view``). The events of a ModelServing scenario other than the faults every kind
shares (``run.ScenarioRun``): ``apply``, the controls (``patch``, ``setImage``, ``pause``,
``resume``, ``promote``, ``rollback``, ``abort``), ``deletePods``, ``restartController``,
``retag`` and ``corruptRevision``.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any, NamedTuple

from controller.core import naming, workqueue
from controller.core.observe import Observed, observe
from controller.core.passcache import PassCache
from controller.core.plan import Action, still_holds
from controller.core.ports import ClusterError, NotFound, Obj, routed_pods
from controller.core.reconcile import ReconcileResult

from .convergence import an_acted_pod_is_unfinished, is_converged
from .memory.cluster import SimCluster
from .memory.store import Change
from .routing import SimulatedVerifier
from .scenario import MANIFEST_EVENTS, Event, Scenario, control_patch
from .settling import Settling
from .trace import TraceWriter


class SimController:
    """The controller's in-memory state: its work queue and timers. Thrown away on restart."""

    def __init__(self, kind: ModelServingKind, incarnation: int) -> None:
        self.kind = kind
        self.loop = kind.loop
        self.incarnation = incarnation
        self.alive = True
        self.queue: dict[tuple[str, str], Any] = {}  # key -> Timer of the pending pass
        self.timers: list[Any] = []
        self.failures: dict[tuple[str, str], int] = {}
        self.history: dict[tuple[str, str], workqueue.PassHistory] = {}

    def start(self) -> None:
        for ms in self.kind.store.list_modelservings():
            self.enqueue((ms["metadata"]["namespace"], ms["metadata"]["name"]))
        self._resync()

    def stop(self) -> None:
        self.alive = False
        for timer in [*self.queue.values(), *self.timers]:
            timer.cancel()
        self.queue.clear()
        self.timers.clear()

    def _resync(self) -> None:
        if not self.alive:
            return
        for ms in self.kind.store.list_modelservings():
            self.enqueue((ms["metadata"]["namespace"], ms["metadata"]["name"]))
        self.timers = [t for t in self.timers if not t.cancelled and t.at > self.loop.now()]
        self.timers.append(self.loop.call_later(workqueue.RESYNC_SECONDS, self._resync))

    def enqueue(self, key: tuple[str, str], delay: float = workqueue.COALESCE_SECONDS) -> None:
        if not self.alive:
            return
        at = self.loop.now() + delay
        pending = self.queue.get(key)
        if workqueue.already_queued(None if pending is None or pending.cancelled else pending.at, at):
            return  # coalesced into the pass already queued
        if pending is not None:
            pending.cancel()
        self.queue[key] = self.loop.call_at(at, lambda: self._work(key))

    def enqueue_at(self, key: tuple[str, str], delay: float) -> None:
        # A timed wake-up: when it fires, queue a pass (coalescing with whatever is queued then).
        self.timers.append(self.loop.call_later(delay, lambda: self.enqueue(key)))

    def _work(self, key: tuple[str, str]) -> None:
        if not self.alive:
            return
        self.queue.pop(key, None)
        now = self.loop.now()
        history = self.history.get(key) or workqueue.PassHistory()
        wait = history.wait_before_pass(now)
        if wait is not None:
            self.enqueue(key, wait)
            return
        self.history[key] = after = history.after_pass(now)
        if after.throttled and not history.throttled:
            self.kind.trace.error(
                now,
                f"hot loop: {workqueue.HOT_LOOP_PASSES} back-to-back passes of {key[0]}/{key[1]}, "
                f"each changing the cluster; from now on at most one pass per {workqueue.HOT_LOOP_INTERVAL:g} s",
            )
        ok, requeue_after = self.kind.reconcile_once(key)
        if ok:
            self.failures.pop(key, None)
            if requeue_after is not None:
                self.enqueue_at(key, workqueue.requeue_seconds(requeue_after))
        else:
            self.failures[key] = self.failures.get(key, 0) + 1
            self.enqueue(key, workqueue.backoff_seconds(self.failures[key]))


class ModelServingKind:
    def __init__(
        self,
        scenario: Scenario,
        cluster: SimCluster,
        settling: Settling,
        *,
        frames: bool = True,
        skip_unchanged: bool = True,
    ) -> None:
        """``frames=False``: no trace frames are written and the passes build no state view (the
        preview reads its timeline from ``on_pass``, which gets each pass's result with its
        status; a view costs a walk over every instance per pass). Convergence is decided on the
        pods as they stand after each pass either way (``convergence.is_converged``).
        ``skip_unchanged=False``: every pass builds its frame's view and checks convergence, even
        when nothing they read changed (``_frame_unchanged``; the trace is the same either way,
        tests compare the two)."""
        from controller.core import reconcile as core_reconcile  # the production pass
        from controller.core import view as core_view

        self._reconcile = core_reconcile.reconcile
        self._build_view = core_view.build_view
        self.scenario = scenario
        self.cluster = cluster
        self.settling = settling
        self.loop = cluster.loop
        self.store = cluster.store
        self.router = cluster.router
        # The analysis' figures: the router's, with the simulated GPU for an analysis that checks it.
        self._metrics = _with_gpu(self.router, self.store)
        self.verifier = SimulatedVerifier(cluster.config)
        self.trace = TraceWriter(scenario.name, scenario.seed, with_strategy=scenario.settings is not None)
        self.controller: SimController | None = None
        self.incarnations = 0
        self.passes = 0
        self._frames = frames
        self._parse_cache: dict[tuple[str, str], Any] = {}  # per run: UIDs repeat across runs of one seed
        # The passes' and the frames' parsed spec, by uid and resourceVersion (per run, as above).
        self._spec_cache: dict[tuple[str, str], Any] = {}
        # What the passes, the frames' views and the convergence checks of this run derive from
        # the pods and revisions (``core.passcache``): one per run, like the caches above.
        self._pass_cache = PassCache()
        # Called after every pass that planned (``ReconcileResult.planned``), with (time, result),
        # once convergence is decided for it: how the preview records its timeline. The result's
        # ``view`` is the pass's state view with frames, empty without.
        self.on_pass: list[Callable[[float, ReconcileResult], None]] = []
        # Every change the store made (any kind, any writer), counted: equal counts, equal cluster.
        self._store_changes = 0
        # The store's count when the last frame's view was built (after its pass's writes) and the
        # blocked reasons offered with it; and the count at the last convergence check.
        self._frame_inputs: tuple[tuple[str, str], int, list] | None = None
        self._converged_at_changes: int | None = None
        self._skip_unchanged = skip_unchanged
        self.skipped_views = 0  # frame views not built because nothing they read changed
        # The last pass that wrote nothing, while its plan may be replayed (``_replayed_requeue``).
        self._quiet_pass: QuietPass | None = None
        self.skipped_passes = 0  # passes replayed instead of planned: nothing they read changed
        self.store.add_listener(self._on_change)

    # -- the run's hooks (``run.WorkloadKind``) ------------------------------------------------------

    def begin(self) -> None:
        self.loop.call_at(0.0, self.start_controller)
        self.loop.call_at(0.0, self._first_frame)

    def do(self, e: Event) -> str | None:
        if e.do == "apply":
            self.store.create_modelserving(self.scenario.manifest)
            return None
        if e.do in MANIFEST_EVENTS or e.do in ("rollback", "abort"):
            self._control(e)
            return None
        if e.do == "deletePods":
            return self._delete_pods(e.args)
        if e.do == "restartController":
            self.start_controller()
            return None
        if e.do == "retag":
            self.cluster.config.retag(e.args["image"])
            return None
        if e.do == "corruptRevision":
            return self._corrupt_revision(e.args["revision"])
        raise AssertionError(e.do)

    # -- controller ---------------------------------------------------------------------------------

    def start_controller(self) -> None:
        if self.controller is not None:
            self.controller.stop()
        self.incarnations += 1
        self.controller = SimController(self, self.incarnations)
        self.controller.start()

    def _on_change(self, change: Change) -> None:
        self._store_changes += 1
        if self.controller is None:
            return
        if change.kind == "Node":
            for ms in self.store.list_modelservings():
                self.controller.enqueue((ms["metadata"]["namespace"], ms["metadata"]["name"]))
            return
        if change.ms_name is None:
            return
        if (
            change.by == "controller"
            and change.kind == "ModelServing"
            and change.old is not None
            and change.obj is not None
            and change.obj.get("spec") == change.old.get("spec")
            and change.obj["metadata"].get("annotations") == change.old["metadata"].get("annotations")
        ):
            return  # its own status write: the pass that wrote it already knew
        if (
            change.by == "controller"
            and change.kind == "ControllerRevision"
            and change.old is not None
            and change.obj is not None
            and {**change.obj, "metadata": None} == {**change.old, "metadata": None}
        ):
            return  # its own record of image digests on a revision (``core.digests``): nothing to plan
        self.controller.enqueue((change.namespace, change.ms_name))

    def reconcile_once(self, key: tuple[str, str]) -> tuple[bool, float | None]:
        ns, name = key
        now = self.loop.now()
        self.passes += 1
        replayed = self._replayed_requeue(key, now)
        if replayed is not None:
            self.skipped_passes += 1
            return True, replayed[0]
        changes_before = self._store_changes
        self._quiet_pass = None  # kept again below if this pass writes nothing
        previous, self.store.actor = self.store.actor, "controller"
        try:
            result = self._reconcile(
                self.store,
                self.router,
                self.cluster.clock,
                ns,
                name,
                settings=self.scenario.settings,
                verifier=self.verifier,
                metrics=self._metrics,
                # With traffic the frame's view is built after the pass, with every pod's in-flight
                # count (below): the pass's own would be built for nothing.
                build_state_view=self._frames and self.scenario.traffic is None,
                parse_cache=self._spec_cache,
                cache=self._pass_cache,
            )
        except NotFound:
            return True, None  # the ModelServing is gone
        except ClusterError as exc:
            self.trace.error(now, f"{type(exc).__name__}: {exc}")
            return False, None
        except Exception as exc:  # a bug in the pass: keep running, report it in the trace
            tb = traceback.extract_tb(exc.__traceback__)[-1]
            self.trace.error(now, f"{type(exc).__name__}: {exc} ({tb.filename.rsplit('/', 1)[-1]}:{tb.lineno})")
            return False, None
        finally:
            self.store.actor = previous
        self._record(now, result)
        if not result.planned:
            return True, result.requeue_after
        if self._frames:
            self._offer_frame(now, key, result)
        if not self._skip_unchanged or self._converged_at_changes != self._store_changes:
            # Skipped when nothing changed in the store since the last check: is_converged reads
            # only the ModelServing, its pods and revisions, so it would answer as it did then.
            self._check_convergence(None if result.actions else result.observed, result.actions)
            self._converged_at_changes = self._store_changes
        for observer in self.on_pass:
            observer(now, result)
        self._remember_quiet_pass(key, now, result, wrote=self._store_changes != changes_before)
        return True, result.requeue_after

    def _remember_quiet_pass(self, key: tuple[str, str], now: float, result: ReconcileResult, *, wrote: bool) -> None:
        """Keep a pass that wrote nothing (no store change, no action, no analysis window or
        audit entry), with what its plan read beyond the store: the in-flight counts of the pods
        leaving routing. Its frame was offered and its convergence checked as they stand."""
        quiet = not (wrote or result.actions or result.analysis or result.audit or result.observed is None)
        if quiet and (result.holds_for is None or result.holds_for > 0):
            self._quiet_pass = QuietPass(
                key, self._store_changes, now, result.holds_for, result.observed.in_flight, result.requeue_after
            )

    def _replayed_requeue(self, key: tuple[str, str], now: float) -> tuple[float | None] | None:
        """``(requeue_after,)`` of the last quiet pass when this pass would be that pass again, else
        None (plan it). The same: the same ModelServing, no store change since (so the same spec,
        status, revisions, pods and routed pods), the same in-flight counts on the pods leaving
        routing, and the time still within what its plan holds for (``plan.still_holds``: no drain
        timeout, canary pause or window, verification retry or progress deadline reached). Then it
        would write nothing, offer the same frame (kept by nobody: its change key reads neither the
        time nor the counts), find convergence unchanged and ask for the same requeue. Worked
        example, the seed example with paths: of 2,809 passes, 1,614 are drain polls (0.5 s) where
        no draining pod's count moved, replayed. Not with pass observers (the preview samples every
        pass) nor with ``skip_unchanged=False``."""
        last = self._quiet_pass
        if not self._skip_unchanged or self.on_pass or last is None:
            return None
        if last.key != key or last.store_changes != self._store_changes:
            return None
        if not still_holds(last.holds_for, now - last.at):
            return None
        in_flight = self.router.in_flight
        for pod_name, count in last.in_flight.items():
            if in_flight(key[0], pod_name) != count:
                return None
        return (last.requeue_after,)

    def _record(self, now: float, result: ReconcileResult) -> None:
        for action in result.actions:
            self.trace.action(now, action.to_trace())
        for window in result.analysis:
            self.trace.window(now, window)
        for entry in result.audit:
            self.trace.audited(now, entry)

    # -- frames ---------------------------------------------------------------------------------------

    def _offer_frame(self, now: float, key: tuple[str, str], result: ReconcileResult) -> None:
        view = result.view
        if self.scenario.traffic is None:
            self.trace.offer_frame(now, view, result.blocked)
            return
        # The pass asks the router only about draining pods (that is all it needs), so its view
        # would show 0 in flight on serving pods. With traffic the view is built here instead, with
        # every pod's count, so the trace's inFlight is true everywhere.
        if self._frame_unchanged(key, result.blocked):
            self.skipped_views += 1
            return
        view = result.view = self._view_now(*key) or view  # on_pass gets it too
        self.trace.offer_frame(now, view, result.blocked)
        self._frame_inputs = (key, self._store_changes, result.blocked)

    def _frame_unchanged(self, key: tuple[str, str], blocked: list) -> bool:
        """Whether this pass's frame would be the last one offered, so ``offer_frame`` would keep
        nothing: no store change since that frame's view was built (this pass wrote nothing either)
        and the same blocked reasons. A frame's change key reads only the spec, status, revisions
        and pods (each instance's state, pods, readiness, surge, draining, gate; the routed pods
        come from the pods too) and the blocked reasons, never the time or the in-flight counts,
        so it would be equal. Worked example, the seed example with paths (856 virtual s): of
        2,809 passes, 1,811 are drain polls that change nothing, and their views (a walk over 160
        instances each) are not built. Not skipped when a pass observer wants the view."""
        if not self._skip_unchanged or self.on_pass or self._frame_inputs is None:
            return False
        last_key, changes, last_blocked = self._frame_inputs
        return last_key == key and changes == self._store_changes and last_blocked == blocked

    def _view_now(self, ns: str, name: str) -> dict[str, Any] | None:
        try:
            ms = self.store.get_modelserving(ns, name)
        except NotFound:
            return None
        pods = self.store.list_pods(ns, name)
        return self._build_view(
            ms,
            pods,
            self.store.list_revisions(ns, name),
            self.router.in_flight_by_pod(),
            self.loop.now(),
            routed=routed_pods(self.router, self.cluster, ns, name, pods),
            parse_cache=self._spec_cache,
            cache=self._pass_cache,
        )

    def _first_frame(self) -> None:
        view = self._view_now(self.scenario.namespace, self.scenario.ms_name)
        if view is None:
            # Applied later: the t=0 frame shows an empty cluster.
            view = {"spec": None, "currentRevision": None, "updateRevision": None, "conditions": [], "instances": []}
        self.trace.offer_frame(0.0, view, [], force=True)

    # -- convergence ----------------------------------------------------------------------------------

    def check_convergence(self) -> bool:
        """Decide convergence on the cluster as it stands now (as after a pass), and say it. The
        caller may have changed the store without telling anyone (``SimCluster.restore``, the
        preview's copy): the next pass checks again whatever the store's count of changes says."""
        self._check_convergence(None)
        self._converged_at_changes = None
        return self.settling.converged

    def _check_convergence(self, observed: Observed | None, actions: list[Action] | None = None) -> None:
        """``observed``: the pods as they stand after the pass, when the pass knows them (it took
        no pod action); else they are listed and observed here, unless a pod the pass acted on
        (``actions``) says at once that it has not converged (``an_acted_pod_is_unfinished``)."""
        ns, name = self.scenario.namespace, self.scenario.ms_name
        try:
            ms = self.store.get_modelserving(ns, name)
        except NotFound:
            return
        if observed is None and actions and an_acted_pod_is_unfinished(actions, lambda n: self.store.peek_pod(ns, n)):
            self.settling.observe(False)
            return
        if observed is None:
            observed = observe(self.store.list_pods(ns, name), cache=self._pass_cache)
        self.settling.observe(is_converged(ms, observed, self.store.list_revisions(ns, name), cache=self._parse_cache))

    def forget_convergence(self) -> None:
        """After a change made from outside the scenario (the preview's): the next pass decides anew,
        and ``converged_at`` is the time of the first converged pass after the change."""
        self.settling.forget()
        self._converged_at_changes = None

    # -- events ---------------------------------------------------------------------------------------

    def _control(self, e: Event) -> None:
        """A control (``patch``, ``rollback``, ...) as the operator makes it: a patch of the
        ModelServing with who and why as its change cause, audited in the trace."""
        s, store = self.scenario, self.store
        ns, name = s.namespace, s.ms_name
        ms = store.get_modelserving(ns, name)
        if e.do == "rollback":
            from controller.core import controls

            patch = controls.rollback(ms, store.list_revisions(ns, name), to_revision=e.args["toRevision"])
        elif e.do == "abort":
            from controller.core import controls

            patch = controls.abort(ms, store.list_revisions(ns, name))
        else:
            patch = control_patch(ms, e)
        # Who and why, like every control: "simulate: rollback: p99 regression".
        cause = f"simulate: {e.do}" + (f": {e.reason}" if e.reason else "")
        meta = patch.get("metadata") or {}
        annotations = {**(meta.get("annotations") or {}), naming.ANNOTATION_CHANGE_CAUSE: cause}
        before = (ms.get("status") or {}).get("updateRevision")
        new = store.patch_modelserving(ns, name, {**patch, "metadata": {**meta, "annotations": annotations}})
        self.trace.audited(
            self.loop.now(),
            {
                "action": e.do,
                "source": "scenario",
                "reason": e.reason or "",
                "fromRevision": before,
                "toRevision": _selected_revision(new, store.list_revisions(ns, name)),
            },
        )

    def _delete_pods(self, selector: dict[str, Any]) -> str | None:
        ns, name = self.scenario.namespace, self.scenario.ms_name
        victims = [p for p in self.store.list_pods(ns, name) if _matches(p, selector)]
        for p in victims:
            if not p["metadata"].get("deletionTimestamp"):
                self.store.delete_pod(ns, p["metadata"]["name"], uid=p["metadata"]["uid"])
        return None if victims else "no pod matched"

    def _corrupt_revision(self, number: int) -> str | None:
        ns, name = self.scenario.namespace, self.scenario.ms_name
        for rev in self.store.list_revisions(ns, name):
            if rev.get("revision") == number:
                self.store.replace_revision_data(ns, rev["metadata"]["name"], "<corrupted>")
                return None
        return f"no revision number {number}"


class QuietPass(NamedTuple):
    """A pass that wrote nothing, with what its plan read beyond the store (``ModelServingKind``)."""

    key: tuple[str, str]
    store_changes: int  # the store's count of changes after it
    at: float
    holds_for: float | None  # ``Plan.holds_for``
    in_flight: dict[str, int]  # the pods leaving routing -> their in-flight counts then
    requeue_after: float | None


def _selected_revision(ms: Obj, revisions: list[Obj]) -> str:
    """The revision hash the spec selects now (what the controller will roll out)."""
    from controller.core.revisions import History, record_update_revision

    status = ms.get("status") or {}
    history = History.from_objects(revisions)
    spec = ms.get("spec") or {}
    return record_update_revision(ms["metadata"]["name"], spec, history, int(status.get("collisionCount") or 0)).hash


def _matches(pod: Obj, args: dict[str, Any]) -> bool:
    labels = pod["metadata"].get("labels") or {}
    if "group" in args and str(labels.get(naming.LABEL_GROUP_ORDINAL)) != str(args["group"]):
        return False
    if "role" in args and labels.get(naming.LABEL_ROLE) != args["role"]:
        return False
    if "instance" in args and str(labels.get(naming.LABEL_ROLE_ORDINAL)) != str(args["instance"]):
        return False
    return True


def _with_gpu(router: Any, store: Any) -> Any:
    """The router's windows plus ``core.gpu``'s figures from its request records, for a
    ModelServing whose analysis checks a GPU metric (``core.gpu.GpuFigures``)."""
    from controller.core.gpu import GpuFigures
    from controller.core.spec import canary_of

    from .routing import revision_label, routable_entries

    def analysis_of(namespace: str, name: str):
        try:
            canary = canary_of(store.get_modelserving(namespace, name))
        except NotFound:
            return None
        return canary.analysis if canary is not None else None

    def engines_of(namespace: str, name: str, revision: str) -> list[Obj]:
        return [p for p in routable_entries(store.list_pods(namespace, name)) if revision_label(p) == revision]

    def busy_of(namespace: str, name: str, revision: str, start: float, end: float, at: float):
        out = []
        for r in getattr(router, "requests", ()):
            if r.revision != revision or r.pod is None or r.start >= end:
                continue
            ended = r.end if r.end is not None else min(at, r.start + r.busy)
            if ended > start:
                out.append((r.start, ended))
        return out

    return GpuFigures(router, analysis_of=analysis_of, engines_of=engines_of, busy_of=busy_of)
