"""How many nodes a multi-node predictor gets, and how many GPUs each, as KServe computes them.

A predictor with a ``workerSpec`` runs a head pod (the predictor's Deployment) and ``nodes - 1``
worker pods (``{isvc}-predictor-worker``). KServe sizes it from ``tensorParallelSize`` x
``pipelineParallelSize`` GPUs in all (the InferenceService's values, else the ServingRuntime's
``workerSpec``, else 1 each), by its executor backend (the runtime's annotation
``multinode/executor-backend``):

- **ray** (the default): the GPUs the worker container requests decide the node count,
  ``ceil(total / worker GPUs)``; the head takes what is left. With only the head's GPUs given, the
  head takes them and every further GPU is a one-GPU worker. With no GPU declared at all, every
  node gets one GPU: ``total`` nodes. The head and worker requests must cover the total.
- **mp**: ``pipelineParallelSize`` nodes of ``tensorParallelSize`` GPUs each.

The worker Deployment has ``nodes - 1`` replicas whatever the predictor's own replica count (KServe
reads ``RAY_NODE_COUNT``), and KServe writes the GPU counts on the head and worker containers.

Worked example (KServe's own test): ``tensorParallelSize: 16``, a runtime whose pipeline parallel
size is 2, no GPU declared -> 32 GPUs, 32 nodes of one GPU: 31 worker replicas. Its multi-node
override (``maxSurge: 100%``) then starts 31 more worker pods, 31 more GPUs, during a rollout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

EXECUTOR_BACKEND_ANNOTATION = "multinode/executor-backend"
BACKEND_MP = "mp"
BACKEND_RAY = "ray"
DEFAULT_PARALLEL_SIZE = 1  # KServe's DefaultPipelineParallelSize and DefaultTensorParallelSize


class InsufficientGPUs(ValueError):
    """The head's and the workers' GPU requests do not add up to the total the sizes need."""


@dataclass(frozen=True, slots=True)
class MultiNode:
    pipeline_parallel_size: int
    tensor_parallel_size: int
    nodes: int  # RAY_NODE_COUNT: the head and its workers
    head_gpus: int
    worker_gpus: int

    @property
    def workers(self) -> int:
        return self.nodes - 1

    @property
    def total_gpus(self) -> int:
        return self.head_gpus + self.workers * self.worker_gpus


def _ray(total: int, head: int, worker: int) -> tuple[int, int, int]:
    """(nodes, worker GPUs, head GPUs) by KServe's ``computeRayNodeAndGPUs``."""

    def nodes_for(gpus: int, per_node: int) -> int:
        return 1 if per_node == 0 else math.ceil(gpus / per_node)

    def check(nodes: int, head_gpus: int, worker_gpus: int) -> None:
        if total > head_gpus + worker_gpus * (nodes - 1):
            raise InsufficientGPUs(
                f"the head ({head_gpus} GPU) and {nodes - 1} worker(s) of {worker_gpus} GPU cannot hold the "
                f"{total} GPUs tensorParallelSize x pipelineParallelSize asks for"
            )

    if worker > 0:
        nodes = nodes_for(total, worker)
        if head > 0:
            if nodes_for(total, head) == 1:
                nodes = 1
        else:
            head = total - worker * (nodes - 1)
        if nodes == 1:
            worker, head = 0, total
        check(nodes, head, worker)
        return nodes, worker, head
    if head > 0:
        remaining = total - head
        nodes = 1 + (nodes_for(remaining, 1) if remaining > 0 else 0)
        check(nodes, head, 1)
        return nodes, 1, head
    return total, 1, 1


def multinode(
    pipeline_parallel_size: int, tensor_parallel_size: int, *, head_gpus: int, worker_gpus: int, backend: str
) -> MultiNode:
    """The node count and GPUs per node (see the module docstring); raises ``InsufficientGPUs``."""
    pp, tp = pipeline_parallel_size, tensor_parallel_size
    if backend == BACKEND_MP:
        return MultiNode(pp, tp, pp, tp, tp)
    nodes, worker, head = _ray(pp * tp, head_gpus, worker_gpus)
    return MultiNode(pp, tp, nodes, head, worker)
