"""The trace document (format 1), exactly as docs/scenarios.md specifies.

Frames are written at t=0 and whenever what an operator watches changes: an instance's state,
revision, pod count, readiness, pod UIDs, surge or draining count, or the spec, revisions,
conditions or blocked reasons. Requests in flight alone do not make a frame (they change with every
request). Times are rounded to the millisecond so the text does not carry float noise
(100.00500000000001 -> 100.005); the same seed gives a byte-identical document.
"""

from __future__ import annotations

import json
from operator import is_, itemgetter
from typing import Any

FORMAT = 1


def _t(t: float) -> float:
    return round(float(t), 3)


def frame_from_view(
    t: float, view: dict[str, Any], blocked: list[dict], *, with_strategy: bool = False
) -> dict[str, Any]:
    frame = _frame_shell(t, view, blocked, with_strategy=with_strategy)
    frame["instances"] = _frame_instances(view)
    return frame


def _frame_instances(view: dict[str, Any]) -> list[dict[str, Any]]:
    return [_frame_row(inst) for inst in view.get("instances") or []]


def _frame_row(inst: dict[str, Any]) -> dict[str, Any]:
    # The view's per-gate times and waits are for the dashboard; a frame keeps the highest
    # gate and the failed one (scenarios.md), and the rest of each instance as the view has it.
    return {k: v for k, v in inst.items() if k not in _VIEW_ONLY_INSTANCE_KEYS}


def _frame_shell(t: float, view: dict[str, Any], blocked: list[dict], *, with_strategy: bool = False) -> dict[str, Any]:
    """A frame with the view's instances as they are (``_frame_instances`` copies them without
    the dashboard's keys: done only for a frame that is kept)."""
    frame = {
        "t": _t(t),
        "spec": view.get("spec"),
        "currentRevision": view.get("currentRevision"),
        "updateRevision": view.get("updateRevision"),
        "conditions": [
            {k: c[k] for k in ("type", "status", "reason", "message") if k in c} for c in view.get("conditions") or []
        ],
        "instances": view.get("instances") or [],
        "blocked": list(blocked or []),
    }
    canary = view.get("canary")
    if canary:
        frame["canary"] = {"stepIndex": canary["stepIndex"], "phase": canary["phase"]}
        if canary.get("weight") is not None:  # setWeight steps only: other traces keep their bytes
            frame["canary"]["weight"] = canary["weight"]
    if with_strategy:
        # With a scenario's clusterSettings: every effective budget, its value and its source
        # (multiNodeOverride, object, cluster, builtin), as status.strategy has them.
        frame["strategy"] = view.get("strategy") or {}
    return frame


# The digest is the dashboard's (format 1 has no such field; a frame changes with what runs, not
# with the bytes it was pulled from).
_VIEW_ONLY_INSTANCE_KEYS = frozenset({"gateTimes", "gateWaiting", "digest"})
_INSTANCE_KEYS = (
    "group",
    "role",
    "ordinal",
    "revision",
    "state",
    "pods",
    "readyPods",
    "surge",
    "draining",
    "gate",
    "gateFailed",
)
_instance_fields = itemgetter(*_INSTANCE_KEYS)


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _instance_key(inst: dict[str, Any]) -> tuple:
    """What a frame shows of an instance and watches for change (not its in-flight count)."""
    try:
        return (_instance_fields(inst), tuple(inst["podUids"]))
    except KeyError:  # a view without some field: slower, same meaning
        return (tuple(inst.get(k) for k in _INSTANCE_KEYS), tuple(inst.get("podUids") or ()))


def _change_key(frame: dict[str, Any], revisions: list, instances: tuple) -> tuple:
    # Tuples, not JSON text: this runs after every reconcile pass (1,100 passes x 160 instances in
    # the seed example), and building tuples is several times cheaper than encoding JSON.
    return (
        _freeze(frame["spec"]),
        frame["currentRevision"],
        frame["updateRevision"],
        _freeze(frame["conditions"]),
        instances,
        _freeze(frame["blocked"]),
        _freeze(frame.get("canary")),
        _freeze(revisions),
        _freeze(frame.get("strategy")),
    )


