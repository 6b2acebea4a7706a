"""Read side of the dashboard: list rows, the live state view, the manifest, pods, revisions, diffs,
progress history."""

from __future__ import annotations

from typing import Any

from controller.core import naming
from controller.core.controls import ControlError
from controller.core.listing import ms_summary
from controller.core.ports import NotFound
from controller.core.revisions import History, diff
from controller.core.spec import headline, runtime_fields
from controller.runtime.simulator import get_simulator
from controller.runtime.state import StateRead, current_state, in_flight_of
from controller.runtime.state import read_state as _read_state

from . import audit, masking
from .cluster import get_cluster, get_router

VIEW = "rolloutui.view_modelserving"
OPERATE = "rolloutui.operate_modelserving"


def list_summaries(
    *,
    namespace: str | None = None,
    search: str | None = None,
    phase: str | None = None,
    within: set[str] | None = None,
) -> list[dict[str, Any]]:
    """Compact rows (namespace, name, phase, replicas, ready, updated, desired, currentRevision,
    updateRevision, paused, strategyType), sorted by namespace and name.

    On the simulated backend the rows are the ``summary`` column the store keeps at write time
    (``SimulatorPort.list_summaries``): listing 1,000 ModelServings reads 1,000 small JSON values,
    never their pods or full status. On Kubernetes they are ``controller.core.listing.ms_summary``
    of the listed objects.
    ``search`` matches a substring of ``namespace/name`` (case-insensitive). ``within``: only these
    namespaces (what the user may view, ``access.namespaces``); None for every namespace.
    """
    if within is not None and namespace and namespace not in within:
        return []
    simulator = get_simulator()
    if simulator is not None:
        rows = simulator.list_summaries(namespace or None, within)
    else:
        rows = [ms_summary(obj) for obj in get_cluster().list_modelservings(namespace or None)]
        if within is not None:
            rows = [r for r in rows if r["namespace"] in within]
        rows.sort(key=lambda r: (r["namespace"], r["name"]))
    if search:
        needle = search.strip().lower()
        rows = [r for r in rows if needle in f"{r['namespace']}/{r['name']}".lower()]
    if phase:
        rows = [r for r in rows if r.get("phase") == phase]
    return rows


def modelserving_namespaces() -> set[str]:
    """The namespaces that hold a ModelServing (what a list may show)."""
    simulator = get_simulator()
    if simulator is not None:
        return simulator.modelserving_namespaces()
    return {(obj.get("metadata") or {}).get("namespace", "") for obj in get_cluster().list_modelservings(None)}


def get_state(namespace: str, name: str) -> dict[str, Any]:
    """``controller.core.view.build_view`` of the live objects (the REST GET and websocket payload).
    Raises ``NotFound``."""
    return current_state(namespace, name)


def read_state(namespace: str, name: str) -> StateRead:
    """``get_state`` with the manifest and the observed pods it was built from (the detail page
    derives its probe advice from them). Raises ``NotFound``."""
    return _read_state(namespace, name)


def get_manifest(namespace: str, name: str, *, user=None) -> dict[str, Any]:
    """The ModelServing object as stored, without its status (which the state carries). Secret-looking
    env values are masked unless ``user`` may operate in the namespace (``masking``). Raises ``NotFound``."""
    obj = get_cluster().get_modelserving(namespace, name)
    manifest = {k: v for k, v in obj.items() if k != "status"}
    return masking.mask_for(user, namespace, manifest)


def list_pods(
    namespace: str, name: str, *, group: int | None = None, role: str | None = None, ordinal: int | None = None
) -> list[dict[str, Any]]:
    """The pods of one ModelServing (``pod_summary`` each), optionally only those of one group, role
    and/or role instance ordinal, sorted by group, role, role ordinal and pod index.

    The in-flight counts of the selected pods come from the router in one call (one Redis round trip
    with the Redis router), not one per pod. Raises ``NotFound``.
    """
    cluster = get_cluster()
    cluster.get_modelserving(namespace, name)  # NotFound for an unknown ModelServing, even with no pods
    wanted = {
        naming.LABEL_GROUP_ORDINAL: group,
        naming.LABEL_ROLE: role,
        naming.LABEL_ROLE_ORDINAL: ordinal,
    }
    wanted = {label: str(value) for label, value in wanted.items() if value is not None}
    pods = [
        pod
        for pod in cluster.list_pods(namespace, name)
        if all(((pod.get("metadata") or {}).get("labels") or {}).get(k) == v for k, v in wanted.items())
    ]
    in_flight = in_flight_of(get_router(), namespace, pods)
    rows = [pod_summary(pod, in_flight.get(pod["metadata"]["name"], 0)) for pod in pods]
    rows.sort(
        key=lambda p: (int(p["group"] or 0), p["role"] or "", int(p["roleOrdinal"] or 0), int(p["podIndex"] or 0))
    )
    return rows


