"""The named steps of ``routing.send_path``: a path request's timing, its failures, its hops, how it ends."""

from __future__ import annotations

import pytest

from controller.core import naming
from controller.simcluster import paths, routing
from controller.simcluster.config import DEFAULT_LATENCY_MS, DEFAULT_TPOT_MS, ImageBehaviour, Span
from controller.simcluster.config import Traffic as Load


class ScriptedRandom:
    """Answers ``random()`` and ``uniform()`` from a script and counts the draws it was asked for."""

    def __init__(self, *values: float):
        self.values = list(values)
        self.draws = 0

    def random(self) -> float:
        self.draws += 1
        return self.values.pop(0)

    def uniform(self, low: float, high: float) -> float:
        self.draws += 1
        return low + (high - low) * self.values.pop(0)


PLAIN = Load(rps=1, duration=Span.fixed(5))
TOKENS = Load(rps=1, duration=Span.fixed(5), input_tokens=Span.fixed(500), output_tokens=Span.fixed(50))
TOKENS_OUT_ONLY = Load(rps=1, duration=Span.fixed(5), output_tokens=Span(10, 20))


@pytest.mark.parametrize(
    ("images", "traffic", "duration", "script", "expected"),
    [
        pytest.param(
            [ImageBehaviour(ttft_ms=Span.fixed(100)), ImageBehaviour(tpot_ms=Span.fixed(20))],
            TOKENS,
            None,
            (),
            (500, 50, 100.0, 20.0, 1.1),
            id="with token figures a request lasts ttft plus output tokens times tpot of the last hop",
        ),
        pytest.param(
            [ImageBehaviour(latency_ms=Span.fixed(150)), ImageBehaviour()],
            PLAIN,
            7.5,
            (),
            (None, None, 150.0, None, 7.5),
            id="without token figures it lasts its duration and its ttft is the first hop's latency",
        ),
        pytest.param(
            [ImageBehaviour(ttft_ms=Span.fixed(400))],
            PLAIN,
            0.1,
            (),
            (None, None, 400.0, None, 0.4),
            id="a request never ends before its first token",
        ),
        pytest.param(
            [ImageBehaviour()],
            PLAIN,
            None,
            (0.5,),
            (None, None, DEFAULT_LATENCY_MS.low + 0.5 * (DEFAULT_LATENCY_MS.high - DEFAULT_LATENCY_MS.low), None, 0.19),
            id="an image without figures draws its ttft from the default latency",
        ),
        pytest.param(
            [ImageBehaviour(ttft_ms=Span.fixed(100)), ImageBehaviour()],
            TOKENS_OUT_ONLY,
            None,
            (0.5, 0.0),
            (None, 15, 100.0, DEFAULT_TPOT_MS.low, 0.1 + 15 * DEFAULT_TPOT_MS.low / 1000),
            id="output tokens are drawn before the ttft and the default tpot after it",
        ),
    ],
)
def test_a_path_requests_timing_comes_from_its_first_and_last_hops_images(images, traffic, duration, script, expected):
    rng = ScriptedRandom(*script)
    *figures, lasts = routing._draw_path_timing(images, traffic, duration, rng)
    assert (*figures, pytest.approx(lasts)) == expected
    assert rng.draws == len(script)


ERRS = ImageBehaviour(error_rate=0.5)
TIMES_OUT = ImageBehaviour(timeout_rate=0.5)
BOTH = ImageBehaviour(error_rate=0.5, timeout_rate=0.5)
CLEAN = ImageBehaviour()


@pytest.mark.parametrize(
    ("images", "script", "expected", "draws"),
    [
        pytest.param([CLEAN, CLEAN], (), (False, False), 0, id="images without rates draw nothing"),
        pytest.param([ERRS, CLEAN], (0.4,), (True, False), 1, id="a hop that errs makes the request err"),
        pytest.param([ERRS, ERRS], (0.4, 0.9), (True, False), 2, id="every erring hop still draws after one erred"),
        pytest.param(
            [BOTH, TIMES_OUT], (0.4,) + (0.0, 0.0), (True, False), 1, id="a request that errs draws no timeout"
        ),
        pytest.param(
            [BOTH, TIMES_OUT], (0.9, 0.9, 0.4), (False, True), 3, id="a timeout of any hop times the request out"
        ),
        pytest.param([BOTH, CLEAN], (0.9, 0.9), (False, False), 2, id="draws above the rates fail nothing"),
    ],
)
def test_a_path_request_fails_as_any_of_its_hops_images_would(images, script, expected, draws):
    rng = ScriptedRandom(*script)
    assert routing._draw_path_failures(images, rng) == expected
    assert rng.draws == draws


def _pod(name, role, revision):
    labels = {naming.LABEL_ROLE: role, naming.LABEL_REVISION: revision}
    return {"metadata": {"name": name, "uid": f"uid-{name}", "labels": labels}}


def test_the_hops_of_a_path_name_role_pod_uid_and_revision_in_order():
    pods = [_pod("p", "prefill", "A"), _pod("d", "decode", "B")]
    assert routing._hops_of(pods) == (("prefill", "p", "uid-p", "A"), ("decode", "d", "uid-d", "B"))


@pytest.mark.parametrize(
    ("failure", "answer", "busy", "hop_busy", "figures"),
    [
        pytest.param(
            {},
            (routing.OK, None),
            1.1,
            (0.1, 1.1),
            (100.0, 100.0, 20.0),
            id="a good answer holds the last hop to the end and the others to the first token",
        ),
        pytest.param(
            {"mismatch": True},
            (routing.ERROR, paths.KV_MISMATCH),
            0.1,
            (0.1, 0.1),
            (100.0, 100.0, None),
            id="hops that disagree on the kv format answer an error at the first token",
        ),
        pytest.param(
            {"error": True},
            (routing.ERROR, None),
            0.1,
            (0.1, 0.1),
            (100.0, 100.0, None),
            id="an engine error answers at the first token without a path error",
        ),
        pytest.param(
            {"timeout": True},
            (routing.TIMEOUT, None),
            1.1,
            (0.1, 1.1),
            (None, None, None),
            id="a timeout holds its hops like a good answer but keeps no latency figures",
        ),
    ],
)
def test_a_path_request_ends_by_its_failure(failure, answer, busy, hop_busy, figures):
    req = routing.Request(1, 0.0, "p", "uid-p", "A", 100.0, 1.1, ttft_ms=100.0, tpot_ms=20.0)
    routing._end_path_request(req, 2, **({"mismatch": False, "error": False, "timeout": False} | failure))
    assert (req.answer, req.path_error) == answer
    assert (req.busy, req.hop_busy) == (pytest.approx(busy), pytest.approx(hop_busy))
    assert (req.latency_ms, req.ttft_ms, req.tpot_ms) == figures
