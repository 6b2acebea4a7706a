"""InPlaceRollingUpdate: patch the images of existing pods (UID, node and IP kept).

Only regular container images may differ between the two revisions; anything else is refused with
a reason, never recreated. The protocol per instance, every step decided from the pods themselves
(readiness-gate condition, update-state annotation, drain mark), so a restarted controller resumes
where the previous one stopped:

1. take the pods out of routing: readiness gate ``InPlaceUpdateReady=False`` (or the drain mark for
   a pod created without the gate);
2. once their in-flight requests are done (bounded by ``drain.timeoutSeconds``), write the
   update-state annotation (target revision, image IDs and restart counts before) and the new images
   in one patch;
3. wait until every changed container runs the new image with a new image ID and is Ready;
4. gate True;
5. move the revision labels and mark the state completed (it stays as the restart baseline).
"""

from __future__ import annotations

import json
from typing import Any

from .. import naming
from ..observe import GroupObs, InstanceObs, PodObs
from ..plan import BECAUSE_UPDATE, DRAIN, KIND_DRAIN, KIND_FAILING, KIND_REFUSED, PATCH_IMAGE, SET_GATE, Action
from ..podtemplate import template_images
from .builder import PlanBuilder
from .context import PassContext
from .drain import DRAIN_POLL_SECONDS, ask_drain_poll, drain_mark


def in_progress(ctx: PassContext, inst: InstanceObs) -> bool:
    """Is an in-place update of this instance under way? Decided from the pods alone (gate
    condition, update-state annotation, drain mark), never from memory, so a restarted controller
    picks the protocol up where it stopped."""
    target = ctx.update_role_hashes.get(inst.role)
    for pod in inst.pods.values():
        if pod.gate is False:
            return True
        state = pod.inplace_state
        if state and not state.get("completed") and state.get("targetRevision"):
            return True
        if (
            pod.draining_since is not None
            and not pod.deleting
            and pod.role_hash != target
            and inst.ordinal < ctx.role_replicas(inst.role)
        ):
            return True  # marked for an in-place update (ungated pod, or killed between writes)
    return False


def refusal(ctx: PassContext, inst: InstanceObs) -> str | None:
    """Only regular container images may differ; anything else is refused, never recreated."""
    old = ctx.role_data_of(inst.revision, inst.role)
    new = ctx.role_data_of(ctx.update_hash, inst.role)
    if old is None:
        return None  # reported as unreadable elsewhere
    if new is None:
        return f"role {inst.role} is not in the new revision"
    differences = _non_image_differences(old, new)
    if differences:
        return (
            "in-place update refused: only container images may change, but "
            + "; ".join(differences[:3])
            + " changed; switch rolloutStrategy.type to RoleRollingUpdate to recreate"
        )
    return None


def updatable(out: PlanBuilder, group: GroupObs, queues: dict[str, list[int]]) -> dict[str, list[int]]:
    """The candidates an in-place update may take: a role whose change is refused stops there
    (with the reason); an instance whose own revision cannot be read is skipped (reported)."""
    kept_by_role: dict[str, list[int]] = {}
    for role, queue in queues.items():
        kept = []
        for k in queue:
            inst = group.instances[(role, k)]
            if out.ctx.data_of(inst.revision) is None:
                out.report_unreadable_once(inst.revision, group.ordinal, role, "the in-place update")
                continue
            why = refusal(out.ctx, inst)
            if why:
                out.block(group.ordinal, role, why, KIND_REFUSED)
                break
            kept.append(k)
        kept_by_role[role] = kept
    return kept_by_role


