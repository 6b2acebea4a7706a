"""Build the pod manifests of a role instance from a revision's stored data.

Pods are always built from a *revision's* data, never straight from the spec, so a protected group
rebuilt after a failure gets exactly the template it ran before (LWS bug #280 is the failure this
avoids: a recreated leader on the old template with workers on the new one).
"""

from __future__ import annotations

from typing import Any

from . import gang, naming, network
from .mergepatch import copy_json
from .ports import Obj
from .revisions import owner_reference, role_hash


def _inject_env(containers: list[dict[str, Any]], env: list[dict[str, str]]) -> None:
    injected = {e["name"] for e in env}
    for container in containers:
        existing = [e for e in container.get("env") or [] if e.get("name") not in injected]
        container["env"] = existing + [dict(e) for e in env]


def template_for(role_data: dict[str, Any], pod_index: int) -> dict[str, Any]:
    """The pod template of pod ``pod_index`` of an instance: 0 is the entry, the rest workers
    (the entry template when a role has no separate worker template)."""
    if pod_index == 0:
        return role_data.get("entryTemplate") or {}
    return role_data.get("workerTemplate") or role_data.get("entryTemplate") or {}


def template_images(role_data: dict[str, Any], pod_index: int) -> dict[str, str | None]:
    """Container name -> image in the template of pod ``pod_index``."""
    return {
        c["name"]: c.get("image")
        for c in (template_for(role_data, pod_index).get("spec") or {}).get("containers") or []
    }


def build_instance_pods(
    *,
    ms: Obj,
    revision_hash: str,
    role_data: dict[str, Any],
    group: int,
    ordinal: int,
    in_place_gate: bool,
    scheduler_name: str | None = None,
    pod_indexes: list[int] | None = None,
    extra_labels: dict[str, str] | None = None,
) -> list[Obj]:
    """Pods of instance (group, role, ordinal): index 0 is the entry, 1..workerReplicas workers.

    Worked example: ms ``chat``, group 1, role ``prefill`` instance 0 with 1 worker ->
    ``chat-1-prefill-0-0`` (entry) and ``chat-1-prefill-0-1`` (worker, ENTRY_ADDRESS
    ``chat-1-prefill-0-0.chat-pods.<namespace>.svc``, GROUP_SIZE 2, WORKER_INDEX 1). Every pod
    has its own name as ``hostname`` and the ModelServing's headless Service as ``subdomain``
    (``network``), which is what makes that address resolve. ``extra_labels``: the revision
    compatibility labels of the request-path contract (``planner.labels``), when it applies.
    """
    meta = ms.get("metadata") or {}
    ms_name = meta.get("name") or ""
    namespace = meta.get("namespace") or "default"
    role = role_data["name"]
    workers = int(role_data.get("workerReplicas") or 0)
    rhash = role_hash(role_data)
    entry_address = network.pod_address(naming.pod_name(ms_name, group, role, ordinal, 0), ms_name, namespace)
    indexes = pod_indexes if pod_indexes is not None else list(range(workers + 1))
    pods = []
    for index in indexes:
        template = copy_json(template_for(role_data, index))
        tmeta = template.get("metadata") or {}
        pod_name = naming.pod_name(ms_name, group, role, ordinal, index)
        labels = _pod_labels(tmeta, ms_name, group, role, ordinal, index, revision_hash, rhash, extra_labels)
        env = _group_env(workers, index, entry_address)
        spec = _pod_spec(template.get("spec") or {}, env, pod_name, ms_name, scheduler_name, in_place_gate)
        annotations = dict(tmeta.get("annotations") or {})
        if gang.enabled(scheduler_name):
            # Volcano schedules the pod as a member of its PodGroup (``gang``).
            annotations.update(gang.pod_annotations(ms, group, role, ordinal))
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": pod_name,
                    "namespace": namespace,
                    "labels": labels,
                    "annotations": annotations,
                    "ownerReferences": [owner_reference(ms)],
                },
                "spec": spec,
            }
        )
    return pods


def _pod_labels(
    tmeta: dict[str, Any],
    ms_name: str,
    group: int,
    role: str,
    ordinal: int,
    index: int,
    revision_hash: str,
    rhash: str,
    extra_labels: dict[str, str] | None,
) -> dict[str, str]:
    """The template's labels, then the controller's (which win): the ModelServing, group, role
    instance, pod index, revision and role template hash; ``entry: "true"`` on pod 0; then
    ``extra_labels``."""
    labels = dict(tmeta.get("labels") or {})
    labels.update(
        {
            naming.LABEL_NAME: ms_name,
            naming.LABEL_GROUP_NAME: naming.group_name(ms_name, group),
            naming.LABEL_GROUP_ORDINAL: str(group),
            naming.LABEL_ROLE: role,
            naming.LABEL_ROLE_ID: naming.role_id(role, ordinal),
            naming.LABEL_ROLE_ORDINAL: str(ordinal),
            naming.LABEL_POD_INDEX: str(index),
            naming.LABEL_REVISION: revision_hash,
            naming.LABEL_ROLE_TEMPLATE_HASH: rhash,
        }
    )
    if index == 0:
        labels[naming.LABEL_ENTRY] = "true"
    if extra_labels:
        labels.update(extra_labels)
    return labels


def _group_env(workers: int, index: int, entry_address: str) -> list[dict[str, str]]:
    """What a pod knows of its instance: its size (entry + workers), its index, the entry's address.
    Example: a worker of an instance with 1 worker -> GROUP_SIZE 2, WORKER_INDEX 1."""
    return [
        {"name": "GROUP_SIZE", "value": str(workers + 1)},
        {"name": "WORKER_INDEX", "value": str(index)},
        {"name": "ENTRY_ADDRESS", "value": entry_address},
    ]


def _pod_spec(
    spec: dict[str, Any],
    env: list[dict[str, str]],
    pod_name: str,
    ms_name: str,
    scheduler_name: str | None,
    in_place_gate: bool,
) -> dict[str, Any]:
    """The template's pod spec (changed in place and returned) with ``env`` in every container and
    init container, the scheduler, the pod's own name as hostname under the ModelServing's headless
    Service, and with ``in_place_gate`` the in-place readiness gate (once)."""
    _inject_env(spec.setdefault("containers", []), env)
    if spec.get("initContainers"):
        _inject_env(spec["initContainers"], env)
    if scheduler_name:
        spec["schedulerName"] = scheduler_name
    spec["hostname"] = pod_name
    spec["subdomain"] = network.service_name(ms_name)
    if in_place_gate:
        gates = [
            g for g in spec.get("readinessGates") or [] if g.get("conditionType") != naming.CONDITION_INPLACE_READY
        ]
        gates.append({"conditionType": naming.CONDITION_INPLACE_READY})
        spec["readinessGates"] = gates
    return spec
