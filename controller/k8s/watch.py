"""``ClusterWatcher``: one shared watch of ModelServings and their pods feeding the reconcile queue.

Run it once per cluster (in the worker Deployment, next to the leader election), never per browser
or per request. Every event is mapped to the ModelServing it concerns, ``(namespace, name)``, and
handed to ``enqueue``; the Celery wiring passes a function that sends the reconcile task. The
reconcile pass is level-triggered, so a duplicate or coalesced enqueue is harmless and a missed
one is repaired by the periodic resync.

Each stream (ModelServings, pods) runs in its own thread:

1. LIST (enqueue every item: anything may have changed while nobody watched), remember the list's
   ``resourceVersion``;
2. WATCH from it with ``kubernetes.watch.Watch``, tracking the version of the last event;
3. the stream ends (server timeout) -> watch again from the last version;
   410 Gone (the version was compacted away; an ERROR event with code 410 or an ``ApiException``
   410) -> back to 1, a fresh LIST;
   a lost connection or any other error -> wait (exponential backoff with jitter, capped) and watch
   again from the last version.

A ModelServing event whose ``metadata.generation`` did not move (a status write, typically the
controller's own) is not enqueued, as in Kthena; pod events always are.

``stop()`` sets a ``threading.Event`` and shuts the open streams' sockets, so the threads end at
once rather than after the read timeout (``idle_timeout``).
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import kubernetes
import urllib3
from kubernetes.client.exceptions import ApiException

from controller.core import naming
from controller.k8s.client import DEFAULT_TIMEOUT

log = logging.getLogger(__name__)

GROUP, VERSION = naming.API_VERSION.split("/")

Enqueue = Callable[[str, str], None]


class WatchExpired(Exception):
    """The watch's resourceVersion is too old (HTTP 410 Gone): relist."""


