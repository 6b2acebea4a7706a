"""The effective rollout strategy, and which source set each value (KServe-style).

Sources, highest first:

1. ``multiNodeOverride``: for roles with workers (multi-node instances), ``maxUnavailable: 0`` and
   ``maxSurge: 100%``, when the cluster settings opt in (KServe forces this for multi-node Ray
   workers: taking one node of a tensor-parallel instance down takes the whole instance down).
2. ``object``: the ModelServing's own values.
3. ``cluster``: the cluster default from ``ClusterSettings``, applied only in Standard deployment
   mode.
4. ``builtin``: ``maxUnavailable: 1``, ``maxSurge: 0``, ``partition: 0``.

Partition is never defaulted by the cluster: it says which groups to protect in *this* object.

Worked example: a role with 2 workers, cluster settings with the override on, the object says
``maxUnavailable: 2`` -> effective ``maxUnavailable 0 (multiNodeOverride)``, ``maxSurge 100%
(multiNodeOverride)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .intorpercent import IntOrPercent, IntOrPercentError
from .spec import GROUP_ROLLING, Budgets, ModelServing, Role, ValidationError

BUILTIN = "builtin"
CLUSTER = "cluster"
OBJECT = "object"
MULTI_NODE = "multiNodeOverride"

STANDARD_MODE = "Standard"
# KServe's deployment modes; the cluster defaults apply only in Standard mode (see ``resolve_budgets``).
DEPLOYMENT_MODES = (STANDARD_MODE, "Knative", "Serverless", "ModelMesh")


@dataclass(frozen=True, slots=True)
class ClusterSettings:
    """Cluster-wide defaults (a settings object of the installation).

    Supplied by every driver of the reconcile pass: a scenario's ``clusterSettings``, the embedded
    cluster's environment (``ROLLOUTUI_DEPLOYMENT_MODE``, ...), the ConfigMap
    ``rolloutui-cluster-settings`` on Kubernetes; all are read by ``parse_cluster_settings``.
    """

    deployment_mode: str = STANDARD_MODE
    default_max_unavailable: IntOrPercent | None = None
    default_max_surge: IntOrPercent | None = None
    multi_node_override: bool = False

    def to_json(self) -> dict[str, Any]:
        """The scenario shape: ``{deploymentMode, defaultRollout: {maxUnavailable, maxSurge}, multiNodeOverride}``."""
        rollout: dict[str, Any] = {}
        if self.default_max_unavailable is not None:
            rollout["maxUnavailable"] = self.default_max_unavailable.to_json()
        if self.default_max_surge is not None:
            rollout["maxSurge"] = self.default_max_surge.to_json()
        return {
            "deploymentMode": self.deployment_mode,
            "defaultRollout": rollout,
            "multiNodeOverride": self.multi_node_override,
        }


_SETTINGS_KEYS = ("deploymentMode", "defaultRollout", "multiNodeOverride")
_ROLLOUT_KEYS = ("maxUnavailable", "maxSurge")
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off", "")


def _text_budget(raw: Any) -> Any:
    """Text sources (environment, ConfigMap data) carry every value as a string: "2" means 2 there,
    while in a manifest or scenario it is an error (Kubernetes reads "2" as a string)."""
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw.strip())
    return raw


def _flag(raw: Any, path: str, *, text: bool) -> bool:
    if isinstance(raw, bool):
        return raw
    if text and isinstance(raw, str) and raw.strip().lower() in _TRUE + _FALSE:
        return raw.strip().lower() in _TRUE
    raise ValidationError(path, f"expected true or false, got {raw!r}")


def parse_cluster_settings(
    raw: Mapping[str, Any] | None, *, path: str = "clusterSettings", text: bool = False
) -> ClusterSettings:
    """Cluster settings from the scenario shape, every key optional::

        {deploymentMode: Standard, defaultRollout: {maxSurge: 1, maxUnavailable: "25%"}, multiNodeOverride: false}

    ``text=True`` for sources whose values are all strings (environment variables, ConfigMap data):
    "2" is then the integer 2, "" is unset and "1"/"0" are booleans. Raises ``ValidationError``
    naming the field (``clusterSettings.defaultRollout.maxSurge: ...``); unknown keys are errors.
    """
    if raw is None:
        return ClusterSettings()
    if not isinstance(raw, Mapping):
        raise ValidationError(path, f"expected a mapping, got {raw!r}")
    for key in raw:
        if key not in _SETTINGS_KEYS:
            raise ValidationError(f"{path}.{key}", f"unknown field (expected one of: {', '.join(_SETTINGS_KEYS)})")
    mode = raw.get("deploymentMode")
    if mode is None or (text and mode == ""):
        mode = STANDARD_MODE
    if mode not in DEPLOYMENT_MODES:
        raise ValidationError(f"{path}.deploymentMode", f"must be one of {', '.join(DEPLOYMENT_MODES)}, got {mode!r}")
    rollout = raw.get("defaultRollout") or {}
    if not isinstance(rollout, Mapping):
        raise ValidationError(f"{path}.defaultRollout", f"expected a mapping, got {rollout!r}")
    for key in rollout:
        if key not in _ROLLOUT_KEYS:
            raise ValidationError(
                f"{path}.defaultRollout.{key}", f"unknown field (expected one of: {', '.join(_ROLLOUT_KEYS)})"
            )
    budgets: dict[str, IntOrPercent | None] = {}
    for key, max_percent in (("maxUnavailable", 100), ("maxSurge", None)):
        value = rollout.get(key)
        if text:
            value = None if value in (None, "") else _text_budget(value)
        try:
            budgets[key] = None if value is None else IntOrPercent.parse(value, max_percent=max_percent)
        except IntOrPercentError as err:
            raise ValidationError(f"{path}.defaultRollout.{key}", str(err)) from None
    override = raw.get("multiNodeOverride")
    return ClusterSettings(
        deployment_mode=mode,
        default_max_unavailable=budgets["maxUnavailable"],
        default_max_surge=budgets["maxSurge"],
        multi_node_override=False if override is None else _flag(override, f"{path}.multiNodeOverride", text=text),
    )


@dataclass(frozen=True, slots=True)
class EffectiveValue:
    written: int | str  # as written at its source (2, "25%")
    count: int  # resolved against the total
    source: str

    def to_json(self) -> dict[str, object]:
        return {"value": self.written, "count": self.count, "source": self.source}


@dataclass(frozen=True, slots=True)
class EffectiveBudgets:
    total: int
    max_unavailable: EffectiveValue
    max_surge: EffectiveValue
    partition: EffectiveValue

    def to_json(self) -> dict[str, object]:
        return {
            "total": self.total,
            "maxUnavailable": self.max_unavailable.to_json(),
            "maxSurge": self.max_surge.to_json(),
            "partition": self.partition.to_json(),
        }


_BUILTIN_UNAVAILABLE = IntOrPercent(1, False)
_BUILTIN_SURGE = IntOrPercent(0, False)
_BUILTIN_PARTITION = IntOrPercent(0, False)
_OVERRIDE_UNAVAILABLE = IntOrPercent(0, False)
_OVERRIDE_SURGE = IntOrPercent(100, True)


def _pick(
    own: IntOrPercent | None,
    cluster: IntOrPercent | None,
    builtin: IntOrPercent,
    override: IntOrPercent | None,
    *,
    total: int,
    round_up: bool,
    cap_at_total: bool,
) -> EffectiveValue:
    if override is not None:
        value, source = override, MULTI_NODE
    elif own is not None:
        value, source = own, OBJECT
    elif cluster is not None:
        value, source = cluster, CLUSTER
    else:
        value, source = builtin, BUILTIN
    count = value.resolve(total, round_up=round_up)
    if cap_at_total:
        count = min(count, total)
    return EffectiveValue(value.to_json(), count, source)


def resolve_budgets(
    budgets: Budgets, *, total: int, multi_node: bool, settings: ClusterSettings | None
) -> EffectiveBudgets:
    settings = settings or ClusterSettings()
    standard = settings.deployment_mode == STANDARD_MODE
    override = settings.multi_node_override and multi_node
    unavailable = _pick(
        budgets.max_unavailable,
        settings.default_max_unavailable if standard else None,
        _BUILTIN_UNAVAILABLE,
        _OVERRIDE_UNAVAILABLE if override else None,
        total=total,
        round_up=False,
        cap_at_total=True,
    )
    surge = _pick(
        budgets.max_surge,
        settings.default_max_surge if standard else None,
        _BUILTIN_SURGE,
        _OVERRIDE_SURGE if override else None,
        total=total,
        round_up=True,
        cap_at_total=False,
    )
    partition = _pick(budgets.partition, None, _BUILTIN_PARTITION, None, total=total, round_up=True, cap_at_total=True)
    # Both resolving to 0 (say maxUnavailable 10% of 4 from a cluster default) would stall the
    # rollout; validation refuses it for the object's own values, and here a default falls back to
    # one unavailable so defaults alone never deadlock.
    if unavailable.count == 0 and surge.count == 0 and total > 0:
        unavailable = EffectiveValue(unavailable.written, 1, unavailable.source)
    return EffectiveBudgets(total, unavailable, surge, partition)


@dataclass(frozen=True, slots=True)
class EffectiveStrategy:
    type: str
    group: EffectiveBudgets  # group level (counts ServingGroups)
    roles: dict[str, EffectiveBudgets]  # per role (counts instances of that role inside each group)
    coordination: dict[str, object] | None = None  # roles, maxSkew (percent), dependencies

    def to_json(self) -> dict[str, object]:
        return {
            "type": self.type,
            "group": self.group.to_json(),
            "roles": {name: b.to_json() for name, b in self.roles.items()},
            "coordination": self.coordination,
        }


def _has_workers(role: Role) -> bool:
    return role.worker_replicas > 0


def resolve(ms: ModelServing, settings: ClusterSettings | None = None) -> EffectiveStrategy:
    group = resolve_budgets(
        ms.strategy.budgets,
        total=ms.replicas,
        multi_node=ms.strategy.type == GROUP_ROLLING and any(_has_workers(r) for r in ms.roles),
        settings=settings,
    )
    roles = {
        role.name: resolve_budgets(role.budgets, total=role.replicas, multi_node=_has_workers(role), settings=settings)
        for role in ms.roles
    }
    coordination = None
    if ms.strategy.coordination is not None:
        c = ms.strategy.coordination
        coordination = {
            "roles": list(c.roles),
            "maxSkew": f"{c.max_skew_percent}%",
            "maxSkewPercent": c.max_skew_percent,
            "dependencies": [{"role": d.role, "dependsOn": list(d.depends_on)} for d in c.dependencies],
        }
    return EffectiveStrategy(ms.strategy.type, group, roles, coordination)