def start(out: PlanBuilder, inst: InstanceObs | _SubInstance) -> None:
    """Step 1: take the pods that still run the old template out of routing: readiness gate False
    (the pod leaves the endpoints) and the drain mark (the router stops sending and the controller
    can count what is still in flight)."""
    ctx = out.ctx
    pods = [p for p in inst.pods.values() if not _pod_on_target(ctx, p) and not p.deleting]
    gated = [p for p in pods if p.has_gate and p.gate is not False]
    if gated:
        out.act(
            Action(
                SET_GATE,
                inst.group,
                inst.role,
                inst.ordinal,
                ctx.update_hash,
                BECAUSE_UPDATE,
                pod_names=[p.name for p in gated],
                condition=_gate_condition(False, "StartInPlaceUpdate", ctx.now),
            )
        )
        out.requeue(DRAIN_POLL_SECONDS)
    # A pod without the gate (created under another strategy) can only leave routing by the drain
    # mark; a gated pod's False condition already does that, and its time is the drain start.
    unmarked = [p for p in pods if not p.has_gate and p.draining_since is None]
    if unmarked:
        mark = drain_mark(ctx.now)
        out.act(
            Action(
                DRAIN,
                inst.group,
                inst.role,
                inst.ordinal,
                inst.revision,
                BECAUSE_UPDATE,
                pod_names=[p.name for p in unmarked],
                patches={p.name: mark for p in unmarked},
            )
        )
        out.requeue(DRAIN_POLL_SECONDS)
    out.removing_pods.update(p.name for p in pods)


def _pod_on_target(ctx: PassContext, pod: PodObs) -> bool:
    """Labelled with the target template and not in the middle of an update to another one (a bad
    image, then the old image set back: the labels never moved, the images did)."""
    if pod.role_hash != ctx.update_role_hashes.get(pod.role):
        return False
    state = pod.inplace_state
    return state is None or bool(state.get("completed")) or state.get("targetRevision") in ctx.equivalent


# Where one pod of an instance under in-place update stands this pass (``pod_step``).
TERMINATING = "terminating"  # being deleted: not this update's concern any more
ON_TARGET = "on target"  # no state of this update, but it runs the target template already
LEAVE_ROUTING = "leave routing"  # step 1 not done: still in routing (gate not False, or no drain mark)
WAIT_IN_FLIGHT = "wait in flight"  # out of routing, its requests still running within the drain timeout
PATCH = "patch"  # step 2: out of routing and drained (or timed out): write the state and the images
RESTARTING = "restarting"  # step 3: its changed containers are not yet on the new images, Ready
FAILING = "failing"  # step 3, and a container fails (CrashLoopBackOff & co)
FINISH = "finish"  # steps 4-5: on the new images: gate True (unless it is) and the labels moved
COMPLETED = "completed"  # done
REOPEN_GATE = "reopen gate"  # done, but its gate is False: gate True again


def pod_step(ctx: PassContext, pod: PodObs, target_role: dict[str, Any]) -> str:
    """Which of the steps above ``pod`` is at, decided from the pod alone: its update-state
    annotation (valid when it targets a revision equivalent to the update revision), its gate or
    drain mark, its in-flight requests, its containers.

    Worked example (drain timeout 30 s): gate True -> LEAVE_ROUTING; gate False since t=100, at
    t=110 with 2 requests in flight -> WAIT_IN_FLIGHT; at t=131 -> PATCH; state written, the new
    image not Ready yet -> RESTARTING; Ready on a new image ID -> FINISH; completed -> COMPLETED.
    """
    if pod.deleting:
        return TERMINATING
    state = pod.inplace_state
    if state is None or state.get("targetRevision") not in ctx.equivalent:
        if _pod_on_target(ctx, pod):
            return ON_TARGET
        since = out_of_routing_since(pod)
        if since is None:
            return LEAVE_ROUTING
        in_flight = ctx.observed.in_flight.get(pod.name, 0)
        return PATCH if in_flight <= 0 or ctx.now - since >= ctx.ms.drain_timeout_seconds else WAIT_IN_FLIGHT
    if state.get("completed"):
        return REOPEN_GATE if pod.has_gate and pod.gate is False else COMPLETED
    if _inplace_pod_done(pod, state, target_role):
        return FINISH
    return FAILING if pod.failing_reason else RESTARTING


