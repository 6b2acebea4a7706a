"""Fault soak: the running product through random rollouts while its processes fail.

Real processes: a private Redis, two Celery workers, beat, Daphne, a file SQLite database. The
driver sends random controls (set-image, pause, resume, promote, rollback) through the REST API with
an operator token; meanwhile faults are injected: SIGKILL of a worker while it holds the reconcile
lock of ``default/demo`` (mid-pass; a new worker is started), a Redis restart on the same port, a
Daphne restart, and websocket clients dropped and reconnected.

The stored history is complete, not sampled: SQLite triggers (created by the test, after migrate)
copy every insert, update and delete of the demo's pods and ModelServing into ``soak_log``. After
the faults stop the test checks, from that log and the audit:

- budgets: replaying the log, available groups (every expected pod present, Ready, not deleting,
  not draining) >= replicas - maxUnavailable, and groups in service (a pod neither draining nor
  deleting) <= replicas + maxSurge, from the first convergence on; the allowance for faults is the
  groups holding a Failed pod (the faults here hit the control plane, not pods, so it is normally 0);
- no action applied twice: every request (unique reason) has at most one audit record; a pod name
  never gets a new uid at the same revision as its previous one (a duplicated creation);
- no audit entry lost: every request answered 200 has its ``ok`` record, and every change cause the
  ModelServing ever carried has its record (a change applied without an audit is caught too);
- convergence on the last requested revision once the faults stop;
- every websocket client ends with the REST state (ignoring ``time``).

Size: ROLLOUTUI_SOAK_ROLLOUTS (default 4) and ROLLOUTUI_SOAK_FAULTS (default 8: the first four are
one of each kind, so every kind happens); the seed is ROLLOUTUI_SOAK_SEED (44 when unset, drawn at
random with ``random``; printed, and named in every failure). The defaults keep it to 70-90 s in
`make test`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import http.client
import json
import os
import random
import signal
import sqlite3
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from tests.dashboard.helpers import apply_delta, same_json
from tests.waiting import WaitTimeout, wait_until

from .procs import LiveEnv

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROLLOUTS = int(os.environ.get("ROLLOUTUI_SOAK_ROLLOUTS", "4"))
FAULTS = int(os.environ.get("ROLLOUTUI_SOAK_FAULTS", "8"))
# A fixed seed by default, so a `make test` failure is one anybody can replay; "random" draws one.
_SEED_SETTING = os.environ.get("ROLLOUTUI_SOAK_SEED") or "44"
SEED = random.randrange(1, 2**31) if _SEED_SETTING == "random" else int(_SEED_SETTING)
CLIENTS = 3
USER, PASSWORD = "soak-op", "soak-password-1"
NS, NAME = "default", "demo"
IMAGES = [f"vllm/vllm-openai:v0.9.{n}" for n in range(1, 9)]

SETUP = f"""
import copy
from django.contrib.auth.models import Group, User
from django.db import connection
from controller.runtime.backend import sim_cluster
from controller.simcluster.database.demo import DEMO_MANIFEST, load_demo
user = User.objects.create_user({USER!r}, password={PASSWORD!r})
user.groups.add(Group.objects.get(name="operators"))
with connection.cursor() as c:
    c.execute("CREATE TABLE soak_log (id INTEGER PRIMARY KEY AUTOINCREMENT, op TEXT, kind TEXT, name TEXT, "
              "uid TEXT, data TEXT)")
    cond = "{{r}}.kind IN ('Pod', 'ModelServing') AND {{r}}.namespace = 'default' AND {{r}}.ms_name = 'demo'"
    for op, row in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD")):
        data = "NULL" if op == "DELETE" else row + ".data"
        c.execute(f"CREATE TRIGGER soak_{{op.lower()}} AFTER {{op}} ON controller_simobject "
                  f"WHEN {{cond.format(r=row)}} "
                  f"BEGIN INSERT INTO soak_log (op, kind, name, uid, data) VALUES "
                  f"('{{op.lower()}}', {{row}}.kind, {{row}}.name, {{row}}.uid, {{data}}); END")
