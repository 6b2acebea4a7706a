"""Physics configuration of the live simulated cluster, stored in ``SimClock.config``.

The same shapes as a scenario's ``cluster.timing`` and ``images`` (docs/scenarios.md), parsed
by the scenario parser's own helpers, so the live cluster and ``simulate`` mean the same thing by
"load: [5, 15]" or "crash: true".

Default timings (simulated seconds) make a pod Ready about 8-23 s after it is created:
schedule 0.5-1.5 + pull 2-5 + start 1-2 + load 5-15; at ``ROLLOUTUI_SIM_SPEED=1`` a four-group
demo rollout takes a few minutes, which is long enough to watch and to pause.
"""

from __future__ import annotations

from typing import Any

from controller.simcluster.config import ClusterConfig, ImageBehaviour, Span
from controller.simcluster.scenario import parse_images, parse_span, parse_tokens

DEFAULT_TIMING: dict[str, Any] = {
    "schedule": [0.5, 1.5],
    "pull": [2, 5],
    "start": [1, 2],
    "load": [5, 15],
    "terminate": [1, 3],
}


def parse_config(raw: dict[str, Any] | None) -> ClusterConfig:
    raw = raw or {}
    timing = {
        phase: parse_span(value, f"timing.{phase}")
        for phase, value in {**DEFAULT_TIMING, **(raw.get("timing") or {})}.items()
    }
    images: dict[str, ImageBehaviour] = parse_images(raw.get("images") or {})
    registry = {str(k): str(v) for k, v in (raw.get("registry") or {}).items()}
    moves = {str(k): int(v) for k, v in (raw.get("moves") or {}).items()}
    input_tokens, output_tokens = parse_tokens(raw.get("tokens"), "tokens")
    return ClusterConfig(
        nodes=0,
        gpus_per_node=0,
        timing=timing,
        images=images,
        registry=registry,
        moves=moves,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
    )


def retag(raw: dict[str, Any] | None, image: str, digest: str | None = None) -> tuple[dict[str, Any], str]:
    """The stored config with the tag ``image`` moved (``ClusterConfig.retag``): ``registry`` and
    ``moves`` are kept in it, so the move survives restarts and reaches every worker's tick."""
    config = parse_config(raw)
    new_digest = config.retag(image, digest)
    out = dict(raw or {})
    out["registry"] = dict(config.registry)
    out["moves"] = dict(config.moves)
    return out, new_digest


def span_to_json(span: Span) -> Any:
    return span.low if span.low == span.high else [span.low, span.high]