def out_of_routing_since(pod: PodObs) -> float | None:
    """When ``pod`` left routing for the update, None while it still serves: a gated pod when its
    gate went False (minus infinity when that time is unknown: its drain is over), another pod
    when it was marked draining."""
    if pod.has_gate:
        if pod.gate is not False:
            return None
        return pod.gate_since if pod.gate_since is not None else float("-inf")
    return pod.draining_since


def _pods_by_step(
    out: PlanBuilder, inst: InstanceObs, target_role: dict[str, Any]
) -> tuple[list[PodObs], list[PodObs], list[PodObs], list[PodObs], str | None, int]:
    """The pods of ``inst`` by the action their ``pod_step`` asks for: ``(to take out of routing,
    to patch, to get their gate up, to finish, the last failing pod's reason, the most requests a
    pod still waits for)``. Pods of steps 1-2 are being removed from routing
    (``out.removing_pods``: their drain mark stays), and a pod waiting for its requests asks for a
    pass when the drain poll or its timeout comes."""
    ctx = out.ctx
    leave_routing: list[PodObs] = []
    patch: list[PodObs] = []
    gate_up: list[PodObs] = []
    finish: list[PodObs] = []
    failing: str | None = None
    waiting_in_flight = 0
    for pod in inst.pods.values():
        step = pod_step(ctx, pod, target_role)
        if step == COMPLETED or step == RESTARTING:
            continue  # the most frequent steps: nothing to do this pass
        if step == LEAVE_ROUTING:
            out.removing_pods.add(pod.name)
            leave_routing.append(pod)
        elif step == PATCH:
            out.removing_pods.add(pod.name)
            patch.append(pod)
        elif step == WAIT_IN_FLIGHT:
            out.removing_pods.add(pod.name)
            waiting_in_flight = max(waiting_in_flight, ctx.observed.in_flight.get(pod.name, 0))
            ask_drain_poll(out, ctx.now - out_of_routing_since(pod), ctx.ms.drain_timeout_seconds)
        elif step == FINISH:
            if pod.has_gate and pod.gate is not True:
                gate_up.append(pod)
            finish.append(pod)
        elif step == REOPEN_GATE:
            gate_up.append(pod)
        elif step == FAILING:
            failing = pod.failing_reason
    return leave_routing, patch, gate_up, finish, failing, waiting_in_flight


def continue_update(out: PlanBuilder, inst: InstanceObs) -> None:
    """Steps 2-5 for every pod of an instance under update, each pod at its ``pod_step``:

    2. no update state yet: make sure it is out of routing (gate False, drain mark), wait until
       its in-flight requests finish (bounded by drain.timeoutSeconds), then write the state
       annotation (target revision, image IDs and restart counts before) and the new images
       in one patch, clearing the drain mark;
    3. wait until every changed container runs the new image with a new image ID, Ready;
    4. gate True (skipped when it already is, so a restart right after it does not repeat it);
    5. move the revision labels and mark the state completed.
    """
    ctx = out.ctx
    target_role = ctx.role_data_of(ctx.update_hash, inst.role)
    if target_role is None:
        return
    leave_routing, patch, gate_up, finish, failing, waiting_in_flight = _pods_by_step(out, inst, target_role)
    if leave_routing:
        start(out, _SubInstance(inst, leave_routing))
    if patch and not leave_routing and not waiting_in_flight:
        # The pods of an instance are one engine: a worker restarts only when the entry's
        # in-flight requests (which run on the worker too) are done or timed out.
        _patch_images(out, inst, patch)
    if waiting_in_flight:
        waiting = f"{waiting_in_flight} in-flight request(s) (timeout {ctx.ms.drain_timeout_seconds:g} s)"
        reason = f"in-place update of {inst.role}-{inst.ordinal}: waiting for {waiting}"
        out.block(inst.group, inst.role, reason, KIND_DRAIN)
    if gate_up:
        condition = _gate_condition(True, "InPlaceUpdateDone", ctx.now)
        names = [p.name for p in gate_up]
        out.act(Action(SET_GATE, *_at(inst, ctx), BECAUSE_UPDATE, pod_names=names, condition=condition))
    if finish:
        _complete(out, inst, finish)
    if failing:
        why = f"is not completing ({failing}); set a working image or roll back"
        reason = f"in-place update of {inst.role}-{inst.ordinal} {why}"
        out.block(inst.group, inst.role, reason, KIND_FAILING)


