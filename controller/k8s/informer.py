"""An informer-style cache of the controller's pods: one LIST, then a WATCH from its version.

``Informer`` keeps every object of one collection (by default the pods carrying the
``serving.rolloutui.io/name`` label, in every namespace or one) in an in-memory ``Store`` keyed by
``namespace/name``, as client-go's informers do:

1. LIST (the store becomes exactly the list: objects whose ``resourceVersion`` did not move keep
   their decoded object, the others are replaced, those gone are removed), remember the list's
   ``resourceVersion``;
2. WATCH from it with ``allowWatchBookmarks``; every ADDED / MODIFIED / DELETED event is applied
   to the store, a BOOKMARK only moves the version the stream resumes from;
3. the stream ends (server timeout, a quiet stream's read timeout) -> watch again from the last
   version; 410 Gone (the version was compacted) -> back to 1; a lost connection or another error
   -> wait (exponential backoff with jitter, capped) and watch again from the last version.

What a reconcile pass gains (``CachedKubernetesCluster.list_pods``): no LIST of the ModelServing's
pods per pass (at 32,000 pods a LIST is tens of MB of JSON to decode), and the list it gets is a
``ports.SharedObjects``: an object is replaced only when an event changed it, so an unchanged pod is
the same object pass after pass and ``observe`` compares the list with the previous one by identity,
as on the embedded cluster. Nobody may mutate the objects the store hands out.

Consistency (a pass must see the writes of the previous one, which may have run in another worker
process with its own cache): the cached adapter records the ``resourceVersion`` of every pod write it
makes per ModelServing (``WrittenVersions``: in this process, or in Redis for every worker process,
``RedisWrittenVersions``), and a list of a ModelServing's pods waits (up to ``wait_seconds``) until
the stream has applied an event or bookmark at least as new as that ModelServing's newest write;
events arrive in version order, so the store then holds that write. If the stream does not catch up
in time, the versions cannot be read, or versions are not numbers, the list is read from the API
server as without the cache. The store is a value the process (``controller.runtime.backend``) owns
and hands to every adapter it builds, never a module global.

Memory: the decoded pods (a few kB each: ~100-150 MB at 32,000 pods) plus an index per
ModelServing (two lists of references, name order). RBAC: ``list`` and ``watch`` on pods (the
controller's role has both, ``deploy/rbac.yaml``).
"""

from __future__ import annotations

import bisect
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import kubernetes
import urllib3
from kubernetes.client.exceptions import ApiException

from controller.core import naming
from controller.core.ports import ClusterError, SharedObjects
from controller.k8s.client import DEFAULT_TIMEOUT, call_json
from controller.k8s.cluster import KubernetesCluster, _with_kind

try:  # the controller's JSON decoder where installed (a LIST of 32,000 pods decodes ~2x faster)
    import orjson

    _loads: Callable[[bytes], Any] = orjson.loads
except ImportError:  # pragma: no cover - orjson is a dependency of the app
    _loads = json.loads

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (namespace, name)


class WatchExpired(Exception):
    """The watch's resourceVersion is too old (HTTP 410 Gone): relist."""


def _version(obj: dict[str, Any]) -> int | None:
    """The object's resourceVersion as a number, None when it is not one (versions are opaque to
    clients; every API server backed by etcd issues integers, and then they order events)."""
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion"))
    except (TypeError, ValueError):
        return None


class _Bucket:
    """The objects of one index value (one ModelServing's pods), in name order."""

    __slots__ = ("names", "objects")

    def __init__(self) -> None:
        self.names: list[str] = []
        self.objects: list[dict[str, Any]] = []

    def put(self, name: str, obj: dict[str, Any]) -> None:
        i = bisect.bisect_left(self.names, name)
        if i < len(self.names) and self.names[i] == name:
            self.objects[i] = obj
        else:
            self.names.insert(i, name)
            self.objects.insert(i, obj)

    def remove(self, name: str) -> None:
        i = bisect.bisect_left(self.names, name)
        if i < len(self.names) and self.names[i] == name:
            del self.names[i]
            del self.objects[i]


