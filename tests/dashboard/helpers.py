"""Helpers for the dashboard tests: ModelServing manifests and waiting on the live state.

Everything goes through ``rolloutui.services`` (the same layer the pages and the API call), so
these tests exercise the real backend the settings select.
"""

from __future__ import annotations

import uuid

from tests.factories import group_strategy, modelserving, prefill_decode
from tests.waiting import wait_until

NAMESPACE = "default"


def manifest(name: str, *, replicas: int = 4, partition: int = 0, image: str = "engine:v1", max_surge: int = 1) -> dict:
    """The dashboard suites' ModelServing: groups of one prefill instance with a worker and two
    decodes, rolled out one group at a time with ``max_surge`` extra groups."""
    return modelserving(
        name=name,
        replicas=replicas,
        roles=prefill_decode(image),
        strategy=group_strategy(maxUnavailable=1, maxSurge=max_surge, partition=partition),
    )


def unique_name(prefix: str = "ms") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_for(predicate, *, timeout: float = 30.0, interval: float = 0.1, what: str = "condition"):
    """The dashboard suites' name for ``tests.waiting.wait_until``."""
    return wait_until(predicate, what=what, timeout=timeout, interval=interval)


def reconcile(name: str, namespace: str = NAMESPACE) -> dict:
    """One reconcile of the ModelServing, in this process: the controller's own task body.

    Inside a test transaction the services' on-commit enqueue never fires, and no worker runs
    here, so tests that need the controller to react (a new revision after set-image) ask for it.
    """
    from controller.runtime.reconciler import run_reconcile

    return run_reconcile(namespace, name)


def create_modelserving(name: str, **kwargs) -> dict:
    """Create a ModelServing through the active cluster port, run the controller once, and wait
    until its first revision is recorded (the state then has everything the dashboard shows)."""
    from controller.core.ports import Conflict, NotFound
    from rolloutui.services import cluster, state

    try:
        cluster.get_cluster().create_modelserving(manifest(name, **kwargs))
    except Conflict:
        pass  # created by an earlier call with the same name: the wait below still applies

    def ready():
        s = state.get_state(NAMESPACE, name)
        return s if s.get("revisions") and s.get("updateRevision") else None

    try:
        first = ready()
    except NotFound:
        first = None  # not visible yet: the reconcile below and the wait decide
    if not first:
        reconcile(name)
    return wait_until(ready, what=f"first revision of {name}", timeout=60, interval=0.1, retry_on=(NotFound,))


def apply_delta(base: dict, delta: dict) -> dict:
    """What the page does with a websocket delta (``applyDelta`` in static/js/detail/stream.js),
    written again in Python from the format's description, to check ``make_delta`` on its own."""
    from rolloutui.consumers import KEYED_LISTS

    assert delta["base"] == base["time"]
    out = {**base, **delta["set"]}
    for k in delta["unset"]:
        out.pop(k, None)
    for name, change in delta["lists"].items():
        key, is_sorted = KEYED_LISTS[name]
        wire = lambda k: tuple(k) if isinstance(k, list) else k  # noqa: E731
        items = {key(i): i for i in base.get(name) or []}
        order = list(items)
        for r in change["remove"]:
            items.pop(wire(r), None)
        patches = [*change["patch"], *([k, f, g] for keys, f, g in change.get("patchSame", []) for k in keys)]
        for k, fields, gone in patches:
            item = {**items[wire(k)], **fields}
            for f in gone:
                item.pop(f, None)
            items[wire(k)] = item
        for u in change["upsert"]:
            if key(u) not in items:
                order.append(key(u))
            items[key(u)] = u
        if "order" in change:
            out[name] = [items[wire(k)] for k in change["order"]]
        elif is_sorted:
            out[name] = [items[k] for k in sorted(items, key=lambda k: k if isinstance(k, tuple) else (k,))]
        else:
            out[name] = [items[k] for k in order if k in items]
    out["time"] = delta["time"]
    return out


def same_json(a, b, path: str = "$") -> str | None:
    """Where two JSON values differ, or None. Stricter than ``==``: true is not 1 (Python's
    ``True == 1`` would hide a flag that turned into a number), while 2 and 2.0 are the same
    number (JavaScript has one number type, so a page cannot keep them apart)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return None if type(a) is type(b) and a == b else f"{path}: {a!r} != {b!r}"
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return f"{path}: keys {sorted(set(a) ^ set(b))} differ"
        for k in a:
            diff = same_json(a[k], b[k], f"{path}.{k}")
            if diff:
                return diff
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            diff = same_json(x, y, f"{path}[{i}]")
            if diff:
                return diff
        return None
    if isinstance(a, int | float) and isinstance(b, int | float):
        return None if a == b else f"{path}: {a!r} != {b!r}"
    return None if type(a) is type(b) and a == b else f"{path}: {a!r} != {b!r}"