def _condition(pod: dict[str, Any], ctype: str) -> str | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c.get("status")
    return None


def pod_summary(pod: dict[str, Any], in_flight: int) -> dict[str, Any]:
    """What the topology's pod panel shows of one Kubernetes-shaped pod dict."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    statuses = {c.get("name"): c for c in status.get("containerStatuses") or []}
    containers = []
    for c in spec.get("containers") or []:
        st = statuses.get(c.get("name")) or {}
        containers.append(
            {
                "name": c.get("name"),
                "image": c.get("image"),
                "ready": bool(st.get("ready")),
                "restarts": int(st.get("restartCount") or 0),
            }
        )
    gates = [
        {"type": g.get("conditionType"), "status": _condition(pod, g.get("conditionType"))}
        for g in spec.get("readinessGates") or []
    ]
    return {
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "node": spec.get("nodeName"),
        "phase": status.get("phase"),
        "ready": _condition(pod, "Ready") == "True",
        "readinessGates": gates,
        "containers": containers,
        "restarts": sum(c["restarts"] for c in containers),
        "inFlight": int(in_flight),
        "revision": labels.get(naming.LABEL_REVISION),
        "group": labels.get(naming.LABEL_GROUP_ORDINAL),
        "role": labels.get(naming.LABEL_ROLE),
        "roleOrdinal": labels.get(naming.LABEL_ROLE_ORDINAL),
        "podIndex": labels.get(naming.LABEL_POD_INDEX),
        "entry": labels.get(naming.LABEL_ENTRY) == "true",
        "draining": naming.ANNOTATION_DRAINING in annotations,
        "deleting": bool(meta.get("deletionTimestamp")),
        "podIP": status.get("podIP"),
    }


def list_revisions(namespace: str, name: str) -> list[dict[str, Any]]:
    """The history, oldest first: number, hash, name, readable, error, created, changeCause, plus
    ``current`` / ``update`` flags from the ModelServing's status. Raises ``NotFound``."""
    cluster = get_cluster()
    ms = cluster.get_modelserving(namespace, name)
    status = ms.get("status") or {}
    out = []
    for rev in History.from_objects(cluster.list_revisions(namespace, name)).revisions:
        item = rev.to_json()
        item["current"] = rev.hash == status.get("currentRevision")
        item["update"] = rev.hash == status.get("updateRevision")
        out.append(item)
    return out


def revision_diff(namespace: str, name: str, from_number: int, to_number: int, *, user=None) -> dict[str, Any]:
    """Field-level diff of two revisions' versioned fields (``core.revisions.diff``).

    Runtime fields (replicas, budgets, partition, paused) are not part of any revision, so they are
    shown apart, as the current values, under ``runtime``. An unknown or unreadable revision is a
    ``ControlError`` naming ``from`` or ``to``. Secret-looking env values are masked unless ``user``
    may operate in the namespace.
    """
    cluster = get_cluster()
    ms = cluster.get_modelserving(namespace, name)
    history = History.from_objects(cluster.list_revisions(namespace, name))
    picked = {}
    for field, number in (("from", from_number), ("to", to_number)):
        rev = history.by_number(int(number)) if not isinstance(number, bool) and isinstance(number, int) else None
        if rev is None:
            listed = ", ".join(str(r.number) for r in history.revisions) or "none"
            # A rollback re-numbers the revision rolled back to as the newest (ControllerRevision
            # semantics): say which number the asked one has now rather than that it is gone.
            was = audit.former_numbers(namespace, name).get(number) if isinstance(number, int) else None
            moved = history.get(was)
            if moved is not None:
                raise ControlError(
                    f"revision {number} is now number {moved.number} (hash {moved.hash}): a rollback re-listed it "
                    f"as the newest; use {moved.number} (revisions: {listed})",
                    field=field,
                )
            raise ControlError(f"revision {number!r} does not exist (revisions: {listed})", field=field)
        if rev.data is None:
            raise ControlError(f"revision {number} cannot be read ({rev.error})", field=field)
        picked[field] = rev
    changes = diff(picked["from"].data, picked["to"].data)
    return {
        "from": picked["from"].to_json(),
        "to": picked["to"].to_json(),
        "changes": changes if masking.reveals(user, namespace) else masking.mask_changes(changes),
        "runtime": {
            "note": "runtime fields are not versioned: a rollback keeps them; these are the current values",
            **runtime_fields(ms),
        },
    }


