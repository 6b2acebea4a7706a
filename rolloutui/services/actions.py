"""The action registry: every operator control declared once, for the page, the REST API and the CLI.

Place in the flow: an operator asks for a control through one of three entry points, and each is
generated from (or reads) the declarations below:

- the REST API (``rolloutui.api``): one route ``POST /api/modelservings/{ns}/{name}/<action.name>`` per
  action, its request serializer built from ``action.args`` (OpenAPI documents each body);
- the CLI (``manage.py rollout <action.name> NAMESPACE/NAME --reason ... --<arg> ...``): one subcommand
  per action, one flag per argument;
- the detail page: ``page_description`` is rendered into the page as JSON (``rollout-actions``), and the
  page's buttons and dialogs are built from it.

All three end in ``perform``: it validates the values against the declaration (``clean``: a
``ControlError`` naming the field) and calls the action's service function in
``rolloutui.services.controls``, the single implementation (permission check, reason, merge patch with
conflict retry, ``AuditRecord``, reconcile). A declaration names that function, the permission it
needs and the ``AuditRecord.action`` it writes; ``tests/dashboard/test_actions.py`` checks that every
declared action is reachable from all three entry points and audits under its declared name.

Adding a control is one ``register(Action(...))`` below (after its service function exists): the route,
the subcommand, the schema and the page description follow.

Targets: an action acts on one kind of object, its ``target`` (``Target``): a ModelServing (the
default; service ``service(user, namespace, name, ...)``), a model version (``MODEL_VERSION``:
``service(user, model, version, ...)``) or a release (``DEPLOYMENT_REVISION``: ``service(user,
namespace, name, number, ...)``). The target says how the API routes the action
(``/api/model-versions/{model}/{version}/approve``), how the CLI names the object
(``manage.py rollout approve demo-llm:v2``), where the page shows the button (the ModelServing page
shows ModelServing actions, the Releases page the others) and what the API answers with.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from controller.core import scaling
from controller.core.controls import ControlError

from . import advisor, controls, manifests, state
from .kserve import controls as kserve_controls
from .releases import deploy as release_deploy
from .releases import records as release_records

INTEGER, BOOLEAN, STRING = "integer", "boolean", "string"
OBJECT, COLLECTION = "object", "collection"
_TYPES = {INTEGER: int, BOOLEAN: bool, STRING: str}
_NO_MESSAGES: Mapping[str, str] = MappingProxyType({})


def _snake(name: str) -> str:
    """``toRevision`` -> ``to_revision`` (the service keyword of an API field)."""
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


@dataclass(frozen=True)
class Arg:
    """One argument of an action.

    ``name`` is the key in an API body and the page's field name (``toRevision``); the service
    keyword is its snake case (``to_revision``) and the CLI flag its kebab case (``--to-revision``).
    An optional argument that is not given is ``default`` (None, or False for a boolean).
    ``messages`` replaces generated error texts, keyed like DRF's error codes (``required``,
    ``blank``, ``invalid``, ``min_value``, ``max_value``, ``max_length``).
    ``choices_from`` tells the page where to find candidate values in the state it holds
    (``roles``: the role names, ``revisions``: the revision numbers); the server does not restrict
    the value to them (the service refuses what does not exist, naming the field).
    """

    name: str
    type: str
    help: str
    required: bool = False
    label: str = ""
    min_value: int | None = None
    max_value: int | None = None
    max_length: int | None = None
    messages: Mapping[str, str] = _NO_MESSAGES
    choices_from: str | None = None
    # The CLI reads this argument's value from a file: ``-f FILE`` (``-`` for standard input), as
    # ``kubectl apply -f``; the API and the page send the text itself. At most one per action.
    from_file: bool = False

    def __post_init__(self) -> None:
        if self.type not in _TYPES:
            raise ValueError(f"argument {self.name}: type must be one of {', '.join(_TYPES)}, got {self.type!r}")
        if self.required and self.type == BOOLEAN:
            raise ValueError(f"argument {self.name}: a boolean is a switch, it cannot be required")

    @property
    def param(self) -> str:
        """The keyword of the service function."""
        return _snake(self.name)

    @property
    def flag(self) -> str:
        """The CLI option (``--filename`` for a ``from_file`` argument, with ``-f``)."""
        return "--filename" if self.from_file else "--" + self.param.replace("_", "-")

    @property
    def metavar(self) -> str:
        return "N" if self.type == INTEGER else "..."

    @property
    def default(self) -> Any:
        return False if self.type == BOOLEAN else None

    def message(self, code: str) -> str:
        """The error text for one kind of bad value (the API and the CLI show the same)."""
        if code in self.messages:
            return self.messages[code]
        generated = {
            "required": f"{self.name} is required: {self.help}",
            "null": f"{self.name} is required: {self.help}",
            "blank": f"{self.name} must not be blank",
            "invalid": f"{self.name} must be {'an integer' if self.type == INTEGER else 'true or false'}",
            "min_value": (
                f"{self.name} must not be negative"
                if self.min_value == 0
                else f"{self.name} must be {self.min_value} or more"
            ),
            "max_value": f"{self.name} must be {self.max_value} or less",
            "max_length": f"{self.name} must be at most {self.max_length} characters",
        }
        return generated[code]

    def clean(self, value: Any) -> Any:
        """The value, checked; a ``ControlError`` naming this argument otherwise. None means not given."""
        if value is None:
            if self.required:
                raise ControlError(self.message("required"), field=self.name)
            return self.default
        if self.type == INTEGER:
            if isinstance(value, bool) or not isinstance(value, int):
                raise ControlError(self.message("invalid"), field=self.name)
            if self.min_value is not None and value < self.min_value:
                raise ControlError(self.message("min_value"), field=self.name)
            if self.max_value is not None and value > self.max_value:
                raise ControlError(self.message("max_value"), field=self.name)
        elif self.type == BOOLEAN:
            if not isinstance(value, bool):
                raise ControlError(self.message("invalid"), field=self.name)
        else:
            if not isinstance(value, str):
                raise ControlError(f"{self.name} must be a string", field=self.name)
            value = value.strip()
            if not value:
                if self.required:
                    raise ControlError(self.message("blank"), field=self.name)
                return self.default
            if self.max_length is not None and len(value) > self.max_length:
                raise ControlError(self.message("max_length"), field=self.name)
        return value

    def describe(self) -> dict[str, Any]:
        """This argument as a field of the page's description (see ``page_description``)."""
        return {
            "name": self.name,
            "type": self.type,
            "label": self.label or self.name,
            "help": self.help,
            "required": self.required,
            "default": self.default,
            "min": self.min_value,
            "max": self.max_value,
            "maxLength": self.max_length,
            "choicesFrom": self.choices_from,
            "fromFile": self.from_file,
        }


