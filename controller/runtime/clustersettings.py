"""The cluster settings every reconcile pass of the live app gets (``reconcile(..., settings=)``).

- Embedded (simulated) cluster: ``settings.ROLLOUTUI_CLUSTER_SETTINGS``, parsed at start-up from
  ``ROLLOUTUI_DEPLOYMENT_MODE``, ``ROLLOUTUI_DEFAULT_MAX_UNAVAILABLE``, ``ROLLOUTUI_DEFAULT_MAX_SURGE``
  and ``ROLLOUTUI_MULTI_NODE_OVERRIDE`` (``rolloutui.runtime_config.cluster_settings_from_env``).
- Kubernetes: the ConfigMap ``settings.ROLLOUTUI_CLUSTER_SETTINGS_CONFIGMAP`` (default
  ``rolloutui/rolloutui-cluster-settings``), read through the adapter
  (``KubernetesCluster.read_configmap_data``) with the keys ``deploymentMode``,
  ``defaultMaxUnavailable``, ``defaultMaxSurge``, ``multiNodeOverride`` (strings, as ConfigMap data
  is; empty = unset). It is re-read at most every ``TTL_SECONDS``, so an edited ConfigMap reaches
  every worker within that time without a restart. Absent (404), the environment applies; invalid,
  the environment applies too and the error is logged and reported by ``current`` (the page shows
  it), so a typo never stops every reconcile.

The PromQL templates a canary analysis may name (``core.promql``) are settings of the installation
too: ``settings.ROLLOUTUI_PROMETHEUS_TEMPLATES`` (``{name: template}``), and on Kubernetes one
ConfigMap key per template, ``prometheusQuery.<name>``, which adds to or replaces the environment's
of that name (``prometheus_templates``).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from controller.core import promql
from controller.core.spec import ValidationError
from controller.core.strategy import ClusterSettings, parse_cluster_settings

from .backend import backend_name, get_cluster

log = logging.getLogger(__name__)

TTL_SECONDS = 10.0
CONFIGMAP_KEYS = {
    "deploymentMode": ("deploymentMode",),
    "defaultMaxUnavailable": ("defaultRollout", "maxUnavailable"),
    "defaultMaxSurge": ("defaultRollout", "maxSurge"),
    "multiNodeOverride": ("multiNodeOverride",),
}


TEMPLATE_KEY_PREFIX = "prometheusQuery."


@dataclass(frozen=True)
class CurrentSettings:
    settings: ClusterSettings
    origin: str  # "environment" or "configmap NAMESPACE/NAME"
    error: str | None = None  # why the ConfigMap was not used (invalid), if it exists
    # The ConfigMap's PromQL templates (``prometheusQuery.<name>`` keys), over the environment's.
    prometheus_templates: dict[str, str] = field(default_factory=dict, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {**self.settings.to_json(), "origin": self.origin, "error": self.error}


_cache: dict[str, tuple[float, CurrentSettings]] = {}
_lock = threading.Lock()


def from_configmap_data(data: dict[str, str], *, where: str) -> ClusterSettings:
    """ConfigMap data (flat keys) -> ``ClusterSettings``; ``ValidationError`` naming ``where.key``."""
    raw: dict[str, Any] = {}
    for key, value in data.items():
        if key not in CONFIGMAP_KEYS:
            expected = ", ".join((*CONFIGMAP_KEYS, TEMPLATE_KEY_PREFIX + "<name>"))
            raise ValidationError(f"{where}.{key}", f"unknown key (expected one of: {expected})")
        target = raw
        path = CONFIGMAP_KEYS[key]
        for part in path[:-1]:
            target = target.setdefault(part, {})
        target[path[-1]] = value
    try:
        return parse_cluster_settings(raw, path=where, text=True)
    except ValidationError as err:
        # Name the ConfigMap's own key, not the nested scenario path.
        nested = err.field.removeprefix(f"{where}.")
        key = next((k for k, p in CONFIGMAP_KEYS.items() if ".".join(p) == nested), nested)
        raise ValidationError(f"{where}.{key}", err.rule) from None


def templates_from_configmap_data(data: dict[str, str], *, where: str) -> dict[str, str]:
    """The ``prometheusQuery.<name>`` keys of ConfigMap data as ``{name: template}``; ``ValidationError``
    naming the key of a template ``core.promql`` refuses."""
    raw = {k.removeprefix(TEMPLATE_KEY_PREFIX): v for k, v in data.items() if k.startswith(TEMPLATE_KEY_PREFIX)}
    try:
        return promql.check_templates(raw, f"{where}.{TEMPLATE_KEY_PREFIX.rstrip('.')}")
    except promql.QueryRefused as err:
        raise ValidationError(err.field, err.rule) from None


def prometheus_templates() -> dict[str, str]:
    """The PromQL templates a ModelServing's canary analysis may name: the environment's
    (``ROLLOUTUI_PROMETHEUS_TEMPLATES``), with the ConfigMap's on Kubernetes over them."""
    return {**(getattr(settings, "ROLLOUTUI_PROMETHEUS_TEMPLATES", None) or {}), **current().prometheus_templates}


def environment_settings() -> ClusterSettings:
    return getattr(settings, "ROLLOUTUI_CLUSTER_SETTINGS", None) or ClusterSettings()


def current(*, cluster=None, fresh: bool = False) -> CurrentSettings:
    """The settings in force and where they come from (cached ``TTL_SECONDS`` on Kubernetes)."""
    if backend_name() != "kubernetes":
        return CurrentSettings(environment_settings(), "environment")
    ref = getattr(settings, "ROLLOUTUI_CLUSTER_SETTINGS_CONFIGMAP", "rolloutui/rolloutui-cluster-settings")
    now = time.monotonic()
    with _lock:
        hit = _cache.get(ref)
        if hit is not None and not fresh and now - hit[0] < TTL_SECONDS:
            return hit[1]
    namespace, name = ref.split("/", 1)
    where = f"configmap {ref}"
    try:
        data = (cluster or get_cluster(actor="controller")).read_configmap_data(namespace, name)
    except Exception as exc:  # unreachable API server, forbidden: keep the last known, else the environment
        log.warning("could not read the cluster settings %s: %s", where, exc)
        if hit is not None:
            return hit[1]
        return CurrentSettings(environment_settings(), "environment", f"{where} could not be read: {exc}")
    if data is None:
        found = CurrentSettings(environment_settings(), "environment")
    else:
        try:
            templates = templates_from_configmap_data(data, where=where)
            rest = {k: v for k, v in data.items() if not k.startswith(TEMPLATE_KEY_PREFIX)}
            found = CurrentSettings(from_configmap_data(rest, where=where), where, prometheus_templates=templates)
        except ValidationError as err:
            log.error("cluster settings %s are invalid, using the environment's: %s", where, err)
            found = CurrentSettings(environment_settings(), "environment", f"{where} is invalid: {err}")
    with _lock:
        _cache[ref] = (now, found)
    return found


def cluster_settings() -> ClusterSettings:
    """What ``reconcile(..., settings=)`` gets."""
    return current().settings