m = copy.deepcopy(DEMO_MANIFEST)
m["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"] = {{"maxUnavailable": 1, "maxSurge": 1, "partition": 1}}
emit(load_demo(sim_cluster(actor="operator"), nodes=6, gpus=8, manifest=m))
"""


def fail(msg: str):
    pytest.fail(
        f"{msg}\n(reproduce: ROLLOUTUI_SOAK_SEED={SEED} ROLLOUTUI_SOAK_ROLLOUTS={ROLLOUTS} "
        f"ROLLOUTUI_SOAK_FAULTS={FAULTS})"
    )


# A process restarting (Daphne, Redis, a worker) shows as a refused or reset connection or an HTTP
# error from urllib: "not yet". Anything else (a bug in the test or the product) propagates.
RESTARTING = (OSError, http.client.HTTPException)


def wait_for(predicate, timeout: float, what: str, poll: float = 0.2):
    try:
        return wait_until(predicate, what=what, timeout=timeout, interval=poll, retry_on=RESTARTING, limit=500)
    except WaitTimeout as exc:
        fail(str(exc))


class Product:
    def __init__(self, env: LiveEnv) -> None:
        from rolloutui.embedded_redis import free_port

        self.env = env
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.workers = 0
        self.token = None
        # Set once the processes are stopped. The fault thread waits for it before it ends: the
        # Redis it restarts dies with it otherwise (EmbeddedRedis asks the kernel for SIGTERM when
        # its parent goes, PR_SET_PDEATHSIG, and Linux means the parent *thread*).
        self.closed = threading.Event()

    def start_daphne(self) -> None:
        self.env.start(
            "daphne",
            [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                str(self.port),
                "--access-log",
                os.devnull,
                "rolloutui.asgi:application",
            ],
        )
        wait_for(lambda: self.get("/healthz", auth=False, raw=True), 60, "Daphne's /healthz")

    def new_worker(self) -> str:
        self.workers += 1
        name = f"worker-{self.workers}"
        self.env.start_worker(name, concurrency=1)
        return name

    def request(self, path: str, body: dict | None = None, auth: bool = True, raw: bool = False):
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if auth:
            headers["Authorization"] = f"Token {self.token}"
        req = urllib.request.Request(
            self.url + path,
            method="POST" if body is not None else "GET",
            data=json.dumps(body).encode() if body is not None else None,
            headers=headers,
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            data = resp.read()
            return True if raw else json.loads(data)

    def get(self, path, **kw):
        return self.request(path, **kw)


# -- websocket clients ----------------------------------------------------------------------------------


class Clients:
    """CLIENTS websocket clients in one asyncio thread: each applies deltas as the page does, asks
    for a resync when a delta's base is not what it holds, and reconnects whenever it is dropped."""

    def __init__(self, product: Product) -> None:
        self.product = product
        self.states: dict[int, dict | None] = {}
        self.connects = {i: 0 for i in range(CLIENTS)}
        self.ws: dict[int, object] = {}
        self.stop = False
        self.errors: list[BaseException] = []  # unexpected exceptions of the clients, re-raised by the test
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.cookies = asyncio.run_coroutine_threadsafe(self._login(), self.loop).result(60)
        self.tasks = [asyncio.run_coroutine_threadsafe(self._client(i), self.loop) for i in range(CLIENTS)]

    async def _login(self) -> str:
        import aiohttp
        from yarl import URL

        url = self.product.url
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            async with http.get(url + "/accounts/login/") as resp:
                await resp.text()
            csrf = http.cookie_jar.filter_cookies(URL(url))["csrftoken"].value
            async with http.post(
                url + "/accounts/login/",
                data={"username": USER, "password": PASSWORD, "csrfmiddlewaretoken": csrf},
                headers={"Referer": url + "/accounts/login/"},
                allow_redirects=False,
            ) as resp:
                assert resp.status == 302, resp.status
            return "; ".join(f"{c.key}={c.value}" for c in http.cookie_jar)

    async def _client(self, i: int) -> None:
        import aiohttp

        url = self.product.url.replace("http", "ws") + f"/ws/modelservings/{NS}/{NAME}/"
        headers = {"Origin": self.product.url, "Cookie": self.cookies}
        while not self.stop:
            try:
                async with aiohttp.ClientSession() as http:
                    async with http.ws_connect(url, headers=headers, max_msg_size=0) as ws:
                        self.ws[i] = ws
                        self.connects[i] += 1
                        async for msg in ws:
                            if msg.type != aiohttp.WSMsgType.TEXT:
                                break
                            data = json.loads(msg.data)
                            # Echo the message's acknowledgement (rolloutui/consumers.py), then use
                            # the message without it, as the page does.
                            ack = data.pop("ack")
                            await ws.send_json({"type": "ack", "n": ack["n"], "token": ack["token"]})
                            held = self.states.get(i)
                            if data.get("type") == "state.delta":
                                if held is None or held.get("time") != data["base"]:
                                    await ws.send_json({"type": "resync"})
                                else:
                                    self.states[i] = apply_delta(held, data)
                            else:
                                self.states[i] = data
            except (aiohttp.ClientError, OSError, TimeoutError):
                pass  # dropped, or Daphne restarting: reconnect
            except Exception as exc:  # a bug in this client or in a message: the test reports it
                self.errors.append(exc)
                return
            self.ws.pop(i, None)
            await asyncio.sleep(0.2)  # pacing of reconnects, as the page's backoff

    def drop(self, i: int) -> None:
        ws = self.ws.get(i)
        if ws is not None:
            asyncio.run_coroutine_threadsafe(ws.close(), self.loop).result(10)

    def close(self) -> None:
        # Each client returns once it sees ``stop`` after its socket closes; the loop stops only then,
        # so no client coroutine is left suspended for the garbage collector to close.
        self.stop = True
        for i in list(self.ws):
            self.drop(i)
        for task in self.tasks:
            try:
                task.result(30)
            except concurrent.futures.TimeoutError:
                task.cancel()  # stuck connecting to a server that is gone: cancelled, not waited for
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


