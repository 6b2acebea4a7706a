"""``KubernetesCluster``: the cluster port (``controller.core.ports.ClusterPort``) on a real API server.

Shapes: every object returned is the API server's JSON as a plain dict (see ``client.call_json``),
the same Kubernetes shapes the simulated cluster stores. Timestamps stay RFC 3339 strings as the
API server writes them (``creationTimestamp``, ``deletionTimestamp``).

Objects:

- ModelServings are custom objects of ``serving.rolloutui.io/v1alpha1`` (CRD in
  ``deploy/crd/``); status goes through the ``status`` subresource.
- Pods of a ModelServing carry the label ``serving.rolloutui.io/name=<ms>``; they are listed by that
  label selector and filtered again client-side (a selector is an optimisation, the label is the
  contract).
- Revisions are ``apps/v1`` ControllerRevisions named ``<ms>-<hash>`` whose ``data`` holds the
  canonical revision data and ``revision`` the number, labelled like pods.
- Owned objects (``ports.OWNED_KINDS``): the headless ``v1`` Service pods resolve through
  (``core.network``) and Volcano's ``scheduling.volcano.sh/v1beta1`` PodGroups (``core.gang``),
  labelled like pods and listed by that label.
- Pods, ControllerRevisions and owned objects get a controller ownerReference to the ModelServing, so deleting the
  ModelServing lets the garbage collector remove them, and a leftover of an earlier ModelServing of
  the same name (other uid) is recognisable.

Errors: the API server's refusals arrive as the port's errors (``client.translate``): 404
``NotFound``, 409 ``Conflict``, 422 ``client.Invalid`` (its ``causes`` name each field, as the
Status' ``details.causes`` did), 403 ``client.Forbidden``. ModelServing creates and patches are
sent with ``fieldValidation=Strict``: a misspelt field (``spec.replica``) is refused naming it,
where the server would otherwise prune it silently and the operator's change would vanish.

Concurrency: ``replace_modelserving_status`` and ``patch_modelserving(resource_version=...)`` send
``metadata.resourceVersion``; the API server answers 409 if the object moved, which raises
``Conflict``. The caller must then re-read the ModelServing and re-plan from fresh state; it must
never retry the same write without the version (that would overwrite a newer spec's status).
"""

from __future__ import annotations

import copy
import datetime
import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any

import kubernetes
import urllib3

from controller.core import naming
from controller.core.ports import PODGROUP, SERVICE, ClusterError, Conflict, NotFound, Obj
from controller.k8s import traffic_routing
from controller.k8s.client import MERGE_PATCH, Forbidden, build_api_client, call_json, raw_json, translate
from controller.k8s.endpoints import EndpointSliceTable

log = logging.getLogger(__name__)

GROUP, VERSION = naming.API_VERSION.split("/")

# How often a read-modify-write of a pod (condition, container images) is retried when the kubelet
# or another writer changed the pod in between. Each retry re-reads, so nothing is overwritten.
POD_WRITE_ATTEMPTS = 5

EVENT_COMPONENT = "rolloutui-controller"


def rfc3339_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# The Events page's kinds of events (``list_events``): one field selector each.
EVENT_SELECTORS = (
    f"involvedObject.kind={naming.KIND}",
    "involvedObject.kind=InferenceService",
    "involvedObject.kind=Pod,type=Warning",
)

# Bounds of what the pod panel reads from the API server.
POD_EVENTS_LIMIT = 200
POD_LOG_MAX_LINES = 1000
POD_LOG_MAX_BYTES = 256 * 1024


def _stamp_seconds(stamp: Any) -> float | None:
    """RFC 3339 (an Event's timestamps, a log line's ``--timestamps`` prefix) -> epoch seconds."""
    if not isinstance(stamp, str) or not stamp:
        return None
    text = stamp.replace("Z", "+00:00")
    head, dot, rest = text.partition(".")
    if dot:  # nanoseconds (the kubelet's log stamps) -> microseconds, which Python reads
        digits = "".join(ch for ch in rest if ch.isdigit())
        text = f"{head}.{digits[:6]}{rest[len(digits) :]}"
    try:
        return datetime.datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


