"""``rolloutui`` / ``kubectl-rolloutui``: the remote CLI's entry point.

Where the server and token come from, first found wins: ``--server`` / ``--token``, then
``$ROLLOUTUI_SERVER`` / ``$ROLLOUTUI_TOKEN``, then the config file ``rolloutui login`` wrote.
Exit status: 0 ok; 1 an error (one line naming the field) or, for ``status``, a failed rollout;
2 a bad command line or, for ``status``, a timeout.
"""

from __future__ import annotations

import getpass
import json
import os
import sys
import time
from typing import Any

from . import commands, config, output
from .client import ApiError, Client

EXIT_DONE, EXIT_FAILED, EXIT_TIMEOUT = 0, 1, 2


def _settings(argv: list[str]) -> tuple[str | None, str | None]:
    """``--server`` and ``--token`` read before the verbs are built (the verbs depend on the server)."""
    server = token = None
    for i, word in enumerate(argv):
        for name in ("--server", "--token"):
            value = None
            if word == name and i + 1 < len(argv):
                value = argv[i + 1]
            elif word.startswith(name + "="):
                value = word.split("=", 1)[1]
            if value is not None:
                if name == "--server":
                    server = value
                else:
                    token = value
    stored = config.load()
    server = server or os.environ.get("ROLLOUTUI_SERVER") or stored.get("server")
    token = (
        token or os.environ.get("ROLLOUTUI_TOKEN") or (stored.get("token") if stored.get("server") == server else None)
    )
    return (server.rstrip("/") if server else None), token


def _first_verb(argv: list[str]) -> str | None:
    skip = False
    for word in argv:
        if skip:
            skip = False
            continue
        if word in ("--server", "--token"):
            skip = True
            continue
        if not word.startswith("-"):
            return word
    return None


def registry(client: Client | None, *, revalidate: bool) -> dict[str, Any] | None:
    """The server's action registry: the cached copy, revalidated against the server (a 304 when
    its version is unchanged) when ``revalidate``, fetched when there is none."""
    if client is None:
        return None
    cached = config.cached_registry(client.server)
    if cached is not None and not revalidate:
        return cached
    headers = {"If-None-Match": f'"{cached["version"]}"'} if cached else {}
    status, document, _ = client.request("GET", "/api/actions/", headers=headers)
    if status == 304 and cached is not None:
        return cached
    config.store_registry(client.server, document)
    return document


def _emit(data: Any, fmt: str | None, text: str | None = None) -> None:
    print(output.dump(data, fmt) if fmt else (text if text is not None else output.text(data)))


