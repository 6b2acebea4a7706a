"""The rolling-update strategy of each Deployment KServe creates, and where each value came from.

KServe's precedence (``deployment_reconciler.go``; facts in ``rollout-anchors.md`` D3), highest
first:

1. ``multiNodeOverride``: the worker Deployment of a multi-node (Ray, ``RAY_NODE_COUNT``)
   predictor gets ``maxUnavailable: 0%``, ``maxSurge: 100%`` when its type is RollingUpdate: a
   tensor-parallel engine spread over several nodes is down as soon as one of its pods is, so old
   pods stay until new ones are Ready;
2. ``deploymentStrategy``: the component's own, copied as is (Standard mode only);
3. ``configMap``: ``deploy.deploymentRolloutStrategy.defaultRollout`` of the
   ``inferenceservice-config`` ConfigMap, only when its ``defaultDeploymentMode`` is Standard, and
   each field only when it is set (one field alone keeps the other's default);
4. ``default``: 25% / 25%, with ``revisionHistoryLimit: 10`` and ``progressDeadlineSeconds: 600``.

Worked example: 8 replicas, nothing configured -> maxSurge 25% = 2 (rounds up), maxUnavailable
25% = 2 (rounds down): at most 10 pods, at least 6 available. With the ConfigMap saying only
``maxSurge: 1`` -> maxSurge 1 (configMap), maxUnavailable 25% = 2 (default).

The mode names what the numbers do for these replicas: **Availability** (surge > 0, none
unavailable: new pods first), **ResourceAware** (no surge: old pods go first, peak usage never
above the replica count), **Custom** otherwise; **Recreate** for a ``deploymentStrategy`` of that
type (KServe copies it as written; the multi-node override leaves it alone): every old pod stops
before a new one starts, an outage by design.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..intorpercent import IntOrPercent
from .config import STANDARD, DeployConfig

MULTI_NODE_OVERRIDE = "multiNodeOverride"
DEPLOYMENT_STRATEGY = "deploymentStrategy"
CONFIG_MAP = "configMap"
DEFAULT = "default"

RECREATE = "Recreate"
RECREATE_NOTE = (
    "an outage by design: every old pod stops before a new one starts, so nothing serves until the new pods are Ready"
)

AVAILABILITY = "Availability"
RESOURCE_AWARE = "ResourceAware"
CUSTOM = "Custom"

DEFAULT_MAX_SURGE = IntOrPercent(25, True)
DEFAULT_MAX_UNAVAILABLE = IntOrPercent(25, True)
DEFAULT_REVISION_HISTORY_LIMIT = 10
DEFAULT_PROGRESS_DEADLINE_SECONDS = 600

_OVERRIDE_SURGE = IntOrPercent(100, True)
_OVERRIDE_UNAVAILABLE = IntOrPercent(0, True)


@dataclass(frozen=True, slots=True)
class UserStrategy:
    """A component's ``deploymentStrategy`` as written (None fields: not set there)."""

    type: str = "RollingUpdate"
    max_surge: IntOrPercent | None = None
    max_unavailable: IntOrPercent | None = None


@dataclass(frozen=True, slots=True)
class SourcedValue:
    written: IntOrPercent
    source: str

    def count(self, replicas: int, *, round_up: bool) -> int:
        return self.written.resolve(replicas, round_up=round_up)

    def to_json(self) -> dict[str, object]:
        return {"value": self.written.to_json(), "source": self.source}


@dataclass(frozen=True, slots=True)
class EffectiveRollout:
    type: str
    max_surge: SourcedValue
    max_unavailable: SourcedValue
    revision_history_limit: int = DEFAULT_REVISION_HISTORY_LIMIT
    progress_deadline_seconds: int = DEFAULT_PROGRESS_DEADLINE_SECONDS

    @property
    def recreate(self) -> bool:
        return self.type == RECREATE

    def surge_count(self, replicas: int) -> int:
        """maxSurge rounds up: 25% of 6 = 1.5 -> 2 (Recreate: no surge)."""
        return 0 if self.recreate else self.max_surge.count(replicas, round_up=True)

    def unavailable_count(self, replicas: int) -> int:
        """maxUnavailable rounds down: 25% of 6 = 1.5 -> 1 (Recreate: every pod)."""
        return replicas if self.recreate else self.max_unavailable.count(replicas, round_up=False)

    def mode(self, replicas: int) -> str:
        if self.recreate:
            return RECREATE
        surge, unavailable = self.surge_count(replicas), self.unavailable_count(replicas)
        if surge > 0 and unavailable == 0:
            return AVAILABILITY
        if surge == 0 and unavailable > 0:
            return RESOURCE_AWARE
        return CUSTOM

    def to_json(self, replicas: int) -> dict[str, object]:
        if self.recreate:
            return {
                "type": RECREATE,
                "maxSurge": None,
                "maxUnavailable": None,
                "mode": RECREATE,
                "note": RECREATE_NOTE,
                "revisionHistoryLimit": self.revision_history_limit,
                "progressDeadlineSeconds": self.progress_deadline_seconds,
            }
        return {
            "type": self.type,
            "maxSurge": {**self.max_surge.to_json(), "count": self.surge_count(replicas)},
            "maxUnavailable": {**self.max_unavailable.to_json(), "count": self.unavailable_count(replicas)},
            "mode": self.mode(replicas),
            "revisionHistoryLimit": self.revision_history_limit,
            "progressDeadlineSeconds": self.progress_deadline_seconds,
        }

    def deployment_strategy(self) -> dict[str, object]:
        """As written on the Deployment (``spec.strategy``)."""
        if self.recreate:
            return {"type": RECREATE}
        return {
            "type": self.type,
            "rollingUpdate": {
                "maxSurge": self.max_surge.written.to_json(),
                "maxUnavailable": self.max_unavailable.written.to_json(),
            },
        }


def resolve_rollout(user: UserStrategy | None, config: DeployConfig, *, multi_node_worker: bool) -> EffectiveRollout:
    """The strategy KServe writes on one Deployment (see the module docstring for the order)."""
    if user is not None:
        # Copied as is; what it leaves out, the API server defaults to 25% (apps/v1 defaulting).
        surge = (
            SourcedValue(user.max_surge, DEPLOYMENT_STRATEGY)
            if user.max_surge is not None
            else SourcedValue(DEFAULT_MAX_SURGE, DEFAULT)
        )
        unavailable = (
            SourcedValue(user.max_unavailable, DEPLOYMENT_STRATEGY)
            if user.max_unavailable is not None
            else SourcedValue(DEFAULT_MAX_UNAVAILABLE, DEFAULT)
        )
        kind = user.type
    else:
        surge = SourcedValue(DEFAULT_MAX_SURGE, DEFAULT)
        unavailable = SourcedValue(DEFAULT_MAX_UNAVAILABLE, DEFAULT)
        kind = "RollingUpdate"
        if config.default_deployment_mode == STANDARD:
            if config.default_max_surge is not None:
                surge = SourcedValue(config.default_max_surge, CONFIG_MAP)
            if config.default_max_unavailable is not None:
                unavailable = SourcedValue(config.default_max_unavailable, CONFIG_MAP)
    if multi_node_worker and kind == "RollingUpdate":
        surge = SourcedValue(_OVERRIDE_SURGE, MULTI_NODE_OVERRIDE)
        unavailable = SourcedValue(_OVERRIDE_UNAVAILABLE, MULTI_NODE_OVERRIDE)
    return EffectiveRollout(kind, surge, unavailable)
