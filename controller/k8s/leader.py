"""``LeaseElector``: leader election on a ``coordination.k8s.io/v1`` Lease.

Several web and worker replicas may run; only the leader may act on the cluster (run the watch and
the reconcile passes that write). The protocol is client-go's ``leaderelection`` with a Lease lock:

- The Lease ``spec`` holds ``holderIdentity``, ``leaseDurationSeconds``, ``acquireTime``,
  ``renewTime`` and ``leaseTransitions``.
- A candidate acquires the Lease when it does not exist (create), when it has no holder (released),
  or when the holder's ``renewTime + leaseDurationSeconds`` lies in the past (expired). It never
  takes over a Lease that is still valid.
- The holder renews every ``retry_period`` by writing ``renewTime``.
- Every write is a PUT carrying the Lease's ``resourceVersion``: when two candidates race, the API
  server accepts one write and answers the other with 409, so at most one wins.
- ``is_leader()`` is true only while the last successful renewal is younger than
  ``renew_deadline`` (< ``lease_duration``), so a leader cut off from the API server stops acting
  before anybody else may take over.
- ``stop()`` releases the Lease (empty holder), so a successor does not wait for expiry.

Expiry is judged from ``renewTime`` and the local clock, so clocks must be roughly in sync (NTP);
``lease_duration`` should be well above the expected skew.
"""

from __future__ import annotations

import datetime
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import kubernetes

from controller.core.ports import ClusterError, Conflict, NotFound
from controller.k8s.client import call_json, raw_json

log = logging.getLogger(__name__)


def to_microtime(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def from_microtime(value: str | None) -> float | None:
    if not value:
        return None
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def default_identity() -> str:
    # Pod name (the hostname in a pod) plus a random suffix: two processes in one pod, or a restarted
    # process, never mistake each other's Lease for their own.
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4().hex[:8]}"