# Every action takes a reason (the audit trail's "why"); the service requires it too.
REASON = Arg(
    "reason",
    STRING,
    "Why the action is taken; recorded in the audit trail and the revision's change-cause.",
    required=True,
    label="Reason",
    max_length=2000,
    messages=MappingProxyType(
        {
            "required": "reason is required: say why you take this action (it goes to the audit trail).",
            "null": "reason is required: say why you take this action (it goes to the audit trail).",
            "blank": "reason must not be blank: say why you take this action (it goes to the audit trail).",
        }
    ),
)


@dataclass(frozen=True)
class Preset:
    """A shortcut the page may offer as its own button: the action with some values filled in
    (``promote`` with ``{"full": true}`` is "Promote fully")."""

    key: str
    label: str
    values: Mapping[str, Any]

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", MappingProxyType(dict(self.values)))  # a declaration is read-only


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


@dataclass(frozen=True)
class Action:
    """One operator control.

    ``name``: the API path segment and the CLI subcommand (``set-image``); ``audit``: the
    ``AuditRecord.action`` the service writes (``set_image``); ``service``: the service function,
    called as ``service(user, *<target keys>, *, <arg.param>=..., reason=..., source=...)`` (for a
    ModelServing: ``service(user, namespace, name, ...)``); ``target``: what it acts on
    (``Target``, default ``MODELSERVING``); ``exclusive``: groups of arguments of which at most one may be
    given (the error names the first one given); ``tone``: how the page styles its button
    (``default``, ``primary`` or ``danger``).
    """

    name: str
    label: str
    help: str
    service: Callable[..., Any]
    audit: str
    permission: str = controls.PERMISSION
    args: tuple[Arg, ...] = ()
    exclusive: tuple[tuple[str, ...], ...] = ()
    presets: tuple[Preset, ...] = ()
    tone: str = "default"
    target: Target = MODELSERVING
    # "object": on one ModelServing (POST /api/modelservings/{ns}/{name}/<name>, CLI NAMESPACE/NAME,
    # a button on its page); "collection": on the set of ModelServings, naming its targets in its
    # arguments (POST /api/modelservings/<name>, no CLI target, the editor page), its service called as
    # service(user, *, <args>, reason, source) and returning a list of AuditRecords.
    scope: str = "object"
    # The page panel that drives this action with values it computed (apply-advice: the advisor
    # panel, which knows the advice's id), instead of a button of the controls bar asking for them.
    panel: str = ""

    def __post_init__(self) -> None:
        if self.scope not in (OBJECT, COLLECTION):
            raise ValueError(f"action {self.name}: scope must be {OBJECT!r} or {COLLECTION!r}, got {self.scope!r}")
        if sum(a.from_file for a in self.args) > 1:
            raise ValueError(f"action {self.name}: at most one argument may be read from a file")
        if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", self.name):
            raise ValueError(f"action {self.name!r}: the name is a URL segment and a subcommand: lower-case-words")
        names = [a.name for a in self.args]
        if self.name in self.target.taken:
            raise ValueError(f"action {self.name}: the path .../{self.name} is a resource of a {self.target.label}")
        if "reason" in names or len(set(names)) != len(names):
            raise ValueError(f"action {self.name}: argument names must be unique and not 'reason' (always present)")
        for group in self.exclusive:
            unknown = set(group) - set(names)
            if unknown:
                raise ValueError(f"action {self.name}: exclusive names unknown arguments {sorted(unknown)}")
        for preset in self.presets:
            unknown = set(preset.values) - set(names)
            if unknown:
                raise ValueError(f"action {self.name}: preset {preset.key} sets unknown arguments {sorted(unknown)}")

    @property
    def fields(self) -> tuple[Arg, ...]:
        """What a request carries: the action's arguments, then the reason."""
        return (*self.args, REASON)

    def clean(self, values: Mapping[str, Any], *, reason: bool = True) -> dict[str, Any]:
        """Checked values by field name (every field present; not given = its default).

        Unknown keys are refused (a typo such as ``toRevison`` must not be silently ignored), as are
        two arguments of one ``exclusive`` group. ``reason=False`` checks the arguments alone (a
        preview of the action, which changes nothing). Raises ``ControlError`` naming the field.
        """
        fields = self.fields if reason else self.args
        allowed = sorted(f.name for f in fields)
        unknown = sorted(set(values) - set(allowed))
        if unknown:
            raise ControlError(f"unknown field (allowed: {', '.join(allowed)})", field=unknown[0])
        cleaned = {f.name: f.clean(values.get(f.name)) for f in fields}
        for group in self.exclusive:
            given = [n for n in group if cleaned[n] not in (None, False)]
            if len(given) > 1:
                raise ControlError(f"give either {' or '.join(group)}, not both", field=given[0])
        return cleaned

    def describe(self, *, allowed: bool, url: str | None) -> dict[str, Any]:
        """This action as the page sees it (see ``page_description``). ``url`` is None on a page
        listing many objects: it builds each from ``urlTemplate`` (``{key}`` placeholders)."""
        return {
            "name": self.name,
            "label": self.label,
            "help": self.help,
            "method": "POST",
            "url": url,
            "urlTemplate": self.target.path + self.name,
            "target": self.target.kind,
            "targetKeys": list(self.target.keys),
            "permission": self.permission,
            "allowed": allowed,
            "audit": self.audit,
            "tone": self.tone,
            "fields": [f.describe() for f in self.fields],
            "exclusive": [list(group) for group in self.exclusive],
            "presets": [{"key": p.key, "label": p.label, "values": dict(p.values)} for p in self.presets],
            "scope": self.scope,
            "panel": self.panel,
        }


