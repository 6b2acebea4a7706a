"""Golden fixtures of the websocket delta format: ``tests/dashboard/fixtures/deltas/*.json``.

The format has two implementations: ``rolloutui.consumers.make_delta`` (the server) and
``applyDelta`` in ``static/js/detail/stream.js`` (the page). Each fixture is one pair of states and
the delta ``make_delta`` writes for it: ``{"base": ..., "delta": ..., "expected": ...}``.
``test_delta_fixtures.py`` regenerates the files and fails when they differ from the committed ones
(so they cannot drift from the Python side), and a browser test applies every ``delta`` to its
``base`` with the page's own module and compares the result with ``expected``.

Most pairs are real: consecutive (or deliberately distant) states of a rollout on the in-memory
simulated cluster, each the full ``build_view`` payload that the REST GET and the websocket send,
picked by what changes between them (a rollout starting on many groups, instances created,
patched and removed, pods starting and finishing their drain, the blocked reasons reordered).
A few shapes the product does not produce today but the format must carry are written by hand
(keys that disappear, duplicate identities that force a list to be sent whole, a scalar-keyed
list emptied), each on top of a real state.

Regenerate after a deliberate change (to the delta format or to the state payload):

    .venv/bin/python -m tests.dashboard.delta_fixtures
"""

from __future__ import annotations

import copy
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "deltas"


def _template(image: str) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "engine", "image": image}]}}


# The rollout the real pairs come from: 8 groups of a prefill role (entry + worker) and two decode
# instances, traffic with a 30 s drain, maxUnavailable 3 and maxSurge 2 so several groups move at
# once; an image change, a pause and resume in the middle, a killed pod, then a rollback.
SCENARIO: dict[str, Any] = {
    "name": "delta-fixtures",
    "seed": 21,
    "until": 1500,
    "cluster": {
        "nodes": 8,
        "gpusPerNode": 8,
        "timing": {"schedule": 1, "pull": 3, "start": 1, "load": 15, "terminate": 2},
    },
    "traffic": {"rps": 10, "durationSeconds": [2, 20]},
    "modelServing": {
        "apiVersion": "serving.rolloutui.io/v1alpha1",
        "kind": "ModelServing",
        "metadata": {"name": "fixtures", "namespace": "default"},
        "spec": {
            "replicas": 8,
            "drain": {"timeoutSeconds": 30},
            "rolloutStrategy": {
                "type": "ServingGroupRollingUpdate",
                "rollingUpdateConfiguration": {"maxUnavailable": 3, "maxSurge": 2},
            },
            "template": {
                "roles": [
                    {
                        "name": "prefill",
                        "replicas": 1,
                        "workerReplicas": 1,
                        "entryTemplate": _template("engine:v1"),
                        "workerTemplate": _template("engine:v1"),
                    },
                    {
                        "name": "decode",
                        "replicas": 2,
                        "workerReplicas": 0,
                        "entryTemplate": _template("engine:v1"),
                    },
                ]
            },
        },
    },
    "events": [
        {"at": 0, "do": "apply"},
        {"at": 120, "do": "setImage", "role": "decode", "image": "engine:v2", "reason": "new build"},
        {"at": 150, "do": "pause", "reason": "look at latency"},
        {"at": 190, "do": "resume", "reason": "fine"},
        {"at": 230, "do": "deletePods", "group": 1, "role": "decode", "instance": 0},
        {"at": 420, "do": "rollback", "toRevision": 1, "reason": "regression"},
    ],
}


