"""Probe advice (``controller.core.probes``): a serving container that never says when its model is
loaded, or whose probes can restart it while it loads, is warned about, naming the role, the probe
and the figures.

Upstream rules these tests hold the advice to (k8s.io/api core/v1 Probe and the kubelet):
- defaults: initialDelaySeconds 0, periodSeconds 10, failureThreshold 3; the API server defaults a 0
  period or threshold as if it were absent;
- a probe gives a container ``initialDelaySeconds + failureThreshold x periodSeconds`` from the
  container's start before it acts;
- while a startupProbe runs, the liveness and readiness probes are held back.
"""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.core import naming
from controller.core.observe import observe
from controller.core.probes import (
    DEFAULT_FAILURE_THRESHOLD,
    DEFAULT_INITIAL_DELAY_SECONDS,
    DEFAULT_PERIOD_SECONDS,
    LoadTime,
    advice,
    measured_load_times,
    probe_budget,
)
from controller.core.spec import parse_modelserving
from tests.factories import modelserving, role

HTTP = {"httpGet": {"path": "/health", "port": 8000}}
MEASURED_412 = LoadTime(412, "measured container start -> Loaded, p50 of the last 8 pods")
SLOW_PROFILE = LoadTime(60, "the simulated image profile of engine:v2-slow", measured=False)


def probe(**settings) -> dict:
    return {**HTTP, **settings}


def decode_with(probes: dict, *, workers: int = 0, worker_probes: dict | None = None, worker_ports: bool = False):
    r = role("decode", workers=workers)
    r["entryTemplate"]["spec"]["containers"][0].update(probes)
    if workers:
        worker = r["workerTemplate"]["spec"]["containers"][0]
        worker.update(worker_probes or {})
        if worker_ports:
            worker["ports"] = [{"containerPort": 8000}]
    return parse_modelserving(modelserving(roles=[r]))


def messages(ms, load: LoadTime | None) -> list[str]:
    return [w.message for w in advice(ms, {"decode": load} if load is not None else {})]


NO_PROBE = (
    "role decode: container engine has no readinessProbe and no startupProbe: its pods are Ready (and take "
    "requests) as soon as the container runs, before the model is loaded"
)
LIVENESS_412 = (
    "role decode: livenessProbe can restart a pod still loading the model: 0 s delay + 3 x 10 s = 30 s before "
    "the first restart, but model load took 412 s (measured container start -> Loaded, p50 of the last 8 pods)"
)

CASES = [
    pytest.param({}, None, [NO_PROBE], id="a serving container without readiness or startup probe is warned"),
    pytest.param({"readinessProbe": probe()}, None, [], id="a readiness probe covers the model load"),
    pytest.param({"startupProbe": probe(failureThreshold=60)}, None, [], id="a startup probe covers the model load"),
    pytest.param(
        {"readinessProbe": probe(), "livenessProbe": probe()},
        MEASURED_412,
        [LIVENESS_412],
        id="a default liveness probe restarts a pod that takes 412 s to load after 30 s",
    ),
    pytest.param(
        {"livenessProbe": probe()},
        MEASURED_412,
        [NO_PROBE, LIVENESS_412],
        id="a liveness probe alone is both warnings",
    ),
    pytest.param(
        {"readinessProbe": probe(), "livenessProbe": probe(initialDelaySeconds=600)},
        MEASURED_412,
        [],
        id="a liveness probe that waits longer than the load is fine",
    ),
    pytest.param(
        {"readinessProbe": probe(), "livenessProbe": probe()},
        LoadTime(30, "measured"),
        [],
        id="a liveness budget equal to the load time is not shorter than it",
    ),
    pytest.param(
        {"readinessProbe": probe(), "livenessProbe": probe(periodSeconds=0, failureThreshold=0)},
        MEASURED_412,
        [LIVENESS_412],
        id="a zero period and threshold are the kubernetes defaults 10 and 3",
    ),
    pytest.param(
        {"readinessProbe": probe(), "livenessProbe": probe()},
        None,
        [],
        id="a liveness probe is not judged without a load time",
    ),
    pytest.param(
        {"startupProbe": probe(failureThreshold=60, periodSeconds=10), "livenessProbe": probe()},
        MEASURED_412,
        [],
        id="a startup probe long enough holds the short liveness probe back",
    ),
    pytest.param(
        {
            "startupProbe": probe(initialDelaySeconds=10, failureThreshold=30, periodSeconds=10),
            "livenessProbe": probe(),
        },
        MEASURED_412,
        [
            "role decode: startupProbe gives up before the model is loaded, and the kubelet restarts the container: "
            "10 s delay + 30 x 10 s = 310 s, but model load took 412 s "
            "(measured container start -> Loaded, p50 of the last 8 pods)"
        ],
        id="a startup probe shorter than the load is warned and the liveness probe is not",
    ),
    pytest.param(
        {"readinessProbe": probe(), "livenessProbe": probe(initialDelaySeconds=15, periodSeconds=5)},
        SLOW_PROFILE,
        [
            "role decode: livenessProbe can restart a pod still loading the model: 15 s delay + 3 x 5 s = 30 s "
            "before the first restart, but model load takes up to 60 s (the simulated image profile of engine:v2-slow)"
        ],
        id="an expected load time says takes up to and where it comes from",
    ),
]


@pytest.mark.parametrize(("probes", "load", "expected"), CASES)
def test_probe_advice_warns_exactly_when_a_probe_cannot_cover_the_model_load(probes, load, expected):
    assert messages(decode_with(probes), load) == expected