def progress_history(
    namespace: str, name: str, *, since: float | None = None, limit: int = 3600
) -> list[dict[str, Any]]:
    """The sampled progress points for the charts, oldest first (see ``controller.tasks.progress_point``).
    Raises ``NotFound`` for an unknown ModelServing (its samples may outlive it)."""
    from controller.models import ProgressSample

    obj = get_cluster().get_modelserving(namespace, name)

    rows = ProgressSample.objects.filter(namespace=namespace, name=name)
    # The history starts when this ModelServing did: samples of an earlier one of the same name
    # (deleted and applied again) are not its history. Example: created at 1000.0, samples at 900
    # (its predecessor, all Ready) and 1001 (0 Ready, coming up) -> only 1001 is returned.
    created = _seconds((obj.get("metadata") or {}).get("creationTimestamp"))
    if created is not None:
        rows = rows.filter(t__gte=created - 1.0)
    if since is not None:
        rows = rows.filter(t__gt=since)
    newest = list(rows.order_by("-t").values_list("data", flat=True)[:limit])
    newest.reverse()
    return newest


DEFAULT_POINTS = 600


def history_range(
    namespace: str,
    name: str,
    *,
    start: float | None = None,
    end: float | None = None,
    rollout: bool = False,
    points: int = DEFAULT_POINTS,
) -> dict[str, Any]:
    """The stored progress points between ``start`` and ``end`` (cluster seconds; None: open), at
    most ``points`` of them: a longer run is downsampled on the server to the last point of each of
    ``points`` equal time buckets (the charts draw steps, so the last value of a bucket is the one
    that held at its end). ``rollout``: from the first point of the newest revision rolled out (the
    trailing run of points with the newest ``updateRevision``) instead of ``start``.

    Returns ``{"points", "from", "to", "stored": {"from", "to"} (the whole stored history),
    "downsampled": bool}``. Reads at most the stored samples of one ModelServing (the sampler keeps
    ``controller.runtime.progress.MAX_SAMPLES``). Raises ``NotFound``."""
    from controller.models import ProgressSample

    obj = get_cluster().get_modelserving(namespace, name)
    rows = ProgressSample.objects.filter(namespace=namespace, name=name)
    created = _seconds((obj.get("metadata") or {}).get("creationTimestamp"))
    if created is not None:
        rows = rows.filter(t__gte=created - 1.0)
    stored = rows.order_by("t").values_list("t", flat=True)
    first, last = stored.first(), rows.order_by("-t").values_list("t", flat=True).first()
    if rollout and last is not None:
        newest = None
        start = first
        for t, data in rows.order_by("-t").values_list("t", "data").iterator(chunk_size=500):
            revision = (data or {}).get("updateRevision")
            if newest is None:
                newest = revision
            elif revision != newest:
                break
            start = t
    if start is not None:
        rows = rows.filter(t__gte=start)
    if end is not None:
        rows = rows.filter(t__lte=end)
    found = list(rows.order_by("t").values_list("t", "data"))
    downsampled = len(found) > points
    if downsampled:
        lo = start if start is not None else found[0][0]
        hi = end if end is not None else found[-1][0]
        width = max(hi - lo, 1e-9) / points
        kept: dict[int, dict] = {}
        for t, data in found:
            kept[min(points - 1, int((t - lo) / width))] = data  # the last point of each bucket
        chosen = [kept[k] for k in sorted(kept)]
        if found[0][1] is not chosen[0]:
            chosen = [found[0][1], *chosen[1:]] if len(chosen) >= points else [found[0][1], *chosen]
    else:
        chosen = [data for _, data in found]
    return {
        "points": chosen,
        "from": start,
        "to": end,
        "stored": {"from": first, "to": last},
        "downsampled": downsampled,
    }