class Store:
    """Objects by ``(namespace, name)``, indexed by ``(namespace, <index label's value>)``.

    Objects are stored as decoded and never changed: an event replaces the object, so a caller may
    hold one across passes and compare by identity. Thread-safe (the watch thread writes, reconcile
    passes read)."""

    def __init__(self, index_label: str = naming.LABEL_NAME):
        self.index_label = index_label
        self._objects: dict[Key, dict[str, Any]] = {}
        self._index: dict[Key, _Bucket] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._objects)

    def _label(self, obj: dict[str, Any]) -> str | None:
        return ((obj.get("metadata") or {}).get("labels") or {}).get(self.index_label)

    def _unindex(self, key: Key, obj: dict[str, Any]) -> None:
        label = self._label(obj)
        if label is not None:
            bucket = self._index.get((key[0], label))
            if bucket is not None:
                bucket.remove(key[1])
                if not bucket.names:
                    del self._index[(key[0], label)]

    def _put(self, key: Key, obj: dict[str, Any]) -> None:
        old = self._objects.get(key)
        if old is not None and self._label(old) != self._label(obj):
            self._unindex(key, old)
        self._objects[key] = obj
        label = self._label(obj)
        if label is not None:
            bucket = self._index.get((key[0], label))
            if bucket is None:
                bucket = self._index[(key[0], label)] = _Bucket()
            bucket.put(key[1], obj)

    def apply(self, event_type: str, obj: dict[str, Any]) -> None:
        """One watch event. An event older than the object held (by resourceVersion) is ignored."""
        meta = obj.get("metadata") or {}
        key = (meta.get("namespace") or "", meta.get("name") or "")
        with self._lock:
            old = self._objects.get(key)
            if old is not None:
                new_v, old_v = _version(obj), _version(old)
                if new_v is not None and old_v is not None and new_v < old_v:
                    return
                if event_type != "DELETED" and new_v is not None and new_v == old_v:
                    return  # the same version: keep the object handed out
            if event_type == "DELETED":
                if old is not None:
                    self._unindex(key, old)
                    del self._objects[key]
            else:
                self._put(key, obj)

    def replace(self, items: list[dict[str, Any]]) -> None:
        """The store becomes ``items`` (a LIST): an object whose version did not move is kept."""
        with self._lock:
            old = self._objects
            self._objects, self._index = {}, {}
            for obj in items:
                meta = obj.get("metadata") or {}
                key = (meta.get("namespace") or "", meta.get("name") or "")
                held = old.get(key)
                if held is not None and _version(held) is not None and _version(held) == _version(obj):
                    obj = held
                self._put(key, obj)

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self._objects.get((namespace, name))

    def by_index(self, namespace: str, value: str) -> SharedObjects:
        """The objects whose index label is ``value`` in ``namespace``, in name order."""
        with self._lock:
            bucket = self._index.get((namespace, value))
            return SharedObjects(bucket.objects if bucket is not None else ())


