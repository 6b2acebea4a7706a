"""The live runtime with real processes: Redis, Celery workers and beat, a shared file database.

These prove what the issue asks of the reconcile loop: a rollout started through the service layer
converges on the simulated cluster; a worker SIGKILLed in the middle loses nothing; two workers
never reconcile the same ModelServing at once (the lock audit shows no overlapping passes).
"""

from __future__ import annotations

import re
import time

import pytest

from .procs import LiveEnv, wait_until

# `database`: `make test` re-runs these on PostgreSQL (LiveEnv then creates a database of its own).
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.database]

NAMES = [("default", "demo")]
SETUP = """
from django.contrib.auth.models import Group, User
from controller.runtime.backend import sim_cluster
from controller.simcluster.database.demo import load_demo
user, _ = User.objects.get_or_create(username="op")
user.groups.add(Group.objects.get(name="operators"))
done = load_demo(sim_cluster(actor="operator"), nodes=6, gpus=8)
emit(done)
"""


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    # Speed 20: a demo pod is Ready 0.4-1.2 s after it is created; a drain of 60 s lasts 3 s.
    env = LiveEnv(tmp_path_factory.mktemp("live"), speed=20.0, ROLLOUTUI_LOCK_AUDIT="1")
    env.python(SETUP)
    env.start_beat()
    yield env
    env.close()


def rolled_out_from(old: str) -> str:
    """Predicate (source, evaluated in the polling process): converged on a revision other than
    ``old``, and every instance runs it."""
    return (
        f"lambda s: s['default/demo']['converged'] and s['default/demo']['updateRevision'] != {old!r} "
        "and s['default/demo']['revisions'] == [s['default/demo']['updateRevision']]"
    )


def set_image(live, image):
    out = live.manage(
        "rollout",
        "set-image",
        "default/demo",
        "--role",
        "decode",
        "--image",
        image,
        "--reason",
        "integration test",
        "--user",
        "op",
    )
    assert "ok" in out.stdout


def overlaps(live, key="default/demo"):
    """Pairs of passes of one ModelServing that ran at the same time, from the lock audit list."""
    import redis

    client = redis.Redis.from_url(live.redis_url.rstrip("/") + "/2")
    entries = [e.decode().split() for e in client.lrange(f"rolloutui:audit:{key}", 0, -1)]
    open_passes: dict[str, float] = {}
    intervals = []
    for what, holder, pid, t in entries:
        if what == "start":
            open_passes[f"{holder}/{pid}"] = float(t)
        else:
            start = open_passes.pop(f"{holder}/{pid}", None)
            if start is not None:
                intervals.append((start, float(t), pid))
    intervals.sort()
    bad = [(a, b) for a, b in zip(intervals, intervals[1:]) if b[0] < a[1]]
    return bad, intervals


def test_a_rollout_started_through_the_service_layer_converges_on_real_workers(live):
    live.start_worker("worker-a", concurrency=2)
    first = wait_until(live, NAMES, "lambda s: s['default/demo'] and s['default/demo']['converged']", timeout=60)
    assert first["ok"], first
    old = first["states"]["default/demo"]["updateRevision"]
    set_image(live, "vllm/vllm-openai:v0.9.2")
    done = wait_until(live, NAMES, rolled_out_from(old), timeout=90)
    assert done["ok"], done
    live.stop("worker-a")


def test_killing_the_worker_mid_rollout_loses_nothing(live):
    live.start_worker("worker-b", concurrency=1)
    before = wait_until(live, NAMES, "lambda s: s['default/demo']['converged']", timeout=60)
    assert before["ok"], before
    old = before["states"]["default/demo"]["updateRevision"]
    set_image(live, "vllm/vllm-openai:v0.9.3")
    # Mid-rollout: the new revision runs somewhere, the old one still somewhere else.
    mid = wait_until(
        live,
        NAMES,
        f"lambda s: len(s['default/demo']['revisions']) > 1 and {old!r} in s['default/demo']['revisions']",
        timeout=60,
        poll=0.2,
    )
    assert mid["ok"], mid
    live.kill("worker-b")  # SIGKILL the worker and its pool: no shutdown, locks and messages left behind
    live.start_worker("worker-c", concurrency=1)
    done = wait_until(live, NAMES, rolled_out_from(old), timeout=120)
    assert done["ok"], done
    live.stop("worker-c")


def test_two_workers_never_reconcile_one_modelserving_at_once(live):
    live.start_worker("worker-d", concurrency=3)
    live.start_worker("worker-e", concurrency=3)
    before = wait_until(live, NAMES, "lambda s: s['default/demo']['converged']", timeout=60)
    assert before["ok"], before
    old = before["states"]["default/demo"]["updateRevision"]
    started = time.time()
    set_image(live, "vllm/vllm-openai:v0.9.4")
    done = wait_until(live, NAMES, rolled_out_from(old), timeout=90)
    assert done["ok"], done
    bad, intervals = overlaps(live)
    during = [i for i in intervals if i[0] >= started]
    assert len(during) >= 10, f"expected many passes during the rollout, got {len(during)}"
    assert len({pid for _, _, pid in during}) >= 2, "both workers' processes should have taken part"
    assert not bad, f"overlapping passes of default/demo: {bad[:3]}"
    for name in ("worker-d", "worker-e"):
        log = live.log(name)
        assert not re.search(r"Traceback|\"ERROR\"", log), log[-3000:]
        live.stop(name)
