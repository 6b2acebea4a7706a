"""Plain configuration of the simulated cluster, as parsed from a scenario (see ``scenario.py``)."""

from __future__ import annotations

import hashlib
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
    # Request paths and token figures (``paths``): the KV cache format the engine writes and reads
    # (hops that declare different ones fail with kvMismatch), the time to the first token (spent
    # on a path's first hop; default latency_ms) and per output token (spent on its last hop).
    kv_format: str | None = None
    ttft_ms: Span | None = None
    tpot_ms: Span | None = None


DEFAULT_LATENCY_MS = Span(80.0, 300.0)
# Time per output token of an image without ``tpotMs`` when the traffic has token figures.
DEFAULT_TPOT_MS = Span(20.0, 40.0)


@dataclass(frozen=True)
class Traffic:
    rps: float
    duration: Span  # seconds each (streaming) request keeps its pod busy
    # ``tokens: {input: [lo, hi], output: [lo, hi]}``: drawn per request; a request then lasts
    # ttft + output x tpot instead of ``duration``.
    input_tokens: Span | None = None
    output_tokens: Span | None = None
    # The scenario's ``path``/``scope``/``routing``, overriding the ModelServing's spec.traffic
    # (as written, as (field, value) pairs; () when it overrides nothing).
    route: tuple = ()

    @property
    def tokens(self) -> bool:
        return self.output_tokens is not None


@dataclass
class ClusterConfig:
    nodes: int = 4
    gpus_per_node: int = 8
    timing: dict[str, Span] = field(default_factory=lambda: dict(DEFAULT_TIMING))
    images: dict[str, ImageBehaviour] = field(default_factory=dict)
    # Part of every random draw's key (``physics.draw``): the scenario's seed in ``simulate``, 0 in the
    # live app (whose pod UIDs are random anyway).
    seed: int = 0
    # The registry: image reference -> the digest its tag resolves to now, for tags that were moved
    # (``retag``); every other reference resolves to ``default_digest``. Mutable on purpose: a retag
    # reaches every part of a running cluster that holds this config.
    registry: dict[str, str] = field(default_factory=dict)
    moves: dict[str, int] = field(default_factory=dict)  # image reference -> how often its tag moved
    # The live app's token figures per request (its stored config's ``tokens: {input, output}``;
    # a scenario keeps them in ``traffic.tokens``): None = requests last their drawn duration.
    input_tokens: Span | None = None
    output_tokens: Span | None = None

    def image(self, image: str) -> ImageBehaviour:
        return self.images.get(image) or _HEALTHY

    def digest(self, image: str) -> str:
        """The digest a pull of ``image`` gets now: a digest-pinned reference is its own digest;
        a tag resolves through ``registry``, else to ``default_digest``."""
        _, at, pinned = image.rpartition("@")
        if at:
            return pinned
        return self.registry.get(image) or default_digest(image)

    def retag(self, image: str, digest: str | None = None) -> str:
        """Move the tag ``image`` to other bytes: ``digest``, or a new one derived from how often it
        moved (``sha256(image + "#1")``, ``#2``, ...). Returns the new digest."""
        self.moves[image] = self.moves.get(image, 0) + 1
        if digest is None:
            digest = default_digest(f"{image}#{self.moves[image]}")
        self.registry[image] = digest
        return digest


def default_digest(image: str) -> str:
    """``sha256:`` + the SHA-256 of the reference (a stand-in: nothing is pulled). The live demo's
    digest-pinned twins (``database.demo.DIGESTS``) are exactly these, so a demo tag resolves to
    its twin's digest."""
    return "sha256:" + hashlib.sha256(image.encode()).hexdigest()


def repository(image: str) -> str:
    """``vllm/vllm-openai:v0.9.1`` -> ``vllm/vllm-openai``; ``reg:5000/x:v1@sha256:..`` -> ``reg:5000/x``."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)
    if ":" in last[-1]:
        name = name[: name.rfind(":")]
    return name


def image_id(image: str, digest: str) -> str:
    """The kubelet's ``imageID``: ``<repository>@<digest>``, e.g. ``engine@sha256:9f2c...``."""
    return f"{repository(image)}@{digest}"


_HEALTHY = ImageBehaviour()