def _at(inst: InstanceObs, ctx: PassContext) -> tuple[int, str, int, str]:
    """An action's ``(group, role, ordinal, revision)`` for ``inst`` moving to the update revision."""
    return inst.group, inst.role, inst.ordinal, ctx.update_hash


def _complete(out: PlanBuilder, inst: InstanceObs, pods: list[PodObs]) -> None:
    """Step 5: the revision labels move to the update revision's and the state is marked
    completed. The state stays as the restart baseline: one restart per changed container is the
    update itself; more than that later is a crash, judged by recovery."""
    ctx = out.ctx
    target = ctx.update_role_hashes.get(inst.role)
    labels = {naming.LABEL_REVISION: ctx.update_hash, naming.LABEL_ROLE_TEMPLATE_HASH: target}
    patches = {}
    for pod in pods:
        state = dict(pod.inplace_state or {})
        state["completed"] = True
        state["completedAt"] = ctx.now
        patches[pod.name] = {
            "metadata": {
                "labels": labels,
                "annotations": {naming.ANNOTATION_INPLACE_STATE: json.dumps(state, sort_keys=True)},
            }
        }
    names = [p.name for p in pods]
    out.act(Action(PATCH_IMAGE, *_at(inst, ctx), "in-place update complete", pod_names=names, patches=patches))


def _patch_images(out: PlanBuilder, inst: InstanceObs, pods: list[PodObs]) -> None:
    """Step 2: the update-state annotation and the new images in one patch per pod."""
    ctx = out.ctx
    target_role = ctx.role_data_of(ctx.update_hash, inst.role)
    if target_role is None:
        return
    patches = {}
    for pod in pods:
        images = template_images(target_role, pod.index)
        # A merge patch replaces lists whole, so every container is sent, with its new image.
        merged = []
        changed = False
        baseline = {}
        statuses = {cs.get("name"): cs for cs in (pod.raw.get("status") or {}).get("containerStatuses") or []}
        for c in (pod.raw.get("spec") or {}).get("containers") or []:
            want = images.get(c.get("name"))
            merged.append({**c, "image": want} if want else c)
            cs = statuses.get(c["name"]) or {}
            # A container is part of the update when its spec or what it runs differs from the
            # target: after a lost or malformed state annotation the spec may already say the
            # new image while the old one still runs, and that must not pass as done.
            if want and (want != c.get("image") or (cs.get("image") and cs.get("image") != want)):
                changed = changed or want != c.get("image")
                baseline[c["name"]] = {
                    "image": c.get("image"),
                    "runningImage": cs.get("image"),
                    "imageID": cs.get("imageID"),
                    "containerID": cs.get("containerID"),
                    "restartCount": int(cs.get("restartCount") or 0),
                }
        state = {
            "targetRevision": ctx.update_hash,
            "targetRoleHash": ctx.update_role_hashes[inst.role],
            "startedAt": ctx.now,
            "containers": baseline,
        }
        # The drain mark goes in the same write: from here the readiness gate (False until the
        # new image is Ready) keeps the pod out of routing.
        annotations: dict[str, Any] = {naming.ANNOTATION_INPLACE_STATE: json.dumps(state, sort_keys=True)}
        if pod.draining_since is not None:
            annotations[naming.ANNOTATION_DRAINING] = None
        patch: dict[str, Any] = {"metadata": {"annotations": annotations}}
        if changed:
            patch["spec"] = {"containers": merged}
        patches[pod.name] = patch
    out.act(
        Action(
            PATCH_IMAGE,
            inst.group,
            inst.role,
            inst.ordinal,
            ctx.update_hash,
            BECAUSE_UPDATE,
            pod_names=[p.name for p in pods],
            patches=patches,
        )
    )