# -- the run ----------------------------------------------------------------------------------------------


@pytest.fixture
def product(tmp_path):
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        pytest.skip("the soak's history triggers are SQLite's")
    env = LiveEnv(tmp_path / "soak", speed=20.0)
    env.python(SETUP)
    p = Product(env)
    env.start_beat()
    p.new_worker()
    p.new_worker()
    p.start_daphne()
    p.token = p.request("/api/auth/token/", {"username": USER, "password": PASSWORD}, auth=False)["token"]
    yield p
    env.close()
    p.closed.set()


def state(p: Product) -> dict:
    return p.get(f"/api/modelservings/{NS}/{NAME}/")


def converged_on(s: dict, revision: str | None = None) -> bool:
    revs = {i.get("revision") for i in s.get("instances") or []}
    ok = bool(s.get("converged")) and revs == {s.get("updateRevision")}
    return ok and (revision is None or s.get("updateRevision") == revision)


def test_faults_during_random_rollouts_break_no_promise(product):
    p = product
    rng = random.Random(SEED)
    print(f"\nsoak: seed {SEED}, {ROLLOUTS} rollouts, {FAULTS} faults")
    started = time.monotonic()
    wait_for(lambda: converged_on(state(p)), 120, "the first convergence")
    clients = Clients(p)
    requests: list[dict] = []  # {reason, action, outcome}
    faults: list[str] = []
    done = threading.Event()
    fault_error: list[BaseException] = []

    def control(action: str, body: dict) -> None:
        reason = f"soak {SEED} #{len(requests)} {action}"
        entry = {"reason": reason, "action": action, "outcome": None}
        requests.append(entry)
        try:
            p.request(f"/api/modelservings/{NS}/{NAME}/{action}", {**body, "reason": reason})
            entry["outcome"] = "ok"
        except urllib.error.HTTPError as exc:
            entry["outcome"] = f"http {exc.code}"
        except OSError as exc:  # Daphne restarting: the outcome is unknown
            entry["outcome"] = f"unknown ({type(exc).__name__})"

    def inject() -> None:
        import redis

        from controller.runtime.locks import ReconcileLock

        try:
            kinds = ["kill-worker", "restart-redis", "restart-daphne", "drop-websocket"]
            for n in range(FAULTS):
                kind = kinds[n % 4] if n < 4 else rng.choice(kinds)
                if kind == "kill-worker":
                    lock = ReconcileLock(None, f"{NS}/{NAME}").lock_key
                    client = redis.Redis.from_url(p.env.redis_url.rstrip("/") + "/2")
                    try:  # mid-pass: while a pass holds the lock
                        wait_until(
                            lambda client=client, lock=lock: client.exists(lock),
                            what="a pass to hold the reconcile lock",
                            timeout=5,
                            interval=0.01,
                            retry_on=(redis.RedisError,),
                        )
                    except WaitTimeout:
                        pass  # no pass in 5 s (nothing to roll out): the kill then lands between passes
                    victim = rng.choice(sorted(k for k in p.env.procs if k.startswith("worker-")))
                    p.env.kill(victim)
                    p.new_worker()
                elif kind == "restart-redis":
                    p.env.redis.stop()
                    p.env.redis.start()
                elif kind == "restart-daphne":
                    p.env.stop("daphne")
                    p.start_daphne()
                else:
                    clients.drop(rng.randrange(CLIENTS))
                faults.append(kind)
                # Pacing (not synchronisation): spread the faults over the rollouts.
                time.sleep(rng.uniform(0.5, 2.5))
        except BaseException as exc:
            fault_error.append(exc)
        finally:
            done.set()
            p.closed.wait(3600)  # keep the Redis this thread started alive (see Product.closed)

    injector = threading.Thread(target=inject, daemon=True)
    injector.start()
    last_image = None
    for n in range(ROLLOUTS):
        # A few operator controls around each rollout.
        for _ in range(rng.randrange(3)):
            what = rng.choice(["pause", "resume", "promote-step", "promote-full"])
            if what == "promote-step":
                spec = p.get(f"/api/modelservings/{NS}/{NAME}/manifest")["spec"]
                part = (spec["rolloutStrategy"].get("rollingUpdateConfiguration") or {}).get("partition") or 0
                if part:
                    control("promote", {"partition": int(part) - 1})
            elif what == "promote-full":
                control("promote", {"full": True})
            else:
                control(what, {})
        if rng.random() < 0.25 and n:
            revs = wait_for(lambda: p.get(f"/api/modelservings/{NS}/{NAME}/revisions"), 30, "the revisions")
            target = rng.choice([r for r in revs if not r.get("update")] or revs)
            control("rollback", {"toRevision": target["number"]})
        else:
            last_image = rng.choice([i for i in IMAGES if i != last_image])
            role = rng.choice(["prefill", "decode"])
            control("set-image", {"role": role, "image": last_image})
        control("resume", {})
        # Let the rollout go a random part of the way (condition, with a deadline), then the next.
        goal = rng.randrange(0, 4)
        wait_for(
            lambda goal=goal: (
                (s := state(p)) and ((s.get("counts") or {}).get("updatedReplicas", 0) >= goal or converged_on(s))
            ),
            180,  # margin: Daphne restarting on a loaded 2-core machine took close to a minute
            f"rollout {n} to update {goal} groups",
        )
    wait_for(lambda: done.is_set(), 300, "the faults to finish")
    if fault_error:
        raise fault_error[0]
    # Faults stopped: a final full promote + resume, then convergence.
    control("promote", {"full": True})
    seen: list[dict] = []

    def final():
        s = state(p)
        seen[:] = [{k: s.get(k) for k in ("phase", "converged", "updateRevision", "counts", "conditions")}]
        return converged_on(s) and s

    try:
        s_final = wait_for(final, 180, "convergence after the faults")
    except BaseException:
        print("last state:", json.dumps(seen)[:3000], "\nworker logs:", *(p.env.log(k)[-1500:] for k in p.env.procs))
        raise
    ms = p.get(f"/api/modelservings/{NS}/{NAME}/manifest")
    cause = ms["metadata"]["annotations"].get("serving.rolloutui.io/change-cause", "")
    assert cause.endswith(requests[-1]["reason"]) or requests[-1]["outcome"] != "ok", cause

    # Websocket clients end with the REST state. The simulated traffic stops first: in-flight
    # counts are part of the state and change between passes (a resync pass publishes them).
    p.env.python("from controller.models import SimTraffic\nSimTraffic.objects.update(rps=0)\nemit(1)")
    diffs: dict[int, str | None] = {}

    def clients_agree():
        rest = state(p)
        rest.pop("time", None)
        for i in range(CLIENTS):
            held = dict(clients.states.get(i) or {})
            held.pop("time", None)
            diffs[i] = same_json(held, rest)
        return not any(diffs.values())

    if clients.errors:
        raise clients.errors[0]
    try:
        wait_for(clients_agree, 90, "the websocket clients to hold the REST state", poll=0.5)
    except BaseException:
        print("websocket differences:", diffs, "connects:", clients.connects)
        raise
    clients.close()

    # The audit: one record per request, none lost.
    audit = p.env.python(
        f"""
from rolloutui.models import AuditRecord
emit([[a.reason, a.result] for a in AuditRecord.objects.filter(reason__startswith="soak {SEED} ")])
"""
    )
    by_reason: dict[str, list[str]] = {}
    for reason, result in audit:
        by_reason.setdefault(reason, []).append(result)
    twice = [r for r, v in by_reason.items() if len(v) > 1]
    lost = [q["reason"] for q in requests if q["outcome"] == "ok" and by_reason.get(q["reason"]) != ["ok"]]

    # The stored history.
    violations, duplicates, unaudited = replay(p.env.var_dir, by_reason)
    wall = time.monotonic() - started
    print(
        f"soak: seed {SEED}: {ROLLOUTS} rollouts, {len(requests)} controls, {len(faults)} faults "
        f"({', '.join(f'{k} {faults.count(k)}' for k in sorted(set(faults)))}), websocket connects "
        f"{sum(clients.connects.values())}, {len(violations)} budget violations, {len(duplicates)} duplicated "
        f"pods, {len(twice)} controls audited twice, {len(lost) + len(unaudited)} audit entries lost, "
        f"{wall:.0f}s; final revision {s_final['updateRevision']}"
    )
    problems = {
        "budget violations": violations[:5],
        "duplicated pod creations": duplicates[:5],
        "controls audited twice": twice[:5],
        "controls answered ok without an ok audit record": lost[:5],
        "changes applied without an audit record": unaudited[:5],
    }
    problems = {k: v for k, v in problems.items() if v}
    if problems:
        fail(f"soak found: {json.dumps(problems, indent=1)[:4000]}")
    assert len(faults) == FAULTS


