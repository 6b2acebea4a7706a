"""The GPUs a pod needs (controller.core.podresources): Kubernetes' effective request of a pod.

The rule is the scheduler's ("Resource sharing within containers", Kubernetes documentation on
init containers; KEP-753 for sidecars): a container requests its ``requests``, else its ``limits``;
the pod needs max(largest init container, sum of app containers), a sidecar (init container with
``restartPolicy: Always``) adding to what starts after it.
"""

from __future__ import annotations

import pytest

from controller.core import podresources
from controller.core.kserve.runtimes import GPU_RESOURCES

GPU = "nvidia.com/gpu"


def c(requests=None, limits=None, **extra) -> dict:
    resources = {}
    if requests is not None:
        resources["requests"] = {GPU: requests}
    if limits is not None:
        resources["limits"] = {GPU: limits}
    return {"name": "c", "image": "i", "resources": resources, **extra}


def pod(containers, init=()) -> dict:
    spec = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    return spec


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(pod([c(limits="2")]), 2, id="a container with only a limit requests its limit"),
        pytest.param(pod([c(requests="1", limits="2")]), 1, id="a request wins over the limit"),
        pytest.param(pod([c(requests=0, limits="2")]), 0, id="a request of zero is a request, not absent"),
        pytest.param(pod([c(limits="1"), c(limits="2")]), 3, id="app containers run together so their sum counts"),
        pytest.param(pod([c(limits="1")], init=[c(limits="4")]), 4, id="a larger init container sets the need"),
        pytest.param(
            pod([c(limits="1"), c(limits="2")], init=[c(limits="2"), c(limits="1")]),
            3,
            id="init containers smaller than the app sum add nothing",
        ),
        pytest.param(
            pod([c(limits="1")], init=[c(limits="3"), c(limits="2")]),
            3,
            id="init containers run one at a time so the largest counts not their sum",
        ),
        pytest.param(
            pod([c(limits="2")], init=[c(limits="1", restartPolicy="Always"), c(limits="2")]),
            3,
            id="a sidecar adds to the init containers after it and to the app containers",
        ),
        pytest.param(pod([{"name": "cpu-only", "image": "i"}]), 0, id="a container without resources needs none"),
        pytest.param(pod([c(limits="two")]), 0, id="a count that is not a whole number counts zero"),
        pytest.param(None, 0, id="no spec needs nothing"),
    ],
)
def test_a_pod_needs_kubernetes_effective_request_of_gpus(spec, expected):
    assert podresources.pod_gpus(spec) == expected


def test_other_gpu_kinds_count_only_when_named():
    container = {"resources": {"limits": {"amd.com/gpu": "2"}}}
    assert podresources.container_gpus(container) == 0
    assert podresources.container_gpus(container, GPU_RESOURCES) == 2


def test_a_template_and_a_pod_count_through_their_spec():
    template = {"metadata": {}, "spec": pod([c(limits="2")], init=[c(limits="4")])}
    assert podresources.template_gpus(template) == 4


def test_a_role_instance_counts_its_entry_and_each_worker():
    entry = {"spec": pod([c(limits="2")])}
    worker = {"spec": pod([c(requests="1", limits="2")])}
    assert podresources.instance_gpus(entry, 2, worker) == 2 + 2 * 1
    assert podresources.instance_gpus(entry, 0, None) == 2