class LeaseElector:
    """Leader election for one ``namespace``/``name`` Lease.

    Use ``try_acquire_or_renew()`` for one step (tests, or a caller with its own loop), or
    ``start()`` / ``stop()`` for a background thread renewing every ``retry_period`` seconds.
    ``on_started_leading`` / ``on_stopped_leading`` are called from that thread on transitions.
    """

    def __init__(
        self,
        api_client: kubernetes.client.ApiClient,
        namespace: str,
        name: str = "rolloutui-controller",
        *,
        identity: str | None = None,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        clock: Callable[[], float] = time.time,
        on_started_leading: Callable[[], None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
    ):
        if not 0 < retry_period < renew_deadline < lease_duration or lease_duration < 1:
            raise ValueError(
                "leader election needs 0 < retry_period < renew_deadline < lease_duration, and "
                "lease_duration >= 1 s (the Lease stores whole seconds)"
            )
        self.api = kubernetes.client.CoordinationV1Api(api_client)
        self.namespace = namespace
        self.name = name
        self.identity = identity or default_identity()
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.clock = clock
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self._last_renew: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._was_leader = False
        # time.monotonic() when the renewal loop last completed an attempt (successful or not).
        self.last_attempt: float | None = None

    # ------------------------------------------------------------------ state

    def is_leader(self) -> bool:
        return self._last_renew is not None and self.clock() - self._last_renew < self.renew_deadline

    def holder(self) -> str | None:
        """The identity in the Lease as stored now (None if no Lease or released)."""
        try:
            lease = self._read()
        except NotFound:
            return None
        return (lease.get("spec") or {}).get("holderIdentity") or None

    # ------------------------------------------------------------------ one step

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True if this candidate holds the Lease afterwards."""
        now = self.clock()
        try:
            lease = self._read()
        except NotFound:
            return self._create(now)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        if holder and holder != self.identity:
            renewed = from_microtime(spec.get("renewTime")) or from_microtime(spec.get("acquireTime")) or 0.0
            duration = spec.get("leaseDurationSeconds") or self.lease_duration
            if renewed + duration > now:
                self._last_renew = None
                return False  # someone else holds a valid Lease
        if holder == self.identity:
            acquire = spec.get("acquireTime") or to_microtime(now)
            transitions = spec.get("leaseTransitions") or 0
        else:
            acquire = to_microtime(now)
            transitions = (spec.get("leaseTransitions") or 0) + 1
            log.info("taking over lease %s/%s from %r", self.namespace, self.name, holder or None)
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {**_identity_meta(lease), "resourceVersion": lease["metadata"].get("resourceVersion")},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": int(self.lease_duration),
                "acquireTime": acquire,
                "renewTime": to_microtime(now),
                "leaseTransitions": transitions,
            },
        }
        try:
            self._write("PUT", body)
        except Conflict:
            self._last_renew = None
            return False  # another candidate wrote first; look again next period
        self._last_renew = now
        return True

    def release(self) -> None:
        """Give the Lease up if we hold it, so a successor takes over at once."""
        self._last_renew = None
        try:
            lease = self._read()
        except NotFound:
            return
        spec = lease.get("spec") or {}
        if spec.get("holderIdentity") != self.identity:
            return
        now = to_microtime(self.clock())
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {**_identity_meta(lease), "resourceVersion": lease["metadata"].get("resourceVersion")},
            # client-go's release: empty holder, 1 s duration, transitions kept.
            "spec": {**spec, "holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": now, "acquireTime": now},
        }
        try:
            self._write("PUT", body)
        except ClusterError as exc:
            log.warning("could not release lease %s/%s: %s", self.namespace, self.name, exc)

    # ------------------------------------------------------------------ loop

    def start(self) -> LeaseElector:
        self._thread = threading.Thread(target=self._loop, name=f"lease-{self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float | None = None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.release()
        self._transition()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.try_acquire_or_renew()
            except ClusterError as exc:
                # Not renewed this period; is_leader() turns False once renew_deadline passes.
                log.warning("lease %s/%s: %s", self.namespace, self.name, exc)
            self._transition()
            self.last_attempt = time.monotonic()
            self._stop.wait(self.retry_period)

    def running(self, max_silence: float) -> bool:
        """The renewal thread is alive and completed an attempt within ``max_silence`` seconds."""
        return (
            self._thread is not None
            and self._thread.is_alive()
            and self.last_attempt is not None
            and time.monotonic() - self.last_attempt <= max_silence
        )

    def _transition(self) -> None:
        leading = self.is_leader()
        if leading == self._was_leader:
            return
        self._was_leader = leading
        callback = self.on_started_leading if leading else self.on_stopped_leading
        log.info(
            "lease %s/%s: %s is %s", self.namespace, self.name, self.identity, "leading" if leading else "not leading"
        )
        if callback is not None:
            try:
                callback()
            except Exception:  # noqa: BLE001 - a callback must not end the election loop
                log.exception("leader election callback failed")

    # ------------------------------------------------------------------ API

    @property
    def _what(self) -> str:
        return f"lease {self.namespace}/{self.name}"

    def _read(self) -> dict[str, Any]:
        return call_json(self.api.read_namespaced_lease, self.name, self.namespace, what=self._what)

    def _write(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        # Raw JSON: the Lease model would reformat the MicroTimes (see client.raw_json).
        path = f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases"
        if method == "PUT":
            path += f"/{self.name}"
        return raw_json(self.api.api_client, method, path, body=body, what=self._what)

    def _create(self, now: float) -> bool:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": int(self.lease_duration),
                "acquireTime": to_microtime(now),
                "renewTime": to_microtime(now),
                "leaseTransitions": 0,
            },
        }
        try:
            self._write("POST", body)
        except Conflict:
            return False  # created by another candidate in between
        self._last_renew = now
        return True


def _identity_meta(lease: dict[str, Any]) -> dict[str, Any]:
    meta = lease.get("metadata") or {}
    return {"name": meta.get("name"), "namespace": meta.get("namespace")}
