"""Probe advice for a ModelServing (``controller.core.probes``): the load time each role is judged
against, and the warnings, for manifest validation, apply and the ModelServing page.

The load time of a role is, first, the one measured on the ModelServing's own pods (container start
to Ready, the median of its last pods); without pods yet, on the simulated cluster, the longest load
its image profile allows (``load`` of the image, else the cluster's ``timing.load``); otherwise there
is none, and only a missing readiness/startup probe is warned about. Warnings never refuse anything.
"""

from __future__ import annotations

from typing import Any

from controller.core import probes
from controller.core.observe import observe
from controller.core.ports import ClusterError, NotFound
from controller.core.spec import ModelServing, ValidationError, parse_modelserving
from controller.runtime.simulator import get_simulator
from controller.runtime.state import StateRead

from .cluster import get_cluster

VIEW = "rolloutui.view_modelserving"


def _measured(parsed: ModelServing, read: StateRead | None = None) -> dict[str, probes.LoadTime]:
    """Measured on the pods of ``read`` (the page's state read: 2,000 pods are not listed, parsed
    and timed a second time, which took more CPU than the state itself), else listed now."""
    if read is not None:
        observed, cache = read.observed, read.cache
    else:
        try:
            pods = get_cluster().list_pods(parsed.namespace, parsed.name)
        except (NotFound, ClusterError):
            return {}
        observed, cache = observe(list(pods)), None
    return probes.measured_load_times(
        (pod for group in observed.groups.values() for inst in group.instances.values() for pod in inst.pods.values()),
        cache=cache,
    )


def _simulated(parsed: ModelServing) -> dict[str, probes.LoadTime]:
    simulator = get_simulator()
    if simulator is None:
        return {}
    config = simulator.config
    out = {}
    for role in parsed.roles:
        found = probes.serving_container(role.entry_template)
        if found is None:
            continue
        image = str(found[1].get("image") or "")
        profile = config.image(image).load
        span = profile or config.timing["load"]
        source = f"the simulated image profile of {image}" if profile else "the simulated cluster's load time"
        out[role.name] = probes.LoadTime(span.high, source, measured=False)
    return out


def load_times(parsed: ModelServing, *, user=None, read: StateRead | None = None) -> dict[str, probes.LoadTime]:
    """Role -> the load time its probes are judged against (see the module docstring). Pods are read
    only in a namespace ``user`` may view (None: a trusted internal caller), so the figures tell
    nothing of a namespace the user may not see. ``read``: the state read of this ModelServing
    whose pods to measure (else they are listed)."""
    from . import access

    expected = _simulated(parsed)
    measured = _measured(parsed, read) if user is None or access.allowed(user, VIEW, parsed.namespace) else {}
    return {**expected, **measured}


def advice_for(parsed: ModelServing, *, user=None, read: StateRead | None = None) -> list[probes.ProbeWarning]:
    return probes.advice(parsed, load_times(parsed, user=user, read=read))


def advice_of(namespace: str, name: str, *, read: StateRead | None = None) -> list[dict[str, Any]]:
    """The warnings of a stored ModelServing, for its page (empty when its manifest is invalid: the
    page says why elsewhere). ``read``: the page's state read (``state.read_state``), whose
    manifest and pods are used instead of reading them again. Raises NotFound."""
    stored = read.modelserving if read is not None else get_cluster().get_modelserving(namespace, name)
    try:
        parsed = parse_modelserving(stored)
    except ValidationError:
        return []
    return [w.to_json() for w in advice_for(parsed, read=read)]


__all__ = ["advice_for", "advice_of", "load_times"]