def replay(var_dir, audited: dict[str, list[str]]):
    """Replay soak_log: the budgets at every row change after the first convergence, duplicated pod
    creations, change causes without an audit record."""
    db = sqlite3.connect(str(var_dir / "db.sqlite3"))  # settings' default database in ROLLOUTUI_VAR_DIR
    rows = db.execute("SELECT id, op, kind, name, uid, data FROM soak_log ORDER BY id").fetchall()
    db.close()
    pods: dict[str, dict] = {}
    ms: dict | None = None
    last_uid: dict[str, tuple[str, str]] = {}  # pod name -> (uid, revision)
    # Pods whose deletion was logged. A surge group (ordinal >= replicas) exists only while a
    # rollout step needs it: removed when the step is done ("surge no longer needed") and created
    # again, at the same revision, by the next step (a promote) - a new creation, not a repeated one.
    surge_gone: set[str] = set()
    # The ModelServing's generation when a pod was deleted. Created again at the same revision under
    # a newer spec (a rollback to that revision, a pause that recovers the group where it was) is a
    # new decision; a repeated action happens under the same spec (a pass redone after a fault).
    deleted_at: dict[str, object] = {}
    violations, duplicates, causes = [], [], set()
    armed = False
    prefix = "serving.rolloutui.io/"
    for row_id, op, kind, name, uid, data in rows:
        obj = json.loads(data) if data else None
        if kind == "ModelServing":
            if obj:
                ms = obj
                cause = (obj["metadata"].get("annotations") or {}).get(prefix + "change-cause", "")
                if " soak " in f" {cause}":
                    causes.add(cause.split(": ", 2)[-1])
            continue
        if op == "delete":
            pods.pop(name, None)
            surge_gone.add(name)
            # Stamped when the deletion was decided (deletionTimestamp set, below), not when the row
            # went: a pod shuts down gracefully, so a delete decided before a rollback disappears after.
            deleted_at.setdefault(name, (ms or {}).get("metadata", {}).get("generation"))
            continue
        if obj and obj["metadata"].get("deletionTimestamp") and name not in deleted_at:
            deleted_at[name] = (ms or {}).get("metadata", {}).get("generation")
        labels = obj["metadata"].get("labels") or {}
        revision = labels.get(prefix + "revision")
        if op == "insert":
            prev = last_uid.get(name)
            failed_before = prev is not None and prev[1] == "failed"
            ordinal = int(labels.get(prefix + "group-ordinal", -1))
            new_surge = name in surge_gone and ms is not None and ordinal >= ms["spec"]["replicas"]
            generation = (ms or {}).get("metadata", {}).get("generation")
            new_spec = name in deleted_at and deleted_at[name] != generation
            if prev is not None and prev[1] == revision and not (failed_before or new_surge or new_spec):
                duplicates.append(f"log {row_id}: pod {name} recreated at revision {revision}")
            last_uid[name] = (uid, revision)
            surge_gone.discard(name)
            deleted_at.pop(name, None)
        if (obj.get("status") or {}).get("phase") == "Failed":
            last_uid[name] = (uid, "failed")
        pods[name] = obj
        if ms is None:
            continue
        status = ms.get("status") or {}
        spec = ms["spec"]
        if not armed:
            armed = bool(status.get("availableReplicas") == spec["replicas"] and status.get("updatedReplicas"))
            continue
        violations.extend(budget_violations(row_id, spec, pods))
    unaudited = sorted(c for c in causes if "ok" not in audited.get(c, []))
    return violations, duplicates, unaudited


