"""The simulated kubelet's events and log lines of a pod (``controller.simcluster.podlog``), from the
same pod states both drivers store: a healthy pod's start and load, a crashing image's crash loop,
a deleted pod's shutdown, and the bounds."""

from __future__ import annotations

from controller.simcluster import physics, podlog
from controller.simcluster.config import ClusterConfig, ImageBehaviour

T0 = 1000.0


def _pod(image: str = "engine:v1", probe: bool = True) -> dict:
    container = {"name": "engine", "image": image}
    if probe:
        container["readinessProbe"] = {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 5}
    pod = {
        "metadata": {"name": "chat-0-decode-0-0", "namespace": "default", "uid": "u-1", "annotations": {}},
        "spec": {"containers": [container]},
        "status": {"phase": "Pending"},
    }
    return physics.bind(pod, T0, "node-2", "10.0.0.3", "10.1.0.7")


def _run(pod: dict, config: ClusterConfig, until: float) -> dict:
    pod, at, _ = physics.start(pod, T0, config)
    while at is not None and at <= until:
        pod, at, _ = physics.advance(pod, at, config, rounds=1)
    return pod


def test_a_loading_pod_reports_scheduled_pulled_started_and_readiness_probe_failures_and_logs_its_load_progress():
    config = ClusterConfig()  # pull 5 + start 2, load 30: running at 1007, Ready at 1037
    pod = _run(_pod(), config, until=T0 + 22)
    events = podlog.pod_events(pod, T0 + 22)
    reasons = [e["reason"] for e in events]
    assert reasons[:2] == ["Scheduled", "Pulling"]
    assert {"Pulled", "Created", "Started", "Unhealthy"} <= set(reasons)
    assert events[0]["message"] == "Successfully assigned default/chat-0-decode-0-0 to node-2"
    unhealthy = next(e for e in events if e["reason"] == "Unhealthy")
    assert unhealthy["type"] == "Warning" and unhealthy["count"] == 3  # 15 s of load, probed every 5 s
    lines = [line["line"] for line in podlog.pod_log(pod, T0 + 22)]
    assert lines[0].endswith("Starting the model server, image engine:v1")
    assert lines[-1].endswith("Loading safetensors checkpoint shards: 50%")
    assert not any("startup complete" in line for line in lines)


def test_a_ready_pod_logs_its_load_time_and_the_requests_it_served():
    config = ClusterConfig()
    pod = _run(_pod(), config, until=T0 + 40)
    requests = [
        {"id": "r1", "started": T0 + 38, "finished": T0 + 39, "status": "ok", "latencyMs": 120.0},
        {"id": "r2", "started": T0 + 39.5, "finished": None},
    ]
    lines = [line["line"] for line in podlog.pod_log(pod, T0 + 40, requests=requests)]
    assert any("Model loaded in 30.0 s; application startup complete" in line for line in lines)
    assert any('"POST /v1/completions HTTP/1.1" 200 OK, first token after 120 ms' in line for line in lines)
    assert lines[-1].endswith("received (r2)")
    events = podlog.pod_events(pod, T0 + 40)
    assert next(e for e in events if e["reason"] == "Unhealthy")["count"] == 6  # stops when Ready


def test_a_crashing_image_shows_its_crash_output_and_a_back_off_warning_counted_over_its_restarts():
    config = ClusterConfig(images={"engine:bad": ImageBehaviour(crash=True)})
    pod = _run(_pod("engine:bad"), config, until=T0 + 200)
    state = physics.kubelet_state(pod)["containers"][0]
    assert state["restarts"] >= 2
    backoff = next(e for e in podlog.pod_events(pod, T0 + 200) if e["reason"] == "BackOff")
    assert backoff["type"] == "Warning" and backoff["count"] == state["restarts"]
    lines = [line["line"] for line in podlog.pod_log(pod, T0 + 200)]
    assert any("RuntimeError: CUDA error" in line for line in lines)
    assert any(f"exited with code 1 (restart {state['restarts']})" in line for line in lines)


def test_a_deleted_pod_reports_killing_and_logs_its_shutdown():
    config = ClusterConfig()
    pod = _run(_pod(), config, until=T0 + 40)
    pod["metadata"]["deletionTimestamp"] = "1970-01-01T00:16:50Z"  # T0 + 10 s... any stamp
    pod = physics.on_delete(pod, T0 + 50, config).pod
    assert any(
        e["reason"] == "Killing" and e["message"] == "Stopping container engine"
        for e in podlog.pod_events(pod, T0 + 50)
    )
    assert "Received SIGTERM" in podlog.pod_log(pod, T0 + 50)[-2]["line"]


def test_the_log_is_bounded_by_the_tail_asked_and_by_its_maximum():
    config = ClusterConfig()
    pod = _run(_pod(), config, until=T0 + 40)
    many = [{"id": f"r{i}", "started": T0 + 38, "finished": T0 + 39, "status": "ok"} for i in range(3000)]
    assert len(podlog.pod_log(pod, T0 + 40, requests=many, tail=5)) == 5
    assert len(podlog.pod_log(pod, T0 + 40, requests=many, tail=10**6)) == podlog.MAX_TAIL
    assert podlog.pod_log(pod, T0 + 40, tail=0) == []


def test_an_unscheduled_pod_has_one_failed_scheduling_warning_and_no_log():
    pod = {
        "metadata": {"name": "p", "namespace": "default", "uid": "u"},
        "spec": {"containers": [{"name": "engine", "image": "engine:v1"}]},
        "status": {},
    }
    pod = physics.unschedulable(pod, T0, nodes=4, need=8, most_free=2)
    events = podlog.pod_events(pod, T0 + 5)
    assert [(e["reason"], e["type"]) for e in events] == [("FailedScheduling", "Warning")]
    assert podlog.pod_log(pod, T0 + 5) == []


def test_a_kubelet_step_that_crashes_a_container_reports_one_back_off_warning_and_a_healthy_step_none():
    config = ClusterConfig(images={"engine:bad": ImageBehaviour(crash=True)})
    pod, at, _ = physics.start(_pod("engine:bad"), T0, config)
    steps = []
    while at is not None and at <= T0 + 200:
        after, at, _ = physics.advance(pod, at, config, rounds=1)
        steps.append(podlog.crashes(pod, after))
        pod = after
    crashed = [s for s in steps if s]
    assert len(crashed) == physics.kubelet_state(pod)["containers"][0]["restarts"]
    assert all(len(s) == 1 and s[0]["reason"] == "BackOff" and s[0]["type"] == "Warning" for s in crashed)
    healthy = _run(_pod(), ClusterConfig(), until=T0 + 40)
    assert podlog.crashes(healthy, healthy) == []
