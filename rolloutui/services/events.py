"""The Events feed: every audit record, every Kubernetes-style event and every notification delivery
the reader may see, across workloads, newest first, in one list (the Events page, ``GET
/api/events/``, the CLI's ``events``).

Place in the flow: ``feed`` reads three sources and merges them by time:

- audit records (``services.audit.search``) of the namespaces the reader may view; account and
  cluster-wide records (no namespace) only for whoever views every namespace, as ``/api/audit/``;
- the cluster's events (``list_events`` of the cluster: the API server's core/v1 Events on
  Kubernetes, the events the controller recorded on the simulated cluster), of those namespaces;
- notification deliveries (``services.notifications``) of the namespaces where the reader may
  operate (as the Notifications page: a viewer sees none).

Each item: ``{"id", "type": "audit"|"event"|"notification", "t" (epoch seconds), "when" (ISO
8601), "namespace", "name", "kind" (ModelServing, InferenceService, ... or ""), "action" (the audit
action, the event's reason, the notification's kind), "who", "level" (ok/error, Normal/Warning,
pending/delivered/failed), "message"}``. Filters are exact; ``since`` keeps only items after that
time (the page polls with the newest time it has); at most ``MAX_LIMIT`` items.
"""

from __future__ import annotations

import datetime
import hashlib
import logging
from typing import Any

from controller.core.ports import ClusterError

from ..models import AuditRecord, NotificationDelivery
from . import access, audit, notifications
from .cluster import get_cluster

log = logging.getLogger(__name__)

VIEW = "rolloutui.view_modelserving"
OPERATE = "rolloutui.operate_modelserving"
TYPES = ("audit", "event", "notification")
DEFAULT_LIMIT = 100
MAX_LIMIT = 500
# How many of the cluster's newest events are read per request (then filtered).
CLUSTER_EVENTS_READ = 1000


def _iso(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.UTC).isoformat()


def _workload_kind(action: str) -> str:
    return "InferenceService" if action.startswith("isvc_") else "ModelServing"


def _audit_item(r: AuditRecord) -> dict[str, Any]:
    t = r.created_at.timestamp()
    return {
        "id": f"audit-{r.pk}",
        "type": "audit",
        "t": t,
        "when": _iso(t),
        "namespace": r.namespace,
        "name": r.name,
        "kind": _workload_kind(r.action) if r.namespace else "",
        "action": r.action,
        "who": r.actor_name,
        "source": r.source,
        "level": r.result,
        "message": r.error if r.result == AuditRecord.Result.ERROR and r.error else r.reason,
    }


def _delivery_item(d: NotificationDelivery) -> dict[str, Any]:
    t = d.created_at.timestamp()
    return {
        "id": f"notification-{d.pk}",
        "type": "notification",
        "t": t,
        "when": _iso(t),
        "namespace": d.namespace,
        "name": d.name,
        "kind": "",
        "action": d.kind,
        "who": f"{d.destination} ({d.host})" if d.host else d.destination,
        "source": d.destination_type,
        "level": d.status,
        "message": d.message + (f" — {d.last_error}" if d.last_error else ""),
    }


def _event_item(e: dict[str, Any]) -> dict[str, Any] | None:
    """A cluster event as a feed item. An event about a pod names the pod's workload when it is known
    (the simulated kubelet's crash warnings: ``workload``, ``workloadKind``); on Kubernetes a pod's
    event names the pod, and ``kind`` says so (the page links only workloads)."""
    t = e.get("wall") or e.get("t")
    if not isinstance(t, (int, float)):
        return None
    key = f"{t}|{e.get('namespace')}|{e.get('name')}|{e.get('reason')}|{e.get('message')}"
    kind, name, message = e.get("kind") or "", e.get("name") or "", e.get("message") or ""
    if kind == "Pod" and e.get("workload"):
        kind, name, message = e.get("workloadKind") or "", e["workload"], f"pod {name}: {message}"
    who = {"ModelServing": "controller", "InferenceService": "controller", "": "controller"}.get(
        e.get("kind") or "", "kubelet" if e.get("kind") == "Pod" else (e.get("kind") or "").lower()
    )
    return {
        "id": "event-" + hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()[:16],
        "type": "event",
        "t": float(t),
        "when": _iso(float(t)),
        "namespace": e.get("namespace") or "",
        "name": name,
        "kind": kind,
        "action": e.get("reason") or "",
        "who": who,
        "source": "cluster",
        "level": e.get("type") or "Normal",
        "message": message,
    }


