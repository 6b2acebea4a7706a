"""The ``deploy`` key of KServe's ``inferenceservice-config`` ConfigMap.

Example (KServe's ``config/configmap/inferenceservice.yaml``)::

    {"defaultDeploymentMode": "Standard",
     "deploymentRolloutStrategy": {"defaultRollout": {"maxSurge": "1", "maxUnavailable": "1"}}}

Deployment modes, by the names KServe uses since 0.16: ``Standard`` (plain Deployments; its legacy
name ``RawDeployment``), ``Knative`` (Knative revisions; legacy ``Serverless``) and ``ModelMesh``
(models loaded into ModelMesh Serving's shared runtime pods). A legacy name is read as the current
one, as KServe's ``NewDeployConfig`` and its defaulting webhook do, and the current name is what
the product shows.

KServe refuses a ``deploy`` value without ``defaultDeploymentMode`` ("defaultDeploymentMode is
required") or with a mode it does not know; while its ConfigMap is unreadable it reconciles no
InferenceService and its webhook admits none. Only ``Standard`` applies the default rollout; in the
other modes the ConfigMap's rollout is ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..intorpercent import IntOrPercent, IntOrPercentError
from .errors import KServeError

STANDARD = "Standard"
KNATIVE = "Knative"
MODELMESH = "ModelMesh"
MODES = (STANDARD, KNATIVE, MODELMESH)
# The names KServe used before 0.16, still accepted everywhere a mode is written.
LEGACY_NAMES = {"RawDeployment": STANDARD, "Serverless": KNATIVE}


@dataclass(frozen=True, slots=True)
class DeployConfig:
    # Without a ConfigMap the product assumes what KServe's own ConfigMap ships: Knative
    # ("Serverless" in the file KServe installs).
    default_deployment_mode: str = KNATIVE
    default_max_surge: IntOrPercent | None = None
    default_max_unavailable: IntOrPercent | None = None
    present: bool = False  # False: no ConfigMap (or no deploy key) at all
    # Set when the ConfigMap exists but KServe cannot read its deploy key: KServe then reconciles
    # nothing and admits nothing, and every page says why.
    error: KServeError | None = field(default=None, compare=False)


NO_CONFIG = DeployConfig()


def current_mode_name(raw: Any) -> str | None:
    """The current name of a deployment mode written as ``raw`` (a legacy name maps to its current
    one), or None when ``raw`` names no mode KServe knows."""
    if not isinstance(raw, str):
        return None
    if raw in MODES:
        return raw
    return LEGACY_NAMES.get(raw)


def normalise_mode(raw: Any, path: str) -> str:
    """The ConfigMap's ``defaultDeploymentMode``: required, and one of the modes (current or legacy
    name); KServe's ``NewDeployConfig`` refuses anything else."""
    if raw is None or raw == "":
        raise KServeError(
            path, "required: KServe refuses a deploy config without it (defaultDeploymentMode is required)"
        )
    mode = current_mode_name(raw)
    if mode is None:
        raise KServeError(
            path,
            f"must be one of Standard, Knative or ModelMesh (or the legacy RawDeployment, Serverless), got {raw!r}",
        )
    return mode


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
    mode = normalise_mode(raw.get("defaultDeploymentMode"), f"{base}.defaultDeploymentMode")
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
    none). One KServe cannot read gives the defaults with ``error`` set: KServe's controller fails
    every reconcile with that error and its webhook refuses every InferenceService, so the pages
    show it rather than guess."""
    if config_map is None:
        return NO_CONFIG
    try:
        return parse_deploy_config((config_map.get("data") or {}).get("deploy"))
    except KServeError as err:
        return DeployConfig(present=True, error=err)
