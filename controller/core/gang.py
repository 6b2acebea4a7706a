"""Gang scheduling with Volcano: the PodGroups of a ModelServing and how its pods name them.

With ``spec.schedulerName: volcano`` every pod is scheduled by Volcano as part of a PodGroup
(``scheduling.volcano.sh/v1beta1``): Volcano binds none of the group's pods until ``minMember`` of
them can be placed at once, so a multi-node instance never holds half its GPUs while waiting for
the rest (the deadlock two half-placed instances would otherwise make). As Kthena does:

- one PodGroup per ServingGroup, named like the group (``chat-1``); or, with the ModelServing
  annotation ``serving.rolloutui.io/gang-scope: Instance``, one per role instance
  (``chat-1-prefill-0``);
- ``minMember`` per ServingGroup = the sum over roles of (1 + workerReplicas) x min(minRoleReplicas
  of the role, replicas of the role) (``spec.template.gangPolicy.minRoleReplicas``; a role it does
  not name counts fully); per instance = 1 + workerReplicas;
- ``minResources`` = the GPUs of those ``minMember`` pods (``podresources``: requests, else limits;
  init containers as Kubernetes counts them);
- the queue from the ModelServing annotation ``scheduling.volcano.sh/queue-name``;
- the pods carry ``scheduling.k8s.io/group-name=<PodGroup>`` and ``volcano.sh/task-spec=<role-id>``.

Worked example: ``chat`` with prefill (replicas 2, workerReplicas 1, 2 GPUs a pod) and decode
(replicas 1, no workers, 4 GPUs), no gangPolicy -> PodGroup ``chat-0`` with minMember
(1 + 1) x 2 + 1 x 1 = 5 and minResources ``nvidia.com/gpu: 4 x 2 + 1 x 4 = 12``.

The reconcile pass creates a group's PodGroup before its pods and deletes it once the group is gone
(scaled away, and none of its pods remain). Pure: builds the objects only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from . import naming, podresources
from .ports import PODGROUP, Obj
from .revisions import owner_reference
from .spec import ModelServing, Role

VOLCANO = "volcano"
API_VERSION = "scheduling.volcano.sh/v1beta1"
ANNOTATION_GROUP_NAME = "scheduling.k8s.io/group-name"
ANNOTATION_TASK_SPEC = "volcano.sh/task-spec"
ANNOTATION_QUEUE = "scheduling.volcano.sh/queue-name"
ANNOTATION_SCOPE = naming.PREFIX + "gang-scope"
SCOPE_GROUP, SCOPE_INSTANCE = "ServingGroup", "Instance"


def enabled(scheduler_name: str | None) -> bool:
    """Gang scheduling is on for pods scheduled by Volcano, and only then."""
    return scheduler_name == VOLCANO


def scope(ms_obj: Obj) -> str:
    """``ServingGroup`` (the default) or ``Instance`` (annotation ``serving.rolloutui.io/gang-scope``)."""
    value = ((ms_obj.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_SCOPE)
    return SCOPE_INSTANCE if value == SCOPE_INSTANCE else SCOPE_GROUP


def podgroup_name(ms_name: str, group: int, role: str | None = None, ordinal: int | None = None) -> str:
    """``chat-1`` for the ServingGroup; ``chat-1-prefill-0`` for one role instance."""
    base = naming.group_name(ms_name, group)
    return base if role is None else f"{base}-{role}-{ordinal}"


def pod_annotations(ms_obj: Obj, group: int, role: str, ordinal: int) -> dict[str, str]:
    """What ties a pod to its PodGroup (Kthena's two annotations)."""
    name = (ms_obj.get("metadata") or {}).get("name") or ""
    if scope(ms_obj) == SCOPE_INSTANCE:
        pg = podgroup_name(name, group, role, ordinal)
    else:
        pg = podgroup_name(name, group)
    return {ANNOTATION_GROUP_NAME: pg, ANNOTATION_TASK_SPEC: naming.role_id(role, ordinal)}


def _count(value: Any, default: int) -> int:
    """A whole number from the manifest (``"2"``, 2); ``default`` when absent or not a number
    (the spec's validation reports such values; the PodGroup is not where to fail on them)."""
    if value is None:
        return default
    try:
        return max(0, int(str(value)))
    except ValueError:
        return default


def _role_figures(role: Role | None) -> tuple[int, int]:
    """(pods of one instance, GPUs of one instance) of a role (none for a role the spec lost)."""
    if role is None:
        return 1, 0
    gpus = podresources.instance_gpus(role.entry_template, role.worker_replicas, role.worker_template)
    return role.pods_per_instance, gpus


def _podgroup(ms_obj: Obj, name: str, labels: dict[str, str], min_member: int, gpus: int) -> Obj:
    meta = ms_obj.get("metadata") or {}
    spec: dict[str, Any] = {"minMember": min_member, "minResources": {naming.GPU_RESOURCE: str(gpus)}}
    queue = (meta.get("annotations") or {}).get(ANNOTATION_QUEUE)
    if queue:
        spec["queue"] = queue
    return {
        "apiVersion": API_VERSION,
        "kind": PODGROUP,
        "metadata": {
            "name": name,
            "namespace": meta.get("namespace") or "default",
            "labels": {naming.LABEL_NAME: meta.get("name") or "", **labels},
            "ownerReferences": [owner_reference(ms_obj)],
        },
        "spec": spec,
    }


def podgroups(ms: ModelServing, extra_instances: Iterable[tuple[int, str, int]] = ()) -> list[Obj]:
    """The PodGroups the parsed ModelServing ``ms`` needs: one per ServingGroup 0..replicas-1 (or per
    role instance), plus those of ``extra_instances`` ((group, role, ordinal) that still have pods: a
    group being scaled away keeps its PodGroup until its last pod is gone). None unless Volcano
    schedules it."""
    if not enabled(ms.scheduler_name):
        return []
    ms_obj = ms.manifest
    template = (ms_obj.get("spec") or {}).get("template") or {}
    minimum = ((template.get("gangPolicy") or {}).get("minRoleReplicas")) or {}
    extra = sorted(set(extra_instances))
    out: list[Obj] = []
    if scope(ms_obj) == SCOPE_INSTANCE:
        wanted = {(g, r.name, k) for g in range(ms.replicas) for r in ms.roles for k in range(r.replicas)}
        for group, role, ordinal in sorted(wanted | set(extra), key=lambda x: (x[0], str(x[1]), x[2])):
            pods, gpus = _role_figures(ms.role(role))
            labels = {naming.LABEL_GROUP_NAME: naming.group_name(ms.name, group), naming.LABEL_ROLE: str(role)}
            out.append(_podgroup(ms_obj, podgroup_name(ms.name, group, str(role), ordinal), labels, pods, gpus))
        return out
    groups = set(range(ms.replicas)) | {g for g, _, _ in extra}
    min_member, min_gpus = 0, 0
    for r in ms.roles:
        pods, gpus = _role_figures(r)
        count = r.replicas
        if r.name in minimum:
            count = min(_count(minimum[r.name], count), count)
        min_member += pods * count
        min_gpus += gpus * count
    for group in sorted(groups):
        name = podgroup_name(ms.name, group)
        out.append(_podgroup(ms_obj, name, {naming.LABEL_GROUP_NAME: name}, min_member, min_gpus))
    return out


def podgroup_matches(current: Obj, wanted: Obj) -> bool:
    """Whether the stored PodGroup asks what ``wanted`` asks (fields Volcano adds ignored)."""
    have = current.get("spec") or {}
    return all(have.get(k) == v for k, v in wanted["spec"].items())


def instances_of(pods: Iterable[Obj]) -> set[tuple[int, str, int]]:
    """(group, role, ordinal) of every pod that carries the controller's labels."""
    out = set()
    for pod in pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        try:
            out.add(
                (
                    int(labels[naming.LABEL_GROUP_ORDINAL]),
                    labels[naming.LABEL_ROLE],
                    int(labels[naming.LABEL_ROLE_ORDINAL]),
                )
            )
        except (KeyError, ValueError):
            continue
    return out