def budget_violations(row_id: int, spec: dict, pods: dict[str, dict]) -> list[str]:
    """The contract (domain.md, ServingGroupRollingUpdate): available groups >= replicas -
    maxUnavailable; groups in service <= replicas + maxSurge. Example: replicas 4, maxUnavailable 1,
    maxSurge 1: at least 3 available, at most 5 in service. Faults that fail pods earn an allowance of
    the groups holding a Failed pod."""
    prefix = "serving.rolloutui.io/"
    replicas = spec["replicas"]
    cfg = spec["rolloutStrategy"].get("rollingUpdateConfiguration") or {}
    max_unavailable, max_surge = int(cfg.get("maxUnavailable", 1)), int(cfg.get("maxSurge", 0))
    expected = sum(r["replicas"] * (1 + r.get("workerReplicas", 0)) for r in spec["template"]["roles"])
    groups: dict[int, list[dict]] = {}
    for pod in pods.values():
        groups.setdefault(int(pod["metadata"]["labels"][prefix + "group-ordinal"]), []).append(pod)

    def serving(pod):
        meta = pod["metadata"]
        return not (meta.get("deletionTimestamp") or (meta.get("annotations") or {}).get(prefix + "draining"))

    def ready(pod):
        status = pod.get("status") or {}
        if not serving(pod):
            return False
        return any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or [])

    available = sum(1 for g in groups.values() if len(g) == expected and all(ready(x) for x in g))
    faulted = sum(1 for g in groups.values() if any((x.get("status") or {}).get("phase") == "Failed" for x in g))
    out = []
    if available + faulted < replicas - max_unavailable:
        out.append(f"log {row_id}: {available} groups available, floor {replicas - max_unavailable}")
    # In service as the planner's property test counts them (tests/core/test_planner_properties.py):
    # a group with a pod that is neither draining nor deleting. A group on its way out holds no slot
    # (as Kubernetes' maxSurge does not count terminating pods).
    in_service = [o for o, g in groups.items() if any(serving(x) for x in g)]
    if len(in_service) > replicas + max_surge:
        out.append(f"log {row_id}: {len(in_service)} groups in service, at most {replicas + max_surge}")
    return out


_ = signal  # SIGKILL is what LiveEnv.kill sends