def record_states() -> list[dict[str, Any]]:
    """Every distinct state of the scenario's run, in order (a state is kept when anything but its
    ``time`` differs from the one before).

    The simulator offers the trace writer the full view after every reconcile pass (with traffic,
    the view with every pod's in-flight count: what the REST GET returns); recording is a wrapper
    around that one call. Every pass's view: by default the runner builds no view for a pass that
    changed nothing a frame keeps (only in-flight counts moved), and those are changes a delta carries."""
    from controller.simcluster.runner import Runner
    from controller.simcluster.scenario import parse_scenario

    runner = Runner(parse_scenario(copy.deepcopy(SCENARIO)), skip_unchanged=False)
    states: list[dict[str, Any]] = []
    offer = runner.trace.offer_frame

    def recording(t, view, blocked, *args, **kwargs):
        if view.get("name"):
            state = json.loads(json.dumps(view))  # what goes over the wire, detached from the run
            previous = states[-1] if states else None
            if previous is None or {**previous, "time": None} != {**state, "time": None}:
                states.append(state)
        return offer(t, view, blocked, *args, **kwargs)

    runner.trace.offer_frame = recording
    runner.run()
    return states


def _changes(delta: dict[str, Any], name: str) -> dict[str, list]:
    return delta["lists"].get(name) or {"upsert": [], "patch": [], "remove": []}


def _first_pair(
    states: list[dict[str, Any]], what: str, test: Callable[[dict, dict, dict], bool], used: set[float]
) -> tuple[dict, dict]:
    """The first consecutive pair whose delta passes ``test(old, new, delta)`` and that no other
    case took (``used`` holds the times of the pairs taken)."""
    from rolloutui.consumers import make_delta

    for old, new in zip(states, states[1:]):
        if new["time"] not in used and test(old, new, make_delta(old, new)):
            used.add(new["time"])
            return old, new
    raise AssertionError(
        f"no pair of consecutive states in the fixture scenario shows {what}; the rollout it records "
        "changed: adjust SCENARIO or the case in tests/dashboard/delta_fixtures.py"
    )


def _blocked_key(b: dict[str, Any]) -> tuple:
    return (b.get("group"), b.get("role"), b.get("kind"))


def _patched(change: dict[str, Any]) -> int:
    """How many items a list's change patches (one by one, or alike in ``patchSame``)."""
    return len(change["patch"]) + sum(len(keys) for keys, _, _ in change.get("patchSame", []))


