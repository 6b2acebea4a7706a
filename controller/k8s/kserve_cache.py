"""A watch-fed cache of KServe's InferenceServices and their Deployments (``WorkloadCache``).

The InferenceService page, its API and the periodic passes (``controller.runtime.kserve``) read an
InferenceService and its Deployments for every request and every pass; on Kubernetes each read was
a GET or LIST to the API server. ``WorkloadCache`` keeps both collections in memory with the
informer of the pod cache (``controller.k8s.informer.Informer``: one LIST, then WATCH from its
version with bookmarks, 410 Gone -> relist, reconnects with backoff): InferenceServices in every
namespace (or one), and the Deployments KServe labels ``serving.kserve.io/inferenceservice``.

``CachedWorkloadCluster`` is the Kubernetes adapter with those two kinds read from the cache once
it has listed them (before that, and for every other kind, from the API server as before). A patch
of an InferenceService or a Deployment (the controls) waits, up to ``wait_seconds``, until the
cache holds the version the API server answered, so a read right after a control sees it.

``on_change(namespace, name)`` is called from the watch threads with the InferenceService an event
concerns (an InferenceService's own, or the one a Deployment's label names): the caller passes a
function that tells the InferenceService's open pages (``publish.publish_inferenceservice``), so
the page follows the cluster without waiting for the 30-second resync. It must not raise.

The cache is a value its owner (the process: ``controller.runtime.backend``) creates and passes to
every adapter it builds, never a module global. RBAC: list and watch on InferenceServices and
Deployments (``deploy/rbac.yaml`` grants get and list; watch is needed too).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import kubernetes

from controller.core.kserve.materialize import LABEL_ISVC
from controller.k8s.cluster import KubernetesCluster, _controller_name
from controller.k8s.informer import Informer, Store, _version

log = logging.getLogger(__name__)

KSERVE_GROUP, KSERVE_VERSION, KSERVE_PLURAL = "serving.kserve.io", "v1beta1", "inferenceservices"
INFERENCESERVICE, DEPLOYMENT = "InferenceService", "Deployment"
OnChange = Callable[[str, str], None]


class _ListingStore(Store):
    """A ``Store`` that can list everything it holds and says which InferenceService changed."""

    def __init__(self, index_label: str, concerns: Callable[[dict[str, Any]], tuple[str, str] | None]):
        super().__init__(index_label)
        self.concerns = concerns
        self.on_change: OnChange | None = None

    def items(self, namespace: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            found = [o for (ns, _), o in self._objects.items() if namespace is None or ns == namespace]
        return sorted(found, key=lambda o: ((o.get("metadata") or {}).get("namespace", ""), o["metadata"]["name"]))

    def _notify(self, obj: dict[str, Any]) -> None:
        key = self.concerns(obj)
        if key is None or self.on_change is None:
            return
        try:
            self.on_change(*key)
        except Exception:  # noqa: BLE001 - a failing notification must not stop the watch
            log.exception("notifying a change of inferenceservice %s/%s failed", *key)

    def apply(self, event_type: str, obj: dict[str, Any]) -> None:
        super().apply(event_type, obj)
        self._notify(obj)

    def replace(self, items: list[dict[str, Any]]) -> None:
        super().replace(items)
        for obj in items:  # anything may have changed while nobody watched
            self._notify(obj)


def _own_name(obj: dict[str, Any]) -> tuple[str, str] | None:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta["name"]) if meta.get("name") else None


def _labelled_isvc(obj: dict[str, Any]) -> tuple[str, str] | None:
    meta = obj.get("metadata") or {}
    name = (meta.get("labels") or {}).get(LABEL_ISVC)
    return (meta.get("namespace") or "", name) if name else None


class WorkloadCache:
    """Informers of InferenceServices and of KServe's Deployments (see the module docstring)."""

    def __init__(
        self,
        api_client: kubernetes.client.ApiClient,
        *,
        namespace: str | None = None,
        on_change: OnChange | None = None,
        backoff: tuple[float, float] = (0.5, 30.0),
        idle_timeout: float = 60.0,
    ):
        custom = kubernetes.client.CustomObjectsApi(api_client)
        apps = kubernetes.client.AppsV1Api(api_client)
        if namespace is None:

            def list_isvcs(**kw: Any) -> Any:
                return custom.list_cluster_custom_object(KSERVE_GROUP, KSERVE_VERSION, KSERVE_PLURAL, **kw)

            list_deployments: Callable[..., Any] = apps.list_deployment_for_all_namespaces
        else:

            def list_isvcs(**kw: Any) -> Any:
                return custom.list_namespaced_custom_object(
                    KSERVE_GROUP, KSERVE_VERSION, namespace, KSERVE_PLURAL, **kw
                )

            def list_deployments(**kw: Any) -> Any:
                return apps.list_namespaced_deployment(namespace, **kw)

        common = {"backoff": backoff, "idle_timeout": idle_timeout}
        self.informers: dict[str, Informer] = {
            INFERENCESERVICE: Informer(
                list_isvcs,
                name="inferenceservices",
                api_version=f"{KSERVE_GROUP}/{KSERVE_VERSION}",
                kind=INFERENCESERVICE,
                label_selector=None,
                **common,
            ),
            DEPLOYMENT: Informer(
                list_deployments,
                name="kserve-deployments",
                api_version="apps/v1",
                kind=DEPLOYMENT,
                label_selector=LABEL_ISVC,
                index_label=LABEL_ISVC,
                **common,
            ),
        }
        concerns = {INFERENCESERVICE: _own_name, DEPLOYMENT: _labelled_isvc}
        for kind, informer in self.informers.items():
            store = _ListingStore(informer.store.index_label, concerns[kind])
            store.on_change = on_change
            informer.store = store

    def start(self) -> WorkloadCache:
        for informer in self.informers.values():
            informer.start()
        return self

    def stop(self, timeout: float | None = 10.0) -> None:
        for informer in self.informers.values():
            informer.stop(timeout)

    def wait_synced(self, timeout: float | None = None) -> bool:
        return all(informer.wait_synced(timeout) for informer in self.informers.values())

    def synced(self, kind: str) -> bool:
        informer = self.informers.get(kind)
        return informer is not None and informer.synced

    def store(self, kind: str) -> _ListingStore:
        store = self.informers[kind].store
        assert isinstance(store, _ListingStore)
        return store


