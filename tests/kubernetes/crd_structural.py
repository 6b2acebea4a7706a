"""The rules the API server applies to a CRD's openAPIV3Schema before it accepts the CRD, as far as
they can be checked without an API server (k8s.io/apiextensions-apiserver: structural schemas,
the CRD API validation, and the static cost estimate of CEL rules).

``schema_violations(schema)`` returns messages in the API server's style, each naming the path
(``properties[spec].properties[replicas].type: Required value: ...``). Used by
test_crd_structural.py on deploy/crd and on deliberately broken copies of it.

Structural (every node):
- ``type`` is set at the root (``object``), for every field of ``properties`` or
  ``additionalProperties`` and for ``items``, except a node with ``x-kubernetes-int-or-string: true``
  or ``x-kubernetes-preserve-unknown-fields: true``;
- an ``array`` has ``items``, and ``items`` is one schema (not a list);
- ``properties`` and ``additionalProperties`` are mutually exclusive, ``additionalProperties`` is
  not ``false`` and not used at the root;
- inside ``allOf``/``anyOf``/``oneOf``/``not`` no ``type``, ``additionalProperties``, ``default``,
  ``title``, ``description``, ``nullable`` or ``x-kubernetes-*`` extension, no ``metadata``
  property; a field or ``items`` named there is also specified outside the junctor;
- ``x-kubernetes-int-or-string: true``: no ``type``, not with preserve-unknown-fields or
  embedded-resource, and an ``anyOf`` (or first ``allOf``'s ``anyOf``) only of exactly
  ``[{type: integer}, {type: string}]``. Value validations beside it are allowed and apply to the
  matching type only: ``pattern``/``minLength``/``maxLength`` to strings, ``minimum``/``maximum``
  to integers (so ``pattern: ^[0-9]+%$`` with ``minimum: 0`` is accepted);
- ``x-kubernetes-preserve-unknown-fields`` is ``true`` or unset (never ``false``); with
  ``x-kubernetes-embedded-resource: true`` the node is ``type: object`` and has ``properties`` or
  preserves unknown fields;
- at the root, ``metadata`` may only restrict ``name``/``generateName`` and is ``type: object``;
  ``apiVersion`` and ``kind`` are strings;
- a ``default`` validates against its own node (and is not set inside junctors); a ``pattern``
  compiles as RE2 (no look-around, no back-references); ``enum`` values have the node's type;
  ``x-kubernetes-list-type`` is atomic/set/map, ``map`` names its keys, which are required or
  defaulted scalars.

CEL (``x-kubernetes-validations``): every rule has a non-empty ``rule`` that compiles and a
``message`` (or ``messageExpression``); its estimated cost is at most 10,000,000
(StaticEstimatedCostLimit) and the sum over the CRD of each rule's cost times how many times it
can run (the product of the enclosing lists' maximum sizes) at most 100,000,000
(StaticEstimatedCRDCostLimit). Cost is estimated like the API server does: every comprehension
(``all``, ``exists``, ``exists_one``, ``map``, ``filter``) multiplies its body by the list's
``maxItems``, or, without it, by the most elements a 3 MiB request could hold (3,145,728 bytes /
3 bytes for ``{},`` = 1,048,575 objects); a string comparison costs 1 + 0.1 x the string's
``maxLength`` (unbounded: 0.1 x 3 MiB). Worked example: ``self.all(r, self.exists_one(s, s.name ==
r.name))`` on roles with ``maxItems: 4`` and names of ``maxLength: 12`` costs about
4 x (4 x (1 + 2 + 2 + 2) + ...) ~ 150; without ``maxItems`` it is ~10^12 x 7 and is refused.
"""

from __future__ import annotations

import math
import re
from typing import Any

import jsonschema

MAX_REQUEST_BYTES = 3 * 1024 * 1024
PER_RULE_COST_LIMIT = 10_000_000
PER_CRD_COST_LIMIT = 100_000_000
JUNCTORS = ("allOf", "anyOf", "oneOf", "not")
FORBIDDEN_IN_JUNCTORS = (
    "type",
    "additionalProperties",
    "default",
    "title",
    "description",
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-validations",
)
INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]
MACROS = {"all", "exists", "exists_one", "map", "filter"}
JSON_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "object": dict, "array": list}