class ClusterWatcher:
    """Watches ModelServings and pods (all namespaces, or one) and calls ``enqueue(ns, name)``.

    ``api_client``: a ``kubernetes.client.ApiClient``. ``namespace``: ``None`` for the whole cluster.
    ``backoff``: (first, max) seconds between reconnect attempts. ``idle_timeout``: read timeout of a
    watch connection; a quiet stream is re-opened after it (this also bounds how long ``stop`` takes).
    No ``timeoutSeconds`` is sent: with it ``Watch`` stops retrying and would swallow a 410 instead
    of raising it; the read timeout recycles quiet streams instead.
    """

    def __init__(
        self,
        api_client: kubernetes.client.ApiClient,
        enqueue: Enqueue,
        *,
        namespace: str | None = None,
        backoff: tuple[float, float] = (0.5, 30.0),
        idle_timeout: float = 60.0,
    ):
        self.api_client = api_client
        self.enqueue = enqueue
        self.namespace = namespace
        self.backoff = backoff
        self.idle_timeout = idle_timeout
        self.custom = kubernetes.client.CustomObjectsApi(api_client)
        self.core = kubernetes.client.CoreV1Api(api_client)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._watches: dict[str, kubernetes.watch.Watch] = {}
        # Last generation seen per ModelServing: status-only updates are not enqueued.
        self._generations: dict[tuple[str, str], Any] = {}
        self._generations_lock = threading.Lock()
        # Newest resourceVersion seen per stream: where a broken connection resumes.
        self._resume: dict[str, str | None] = {}
        # Counters, for health endpoints and tests: how often each stream listed and (re)connected.
        self.stats: dict[str, dict[str, int]] = {
            kind: {"lists": 0, "watches": 0, "errors": 0, "expired": 0, "events": 0}
            for kind in ("modelservings", "pods")
        }
        # time.monotonic() of each stream's last sign of progress (a list, a connect, an event, a
        # quiet stream's read timeout, a reconnect attempt): what ``healthy()`` judges.
        self.last_activity: dict[str, float] = {}

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> ClusterWatcher:
        for kind in ("modelservings", "pods"):
            thread = threading.Thread(target=self._run, args=(kind,), name=f"watch-{kind}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self, timeout: float | None = None) -> None:
        self._stop.set()
        # A stream being (re)opened right now is not stoppable yet (Watch.stream resets its stop
        # flag when it starts), so keep stopping whatever streams exist until the threads end.
        deadline = None if timeout is None else time.monotonic() + timeout
        while any(t.is_alive() for t in self._threads):
            for w in list(self._watches.values()):
                w.stop()
            if deadline is not None and time.monotonic() >= deadline:
                break
            for thread in self._threads:
                thread.join(0.05)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def healthy(self, max_silence: float | None = None) -> bool:
        """Every stream thread is alive and made progress within ``max_silence`` seconds.

        A working stream shows progress at least every ``idle_timeout`` (a quiet stream's read
        times out and is re-opened) plus one backoff wait and one connect. Default:
        idle_timeout + max backoff + 30 s, e.g. 60 + 30 + 30 = 120 s.
        """
        if max_silence is None:
            max_silence = self.idle_timeout + self.backoff[1] + 30.0
        if not self._threads or not all(t.is_alive() for t in self._threads):
            return False
        now = time.monotonic()
        return all(now - self.last_activity.get(kind, float("-inf")) <= max_silence for kind in self.stats)

    def _progress(self, kind: str) -> None:
        self.last_activity[kind] = time.monotonic()

    def run_forever(self) -> None:
        """Start and block until ``stop()`` (for a dedicated process, e.g. a management command)."""
        self.start()
        self._stop.wait()
        self.stop()

    # ------------------------------------------------------------------ one stream

    def _list_fn(self, kind: str) -> Callable[..., Any]:
        if kind == "modelservings":
            if self.namespace is None:
                return lambda **kw: self.custom.list_cluster_custom_object(GROUP, VERSION, naming.PLURAL, **kw)
            return lambda **kw: self.custom.list_namespaced_custom_object(
                GROUP, VERSION, self.namespace, naming.PLURAL, **kw
            )
        if self.namespace is None:
            return self.core.list_pod_for_all_namespaces
        return lambda **kw: self.core.list_namespaced_pod(self.namespace, **kw)

    def _selector(self, kind: str) -> dict[str, str]:
        # Only pods the controller made carry the name label; the server-side selector keeps a busy
        # cluster's other pods off the wire (and the mapping below ignores them anyway).
        return {"label_selector": naming.LABEL_NAME} if kind == "pods" else {}

    def _run(self, kind: str) -> None:
        self._resume[kind] = None
        delay = self.backoff[0]
        while not self._stop.is_set():
            self._progress(kind)
            try:
                if self._resume[kind] is None:
                    self._resume[kind] = self._relist(kind)
                self._watch(kind, self._resume[kind])
                delay = self.backoff[0]  # a stream that worked resets the backoff
            except WatchExpired:
                self.stats[kind]["expired"] += 1
                log.info("watch of %s expired (410 Gone); relisting", kind)
                self._resume[kind] = None
            except (ApiException, urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
                if self._stop.is_set():
                    break
                if isinstance(exc, urllib3.exceptions.ReadTimeoutError):
                    continue  # a quiet stream: re-open it at once from the same version
                self.stats[kind]["errors"] += 1
                wait = delay * (0.5 + random.random() / 2)
                log.warning("watch of %s failed (%s: %s); reconnecting in %.1fs", kind, type(exc).__name__, exc, wait)
                self._stop.wait(wait)
                delay = min(delay * 2, self.backoff[1])

    def _relist(self, kind: str) -> str | None:
        self.stats[kind]["lists"] += 1
        # Raw JSON, not models: only names, labels and the version are needed, and a model would
        # refuse fields it does not know.
        response = self._list_fn(kind)(**self._selector(kind), _preload_content=False, _request_timeout=DEFAULT_TIMEOUT)
        listing = json.loads(response.data) if response.data else {}
        for item in listing.get("items", []):
            if kind == "modelservings":
                self._spec_changed(item)  # remember its generation
            self._dispatch(kind, item)
        return (listing.get("metadata") or {}).get("resourceVersion") or None

    def _watch(self, kind: str, resource_version: str | None) -> None:
        """Stream events until the stream ends, recording the newest version in ``_resume``."""
        self.stats[kind]["watches"] += 1
        # return_type "object": events stay plain dicts, and Watch still tracks each event's
        # resourceVersion, which it needs to resume after a clean end and to tell a repeated 410
        # (raised as ApiException) from a first one (retried once by Watch itself).
        w = kubernetes.watch.Watch(return_type="object")
        self._watches[kind] = w
        kwargs: dict[str, Any] = {
            **self._selector(kind),
            "allow_watch_bookmarks": True,
            "_request_timeout": (DEFAULT_TIMEOUT[0], self.idle_timeout),
        }
        if resource_version:
            kwargs["resource_version"] = resource_version
        try:
            for event in w.stream(self._list_fn(kind), **kwargs):
                if self._stop.is_set():
                    break
                raw = event.get("raw_object") or {}
                if event.get("type") == "ERROR":  # only when Watch did not turn it into an exception
                    if raw.get("code") == 410:
                        raise WatchExpired(raw.get("message", "410 Gone"))
                    raise ApiException(status=raw.get("code", 500), reason=raw.get("message"))
                version = (raw.get("metadata") or {}).get("resourceVersion")
                if version:
                    self._resume[kind] = version
                self._progress(kind)
                if event.get("type") == "BOOKMARK":
                    continue
                self.stats[kind]["events"] += 1
                if kind == "modelservings" and event.get("type") == "MODIFIED" and not self._spec_changed(raw):
                    continue
                self._dispatch(kind, raw)
        except ApiException as exc:
            if exc.status == 410:
                raise WatchExpired(str(exc.reason)) from exc
            raise
        finally:
            self._watches.pop(kind, None)

    # ------------------------------------------------------------------ mapping

    def _spec_changed(self, ms: dict[str, Any]) -> bool:
        """Whether a ModelServing's generation moved since we last saw it.

        Status writes (the controller's own, after every pass that changes something) do not bump
        ``metadata.generation``; enqueueing them would make every pass trigger another one. Spec
        changes do bump it. As in Kthena, only those enqueue; the periodic resync covers the rest.
        """
        meta = ms.get("metadata") or {}
        key = (meta.get("namespace") or "", meta.get("name") or "")
        generation = meta.get("generation")
        with self._generations_lock:
            previous = self._generations.get(key)
            self._generations[key] = generation
        return generation is None or generation != previous

    def _dispatch(self, kind: str, obj: dict[str, Any]) -> None:
        key = owner_of(obj) if kind == "pods" else _ns_name(obj)
        if key is None:
            return
        try:
            self.enqueue(*key)
        except Exception:  # noqa: BLE001 - a failing enqueue must not kill the shared watch
            log.exception("enqueue of %s/%s failed", *key)


def _ns_name(obj: dict[str, Any]) -> tuple[str, str] | None:
    meta = obj.get("metadata") or {}
    if not meta.get("name"):
        return None
    return meta.get("namespace") or "", meta["name"]


def owner_of(pod: dict[str, Any]) -> tuple[str, str] | None:
    """The ModelServing ``(namespace, name)`` a pod belongs to: its name label, else its controller
    ownerReference of kind ModelServing; ``None`` for pods that are not ours."""
    meta = pod.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    name = (meta.get("labels") or {}).get(naming.LABEL_NAME)
    if name:
        return namespace, name
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") == naming.KIND and ref.get("apiVersion", "").startswith(naming.API_GROUP + "/"):
            return namespace, ref.get("name")
    return None
