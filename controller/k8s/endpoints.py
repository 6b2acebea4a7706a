"""The Routed gate on Kubernetes: which pods a ModelServing's Services send traffic to, read from
their EndpointSlices (``discovery.k8s.io/v1``).

Kubernetes publishes the addresses a Service routes to in EndpointSlices, one or more per Service,
labelled with the Service's labels (so ``serving.rolloutui.io/name=<ms>`` selects the slices of
every Service the ModelServing owns) and ``kubernetes.io/service-name``. An endpoint names its pod
(``targetRef``) and carries three conditions:

- ``ready``: the address takes new traffic. A Service that publishes not-ready addresses (the
  headless ``<ms>-pods`` for pod DNS) has every address ``ready``, so
- ``serving``: the pod's own readiness, whatever the Service publishes, and
- ``terminating``: the pod is going away.

A pod is routed when one of the slices lists it with ``ready`` and ``serving`` not false and
``terminating`` not true (an absent condition is read as the API documents it: ready and serving
unknown count as true, terminating unknown as false). This is what kube-proxy and Gateway API
implementations act on, so a pod Ready for the kubelet but not yet in a slice (the endpoint
controller lagging, a selector that misses it) waits at Routed.

Since when: a slice carries no time per endpoint, so the table remembers when it first saw each pod
routed (``EndpointSliceTable``, one per cluster adapter). A pod already routed the first time a
ModelServing's slices are read gets no time (None: the gate uses its Ready time).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import kubernetes

from controller.core import naming
from controller.core.ports import ClusterError, NotFound, Obj

from .client import Forbidden, raw_json

log = logging.getLogger(__name__)

API = "/apis/discovery.k8s.io/v1"


def routed_in_slices(slices: list[Obj]) -> set[str]:
    """The names of the pods the slices route to (see the module docstring).

    Example: one endpoint ``{"targetRef": {"kind": "Pod", "name": "chat-0-serve-0-0"}, "conditions":
    {"ready": True, "serving": False}}`` -> set(): the Service publishes it, the pod is not Ready."""
    out: set[str] = set()
    for s in slices:
        for endpoint in s.get("endpoints") or ():
            ref = endpoint.get("targetRef") or {}
            if ref.get("kind", "Pod") != "Pod" or not ref.get("name"):
                continue
            cond = endpoint.get("conditions") or {}
            if cond.get("ready") is False or cond.get("serving") is False or cond.get("terminating") is True:
                continue
            out.add(ref["name"])
    return out


class EndpointSliceTable:
    """``routable_pods`` for the Kubernetes adapter: the pods routed now, with since when.

    ``clock``: epoch seconds (the controller's clock on a real cluster). The first-seen times are
    kept per ModelServing on this object (the adapter's), not in the module."""

    def __init__(self, api_client: kubernetes.client.ApiClient, *, clock: Callable[[], float] = time.time) -> None:
        self.api_client = api_client
        self.clock = clock
        self._since: dict[tuple[str, str], dict[str, float | None]] = {}

    def slices(self, namespace: str, ms_name: str) -> list[Obj]:
        path = f"{API}/namespaces/{namespace}/endpointslices?labelSelector={naming.LABEL_NAME}%3D{ms_name}"
        body: dict[str, Any] = raw_json(
            self.api_client, "GET", path, what=f"list endpointslices of {namespace}/{ms_name}"
        )
        return [
            i
            for i in body.get("items") or ()
            if ((i.get("metadata") or {}).get("labels") or {}).get(naming.LABEL_NAME) == ms_name
        ]

    def routable_pods(self, namespace: str, ms_name: str, pods: list[Obj] | None = None) -> dict[str, float | None]:
        """Raises ``ClusterError`` when the slices cannot be read (the pass then infers Routed from
        the pods): a cluster without the discovery API, or a ServiceAccount not granted it."""
        try:
            slices = self.slices(namespace, ms_name)
        except (NotFound, Forbidden) as exc:
            log.warning(
                "cannot read the EndpointSlices of %s/%s (%s); Routed is inferred from the pods",
                namespace,
                ms_name,
                exc,
            )
            raise ClusterError(str(exc)) from exc
        routed = routed_in_slices(slices)
        key = (namespace, ms_name)
        before = self._since.get(key)
        now = self.clock()
        table = {name: (None if before is None else before.get(name, now)) for name in sorted(routed)}
        self._since[key] = table
        return dict(table)