class CachedWorkloadCluster(KubernetesCluster):
    """``KubernetesCluster`` reading InferenceServices and their Deployments from a
    ``WorkloadCache`` once it has listed them; every other read and every write is the plain
    adapter's. ``wait_seconds``: how long a patch waits for the cache to hold its answer."""

    def __init__(self, api_client=None, *, workloads: WorkloadCache, wait_seconds: float = 2.0, **kwargs: Any):
        super().__init__(api_client, **kwargs)
        self.workloads = workloads
        self.wait_seconds = wait_seconds

    def list_objects(self, kind: str, namespace: str | None = None, *, owner: str | None = None) -> list[Any]:
        if not self.workloads.synced(kind):
            return super().list_objects(kind, namespace, owner=owner)
        items = self.workloads.store(kind).items(namespace)
        if owner is not None:
            items = [i for i in items if _controller_name(i) == owner]
        return items

    def get_object(self, kind: str, namespace: str, name: str) -> Any:
        if self.workloads.synced(kind):
            found = self.workloads.store(kind).get(namespace, name)
            if found is not None:
                return found
        # Not listed yet, or just created and not in the cache yet (a miss costs one GET).
        return super().get_object(kind, namespace, name)

    def patch_object(self, kind: str, namespace: str, name: str, patch: Any, *, resource_version=None) -> Any:
        answer = super().patch_object(kind, namespace, name, patch, resource_version=resource_version)
        informer = self.workloads.informers.get(kind)
        if informer is not None and not informer.caught_up(self.wait_seconds, _version(answer)):
            log.warning(
                "the %s cache did not reach %s/%s's patch within %.1fs", kind, namespace, name, self.wait_seconds
            )
        return answer
