"""Canary weights on Kubernetes: two Services (or InferencePools) and a Gateway API HTTPRoute.

A ModelServing whose canary has ``setWeight`` steps and ``canary.trafficRouting.gatewayAPI`` gets,
after every reconcile pass that left a weight in ``status.canary.weight`` (``sync``):

- two backends it owns (controller ownerReference, so they go with the ModelServing), selecting
  the entry pods of one revision by the revision label:

  - ``backendKind: Service`` (the default): ``v1`` Services ``<ms>-stable`` and ``<ms>-canary``,
    port = the entry container's first ``containerPort`` (8000 when none is declared);
  - ``backendKind: InferencePool``: Gateway API Inference Extension pools
    (``inference.networking.k8s.io/v1``) of the same names, ``targetPorts`` the same port and
    ``endpointPickerRef`` the picker the spec names (port 9002 unless given);

- the weights written to the HTTPRoute named in ``gatewayAPI.httpRoute`` (``gateway.networking.k8s.io/v1``),
  in the ModelServing's namespace: the rule written is the first rule whose ``backendRefs``
  already name ``<ms>-stable`` or ``<ms>-canary``, else the route's first rule (a route without
  rules gets one). That rule's ``backendRefs`` become exactly the two backends with weights
  ``100-N`` and ``N``; its matches and filters, the other rules and the ``parentRefs`` are kept.
  A route that does not exist is created with that one rule and no ``parentRefs``, owned by the
  ModelServing: it serves nothing until an operator attaches it to a Gateway.

The write is a merge patch carrying the route's ``resourceVersion`` (a conflict means someone
changed it meanwhile: the next pass reads it again). Nothing is written when the route already
holds the weights. A pass with no weight in the status (no ``setWeight`` step) touches nothing.

Example: ModelServing ``chat``, stable revision ``6d4f``, canary ``9b1c``, weight 10 -> Service
``chat-stable`` selecting ``serving.rolloutui.io/revision=6d4f``, ``chat-canary`` selecting ``9b1c``,
and route ``chat-route``'s first rule: ``backendRefs: [{name: chat-stable, port: 8000, weight: 90},
{name: chat-canary, port: 8000, weight: 10}]``.
"""

from __future__ import annotations

import copy
import datetime
import logging
from typing import Any

from controller.core import naming
from controller.core.canary import TRAFFIC_ROUTING_FIELD, TRAFFIC_ROUTING_REQUIRED, Canary, GatewayAPI
from controller.core.ports import SERVICE, ClusterError, Conflict, NotFound, Obj
from controller.core.revisions import owner_reference
from controller.core.spec import ValidationError, parse_modelserving
from controller.k8s.client import MERGE_PATCH, raw_json

log = logging.getLogger(__name__)

GATEWAY_GROUP, GATEWAY_VERSION = "gateway.networking.k8s.io", "v1"
HTTPROUTE_API_VERSION = f"{GATEWAY_GROUP}/{GATEWAY_VERSION}"
INFERENCE_GROUP, INFERENCE_VERSION = "inference.networking.k8s.io", "v1"
INFERENCEPOOL_API_VERSION = f"{INFERENCE_GROUP}/{INFERENCE_VERSION}"
DEFAULT_PORT = 8000
DEFAULT_PICKER_PORT = 9002  # the endpoint picker's gRPC port in the Inference Extension's examples
STABLE, CANARY = "stable", "canary"


def backend_name(ms_name: str, side: str) -> str:
    """``chat``, ``stable`` -> ``chat-stable``."""
    return f"{ms_name}-{side}"


def serving_port(ms_obj: Obj) -> int:
    """The entry container's first declared containerPort of the first role (8000 when none)."""
    roles = ((ms_obj.get("spec") or {}).get("template") or {}).get("roles") or []
    for role in roles:
        containers = (((role or {}).get("entryTemplate") or {}).get("spec") or {}).get("containers") or []
        for container in containers:
            for port in container.get("ports") or []:
                if isinstance(port.get("containerPort"), int):
                    return port["containerPort"]
    return DEFAULT_PORT


def _selector(ms_name: str, revision: str) -> dict[str, str]:
    return {naming.LABEL_NAME: ms_name, naming.LABEL_REVISION: revision, naming.LABEL_ENTRY: "true"}


