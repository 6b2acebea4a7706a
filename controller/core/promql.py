"""Which PromQL a ModelServing's canary analysis may make the controller run.

The controller asks Prometheus with its own credentials, and the figures it gets back land in the
ModelServing's status, which everyone who may view the namespace reads. A manifest that could
carry any PromQL would let whoever may apply in one namespace read any series Prometheus holds
(another team's traffic, ``kube_secret_info``) through the analysis windows. So the installation
names the queries it allows (``ROLLOUTUI_PROMETHEUS_TEMPLATES``, and on Kubernetes the cluster
settings ConfigMap's ``prometheusQuery.<name>`` keys), and ``analysis.queries`` refers to them:

    analysis:
      provider: prometheus
      queries:
        requests: router-requests          # the name of an allowed template
        errorRate: router-error-rate

The text of an allowed template is accepted as well (manifests written before templates had
names). Anything else is refused with the metric's field path, at validation (the editor, apply,
the CLI) and again by the running controller, which never sends it (a ModelServing written on
the cluster directly skips RolloutUI's validation).

Templates fill in only the placeholders below, and only with what the controller knows of the
window: never a value from the manifest.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

QUERIES_FIELD = "spec.rolloutStrategy.canary.analysis.queries"
PLACEHOLDERS = ("namespace", "name", "revision", "window")
_PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
# A template's name: a DNS-1123 subdomain's characters, which a ConfigMap key allows after the
# ``prometheusQuery.`` prefix.
NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$")
MAX_TEMPLATE_CHARS = 4096


class QueryRefused(ValueError):
    """A query reference or a template the rules above refuse; ``field`` is its path."""

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field}: {rule}")
        self.field = field
        self.rule = rule


def check_template(template: Any, field: str) -> str:
    """An installation's template: a PromQL text of at most ``MAX_TEMPLATE_CHARS`` characters whose
    placeholders are all known (``{{revision}}`` among them: a figure is per revision)."""
    if not isinstance(template, str) or not template.strip():
        raise QueryRefused(field, "must be a PromQL text")
    if len(template) > MAX_TEMPLATE_CHARS:
        raise QueryRefused(field, f"must be at most {MAX_TEMPLATE_CHARS} characters")
    unknown = sorted({p for p in _PLACEHOLDER.findall(template) if p not in PLACEHOLDERS})
    if unknown:
        known = ", ".join("{{" + p + "}}" for p in PLACEHOLDERS)
        raise QueryRefused(field, f"unknown placeholder {{{{{unknown[0]}}}}} (known: {known})")
    if "{{revision}}" not in template:
        raise QueryRefused(field, "must use {{revision}} (each figure is one revision's)")
    return template


def check_templates(raw: Any, where: str) -> dict[str, str]:
    """An installation's named templates (``{name: template}``), each checked."""
    if not isinstance(raw, Mapping):
        raise QueryRefused(where, "must be an object of template name -> PromQL template")
    out = {}
    for name, template in raw.items():
        if not isinstance(name, str) or not NAME.match(name):
            raise QueryRefused(
                f"{where}.{name}", "a template's name is lowercase letters, digits, '-' and '.' (at most 63)"
            )
        out[name] = check_template(template, f"{where}.{name}")
    return out


def check_reference(value: Any, field: str) -> str:
    """The shape of one entry of ``analysis.queries`` (whether the installation allows it is
    ``resolve``'s to say): a template's name, or the text of a template."""
    if not isinstance(value, str) or not value.strip():
        raise QueryRefused(field, "must name a query template the installation allows")
    if len(value) > MAX_TEMPLATE_CHARS:
        raise QueryRefused(field, f"must be at most {MAX_TEMPLATE_CHARS} characters")
    return value


def resolve(queries: Mapping[str, str], allowed: Mapping[str, str], path: str) -> dict[str, str]:
    """``analysis.queries`` (figure -> a template's name or text) as the templates to run.
    ``QueryRefused`` naming ``path.<figure>`` for one that is neither; the message lists the names
    allowed, so the author can pick one."""
    texts = set(allowed.values())
    out = {}
    for figure, reference in queries.items():
        if reference in allowed:
            out[figure] = allowed[reference]
        elif reference in texts:
            out[figure] = reference
        else:
            names = ", ".join(sorted(allowed)) or "none: ROLLOUTUI_PROMETHEUS_TEMPLATES is empty"
            shown = reference if len(reference) <= 60 else reference[:57] + "..."
            raise QueryRefused(
                f"{path}.{figure}",
                f"{shown!r} is not a query template this installation allows (allowed: {names}); a manifest "
                "names a template rather than carrying its own PromQL",
            )
    return out


__all__ = [
    "MAX_TEMPLATE_CHARS",
    "NAME",
    "PLACEHOLDERS",
    "QUERIES_FIELD",
    "QueryRefused",
    "check_reference",
    "check_template",
    "check_templates",
    "resolve",
]