def schema_violations(schema: dict[str, Any]) -> list[str]:
    errors: list[str] = []
    _node(schema, "openAPIV3Schema", "root", errors)
    errors += cel_violations(schema)
    return errors


def _node(node: Any, path: str, level: str, errors: list[str]) -> None:
    if not isinstance(node, dict):
        errors.append(f"{path}: Invalid value: must be a schema object")
        return
    int_or_string = node.get("x-kubernetes-int-or-string") is True
    preserve = node.get("x-kubernetes-preserve-unknown-fields")
    embedded = node.get("x-kubernetes-embedded-resource") is True
    type_ = node.get("type")

    if "$ref" in node:
        errors.append(f"{path}.$ref: Forbidden: $ref is not supported")
    if preserve is not None and preserve is not True:
        errors.append(f"{path}.x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined")
    if int_or_string:
        if preserve:
            errors.append(
                f"{path}.x-kubernetes-preserve-unknown-fields: Invalid value: true: "
                "must be false if x-kubernetes-int-or-string is true"
            )
        if embedded:
            errors.append(
                f"{path}.x-kubernetes-embedded-resource: Invalid value: true: "
                "must be false if x-kubernetes-int-or-string is true"
            )
        if type_:
            errors.append(f"{path}.type: Forbidden: must be empty if x-kubernetes-int-or-string is true")
        any_of = node.get("anyOf")
        first_all_of = (node.get("allOf") or [{}])[0].get("anyOf") if node.get("allOf") else None
        if any_of is not None and any_of != INT_OR_STRING:
            errors.append(f"{path}.anyOf: Forbidden: with x-kubernetes-int-or-string only [integer, string] is allowed")
        if any_of is None and first_all_of is not None and first_all_of != INT_OR_STRING:
            errors.append(f"{path}.allOf[0].anyOf: Forbidden: with x-kubernetes-int-or-string only [integer, string]")
    if embedded:
        if type_ != "object":
            errors.append(f"{path}.type: Required value: must be object if x-kubernetes-embedded-resource is true")
        if not node.get("properties") and not preserve:
            errors.append(
                f"{path}.properties: Required value: must not be empty if x-kubernetes-embedded-resource is true "
                "without x-kubernetes-preserve-unknown-fields"
            )
    if not type_ and not int_or_string and not preserve and not embedded:
        where = {"root": "at the root", "items": "for specified array items", "field": "for specified object fields"}
        errors.append(f"{path}.type: Required value: must not be empty {where[level]}")
    if level == "root" and type_ and type_ != "object":
        errors.append(f"{path}.type: Invalid value: {type_!r}: must be object at the root")
    if type_ and type_ not in JSON_TYPES:
        errors.append(f"{path}.type: Unsupported value: {type_!r}")
    if type_ == "array":
        if "items" not in node:
            errors.append(f"{path}.items: Required value: must be specified")
        elif not isinstance(node["items"], dict):
            errors.append(f"{path}.items: Forbidden: items must be a schema object and not an array")
    if "properties" in node and "additionalProperties" in node:
        errors.append(
            f"{path}.additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
        )
    if node.get("additionalProperties") is False:
        errors.append(f"{path}.additionalProperties: Forbidden: additionalProperties cannot be set to false")
    if level == "root" and "additionalProperties" in node:
        errors.append(f"{path}.additionalProperties: Forbidden: must not be used at the root")
    if "pattern" in node:
        errors += _pattern_errors(node["pattern"], f"{path}.pattern")
    if "enum" in node and type_ in JSON_TYPES:
        for value in node["enum"]:
            if not isinstance(value, JSON_TYPES[type_]) or (type_ == "integer" and isinstance(value, bool)):
                errors.append(f"{path}.enum: Invalid value: {value!r}: must be of type {type_}")
    if "default" in node:
        errors += _default_errors(node, path)
    errors += _list_type_errors(node, path)
    for i, rule in enumerate(node.get("x-kubernetes-validations") or []):
        where = f"{path}.x-kubernetes-validations[{i}]"
        if not str(rule.get("rule") or "").strip():
            errors.append(f"{where}.rule: Required value")
        if not (rule.get("message") or rule.get("messageExpression")):
            errors.append(f"{where}.message: Required value: a rule needs a message or messageExpression")
    if level == "root":
        errors += _root_errors(node, path)

    # Junctors: value validation only, and nothing structural the outside does not also say.
    skip_any_of = int_or_string and node.get("anyOf") == INT_OR_STRING
    for junctor in JUNCTORS:
        branches = node.get(junctor)
        if branches is None:
            continue
        for i, branch in enumerate(branches if isinstance(branches, list) else [branches]):
            if junctor == "anyOf" and skip_any_of:
                continue
            if junctor == "allOf" and i == 0 and int_or_string and (branch.get("anyOf") == INT_OR_STRING):
                branch = {k: v for k, v in branch.items() if k != "anyOf"}
            where = f"{path}.{junctor}" + (f"[{i}]" if isinstance(branches, list) else "")
            _nested(branch, where, node, errors)

    for name, child in (node.get("properties") or {}).items():
        _node(child, f"{path}.properties[{name}]", "field", errors)
    if isinstance(node.get("items"), dict):
        _node(node["items"], f"{path}.items", "items", errors)
    if isinstance(node.get("additionalProperties"), dict):
        _node(node["additionalProperties"], f"{path}.additionalProperties", "field", errors)


