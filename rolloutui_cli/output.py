"""How answers are printed: ``-o json`` / ``-o yaml`` print the API's answer as it is (for scripts),
otherwise a short text for people."""

from __future__ import annotations

import json
from typing import Any


def dump(data: Any, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(data, indent=2, sort_keys=False, default=str)
    try:
        import yaml  # PyYAML: optional for the CLI, imported only when asked for
    except ImportError:
        raise SystemExit("-o yaml needs PyYAML: pip install 'pyyaml' (or use -o json)") from None
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False).rstrip("\n")


def _scalar(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=str)
    return str(value)


def table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    """Rows of dicts as aligned columns (the scalar fields of the first row, at most eight)."""
    if not rows:
        return "Nothing found."
    if columns is None:
        columns = [k for k, v in rows[0].items() if not isinstance(v, (dict, list))][:8]
    cells = [[c.upper() for c in columns]] + [[_scalar(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells)


def text(data: Any) -> str:
    """A readable form of any answer: a table for a list (or a page of results), else key: value."""
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        data = data["results"]
    if isinstance(data, list):
        if all(isinstance(r, dict) for r in data):
            return table(data)
        return "\n".join(_scalar(v) for v in data)
    if isinstance(data, dict):
        width = max((len(k) for k in data), default=0)
        return "\n".join(f"{k + ':':<{width + 1}} {_scalar(v)}" for k, v in data.items())
    return _scalar(data)


def rollout_summary(view: dict[str, Any]) -> str:
    """A ModelServing's state in a few lines (what `get` prints)."""
    numbers = {r.get("hash"): r.get("number") for r in view.get("revisions") or []}

    def rev(h: str | None) -> str:
        return f"#{numbers[h]} {h}" if h in numbers else (h or "-")

    spec = view.get("spec") or {}
    counts = view.get("counts") or {}
    lines = [
        f"Name:       {view.get('namespace')}/{view.get('name')}",
        f"Phase:      {view.get('phase')}" + (" (converged)" if view.get("converged") else ""),
        f"Strategy:   {view.get('strategyType')}  partition {spec.get('partition')}"
        + ("  paused" if spec.get("paused") else ""),
        f"Revisions:  current {rev(view.get('currentRevision'))}, update {rev(view.get('updateRevision'))}",
        f"Groups:     desired {spec.get('replicas')}, updated {counts.get('updatedReplicas') or 0}, "
        f"available {counts.get('availableReplicas') or 0}",
    ]
    for c in view.get("conditions") or []:
        lines.append(f"Condition:  {c.get('type')}={c.get('status')} {c.get('reason') or ''} {c.get('message') or ''}")
    for w in view.get("waiting") or []:
        lines.append(f"Waiting:    {w.get('reason')}")
    by_group: dict[Any, list[str]] = {}
    for inst in view.get("instances") or []:
        old = "" if inst.get("revision") == view.get("updateRevision") else " (old)"
        by_group.setdefault(inst.get("group"), []).append(
            f"{inst.get('role')}[{inst.get('ordinal')}] {inst.get('state')}{old}"
        )
    for g in sorted(by_group, key=str):
        lines.append(f"Group {g}:    " + ", ".join(by_group[g]))
    return "\n".join(line.rstrip() for line in lines)
