"""``RedisInFlightRouter``: the router port (``controller.core.ports.RouterPort``) over a real router.

The contract with a request router has two halves:

1. **Draining mark (controller -> router).** Before deleting a serving pod the controller sets the
   pod annotation ``serving.rolloutui.io/draining`` (``controller.core.naming.ANNOTATION_DRAINING``;
   the value is the drain start time). A router must watch pods and stop sending *new* requests to
   a pod that carries it, while letting the requests it already sent finish. When a drain is
   cancelled the controller removes the annotation and the pod is routable again.

2. **In-flight counts (router -> controller).** The router keeps, per pod, the number of requests
   sent to it that have not finished (queued ones included) in one Redis hash, as Kthena's router
   does: key ``kthena:on-flight-requests`` (configurable), field ``<namespace>/<pod name>``, value a
   decimal integer. The router increments when it forwards a request and decrements when the
   response ends; it should delete the field at 0 or when the pod goes away. A missing field (or a
   missing hash) means 0.

The controller deletes a draining pod when its count reaches 0 or ``spec.drain.timeoutSeconds``
passes, whichever comes first. The requests still counted when the timeout deletes the pod are
interrupted: the controller records them as a Warning Event ``RequestsInterrupted`` on the
ModelServing and in the audit (``KubernetesCluster.report_interrupted``).

Failures are answered on the safe side: when Redis is unreachable or a value is not a number, the
pod is reported busy (1 request), so the drain waits (bounded by its timeout) instead of cutting
requests off on a guess; the problem is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from controller.core.ports import Obj

log = logging.getLogger(__name__)

DEFAULT_KEY = "kthena:on-flight-requests"


class RedisInFlightRouter:
    """In-flight counts from a Redis hash.

    ``client``: a ``redis.Redis`` (tests, shared pools), or ``url`` (e.g. ``$REDIS_URL``).
    ``key``: the hash's key. ``field_format``: how a pod maps to its field.
    """

    def __init__(
        self,
        client: redis.Redis | None = None,
        *,
        url: str | None = None,
        key: str = DEFAULT_KEY,
        field_format: str = "{namespace}/{pod}",
    ):
        if client is None:
            if not url:
                raise ValueError("RedisInFlightRouter needs a redis client or a url (for example $REDIS_URL)")
            # Short timeouts and one retry: the count is read inside a reconcile pass, and a Redis
            # outage must cost that pass about a second per draining pod, not redis-py's default
            # retries with backoff.
            client = redis.Redis.from_url(
                url, socket_timeout=1.0, socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 1)
            )
        self.redis = client
        self.key = key
        self.field_format = field_format

    def field(self, namespace: str, pod_name: str) -> str:
        return self.field_format.format(namespace=namespace, pod=pod_name)

    def in_flight(self, namespace: str, pod_name: str) -> int:
        try:
            value = self.redis.hget(self.key, self.field(namespace, pod_name))
        except redis.RedisError as exc:
            log.warning("in-flight count of %s/%s unavailable (%s); treating the pod as busy", namespace, pod_name, exc)
            return 1
        return self._parse(value, namespace, pod_name)

    def in_flight_many(self, namespace: str, pod_names: Iterable[str]) -> dict[str, int]:
        """Counts for several pods in one round trip (for the dashboard's drain view)."""
        names = list(pod_names)
        if not names:
            return {}
        try:
            values = self.redis.hmget(self.key, [self.field(namespace, name) for name in names])
        except redis.RedisError as exc:
            log.warning("in-flight counts in %s unavailable (%s); treating pods as busy", namespace, exc)
            return dict.fromkeys(names, 1)
        return {name: self._parse(value, namespace, name) for name, value in zip(names, values)}

    def routable_pods(
        self, namespace: str, ms_name: str, pods: list[Obj] | None = None
    ) -> dict[str, float | None] | None:
        """None: this router counts requests and keeps no table of targets (the cluster, the
        EndpointSlices or the embedded traffic, is asked; ``ports.routed_pods``)."""
        return None

    def _parse(self, value: bytes | str | None, namespace: str, pod_name: str) -> int:
        if value is None:
            return 0
        text = value.decode() if isinstance(value, bytes) else str(value)
        try:
            count = int(text.strip())
        except ValueError:
            log.warning(
                "in-flight count of %s/%s is not an integer (%r); treating the pod as busy", namespace, pod_name, text
            )
            return 1
        # A router that decrements twice must not make a pod look "more idle than idle".
        return max(count, 0)