def _cluster_events() -> list[dict[str, Any]]:
    reader = getattr(get_cluster(), "list_events", None)
    if reader is None:
        return []
    try:
        return reader(limit=CLUSTER_EVENTS_READ)
    except ClusterError as exc:
        log.warning("could not list the cluster's events: %s", exc)
        return []


def feed(
    user,
    *,
    namespace: str | None = None,
    workload: str | None = None,
    action: str | None = None,
    who: str | None = None,
    type: str | None = None,
    since: float | None = None,
    limit: int = DEFAULT_LIMIT,
) -> list[dict[str, Any]]:
    """The items ``user`` may see matching every filter given, newest first (see the module doc).
    ``workload``: a name, or ``namespace/name``."""
    limit = max(1, min(int(limit), MAX_LIMIT))
    if workload and "/" in workload:
        ns, workload = workload.split("/", 1)
        if namespace and ns != namespace:
            return []
        namespace = ns
    viewable = access.namespaces(user, VIEW, audit.namespaces)
    if namespace and viewable is not None and namespace not in viewable:
        return []
    since_dt = datetime.datetime.fromtimestamp(since, datetime.UTC) if since is not None else None
    items: list[dict[str, Any]] = []
    if type in (None, "", "audit"):
        rows = audit.search(namespace=namespace, name=workload, action=action, who=who, within=viewable)
        if since_dt is not None:
            rows = rows.filter(created_at__gt=since_dt)
        items += [_audit_item(r) for r in rows[:limit]]
    if type in (None, "", "event") and (not who or who in ("controller", "kubelet")):
        for e in _cluster_events():
            item = _event_item(e)
            if item is None or (since is not None and item["t"] <= since):
                continue
            if viewable is not None and item["namespace"] not in viewable:
                continue
            if (namespace and item["namespace"] != namespace) or (workload and item["name"] != workload):
                continue
            if (action and item["action"] != action) or (who and item["who"] != who):
                continue
            items.append(item)
    if type in (None, "", "notification") and access.anywhere(user, OPERATE):
        rows = notifications.search(within=access.namespaces(user, OPERATE, notifications.namespaces))
        if namespace:
            rows = rows.filter(namespace=namespace)
        if workload:
            rows = rows.filter(name=workload)
        if action:
            rows = rows.filter(kind=action)
        if since_dt is not None:
            rows = rows.filter(created_at__gt=since_dt)
        found = [_delivery_item(d) for d in rows[:limit]]
        items += [i for i in found if not who or i["who"] == who]
    items.sort(key=lambda i: (i["t"], i["id"]), reverse=True)
    return items[:limit]


def choices(user) -> dict[str, list[str]]:
    """What the page's filters offer: the namespaces, workloads, actions and users of the audit
    records the user may see (the newest few thousand), and the types."""
    viewable = access.namespaces(user, VIEW, audit.namespaces)
    rows = audit.search(within=viewable).exclude(namespace="")
    recent = list(rows.values_list("namespace", "name", "action", "actor_name")[:5000])
    return {
        "namespaces": sorted({r[0] for r in recent}),
        "workloads": sorted({f"{r[0]}/{r[1]}" for r in recent}),
        "actions": sorted({r[2] for r in recent}),
        "users": sorted({r[3] for r in recent if r[3]}),
        "types": list(TYPES),
    }