def _read_file(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8") as f:
        return f.read()


def do_login(server: str | None, o: dict[str, Any]) -> int:
    if not server:
        raise commands.UsageError("server: give --server URL (or set ROLLOUTUI_SERVER)")
    username = o.get("username") or input("Username: ")
    if o.get("password_stdin"):
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = getpass.getpass("Password: ")
    answer = Client(server).post("/api/auth/token/", {"username": username, "password": password})
    path = config.save(server, answer["token"], username)
    print(f"Signed in to {server} as {username}; token stored in {path} (expires {answer.get('expiry')}).")
    return 0


def do_logout(client: Client) -> int:
    if client.token:
        client.request("DELETE", "/api/auth/token/")
    stored = config.load()
    if stored.get("server") == client.server:
        config.save(client.server, "", stored.get("username") or "")
    print(f"Signed out of {client.server}.")
    return 0


def do_status(client: Client, path: str, o: dict[str, Any]) -> int:
    deadline = None if o.get("timeout") is None else time.monotonic() + o["timeout"]
    last = None
    while True:
        current = client.get(path)
        if current.get("message") != last and not o.get("output"):
            last = current.get("message")
            print(f"{current.get('phase')}: {last}", flush=True)
        if current.get("verdict") != "progressing":
            break
        if deadline is not None and time.monotonic() >= deadline:
            current = {**current, "verdict": "timeout"}
            if not o.get("output"):
                print(f"timed out after {o['timeout']:g} s: {current.get('message')}")
            break
        wait = o["interval"] if deadline is None else min(o["interval"], max(deadline - time.monotonic(), 0))
        time.sleep(wait)
    if o.get("output"):
        _emit(current, o["output"])
    return {"done": EXIT_DONE, "failed": EXIT_FAILED}.get(current.get("verdict"), EXIT_TIMEOUT)


def do_get(client: Client, path: str, o: dict[str, Any]) -> int:
    """The rollout, and with ``--watch`` again whenever it changes: live from the server's
    websocket (``stream.watch``, with the API token), else by polling every ``--interval`` while
    the socket is refused or down (an older server, a proxy without websockets)."""
    view = client.get(path)
    _emit(view, o.get("output"), output.rollout_summary(view))
    if not o.get("watch"):
        return 0
    from . import stream

    deadline = None if o.get("timeout") is None else time.monotonic() + o["timeout"]

    def left() -> float | None:
        return None if deadline is None else deadline - time.monotonic()

    def key(v: dict[str, Any]) -> str:  # the cluster clock alone does not make a new print
        return json.dumps({k: x for k, x in v.items() if k not in ("time", "drain")}, sort_keys=True, default=str)

    last = key(view)

    def show(new: dict[str, Any]) -> None:
        nonlocal last
        if key(new) == last:
            return
        last = key(new)
        if sys.stdout.isatty() and not o.get("output"):
            print("\033[H\033[2J", end="")  # redraw in place on a terminal
        else:
            print()
        _emit(new, o.get("output"), output.rollout_summary(new))
        sys.stdout.flush()

    namespace, name = o["target"].strip().split("/", 1)
    live = True
    try:
        while deadline is None or time.monotonic() < deadline:
            if live:
                try:
                    stream.watch(client.server, client.token, namespace, name, show, until=left)
                    return 0  # the timeout passed
                except stream.StreamUnavailable as err:
                    live = False
                    print(f"(live updates unavailable: {err}; polling every {o['interval']:g} s)", file=sys.stderr)
                except stream.Deleted:
                    print(f"{o['target']} was deleted")
                    return 0
                continue
            time.sleep(o["interval"] if deadline is None else max(0.0, min(o["interval"], left() or 0.0)))
            try:
                show(client.get(path))
            except ApiError as err:
                if err.status == 404:
                    print(f"{o['target']} was deleted")
                    return 0
                raise
    except KeyboardInterrupt:
        pass
    return 0


def do_preview(client: Client, path: str, o: dict[str, Any]) -> int:
    change = {"role": o["q_role"], "image": o["q_image"]}
    if o.get("q_container"):
        change["container"] = o["q_container"]
    job = client.post(path, {"setImage": change})
    while job.get("status") in ("queued", "running"):
        time.sleep(0.5)
        job = client.get(f"/api/previews/{job['id']}/")
    if job.get("status") == "error":
        raise ApiError(400, "preview failed", job.get("error") if isinstance(job.get("error"), dict) else None)
    _emit(job.get("result", job), o.get("output"))
    return 0


def do_advise(client: Client, path: str, o: dict[str, Any]) -> int:
    """The strategy advisor: queue the advice, poll its job, print the advice (``--json``: as is)."""
    change = {"role": o["q_role"], "image": o["q_image"]}
    if o.get("q_container"):
        change["container"] = o["q_container"]
    body: dict[str, Any] = {"setImage": change}
    for key in ("limit", "floor"):
        if o.get(f"q_{key}") is not None:
            body[key] = o[f"q_{key}"]
    job = client.post(path, body)
    while job.get("status") in ("queued", "running"):
        time.sleep(0.5)
        job = client.get(f"/api/previews/{job['id']}/")
    if job.get("status") == "error":
        raise ApiError(400, "advice failed", job.get("error") if isinstance(job.get("error"), dict) else None)
    advice = job.get("result") or {}
    lines = [f"floor: {advice.get('floor', {}).get('groups')} groups ({advice.get('floor', {}).get('why')})"]
    for i, c in enumerate(advice.get("candidates") or []):
        mark = "*" if i == advice.get("recommended") else ("=" if c.get("current") else " ")
        lines.append(f"{mark}{i:>2}  {json.dumps(c.get('strategy'), separators=(',', ':'))}  {c.get('why')}")
    lines.append(f"advice: {advice.get('summary')}")
    lines.append(f"apply: apply-advice NAMESPACE/NAME --advice {advice.get('id')} --reason ...")
    _emit(advice, o.get("output"), "\n".join(lines))
    return 0


def do_action(client: Client, action: dict[str, Any], o: dict[str, Any]) -> int:
    path, body, what = commands.action_request(action, o, _read_file)
    answer = client.post(path, body)
    records = (answer or {}).get("audit")
    records = records if isinstance(records, list) else [records] if records else []
    lines = []
    for r in records:
        if not isinstance(r, dict):
            continue
        lines.append(
            f"{what}: {r.get('result', 'ok')} (audit #{r.get('id')}, by {r.get('who') or r.get('actor') or '?'})"
        )
        # Advice the server gave with the change (probe advice, KV cache formats): it refused nothing.
        lines.extend(f"  warning: {w}" for w in ((r.get("details") or {}).get("warnings") or []))
    _emit(answer, o.get("output"), "\n".join(lines) or f"{what}: ok")
    return 0


def run(argv: list[str], prog: str = "rolloutui") -> int:
    server, token = _settings(argv)
    verb = _first_verb(argv)
    client = Client(server, token) if server else None
    needs_registry = verb not in (*commands.OWN_VERBS, *commands.READS_BY_VERB)
    if needs_registry and verb is not None and client is None:
        # The controls come from the server: without one, say so rather than "invalid choice".
        print("error: server: give --server URL, set ROLLOUTUI_SERVER, or run `rolloutui login`", file=sys.stderr)
        return 2
    try:
        # A control runs against the server's current declaration (revalidated: a 304 when unchanged);
        # help and reads make do with the cached copy.
        document = registry(client, revalidate=needs_registry and verb is not None) if needs_registry else None
    except ApiError as err:
        document = None
        if verb is not None:
            for line in err.lines():
                print(f"error: {line}", file=sys.stderr)
            return 1
    parser = commands.build_parser(document, prog=prog)
    o = vars(parser.parse_args(argv))
    try:
        if o["kind"] == "login":
            return do_login(server, o)
        if client is None:
            raise commands.UsageError("server: give --server URL, set ROLLOUTUI_SERVER, or run `rolloutui login`")
        if o["kind"] == "logout":
            return do_logout(client)
        if o["kind"] == "action":
            return do_action(client, o["action"], o)
        read: commands.Read = o["read"]
        path, query = commands.read_request(read, o)
        if read.verb == "status":
            return do_status(client, path, o)
        if read.verb == "get":
            return do_get(client, path, o)
        if read.verb == "preview":
            return do_preview(client, path, o)
        if read.verb == "advise":
            return do_advise(client, path, o)
        if read.post:
            _emit(client.post(path, {k: v for k, v in query.items() if v is not None}), o.get("output"))
        else:
            _emit(client.get(path, **query), o.get("output"))
        return 0
    except commands.UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except ApiError as err:
        for line in err.lines():
            print(f"error: {line}", file=sys.stderr)
        return 1
    except (OSError, KeyboardInterrupt) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


def main() -> None:
    sys.exit(run(sys.argv[1:], prog="rolloutui"))


def kubectl_plugin() -> None:
    """``kubectl rolloutui ...``: kubectl runs ``kubectl-rolloutui`` from the PATH."""
    sys.exit(run(sys.argv[1:], prog="kubectl rolloutui"))