def backends(ms_obj: Obj, gateway: GatewayAPI, stable: str, canary: str) -> list[Obj]:
    """The two backend objects (Services or InferencePools) for the stable and canary revisions."""
    meta = ms_obj.get("metadata") or {}
    name, namespace = meta.get("name") or "", meta.get("namespace") or "default"
    port = serving_port(ms_obj)
    out = []
    for side, revision in ((STABLE, stable), (CANARY, canary)):
        obj_meta = {
            "name": backend_name(name, side),
            "namespace": namespace,
            "labels": {naming.LABEL_NAME: name},
            "ownerReferences": [owner_reference(ms_obj)],
        }
        if gateway.backend_kind == "InferencePool":
            picker = gateway.endpoint_picker or {}
            ref = {"name": picker.get("name"), "port": {"number": picker.get("port") or DEFAULT_PICKER_PORT}}
            spec = {
                "selector": {"matchLabels": _selector(name, revision)},
                "targetPorts": [{"number": port}],
                "endpointPickerRef": ref,
            }
            out.append(
                {"apiVersion": INFERENCEPOOL_API_VERSION, "kind": "InferencePool", "metadata": obj_meta, "spec": spec}
            )
        else:
            spec = {
                "selector": _selector(name, revision),
                "ports": [{"name": "http", "port": port, "targetPort": port, "protocol": "TCP"}],
            }
            out.append({"apiVersion": "v1", "kind": SERVICE, "metadata": obj_meta, "spec": spec})
    return out


def backend_refs(ms_obj: Obj, gateway: GatewayAPI, weight: int) -> list[Obj]:
    """The rule's two backendRefs: stable with ``100 - weight``, canary with ``weight``."""
    name = (ms_obj.get("metadata") or {}).get("name") or ""
    refs = []
    for side, share in ((STABLE, 100 - weight), (CANARY, weight)):
        if gateway.backend_kind == "InferencePool":
            refs.append(
                {"group": INFERENCE_GROUP, "kind": "InferencePool", "name": backend_name(name, side), "weight": share}
            )
        else:
            ref = {"group": "", "kind": "Service", "name": backend_name(name, side), "port": serving_port(ms_obj)}
            refs.append({**ref, "weight": share})
    return refs


def rule_index(route: Obj, ms_name: str) -> int:
    """The rule the weights go to (see the module docstring); -1: the route has no rule."""
    rules = (route.get("spec") or {}).get("rules") or []
    ours = {backend_name(ms_name, STABLE), backend_name(ms_name, CANARY)}
    for i, rule in enumerate(rules):
        if any((ref or {}).get("name") in ours for ref in (rule or {}).get("backendRefs") or []):
            return i
    return 0 if rules else -1


def weighted_rules(route: Obj, ms_name: str, refs: list[Obj]) -> list[Obj]:
    """The route's rules with the chosen rule's backendRefs replaced by ``refs``."""
    rules = copy.deepcopy((route.get("spec") or {}).get("rules") or [])
    index = rule_index(route, ms_name)
    if index < 0:
        return [{"backendRefs": refs}]
    rules[index] = {**(rules[index] or {}), "backendRefs": refs}
    return rules


def new_route(ms_obj: Obj, route_name: str, refs: list[Obj]) -> Obj:
    meta = ms_obj.get("metadata") or {}
    return {
        "apiVersion": HTTPROUTE_API_VERSION,
        "kind": "HTTPRoute",
        "metadata": {
            "name": route_name,
            "namespace": meta.get("namespace") or "default",
            "labels": {naming.LABEL_NAME: meta.get("name") or ""},
            "ownerReferences": [owner_reference(ms_obj)],
        },
        "spec": {"rules": [{"backendRefs": refs}]},
    }


# --------------------------------------------------------------------------------- on the cluster


def _route_path(namespace: str, name: str | None = None) -> str:
    base = f"/apis/{GATEWAY_GROUP}/{GATEWAY_VERSION}/namespaces/{namespace}/httproutes"
    return f"{base}/{name}" if name else base


def _pool_path(namespace: str, name: str | None = None) -> str:
    base = f"/apis/{INFERENCE_GROUP}/{INFERENCE_VERSION}/namespaces/{namespace}/inferencepools"
    return f"{base}/{name}" if name else base


def _canary_of(ms_obj: Obj) -> Canary | None:
    try:
        return parse_modelserving(ms_obj).canary
    except ValidationError:
        return None  # an invalid spec: the reconcile pass says why


def sync(cluster: Any, namespace: str, name: str, status: Obj) -> dict[str, Any] | None:
    """Make the cluster route ``status.canary.weight`` (see the module docstring). Returns what it
    wrote (``{"route", "weights", "backends"}``), or None when there is nothing to route."""
    canary_status = (status or {}).get("canary") or {}
    weight = canary_status.get("weight")
    if weight is None or not canary_status.get("stable") or not canary_status.get("revision"):
        return None
    ms_obj = cluster.get_modelserving(namespace, name)
    canary = _canary_of(ms_obj)
    if canary is None or not canary.weighted:
        return None
    if canary.gateway_api is None:
        # Refused at validation on Kubernetes; a manifest applied around it (kubectl) gets a warning
        # Event instead, and its weight steps route nothing.
        _warn_once(cluster, ms_obj, canary_status["revision"], int(weight))
        return None
    gateway = canary.gateway_api
    stable, revision = canary_status["stable"], canary_status["revision"]
    objects = backends(ms_obj, gateway, stable, revision)
    for obj in objects:
        _ensure_backend(cluster, obj)
    refs = backend_refs(ms_obj, gateway, int(weight))
    _write_route(cluster, ms_obj, gateway.http_route, refs)
    return {
        "route": gateway.http_route,
        "weights": [r["weight"] for r in refs],
        "backends": [o["metadata"]["name"] for o in objects],
    }


