"""``rolloutui get --watch`` over the server's websocket (``/ws/modelservings/<ns>/<name>/``).

The socket takes the same API token as the REST API, in the ``Authorization`` header of the
upgrade request (a reverse proxy passes it on like any header). The server sends the full state
(the REST GET payload), then deltas of it; every message ends with ``"ack": {"n", "token"}``, which
the client echoes back (``{"type": "ack", ...}``): the server drops a client that does not
acknowledge what it was sent. A delta names the ``time`` of the state it applies to (``base``); a
client holding another state asks for the full one (``{"type": "resync"}``).

``apply_delta`` is this client's half of the delta format, the same rules as the server's
(``controller/runtime/delta.py``) and the page's (``applyDelta`` in static/js/detail/stream.js),
kept here because the CLI imports no server code. Pure: the base state is not modified.

The ``websockets`` library is imported when a watch starts, not when the CLI starts.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable
from typing import Any

# How each keyed list names its items, and whether both ends keep it sorted by that name.
KEYED_LISTS: dict[str, tuple[Callable[[dict], Any], bool]] = {
    "instances": (lambda i: (i.get("group"), i.get("role"), i.get("ordinal")), True),
    "groups": (lambda g: g.get("ordinal"), True),
    "blocked": (lambda b: (b.get("group"), b.get("role"), b.get("kind")), False),
    "drain": (lambda d: d.get("pod"), False),
}

# Close codes of the server (rolloutui/consumers.py).
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404


class StreamUnavailable(Exception):
    """The socket was refused or dropped: the caller polls the REST API instead."""


class Deleted(Exception):
    """The watched object does not exist (any more)."""


def _unwire(k: Any) -> Any:
    return tuple(k) if isinstance(k, list) else k


def _sort_key(k: Any) -> tuple:
    # Python's tuple order with None first (the server sorts group-less items ahead).
    k = k if isinstance(k, tuple) else (k,)
    return tuple((0, "") if x is None else (1, x) for x in k)


def _merge_list(items: list[dict], change: dict[str, list], key, is_sorted: bool) -> list[dict]:
    by_key = {key(item): item for item in items}
    order = list(by_key)
    for k in change.get("remove") or []:
        by_key.pop(_unwire(k), None)
    patches = list(change.get("patch") or [])
    for keys, fields, gone in change.get("patchSame") or []:
        patches.extend([k, fields, gone] for k in keys)
    for k, fields, gone in patches:
        prev = by_key.get(_unwire(k))
        if prev is None:
            continue
        item = {**prev, **fields}
        for f in gone:
            item.pop(f, None)
        by_key[_unwire(k)] = item
    for item in change.get("upsert") or []:
        k = key(item)
        if k not in by_key:
            order.append(k)
        by_key[k] = item
    if "order" in change:
        return [by_key[_unwire(k)] for k in change["order"]]
    if is_sorted:
        return [by_key[k] for k in sorted(by_key, key=_sort_key)]
    return [by_key[k] for k in order if k in by_key]


def apply_delta(base: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """The state ``delta`` turns ``base`` into. Raises ValueError for a list the format does not
    know. Example: ``apply_delta({"phase": "A", "time": 1}, {"set": {"phase": "B"}, "time": 2})``
    -> ``{"phase": "B", "time": 2}``."""
    out = {**base, **(delta.get("set") or {})}
    for k in delta.get("unset") or []:
        out.pop(k, None)
    for name, change in (delta.get("lists") or {}).items():
        if name not in KEYED_LISTS:
            raise ValueError(f"delta names an unknown list {name!r}")
        key, is_sorted = KEYED_LISTS[name]
        out[name] = _merge_list(base.get(name) or [], change, key, is_sorted)
    had_time = out.pop("time", "absent") != "absent"
    if had_time or delta.get("time") is not None:
        out["time"] = delta.get("time")
    return out


def socket_url(server: str, namespace: str, name: str) -> str:
    """``http://host:8000`` -> ``ws://host:8000/ws/modelservings/<ns>/<name>/`` (https -> wss)."""
    parts = urllib.parse.urlsplit(server)
    scheme = "wss" if parts.scheme == "https" else "ws"
    quote = urllib.parse.quote
    path = f"{parts.path.rstrip('/')}/ws/modelservings/{quote(namespace, safe='')}/{quote(name, safe='')}/"
    return urllib.parse.urlunsplit((scheme, parts.netloc, path, "", ""))


def watch(
    server: str,
    token: str | None,
    namespace: str,
    name: str,
    on_state: Callable[[dict[str, Any]], None],
    *,
    until: Callable[[], float | None],
) -> None:
    """Call ``on_state`` with every state the socket delivers until ``until()`` (seconds left, None:
    no limit) reaches 0. Raises ``StreamUnavailable`` when the socket is refused or drops (the
    caller polls instead) and ``Deleted`` when the object is gone."""
    try:
        from websockets.exceptions import ConnectionClosed, InvalidHandshake
        from websockets.sync.client import connect
    except ImportError as err:  # an install without the library: poll
        raise StreamUnavailable(f"the websockets library is missing ({err})") from None

    headers = {"Authorization": f"Token {token}"} if token else {}
    try:
        # Full states of large ModelServings are over a megabyte.
        ws = connect(
            socket_url(server, namespace, name), additional_headers=headers, max_size=64 * 2**20, open_timeout=10
        )
    except (OSError, InvalidHandshake, TimeoutError) as err:
        raise StreamUnavailable(str(err) or type(err).__name__) from None
    state: dict[str, Any] | None = None
    with ws:
        while True:
            left = until()
            if left is not None and left <= 0:
                return
            try:
                text = ws.recv(timeout=left)
            except TimeoutError:
                return
            except ConnectionClosed as closed:
                code = closed.rcvd.code if closed.rcvd is not None else None
                if code == CLOSE_NOT_FOUND:
                    raise Deleted(f"{namespace}/{name} was deleted") from None
                reason = {CLOSE_UNAUTHENTICATED: "not signed in", CLOSE_FORBIDDEN: "no permission"}.get(
                    code, f"closed ({code})"
                )
                raise StreamUnavailable(reason) from None
            message = json.loads(text)
            ack = message.pop("ack", None)
            if isinstance(ack, dict):
                ws.send(json.dumps({"type": "ack", "n": ack.get("n"), "token": ack.get("token")}))
            if message.get("type") == "state.delta":
                if state is None or message.get("base") != state.get("time"):
                    ws.send(json.dumps({"type": "resync"}))
                    continue
                state = apply_delta(state, message)
            else:
                state = message
            if state.get("deleted"):
                raise Deleted(f"{namespace}/{name} was deleted")
            on_state(state)
