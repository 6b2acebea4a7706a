"""A Celery worker survives a restart of its Redis broker and keeps processing tasks afterwards.

Found by the fault soak (tests/live/test_soak.py): with Celery 5.7.0 / kombu 5.7.0 the worker exited
("Unrecoverable error: AttributeError('NoneType' object has no attribute 'hostname')") when Redis
restarted while the worker held an unacknowledged message and had a BRPOP outstanding, the usual
state of a worker of this product (reconciles are requeued with a countdown, so a worker almost always
holds one). rolloutui/worker.py explains the cause and the fix. This test builds that state on purpose:
a reconcile with a countdown of an hour is held (unacknowledged) by the worker, then Redis restarts on
the same port; the worker must still be running and must roll the demo out afterwards.
"""

from __future__ import annotations

import pytest
import redis

from tests import waiting

from .procs import LiveEnv, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NAMES = [("default", "demo")]
SETUP = """
from django.contrib.auth.models import Group, User
from controller.runtime.backend import sim_cluster
from controller.simcluster.database.demo import load_demo
user, _ = User.objects.get_or_create(username="op")
user.groups.add(Group.objects.get(name="operators"))
emit(load_demo(sim_cluster(actor="operator"), nodes=6, gpus=8))
"""


def hold(env: LiveEnv) -> None:
    """Send a reconcile due in an hour: the worker takes it and holds it unacknowledged."""
    from celery import Celery

    from controller.runtime.enqueue import QUEUE, RECONCILE_TASK

    app = Celery("hold", broker=env.redis_url.rstrip("/") + "/0")
    try:
        app.send_task(RECONCILE_TASK, args=("default", "held-for-an-hour"), countdown=3600, queue=QUEUE)
    finally:
        app.close()


# While Redis restarts, reading it fails: "not yet" to a wait.
REDIS_DOWN = (redis.RedisError,)


def redis_up(env: LiveEnv) -> bool:
    return bool(redis.Redis.from_url(env.redis_url).ping())


def unacked(env: LiveEnv) -> int:
    # kombu's Redis transport keeps the messages a worker holds in the hash "unacked" of the broker db.
    return redis.Redis.from_url(env.redis_url.rstrip("/") + "/0").hlen("unacked")


def test_a_worker_survives_a_redis_restart_and_keeps_processing_tasks(tmp_path):
    env = LiveEnv(tmp_path / "env", speed=20.0)
    try:
        env.python(SETUP)
        env.start_beat()
        worker = env.start_worker("worker", concurrency=1)
        first = wait_until(env, NAMES, "lambda s: s['default/demo'] and s['default/demo']['converged']", timeout=90)
        assert first["ok"], first
        old = first["states"]["default/demo"]["updateRevision"]

        hold(env)
        waiting.wait_until(
            lambda: unacked(env) >= 1, what="the worker to hold the delayed reconcile", timeout=60, retry_on=REDIS_DOWN
        )
        for _ in range(2):  # twice: the second restart hits the connection made after the first
            env.redis.stop()
            env.redis.start()  # same port (EmbeddedRedis keeps the one it bound first), empty
            waiting.wait_until(lambda: redis_up(env), what="Redis to answer", timeout=30, retry_on=REDIS_DOWN)
            # The worker reconnects (it retries every 2 s); a task sent now must run.
            hold(env)
            waiting.wait_until(
                lambda: worker.poll() is not None or unacked(env) >= 1,
                what="the worker to reconnect",
                timeout=60,
                retry_on=REDIS_DOWN,
            )
            assert worker.poll() is None, f"the worker exited after a Redis restart:\n{env.log('worker')[-4000:]}"

        env.manage(
            "rollout", "set-image", "default/demo", "--role", "decode", "--image", "vllm/vllm-openai:v0.9.2",
            "--reason", "after a broker restart", "--user", "op",
        )  # fmt: skip
        done = wait_until(
            env,
            NAMES,
            f"lambda s: s['default/demo']['converged'] and s['default/demo']['updateRevision'] != {old!r} "
            "and s['default/demo']['revisions'] == [s['default/demo']['updateRevision']]",
            timeout=120,
        )
        assert worker.poll() is None, f"the worker exited:\n{env.log('worker')[-4000:]}"
        assert done["ok"], f"{done}\n{env.log('worker')[-4000:]}"
        assert "Unrecoverable error" not in env.log("worker"), env.log("worker")[-4000:]
    finally:
        env.close()
