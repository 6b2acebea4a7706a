"""Whether the roles of a request path can hand the KV cache on to each other (pure).

A request of ``spec.traffic.path`` is prefilled on its first hop and continues on the later hops
with the KV cache the first one wrote. When the hops' engines write different KV cache formats the
handover fails, whatever the routing: revision-affine routing keeps a request on ONE revision, and
a revision whose own roles disagree breaks every request it takes. That happens with one click:
"Set image" on decode alone, to an engine release that changed its cache layout, while prefill
keeps the old one.

Which image writes which format is known where images are described: the embedded simulated
cluster's image profiles (``kvFormat``). An image with no declared format agrees with any (the same
rule as the simulated router's ``kv_mismatch``), so on a cluster that declares none nothing is said.

Worked example: path ``[prefill, decode]``, prefill runs ``vllm/vllm-openai:v0.9.1`` (format v1),
decode ``vllm/vllm-openai:v0.10.0`` (format v2) -> one ``KvBreak`` naming both hops; with prefill on
v0.10.0 too -> none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

PATH_FIELD = "spec.traffic.path"


@dataclass(frozen=True, slots=True)
class Hop:
    role: str
    image: str
    kv_format: str | None


@dataclass(frozen=True, slots=True)
class KvBreak:
    """A path whose hops' images declare more than one KV cache format."""

    hops: tuple[Hop, ...]

    @property
    def field(self) -> str:
        return PATH_FIELD

    def message(self) -> str:
        described = ", ".join(
            f"{hop.role} runs {hop.image} (KV cache format {hop.kv_format})"
            for hop in self.hops
            if hop.kv_format is not None
        )
        return (
            f"the roles of the request path {' -> '.join(hop.role for hop in self.hops)} write different KV "
            f"cache formats: {described}. Every request through this revision would fail with a KV format "
            "mismatch; change the images of the path's roles together."
        )


def entry_image(template: Mapping[str, Any] | None) -> str:
    """The image a role's entry pod serves with: its first container's (the container the router
    hands the request to)."""
    spec = (template or {}).get("spec") or {}
    containers = [c for c in (spec.get("containers") or []) if isinstance(c, Mapping)]
    return str(containers[0].get("image") or "") if containers else ""


def kv_break(
    path: Sequence[str],
    entry_templates: Mapping[str, Mapping[str, Any] | None],
    kv_format_of: Callable[[str], str | None],
) -> KvBreak | None:
    """The path's hops, when their entry images declare more than one KV cache format; None when
    they agree (or declare nothing), or for a path of fewer than two roles. ``entry_templates``:
    role name -> its entry template; ``kv_format_of``: image -> its declared format or None."""
    if len(path) < 2:
        return None
    hops = []
    for role in path:
        image = entry_image(entry_templates.get(role))
        hops.append(Hop(role, image, kv_format_of(image) if image else None))
    declared = {hop.kv_format for hop in hops if hop.kv_format is not None}
    return KvBreak(tuple(hops)) if len(declared) > 1 else None
