"""The named steps of ``services.capacity.capacity``, one table each: the shared sources read once
(batching, offered load, totals), where the GPU figures come from, one role's share of the rate,
its create-to-Serving times and its whole row of figures. The recommendation's arithmetic and the
endpoint are in ``test_capacity.py``."""

from __future__ import annotations

import pytest

from controller.core.spec import Role
from rolloutui.services.capacity import (
    RoleLoad,
    Sources,
    _gpu_signals,
    _sources,
    create_to_serving_times,
    role_figures,
    role_rate,
)
from tests.factories import pod_template


def sources(**overrides) -> Sources:
    base = dict(
        safe=16,
        sequences=None,
        model_roles=[],
        rps=None,
        mean_duration=None,
        simulated=True,
        dcgm={},
        total_in_flight=0,
        total_instances=0,
    )
    return Sources(**{**base, **overrides})


def instance(role: str, *, in_flight: int = 0, gate: str = "Serving", created=None, served=None) -> dict:
    return {"role": role, "inFlight": in_flight, "gate": gate, "gateTimes": {"Created": created, "Serving": served}}


@pytest.mark.parametrize(
    "batching, traffic, expected",
    [
        pytest.param({}, None, (None, None, None, None), id="no batching and no traffic know nothing"),
        pytest.param(
            {"maxBatchSize": 8, "maxConcurrentSequences": 64},
            None,
            (8, 64, None, None),
            id="the batch size is the safe concurrency and the sequences are kept",
        ),
        pytest.param(
            {"maxConcurrentSequences": "64"},
            None,
            (None, None, None, None),
            id="sequences that are no integer are unknown",
        ),
        pytest.param(
            {}, {"rps": 4, "durationSeconds": [1, 3]}, (None, None, 4.0, 2.0), id="the offered rate and mean duration"
        ),
    ],
)
def test_the_sources_step_reads_the_batching_and_the_offered_load_once(batching, traffic, expected):
    src = _sources(batching, [], traffic, True, {}, [instance("a", in_flight=2), instance("b", in_flight=3)])
    assert (src.safe, src.sequences, src.rps, src.mean_duration) == expected
    assert (src.total_in_flight, src.total_instances) == (5, 2)


@pytest.mark.parametrize(
    "simulated, url, expected",
    [
        pytest.param(True, "http://prometheus:9090", "simulated", id="the simulated cluster models its gpus"),
        pytest.param(
            False, "", "not available (set ROLLOUTUI_PROMETHEUS_URL for DCGM)", id="kubernetes without prometheus"
        ),
    ],
)
def test_the_gpu_signals_step_names_where_the_gpu_figures_come_from(simulated, url, expected):
    assert _gpu_signals("default", "llm", simulated, url) == ({}, expected)


@pytest.mark.parametrize(
    "in_flight, instances, src, expected",
    [
        pytest.param(6, 1, sources(rps=10.0, total_in_flight=8), 7.5, id="the share of the requests in flight"),
        pytest.param(0, 1, sources(rps=9.0, total_instances=3), 3.0, id="the share of instances when none fly"),
        pytest.param(0, 0, sources(rps=9.0), 0.0, id="no instances anywhere take no share"),
        pytest.param(6, 1, sources(total_in_flight=8), None, id="no offered load gives no rate"),
        pytest.param(1, 1, sources(rps=1.0, total_in_flight=3), 0.333, id="the rate is rounded to milliseconds"),
    ],
)
def test_the_role_rate_step_shares_the_offered_rate_by_requests_in_flight(in_flight, instances, src, expected):
    assert role_rate(in_flight, instances, src) == expected


@pytest.mark.parametrize(
    "instances, expected",
    [
        pytest.param([instance("a", created=10.0, served=40.0)], [30.0], id="serving minus created"),
        pytest.param([instance("a", created=10.0)], [], id="an instance not serving yet has no time"),
        pytest.param([{"role": "a"}], [], id="an instance without gate times has no time"),
        pytest.param([instance("a", created=0.0, served=5.0)], [5.0], id="a gate at time zero counts"),
    ],
)
def test_the_create_to_serving_step_times_each_instance_that_reached_serving(instances, expected):
    assert create_to_serving_times(instances) == expected


DECODE = Role("decode", 2, pod_template(gpus=1), 0, None)


@pytest.mark.parametrize(
    "src, expected",
    [
        pytest.param(
            sources(),
            {"perGroup": 2, "inFlight": 20, "serving": 1, "safeTotal": 16, "gpus": 2, "gpuUtilisation": 1.0},
            id="a simulated role runs its model at the safe concurrency",
        ),
        pytest.param(
            sources(model_roles=["prefill"]),
            {"safeConcurrency": None, "safeTotal": None, "queueSeconds": None, "gpuUtilisation": None},
            id="a role that runs no model has no safe concurrency",
        ),
        pytest.param(
            sources(simulated=False, dcgm={"decode": {"util": 0.5, "memory": 0.25}}),
            {"gpuUtilisation": 0.5, "gpuMemory": 0.25},
            id="on kubernetes the gpu figures are dcgms",
        ),
        pytest.param(
            sources(rps=8.0, total_in_flight=20),
            {"requestRate": 8.0, "queueSeconds": 0.5},
            id="requests beyond the safe concurrency wait by littles law",
        ),
    ],
)
def test_the_role_figures_step_gives_a_roles_row(src, expected):
    instances = [instance("decode", in_flight=20, created=0.0, served=30.0), instance("decode", gate="Loaded")]
    figures = role_figures("decode", instances + [instance("other", in_flight=5)], DECODE, src)
    assert {k: figures.row[k] for k in expected} == expected
    assert figures.row["instances"] == 2 and figures.create_to_serving == [30.0]


@pytest.mark.parametrize(
    "spec_role, src, expected",
    [
        pytest.param(DECODE, sources(), RoleLoad("decode", 2, 7, None, 16), id="a role running the model is sized"),
        pytest.param(None, sources(), RoleLoad("decode", 1, 7, None, 16), id="a role the spec lacks is one per group"),
        pytest.param(
            DECODE,
            sources(rps=2.0, mean_duration=3.0, total_in_flight=7),
            RoleLoad("decode", 2, 7, 6.0, 16),
            id="the offered load is the roles rate times the mean duration",
        ),
        pytest.param(DECODE, sources(model_roles=["prefill"]), None, id="a role running no model is not sized"),
    ],
)
def test_the_role_figures_step_gives_the_recommendation_its_load(spec_role, src, expected):
    assert role_figures("decode", [instance("decode", in_flight=7)], spec_role, src).load == expected