def _nested(branch: dict[str, Any], path: str, outside: dict[str, Any] | None, errors: list[str]) -> None:
    for key in FORBIDDEN_IN_JUNCTORS:
        if key in branch and not (key == "nullable" and branch[key] is False):
            errors.append(f"{path}.{key}: Forbidden: must be empty to be structural")
    props = branch.get("properties") or {}
    if "metadata" in props:
        errors.append(f"{path}.properties[metadata]: Forbidden: must not be specified in a nested context")
    outside_props = (outside or {}).get("properties") or {}
    for name, child in props.items():
        if outside is not None and name not in outside_props:
            errors.append(
                f"{path}.properties[{name}]: Required value: must be specified outside of the junctor as well"
            )
        _nested(child, f"{path}.properties[{name}]", outside_props.get(name), errors)
    if "items" in branch:
        if outside is not None and "items" not in outside:
            errors.append(f"{path}.items: Required value: must be specified outside of the junctor as well")
        _nested(branch["items"], f"{path}.items", (outside or {}).get("items"), errors)
    for junctor in JUNCTORS:
        inner = branch.get(junctor)
        for i, b in enumerate(inner if isinstance(inner, list) else ([inner] if inner else [])):
            _nested(b, f"{path}.{junctor}[{i}]", outside, errors)


def _root_errors(node: dict[str, Any], path: str) -> list[str]:
    errors = []
    props = node.get("properties") or {}
    for name in ("apiVersion", "kind"):
        if name in props and props[name].get("type") != "string":
            errors.append(f"{path}.properties[{name}].type: Invalid value: must be string")
    meta = props.get("metadata")
    if meta is not None:
        if meta.get("type") != "object":
            errors.append(f"{path}.properties[metadata].type: Invalid value: must be object")
        extra = set(meta) - {"type", "properties"}
        extra_props = set(meta.get("properties") or {}) - {"name", "generateName"}
        if extra or extra_props:
            errors.append(
                f"{path}.properties[metadata]: Forbidden: must not specify anything other than name and generateName"
            )
    return errors


def _pattern_errors(pattern: str, path: str) -> list[str]:
    # RE2 (what Go's regexp and the API server use) has no look-around and no back-references.
    if re.search(r"\(\?<?[=!]|\\[1-9]", pattern):
        return [f"{path}: Invalid value: {pattern!r}: look-around and back-references are not RE2"]
    try:
        re.compile(pattern)
    except re.error as exc:
        return [f"{path}: Invalid value: {pattern!r}: must be a valid regular expression, but isn't: {exc}"]
    return []