def _seconds(stamp: Any) -> float | None:
    """RFC 3339 (as creationTimestamp is written) -> epoch seconds, the clocks' unit; None if unreadable."""
    import datetime

    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


DONE, FAILED, PROGRESSING = "done", "failed", "progressing"


def rollout_verdict(obj: dict[str, Any], view: dict[str, Any]) -> dict[str, Any]:
    """Whether the rollout of ``obj`` (the stored ModelServing) is done, has failed, or goes on, and
    why in one line: what ``manage.py rollout status`` waits on (conditions, never a timer).

    - failed: an instance of the update revision is Failed (a crashing image: its pods never get
      Ready), or ``Progressing=False`` with reason ``ProgressDeadlineExceeded``;
    - done: the controller has seen the current spec (``observedGeneration`` = ``generation``) and
      reports it converged (the update revision on every instance outside the partition, all Ready,
      nothing draining);
    - progressing otherwise (paused included: "paused" is said in the message).

    Example: 4 groups, 1 updated and Ready, the rest waiting on the budget -> progressing,
    "1 of 4 groups updated, 3 available".
    """
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    update = status.get("updateRevision")
    for c in status.get("conditions") or []:
        if (
            c.get("type") == "Progressing"
            and c.get("status") == "False"
            and c.get("reason") == "ProgressDeadlineExceeded"
        ):
            return {"verdict": FAILED, "message": f"progress deadline exceeded: {c.get('message') or ''}".strip()}
    failing = [
        i for i in view.get("instances") or [] if i.get("state") == "Failed" and update and i.get("revision") == update
    ]
    if failing:
        first = failing[0]
        return {
            "verdict": FAILED,
            "message": (
                f"instance {first['role']}[{first['ordinal']}] of group {first['group']} on the new revision "
                f"{update} failed" + (f" ({len(failing)} failed instances)" if len(failing) > 1 else "")
            ),
        }
    generation, observed = meta.get("generation"), status.get("observedGeneration")
    head = headline(obj)
    desired = head.replicas
    summary = (
        f"{int(status.get('updatedReplicas') or 0)} of {desired} groups updated, "
        f"{int(status.get('availableReplicas') or 0)} available"
    )
    if generation is not None and observed != generation:
        return {"verdict": PROGRESSING, "message": f"waiting for the controller to observe generation {generation}"}
    if status.get("converged"):
        return {"verdict": DONE, "message": f"rolled out revision {update}: {summary}"}
    waiting = [w.get("reason") for w in status.get("waiting") or [] if w.get("reason")]
    paused = " (paused)" if head.paused else ""
    return {"verdict": PROGRESSING, "message": f"{summary}{paused}" + (f"; waiting: {waiting[0]}" if waiting else "")}


def rollout_status(namespace: str, name: str) -> dict[str, Any]:
    """``rollout_verdict`` of the live object, with its phase and revisions. Raises ``NotFound``."""
    obj = get_cluster().get_modelserving(namespace, name)
    view = current_state(namespace, name)
    status = obj.get("status") or {}
    return {
        "namespace": namespace,
        "name": name,
        **rollout_verdict(obj, view),
        "phase": view.get("phase"),
        "generation": (obj.get("metadata") or {}).get("generation"),
        "observedGeneration": status.get("observedGeneration"),
        "currentRevision": status.get("currentRevision"),
        "updateRevision": status.get("updateRevision"),
    }


__all__ = [
    "NotFound",
    "rollout_status",
    "rollout_verdict",
    "get_manifest",
    "get_state",
    "list_pods",
    "list_revisions",
    "list_summaries",
    "pod_summary",
    "progress_history",
    "revision_diff",
]
