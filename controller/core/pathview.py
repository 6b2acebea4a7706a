"""Which revisions a request can travel on, per ServingGroup, for the Paths panel (pure).

A request goes through the roles of ``spec.traffic.path`` in order; a path is consistent when the
role templates of all its hops come from one revision R. A role instance serves a hop of R when it
is Ready and its role template is the one R has for that role: an instance of an older revision
whose role did not change in R serves both (an unchanged role never makes a path mixed).

Worked example, path [prefill, decode], revisions a and b where only prefill changed in b:
group 0 has prefill@b and decode@a (both Ready) -> consistent for b (decode@a has b's decode
template); group 1 has prefill@b and decode@a but b changed decode too -> no consistent path.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

READY = "Ready"


def consistent_revisions(
    instances: Iterable[Mapping[str, Any]],
    path: Sequence[str],
    role_hashes: Mapping[str, Mapping[str, str]],
) -> dict[int, list[str]]:
    """Per group, the revisions (of ``role_hashes``, in its order) with a consistent path through
    the group's Ready instances. ``instances``: ``{"group", "role", "revision", "state"}``;
    ``role_hashes``: revision -> role -> template hash. Groups with no instance on the path are
    left out; a group without a consistent path maps to ``[]``."""
    ready: dict[int, dict[str, set[str]]] = {}
    groups: set[int] = set()
    for inst in instances:
        role = inst.get("role")
        if role not in path:
            continue
        group = int(inst.get("group") or 0)
        groups.add(group)
        if inst.get("state") != READY:
            continue
        ready.setdefault(group, {}).setdefault(str(role), set()).add(str(inst.get("revision")))
    out: dict[int, list[str]] = {}
    for group in sorted(groups):
        have = ready.get(group, {})
        ok = []
        for revision, hashes in role_hashes.items():
            if all(_serves(have.get(role, set()), role, hashes.get(role), role_hashes) for role in path):
                ok.append(revision)
        out[group] = ok
    return out


def _serves(revisions: set[str], role: str, wanted: str | None, role_hashes: Mapping[str, Mapping[str, str]]) -> bool:
    if wanted is None:
        return False
    return any((role_hashes.get(rev) or {}).get(role) == wanted for rev in revisions)
