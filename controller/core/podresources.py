"""The GPUs a pod needs: the one count every part of RolloutUI uses (scheduler, gang, capacity,
advisor, preview, KServe). Pure.

A container asks for a resource with its ``requests``; one it only ``limits`` is requested at the
limit (Kubernetes defaults an unset request to the limit). A pod's need is Kubernetes' *effective
request* of the pod (the scheduler's rule, "Resource sharing within containers" in the Kubernetes
documentation on init containers, and KEP-753 for sidecars):

- init containers run one at a time, before the app containers, so the pod needs the largest of
  them, not their sum;
- the app containers run together: the pod needs their sum;
- the effective request is the larger of the two: max(largest init container, sum of app containers);
- a sidecar (an init container with ``restartPolicy: Always``) keeps running beside everything
  started after it, so it adds to the init containers that follow it and to the app containers.

Example: init containers asking 4 and 1 GPU, app containers asking 1 and 2 -> max(4, 1 + 2) = 4.

A count that is not a whole number (``"two"``) counts 0 here: the manifest's validation reports it,
counting is not where to fail on it. GPUs are whole numbers in Kubernetes (an extended resource).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from . import naming

NVIDIA = (naming.GPU_RESOURCE,)


def _whole(value: Any) -> int:
    if value is None or isinstance(value, bool):
        return 0
    try:
        return max(0, int(str(value)))
    except ValueError:
        return 0


def container_gpus(container: Mapping[str, Any] | None, resources: Iterable[str] = NVIDIA) -> int:
    """GPUs one container asks for: per GPU resource name, its request, else its limit.

    ``resources`` are the resource names that count as GPUs (``nvidia.com/gpu`` unless told; KServe
    also counts ``amd.com/gpu``, ...). Example: limits {"nvidia.com/gpu": "2"} and no request -> 2.
    """
    res = (container or {}).get("resources") or {}
    requests = res.get("requests") or {}
    limits = res.get("limits") or {}
    total = 0
    for name in resources:
        value = requests.get(name)
        total += _whole(limits.get(name) if value is None else value)
    return total


def pod_gpus(pod_spec: Mapping[str, Any] | None, resources: Iterable[str] = NVIDIA) -> int:
    """Kubernetes' effective GPU request of a pod with this ``spec`` (see the module's rule)."""
    spec = pod_spec or {}
    kinds = tuple(resources)
    sidecars = 0  # the sidecars started so far keep running
    init_peak = 0
    for c in spec.get("initContainers") or []:
        need = container_gpus(c, kinds)
        if (c or {}).get("restartPolicy") == "Always":
            sidecars += need
            init_peak = max(init_peak, sidecars)
        else:
            init_peak = max(init_peak, sidecars + need)
    apps = sum(container_gpus(c, kinds) for c in spec.get("containers") or [])
    return max(init_peak, apps + sidecars)


def template_gpus(template: Mapping[str, Any] | None, resources: Iterable[str] = NVIDIA) -> int:
    """GPUs of one pod made from ``template`` (a pod template: ``{"metadata", "spec"}``) or a pod."""
    return pod_gpus((template or {}).get("spec"), resources)


def instance_gpus(entry_template: Mapping[str, Any] | None, worker_replicas: int, worker_template: Any) -> int:
    """GPUs of one role instance: its entry pod and ``worker_replicas`` worker pods.

    Example: entry 2 GPUs, 1 worker of 2 GPUs -> 4."""
    return template_gpus(entry_template) + worker_replicas * template_gpus(worker_template)