NO_GATEWAY_API = (
    "the cluster does not serve HTTPRoute (gateway.networking.k8s.io/v1): install the Gateway API CRDs "
    "(and a Gateway implementation) for canary weights"
)
NO_INFERENCE_POOLS = (
    "the cluster does not serve InferencePool (inference.networking.k8s.io/v1): install the Gateway API "
    "Inference Extension's CRDs, or use backendKind Service"
)


def _warn_once(cluster: Any, ms_obj: Obj, revision: str, weight: int) -> None:
    """A Warning Event ``TrafficRoutingMissing`` on the ModelServing, once per canary revision and
    weight: its name is fixed by them, so the API server refuses a repeat (409, ignored) and a pass
    every few seconds does not pile up Events (the controller may only create Events)."""
    meta = ms_obj.get("metadata") or {}
    namespace, name = meta.get("namespace") or "default", meta.get("name") or ""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.trafficroutingmissing.{revision}.{weight}"[:253], "namespace": namespace},
        "involvedObject": {
            "apiVersion": naming.API_VERSION,
            "kind": naming.KIND,
            "name": name,
            "namespace": namespace,
            "uid": meta.get("uid") or "",
        },
        "reason": "TrafficRoutingMissing",
        "message": f"weight {weight}% not routed: {TRAFFIC_ROUTING_FIELD}: {TRAFFIC_ROUTING_REQUIRED}",
        "type": "Warning",
        "source": {"component": getattr(cluster, "event_component", "rolloutui-controller")},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    try:
        raw_json(cluster.api_client, "POST", f"/api/v1/namespaces/{namespace}/events", body=event, what="event")
    except Conflict:
        pass  # said already for this revision and weight
    except ClusterError as exc:
        log.warning("could not record TrafficRoutingMissing on %s/%s: %s", namespace, name, exc)


def _ensure_backend(cluster: Any, wanted: Obj) -> None:
    meta = wanted["metadata"]
    namespace, obj_name = meta["namespace"], meta["name"]
    if wanted["kind"] == SERVICE:
        current = next(
            (
                s
                for s in cluster.list_owned(SERVICE, namespace, meta["labels"][naming.LABEL_NAME])
                if s["metadata"]["name"] == obj_name
            ),
            None,
        )
        if current is None:
            try:
                cluster.create_owned(wanted)
            except Conflict:
                pass  # a pass that raced this one made it
        elif any((current.get("spec") or {}).get(k) != v for k, v in wanted["spec"].items() if k == "selector"):
            cluster.patch_owned(SERVICE, namespace, obj_name, {"spec": {"selector": wanted["spec"]["selector"]}})
        return
    api = cluster.api_client
    what = f"inferencepool {namespace}/{obj_name}"
    try:
        current = raw_json(api, "GET", _pool_path(namespace, obj_name), what=what)
    except NotFound:
        try:
            raw_json(api, "POST", _pool_path(namespace), body=wanted, what=f"create {what}")
        except NotFound:
            raise NotFound(f"{what}: {NO_INFERENCE_POOLS}") from None
        return
    if (current.get("spec") or {}) != wanted["spec"]:
        raw_json(
            api,
            "PATCH",
            _pool_path(namespace, obj_name),
            body={"spec": wanted["spec"]},
            content_type=MERGE_PATCH,
            what=f"patch inferencepool {namespace}/{obj_name}",
        )


def _write_route(cluster: Any, ms_obj: Obj, route_name: str, refs: list[Obj]) -> None:
    meta = ms_obj.get("metadata") or {}
    namespace, ms_name = meta.get("namespace") or "default", meta.get("name") or ""
    api = cluster.api_client
    what = f"httproute {namespace}/{route_name}"
    try:
        route = raw_json(api, "GET", _route_path(namespace, route_name), what=what)
    except NotFound:
        try:
            raw_json(
                api, "POST", _route_path(namespace), body=new_route(ms_obj, route_name, refs), what=f"create {what}"
            )
        except NotFound:
            raise NotFound(f"{what}: {NO_GATEWAY_API}") from None
        return
    rules = weighted_rules(route, ms_name, refs)
    if rules == ((route.get("spec") or {}).get("rules") or []):
        return  # already routed so
    patch = {"metadata": {"resourceVersion": route["metadata"]["resourceVersion"]}, "spec": {"rules": rules}}
    raw_json(
        api, "PATCH", _route_path(namespace, route_name), body=patch, content_type=MERGE_PATCH, what=f"patch {what}"
    )
