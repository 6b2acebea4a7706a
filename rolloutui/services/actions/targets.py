"""The kinds of object an action acts on (``Target``), and how each entry point names one.

An action's ``target`` says how the API routes it (``/api/model-versions/{model}/{version}/approve``),
how the CLI names the object (``manage.py rollout approve demo-llm:v2``), where the page shows the
button (the ModelServing page shows ModelServing actions, the Releases page the others) and what the
API answers with (``read``, under ``answer``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from controller.core.controls import ControlError

from .. import state
from ..kserve import controls as kserve_controls
from ..releases import records as release_records

_DNS = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_OBJECT = r"[a-z0-9](?:[-.a-z0-9]*[a-z0-9])?"
_VERSION = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"


@dataclass(frozen=True)
class Target:
    """The kind of object an action acts on, and how each entry point names one.

    ``keys``: the service's positional arguments after the user, in order (also the API path's
    parameters); ``route``: the API path regex (named groups = keys) the action's segment follows;
    ``path``: the same path as a format string (``"/api/model-versions/{model}/{version}/"``);
    ``cli``: the CLI's positional argument (``metavar``) and its regex (named groups = keys);
    ``integers``: keys converted to ``int``; ``read``: the object after the action, for the API's
    answer under ``answer``; ``where``: the audit record's (namespace, name) for these keys;
    ``describe``: how messages name one (``default/demo``, ``demo-llm:v2``, ``default/demo r3``).
    """

    kind: str
    label: str
    keys: tuple[str, ...]
    route: str
    path: str
    metavar: str
    cli: str
    read: Callable[..., Any]
    answer: str
    where: Callable[..., tuple[str, str]]
    describe: Callable[..., str]
    integers: tuple[str, ...] = ()
    # Path segments under the object that are resources, not actions (an action of that name would hide them).
    taken: frozenset[str] = frozenset()

    def convert(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Path or CLI values -> the service's keys (numbers as ``int``)."""
        return {k: int(values[k]) if k in self.integers else values[k] for k in self.keys}

    def parse(self, text: str) -> dict[str, Any]:
        """The CLI's positional argument -> keys; ``ControlError`` on field ``target`` otherwise."""
        found = re.fullmatch(self.cli, text.strip()) if isinstance(text, str) else None
        if not found:
            raise ControlError(f"expected {self.metavar}, got {text!r}", field="target")
        return self.convert(found.groupdict())

    def url(self, **keys: Any) -> str:
        return self.path.format(**keys)


def _ms_where(namespace: str, name: str) -> tuple[str, str]:
    return namespace, name


def _mv_read(model: str, version: str) -> dict[str, Any]:
    # The answer of approve/deprecate: an approver may not operate, so the artifact URI's
    # credentials are masked (GET .../model-versions/... shows it whole to an operator).
    return release_records.model_version_json(release_records.get_model_version(model, version), reveal=False)


def _dr_read(namespace: str, name: str, number: int) -> dict[str, Any]:
    return release_records.release_json(release_records.get_release(namespace, name, number))


MODELSERVING = Target(
    kind="modelserving",
    label="ModelServing",
    keys=("namespace", "name"),
    route=rf"^modelservings/(?P<namespace>{_DNS})/(?P<name>{_OBJECT})",
    path="/api/modelservings/{namespace}/{name}/",
    metavar="NAMESPACE/NAME",
    cli=r"(?P<namespace>[^/\s]+)/(?P<name>[^/\s]+)",
    read=state.get_state,
    answer="state",
    where=_ms_where,
    describe=lambda namespace, name: f"{namespace}/{name}",
    taken=frozenset(
        {"history", "manifest", "capacity", "revisions", "pods", "preview", "releases", "comparison", "status"}
    ),
)
MODEL_VERSION = Target(
    kind="modelversion",
    label="Model version",
    keys=("model", "version"),
    route=rf"^model-versions/(?P<model>{_DNS})/(?P<version>{_VERSION})",
    path="/api/model-versions/{model}/{version}/",
    metavar="MODEL:VERSION",
    cli=rf"(?P<model>{_DNS}):(?P<version>{_VERSION})",
    read=_mv_read,
    answer="modelVersion",
    where=lambda model, version: ("", f"{model}:{version}"),
    describe=lambda model, version: f"{model}:{version}",
)
DEPLOYMENT_REVISION = Target(
    kind="deploymentrevision",
    label="Release",
    keys=("namespace", "name", "number"),
    route=rf"^deployment-revisions/(?P<namespace>{_DNS})/(?P<name>{_OBJECT})/(?P<number>[0-9]{{1,9}})",
    path="/api/deployment-revisions/{namespace}/{name}/{number}/",
    metavar="NAMESPACE/NAME/rN",
    cli=r"(?P<namespace>[^/\s]+)/(?P<name>[^/\s]+)/r?(?P<number>[0-9]{1,9})",
    read=_dr_read,
    answer="deploymentRevision",
    where=lambda namespace, name, number: (namespace, name),
    describe=lambda namespace, name, number: f"{namespace}/{name} r{number}",
    integers=("number",),
    taken=frozenset({"change"}),
)
INFERENCESERVICE = Target(
    kind="inferenceservice",
    label="InferenceService",
    keys=("namespace", "name"),
    route=rf"^inferenceservices/(?P<namespace>{_DNS})/(?P<name>[a-z](?:[-a-z0-9]*[a-z0-9])?)",
    path="/api/inferenceservices/{namespace}/{name}/",
    metavar="NAMESPACE/NAME",
    cli=r"(?P<namespace>[^/\s]+)/(?P<name>[^/\s]+)",
    read=kserve_controls.get_state,
    answer="state",
    where=_ms_where,
    describe=lambda namespace, name: f"{namespace}/{name}",
    taken=frozenset({"history"}),
)
TARGETS = (MODELSERVING, MODEL_VERSION, DEPLOYMENT_REVISION, INFERENCESERVICE)
