"""The ModelServing API: types, defaults and validation.

``parse_modelserving(manifest)`` turns a manifest (``serving.rolloutui.io/v1alpha1``, or Kthena's
``workload.serving.volcano.sh/v1alpha1``) into a frozen ``ModelServing``. Every rule that fails
raises ``ValidationError`` naming the field path and the rule, for example::

    spec.template.roles[1].workerTemplate: required when workerReplicas > 0 (workerReplicas is 2)

Budgets are kept as written (``IntOrPercent``, or None when absent); ``strategy.resolve`` turns
them into counts with defaults and records where each value came from.

Kthena's admission rules (its ModelServing webhook, ``validator.go``, and its CRD's schema) are
mirrored for the fields RolloutUI reads: the names Kthena generates, the roles, replicas and
workers, the rolling-update budgets and partitions, the gang policy and the recovery policy.
``tests/core/test_kthena_admission.py`` has one row per rule, naming the rule it mirrors; where
RolloutUI deliberately accepts more (``maxSurge``, its own strategy type and fields), the row and
``docs/upstream-differences.md`` say why.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from . import naming
from .canary import Canary, CanaryError, parse_canary
from .intorpercent import IntOrPercent, IntOrPercentError
from .naming import ANNOTATION_ABORT, ANNOTATION_CANARY_PROMOTE

GROUP_ROLLING = "ServingGroupRollingUpdate"
ROLE_ROLLING = "RoleRollingUpdate"
IN_PLACE = "InPlaceRollingUpdate"
STRATEGY_TYPES = (GROUP_ROLLING, ROLE_ROLLING, IN_PLACE)
ROLE_LEVEL_TYPES = (ROLE_ROLLING, IN_PLACE)

RECREATE_GROUP = "ServingGroupRecreate"
RECREATE_ROLE = "RoleRecreate"
RECREATE_NONE = "None"
RECOVERY_POLICIES = (RECREATE_GROUP, RECREATE_ROLE, RECREATE_NONE)

DEFAULT_REVISION_HISTORY_LIMIT = 10
# The spec fields a revision records (a rollback writes them back); everything else is runtime.
VERSIONED_SPEC_FIELDS = ("template", "schedulerName", "plugins")
# A role's pod templates, in the order the controls and releases write them.
ENTRY_TEMPLATE = "entryTemplate"
WORKER_TEMPLATE = "workerTemplate"
POD_TEMPLATE_KEYS = (ENTRY_TEMPLATE, WORKER_TEMPLATE)
# A role's fields that belong to no revision: scaling and rollout budgets (a rollback keeps them).
RUNTIME_ROLE_FIELDS = ("replicas", "maxUnavailable", "maxSurge", "partition")
# Without an explicit drain timeout a pod gets as long as Kubernetes' default grace period.
DEFAULT_DRAIN_TIMEOUT_SECONDS = 30.0
# As Deployments and KServe: a rollout that makes no progress for 10 minutes is reported as failed.
DEFAULT_PROGRESS_DEADLINE_SECONDS = 600

# DNS-1035 label: the controller builds pod and service names from role names.
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
MAX_ROLE_NAME = 12
MAX_ROLES = 4  # Kthena's CRD: spec.template.roles maxItems
MAX_DNS_LABEL = 63


class ValidationError(ValueError):
    """A manifest breaks a rule. ``field`` is the path, ``rule`` says what is wrong."""

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field}: {rule}")
        self.field = field
        self.rule = rule


@dataclass(frozen=True, slots=True)
class Dependency:
    role: str
    depends_on: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Coordination:
    roles: tuple[str, ...]  # the participating roles (all roles when the manifest lists none)
    max_skew_percent: int
    dependencies: tuple[Dependency, ...]

    def depends_on(self, role: str) -> tuple[str, ...]:
        for dep in self.dependencies:
            if dep.role == role:
                return dep.depends_on
        return ()


@dataclass(frozen=True, slots=True)
class Budgets:
    """Budgets as written in the manifest (None = not set there)."""

    max_unavailable: IntOrPercent | None = None
    max_surge: IntOrPercent | None = None
    partition: IntOrPercent | None = None


@dataclass(frozen=True, slots=True)
class Role:
    name: str
    replicas: int
    entry_template: dict[str, Any]
    worker_replicas: int
    worker_template: dict[str, Any] | None
    budgets: Budgets = Budgets()

    @property
    def pods_per_instance(self) -> int:
        return 1 + self.worker_replicas


@dataclass(frozen=True, slots=True)
class Strategy:
    type: str
    budgets: Budgets  # group level (rollingUpdateConfiguration)
    coordination: Coordination | None
    type_explicit: bool


VERIFICATION_METHODS = ("GET", "POST", "PUT", "HEAD")
DEFAULT_VERIFICATION_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class Verification:
    """``spec.verification``: a request the controller sends to each new instance once it is routed
    (the entry pod); the instance counts as serving only when the answer has ``expect_status``."""

    path: str
    method: str = "GET"
    body: Any = None
    expect_status: int = 200
    timeout_seconds: float = DEFAULT_VERIFICATION_TIMEOUT_SECONDS
    port: int | None = None  # the entry container's first containerPort when not given

    def to_json(self) -> dict[str, Any]:
        out = {"path": self.path, "method": self.method, "expectStatus": self.expect_status}
        out["timeoutSeconds"] = self.timeout_seconds
        if self.body is not None:
            out["body"] = self.body
        if self.port is not None:
            out["port"] = self.port
        return out


TRAFFIC_FIELDS = ("path", "scope", "routing")
SCOPE_GROUP = "group"
SCOPE_ANY = "any"
TRAFFIC_SCOPES = (SCOPE_GROUP, SCOPE_ANY)
ROUTING_AFFINE = "revisionAffine"
ROUTING_BLIND = "blind"
TRAFFIC_ROUTINGS = (ROUTING_AFFINE, ROUTING_BLIND)


@dataclass(frozen=True, slots=True)
class Traffic:
    """``spec.traffic``: the roles a request passes through, in order, and how each hop is chosen.

    ``path`` empty (the default) is one hop to the entry of any role, as without the section.
    ``scope`` ``group`` keeps every hop inside one ServingGroup; ``any`` lets hops cross groups.
    ``routing`` ``revisionAffine`` keeps a request on one revision (a consistent path) or refuses
    it; ``blind`` picks each hop by load alone. Example: ``{path: [prefill, decode]}`` ->
    ``Traffic(("prefill", "decode"), "group", "revisionAffine")``.
    """

    path: tuple[str, ...] = ()
    scope: str = SCOPE_GROUP
    routing: str = ROUTING_AFFINE

    @property
    def has_path(self) -> bool:
        return bool(self.path)

    @property
    def affine(self) -> bool:
        return self.routing == ROUTING_AFFINE

    def to_json(self) -> dict[str, Any]:
        return {"path": list(self.path), "scope": self.scope, "routing": self.routing}


DEFAULT_TRAFFIC = Traffic()


def parse_traffic(
    raw: Any,
    path: str,
    role_names: tuple[str, ...],
    coordination: Coordination | None = None,
    base: Traffic = DEFAULT_TRAFFIC,
) -> Traffic:
    """Read a ``traffic`` section (``spec.traffic``, or a scenario's override of it: fields absent
    from ``raw`` keep ``base``'s). Every field is checked and an unknown one refused with its path;
    a path must name existing roles, each once, and may not send a request from a role to one that
    ``coordination.dependencies`` says calls it (the declared call order is the other way)."""
    if raw is None:
        return base
    raw = _mapping(raw, path)
    unknown = sorted(set(raw) - set(TRAFFIC_FIELDS))
    if unknown:
        raise ValidationError(f"{path}.{unknown[0]}", f"unknown field (allowed: {', '.join(TRAFFIC_FIELDS)})")
    hops = base.path
    if "path" in raw:
        hops_raw = raw["path"]
        if hops_raw is None:
            hops_raw = []
        if not isinstance(hops_raw, list):
            raise ValidationError(f"{path}.path", f"must be a list of role names, got {hops_raw!r}")
        for i, role in enumerate(hops_raw):
            if not isinstance(role, str) or role not in role_names:
                raise ValidationError(
                    f"{path}.path[{i}]", f"role {role!r} does not exist (roles: {', '.join(role_names)})"
                )
            if role in hops_raw[:i]:
                raise ValidationError(f"{path}.path[{i}]", f"role {role!r} is already a hop of the path")
        hops = tuple(hops_raw)
    scope = raw.get("scope", base.scope)
    if scope not in TRAFFIC_SCOPES:
        raise ValidationError(f"{path}.scope", f"must be one of {', '.join(TRAFFIC_SCOPES)}, got {scope!r}")
    routing = raw.get("routing", base.routing)
    if routing not in TRAFFIC_ROUTINGS:
        raise ValidationError(f"{path}.routing", f"must be one of {', '.join(TRAFFIC_ROUTINGS)}, got {routing!r}")
    _check_path_against_dependencies(hops, f"{path}.path", coordination)
    return Traffic(hops, scope, routing)


def _check_path_against_dependencies(hops: tuple[str, ...], path: str, coordination: Coordination | None) -> None:
    """A path's hop ``a`` before hop ``b`` says "a calls b"; ``coordination.dependencies`` saying
    that ``b`` depends on ``a`` (directly or through other roles: b calls a) contradicts it, and the
    startup gate and teardown order would then protect the wrong side of every hop. Example:
    path [prefill, decode] with ``{role: decode, dependsOn: [prefill]}`` is refused."""
    if coordination is None or not coordination.dependencies:
        return
    edges = {d.role: d.depends_on for d in coordination.dependencies}

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            for nxt in edges.get(node, ()):
                if nxt == goal:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return False

    for i, caller in enumerate(hops):
        for callee in hops[i + 1 :]:
            if reaches(callee, caller):
                raise ValidationError(
                    path,
                    f"sends requests from {caller!r} to {callee!r}, but coordination.dependencies says "
                    f"{callee!r} depends on {caller!r} (calls it); list the path in call order or fix the "
                    "dependencies",
                )


@dataclass(frozen=True, slots=True)
class ModelServing:
    name: str
    namespace: str
    uid: str
    generation: int
    replicas: int
    roles: tuple[Role, ...]
    strategy: Strategy
    recovery_policy: str
    revision_history_limit: int
    paused: bool
    drain_timeout_seconds: float
    progress_deadline_seconds: int
    verification: Verification | None
    canary: Canary | None
    scheduler_name: str | None
    manifest: dict[str, Any] = field(repr=False, compare=False)
    # The operator's request to move the canary steps on (annotation canary-promote, JSON), {} if none.
    canary_promote: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # The operator's abort (annotation abort, JSON {"revision", "stable"}), {} if none.
    abort: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # ``spec.traffic``: the roles a request passes through and how hops are chosen.
    traffic: Traffic = DEFAULT_TRAFFIC

    def role(self, name: str) -> Role | None:
        for role in self.roles:
            if role.name == name:
                return role
        return None

    @property
    def role_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.roles)

    @property
    def role_level(self) -> bool:
        return self.strategy.type in ROLE_LEVEL_TYPES

    def partition_as_written(self) -> int | str | dict[str, int | str]:
        """The partition as the manifest writes it, for display: the group-level value, else the
        roles' value when they agree (a map role -> value when they do not), else 0."""
        if self.strategy.budgets.partition is not None:
            return self.strategy.budgets.partition.to_json()
        by_role = {r.name: r.budgets.partition.to_json() for r in self.roles if r.budgets.partition is not None}
        if not by_role:
            return 0
        values = set(map(str, by_role.values()))
        return next(iter(by_role.values())) if len(values) == 1 else by_role


def _int(value: Any, path: str, *, default: int | None = None, minimum: int = 0) -> int:
    if value is None:
        if default is None:
            raise ValidationError(path, "required")
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ValidationError(path, f"must be an integer, got {value!r}")
    if value < minimum:
        raise ValidationError(path, f"must be at least {minimum}, got {value}")
    return value


def _budget(raw: Any, path: str, *, max_percent: int | None = 100) -> IntOrPercent | None:
    if raw is None:
        return None
    try:
        return IntOrPercent.parse(raw, max_percent=max_percent)
    except IntOrPercentError as err:
        raise ValidationError(path, str(err)) from None


def _budgets(raw: dict[str, Any], path: str) -> Budgets:
    return Budgets(
        max_unavailable=_budget(raw.get("maxUnavailable"), f"{path}.maxUnavailable"),
        # A surge of 200% (three new groups for every old one) is legal if wasteful.
        max_surge=_budget(raw.get("maxSurge"), f"{path}.maxSurge", max_percent=None),
        partition=_budget(raw.get("partition"), f"{path}.partition"),
    )


def _mapping(value: Any, path: str, *, required: bool = False) -> dict[str, Any]:
    if value is None:
        if required:
            raise ValidationError(path, "required")
        return {}
    if not isinstance(value, dict):
        raise ValidationError(path, f"must be an object, got {type(value).__name__}")
    return value


def _pod_template(value: Any, path: str) -> dict[str, Any]:
    template = _mapping(value, path, required=True)
    spec = _mapping(template.get("spec"), f"{path}.spec", required=True)
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise ValidationError(f"{path}.spec.containers", "must list at least one container")
    seen: set[str] = set()
    for i, container in enumerate(containers):
        cpath = f"{path}.spec.containers[{i}]"
        if not isinstance(container, dict):
            raise ValidationError(cpath, "must be an object")
        name = container.get("name")
        if not isinstance(name, str) or not name:
            raise ValidationError(f"{cpath}.name", "required")
        if name in seen:
            raise ValidationError(f"{cpath}.name", f"duplicate container name {name!r}")
        seen.add(name)
        image = container.get("image")
        if not isinstance(image, str) or not image:
            raise ValidationError(f"{cpath}.image", "required")
        if not image.strip() or " " in image:
            # Kthena's webhook (validateWorkerImages): a reference with a space is no image.
            raise ValidationError(f"{cpath}.image", f"invalid container image reference {image!r}: it contains spaces")
    return template


def _coordination(raw: Any, path: str, role_names: tuple[str, ...], strategy_type: str) -> Coordination | None:
    if raw is None:
        return None
    raw = _mapping(raw, path)
    if strategy_type != ROLE_ROLLING:
        raise ValidationError(path, f"coordination applies only to {ROLE_ROLLING}, not {strategy_type}")
    roles_raw = raw.get("roles") or []
    if not isinstance(roles_raw, list):
        raise ValidationError(f"{path}.roles", "must be a list of role names")
    for i, name in enumerate(roles_raw):
        if name not in role_names:
            raise ValidationError(
                f"{path}.roles[{i}]", f"role {name!r} does not exist (roles: {', '.join(role_names)})"
            )
    if len(set(roles_raw)) != len(roles_raw):
        raise ValidationError(f"{path}.roles", "lists a role twice")
    roles = tuple(roles_raw) if roles_raw else role_names
    skew_raw = raw.get("maxSkew")
    if skew_raw is None:
        raise ValidationError(f"{path}.maxSkew", "required")
    if not isinstance(skew_raw, str):
        raise ValidationError(f"{path}.maxSkew", f"must be a percentage like '10%', got {skew_raw!r}")
    skew = _budget(skew_raw, f"{path}.maxSkew")
    assert skew is not None
    if not skew.percent:
        raise ValidationError(f"{path}.maxSkew", f"must be a percentage like '10%', got {skew_raw!r}")
    if skew.value == 0:
        raise ValidationError(f"{path}.maxSkew", "must be greater than 0% (0% would allow no progress)")
    deps_raw = raw.get("dependencies") or []
    if not isinstance(deps_raw, list):
        raise ValidationError(f"{path}.dependencies", "must be a list")
    deps: list[Dependency] = []
    seen_roles: set[str] = set()
    for i, dep in enumerate(deps_raw):
        dpath = f"{path}.dependencies[{i}]"
        dep = _mapping(dep, dpath)
        role = dep.get("role")
        if role not in roles:
            raise ValidationError(
                f"{dpath}.role", f"role {role!r} is not a coordinated role (coordinated: {', '.join(roles)})"
            )
        if role in seen_roles:
            raise ValidationError(f"{dpath}.role", f"role {role!r} has two dependency entries; merge them")
        seen_roles.add(role)
        on = dep.get("dependsOn") or []
        if not isinstance(on, list) or not on:
            raise ValidationError(f"{dpath}.dependsOn", "must list at least one role")
        for j, target in enumerate(on):
            if target == role:
                raise ValidationError(f"{dpath}.dependsOn[{j}]", f"role {role!r} cannot depend on itself")
            if target not in roles:
                raise ValidationError(
                    f"{dpath}.dependsOn[{j}]",
                    f"role {target!r} is not a coordinated role (coordinated: {', '.join(roles)})",
                )
        if len(set(on)) != len(on):
            raise ValidationError(f"{dpath}.dependsOn", "lists a role twice")
        deps.append(Dependency(role, tuple(on)))
    cycle = _find_cycle({d.role: d.depends_on for d in deps})
    if cycle:
        raise ValidationError(f"{path}.dependencies", "dependency cycle: " + " -> ".join(cycle))
    return Coordination(roles, skew.value, tuple(deps))


def _find_cycle(edges: dict[str, tuple[str, ...]]) -> list[str] | None:
    """Depth-first search; returns the cycle as a path (a -> b -> a) or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in edges.get(node, ()):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if state.get(nxt) is None:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if state.get(node) is None:
            found = visit(node)
            if found:
                return found
    return None


@dataclass(frozen=True, slots=True)
class Headline:
    """The few spec fields a list row and the pause/resume controls need, read leniently.

    ``parse_modelserving`` refuses an invalid manifest, but an invalid ModelServing stored in the
    cluster still has a list row and can still be paused; this reads what it can and never raises.
    Example: ``{"spec": {"replicas": "x", "paused": true}}`` -> replicas 0, paused True, the default
    strategy type.
    """

    replicas: int
    paused: bool
    strategy_type: str
    has_canary_steps: bool


def headline(manifest: Any) -> Headline:
    spec = manifest.get("spec") if isinstance(manifest, dict) else None
    spec = spec if isinstance(spec, dict) else {}
    strategy = spec.get("rolloutStrategy") if isinstance(spec.get("rolloutStrategy"), dict) else {}
    replicas = spec.get("replicas", 1)
    return Headline(
        replicas=replicas if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas >= 0 else 0,
        paused=spec.get("paused") is True,
        strategy_type=strategy.get("type") if isinstance(strategy.get("type"), str) else GROUP_ROLLING,
        has_canary_steps=bool(strategy.get("canary")),
    )


def _spec_of(manifest: Any) -> Mapping[str, Any]:
    spec = manifest.get("spec") if isinstance(manifest, Mapping) else None
    return spec if isinstance(spec, Mapping) else {}


def roles_as_written(manifest: Any) -> list[Any]:
    """A copy of ``spec.template.roles`` as the manifest writes it ([] when it is not a list), read
    leniently. A merge patch replaces a list whole, so a control that changes one role writes this
    copy back with its change."""
    template = _spec_of(manifest).get("template")
    roles = template.get("roles") if isinstance(template, Mapping) else None
    return copy.deepcopy(roles) if isinstance(roles, list) else []


@dataclass(frozen=True, slots=True)
class RoleContainers:
    """One role's containers as written: ``templates`` maps each pod template that has containers
    (``entryTemplate``, then ``workerTemplate``) to its containers' ``(name, image)`` in order.

    Example: a role ``decode`` whose entry template runs ``vllm`` on ``img:v1`` and has no worker
    template -> ``RoleContainers("decode", {"entryTemplate": (("vllm", "img:v1"),)})``.
    """

    name: Any
    templates: dict[str, tuple[tuple[Any, Any], ...]]

    def container_index(self, template: str, container: str | None) -> int | None:
        """The position of ``container`` in ``template`` (the first container when None), or None."""
        containers = self.templates.get(template) or ()
        if not containers:
            return None
        if container is None:
            return 0
        return next((i for i, (name, _) in enumerate(containers) if name == container), None)


def role_containers(manifest: Any) -> tuple[RoleContainers, ...]:
    """Each role's containers and images as written, in the order of ``roles_as_written`` (one entry
    per role), read leniently like ``headline``: a control may repair an invalid manifest."""
    out = []
    for role in roles_as_written(manifest):
        role = role if isinstance(role, dict) else {}
        templates: dict[str, tuple[tuple[Any, Any], ...]] = {}
        for key in POD_TEMPLATE_KEYS:
            template = role.get(key)
            if not template or not isinstance(template, dict):
                continue
            pod_spec = template.get("spec") or {}
            containers = pod_spec.get("containers") if isinstance(pod_spec, dict) else None
            if containers and isinstance(containers, list):
                templates[key] = tuple(
                    (c.get("name"), c.get("image")) if isinstance(c, dict) else (None, None) for c in containers
                )
        out.append(RoleContainers(role.get("name"), templates))
    return tuple(out)


def versioned_fields(manifest: Any) -> dict[str, Any]:
    """A copy of the spec fields a revision records (``VERSIONED_SPEC_FIELDS``) as the manifest
    writes them; a field the manifest does not write is absent."""
    spec = _spec_of(manifest)
    return {k: copy.deepcopy(spec[k]) for k in VERSIONED_SPEC_FIELDS if k in spec}


def canary_promote_request(manifest: Any) -> dict[str, Any]:
    """The request in annotation ``canary-promote`` (``{"revision", "step"}`` or ``{"revision",
    "full"}``, written by the promote control), or {} when there is none or it is not a JSON object."""
    return _json_annotation(manifest, ANNOTATION_CANARY_PROMOTE)


def abort_request(manifest: Any) -> dict[str, Any]:
    """The request in annotation ``abort`` (``{"revision", "stable"}``, written by the abort
    control), or {} when there is none or it is not a JSON object."""
    return _json_annotation(manifest, ANNOTATION_ABORT)


def _json_annotation(manifest: Any, key: str) -> dict[str, Any]:
    meta = manifest.get("metadata") if isinstance(manifest, dict) else None
    raw = ((meta or {}).get("annotations") or {}).get(key)
    try:
        value = json.loads(raw) if raw else {}
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def canary_of(manifest: Any) -> Canary | None:
    """The canary of ``spec.rolloutStrategy`` read on its own, leniently: the rest of the manifest
    need not be valid (the running controller's analysis port asks for it by name). None when
    there is none or it breaks a rule of the canary."""
    strategy = _spec_of(manifest).get("rolloutStrategy")
    strategy = strategy if isinstance(strategy, Mapping) else {}
    try:
        return parse_canary(
            strategy.get("canary"),
            "spec.rolloutStrategy.canary",
            strategy_type=strategy.get("type") or GROUP_ROLLING,
            group_partition_set=False,
        )
    except CanaryError:
        return None


def runtime_fields(manifest: Any) -> dict[str, Any]:
    """The fields no revision records (a rollback keeps them), as the manifest writes them now:
    replicas, paused, the rollout strategy and each role's replicas and budgets."""
    spec = manifest.get("spec") if isinstance(manifest, dict) else None
    spec = spec if isinstance(spec, dict) else {}
    template = spec.get("template") if isinstance(spec.get("template"), dict) else {}
    roles = (
        [r for r in template.get("roles") or [] if isinstance(r, dict)]
        if isinstance(template.get("roles"), list)
        else []
    )
    return {
        "replicas": spec.get("replicas"),
        "paused": spec.get("paused") is True,
        "rolloutStrategy": spec.get("rolloutStrategy") or {},
        "roles": {r.get("name"): {k: r[k] for k in RUNTIME_ROLE_FIELDS if r.get(k) is not None} for r in roles},
    }


def parse_modelserving_cached(manifest: Any, cache: dict[Any, Any] | None) -> ModelServing:
    """``parse_modelserving`` through ``cache``, a dict the caller owns (one per runner or
    controller): a manifest of the same uid and resourceVersion is the same manifest, so its parse
    is reused. A manifest without both is parsed every time; an invalid one is never kept.

    A status write bumps the resourceVersion without changing what the parse reads (the spec and
    the metadata), so a new version whose ``spec`` is the very object the last parse read (the
    in-memory and embedded stores keep it across status writes) and whose metadata is equal but
    for the resourceVersion takes that parse with this manifest on it: the seed example writes
    status on ~580 of its ~1,000 passes, each a full parse otherwise."""
    meta = manifest.get("metadata") if isinstance(manifest, dict) else None
    uid = meta.get("uid") if isinstance(meta, dict) else None
    version = meta.get("resourceVersion") if isinstance(meta, dict) else None
    if cache is None or not uid or not version:
        return parse_modelserving(manifest)
    key = (str(uid), str(version))
    parsed = cache.get(key)
    if parsed is None:
        parsed = _same_but_version(manifest, cache.get(_LAST_PARSE))
        if parsed is None:
            parsed = parse_modelserving(manifest)
        if len(cache) >= 5:  # the versions of one pass and the next are all it is asked about
            cache.clear()
        cache[key] = parsed
        cache[_LAST_PARSE] = parsed
    return parsed


_LAST_PARSE = ("", "last parse")  # the parse cache's entry for the last manifest parsed (no uid is empty)


def _same_but_version(manifest: dict[str, Any], last: ModelServing | None) -> ModelServing | None:
    """``last`` with ``manifest`` on it when ``manifest`` differs from the one ``last`` was parsed
    from only in its status and resourceVersion (the same ``spec`` object, which nobody changes:
    ``ports.SharedObjects``); else None."""
    if last is None:
        return None
    old = last.manifest
    if manifest.get("spec") is not old.get("spec") or not _equal_but_version(manifest, old):
        return None
    return dataclasses.replace(last, manifest=manifest)


_STATUS = {"status"}


def _equal_but_version(manifest: dict[str, Any], old: dict[str, Any]) -> bool:
    """The top-level fields but status and the metadata but its resourceVersion are equal."""
    if manifest.keys() - _STATUS != old.keys() - _STATUS:
        return False
    for k, v in manifest.items():
        if k in ("spec", "status"):
            continue
        if k == "metadata":
            o = old[k]
            if v is not o and (v.keys() != o.keys() or any(x != "resourceVersion" and v[x] != o[x] for x in v)):
                return False
        elif v != old[k]:
            return False
    return True


def parse_modelserving(manifest: Any) -> ModelServing:
    """Validate a manifest and return the typed ModelServing (defaults applied).

    The steps run in the manifest's reading order and the first rule broken is the one reported:
    the object's identity, the roles list and the strategy type, each role, the strategy's budgets
    and coordination, the canary, the gang policy, the recovery policy, the remaining spec settings,
    then the verification and the traffic as the value is built.
    """
    api_version, name, namespace, meta = _identity(manifest)
    spec = _mapping(manifest.get("spec"), "spec", required=True)
    replicas = _int(spec.get("replicas"), "spec.replicas", default=1)
    template = _mapping(spec.get("template"), "spec.template", required=True)
    roles_raw = _roles_list(template)
    strategy_raw = _mapping(spec.get("rolloutStrategy"), "spec.rolloutStrategy")
    strategy_type = _strategy_type(strategy_raw)
    kthena_api = api_version == naming.KTHENA_API_VERSION
    seen: set[str] = set()
    roles = [
        _role(raw, f"spec.template.roles[{i}]", seen, name, replicas, strategy_type, kthena_api)
        for i, raw in enumerate(roles_raw)
    ]
    role_names = tuple(r.name for r in roles)
    strategy = _strategy(strategy_raw, strategy_type, replicas, role_names)
    canary = _canary(strategy_raw, strategy)
    _check_gang_policy(template.get("gangPolicy"), roles)
    recovery = _recovery_policy(spec, strategy_type)
    settings = _settings(spec)
    return ModelServing(
        name=name,
        namespace=namespace,
        uid=str(meta.get("uid") or ""),
        generation=int(meta.get("generation") or 0),
        replicas=replicas,
        roles=tuple(roles),
        strategy=strategy,
        recovery_policy=recovery,
        revision_history_limit=settings.revision_history_limit,
        paused=settings.paused,
        drain_timeout_seconds=settings.drain_timeout_seconds,
        progress_deadline_seconds=settings.progress_deadline_seconds,
        verification=_verification(spec.get("verification")),
        canary=canary,
        scheduler_name=settings.scheduler_name,
        manifest=manifest,
        canary_promote=canary_promote_request(manifest),
        abort=abort_request(manifest),
        traffic=parse_traffic(spec.get("traffic"), "spec.traffic", role_names, strategy.coordination),
    )


def _identity(manifest: Any) -> tuple[str, str, str, dict[str, Any]]:
    """The apiVersion, name and namespace (``default`` when not written) and the metadata of a
    ModelServing manifest. Example: Kthena's apiVersion with ``metadata: {name: llm}`` ->
    ``("workload.serving.volcano.sh/v1alpha1", "llm", "default", {"name": "llm"})``."""
    if not isinstance(manifest, dict):
        raise ValidationError("(manifest)", "must be an object")
    api_version = manifest.get("apiVersion")
    if api_version not in (naming.API_VERSION, naming.KTHENA_API_VERSION):
        raise ValidationError(
            "apiVersion", f"must be {naming.API_VERSION} (or Kthena's {naming.KTHENA_API_VERSION}), got {api_version!r}"
        )
    if manifest.get("kind") != naming.KIND:
        raise ValidationError("kind", f"must be {naming.KIND}, got {manifest.get('kind')!r}")
    meta = _mapping(manifest.get("metadata"), "metadata", required=True)
    name = meta.get("name")
    if not isinstance(name, str) or not _DNS1123_SUBDOMAIN.match(name):
        raise ValidationError("metadata.name", f"must be a lowercase DNS name, got {name!r}")
    namespace = meta.get("namespace") or "default"
    if not isinstance(namespace, str) or not _DNS1035.match(namespace):
        raise ValidationError("metadata.namespace", f"must be a lowercase DNS label, got {namespace!r}")
    return api_version, name, namespace, meta


def _roles_list(template: dict[str, Any]) -> list[Any]:
    """``spec.template.roles``: a list of one to ``MAX_ROLES`` entries (each checked by ``_role``)."""
    roles_raw = template.get("roles")
    if not isinstance(roles_raw, list) or not roles_raw:
        raise ValidationError("spec.template.roles", "must list at least one role")
    if len(roles_raw) > MAX_ROLES:
        raise ValidationError("spec.template.roles", f"must list at most {MAX_ROLES} roles, got {len(roles_raw)}")
    return roles_raw


def _strategy_type(strategy_raw: dict[str, Any]) -> str:
    """``spec.rolloutStrategy.type``, ``ServingGroupRollingUpdate`` when not written."""
    strategy_type = strategy_raw.get("type") or GROUP_ROLLING
    if strategy_type not in STRATEGY_TYPES:
        raise ValidationError(
            "spec.rolloutStrategy.type", f"must be one of {', '.join(STRATEGY_TYPES)}, got {strategy_type!r}"
        )
    return strategy_type


def _role(
    raw: Any,
    path: str,
    seen: set[str],
    ms_name: str,
    group_replicas: int,
    strategy_type: str,
    kthena_api: bool,
) -> Role:
    """One entry of ``spec.template.roles`` (``seen``: the role names before it, this one added):
    its name, replicas, workers, pod templates and budgets, and the names Kthena generates from it."""
    raw = _mapping(raw, path)
    rname = _role_name(raw.get("name"), path, seen)
    role_replicas = _int(raw.get("replicas"), f"{path}.replicas", default=1)
    if kthena_api and "workerReplicas" not in raw:
        # Kthena's CRD lists workerReplicas as required (RolloutUI's own API defaults it to 0).
        raise ValidationError(f"{path}.workerReplicas", "required by Kthena's API (0 for a role without workers)")
    worker_replicas = _int(raw.get("workerReplicas"), f"{path}.workerReplicas", default=0)
    entry = _pod_template(raw.get("entryTemplate"), f"{path}.entryTemplate")
    worker = _worker_template(raw.get("workerTemplate"), worker_replicas, path)
    budgets = _role_budgets(raw, path, strategy_type, kthena_api, role_replicas)
    _check_generated_name(ms_name, group_replicas, rname, role_replicas, worker_replicas)
    return Role(rname, role_replicas, entry, worker_replicas, worker, budgets)


def _role_name(rname: Any, path: str, seen: set[str]) -> str:
    """A role's name: a DNS-1035 label of at most ``MAX_ROLE_NAME`` characters, not in ``seen``
    (to which it is added)."""
    if not isinstance(rname, str) or not rname:
        raise ValidationError(f"{path}.name", "required")
    if len(rname) > MAX_ROLE_NAME or not _DNS1035.match(rname):
        raise ValidationError(
            f"{path}.name",
            f"must be a DNS-1035 label of at most {MAX_ROLE_NAME} characters (lowercase letters, digits, "
            f"'-', starting with a letter), got {rname!r}",
        )
    if rname in seen:
        raise ValidationError(f"{path}.name", f"duplicate role name {rname!r}")
    seen.add(rname)
    return rname


def _worker_template(worker: Any, worker_replicas: int, path: str) -> dict[str, Any] | None:
    """A role's ``workerTemplate``: required with workers; without workers it is kept only when it
    has containers (None otherwise)."""
    if worker_replicas > 0:
        if worker is None:
            raise ValidationError(
                f"{path}.workerTemplate", f"required when workerReplicas > 0 (workerReplicas is {worker_replicas})"
            )
        return _pod_template(worker, f"{path}.workerTemplate")
    if worker is None:
        return None
    # Unused with workerReplicas 0; Kthena's own examples carry `containers: []` here.
    worker_containers = ((worker or {}).get("spec") or {}).get("containers") if isinstance(worker, dict) else None
    return _pod_template(worker, f"{path}.workerTemplate") if worker_containers else None


def _role_budgets(raw: dict[str, Any], path: str, strategy_type: str, kthena_api: bool, replicas: int) -> Budgets:
    """A role's maxUnavailable, maxSurge and partition, and the rules the strategy type sets on them."""
    if strategy_type == GROUP_ROLLING and kthena_api:
        # Kthena neither checks nor uses a role's maxUnavailable outside RoleRollingUpdate (its
        # CRD takes any int-or-string there): one it cannot read is ignored, not refused.
        budgets = Budgets(
            max_unavailable=_lenient_budget(raw.get("maxUnavailable")),
            max_surge=_lenient_budget(raw.get("maxSurge"), max_percent=None),
            partition=_budget(raw.get("partition"), f"{path}.partition"),
        )
    else:
        budgets = _budgets(raw, path)
    if strategy_type == GROUP_ROLLING and budgets.partition is not None:
        raise ValidationError(
            f"{path}.partition",
            f"a role partition applies only to {ROLE_ROLLING} and {IN_PLACE}; use "
            "spec.rolloutStrategy.rollingUpdateConfiguration.partition",
        )
    if strategy_type == IN_PLACE and budgets.max_surge is not None and budgets.max_surge.value > 0:
        raise ValidationError(f"{path}.maxSurge", "in-place updates change existing pods and have no surge")
    if strategy_type in ROLE_LEVEL_TYPES:
        _check_both_budgets_not_zero(budgets, replicas, path)
        _check_role_unavailable_within_replicas(budgets, replicas, path)
    return budgets


def _strategy(strategy_raw: dict[str, Any], strategy_type: str, replicas: int, role_names: tuple[str, ...]) -> Strategy:
    """The group-level budgets (``rollingUpdateConfiguration``, ServingGroupRollingUpdate only) and
    the coordination of a RoleRollingUpdate (which needs the type written out)."""
    group_path = "spec.rolloutStrategy.rollingUpdateConfiguration"
    rollout_raw = _mapping(strategy_raw.get("rollingUpdateConfiguration"), group_path)
    group_budgets = _budgets(rollout_raw, group_path)
    if strategy_type == GROUP_ROLLING:
        _check_both_budgets_not_zero(group_budgets, replicas, group_path)
    elif rollout_raw:
        raise ValidationError(
            group_path,
            f"applies only to {GROUP_ROLLING}; with {strategy_type} set maxUnavailable, maxSurge and "
            "partition on each role",
        )
    role_config = _mapping(
        strategy_raw.get("roleRollingUpdateConfiguration"), "spec.rolloutStrategy.roleRollingUpdateConfiguration"
    )
    coordination = _coordination(
        role_config.get("coordination"),
        "spec.rolloutStrategy.roleRollingUpdateConfiguration.coordination",
        role_names,
        strategy_type,
    )
    if coordination is not None and not strategy_raw.get("type"):
        raise ValidationError("spec.rolloutStrategy.type", f"coordination needs type: {ROLE_ROLLING} set explicitly")
    return Strategy(strategy_type, group_budgets, coordination, bool(strategy_raw.get("type")))


def _canary(strategy_raw: dict[str, Any], strategy: Strategy) -> Canary | None:
    """``spec.rolloutStrategy.canary`` (``core.canary``), its error as a ``ValidationError``."""
    try:
        return parse_canary(
            strategy_raw.get("canary"),
            "spec.rolloutStrategy.canary",
            strategy_type=strategy.type,
            group_partition_set=strategy.budgets.partition is not None,
        )
    except CanaryError as err:
        raise ValidationError(err.field, err.rule) from None


def _recovery_policy(spec: dict[str, Any], strategy_type: str) -> str:
    """``spec.recoveryPolicy``, ``RoleRecreate`` when not written; Kthena's pairing rule with the
    rollout strategy."""
    recovery = spec.get("recoveryPolicy") or RECREATE_ROLE
    if recovery not in RECOVERY_POLICIES:
        raise ValidationError("spec.recoveryPolicy", f"must be one of {', '.join(RECOVERY_POLICIES)}, got {recovery!r}")
    if recovery == RECREATE_GROUP and strategy_type == ROLE_ROLLING:
        # Kthena's validateRecoveryPolicyAndRolloutStrategy names the rollout type when it is given.
        raise ValidationError(
            "spec.rolloutStrategy.type" if "rolloutStrategy" in spec else "spec.recoveryPolicy",
            f"{ROLE_ROLLING} cannot be combined with recoveryPolicy {RECREATE_GROUP}: it rebuilds the whole "
            "ServingGroup when any pod is lost, so replacing one role instance would restart every role of the "
            "group; use recoveryPolicy RoleRecreate or None (valid pairs: ServingGroupRecreate with "
            "ServingGroupRollingUpdate, RoleRecreate with RoleRollingUpdate)",
        )
    return recovery


class _Settings(NamedTuple):
    revision_history_limit: int
    paused: bool
    drain_timeout_seconds: float
    progress_deadline_seconds: int
    scheduler_name: str | None


def _settings(spec: dict[str, Any]) -> _Settings:
    """The spec's remaining settings with their defaults: revisionHistoryLimit, paused,
    drain.timeoutSeconds, progressDeadlineSeconds, schedulerName (and plugins, a list, checked only).
    Example: ``{}`` -> (10, False, 30.0, 600, None)."""
    history = _int(
        spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit", default=DEFAULT_REVISION_HISTORY_LIMIT
    )
    paused = spec.get("paused", False)
    if not isinstance(paused, bool):
        raise ValidationError("spec.paused", f"must be true or false, got {paused!r}")
    drain = _mapping(spec.get("drain"), "spec.drain")
    timeout_raw = drain.get("timeoutSeconds", DEFAULT_DRAIN_TIMEOUT_SECONDS)
    if isinstance(timeout_raw, bool) or not isinstance(timeout_raw, (int, float)) or timeout_raw < 0:
        raise ValidationError(
            "spec.drain.timeoutSeconds", f"must be a non-negative number of seconds, got {timeout_raw!r}"
        )
    deadline = _int(
        spec.get("progressDeadlineSeconds"),
        "spec.progressDeadlineSeconds",
        default=DEFAULT_PROGRESS_DEADLINE_SECONDS,
        minimum=1,
    )
    scheduler_name = spec.get("schedulerName")
    if scheduler_name is not None and not isinstance(scheduler_name, str):
        raise ValidationError("spec.schedulerName", "must be a string")
    plugins = spec.get("plugins")
    if plugins is not None and not isinstance(plugins, list):
        raise ValidationError("spec.plugins", "must be a list")
    return _Settings(history, paused, float(timeout_raw), deadline, scheduler_name or None)


def check_update(old: Any, new: Any) -> None:
    """The rules Kthena's CRD enforces on an update of a stored ModelServing (its CEL transition
    rules): ``spec.template.gangPolicy`` may not be removed once set, and its ``minRoleReplicas``
    may not change. Raises ``ValidationError`` naming the field."""
    old_template = _spec_of(old).get("template")
    new_template = _spec_of(new).get("template")
    old_gang = old_template.get("gangPolicy") if isinstance(old_template, Mapping) else None
    new_gang = new_template.get("gangPolicy") if isinstance(new_template, Mapping) else None
    if old_gang is None:
        return
    if new_gang is None:
        raise ValidationError("spec.template.gangPolicy", "gangPolicy is required once set")
    before = old_gang.get("minRoleReplicas") if isinstance(old_gang, Mapping) else None
    after = new_gang.get("minRoleReplicas") if isinstance(new_gang, Mapping) else None
    if before != after:
        raise ValidationError("spec.template.gangPolicy.minRoleReplicas", "minRoleReplicas is immutable")


def _verification(raw: Any) -> Verification | None:
    if raw is None:
        return None
    path = "spec.verification"
    raw = _mapping(raw, path)
    target = raw.get("path")
    if not isinstance(target, str) or not target.startswith("/"):
        raise ValidationError(f"{path}.path", f"must be a URL path starting with '/', got {target!r}")
    method = raw.get("method", "GET")
    if method not in VERIFICATION_METHODS:
        raise ValidationError(f"{path}.method", f"must be one of {', '.join(VERIFICATION_METHODS)}, got {method!r}")
    expect = _int(raw.get("expectStatus"), f"{path}.expectStatus", default=200, minimum=100)
    if expect > 599:
        raise ValidationError(f"{path}.expectStatus", f"must be an HTTP status (100-599), got {expect}")
    timeout = raw.get("timeoutSeconds", DEFAULT_VERIFICATION_TIMEOUT_SECONDS)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 300:
        raise ValidationError(f"{path}.timeoutSeconds", f"must be a number of seconds in (0, 300], got {timeout!r}")
    port = raw.get("port")
    if port is not None:
        port = _int(port, f"{path}.port", default=None, minimum=1)
        if port > 65535:
            raise ValidationError(f"{path}.port", f"must be a TCP port (1-65535), got {port}")
    body = raw.get("body")
    if body is not None and method in ("GET", "HEAD"):
        raise ValidationError(f"{path}.body", f"a {method} request has no body; use POST or PUT")
    return Verification(target, method, body, expect, float(timeout), port)


def _lenient_budget(raw: Any, *, max_percent: int | None = 100) -> IntOrPercent | None:
    try:
        return IntOrPercent.parse(raw, max_percent=max_percent) if raw is not None else None
    except IntOrPercentError:
        return None


def _check_generated_name(name: str, replicas: int, role: str, role_replicas: int, workers: int) -> None:
    """Kthena builds names from ``<name>-<replicas>-<role>-<role replicas>-<workers>`` and refuses a
    ModelServing when that is not a DNS-1035 label (``validGeneratedNameLength``): a letter first,
    lowercase letters, digits and '-', at most 63 characters. Example: ``llm`` with 2 groups of role
    ``decode`` (4 replicas, 1 worker) -> ``llm-2-decode-4-1``."""
    generated = f"{name}-{replicas}-{role}-{role_replicas}-{workers}"
    if len(generated) > MAX_DNS_LABEL or not _DNS1035.match(generated):
        raise ValidationError(
            "metadata.name",
            f"the names Kthena generates from it ({generated!r}) must be DNS-1035 labels of at most "
            f"{MAX_DNS_LABEL} characters (a lowercase letter first, then lowercase letters, digits or '-'); "
            "shorten or rename the ModelServing or role",
        )


def _check_role_unavailable_within_replicas(budgets: Budgets, replicas: int, path: str) -> None:
    """Kthena's ``validateMaxUnavailableForRoles``: a role's maxUnavailable (1 when not written,
    the CRD's default) may not exceed that role's replicas. Example: ``maxUnavailable: 3`` on a role
    of 2 replicas is refused; ``100%`` of 2 is 2, accepted."""
    written = budgets.max_unavailable if budgets.max_unavailable is not None else IntOrPercent(1, False)
    count = written.resolve(replicas, round_up=False)
    if count > replicas:
        shown = written.to_json() if budgets.max_unavailable is not None else "1 (the default)"
        raise ValidationError(
            f"{path}.maxUnavailable", f"cannot be greater than the role's replicas ({replicas}), got {shown}"
        )


def _check_gang_policy(raw: Any, roles: list[Role]) -> None:
    """Kthena's ``validateGangPolicy``: each ``minRoleReplicas`` entry names a role of the template
    and asks for 0 to that role's replicas."""
    gang = _mapping(raw, "spec.template.gangPolicy")
    minimum = _mapping(gang.get("minRoleReplicas"), "spec.template.gangPolicy.minRoleReplicas")
    replicas = {r.name: r.replicas for r in roles}
    for role, value in minimum.items():
        path = f"spec.template.gangPolicy.minRoleReplicas[{role}]"
        if role not in replicas:
            raise ValidationError(path, f"role {role!r} does not exist in template.roles ({', '.join(replicas)})")
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValidationError(path, f"must be an integer, got {value!r}")
        if value < 0:
            raise ValidationError(path, f"must be non-negative, got {value}")
        if value > replicas[role]:
            raise ValidationError(path, f"({value}) cannot exceed the role's replicas ({replicas[role]})")


def _check_both_budgets_not_zero(budgets: Budgets, total: int, path: str) -> None:
    """maxUnavailable and maxSurge both resolving to 0 would let the rollout never move.

    Example: ``maxUnavailable: 10%`` of 4 groups rounds down to 0; with no ``maxSurge`` that is
    "replace nothing, add nothing", so it is refused here rather than hanging later. Kthena refuses
    a maxUnavailable that resolves to 0 whatever the count, 0 replicas included; RolloutUI accepts
    it when ``maxSurge`` lets the rollout move (Kthena's snapshot has no maxSurge).
    """
    unavailable = budgets.max_unavailable.resolve(total, round_up=False) if budgets.max_unavailable else 1
    surge = budgets.max_surge.resolve(total, round_up=True) if budgets.max_surge else 0
    if unavailable == 0 and surge == 0:
        written = budgets.max_unavailable.to_json() if budgets.max_unavailable else "(default 1)"
        raise ValidationError(
            f"{path}.maxUnavailable",
            f"maxUnavailable ({written} of {total} -> 0) and maxSurge (-> 0) cannot both be 0: the rollout "
            "could never progress",
        )