def real_pairs(states: list[dict[str, Any]]) -> dict[str, tuple[dict, dict]]:
    """Named pairs of real states, each showing one kind of change (a different pair each)."""
    used: set[float] = set()

    def started(old, new, d):
        moved = old["updateRevision"] and old["updateRevision"] != new["updateRevision"]
        return moved and _patched(_changes(d, "groups")) >= 6

    def instances(kind):
        return lambda old, new, d: bool(old["instances"]) and bool(_changes(d, "instances")[kind])

    def patched_only(old, new, d):
        c = _changes(d, "instances")
        return bool(_patched(c)) and not c["upsert"] and not c["remove"]

    def drain_starts(old, new, d):
        return not old["drain"] and bool(new["drain"])

    def drain_changes(old, new, d):
        c = _changes(d, "drain")
        return bool(old["drain"]) and bool(new["drain"]) and bool(_patched(c)) and bool(c["upsert"] or c["remove"])

    def drain_ends(old, new, d):
        return bool(old["drain"]) and not new["drain"]

    def blocked_reordered(old, new, d):
        return "order" in _changes(d, "blocked")

    def blocked_grows(old, new, d):
        c = _changes(d, "blocked")
        return bool(c["upsert"]) and "order" not in c

    def blocked_whole(old, new, d):
        # Duplicate identities (two reasons of one kind for the same group and role): the list
        # goes whole in `set`.
        keys = [_blocked_key(b) for b in new["blocked"]]
        return "blocked" in d["set"] and len(set(keys)) != len(keys)

    def blocked_dup_reordered(old, new, d):
        # Two draining instances of one role in one group give two reasons with the same identity
        # (group, role, kind): such a list is sent whole. Here the same entries come in a new
        # order (told apart by what precedes the colon: "draining decode-1: waiting for ...").
        def labels(state):
            return [(_blocked_key(b), str(b["reason"]).split(":")[0]) for b in state["blocked"]]

        keys = [_blocked_key(b) for b in new["blocked"]]
        a, b = labels(old), labels(new)
        return len(set(keys)) != len(keys) and a != b and sorted(a, key=repr) == sorted(b, key=repr)

    def paused(old, new, d):
        return not old["spec"]["paused"] and new["spec"]["paused"]

    def resumed(old, new, d):
        return old["spec"]["paused"] and not new["spec"]["paused"]

    def rolled_back(old, new, d):
        # Back to revision 1's templates, as a new revision number.
        first = next(s["updateRevision"] for s in states if s["updateRevision"])
        return old["updateRevision"] not in (None, first) and new["updateRevision"] == first

    cases = {
        "rollout-starts-on-many-groups": _first_pair(states, "a rollout starting on many groups", started, used),
        "rolled-back": _first_pair(states, "a rollback to an older revision", rolled_back, used),
        "instances-created": _first_pair(states, "instances created", instances("upsert"), used),
        "instances-removed": _first_pair(states, "instances removed", instances("remove"), used),
        "instances-patched-only": _first_pair(states, "instances patched, none created or removed", patched_only, used),
        "drain-starts": _first_pair(states, "pods starting to drain", drain_starts, used),
        "drain-list-changes": _first_pair(
            states, "drain entries added or removed while others change", drain_changes, used
        ),
        "drain-ends": _first_pair(states, "the last drain finishing", drain_ends, used),
        "blocked-reordered-with-duplicates": _first_pair(
            states, "blocked reasons with duplicate identities in a new order", blocked_dup_reordered, used
        ),
        "paused": _first_pair(states, "the rollout paused", paused, used),
        "resumed": _first_pair(states, "the rollout resumed", resumed, used),
    }
    # Shapes a rollout may or may not show (crafted_pairs writes them by hand when it does not).
    for name, what, test in (
        ("blocked-duplicates-sent-whole", "duplicate blocked identities", blocked_whole),
        ("blocked-reasons-reordered", "blocked reasons in a new order", blocked_reordered),
        ("blocked-reasons-added", "blocked reasons added at the end", blocked_grows),
    ):
        try:
            cases[name] = _first_pair(states, what, test, used)
        except AssertionError:
            pass
    # Distant states: what a page gets after a burst coalesced into one message.
    first = next(s["updateRevision"] for s in states if s["updateRevision"])
    mid = next(i for i, s in enumerate(states) if s["updateRevision"] not in (None, first))
    cases["many-changes-at-once"] = (states[mid - 1], states[min(len(states) - 1, mid + 25)])
    cases["whole-rollout-in-one-step"] = (states[0], states[-1])
    return cases