class _ByEntry:
    """What the trace derived from each instance entry of the last view it was offered, kept by
    the entry itself: the state view hands back an unchanged instance as the very same entry from
    one pass to the next (``view._group_part``), at the same place (entries are in group, role,
    ordinal order), so the seed example's 160 instances cost an identity check each instead of a
    copy or a key each. Two values per entry: its change key (``_instance_key``) and, once a frame
    kept it, its row (``_frame_row``)."""

    def __init__(self) -> None:
        self._keyed: list[dict[str, Any]] = []  # the entries of the last view, in order
        self._keys: tuple = ()  # their change keys, in order
        self._rowed: list[dict[str, Any]] = []  # the entries of the last kept frame, in order
        self._rows: list[dict[str, Any]] = []  # their rows, in order

    def change_keys(self, instances: list[dict[str, Any]]) -> tuple:
        """The change keys of ``instances`` in order; the same tuple when every entry is the same
        object as in the last view."""
        last = self._keyed
        if len(instances) != len(last):
            keys = tuple([_instance_key(inst) for inst in instances])
        elif all(map(is_, instances, last)):
            return self._keys
        else:
            keys = tuple([k if a is b else _instance_key(a) for a, b, k in zip(instances, last, self._keys)])
        self._keyed, self._keys = list(instances), keys
        return keys

    def rows(self, instances: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The frame's rows of ``instances`` (``_frame_row``): the row of the same entry at the
        same place in the last kept frame is shared (nothing changes a frame once it is written)."""
        last = self._rowed
        if len(instances) != len(last):
            rows = [_frame_row(inst) for inst in instances]
        else:
            rows = [r if a is b else _frame_row(a) for a, b, r in zip(instances, last, self._rows)]
        self._rowed, self._rows = list(instances), rows
        return rows


class TraceWriter:
    def __init__(self, scenario_name: str, seed: int, *, with_strategy: bool = False) -> None:
        self.scenario = scenario_name
        self.seed = seed
        self.with_strategy = with_strategy
        self.frames: list[dict[str, Any]] = []
        self.actions: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []
        self.analysis: list[dict[str, Any]] = []  # every judged canary analysis window
        self.audit: list[dict[str, Any]] = []  # every audited action (scenario controls, the analysis)
        self.revisions: dict[str, dict[str, Any]] = {}  # hash -> {number, hash, name}
        self._last_key: tuple | None = None
        self._by_entry = _ByEntry()

    def observe_revisions(self, revisions: list[dict[str, Any]]) -> list:
        current = []
        for r in revisions or []:
            entry = {"number": r.get("number"), "hash": r.get("hash"), "name": r.get("name")}
            self.revisions[entry["hash"]] = entry
            current.append([entry["number"], entry["hash"]])
        return current

    def offer_frame(self, t: float, view: dict[str, Any], blocked: list[dict], *, force: bool = False) -> bool:
        """Add a frame if something watched changed since the last one (or ``force``)."""
        # The change key reads only fields a frame keeps as they are, so it is taken from the
        # view's instances; they are copied into the frame only when the frame is kept.
        frame = _frame_shell(t, view, blocked, with_strategy=self.with_strategy)
        instances = self._by_entry.change_keys(frame["instances"])
        key = _change_key(frame, self.observe_revisions(view.get("revisions") or []), instances)
        if not force and key == self._last_key:
            return False
        self._last_key = key
        frame["instances"] = self._by_entry.rows(frame["instances"])
        if self.frames and self.frames[-1]["t"] == frame["t"]:
            self.frames[-1] = frame  # two passes in the same millisecond: keep the settled one
        else:
            self.frames.append(frame)
        return True

    def action(self, t: float, action: dict[str, Any]) -> None:
        self.actions.append({"t": _t(t), **action})

    def event(self, t: float, description: dict[str, Any], *, error: str | None = None) -> None:
        entry = {"t": _t(t), **description}
        if error:
            entry["error"] = error
        self.events.append(entry)

    def window(self, t: float, window: dict[str, Any]) -> None:
        self.analysis.append({"t": _t(t), **window})

    def audited(self, t: float, entry: dict[str, Any]) -> None:
        keys = ("action", "source", "reason", "fromRevision", "toRevision")
        self.audit.append({"t": _t(t), **{k: entry.get(k) for k in keys}})

    def error(self, t: float, message: str) -> None:
        self.errors.append({"t": _t(t), "message": message})

    def document(
        self, *, converged: bool, converged_at: float | None, end_time: float, requests: dict[str, Any]
    ) -> dict[str, Any]:
        doc = {
            "format": FORMAT,
            "scenario": self.scenario,
            "seed": self.seed,
            "converged": converged,
            "convergedAt": _t(converged_at) if converged and converged_at is not None else None,
            "endTime": _t(end_time),
            "revisions": sorted(self.revisions.values(), key=lambda r: ((r["number"] or 0), r["hash"] or "")),
            "frames": self.frames,
            "actions": self.actions,
            "requests": requests,
            "events": self.events,
            "analysis": self.analysis,
            "audit": self.audit,
        }
        if self.errors:
            doc["controllerErrors"] = self.errors
        return doc


def dumps(doc: dict[str, Any]) -> str:
    # Compact: a 160-instance rollout writes thousands of frames. Key order is insertion order,
    # which is fixed by the code above, so equal runs give equal bytes.
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n"


# -- InferenceService traces (format 1; docs/scenarios.md, "InferenceService scenarios") -----


def isvc_frame(t: float, view: dict[str, Any]) -> dict[str, Any]:
    """A frame of an InferenceService run, from ``controller.core.kserve.view``'s view: its pods as
    ``instances`` (component, replicaSet, revision, state, gate, gateFailed), the Deployments' counts, the
    effective strategy with sources and mode, the traffic split and why it waits."""
    frame: dict[str, Any] = {
        "t": _t(t),
        "spec": view.get("spec"),
        "conditions": [
            {k: c[k] for k in ("type", "status", "reason", "message") if k in c} for c in view.get("conditions") or []
        ],
        "deployments": [
            {
                "name": d["name"],
                "component": d["component"],
                "replicas": d["replicas"],
                **{k: d["counts"][k] for k in ("updatedReplicas", "readyReplicas", "availableReplicas")},
                "paused": d["paused"],
                "progressing": next((c.get("reason") for c in d["conditions"] if c.get("type") == "Progressing"), None),
            }
            for d in view.get("deployments") or []
        ],
        "instances": [
            {k: i.get(k) for k in ("pod", "component", "replicaSet", "revision", "state", "gate", "gateFailed")}
            for i in view.get("instances") or []
        ],
        "strategy": view.get("strategy") or {},
        "traffic": [
            {k: e[k] for k in ("revision", "percent", "component", "tag") if k in e} for e in view.get("traffic") or []
        ],
        "blocked": [{"component": b["component"], "reason": b["reason"]} for b in view.get("blocked") or []],
    }
    if view.get("canary"):
        frame["canary"] = view["canary"]
    if view.get("handover"):
        frame["handover"] = view["handover"]
    return frame


class InferenceServiceTraceWriter(TraceWriter):
    """The trace of an InferenceService scenario: the same document, frames of ``isvc_frame``, and
    ``revisions`` listing every ReplicaSet revision (Standard) or Knative revision (Serverless) seen."""

    def offer_isvc_frame(self, t: float, view: dict[str, Any], *, force: bool = False) -> bool:
        frame = isvc_frame(t, view)
        for d in view.get("deployments") or []:
            if d.get("knativeRevision"):
                key = d["knativeRevision"]
                number = int(key.rsplit("-", 1)[-1])
                self.revisions.setdefault(
                    key, {"component": d["component"], "name": key, "number": number, "hash": None}
                )
                continue
            for rs in d.get("replicaSets") or []:
                self.revisions.setdefault(
                    rs["name"],
                    {
                        "component": d["component"],
                        "deployment": d["name"],
                        "number": rs["revision"],
                        "hash": rs["hash"],
                    },
                )
        key = _freeze({k: v for k, v in frame.items() if k != "t"})
        if not force and key == self._last_key:
            return False
        self._last_key = key
        if self.frames and self.frames[-1]["t"] == frame["t"]:
            self.frames[-1] = frame
        else:
            self.frames.append(frame)
        return True

    def document(self, **kwargs: Any) -> dict[str, Any]:
        doc = super().document(**kwargs)
        doc["revisions"] = sorted(
            self.revisions.values(), key=lambda r: (r["component"], r.get("deployment") or "", r["number"] or 0)
        )
        return {"format": doc.pop("format"), "kind": "InferenceService", **doc}
