"""The liveness signals of the processes without an HTTP port: the watch process (heartbeat written
by ``run_controller`` while its loops make progress) and Celery beat (``HeartbeatScheduler``)."""

from __future__ import annotations

import os
import threading
import time

import pytest
from test_k8s_runner import fast_elector, wait_until

from controller.k8s import ClusterWatcher
from controller.k8s.liveness import Heartbeat, age, is_alive, main
from controller.k8s.runner import run_controller


def test_a_heartbeat_file_is_alive_while_younger_than_its_max_age(tmp_path):
    path = tmp_path / "alive"
    assert age(path) is None and not is_alive(path, 60)
    Heartbeat(path).beat()
    assert is_alive(path, 60)
    assert not is_alive(path, 60, now=time.time() + 61)
    assert main([str(path), "--max-age", "60"]) == 0
    old = time.time() - 120
    os.utime(path, (old, old))
    assert main([str(path), "--max-age", "60"]) == 1
    assert main([str(tmp_path / "missing"), "--max-age", "60"]) == 1


def start_controller(api_client, heartbeat, **kwargs):
    stop = threading.Event()
    thread = threading.Thread(
        target=run_controller,
        args=(api_client, lambda ns, n: None),
        kwargs={
            "lease_namespace": "rolloutui",
            "resync_period": 60,
            "stop": stop,
            "elector_factory": fast_elector("one"),
            "heartbeat": heartbeat,
            "heartbeat_interval": 0.05,
            **kwargs,
        },
        daemon=True,
    )
    thread.start()
    return stop, thread


def test_the_watch_process_beats_while_it_leads_and_its_streams_run(api_client, tmp_path):
    heartbeat = Heartbeat(tmp_path / "watch.alive")
    stop, thread = start_controller(api_client, heartbeat)
    try:
        wait_until(lambda: is_alive(heartbeat.path, 1.0))
        first = os.stat(heartbeat.path).st_mtime_ns
        wait_until(lambda: os.stat(heartbeat.path).st_mtime_ns != first)  # it keeps beating
    finally:
        stop.set()
        thread.join(10)


class DyingWatcher(ClusterWatcher):
    """A watch whose pod stream thread dies of a bug after starting (fault injection)."""

    def _run(self, kind: str) -> None:
        if kind == "pods":
            self._progress(kind)
            time.sleep(0.3)  # simulated work: the stream runs a while before its bug strikes
            raise RuntimeError("bug in the pod stream")
        super()._run(kind)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_the_watch_process_stops_beating_when_a_watch_stream_thread_dies(api_client, tmp_path):
    heartbeat = Heartbeat(tmp_path / "watch.alive")
    stop, thread = start_controller(api_client, heartbeat, watcher_factory=DyingWatcher)
    try:
        wait_until(lambda: is_alive(heartbeat.path, 1.0))
        # The stream thread is dead: no more heartbeats, so the probe's max age runs out.
        wait_until(lambda: not is_alive(heartbeat.path, 0.5), timeout=10)
        assert main([str(heartbeat.path), "--max-age", "0.5"]) == 1
    finally:
        stop.set()
        thread.join(10)


def test_a_follower_beats_while_its_election_loop_turns(api_client, tmp_path):
    # Another process holds the Lease: this one never leads, yet it is healthy.
    from controller.k8s import LeaseElector

    holder = fast_elector("holder")(api_client, "rolloutui", "rolloutui-controller")
    holder.start()
    wait_until(holder.is_leader)
    heartbeat = Heartbeat(tmp_path / "follower.alive")
    stop, thread = start_controller(api_client, heartbeat, elector_factory=fast_elector("follower"))
    try:
        wait_until(lambda: is_alive(heartbeat.path, 1.0))
        assert holder.is_leader()
    finally:
        stop.set()
        thread.join(10)
        holder.stop(timeout=5)
    assert isinstance(holder, LeaseElector)


def test_the_beat_scheduler_touches_its_heartbeat_on_every_tick(tmp_path, monkeypatch):
    from celery import Celery

    from controller.k8s.beat import HEARTBEAT_ENV, HeartbeatScheduler

    path = tmp_path / "beat.alive"
    monkeypatch.setenv(HEARTBEAT_ENV, str(path))
    # Not the current app: shared tasks (rolloutui.tasks.run_preview.delay) would then send through
    # it for the rest of the test process (a routing test saw nothing published).
    app = Celery("heartbeat-test", broker="memory://", set_as_current=False)
    app.conf.beat_schedule = {}
    scheduler = HeartbeatScheduler(app=app, schedule_filename=str(tmp_path / "schedule"), lazy=False)
    try:
        assert not path.exists()
        interval = scheduler.tick()
        assert interval >= 0 and is_alive(path, 5)
    finally:
        scheduler.close()