class KubernetesCluster:
    """The cluster port against a Kubernetes API server.

    ``api_client``: an explicit ``kubernetes.client.ApiClient`` (tests, or a caller that configured
    one); when omitted, ``build_api_client()`` reads ``KUBECONFIG``, in-cluster config or
    ``~/.kube/config``. ``on_interrupted(namespace, modelserving, pod, count, reason)``: told of the
    requests a drain timeout cut off (the live app's audit), besides the Event (``report_interrupted``).
    """

    def __init__(
        self,
        api_client: kubernetes.client.ApiClient | None = None,
        *,
        event_component: str = EVENT_COMPONENT,
        on_interrupted: Callable[[str, str, str, int, str], None] | None = None,
    ):
        self.on_interrupted = on_interrupted
        self.api_client = api_client if api_client is not None else build_api_client()
        self.custom = kubernetes.client.CustomObjectsApi(self.api_client)
        self.core = kubernetes.client.CoreV1Api(self.api_client)
        self.apps = kubernetes.client.AppsV1Api(self.api_client)
        self.event_component = event_component
        # uid of each ModelServing as last read, for ownerReferences and event subjects. Refreshed by
        # every get/list (each reconcile pass starts with a get), so a ModelServing deleted and
        # recreated under the same name is picked up by the next pass.
        self._uids: dict[tuple[str, str], str] = {}
        self._uids_lock = threading.Lock()
        # The Routed gate: the pods the ModelServing's Services route to (``endpoints``).
        self.endpoints = EndpointSliceTable(self.api_client)

    # ------------------------------------------------------------------ ModelServings

    def list_modelservings(self, namespace: str | None = None) -> list[Obj]:
        try:
            if namespace is None:
                body = call_json(
                    self.custom.list_cluster_custom_object, GROUP, VERSION, naming.PLURAL, what="list modelservings"
                )
            else:
                body = call_json(
                    self.custom.list_namespaced_custom_object,
                    GROUP,
                    VERSION,
                    namespace,
                    naming.PLURAL,
                    what=f"list modelservings in {namespace}",
                )
        except NotFound as exc:
            # A list is never "not found" unless the resource itself is unknown to the server.
            raise ClusterError(
                f"{exc}; is the ModelServing CRD installed? "
                "kubectl apply -f deploy/crd/modelservings.serving.rolloutui.io.yaml"
            ) from exc
        items = [self._remember(_with_kind(item, naming.API_VERSION, naming.KIND)) for item in body.get("items", [])]
        return items

    def get_modelserving(self, namespace: str, name: str) -> Obj:
        obj = call_json(
            self.custom.get_namespaced_custom_object,
            GROUP,
            VERSION,
            namespace,
            naming.PLURAL,
            name,
            what=f"modelserving {namespace}/{name}",
        )
        return self._remember(obj)

    def read_modelserving(self, namespace: str, name: str) -> Obj:
        return self.get_modelserving(namespace, name)  # a new object decoded from every answer

    def generation_of(self, namespace: str, name: str) -> int:
        """The API server has no cheaper read of one field: the object is read and decoded."""
        return int((self.get_modelserving(namespace, name).get("metadata") or {}).get("generation") or 0)

    def create_modelserving(self, obj: Obj) -> Obj:
        body = copy.deepcopy(obj)
        # A Kthena manifest (workload.serving.volcano.sh) keeps its spec; the cluster stores it
        # under our group, which is the CRD this controller serves.
        body["apiVersion"] = naming.API_VERSION
        body["kind"] = naming.KIND
        meta = body.setdefault("metadata", {})
        # Like kubectl without -n, and like the simulated cluster's stores.
        namespace = meta.setdefault("namespace", "default")
        if not meta.get("name"):
            # A refused write, as the API server's 422 would be (callers handle ClusterError).
            raise ClusterError("create modelserving: metadata.name: Required value")
        for server_owned in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"):
            meta.pop(server_owned, None)
        created = call_json(
            self.custom.create_namespaced_custom_object,
            GROUP,
            VERSION,
            namespace,
            naming.PLURAL,
            body,
            field_validation="Strict",
            what=f"create modelserving {namespace}/{meta['name']}",
        )
        return self._remember(created)

    def patch_modelserving(self, namespace: str, name: str, patch: Obj, *, resource_version: str | None = None) -> Obj:
        body = copy.deepcopy(patch)
        if resource_version is not None:
            # A resourceVersion in a merge patch is a precondition: 409 if the object moved.
            body.setdefault("metadata", {})["resourceVersion"] = resource_version
        obj = call_json(
            self.custom.patch_namespaced_custom_object,
            GROUP,
            VERSION,
            namespace,
            naming.PLURAL,
            name,
            body,
            _content_type=MERGE_PATCH,
            field_validation="Strict",
            what=f"patch modelserving {namespace}/{name}",
        )
        return self._remember(obj)

    def replace_modelserving_status(self, namespace: str, name: str, status: Obj, *, resource_version: str) -> Obj:
        """Replace ``status`` wholesale through the status subresource (PUT).

        The API server takes only ``status`` from this body (the spec and metadata stay as stored),
        and checks ``resourceVersion``: a 409 raises ``Conflict``. The caller re-reads and re-plans;
        it never retries blindly, because the spec may have changed under it.
        """
        if not resource_version:
            raise ValueError("replace_modelserving_status needs the resourceVersion the status was computed from")
        body = {
            "apiVersion": naming.API_VERSION,
            "kind": naming.KIND,
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": resource_version},
            "status": status,
        }
        obj = call_json(
            self.custom.replace_namespaced_custom_object_status,
            GROUP,
            VERSION,
            namespace,
            naming.PLURAL,
            name,
            body,
            what=f"status of modelserving {namespace}/{name}",
        )
        return self._remember(obj)

    def delete_modelserving(self, namespace: str, name: str) -> None:
        # Background propagation: the garbage collector removes owned pods and revisions after the
        # ModelServing is gone, so the call returns at once.
        call_json(
            self.custom.delete_namespaced_custom_object,
            GROUP,
            VERSION,
            namespace,
            naming.PLURAL,
            name,
            propagation_policy="Background",
            what=f"delete modelserving {namespace}/{name}",
        )
        with self._uids_lock:
            self._uids.pop((namespace, name), None)

    # ------------------------------------------------------------------ Pods

    def list_pods(self, namespace: str, ms_name: str) -> list[Obj]:
        body = call_json(
            self.core.list_namespaced_pod,
            namespace,
            label_selector=f"{naming.LABEL_NAME}={ms_name}",
            what=f"list pods of {namespace}/{ms_name}",
        )
        return _items_of(body, ms_name, "v1", "Pod")

    def get_pod(self, namespace: str, name: str) -> Obj:
        return _with_kind(
            call_json(self.core.read_namespaced_pod, name, namespace, what=f"pod {namespace}/{name}"), "v1", "Pod"
        )

    def list_events(self, *, limit: int = 500) -> list[Obj]:
        """core/v1 Events about workloads in every namespace, newest first (the API server keeps
        them an hour by default): those of ModelServings and InferenceServices, and the Warnings
        of pods (back-off, failed probes, failed scheduling); each with ``t`` (epoch seconds of its
        last occurrence). A list is in key order, not time order, so each kind is asked for with
        a field selector (at most ``limit`` each) rather than the first ``limit`` of them all."""
        items = []
        for selector in EVENT_SELECTORS:
            body = call_json(
                self.core.list_event_for_all_namespaces,
                field_selector=selector,
                limit=limit,
                what=f"list events ({selector})",
            )
            items += body.get("items", [])
        events = []
        for e in items:
            involved = e.get("involvedObject") or {}
            events.append(
                {
                    "t": _stamp_seconds(e.get("lastTimestamp") or e.get("eventTime") or e.get("firstTimestamp")),
                    "namespace": involved.get("namespace") or (e.get("metadata") or {}).get("namespace") or "",
                    "kind": involved.get("kind") or "",
                    "name": involved.get("name") or "",
                    "type": e.get("type") or "Normal",
                    "reason": e.get("reason") or "",
                    "message": e.get("message") or "",
                    "count": e.get("count") or 1,
                }
            )
        events.sort(key=lambda e: e["t"] or 0.0, reverse=True)
        return events[:limit]

    def pod_events(self, namespace: str, name: str) -> list[Obj]:
        """The pod's core/v1 Events (``involvedObject`` the pod), oldest first (``kubectl describe
        pod``'s list); at most ``POD_EVENTS_LIMIT``. Raises NotFound for an unknown pod."""
        self.get_pod(namespace, name)
        body = call_json(
            self.core.list_namespaced_event,
            namespace,
            field_selector=f"involvedObject.kind=Pod,involvedObject.name={name}",
            limit=POD_EVENTS_LIMIT,
            what=f"events of pod {namespace}/{name}",
        )
        events = [
            {**e, "t": _stamp_seconds(e.get("lastTimestamp") or e.get("eventTime") or e.get("firstTimestamp"))}
            for e in body.get("items", [])
        ]
        events.sort(key=lambda e: e["t"])
        return events

    def pod_log(self, namespace: str, name: str, *, tail: int = 200) -> list[Obj]:
        """The last ``tail`` lines (at most ``POD_LOG_MAX_LINES``, and ``POD_LOG_MAX_BYTES``) of the
        pod's first container, from the API's log endpoint with timestamps; each line
        ``{"t", "time", "line"}``. Raises NotFound."""
        tail = max(0, min(int(tail), POD_LOG_MAX_LINES))
        if not tail:
            return []
        try:
            response = self.core.read_namespaced_pod_log(
                name,
                namespace,
                tail_lines=tail,
                limit_bytes=POD_LOG_MAX_BYTES,
                timestamps=True,
                _preload_content=False,
                _request_timeout=10,
            )
        except kubernetes.client.exceptions.ApiException as exc:
            raise translate(exc, f"log of pod {namespace}/{name}") from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise ClusterError(f"log of pod {namespace}/{name}: cannot reach the API server ({exc})") from exc
        text = response.data.decode("utf-8", errors="replace") if response.data else ""
        out = []
        for raw in text.splitlines()[-tail:]:
            stamp, _, line = raw.partition(" ")
            t = _stamp_seconds(stamp)
            out.append({"t": t, "time": stamp, "line": line} if t else {"t": None, "time": "", "line": raw})
        return out

    def create_pod(self, pod: Obj) -> Obj:
        body = self._owned(pod, "pod")
        body.setdefault("apiVersion", "v1")
        body.setdefault("kind", "Pod")
        body.pop("status", None)  # the kubelet owns status; a create cannot set it
        # Raw JSON, not the V1Pod model: user templates write quantities as numbers
        # (``nvidia.com/gpu: 1``, as most Kthena examples do), which the API server accepts and the
        # client's model refuses; the pod must reach the server exactly as the core built it.
        path = f"/api/v1/namespaces/{body['metadata']['namespace']}/pods"
        return self._create_raw(body, path, "pod", "v1", "Pod")

    def delete_pod(self, namespace: str, name: str, *, uid: str | None = None) -> None:
        """Start graceful termination. With ``uid``, the API server refuses (409 -> ``Conflict``) when a
        different pod now has that name, so a replacement is never deleted by a stale decision."""
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            body["preconditions"] = {"uid": uid}
        call_json(self.core.delete_namespaced_pod, name, namespace, body=body, what=f"delete pod {namespace}/{name}")

    def patch_pod(self, namespace: str, name: str, patch: Obj) -> Obj:
        """JSON merge patch of metadata and spec.

        RFC 7386 replaces lists wholesale, and a pod's containers are a list: a patch naming only
        ``{name, image}`` would replace whole container specs, which the API server rejects (only
        images may change). So when the patch touches ``spec.containers`` or ``spec.initContainers``,
        each entry is merged by name onto the pod's current container and the full list is sent with
        the pod's resourceVersion as a precondition (re-read and retried on a conflict).
        """
        spec_patch = patch.get("spec") or {}
        if not any(key in spec_patch for key in ("containers", "initContainers")):
            return self._merge_patch_pod(namespace, name, patch)
        for attempt in range(POD_WRITE_ATTEMPTS):
            current = self.get_pod(namespace, name)
            body = copy.deepcopy(patch)
            for key in ("containers", "initContainers"):
                if key in spec_patch:
                    body["spec"][key] = _merge_containers(current.get("spec", {}).get(key) or [], spec_patch[key], key)
            body.setdefault("metadata", {})["resourceVersion"] = current["metadata"].get("resourceVersion")
            try:
                return self._merge_patch_pod(namespace, name, body)
            except Conflict:
                log.debug(
                    "pod %s/%s changed during an image patch (attempt %d); re-reading", namespace, name, attempt + 1
                )
        raise Conflict(f"patch pod {namespace}/{name}: still changing after {POD_WRITE_ATTEMPTS} attempts")

    def _merge_patch_pod(self, namespace: str, name: str, body: Obj, *, status: bool = False) -> Obj:
        """A merge patch of the pod, or of its ``pods/status`` subresource."""
        if status:
            patch, what = self.core.patch_namespaced_pod_status, f"status of pod {namespace}/{name}"
        else:
            patch, what = self.core.patch_namespaced_pod, f"patch pod {namespace}/{name}"
        return _with_kind(call_json(patch, name, namespace, body, _content_type=MERGE_PATCH, what=what), "v1", "Pod")

    def set_pod_condition(self, namespace: str, name: str, condition: Obj) -> Obj:
        """Add or replace (by ``type``) one condition in pod status, through ``pods/status``.

        A merge patch replaces the whole ``conditions`` list, so the list is rebuilt from the pod as
        read and written with its resourceVersion as a precondition: a kubelet status update in
        between causes a re-read, never a lost ``Ready`` condition.
        """
        if not condition.get("type") or condition.get("status") not in ("True", "False", "Unknown"):
            raise ValueError(
                f"set_pod_condition: a condition needs a type and status True/False/Unknown, got {condition!r}"
            )
        for attempt in range(POD_WRITE_ATTEMPTS):
            current = self.get_pod(namespace, name)
            conditions = list((current.get("status") or {}).get("conditions") or [])
            new = _api_times(condition)
            for index, old in enumerate(conditions):
                if old.get("type") == new["type"]:
                    if old.get("status") == new["status"] and old.get("lastTransitionTime"):
                        new.setdefault("lastTransitionTime", old["lastTransitionTime"])
                    conditions[index] = {**old, **new}
                    break
            else:
                conditions.append(new)
            for cond in conditions:
                if cond.get("type") == new["type"]:
                    cond.setdefault("lastTransitionTime", rfc3339_now())
            body = {
                "metadata": {"resourceVersion": current["metadata"].get("resourceVersion")},
                "status": {"conditions": conditions},
            }
            try:
                return self._merge_patch_pod(namespace, name, body, status=True)
            except Conflict:
                log.debug(
                    "pod %s/%s changed during a condition write (attempt %d); re-reading", namespace, name, attempt + 1
                )
        raise Conflict(f"status of pod {namespace}/{name}: still changing after {POD_WRITE_ATTEMPTS} attempts")

    # ------------------------------------------------------------------ ControllerRevisions

    def list_revisions(self, namespace: str, ms_name: str) -> list[Obj]:
        body = call_json(
            self.apps.list_namespaced_controller_revision,
            namespace,
            label_selector=f"{naming.LABEL_NAME}={ms_name}",
            what=f"list revisions of {namespace}/{ms_name}",
        )
        return _items_of(body, ms_name, "apps/v1", "ControllerRevision")

    def create_revision(self, revision: Obj) -> Obj:
        body = self._owned(revision, "revision")
        body["apiVersion"] = "apps/v1"
        body["kind"] = "ControllerRevision"
        if "revision" not in body:
            raise ValueError("create_revision: a ControllerRevision needs its revision number")
        # Raw JSON: ``data`` is the core's canonical revision data byte for byte (a RawExtension on
        # the server); the model would validate and re-serialize it.
        path = f"/apis/apps/v1/namespaces/{body['metadata']['namespace']}/controllerrevisions"
        return self._create_raw(body, path, "revision", "apps/v1", "ControllerRevision")

    def annotate_revision(self, namespace: str, name: str, annotations: dict[str, str]) -> Obj:
        return self._patch_revision(namespace, name, {"metadata": {"annotations": dict(annotations)}}, "annotate")

    def set_revision_number(self, namespace: str, name: str, number: int) -> Obj:
        # data is immutable on a ControllerRevision; the number is not (StatefulSet renumbers the same
        # way when an old revision is re-applied).
        return self._patch_revision(namespace, name, {"revision": int(number)}, "renumber")

    def _patch_revision(self, namespace: str, name: str, patch: Obj, verb: str) -> Obj:
        """A merge patch of a ControllerRevision (``verb`` names it in errors: "annotate revision ...")."""
        obj = call_json(
            self.apps.patch_namespaced_controller_revision,
            name,
            namespace,
            patch,
            _content_type=MERGE_PATCH,
            what=f"{verb} revision {namespace}/{name}",
        )
        return _with_kind(obj, "apps/v1", "ControllerRevision")

    def delete_revision(self, namespace: str, name: str) -> None:
        call_json(
            self.apps.delete_namespaced_controller_revision, name, namespace, what=f"delete revision {namespace}/{name}"
        )

    def routable_pods(self, namespace: str, ms_name: str, pods: list[Obj] | None = None) -> dict[str, float | None]:
        """The pods whose address is ready in an EndpointSlice of the ModelServing's Services, with
        since when (``ports.routed_pods``, ``endpoints``). Raises ``ClusterError`` when unreadable."""
        return self.endpoints.routable_pods(namespace, ms_name, pods)

    # ------------------------------------------------------------------ Services, PodGroups

    def list_owned(self, kind: str, namespace: str, ms_name: str) -> list[Obj]:
        selector = f"{naming.LABEL_NAME}={ms_name}"
        what = f"list {kind.lower()}s of {namespace}/{ms_name}"
        if kind == SERVICE:
            body = call_json(self.core.list_namespaced_service, namespace, label_selector=selector, what=what)
        else:
            group, version, plural = _owned_api(kind)
            body = call_json(
                self.custom.list_namespaced_custom_object,
                group,
                version,
                namespace,
                plural,
                label_selector=selector,
                what=what,
            )
        return _items_of(body, ms_name, _owned_api_version(kind), kind)

    def create_owned(self, obj: Obj) -> Obj:
        kind = obj.get("kind") or ""
        body = self._owned(obj, kind.lower())
        body["apiVersion"] = _owned_api_version(kind)
        body.pop("status", None)
        # Raw JSON: a PodGroup's minResources are quantities the core writes as it read them from
        # the pod templates (numbers or strings); the server parses them, a model might not.
        path = _owned_path(kind, body["metadata"]["namespace"])
        return self._create_raw(body, path, kind.lower(), body["apiVersion"], kind)

    def patch_owned(self, kind: str, namespace: str, name: str, patch: Obj) -> Obj:
        what = f"patch {kind.lower()} {namespace}/{name}"
        if kind == SERVICE:
            obj = call_json(
                self.core.patch_namespaced_service, name, namespace, patch, _content_type=MERGE_PATCH, what=what
            )
        else:
            group, version, plural = _owned_api(kind)
            obj = call_json(
                self.custom.patch_namespaced_custom_object,
                group,
                version,
                namespace,
                plural,
                name,
                patch,
                _content_type=MERGE_PATCH,
                what=what,
            )
        return _with_kind(obj, _owned_api_version(kind), kind)

    def delete_owned(self, kind: str, namespace: str, name: str) -> None:
        what = f"delete {kind.lower()} {namespace}/{name}"
        if kind == SERVICE:
            call_json(self.core.delete_namespaced_service, name, namespace, what=what)
        else:
            group, version, plural = _owned_api(kind)
            call_json(self.custom.delete_namespaced_custom_object, group, version, namespace, plural, name, what=what)

    # ------------------------------------------------------------------ Events

    def record_event(self, namespace: str, ms_name: str, *, reason: str, message: str, type: str = "Normal") -> None:
        """A core/v1 Event about the ModelServing (``kubectl describe msv`` shows it).

        Best effort like client-go's recorder: an Event that cannot be written is logged and
        dropped, never failing the reconcile pass that emitted it.
        """
        now = rfc3339_now()
        with self._uids_lock:
            uid = self._uids.get((namespace, ms_name))
        involved = {"apiVersion": naming.API_VERSION, "kind": naming.KIND, "name": ms_name, "namespace": namespace}
        if uid:
            involved["uid"] = uid
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            # Unique per emission, in the style client-go uses (<object>.<unique suffix>).
            "metadata": {"name": f"{ms_name}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
            "involvedObject": involved,
            "reason": reason,
            "message": message[:1024],
            "type": type,
            "source": {"component": self.event_component},
            "reportingComponent": self.event_component,
            "reportingInstance": self.event_component,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            raw_json(
                self.api_client,
                "POST",
                f"/api/v1/namespaces/{namespace}/events",
                body=event,
                what=f"event on {namespace}/{ms_name}",
            )
        except ClusterError as exc:
            log.warning("could not record event %s on %s/%s: %s", reason, namespace, ms_name, exc)

    def report_interrupted(self, namespace: str, ms_name: str, pod: str, count: int, reason: str) -> None:
        """Requests the router still had in flight on ``pod`` when it was deleted (``reason``: the
        drain timeout) were cut off: a Warning Event ``RequestsInterrupted`` on the ModelServing
        (``kubectl describe msv`` shows it) and ``on_interrupted`` (the audit). The simulated clusters
        count what they cut off themselves; on Kubernetes the count is the router's in-flight figure
        the pass read (``controller.k8s.router``). Best effort, like every Event."""
        self.record_event(
            namespace,
            ms_name,
            reason="RequestsInterrupted",
            message=f"{count} request(s) in flight on {pod} were interrupted ({reason})",
            type="Warning",
        )
        if self.on_interrupted is not None:
            try:
                self.on_interrupted(namespace, ms_name, pod, count, reason)
            except Exception:  # the audit is best effort; the Event is written
                log.exception("could not report %d interrupted requests on %s/%s", count, namespace, pod)

    def route_canary_weight(self, namespace: str, name: str, status: Obj) -> None:
        """The canary weight of ``status`` written into the HTTPRoute the canary's
        ``trafficRouting.gatewayAPI`` names, with its two backends (``traffic_routing.sync``);
        nothing when there is no weight to route. Raises ``ClusterError`` when a write fails."""
        traffic_routing.sync(self, namespace, name, status)

    # ------------------------------------------------------------------ ConfigMaps

    def read_configmap_data(self, namespace: str, name: str) -> dict[str, str] | None:
        """The ``data`` of a ConfigMap, or None when it does not exist. The controller reads its
        cluster settings this way (``controller.runtime.clustersettings``); RBAC grants both
        accounts ``get`` on that one ConfigMap only (``deploy/rbac.yaml``)."""
        try:
            body = call_json(
                self.core.read_namespaced_config_map, name, namespace, what=f"configmap {namespace}/{name}"
            )
        except NotFound:
            return None
        return {str(k): str(v) for k, v in (body.get("data") or {}).items()}

    # ------------------------------------------------------------------ KServe workload objects
    # The reads of ``controller.simcluster.workloads.WorkloadStore`` the KServe read side and the
    # InferenceService controls use (``controller.runtime.kserve``, ``rolloutui.services.kserve.controls``):
    # InferenceServices, the Deployments and ReplicaSets KServe made and their pods, the
    # ``inferenceservice-config`` ConfigMap; writes are merge patches of an InferenceService (the
    # controls) or a Deployment's ``spec.paused``. Nothing is created or deleted here: KServe does that.

    def list_objects(self, kind: str, namespace: str | None = None, *, owner: str | None = None) -> list[Obj]:
        """Objects of ``kind`` in name order; with ``owner``, those whose controller ownerReference
        names it. A list of InferenceServices on a cluster without KServe's CRD is empty."""
        api_version, path = _workload_path(kind, namespace)
        try:
            body = raw_json(self.api_client, "GET", path, what=f"list {kind.lower()}s")
        except NotFound:
            if kind == KSERVE_KIND:
                return []  # KServe is not installed: no InferenceService to show
            raise
        except Forbidden as exc:
            if kind == KSERVE_KIND and owner is None:
                # The ServiceAccount was not granted InferenceServices (deploy/rbac.yaml before
                # issue 13): the ModelServing list must still work.
                log.warning("cannot list InferenceServices (%s); showing none", exc)
                return []
            raise
        items = [_with_kind(item, api_version, kind) for item in body.get("items", [])]
        if owner is not None:
            items = [i for i in items if _controller_name(i) == owner]
        return sorted(items, key=lambda i: ((i.get("metadata") or {}).get("namespace", ""), i["metadata"]["name"]))

    def get_object(self, kind: str, namespace: str, name: str) -> Obj:
        api_version, path = _workload_path(kind, namespace, name)
        return _with_kind(
            raw_json(self.api_client, "GET", path, what=f"{kind.lower()} {namespace}/{name}"), api_version, kind
        )

    def patch_object(
        self, kind: str, namespace: str, name: str, patch: Obj, *, resource_version: str | None = None
    ) -> Obj:
        """A JSON merge patch; ``resource_version`` is sent in the patch as a precondition (409 ->
        ``Conflict`` when the object moved)."""
        if kind not in PATCHABLE_WORKLOADS:
            raise ValueError(
                f"patch_object: {kind} is not changed by the product (only {', '.join(PATCHABLE_WORKLOADS)})"
            )
        body = copy.deepcopy(patch)
        if resource_version is not None:
            body.setdefault("metadata", {})["resourceVersion"] = resource_version
        api_version, path = _workload_path(kind, namespace, name)
        out = raw_json(
            self.api_client,
            "PATCH",
            path,
            body=body,
            content_type=MERGE_PATCH,
            what=f"patch {kind.lower()} {namespace}/{name}",
        )
        return _with_kind(out, api_version, kind)

    def list_controlled_pods(self, namespace: str, controller: str) -> list[Obj]:
        """Pods whose controller ownerReference names ``controller`` (a ReplicaSet)."""
        body = call_json(self.core.list_namespaced_pod, namespace, what=f"list pods in {namespace}")
        pods = [_with_kind(p, "v1", "Pod") for p in body.get("items", []) if _controller_name(p) == controller]
        return sorted(pods, key=lambda p: p["metadata"]["name"])

    # ------------------------------------------------------------------ helpers

    def _create_raw(self, body: Obj, path: str, noun: str, api_version: str, kind: str) -> Obj:
        """POST ``body`` as raw JSON to ``path``: the created object, as ``api_version``/``kind``
        (``noun`` names it in errors: "create pod ns/name")."""
        meta = body["metadata"]
        created = raw_json(
            self.api_client, "POST", path, body=body, what=f"create {noun} {meta['namespace']}/{meta.get('name')}"
        )
        return _with_kind(created, api_version, kind)

    def _remember(self, obj: Obj) -> Obj:
        meta = obj.get("metadata") or {}
        if meta.get("uid") and meta.get("name"):
            with self._uids_lock:
                self._uids[(meta.get("namespace", ""), meta["name"])] = meta["uid"]
        return obj

    def _owner_uid(self, namespace: str, ms_name: str) -> str:
        with self._uids_lock:
            uid = self._uids.get((namespace, ms_name))
        if uid:
            return uid
        uid = self.get_modelserving(namespace, ms_name).get("metadata", {}).get("uid")
        if not uid:
            raise ClusterError(f"modelserving {namespace}/{ms_name} has no metadata.uid; cannot own objects")
        return uid

    def _owned(self, obj: Obj, what: str) -> Obj:
        """A copy of ``obj`` with its namespace checked and a controller ownerReference to its
        ModelServing (found by the name label) added unless the caller already set one."""
        body = copy.deepcopy(obj)
        meta = body.setdefault("metadata", {})
        namespace = meta.get("namespace")
        ms_name = (meta.get("labels") or {}).get(naming.LABEL_NAME)
        if not namespace or not meta.get("name"):
            raise ValueError(f"create {what}: metadata.name and metadata.namespace are required")
        if not ms_name:
            raise ValueError(
                f"create {what} {namespace}/{meta['name']}: label {naming.LABEL_NAME} is required; "
                "without it the controller would never list the object again"
            )
        refs = list(meta.get("ownerReferences") or [])
        if not any(ref.get("controller") for ref in refs):
            refs.append(
                {
                    "apiVersion": naming.API_VERSION,
                    "kind": naming.KIND,
                    "name": ms_name,
                    "uid": self._owner_uid(namespace, ms_name),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            )
        meta["ownerReferences"] = refs
        for server_owned in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
            meta.pop(server_owned, None)
        return body


# Volcano's PodGroup (volcano.sh/apis scheduling/v1beta1).
PODGROUP_API = ("scheduling.volcano.sh", "v1beta1", "podgroups")


def _owned_api(kind: str) -> tuple[str, str, str]:
    if kind == PODGROUP:
        return PODGROUP_API
    raise ValueError(f"kind {kind!r} is not one the controller owns")


def _owned_api_version(kind: str) -> str:
    if kind == SERVICE:
        return "v1"
    group, version, _ = _owned_api(kind)
    return f"{group}/{version}"


def _owned_path(kind: str, namespace: str) -> str:
    if kind == SERVICE:
        return f"/api/v1/namespaces/{namespace}/services"
    group, version, plural = _owned_api(kind)
    return f"/apis/{group}/{version}/namespaces/{namespace}/{plural}"


def _api_times(condition: Obj) -> Obj:
    """The condition with its times as the API server requires them (RFC 3339 strings).

    The core speaks clock seconds (epoch seconds on a real cluster); a pod condition's
    ``lastTransitionTime``/``lastProbeTime`` is a ``metav1.Time``, and a number there is refused.
    """
    out = dict(condition)
    for key in ("lastTransitionTime", "lastProbeTime"):
        value = out.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = datetime.datetime.fromtimestamp(value, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return out


KSERVE_KIND = "InferenceService"
# kind -> (apiVersion, plural) of the workload objects read for KServe.
WORKLOAD_RESOURCES = {
    KSERVE_KIND: ("serving.kserve.io/v1beta1", "inferenceservices"),
    "Deployment": ("apps/v1", "deployments"),
    "ReplicaSet": ("apps/v1", "replicasets"),
    "ConfigMap": ("v1", "configmaps"),
}
# What the product patches: an InferenceService (the controls, a release) and a Deployment's spec.paused.
PATCHABLE_WORKLOADS = (KSERVE_KIND, "Deployment")


def _workload_path(kind: str, namespace: str | None, name: str | None = None) -> tuple[str, str]:
    """(apiVersion, REST path): ``/apis/apps/v1/namespaces/default/deployments/llm-predictor``."""
    try:
        api_version, plural = WORKLOAD_RESOURCES[kind]
    except KeyError:
        raise ValueError(f"unknown workload kind {kind!r} (known: {', '.join(WORKLOAD_RESOURCES)})") from None
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    path = f"{base}/namespaces/{namespace}/{plural}" if namespace else f"{base}/{plural}"
    return api_version, f"{path}/{name}" if name else path


def _controller_name(obj: Obj) -> str | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref.get("name")
    return None


def _items_of(body: Obj, ms_name: str, api_version: str, kind: str) -> list[Obj]:
    """The items of a list answer that carry the ModelServing's name label (a label selector
    answered by a server that ignored it must not leak another workload's objects)."""
    return [
        _with_kind(item, api_version, kind)
        for item in body.get("items", [])
        if (item.get("metadata", {}).get("labels") or {}).get(naming.LABEL_NAME) == ms_name
    ]


def _with_kind(obj: Obj, api_version: str, kind: str) -> Obj:
    # Items of a list response carry no apiVersion/kind on a real API server; set them so every
    # object the core sees is self-describing, like the simulator's.
    obj.setdefault("apiVersion", api_version)
    obj.setdefault("kind", kind)
    return obj


def _merge_containers(current: list[Obj], patched: list[Obj], key: str) -> list[Obj]:
    by_name = {c.get("name"): c for c in current}
    unknown = [c.get("name") for c in patched if c.get("name") not in by_name]
    if unknown:
        raise ValueError(f"patch_pod: spec.{key} names containers the pod does not have: {unknown}")
    merged = [copy.deepcopy(c) for c in current]
    index = {c.get("name"): i for i, c in enumerate(merged)}
    for change in patched:
        merged[index[change["name"]]].update(change)
    return merged
