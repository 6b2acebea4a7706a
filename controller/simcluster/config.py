"""Plain configuration of the simulated cluster, as parsed from a scenario (see ``scenario.py``)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Span:
    """A duration: fixed (``low == high``) or drawn uniformly from ``[low, high]`` per use."""

    low: float
    high: float

    @classmethod
    def fixed(cls, value: float) -> Span:
        return cls(float(value), float(value))

    def draw(self, rng: random.Random) -> float:
        # A fixed span does not consume a random number, so adding a fixed phase to a scenario does
        # not shift every other draw.
        if self.low == self.high:
            return self.low
        return rng.uniform(self.low, self.high)

    @property
    def mean(self) -> float:
        return (self.low + self.high) / 2


PHASES = ("schedule", "pull", "start", "load", "terminate")
DEFAULT_TIMING = {
    "schedule": Span.fixed(1),
    "pull": Span.fixed(5),
    "start": Span.fixed(2),
    "load": Span.fixed(30),
    "terminate": Span.fixed(3),
}


@dataclass(frozen=True)
class ImageBehaviour:
    crash: bool = False  # the container exits after its load phase, forever (CrashLoopBackOff)
    load: Span | None = None  # overrides the cluster's load timing for this image
    error_rate: float = 0.0  # share of requests answered with an error
    timeout_rate: float = 0.0  # share of requests that time out (no answer; the pod stays busy)
    latency_ms: Span | None = None  # request latency (time to first token); default DEFAULT_LATENCY_MS


DEFAULT_LATENCY_MS = Span(80.0, 300.0)


@dataclass(frozen=True)
class Traffic:
    rps: float
    duration: Span  # seconds each (streaming) request keeps its pod busy


@dataclass
class ClusterConfig:
    nodes: int = 4
    gpus_per_node: int = 8
    timing: dict[str, Span] = field(default_factory=lambda: dict(DEFAULT_TIMING))
    images: dict[str, ImageBehaviour] = field(default_factory=dict)
    # Part of every random draw's key (``physics.draw``): the scenario's seed in ``simulate``, 0 in the
    # live app (whose pod UIDs are random anyway).
    seed: int = 0

    def image(self, image: str) -> ImageBehaviour:
        return self.images.get(image) or _HEALTHY


_HEALTHY = ImageBehaviour()