def crafted_pairs(states: list[dict[str, Any]]) -> dict[str, tuple[dict, dict]]:
    """Shapes the format must carry that today's rollouts do not produce, on a real state."""
    busy = next(s for s in states if s["drain"] and len(s["blocked"]) >= 2)
    cases = {}

    # A key that disappears (an older or newer server's field; the page's `deleted` marker).
    old = copy.deepcopy(busy)
    new = copy.deepcopy(busy)
    new["time"] = old["time"] + 1
    del new["waiting"], new["strategy"]
    new["deleted"] = True
    cases["top-level-keys-unset-and-added"] = (old, new)

    # Duplicate identities in blocked: the list goes whole; and back to unique identities.
    old = copy.deepcopy(busy)
    new = copy.deepcopy(busy)
    new["time"] = old["time"] + 1
    first = dict(new["blocked"][0])
    new["blocked"] = [first, {**first, "reason": first["reason"] + " (second reason)"}, *new["blocked"][1:]]
    cases.setdefault("blocked-duplicates-sent-whole", (old, new))
    cases["blocked-duplicates-resolved"] = (new, {**copy.deepcopy(busy), "time": new["time"] + 1})

    # Blocked reasons reversed, with group-less entries (null keys) among them.
    unique = {_blocked_key(b): b for b in busy["blocked"]}
    old = {**copy.deepcopy(busy), "blocked": list(unique.values())}
    new = copy.deepcopy(old)
    new["time"] = old["time"] + 1
    paused = {"group": None, "role": None, "kind": "paused", "reason": "paused"}
    new["blocked"] = [paused, *reversed(new["blocked"])]
    cases["blocked-reversed-with-null-keys"] = (old, new)
    # A new reason between existing ones: the merge would append it, so the delta says the order.
    inserted = {"group": old["blocked"][0]["group"], "role": "inserted", "kind": "budget", "reason": "inserted"}
    cases.setdefault(
        "blocked-reasons-reordered",
        (
            old,
            {
                **copy.deepcopy(old),
                "time": old["time"] + 1,
                "blocked": [old["blocked"][0], inserted, *old["blocked"][1:]],
            },
        ),
    )

    # Drain emptied and a scalar-keyed list (groups) losing its last items.
    old = copy.deepcopy(busy)
    new = copy.deepcopy(busy)
    new["time"] = old["time"] + 1
    new["drain"] = []
    new["groups"] = new["groups"][:-2]
    new["instances"] = [i for i in new["instances"] if i["group"] < len(new["groups"])]
    cases["lists-emptied-and-shortened"] = (old, new)

    # A keyed list that stops being a list (and one that becomes one): sent whole in `set`.
    old = copy.deepcopy(busy)
    new = copy.deepcopy(busy)
    new["time"] = old["time"] + 1
    new["drain"] = None
    cases["list-replaced-by-null"] = (old, new)
    cases["list-restored-from-null"] = (new, {**copy.deepcopy(busy), "time": new["time"] + 1})

    # Items that lose a field and gain another (a patch's third element), in two keyed lists.
    old = copy.deepcopy(busy)
    new = copy.deepcopy(busy)
    new["time"] = old["time"] + 1
    new["instances"][1] = {k: v for k, v in new["instances"][1].items() if k != "podUids"} | {"note": None}
    new["groups"][0] = {k: v for k, v in new["groups"][0].items() if k != "targetRevision"}
    cases["fields-removed-from-items"] = (old, new)

    # Values that are falsy or empty, and nested objects replaced whole.
    old = copy.deepcopy(busy)
    new = copy.deepcopy(busy)
    new["time"] = old["time"] + 1
    new["instances"][0] = {**new["instances"][0], "inFlight": 0, "draining": 0, "surge": False, "podUids": []}
    new["counts"] = {k: None for k in new["counts"]}
    new["conditions"] = []
    new["converged"] = False
    cases["falsy-values-and-nested-objects"] = (old, new)
    return cases


def build() -> dict[str, dict[str, Any]]:
    """Every fixture by file name (without .json)."""
    from rolloutui.consumers import make_delta

    states = record_states()
    pairs = {**real_pairs(states), **crafted_pairs(states)}
    out = {}
    for name in sorted(pairs):
        old, new = pairs[name]
        # Through JSON, as on the wire: the fixture holds exactly what the page receives.
        delta = json.loads(json.dumps(make_delta(old, new)))
        out[name] = {"base": old, "delta": delta, "expected": new}
    return out


def dumps(fixture: dict[str, Any]) -> str:
    """The states on one line each, the delta indented: a change to the format reads as a diff."""
    compact = {"separators": (",", ":"), "ensure_ascii": False}
    return (
        "{\n"
        f' "base": {json.dumps(fixture["base"], **compact)},\n'
        f' "delta": {json.dumps(fixture["delta"], indent=1, ensure_ascii=False)},\n'
        f' "expected": {json.dumps(fixture["expected"], **compact)}\n'
        "}\n"
    )


def write() -> list[Path]:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    fixtures = build()
    for stale in FIXTURES.glob("*.json"):
        if stale.stem not in fixtures:
            stale.unlink()
    paths = []
    for name, fixture in fixtures.items():
        path = FIXTURES / f"{name}.json"
        path.write_text(dumps(fixture))
        paths.append(path)
    return paths


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rolloutui.settings")
    import django

    django.setup()
    paths = write()
    size = sum(p.stat().st_size for p in paths)
    print(f"wrote {len(paths)} fixtures ({size / 1024:.0f} kB) to {FIXTURES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