_REGISTRY: dict[str, Action] = {}


def register(action: Action) -> Action:
    if action.name in _REGISTRY:
        raise ValueError(f"action {action.name!r} is declared twice")
    _REGISTRY[action.name] = action
    return action


def get(name: str) -> Action:
    """The action called ``name``; ``ControlError`` on field ``action`` when there is none."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ControlError(f"no action {name!r} (actions: {', '.join(_REGISTRY)})", field="action") from None


def all_actions(*, target: Target | None = None) -> Iterator[Action]:
    """Every action (of ``target`` only, when given), in declaration order (the order of the page's
    buttons and the CLI's help)."""
    return iter(tuple(a for a in _REGISTRY.values() if target is None or a.target is target))


def perform(action: Action, user, *args: Any, source: str):
    """Run ``action`` on one object of its target: ``perform(action, user, *<target keys>, values,
    source=...)`` with ``values`` (field name -> value, the reason included); for a ModelServing
    ``perform(action, user, namespace, name, values, source=...)``. A collection action (``apply``)
    names its objects in its values: ``perform(action, user, values, source=...)``.

    The user must have the action's declared permission in the target's namespace
    (``services.access``: a product group, or a namespace grant of a role carrying it; a collection
    action's service checks each namespace it touches); then the values are checked against the
    declaration (``Action.clean``) and the service runs. Returns the ``AuditRecord`` (a list of them
    for a collection action). Raises ``ControlDenied`` (audited under ``action.audit``),
    ``ControlError`` naming the field, ``NotFound`` or ``Conflict``, as the service does.
    """
    *keys, values = args
    if action.scope == COLLECTION:
        # Its objects are named in its values: the service checks the permission in each namespace
        # they are in (and audits a refusal) before it changes anything.
        cleaned = action.clean(values)
        kwargs = {arg.param: cleaned[arg.name] for arg in action.args}
        return action.service(user, **kwargs, reason=cleaned[REASON.name], source=source)
    if len(keys) != len(action.target.keys):
        raise TypeError(f"{action.name} acts on a {action.target.label}: give {', '.join(action.target.keys)}")
    namespace, name = action.target.where(*keys)
    try:
        # The declared permission, checked first as the API does; a refusal is audited like the
        # service's own (which checks the permission again for direct callers). A target without a
        # namespace (a model version) needs the permission in every namespace.
        controls.check_permission(user, action.permission, namespace=namespace or None)
    except controls.ControlDenied as denied:
        given = {arg.name: values[arg.name] for arg in action.args if arg.name in values}
        controls.audit(
            user,
            action=action.audit,
            namespace=namespace or "",
            name=name or "",
            reason=values.get(REASON.name),
            source=source,
            details={"args": {k: v for k, v in given.items() if not _is_file_arg(action, k)}},
            error=denied,
        )
        raise
    cleaned = action.clean(values)
    kwargs = {arg.param: cleaned[arg.name] for arg in action.args}
    return action.service(user, *keys, **kwargs, reason=cleaned[REASON.name], source=source)


def _is_file_arg(action: Action, name: str) -> bool:
    return any(a.name == name and a.from_file for a in action.args)


def page_description(
    user,
    *,
    api_base: str | None = None,
    targets: tuple[Target, ...] = (MODELSERVING,),
    namespace: str | None = None,
) -> dict[str, Any]:
    """What a page needs to build its controls: every object action of ``targets`` with its label,
    fields, the permission it needs and whether ``user`` has it (in ``namespace``, when the page
    shows one namespace's object; else in every namespace).

    The ModelServing page passes ``api_base``, the ModelServing's API URL
    (``/api/modelservings/{ns}/{name}/``): an action's ``url`` is ``api_base + action.name``. A
    page of many objects (the Releases page) passes no ``api_base`` and builds each URL from
    ``urlTemplate``. Rendered into the page with ``json_script`` (id ``rollout-actions``); the
    shape is in docs/interfaces.md.
    """
    return {
        "actions": [
            action.describe(
                allowed=allowed(user, action, namespace),
                url=api_base + action.name if api_base is not None else None,
            )
            for target in targets
            for action in all_actions(target=target)
            if action.scope == OBJECT
        ]
    }


def collection_description(user, *, api_base: str = "/api/modelservings/") -> dict[str, Any]:
    """The collection actions (``apply``) as the editor page needs them, in the shape of
    ``page_description``; an action's URL is ``api_base + action.name``."""
    return {
        "actions": [
            action.describe(allowed=allowed(user, action, None), url=api_base + action.name)
            for action in all_actions()
            if action.scope == COLLECTION
        ]
    }


def allowed(user, action: Action, namespace: str | None) -> bool:
    """Whether ``user`` may run ``action`` in ``namespace`` (the check ``perform`` makes)."""
    try:
        controls.check_permission(user, action.permission, namespace=namespace)
    except controls.ControlDenied:
        return False
    return True


def registry_document() -> dict[str, Any]:
    """Every action as data, for clients that build their controls from the registry without
    importing it (the remote CLI, ``rolloutui_cli``): ``GET /api/actions/``.

    Independent of the user (whether one may run an action is the API's answer when it is run), so a
    client may cache it; ``version`` changes whenever a declaration does. The API path of an object
    action is ``path`` with the target's keys filled in (``{namespace}``); a collection action's path
    has none. ``cli`` is the pattern (Python ``re``) that splits the CLI's positional argument into
    the keys, ``flag`` each argument's CLI option.
    """
    entries = [
        {
            "name": action.name,
            "label": action.label,
            "help": action.help,
            "method": "POST",
            "scope": action.scope,
            "path": (
                f"/api/modelservings/{action.name}" if action.scope == COLLECTION else action.target.path + action.name
            ),
            "target": {
                "kind": action.target.kind,
                "label": action.target.label,
                "keys": list(action.target.keys),
                "metavar": action.target.metavar,
                "cli": action.target.cli,
            },
            "permission": action.permission,
            "exclusive": [list(group) for group in action.exclusive],
            "args": [
                {
                    "name": arg.name,
                    "type": arg.type,
                    "help": arg.help,
                    "required": arg.required,
                    "flag": arg.flag,
                    "fromFile": arg.from_file,
                    "min": arg.min_value,
                    "max": arg.max_value,
                    "maxLength": arg.max_length,
                }
                for arg in action.fields
            ],
        }
        for action in all_actions()
    ]
    digest = hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()[:16]
    return {"version": digest, "actions": entries}


# -- The declarations ------------------------------------------------------------------------------

PAUSE = register(
    Action(
        name="pause",
        label="Pause",
        help=(
            "Stop rollout progress: no update creates, deletes or drains start until it is resumed. "
            "Recovery of failed pods continues."
        ),
        service=controls.pause,
        audit="pause",
    )
)

RESUME = register(
    Action(
        name="resume",
        label="Resume",
        help="Continue a paused rollout from where it stopped.",
        service=controls.resume,
        audit="resume",
    )
)

PROMOTE = register(
    Action(
        name="promote",
        label="Promote one step",
        help=(
            "Lower the partition: by one step, to a given value, or fully (partition 0, and resume if paused). "
            "Groups at or above the partition move to the update revision."
        ),
        service=controls.promote,
        audit="promote",
        args=(
            Arg(
                "partition",
                INTEGER,
                "Lower the partition to this value. Omit it (and full) for one step down.",
                label="Lower the partition to",
                min_value=0,
            ),
            Arg("full", BOOLEAN, "Partition 0, and resume if paused.", label="Promote fully"),
        ),
        exclusive=(("partition", "full"),),
        presets=(Preset("promote-full", "Promote fully", {"full": True}),),
        tone="primary",
    )
)

SET_IMAGE = register(
    Action(
        name="set-image",
        label="Set image",
        help="Set one container's image in a role's entry and worker templates: a new revision, rolled out.",
        service=controls.set_image,
        audit="set_image",
        args=(
            Arg(
                "role",
                STRING,
                "The role whose image changes.",
                required=True,
                label="Role",
                max_length=253,
                choices_from="roles",
            ),
            Arg(
                "image",
                STRING,
                "The new image, e.g. vllm/vllm-openai:v0.9.2.",
                required=True,
                label="Image",
                max_length=1024,
            ),
            Arg(
                "container",
                STRING,
                "Container name; the first container when omitted.",
                label="Container",
                max_length=253,
            ),
        ),
    )
)

ABORT = register(
    Action(
        name="abort",
        label="Abort",
        help=(
            "Stop the rollout in progress and go back to its stable revision (the one the canary is compared "
            "with, else the current revision): the canary steps end Aborted, every group returns to the stable "
            "revision and the rollout stays paused. Resume is the retry."
        ),
        service=controls.abort,
        audit="abort",
        tone="danger",
    )
)

ROLLBACK = register(
    Action(
        name="rollback",
        label="Roll back",
        help=(
            "Write an earlier revision's versioned fields (role templates, scheduler name, plugins) back into "
            "the spec; replicas, budgets, partition and pause are kept."
        ),
        service=controls.rollback,
        audit="rollback",
        args=(
            Arg(
                "toRevision",
                INTEGER,
                "Revision number as listed by GET .../revisions/.",
                required=True,
                label="To revision",
                min_value=1,
                choices_from="revisions",
            ),
        ),
        tone="danger",
    )
)

SCALE = register(
    Action(
        name="scale",
        label="Scale",
        help=(
            "Set the number of ServingGroups (spec.replicas). New groups are created like any missing group; "
            "groups beyond the count drain (no new requests, those in flight finish) and are then deleted. "
            "0 only with allowZero."
        ),
        service=controls.scale,
        audit="scale",
        args=(
            Arg(
                "replicas",
                INTEGER,
                f"The number of ServingGroups, 1 to {scaling.MAX_REPLICAS} (0 only with allowZero).",
                required=True,
                label="ServingGroups",
                min_value=0,
                max_value=scaling.MAX_REPLICAS,
            ),
            Arg(
                "allowZero",
                BOOLEAN,
                "Confirm a scale to zero: every ServingGroup drains and none serves.",
                label="Allow zero",
            ),
        ),
    )
)

AUTOSCALE = register(
    Action(
        name="autoscale",
        label="Autoscale",
        help=(
            "Opt in to autoscaling: the autoscaler applies the capacity recommendation within minReplicas "
            "(default 1, never 0) and maxReplicas, after a cooldown, never during a rollout; each change "
            "is audited (source autoscaler). disable turns it off (replicas stay where they are)."
        ),
        service=controls.autoscale,
        audit="autoscale",
        args=(
            Arg(
                "minReplicas",
                INTEGER,
                "The fewest ServingGroups the autoscaler keeps (default 1).",
                label="Min ServingGroups",
                min_value=scaling.MIN_AUTOSCALE_REPLICAS,
                max_value=scaling.MAX_REPLICAS,
            ),
            Arg(
                "maxReplicas",
                INTEGER,
                "The most ServingGroups the autoscaler sets (required to turn it on).",
                label="Max ServingGroups",
                min_value=scaling.MIN_AUTOSCALE_REPLICAS,
                max_value=scaling.MAX_REPLICAS,
            ),
            Arg("disable", BOOLEAN, "Turn autoscale off.", label="Turn off"),
        ),
        exclusive=(("minReplicas", "disable"), ("maxReplicas", "disable")),
        presets=(Preset("autoscale-off", "Autoscale off", {"disable": True}),),
    )
)

APPLY_ADVICE = register(
    Action(
        name="apply-advice",
        label="Apply advice",
        help=(
            "Apply the change an advice was computed for (advise) with its recommended strategy, or another "
            "feasible candidate, in one audited action; keepStrategy applies the change alone."
        ),
        service=advisor.apply_advice,
        audit="apply_advice",
        panel="advisor-panel",
        args=(
            Arg("advice", STRING, "The advice's id (advise prints it).", required=True, label="Advice", max_length=64),
            Arg(
                "candidate",
                INTEGER,
                "The candidate to apply (its index); the recommended one when omitted.",
                label="Candidate",
                min_value=0,
            ),
            Arg(
                "keepStrategy", BOOLEAN, "Apply the change alone and keep the current strategy.", label="Keep strategy"
            ),
        ),
        exclusive=(("candidate", "keepStrategy"),),
        tone="primary",
    )
)

DELETE = register(
    Action(
        name="delete",
        label="Delete",
        help="Delete the ModelServing; its pods and revisions go with it. Recorded in the audit trail.",
        service=manifests.delete,
        audit="delete",
        tone="danger",
    )
)

APPLY = register(
    Action(
        name="apply",
        label="Apply manifest",
        help=(
            "Create or update ModelServings from a YAML or JSON manifest (several documents with ---; "
            "apiVersion serving.rolloutui.io/v1alpha1 or Kthena's workload.serving.volcano.sh/v1alpha1). "
            "An existing one gets the manifest's spec; other kinds are skipped."
        ),
        service=manifests.apply,
        audit="apply",
        args=(
            Arg(
                "manifest",
                STRING,
                "The manifest text (YAML or JSON); from the CLI, -f FILE (- for standard input).",
                required=True,
                label="Manifest",
                max_length=manifests.MAX_BYTES,
                from_file=True,
            ),
        ),
        tone="primary",
        scope=COLLECTION,
    )
)

# -- Release actions: a model version's approval, a release's deploy, rollback and promotion --------------

APPROVE = register(
    Action(
        name="approve",
        label="Approve",
        help=(
            "Approve a Registered model version for release (who, when and why are kept). Environments that "
            "require approval, such as production, take only approved versions."
        ),
        service=release_records.approve,
        audit="approve",
        permission=release_records.APPROVE,
        target=MODEL_VERSION,
        tone="primary",
    )
)

DEPRECATE = register(
    Action(
        name="deprecate",
        label="Deprecate",
        help="Mark a model version Deprecated: no new release may use it (a rollback to a release of it still may).",
        service=release_records.deprecate,
        audit="deprecate",
        permission=release_records.APPROVE,
        target=MODEL_VERSION,
    )
)

DEPLOY = register(
    Action(
        name="deploy",
        label="Deploy",
        help=(
            "Write a Pending release into its target's templates: the version's image, artifact and checksum, "
            "schema versions, config and resources, together. Refused for an unapproved version where the "
            "environment requires approval."
        ),
        service=release_deploy.deploy,
        audit="deploy",
        target=DEPLOYMENT_REVISION,
        tone="primary",
    )
)

ROLLBACK_RELEASE = register(
    Action(
        name="rollback-release",
        label="Roll back to this release",
        help=(
            "Restore this release's model, image, config, schema and resources together, as a new release; the "
            "live release becomes RolledBack."
        ),
        service=release_deploy.rollback_release,
        audit="rollback_release",
        target=DEPLOYMENT_REVISION,
        tone="danger",
    )
)

ROLLBACK_LAYER = register(
    Action(
        name="rollback-layer",
        label="Roll back this layer",
        help=(
            "Take ONE layer of the live release (model, image, config or resources) back to the value of the "
            "release deployed before it, keeping the other layers; the release stays live and its history "
            "records the change."
        ),
        service=release_deploy.rollback_layer,
        audit="rollback_layer",
        target=DEPLOYMENT_REVISION,
        args=(
            Arg(
                "layer",
                STRING,
                "The layer to roll back: model (artifact, label and schema), image, config or resources.",
                required=True,
                max_length=16,
            ),
        ),
        tone="danger",
    )
)

PROMOTE_RELEASE = register(
    Action(
        name="promote-release",
        label="Promote to production",
        help=(
            "Create and deploy the release of this Serving release's version in another environment "
            "(production by default), with the same config."
        ),
        service=release_deploy.promote_release,
        audit="promote_release",
        target=DEPLOYMENT_REVISION,
        args=(
            Arg("environment", STRING, "The environment to promote to (default production).", max_length=63),
            Arg(
                "target",
                STRING,
                "The environment's ModelServing (namespace/name); optional when it has one.",
                max_length=320,
            ),
            Arg(
                "resourceProfile",
                STRING,
                "A resource profile of that environment; default the same name as this release's, if it has it.",
                label="Resource profile",
                max_length=63,
            ),
        ),
        tone="primary",
    )
)


# -- KServe InferenceService actions (issue 13): what a KServe user would change, never a fight with KServe --
# Named isvc-* because an action's name is also its CLI subcommand (``manage.py rollout isvc-promote
# default/llm``), unique over every target.

_COMPONENT = Arg(
    "component",
    STRING,
    "predictor (default), transformer or explainer.",
    label="Component",
    max_length=63,
)
_CANARY_NAME = Arg(
    "canary",
    STRING,
    "Standard mode: the spec.canary[] entry's name (needed only when there are several).",
    label="Canary",
    max_length=63,
)

ISVC_SET_IMAGE = register(
    Action(
        name="isvc-set-image",
        label="Set image",
        help=(
            "Set a component's image (its model.image, or a container's image): KServe rolls it out "
            "(Standard: a new ReplicaSet under the effective strategy; Serverless: a new revision)."
        ),
        service=kserve_controls.set_image,
        audit="isvc_set_image",
        target=INFERENCESERVICE,
        args=(
            Arg(
                "image",
                STRING,
                "The new image, e.g. vllm/vllm-openai:v0.9.2.",
                required=True,
                label="Image",
                max_length=1024,
            ),
            _COMPONENT,
            Arg(
                "container",
                STRING,
                "Container name, for a component with containers (the first when omitted).",
                label="Container",
                max_length=253,
            ),
        ),
    )
)

ISVC_CANARY = register(
    Action(
        name="isvc-canary",
        label="Start canary",
        help=(
            "Send a percentage of the traffic to a new version. Serverless: canaryTrafficPercent (with an image, "
            "the new revision that gets it). Standard: a spec.canary[] entry running the image; it gets its "
            "weight once its Deployment is Ready."
        ),
        service=kserve_controls.start_canary,
        audit="isvc_canary",
        target=INFERENCESERVICE,
        args=(
            Arg(
                "percent",
                INTEGER,
                "The canary's share of the traffic, 0 to 100.",
                required=True,
                label="Traffic percent",
                min_value=0,
                max_value=100,
            ),
            Arg("image", STRING, "The canary's image (required in Standard mode).", label="Image", max_length=1024),
            Arg(
                "canary",
                STRING,
                "Standard mode: the canary entry's name (default canary).",
                label="Canary name",
                max_length=63,
            ),
        ),
        tone="primary",
    )
)

ISVC_PROMOTE = register(
    Action(
        name="isvc-promote",
        label="Promote canary",
        help=(
            "Serverless: remove canaryTrafficPercent (the latest revision takes all traffic). Standard: the "
            "canary becomes the predictor and its entry goes."
        ),
        service=kserve_controls.promote,
        audit="isvc_promote",
        target=INFERENCESERVICE,
        args=(_CANARY_NAME,),
        tone="primary",
    )
)

ISVC_ROLLBACK = register(
    Action(
        name="isvc-rollback",
        label="Roll back canary",
        help=(
            "Serverless: canaryTrafficPercent 0 (all traffic to the last rolled-out revision). Standard: the "
            "canary entry is removed."
        ),
        service=kserve_controls.rollback,
        audit="isvc_rollback",
        target=INFERENCESERVICE,
        args=(_CANARY_NAME, _COMPONENT),
        tone="danger",
    )
)

ISVC_PAUSE = register(
    Action(
        name="isvc-pause",
        label="Pause",
        help=(
            "kubectl rollout pause of the InferenceService's Deployments (Standard mode only: in Serverless "
            "mode Knative owns them)."
        ),
        service=kserve_controls.pause,
        audit="isvc_pause",
        target=INFERENCESERVICE,
    )
)

ISVC_RESUME = register(
    Action(
        name="isvc-resume",
        label="Resume",
        help="kubectl rollout resume of the InferenceService's Deployments (Standard mode only).",
        service=kserve_controls.resume,
        audit="isvc_resume",
        target=INFERENCESERVICE,
    )
)


__all__ = [
    "DEPLOYMENT_REVISION",
    "INFERENCESERVICE",
    "MODELSERVING",
    "MODEL_VERSION",
    "TARGETS",
    "Target",
    "BOOLEAN",
    "COLLECTION",
    "OBJECT",
    "INTEGER",
    "REASON",
    "STRING",
    "Action",
    "Arg",
    "Preset",
    "all_actions",
    "allowed",
    "get",
    "collection_description",
    "page_description",
    "perform",
    "register",
    "registry_document",
]