def test_the_probe_defaults_are_the_kubernetes_api_defaults():
    # k8s.io/api core/v1 Probe: initialDelaySeconds 0, periodSeconds 10, failureThreshold 3.
    assert (DEFAULT_INITIAL_DELAY_SECONDS, DEFAULT_PERIOD_SECONDS, DEFAULT_FAILURE_THRESHOLD) == (0, 10, 3)
    budget = probe_budget(HTTP)
    assert (budget.initial_delay, budget.period, budget.failure_threshold, budget.seconds) == (0, 10, 3, 30)


def test_a_warning_names_the_role_the_probe_and_the_field_path():
    (warning,) = advice(decode_with({"readinessProbe": probe(), "livenessProbe": probe()}), {"decode": MEASURED_412})
    assert (warning.role, warning.template, warning.container, warning.probe) == (
        "decode",
        "entryTemplate",
        "engine",
        "livenessProbe",
    )
    assert warning.path == "spec.template.roles[0].entryTemplate.spec.containers[0].livenessProbe"


def test_a_worker_without_ports_needs_no_readiness_probe_but_its_liveness_probe_is_judged():
    ms = decode_with({"readinessProbe": probe()}, workers=1, worker_probes={"livenessProbe": probe()})
    assert messages(ms, MEASURED_412) == [LIVENESS_412.replace("role decode:", "role decode workers:")]


def test_a_worker_that_listens_on_a_port_serves_and_needs_a_readiness_probe():
    ms = decode_with({"readinessProbe": probe()}, workers=1, worker_ports=True)
    assert messages(ms, None) == [NO_PROBE.replace("role decode:", "role decode workers:")]


def test_the_default_container_annotation_picks_the_serving_container_as_kubectl_does():
    r = role("decode")
    template = r["entryTemplate"]
    template["metadata"] = {"annotations": {"kubectl.kubernetes.io/default-container": "engine"}}
    template["spec"]["containers"].insert(0, {"name": "proxy", "image": "envoy:v1"})
    template["spec"]["containers"][1]["readinessProbe"] = probe()
    assert advice(parse_modelserving(modelserving(roles=[r]))) == []
    del template["metadata"]
    (warning,) = advice(parse_modelserving(modelserving(roles=[r])))
    assert warning.container == "proxy"


@given(
    delay=st.integers(0, 1000),
    period=st.integers(1, 100),
    threshold=st.integers(1, 100),
    load=st.floats(0, 5000, allow_nan=False),
)
def test_a_liveness_probe_is_warned_about_if_and_only_if_its_budget_is_shorter_than_the_load(
    delay, period, threshold, load
):
    liveness = probe(initialDelaySeconds=delay, periodSeconds=period, failureThreshold=threshold)
    warned = messages(decode_with({"readinessProbe": probe(), "livenessProbe": liveness}), LoadTime(load, "measured"))
    assert bool(warned) == (delay + threshold * period < load)


# --- The measured load time ----------------------------------------------------------------------


def at(seconds: float) -> str:
    return f"2026-11-30T10:{int(seconds) // 60:02d}:{int(seconds) % 60:02d}Z"


def ready_pod(index: int, *, created: int, started: int, ready: int, role_name: str = "decode") -> dict:
    obj = {
        "metadata": {
            "name": f"ms-0-{role_name}-{index}-0",
            "resourceVersion": "1",
            "creationTimestamp": at(created),
            "labels": {
                naming.LABEL_GROUP_ORDINAL: "0",
                naming.LABEL_ROLE: role_name,
                naming.LABEL_ROLE_ORDINAL: str(index),
                naming.LABEL_POD_INDEX: "0",
                naming.LABEL_REVISION: "rev1",
            },
        },
        "spec": {"nodeName": "n1", "containers": [{"name": "engine", "image": "e"}]},
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": at(created)},
                {"type": "Ready", "status": "True", "lastTransitionTime": at(ready)},
            ],
            "containerStatuses": [
                {"name": "engine", "ready": True, "restartCount": 0, "state": {"running": {"startedAt": at(started)}}}
            ],
        },
    }
    obj["metadata"]["uid"] = hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]
    return obj


def all_pods(raw: list[dict]):
    observed = observe(raw)
    return [p for g in observed.groups.values() for inst in g.instances.values() for p in inst.pods.values()]


def test_the_measured_load_time_is_the_median_start_to_ready_of_the_last_8_pods_of_the_role():
    # Two old pods loaded in 500 s; the 8 newest in 10..80 s (median 45): the old ones are left out,
    # and the time before the container started (scheduling, image pull) is not the probe's to cover.
    old = [ready_pod(i, created=0, started=100, ready=600) for i in range(2)]
    new = [ready_pod(2 + i, created=10 + i, started=20 + i, ready=20 + i + 10 * (i + 1)) for i in range(8)]
    loads = measured_load_times(all_pods(old + new))
    assert loads == {"decode": LoadTime(45, "measured container start -> Loaded, p50 of the last 8 pods")}


def test_a_role_whose_pods_never_got_ready_has_no_measured_load_time():
    raw = ready_pod(0, created=0, started=5, ready=50)
    raw["status"]["conditions"] = raw["status"]["conditions"][:1]
    raw["metadata"]["uid"] = "not-ready"
    assert measured_load_times(all_pods([raw])) == {}


@pytest.mark.parametrize(
    "metadata",
    [
        pytest.param("not-an-object", id="metadata that is a string"),
        pytest.param({"annotations": ["a", "list"]}, id="annotations that are a list"),
    ],
)
def test_template_metadata_of_the_wrong_type_never_breaks_the_advice(metadata):
    r = role("decode")
    r["entryTemplate"]["metadata"] = metadata
    (warning,) = advice(parse_modelserving(modelserving(roles=[r])))
    assert warning.container == "engine"