def init_gates(out: PlanBuilder) -> None:
    """Pods created with the InPlaceUpdateReady gate start with the condition True (a pod
    created under this strategy must be routable as soon as it is Ready)."""
    for group in out.ctx.observed.groups.values():
        for inst in group.instances.values():
            names = [
                p.name
                for p in inst.pods.values()
                if p.has_gate and p.gate is None and p.inplace_state is None and not p.deleting
            ]
            if names:
                out.act(
                    Action(
                        SET_GATE,
                        inst.group,
                        inst.role,
                        inst.ordinal,
                        inst.revision,
                        "initialise readiness gate",
                        pod_names=names,
                        condition=_gate_condition(True, "PodCreated", out.ctx.now),
                    )
                )


class _SubInstance:
    """A view of an instance restricted to some of its pods (to start the protocol on them)."""

    def __init__(self, inst: InstanceObs, pods: list[PodObs]):
        self.group, self.role, self.ordinal, self.revision = inst.group, inst.role, inst.ordinal, inst.revision
        self.pods = {p.index: p for p in pods}


def _gate_condition(ready: bool, reason: str, now: float) -> dict[str, Any]:
    return {
        "type": naming.CONDITION_INPLACE_READY,
        "status": "True" if ready else "False",
        "reason": reason,
        "lastTransitionTime": now,
    }


def _strip_images(template: dict[str, Any] | None) -> Any:
    if not template:
        return template
    spec = dict(template.get("spec") or {})
    spec["containers"] = [{k: v for k, v in c.items() if k != "image"} for c in spec.get("containers") or []]
    return {**template, "spec": spec}


def _non_image_differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    out = []
    if int(old.get("workerReplicas") or 0) != int(new.get("workerReplicas") or 0):
        out.append("workerReplicas")
    for key in ("entryTemplate", "workerTemplate"):
        a, b = old.get(key), new.get(key)
        if (a is None) != (b is None):
            out.append(key)
            continue
        if a is None:
            continue
        names_a = [c.get("name") for c in (a.get("spec") or {}).get("containers") or []]
        names_b = [c.get("name") for c in (b.get("spec") or {}).get("containers") or []]
        if names_a != names_b:
            out.append(f"{key} containers (added, removed or reordered)")
            continue
        init_a = [c.get("image") for c in (a.get("spec") or {}).get("initContainers") or []]
        init_b = [c.get("image") for c in (b.get("spec") or {}).get("initContainers") or []]
        if init_a != init_b:
            out.append(f"{key} init container images")
        if _strip_images(a) != _strip_images(b):
            out.append(f"{key} (fields other than container images)")
    return out


def _inplace_pod_done(pod: PodObs, state: dict[str, Any], target_role: dict[str, Any]) -> bool:
    """Every changed container runs the target image with a new image ID, and containers are Ready."""
    images = template_images(target_role, pod.index)
    spec_images = {c.get("name"): c.get("image") for c in (pod.raw.get("spec") or {}).get("containers") or []}
    statuses = {cs.get("name"): cs for cs in (pod.raw.get("status") or {}).get("containerStatuses") or []}
    baseline = state.get("containers") or {}
    for name, base in baseline.items():
        want = images.get(name)
        if spec_images.get(name) != want:
            return False
        cs = statuses.get(name)
        if not cs or cs.get("image") != want or not cs.get("ready"):
            return False
        if base.get("imageID") and cs.get("imageID") == base.get("imageID") and base.get("runningImage") != want:
            # The kubelet has not visibly restarted it on the new image yet. (When the container
            # was still running the wanted image at patch time, e.g. the old image set back before
            # a bad one ever started, an unchanged image ID is exactly what success looks like.)
            return False
    conditions = (pod.raw.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "ContainersReady" and c.get("status") == "True" for c in conditions) or all(
        (statuses.get(n) or {}).get("ready") for n in spec_images
    )
