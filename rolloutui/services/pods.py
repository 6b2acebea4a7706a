"""One pod's events and log lines, for the topology cell's pod panel and ``GET /api/pods/...``.

Place in the flow: the API view -> ``events`` / ``log`` -> the cluster's ``pod_events`` /
``pod_log`` (the simulated cluster derives them from the pod's kubelet state,
``controller.simcluster.podlog``; on Kubernetes they are the API server's Events whose
``involvedObject`` is the pod and its ``log`` endpoint, bounded).

Who sees what: anyone who may view the pod's namespace sees its events and its log; for whoever may
not operate there, each log line is masked as the manifest is for them (``services.masking``: a
URL's password, the value of a flag or ``NAME=value`` naming a secret), since an engine may print
its command line or environment.
"""

from __future__ import annotations

import re
from typing import Any

from controller.core.ports import NotFound

from . import access, masking
from .cluster import get_cluster

VIEW = "rolloutui.view_modelserving"
DEFAULT_TAIL = 200
MAX_TAIL = 1000
# ``HF_TOKEN=hf_abc`` -> ``HF_TOKEN=<masked>`` when the name looks secret.
_ASSIGNMENT = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)=(?P<value>\S+)")


def _visible(user, namespace: str, pod: str) -> None:
    if not access.allowed(user, VIEW, namespace):
        # Not 403: a user may not learn what exists in a namespace they cannot see.
        raise NotFound(f"pod {namespace}/{pod} not found")


def events(user, namespace: str, pod: str) -> list[dict[str, Any]]:
    """The pod's events, oldest first: ``{type, reason, message, count, firstTimestamp,
    lastTimestamp, source}``. Raises ``NotFound`` (also for a namespace ``user`` may not view)."""
    _visible(user, namespace, pod)
    out = []
    for e in get_cluster().pod_events(namespace, pod):
        out.append(
            {
                "type": e.get("type") or "Normal",
                "reason": e.get("reason") or "",
                "message": e.get("message") or "",
                "count": e.get("count") or 1,
                "firstTimestamp": e.get("firstTimestamp") or e.get("eventTime") or "",
                "lastTimestamp": e.get("lastTimestamp") or e.get("eventTime") or "",
                "source": ((e.get("source") or {}).get("component")) or e.get("reportingComponent") or "",
            }
        )
    return out


def mask_line(line: str) -> str:
    """A log line as a viewer sees it: secret-looking flag values, ``NAME=value`` with a secret
    name, and URL passwords masked; the line untouched when nothing is secret."""
    words = line.split(" ")
    masked = masking.mask_args(words)
    masked = [
        _ASSIGNMENT.sub(lambda m: f"{m['name']}={masking.MASK}" if masking.secret_name(m["name"]) else m[0], w)
        if isinstance(w, str) and not w.startswith("-")
        else w
        for w in masked
    ]
    out = " ".join(masked)
    return masking.mask_urls(out, userinfo=True) if out != line or "@" in out else line


def log(user, namespace: str, pod: str, *, tail: int = DEFAULT_TAIL) -> dict[str, Any]:
    """``{"lines": [{"t", "time", "line"}], "masked": bool, "tail": n}``: the last ``tail`` lines
    (1 to ``MAX_TAIL``) of the pod's engine container. Raises ``NotFound``."""
    _visible(user, namespace, pod)
    tail = max(1, min(int(tail), MAX_TAIL))
    lines = get_cluster().pod_log(namespace, pod, tail=tail)
    masked = not masking.reveals(user, namespace)
    if masked:
        lines = [{**line, "line": mask_line(str(line.get("line") or ""))} for line in lines]
    return {"lines": lines, "masked": masked, "tail": tail}