def _default_errors(node: dict[str, Any], path: str) -> list[str]:
    from crd_jsonschema import to_json_schema

    if node["default"] is None and not node.get("nullable"):
        return [f"{path}.default: Invalid value: null: must not be null unless the node is nullable"]
    try:
        jsonschema.validate(node["default"], to_json_schema(node, strict=True))
    except jsonschema.ValidationError as exc:
        return [f"{path}.default: Invalid value: {node['default']!r}: {exc.message}"]
    return []


def _list_type_errors(node: dict[str, Any], path: str) -> list[str]:
    list_type = node.get("x-kubernetes-list-type")
    if list_type is None:
        return []
    errors = []
    if node.get("type") != "array":
        errors.append(f"{path}.x-kubernetes-list-type: Invalid value: must only be used on arrays")
    if list_type not in ("atomic", "set", "map"):
        errors.append(f"{path}.x-kubernetes-list-type: Unsupported value: {list_type!r}")
    items = node.get("items") or {}
    if list_type == "set" and items.get("type") in ("object", "array"):
        errors.append(f"{path}.items.type: Invalid value: a set's items must be scalars")
    if list_type == "map":
        keys = node.get("x-kubernetes-list-map-keys") or []
        if not keys:
            errors.append(f"{path}.x-kubernetes-list-map-keys: Required value: a map list names its keys")
        for key in keys:
            field = (items.get("properties") or {}).get(key)
            if field is None:
                errors.append(f"{path}.x-kubernetes-list-map-keys: Invalid value: {key!r} is not a field of the items")
            elif key not in (items.get("required") or []) and "default" not in field:
                errors.append(
                    f"{path}.x-kubernetes-list-map-keys: Invalid value: {key!r} must be required or defaulted"
                )
    elif "x-kubernetes-list-map-keys" in node:
        errors.append(f"{path}.x-kubernetes-list-map-keys: Forbidden: only with x-kubernetes-list-type map")
    return errors


# ----------------------------------------------------------------------------------------- CEL cost


def min_serialized_size(schema: dict[str, Any] | None) -> int:
    """The fewest bytes one value of ``schema`` takes in JSON (how the API server sizes unbounded lists)."""
    schema = schema or {}
    if schema.get("x-kubernetes-int-or-string"):
        return 1
    return {"string": 2 + int(schema.get("minLength", 0)), "integer": 1, "number": 1, "boolean": 4}.get(
        schema.get("type", "object"), 2
    )


def max_cardinality(schema: dict[str, Any] | None) -> int:
    """How many elements a list (or entries a map) can have: maxItems/maxProperties, else what fits
    in the largest request, e.g. (3,145,728 - 2) / (2 + 1) = 1,048,575 objects."""
    schema = schema or {}
    if schema.get("type") == "array" and "maxItems" in schema:
        return int(schema["maxItems"])
    if schema.get("type") == "object" and "maxProperties" in schema:
        return int(schema["maxProperties"])
    element = schema.get("items") if schema.get("type") == "array" else schema.get("additionalProperties")
    per_element = min_serialized_size(element if isinstance(element, dict) else None) + 1
    if schema.get("type") == "object":
        per_element += 3  # "":  (a key of its own)
    return (MAX_REQUEST_BYTES - 2) // per_element


def _string_factor(schema: dict[str, Any] | None) -> int:
    if not schema or schema.get("type") != "string":
        return 0
    length = schema.get("maxLength", MAX_REQUEST_BYTES)
    return math.ceil(0.1 * length)


def rule_cost(rule: str, schema: dict[str, Any]) -> float:
    """The estimated cost of one evaluation of ``rule`` with ``self`` of ``schema``."""
    import celpy

    tree = celpy.Environment().compile(rule)
    return _cost(tree, {"self": schema})


def _unwrap(node: Any) -> Any:
    from lark import Tree

    while isinstance(node, Tree) and len(node.children) == 1 and isinstance(node.children[0], Tree):
        if node.data in ("member_dot", "member_dot_arg", "member_index"):
            break
        node = node.children[0]
    return node


