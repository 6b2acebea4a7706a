"""The ``deploy`` key of KServe's ``inferenceservice-config`` ConfigMap.

Example (KServe's ``config/configmap/inferenceservice.yaml``)::

    {"defaultDeploymentMode": "Standard",
     "deploymentRolloutStrategy": {"defaultRollout": {"maxSurge": "1", "maxUnavailable": "1"}}}

``RawDeployment`` is the legacy name of ``Standard`` and is read as such (KServe's
``NewDeployConfig`` does the same). Only ``Standard`` applies the default rollout; in
``Serverless`` (Knative) mode the ConfigMap's rollout is ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..intorpercent import IntOrPercent, IntOrPercentError
from .errors import KServeError

STANDARD = "Standard"
SERVERLESS = "Serverless"
LEGACY_RAW = "RawDeployment"
MODES = (STANDARD, SERVERLESS)


@dataclass(frozen=True, slots=True)
class DeployConfig:
    default_deployment_mode: str = SERVERLESS  # KServe's own default when the key says nothing
    default_max_surge: IntOrPercent | None = None
    default_max_unavailable: IntOrPercent | None = None
    present: bool = False  # False: no ConfigMap (or no deploy key) at all


NO_CONFIG = DeployConfig()


def normalise_mode(raw: Any, path: str) -> str:
    if raw == LEGACY_RAW:
        return STANDARD
    if raw not in MODES:
        raise KServeError(path, f"must be one of Standard, RawDeployment (legacy) or Serverless, got {raw!r}")
    return raw


def rollout_value(raw: Any, path: str, *, max_percent: int | None) -> IntOrPercent | None:
    """A maxSurge/maxUnavailable of the ConfigMap: KServe keeps them as strings ("1", "25%"), so
    a number in a string is read as that number here. Empty means "not configured"."""
    if raw is None or raw == "":
        return None
    if isinstance(raw, str) and raw.strip().isdigit():
        raw = int(raw.strip())
    try:
        return IntOrPercent.parse(raw, max_percent=max_percent)
    except IntOrPercentError as err:
        raise KServeError(path, str(err)) from None


def parse_deploy_config(raw: str | dict[str, Any] | None) -> DeployConfig:
    """``raw`` is the ``deploy`` value as stored in the ConfigMap (a JSON string) or already
    decoded. None: there is no ConfigMap."""
    if raw is None:
        return NO_CONFIG
    base = "inferenceservice-config.deploy"
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as err:
            raise KServeError(base, f"is not valid JSON ({err})") from None
    if not isinstance(raw, dict):
        raise KServeError(base, "must be a JSON object")
    mode = normalise_mode(raw.get("defaultDeploymentMode", SERVERLESS), f"{base}.defaultDeploymentMode")
    strategy = raw.get("deploymentRolloutStrategy") or {}
    if not isinstance(strategy, dict):
        raise KServeError(f"{base}.deploymentRolloutStrategy", "must be an object")
    rollout = strategy.get("defaultRollout") or {}
    if not isinstance(rollout, dict):
        raise KServeError(f"{base}.deploymentRolloutStrategy.defaultRollout", "must be an object")
    path = f"{base}.deploymentRolloutStrategy.defaultRollout"
    return DeployConfig(
        default_deployment_mode=mode,
        default_max_surge=rollout_value(rollout.get("maxSurge"), f"{path}.maxSurge", max_percent=None),
        default_max_unavailable=rollout_value(rollout.get("maxUnavailable"), f"{path}.maxUnavailable", max_percent=100),
        present=True,
    )


# The ConfigMap KServe reads (namespace and name of a default installation).
CONFIG_MAP_NAMESPACE = "kserve"
CONFIG_MAP_NAME = "inferenceservice-config"


def from_config_map(config_map: dict[str, Any] | None) -> DeployConfig:
    """The ``deploy`` settings of the ``inferenceservice-config`` ConfigMap object (None: there is
    none). One KServe cannot read leaves KServe on its defaults (it logs and carries on), so it
    gives ``NO_CONFIG`` here too; ``parse_deploy_config`` is the strict reading that names the field."""
    if config_map is None:
        return NO_CONFIG
    try:
        return parse_deploy_config((config_map.get("data") or {}).get("deploy"))
    except KServeError:
        return NO_CONFIG
