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
from .drain import DRAIN_POLL_SECONDS, drain_mark


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


def continue_update(out: PlanBuilder, inst: InstanceObs) -> None:
    """Steps 2-5 for every pod of an instance under update, each step decided from the pod:

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
    target = ctx.update_role_hashes.get(inst.role)
    timeout = ctx.ms.drain_timeout_seconds
    not_started: list[PodObs] = []
    drained: list[PodObs] = []
    gate_up: list[PodObs] = []
    finish: list[PodObs] = []
    failing = None
    waiting_in_flight = 0
    for pod in inst.pods.values():
        if pod.deleting:
            continue
        state = pod.inplace_state
        valid = state is not None and state.get("targetRevision") in ctx.equivalent
        if not valid:
            if _pod_on_target(ctx, pod):
                continue  # already on the target template
            out.removing_pods.add(pod.name)
            if pod.has_gate:
                if pod.gate is not False:
                    not_started.append(pod)
                    continue
                since = pod.gate_since if pod.gate_since is not None else float("-inf")
            elif pod.draining_since is None:
                not_started.append(pod)
                continue
            else:
                since = pod.draining_since
            in_flight = ctx.observed.in_flight.get(pod.name, 0)
            if in_flight <= 0 or ctx.now - since >= timeout:
                drained.append(pod)
            else:
                waiting_in_flight = max(waiting_in_flight, in_flight)
                out.requeue(min(DRAIN_POLL_SECONDS, max(timeout - (ctx.now - since), 0.0)))
            continue
        if state.get("completed"):
            if pod.has_gate and pod.gate is False:
                gate_up.append(pod)
            continue
        if _inplace_pod_done(pod, state, target_role):
            if pod.has_gate and pod.gate is not True:
                gate_up.append(pod)
            finish.append(pod)
        elif pod.failing_reason:
            failing = pod.failing_reason
    if not_started:
        start(out, _SubInstance(inst, not_started))
    if drained and not not_started and not waiting_in_flight:
        # The pods of an instance are one engine: a worker restarts only when the entry's
        # in-flight requests (which run on the worker too) are done or timed out.
        _patch_images(out, inst, drained)
    if waiting_in_flight:
        out.block(
            inst.group,
            inst.role,
            f"in-place update of {inst.role}-{inst.ordinal}: waiting for {waiting_in_flight} "
            f"in-flight request(s) (timeout {timeout:g} s)",
            KIND_DRAIN,
        )
    if gate_up:
        out.act(
            Action(
                SET_GATE,
                inst.group,
                inst.role,
                inst.ordinal,
                ctx.update_hash,
                BECAUSE_UPDATE,
                pod_names=[p.name for p in gate_up],
                condition=_gate_condition(True, "InPlaceUpdateDone", ctx.now),
            )
        )
    if finish:
        labels = {naming.LABEL_REVISION: ctx.update_hash, naming.LABEL_ROLE_TEMPLATE_HASH: target}
        patches = {}
        for pod in finish:
            state = dict(pod.inplace_state or {})
            state["completed"] = True
            state["completedAt"] = ctx.now
            # The state stays as the restart baseline: one restart per changed container is
            # the update itself; more than that later is a crash, judged by recovery.
            patches[pod.name] = {
                "metadata": {
                    "labels": labels,
                    "annotations": {naming.ANNOTATION_INPLACE_STATE: json.dumps(state, sort_keys=True)},
                }
            }
        out.act(
            Action(
                PATCH_IMAGE,
                inst.group,
                inst.role,
                inst.ordinal,
                ctx.update_hash,
                "in-place update complete",
                pod_names=[p.name for p in finish],
                patches=patches,
            )
        )
    if failing:
        out.block(
            inst.group,
            inst.role,
            f"in-place update of {inst.role}-{inst.ordinal} is not completing ({failing}); set a "
            "working image or roll back",
            KIND_FAILING,
        )


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