def _resolve(node: Any, env: dict[str, Any]) -> dict[str, Any] | None:
    """The schema of the value a member expression (``self.a.b``, ``r.name``) denotes, if known."""
    from lark import Token, Tree

    node = _unwrap(node)
    if isinstance(node, Tree) and node.data == "ident":
        return env.get(str(node.children[0]))
    if isinstance(node, Tree) and node.data == "member_dot":
        base = _resolve(node.children[0], env)
        name = str(node.children[1])
        if not base:
            return None
        if name in (base.get("properties") or {}):
            return base["properties"][name]
        extra = base.get("additionalProperties")
        return extra if isinstance(extra, dict) else None
    if isinstance(node, Tree) and node.data == "primary" and node.children and isinstance(node.children[0], Token):
        return env.get(str(node.children[0]))
    return None


def _cost(node: Any, env: dict[str, Any]) -> float:
    from lark import Token, Tree

    if isinstance(node, Token) or not isinstance(node, Tree):
        return 0.0
    if node.data == "member_dot_arg":
        target, name, *rest = node.children
        args = rest[0].children if rest and isinstance(rest[0], Tree) else []
        target_schema = _resolve(target, env)
        if str(name) in MACROS and len(args) == 2:
            variable = str(_unwrap(args[0]).children[0])
            n = max_cardinality(target_schema)
            element = (target_schema or {}).get("items") if (target_schema or {}).get("type") == "array" else None
            if element is None and (target_schema or {}).get("type") == "object":
                element = {"type": "string"}  # a comprehension over a map iterates its keys
            body = _cost(args[1], {**env, variable: element or {}})
            return 1 + _cost(target, env) + n * (body + 1)
        return 1 + _cost(target, env) + sum(_cost(a, env) for a in args) + _string_factor(target_schema)
    if node.data == "relation" and len(node.children) == 2 and isinstance(node.children[0], Tree):
        left_holder, right = node.children
        if left_holder.data.startswith("relation_"):
            left = left_holder.children[0]
            factor = max(_string_factor(_resolve(left, env)), _string_factor(_resolve(right, env)))
            return 1 + factor + _cost(left, env) + _cost(right, env)
    if node.data in ("ident", "member_dot"):
        return 1 + sum(_cost(c, env) for c in node.children)
    return sum(_cost(c, env) for c in node.children)


def cel_rules(schema: dict[str, Any], path: str = "openAPIV3Schema", multiplier: int = 1):
    """(path, rule, node schema, how many times it can run per object) for every CEL rule."""
    for i, rule in enumerate(schema.get("x-kubernetes-validations") or []):
        yield f"{path}.x-kubernetes-validations[{i}]", rule, schema, multiplier
    for name, child in (schema.get("properties") or {}).items():
        yield from cel_rules(child, f"{path}.properties[{name}]", multiplier)
    if isinstance(schema.get("items"), dict):
        yield from cel_rules(schema["items"], f"{path}.items", multiplier * max_cardinality(schema))
    if isinstance(schema.get("additionalProperties"), dict):
        yield from cel_rules(
            schema["additionalProperties"], f"{path}.additionalProperties", multiplier * max_cardinality(schema)
        )


def cel_violations(schema: dict[str, Any]) -> list[str]:
    import celpy

    errors = []
    total = 0.0
    for path, rule, node, multiplier in cel_rules(schema):
        text = str(rule.get("rule") or "")
        if not text.strip():
            continue
        try:
            cost = rule_cost(text, node)
        except celpy.CELParseError as exc:
            errors.append(f"{path}.rule: Invalid value: {text!r}: compilation failed: {exc}")
            continue
        if cost > PER_RULE_COST_LIMIT:
            errors.append(
                f"{path}.rule: Forbidden: estimated rule cost exceeds budget by factor of "
                f"{cost / PER_RULE_COST_LIMIT:.1f}x (try adding maxLength, maxItems, or maxProperties)"
            )
        total += cost * multiplier
    if total > PER_CRD_COST_LIMIT:
        errors.append(
            f"openAPIV3Schema: Forbidden: total CRD cost exceeds budget by factor of {total / PER_CRD_COST_LIMIT:.1f}x"
        )
    return errors
