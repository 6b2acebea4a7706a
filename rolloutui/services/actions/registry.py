"""The action registry: the declaration types (``Arg``, ``Preset``, ``Action``), the registry itself
(``register``, ``get``, ``all_actions``), the one way to run an action (``perform``: permission, audit
of a refusal, validation, the service) and the descriptions the entry points are built from
(``page_description``, ``collection_description``, ``registry_document``).

The declarations live in one module per target (``modelserving``, ``model_version``, ``release``,
``kserve``); the targets themselves in ``targets``. See the package's docstring for the flow.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from controller.core.controls import ControlError

from .. import controls
from .targets import MODELSERVING, Target

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