class Informer:
    """LIST + WATCH of one collection into a ``Store`` (see the module docstring).

    ``list_fn``: a typed list call of the official client (``CoreV1Api.list_pod_for_all_namespaces``,
    or a lambda over ``list_namespaced_pod``), called with ``label_selector``, ``watch``,
    ``resource_version``, ``allow_watch_bookmarks`` and ``_preload_content=False``.
    ``backoff``: (first, max) seconds between reconnect attempts. ``idle_timeout``: the read timeout
    of a watch connection (a quiet stream is re-opened after it; it also bounds ``stop``).
    """

    def __init__(
        self,
        list_fn: Callable[..., Any],
        *,
        name: str = "pods",
        api_version: str = "v1",
        kind: str = "Pod",
        label_selector: str | None = naming.LABEL_NAME,
        index_label: str = naming.LABEL_NAME,
        backoff: tuple[float, float] = (0.5, 30.0),
        idle_timeout: float = 60.0,
    ):
        self.list_fn = list_fn
        self.name = name
        self.api_version = api_version
        self.kind = kind
        self.label_selector = label_selector
        self.backoff = backoff
        self.idle_timeout = idle_timeout
        self.store = Store(index_label)
        self.stats = {"lists": 0, "watches": 0, "errors": 0, "expired": 0, "events": 0, "bookmarks": 0}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._response: Any = None
        self._synced = threading.Event()
        # Where the stream resumes from (the list's version, then each event's and bookmark's).
        self._resume: str | None = None
        # The newest version the store holds everything up to (a list waits for a write's), and
        # the versions of this process's pod writes (``CachedKubernetesCluster``'s default).
        self._applied = -1
        self.written = WrittenVersions()
        self._progress = threading.Condition()
        self.last_activity = time.monotonic()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Informer:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"informer-{self.name}", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float | None = 10.0) -> None:
        self._stop.set()
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._thread is not None and self._thread.is_alive():
            response = self._response
            if response is not None:
                try:
                    response.shutdown() if hasattr(response, "shutdown") else response.close()
                except Exception:  # noqa: BLE001 - closing a socket being read
                    pass
            if deadline is not None and time.monotonic() >= deadline:
                break
            self._thread.join(0.05)
        with self._progress:
            self._progress.notify_all()

    def wait_synced(self, timeout: float | None = None) -> bool:
        """Whether the first LIST is in the store (waiting up to ``timeout`` seconds)."""
        return self._synced.wait(timeout)

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    def healthy(self, max_silence: float | None = None) -> bool:
        if max_silence is None:
            max_silence = self.idle_timeout + self.backoff[1] + 30.0
        alive = self._thread is not None and self._thread.is_alive()
        return alive and time.monotonic() - self.last_activity <= max_silence

    # ------------------------------------------------------------------ consistency

    def caught_up(self, timeout: float, version: int | None = None) -> bool:
        """Whether the store is synced and holds everything up to ``version`` (waiting up to
        ``timeout`` seconds for the version; a store not synced yet is not waited for)."""
        if not self._synced.is_set() or self._thread is None or not self._thread.is_alive():
            return False  # never synced, or its watch is gone (stopped, or a process forked after start)
        deadline = time.monotonic() + timeout
        wanted = -1 if version is None else version
        with self._progress:
            while not self._stop.is_set():
                if self._synced.is_set() and self._applied >= wanted:
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._progress.wait(remaining)
        return False

    def _applied_to(self, version: str | None) -> None:
        try:
            number = int(version) if version else None
        except ValueError:
            number = None
        with self._progress:
            # Opaque versions prove nothing: a list then waits only for the first LIST.
            if number is not None:
                self._applied = max(self._applied, number)
            self._progress.notify_all()

    # ------------------------------------------------------------------ the stream

    def _run(self) -> None:
        delay = self.backoff[0]
        while not self._stop.is_set():
            self.last_activity = time.monotonic()
            try:
                if self._resume is None:
                    self._resume = self._relist()
                self._watch(self._resume)
                delay = self.backoff[0]
            except WatchExpired:
                self.stats["expired"] += 1
                log.info("watch of %s expired (410 Gone); relisting", self.name)
                self._resume = None
            except (ApiException, urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
                if self._stop.is_set():
                    break
                if isinstance(exc, urllib3.exceptions.ReadTimeoutError):
                    continue  # a quiet stream: re-open it from the same version
                if isinstance(exc, ApiException) and exc.status == 410:
                    self.stats["expired"] += 1
                    self._resume = None
                    continue
                self.stats["errors"] += 1
                wait = delay * (0.5 + random.random() / 2)
                log.warning("informer %s failed (%s: %s); again in %.1fs", self.name, type(exc).__name__, exc, wait)
                self._stop.wait(wait)
                delay = min(delay * 2, self.backoff[1])
            finally:
                self._response = None

    def _selector(self) -> dict[str, Any]:
        return {"label_selector": self.label_selector} if self.label_selector else {}

    def _relist(self) -> str | None:
        self.stats["lists"] += 1
        response = self.list_fn(**self._selector(), _preload_content=False, _request_timeout=DEFAULT_TIMEOUT)
        listing = _loads(response.data) if response.data else {}
        items = listing.get("items") or []
        for item in items:
            _with_kind(item, self.api_version, self.kind)
        self.store.replace(items)
        version = (listing.get("metadata") or {}).get("resourceVersion") or None
        self._synced.set()
        self._applied_to(version)
        return version

    def _lines(self, response: Any) -> Iterator[bytes]:
        buffer = b""
        for chunk in response.stream(amt=None, decode_content=False):
            buffer += chunk
            while True:
                end = buffer.find(b"\n")
                if end < 0:
                    break
                line, buffer = buffer[:end], buffer[end + 1 :]
                if line.strip():
                    yield line

    def _watch(self, resource_version: str | None) -> None:
        self.stats["watches"] += 1
        kwargs: dict[str, Any] = {
            **self._selector(),
            "watch": True,
            "allow_watch_bookmarks": True,
            "_preload_content": False,
            "_request_timeout": (DEFAULT_TIMEOUT[0], self.idle_timeout),
        }
        if resource_version:
            kwargs["resource_version"] = resource_version
        response = self._response = self.list_fn(**kwargs)
        try:
            for line in self._lines(response):
                if self._stop.is_set():
                    return
                event = _loads(line)
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        raise WatchExpired(obj.get("message", "410 Gone"))
                    raise ApiException(status=obj.get("code", 500), reason=obj.get("message"))
                self.last_activity = time.monotonic()
                version = (obj.get("metadata") or {}).get("resourceVersion")
                if kind == "BOOKMARK":
                    self.stats["bookmarks"] += 1
                else:
                    self.stats["events"] += 1
                    self.store.apply(kind, _with_kind(obj, self.api_version, self.kind))
                if version:
                    self._resume = version
                    self._applied_to(version)
        finally:
            response.release_conn()


def pod_informer(api_client: kubernetes.client.ApiClient, *, namespace: str | None = None, **kwargs: Any) -> Informer:
    """An ``Informer`` of the pods the controller made (their name label), in ``namespace`` or all."""
    core = kubernetes.client.CoreV1Api(api_client)
    if namespace is None:
        list_fn: Callable[..., Any] = core.list_pod_for_all_namespaces
    else:

        def list_fn(**kw: Any) -> Any:
            return core.list_namespaced_pod(namespace, **kw)

    return Informer(list_fn, **kwargs)


class WrittenVersions:
    """The newest ``resourceVersion`` written per ModelServing's pods, in this process."""

    def __init__(self) -> None:
        self._versions: dict[Key, int] = {}
        self._lock = threading.Lock()

    def note(self, namespace: str, ms_name: str, version: int) -> None:
        with self._lock:
            key = (namespace, ms_name)
            self._versions[key] = max(self._versions.get(key, -1), version)

    def newest(self, namespace: str, ms_name: str) -> int | None:
        with self._lock:
            return self._versions.get((namespace, ms_name))


class RedisWrittenVersions(WrittenVersions):
    """``WrittenVersions`` shared by every worker process through Redis: one key per ModelServing
    (``<prefix>podwrite:<ns>/<name>``), kept an hour. Passes of one ModelServing never overlap (the
    reconcile lock), so a write's version is the newest when it is stored. A Redis error raises
    ``ClusterError`` from ``newest`` (the list then goes to the API server) and is logged by ``note``."""

    def __init__(self, client: Any, *, prefix: str = "rolloutui:", ttl_seconds: int = 3600):
        super().__init__()
        self.client = client
        self.prefix = prefix
        self.ttl_seconds = ttl_seconds

    def _key(self, namespace: str, ms_name: str) -> str:
        return f"{self.prefix}podwrite:{namespace}/{ms_name}"

    def note(self, namespace: str, ms_name: str, version: int) -> None:
        super().note(namespace, ms_name, version)
        try:
            self.client.set(self._key(namespace, ms_name), str(version), ex=self.ttl_seconds)
        except Exception as exc:  # noqa: BLE001 - redis errors: lists of this process still wait
            log.warning("could not share the pod write version of %s/%s: %s", namespace, ms_name, exc)

    def newest(self, namespace: str, ms_name: str) -> int | None:
        mine = super().newest(namespace, ms_name)
        try:
            shared = self.client.get(self._key(namespace, ms_name))
        except Exception as exc:  # noqa: BLE001
            raise ClusterError(f"cannot read the pod write version of {namespace}/{ms_name}: {exc}") from exc
        try:
            theirs = int(shared) if shared is not None else None
        except ValueError:
            theirs = None
        return max((v for v in (mine, theirs) if v is not None), default=None)


class CachedKubernetesCluster(KubernetesCluster):
    """``KubernetesCluster`` whose ``list_pods`` reads the ``pods`` informer's store.

    ``pods``: a started ``Informer`` (``pod_informer``) the caller owns and may share between the
    adapters it builds (one per reconcile pass in the live app). ``written``: where pod writes'
    versions are recorded per ModelServing (``WrittenVersions``, or ``RedisWrittenVersions`` across
    worker processes); one per process by default. ``wait_seconds``: how long a list waits for the
    store to hold the ModelServing's newest pod write (and the first LIST) before it reads from the
    API server instead. Every other read and every write is the plain adapter's."""

    def __init__(
        self,
        api_client=None,
        *,
        pods: Informer,
        written: WrittenVersions | None = None,
        wait_seconds: float = 2.0,
        **kwargs: Any,
    ):
        super().__init__(api_client, **kwargs)
        self.pods = pods
        self.written = written if written is not None else pods.written
        self.wait_seconds = wait_seconds
        self.cache_misses = 0

    def list_pods(self, namespace: str, ms_name: str) -> list[Any]:
        try:
            newest = self.written.newest(namespace, ms_name)
        except ClusterError as exc:
            log.warning("%s: listing from the API server", exc)
            newest = None
            fresh = False
        else:
            fresh = self.pods.caught_up(self.wait_seconds, newest)
        if fresh:
            return self.pods.store.by_index(namespace, ms_name)
        self.cache_misses += 1
        if newest is not None or not self.pods.synced:
            log.warning(
                "pod cache of %s/%s not caught up (version %s) after %.1fs: listing from the API server",
                namespace,
                ms_name,
                newest,
                self.wait_seconds,
            )
        return super().list_pods(namespace, ms_name)

    def _wrote(self, obj: dict[str, Any]) -> dict[str, Any]:
        version = _version(obj)
        ms_name = ((obj.get("metadata") or {}).get("labels") or {}).get(naming.LABEL_NAME)
        if version is not None and ms_name:
            self.written.note((obj.get("metadata") or {}).get("namespace") or "", ms_name, version)
        return obj

    def create_pod(self, pod: dict[str, Any]) -> dict[str, Any]:
        return self._wrote(super().create_pod(pod))

    def patch_pod(self, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        return self._wrote(super().patch_pod(namespace, name, patch))

    def set_pod_condition(self, namespace: str, name: str, condition: dict[str, Any]) -> dict[str, Any]:
        return self._wrote(super().set_pod_condition(namespace, name, condition))

    def delete_pod(self, namespace: str, name: str, *, uid: str | None = None) -> None:
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            body["preconditions"] = {"uid": uid}
        # The answer is the pod as deleted (or marked for deletion): its version is the write's.
        answer = call_json(
            self.core.delete_namespaced_pod, name, namespace, body=body, what=f"delete pod {namespace}/{name}"
        )
        if answer.get("kind") != "Status":
            self._wrote(answer)
