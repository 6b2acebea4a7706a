"""Dashboard fixtures: a ModelServing created through the services, and a live stack (Redis,
Daphne with websockets, Celery worker and beat: `manage.py runall`) for the browser tests.

pytest-django's `live_server` is WSGI and has no websockets, so the browser tests run the real
product as a subprocess on a free port, against its own file database in a temporary var dir,
and seed it (users, a ModelServing) through `manage.py shell` in that same environment.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TEST_PASSWORD
from tests.live.procs import stop_process_group
from tests.waiting import wait_for_runall

from .helpers import NAMESPACE, create_modelserving, manifest, unique_name

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"

# Variables that would make the child's settings depend on this shell or on the test process.
_SCRUBBED = (
    "DATABASE_URL",
    "REDIS_URL",
    "PROMETHEUS_MULTIPROC_DIR",
    "DJANGO_SETTINGS_MODULE",
    "PORT",
    "HOST",
    "DJANGO_ALLOW_ASYNC_UNSAFE",
)


@pytest.fixture
def ms(db):
    """A fresh ModelServing (unique name) with its first revision recorded."""
    name = unique_name()
    state = create_modelserving(name, partition=0)
    return {"namespace": NAMESPACE, "name": name, "state": state}


@pytest.fixture
def ms_partitioned(db):
    name = unique_name("part")
    state = create_modelserving(name, partition=2)
    return {"namespace": NAMESPACE, "name": name, "state": state}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SEED = """
from django.contrib.auth.models import Group, User
from controller.core.ports import Conflict
for username, group in (("viewer", "viewers"), ("operator", "operators")):
    user, _ = User.objects.get_or_create(username=username)
    user.set_password({password!r})
    user.save()
    user.groups.add(Group.objects.get(name=group))
from rolloutui.services import cluster
c = cluster.get_cluster()
if not c.list_nodes():
    for _ in range(5):
        c.add_node(8)
try:
    c.create_modelserving({manifest!r})
except Conflict:
    pass
from controller.runtime.enqueue import send
send("default", "chat")
print("seeded")
"""


ROOM = """
from rolloutui.services import cluster
c = cluster.get_cluster()
for _ in range({nodes}):
    c.add_node(8)
print("room")
"""

REMOVE = """
from controller.core.ports import NotFound
from rolloutui.services import cluster
c = cluster.get_cluster()
for kind, name in {workloads!r}:
    try:
        if kind == "ModelServing":
            c.delete_modelserving("default", name)
        else:
            c.delete_object(kind, "default", name)
    except NotFound:
        pass
print("removed")
"""


class LiveStack:
    def __init__(self, url: str, env: dict, proc: subprocess.Popen, log: Path) -> None:
        self.url, self.env, self.proc, self.log = url, env, proc, log
        self.namespace, self.name = NAMESPACE, "chat"

    def manage(self, *args: str, timeout: float = 120) -> str:
        out = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if out.returncode != 0:
            raise AssertionError(f"manage.py {' '.join(args)} failed:\n{out.stdout}\n{out.stderr}")
        return out.stdout

    def add_room(self, gpus: int) -> None:
        """Nodes of 8 GPUs enough for ``gpus`` more (rounded up): 20 GPUs -> 3 nodes."""
        assert "room" in self.manage("shell", "-c", ROOM.format(nodes=-(-gpus // 8)))

    def remove(self, workloads: list[tuple[str, str]]) -> None:
        """Delete (kind, name) workloads in namespace default, as owner-reference GC would take
        their pods: the GPUs they held go back to the session's other tests."""
        assert "removed" in self.manage("shell", "-c", REMOVE.format(workloads=list(workloads)))


@pytest.fixture
def own_room(live_stack):
    """Room of the test's own on the shared live stack.

    The stack lives for the whole session and every live test's workloads share its nodes, so a
    test that leaves a ModelServing behind (Pending pods of a rollout that did not finish, a
    crashing revision retrying) takes GPUs from the tests after it: they went Blocked in CI. A
    test asks ``own_room(gpus, ("ModelServing", name), ...)``: nodes for its peak are added
    before it creates anything, and its workloads are deleted when it ends, pass or fail.
    """
    owned: list[tuple[str, str]] = []

    def claim(gpus: int, *workloads: tuple[str, str]) -> None:
        owned.extend(workloads)
        live_stack.add_room(gpus)

    yield claim
    if owned:
        live_stack.remove(owned)


@pytest.fixture(scope="session")
def live_stack(tmp_path_factory):
    """`manage.py runall --no-demo` on a free port, seeded with `viewer`, `operator` and the
    ModelServing default/chat (6 groups, partition 2)."""
    var_dir = tmp_path_factory.mktemp("live-var")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED and not k.startswith("ROLLOUTUI_")}
    env.update(
        {"DJANGO_SETTINGS_MODULE": "rolloutui.settings", "ROLLOUTUI_VAR_DIR": str(var_dir), "PYTHONUNBUFFERED": "1"}
    )
    # Simulated pods get Ready in 8-23 simulated seconds; at 4x a six-group rollout takes seconds.
    env["ROLLOUTUI_SIM_SPEED"] = os.environ.get("ROLLOUTUI_SIM_SPEED", "4")
    log = var_dir / "runall.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "runall", "--no-demo", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    stack = LiveStack(url, env, proc, log)
    try:
        wait_for_runall(proc, url, log)
        seeded = stack.manage(
            "shell", "-c", SEED.format(password=TEST_PASSWORD, manifest=manifest("chat", replicas=6, partition=2))
        )
        assert "seeded" in seeded
        yield stack
    finally:
        stop_process_group(proc)  # only the process group this fixture started


@pytest.fixture
def screenshot_dir() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


@pytest.fixture
def connections_kept_open():
    """The handler closes the database connection when a request starts and ends (Django's
    ``close_old_connections``), which would close the test's transaction on PostgreSQL; Django's
    test clients disconnect it the same way."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
