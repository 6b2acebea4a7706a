"""The one reader of YAML that comes from users: manifests (the editor's validate, apply, the CLI's
files), scenarios and release files all go through ``compose_all`` / ``load`` here.

PyYAML's ``safe_load`` builds no arbitrary Python objects, but nothing else about it is bounded: a
470-byte document of nested aliases ("billion laughs", Kubernetes' CVE-2019-11253) expands to
billions of values in whatever walks it next; an alias inside the node it names makes a cycle;
``!!bool maybe`` raises ``KeyError`` and a 5,000-digit integer ``ValueError``, neither a
``YAMLError``. So the text is first read as a stream of parser events, where every limit below is
counted before a single node or Python value exists, with memory that does not grow with the
expansion:

- ``max_bytes`` of text (UTF-8) and ``max_documents`` documents;
- ``max_depth`` levels of nesting, aliases counted at the depth they are used;
- ``max_nodes`` values and ``max_chars`` characters of scalars in the whole text with every alias
  expanded (what anything that walks the result, JSON encoding included, will visit). Anchors and
  aliases within that budget are read as usual, as Kubernetes does (go-yaml bounds the expansion
  since 2019 rather than refusing aliases);
- ``max_scalar_chars`` characters in one value;
- tags: only the core schema's (``!!str``, ``!!int``, ``!!float``, ``!!bool``, ``!!null``, ``!!seq``,
  ``!!map``, and the non-specific ``!``). ``!!python/...``, ``!!binary``, ``!!timestamp`` or a local
  ``!vault`` have no JSON value, and a Kubernetes object is JSON;
- keys: a plain value (a mapping or a list as a key has no JSON form), never twice in one mapping
  (refused naming the key's path and both lines, as Kubernetes' strict decoding refuses a
  duplicate field rather than keeping the last one silently).

Scalars are resolved as YAML 1.1 (PyYAML, and Kubernetes' go-yaml: ``yes`` is true) except that a
date-looking value stays a string: Kubernetes reads YAML into JSON, which has no date, and a
``datetime.date`` would not even encode.

A refusal is ``YamlRefused`` with the problem, the 1-based line, the document and the field path
(``metadata.name``, ``spec.template.roles[1]``); a text that is not YAML at all raises PyYAML's
``YAMLError`` as before. Uses libyaml's parser when PyYAML has it (the C parser reads a 256 kB text
in milliseconds; the pure-Python one takes about a second).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import yaml

_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CORE = "tag:yaml.org,2002:"
TIMESTAMP = _CORE + "timestamp"
CORE_TAGS = frozenset({"!", *(_CORE + t for t in ("str", "int", "float", "bool", "null", "seq", "map"))})


class Loader(_BASE):  # type: ignore[misc, valid-type]
    """PyYAML's safe loader (libyaml's when available) without the implicit timestamp."""


# Resolver.add_implicit_resolver keeps one table per class; this class gets its own copy, without
# the timestamp (class-level, so every loader made from this class shares it).
Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != TIMESTAMP]
    for first, resolvers in _BASE.yaml_implicit_resolvers.items()
}


@dataclass(frozen=True, slots=True)
class Limits:
    max_bytes: int = 1_000_000
    max_documents: int = 100
    max_depth: int = 64
    # The largest manifest of the repository (a CRD) has ~800 values; a ModelServing ~100-600.
    max_nodes: int = 20_000
    max_chars: int = 1_000_000
    max_scalar_chars: int = 128 * 1024


LIMITS = Limits()


class YamlRefused(ValueError):
    """A text this reader will not read; ``line`` is 1-based (None: the text as a whole)."""

    def __init__(self, message: str, *, line: int | None = None, document: int = 0, path: str = "") -> None:
        super().__init__(f"line {line}: {message}" if line else message)
        self.message = message
        self.line = line
        self.document = document
        self.path = path


def short_tag(tag: str) -> str:
    """``tag:yaml.org,2002:binary`` -> ``!!binary`` (as it was most likely written)."""
    return "!!" + tag[len(_CORE) :] if tag.startswith(_CORE) else tag


@dataclass(slots=True)
class _Frame:
    """A collection being read: what it adds up to so far, and where the reader is in it."""

    kind: str  # "map" | "seq" | "doc"
    anchor: str | None
    line: int
    nodes: int = 1  # itself and every value below it, aliases expanded
    chars: int = 0
    below: int = 0  # the height of its tallest child (a scalar 0, a collection 1 + its own)
    index: int = 0  # seq: items read
    expecting_key: bool = True  # map: the next node is a key
    key: str | None = None  # map: the key whose value is being read
    keys: dict[str, int] = field(default_factory=dict)  # map: key -> its line


class _Scan:
    """One pass over the parser's events, checking every limit (module docstring). Nothing is kept
    per value but the open collections and, per anchor, its expanded size."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.stack: list[_Frame] = []
        self.anchors: dict[str, tuple[int, int, int]] = {}  # anchor -> (nodes, chars, height)
        self.documents = 0
        self.nodes = 0
        self.chars = 0
        self.aliased = False

    def path(self, *, key: str | None = None) -> str:
        """The field path of the value being read (``spec.template.roles[1]``), or of ``key`` in the
        innermost mapping."""
        out = ""
        for frame in self.stack:
            if frame.kind == "map" and not frame.expecting_key and frame.key is not None:
                out = f"{out}.{frame.key}" if out else frame.key
            elif frame.kind == "seq":
                out = f"{out}[{frame.index}]"
        if key is not None:
            out = f"{out}.{key}" if out else key
        return out

    def refuse(self, message: str, line: int | None, *, path: str | None = None) -> YamlRefused:
        return YamlRefused(
            message, line=line, document=max(self.documents - 1, 0), path=self.path() if path is None else path
        )

    def depth(self) -> int:
        """Collections open around the value being read."""
        return len(self.stack) - 1  # the document's frame is not a level

    def count(self, nodes: int, chars: int, line: int) -> None:
        """``nodes`` more values and ``chars`` more characters in the text, aliases expanded."""
        self.nodes += nodes
        self.chars += chars
        limits = self.limits
        if self.nodes <= limits.max_nodes and self.chars <= limits.max_chars:
            return
        what = (
            f"more than {limits.max_nodes} values"
            if self.nodes > limits.max_nodes
            else f"more than {limits.max_chars} characters"
        )
        if self.aliased:
            raise self.refuse(
                f"YAML aliases (*name) expand this text to {what} (a 'billion laughs' document); Kubernetes bounds "
                "alias expansion too (CVE-2019-11253): write the values out, or use fewer aliases",
                line,
                path="",
            )
        raise self.refuse(f"the text holds {what}", line, path="")

    def placed(self, nodes: int, chars: int, height: int) -> None:
        """A value of that expanded size and height was read into the innermost collection."""
        frame = self.stack[-1]
        frame.nodes += nodes
        frame.chars += chars
        frame.below = max(frame.below, height)
        if frame.kind == "map":
            frame.expecting_key = not frame.expecting_key
        elif frame.kind == "seq":
            frame.index += 1

    def opening(self, event: Any, line: int) -> None:
        """Checks for a scalar or a collection about to be read: its tag, and as a key, its kind and
        that it was not seen before in this mapping."""
        frame = self.stack[-1]
        if frame.kind == "map" and frame.expecting_key:
            if not isinstance(event, yaml.ScalarEvent):
                raise self.refuse("a mapping key must be a plain value (text or a number), as in JSON", line)
            key = event.value
            # "<<" (a merge of another mapping) may be given more than once.
            if key in frame.keys and key != "<<":
                raise self.refuse(
                    f"the key {key!r} is already set at line {frame.keys[key]} of this mapping; a key may appear "
                    "once (Kubernetes' strict decoding refuses a duplicate field too)",
                    line,
                    path=self.path(key=key),
                )
            frame.keys[key] = line
            frame.key = key
        tag = getattr(event, "tag", None)
        if tag is not None and tag not in CORE_TAGS:
            raise self.refuse(
                f"the tag {short_tag(tag)} is not accepted: a manifest holds plain values (text, numbers, "
                "true/false, null, lists and mappings), as JSON does",
                line,
            )

    def feed(self, event: Any) -> None:
        line = event.start_mark.line + 1
        limits = self.limits
        if isinstance(event, yaml.ScalarEvent):
            self.opening(event, line)
            size = len(event.value)
            if size > limits.max_scalar_chars:
                raise self.refuse(f"a value is longer than {limits.max_scalar_chars} characters ({size})", line)
            self.count(1, size, line)
            if event.anchor is not None:
                self.anchors[event.anchor] = (1, size, 0)
            self.placed(1, size, 0)
        elif isinstance(event, yaml.AliasEvent):
            frame = self.stack[-1]
            if frame.kind == "map" and frame.expecting_key:
                raise self.refuse("a mapping key must be a plain value (text or a number), as in JSON", line)
            if event.anchor not in self.anchors:
                # Anchors are known once their node is complete: an alias inside its own node is a cycle.
                raise self.refuse(
                    f"the alias *{event.anchor} names no complete node before it (an alias inside the node it "
                    "names would make a cycle)",
                    line,
                )
            self.aliased = True
            nodes, chars, height = self.anchors[event.anchor]
            self.count(nodes, chars, line)
            if self.depth() + height > limits.max_depth:
                raise self.refuse(f"the manifest nests deeper than {limits.max_depth} levels", line, path="")
            self.placed(nodes, chars, height)
        elif isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            self.opening(event, line)
            if self.depth() + 1 > limits.max_depth:
                raise self.refuse(f"the manifest nests deeper than {limits.max_depth} levels", line, path="")
            self.count(1, 0, line)
            kind = "map" if isinstance(event, yaml.MappingStartEvent) else "seq"
            self.stack.append(_Frame(kind, event.anchor, line))
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            done = self.stack.pop()
            height = done.below + 1
            if done.anchor is not None:
                self.anchors[done.anchor] = (done.nodes, done.chars, height)
            self.placed(done.nodes, done.chars, height)
        elif isinstance(event, yaml.DocumentStartEvent):
            self.documents += 1
            if self.documents > limits.max_documents:
                raise self.refuse(f"the text holds more than {limits.max_documents} documents", line, path="")
            self.anchors.clear()  # an anchor is known in its own document only
            self.stack = [_Frame("doc", None, line)]
        elif isinstance(event, yaml.DocumentEndEvent):
            self.stack = []


def check(text: str, limits: Limits = LIMITS) -> None:
    """``YamlRefused`` for a text past any limit (module docstring); PyYAML's ``YAMLError`` for a text
    that is not YAML. Builds nothing: memory stays flat whatever the aliases would expand to."""
    check_size(text, limits)
    scan = _Scan(limits)
    try:
        for event in yaml.parse(text, Loader=Loader):
            scan.feed(event)
    except yaml.YAMLError as exc:
        # libyaml's scanner reads flow collections ahead of the events and stops at its own nesting
        # limit (1,000 levels): the same refusal as ours, said the same way.
        if "maximum nesting depth" in str(getattr(exc, "problem", "") or ""):
            mark = getattr(exc, "problem_mark", None)
            raise YamlRefused(
                f"the manifest nests deeper than {limits.max_depth} levels", line=mark.line + 1 if mark else None
            ) from None
        raise


def check_size(text: str, limits: Limits = LIMITS) -> None:
    """``YamlRefused`` for a text that is not a string, not UTF-8 or over ``max_bytes``."""
    if not isinstance(text, str):
        raise YamlRefused("the text must be a string")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:  # a lone surrogate ("\ud800" in a JSON body): no UTF-8 for it
        line = text.count("\n", 0, exc.start) + 1
        raise YamlRefused(f"the text is not valid Unicode: {exc.reason} at character {exc.start}", line=line) from None
    if size > limits.max_bytes:
        raise YamlRefused(f"the text is larger than {limits.max_bytes} bytes ({size})")


def compose_all(text: str, limits: Limits = LIMITS) -> list[yaml.Node | None]:
    """The checked text's documents as PyYAML nodes (``check`` first; an empty document is None)."""
    check(text, limits)
    return list(yaml.compose_all(text, Loader=Loader))


# What a constructor raises for a value its core tag cannot hold: int() ValueError (past Python's
# digits limit), bool KeyError (not one of the YAML 1.1 words), IndexError for an empty value under
# !!int or !!float (they read its first character), float OverflowError.
_UNREADABLE = (ValueError, KeyError, IndexError, TypeError, OverflowError)


def construct(node: yaml.Node | None) -> Any:
    """The Python value of a node of ``compose_all`` (dict, list, str, int, float, bool, None).
    ``YamlRefused`` naming the value's line and path when its core tag cannot hold it
    (``!!bool maybe``, an integer of more digits than Python converts)."""
    if node is None:
        return None
    loader = Loader("")
    try:
        return loader.construct_document(node)
    except _UNREADABLE as exc:
        where = _first_unreadable(node)
        bad, path = where if where is not None else (node, "")
        # Python's advice after ";" (sys.set_int_max_str_digits) is not the user's to follow.
        problem = str(exc).split(";")[0]
        raise YamlRefused(
            f"a value cannot be read as {short_tag(bad.tag)}: {problem}", line=bad.start_mark.line + 1, path=path
        ) from None
    finally:
        loader.dispose()


def _first_unreadable(node: yaml.Node) -> tuple[yaml.Node, str] | None:
    """The first scalar (in document order) that cannot be constructed on its own, with its path."""
    loader = Loader("")
    stack: list[tuple[yaml.Node, str]] = [(node, "")]
    seen: set[int] = set()
    try:
        while stack:
            current, path = stack.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            if isinstance(current, yaml.ScalarNode):
                try:
                    loader.construct_object(current)
                except (*_UNREADABLE, yaml.YAMLError):
                    return current, path
            elif isinstance(current, yaml.MappingNode):
                for key, value in reversed(current.value):
                    name = str(key.value)
                    stack.append((value, f"{path}.{name}" if path else name))
                    stack.append((key, path))
            elif isinstance(current, yaml.SequenceNode):
                stack.extend((item, f"{path}[{i}]") for i, item in reversed(list(enumerate(current.value))))
        return None
    finally:
        loader.dispose()


class _DuplicateKey(ValueError):
    pass


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def load_json(text: str, limits: Limits = LIMITS) -> Any:
    """A JSON text that YAML 1.1 cannot read (tabs for indentation, say), under the same limits as
    YAML: ``YamlRefused`` for a duplicate key, a nesting too deep, too many values or a value too
    long; ``ValueError`` for text that is not JSON."""
    check_size(text, limits)
    try:
        value = json.loads(text, object_pairs_hook=_refuse_duplicates)
    except _DuplicateKey as exc:
        raise YamlRefused(f"the key {exc.args[0]!r} is given twice in one object; a key may appear once") from None
    except RecursionError:  # json recurses once per level: a text nested that deep is refused as such
        raise YamlRefused(f"the manifest nests deeper than {limits.max_depth} levels") from None
    check_value(value, limits)
    return value


def check_value(value: Any, limits: Limits = LIMITS) -> None:
    """``YamlRefused`` naming the path when a parsed value is past ``limits`` (depth, values,
    characters, one value's length). Iterative: a hostile depth cannot exhaust the stack."""
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    nodes = chars = 0
    while stack:
        item, depth, path = stack.pop()
        nodes += 1
        if isinstance(item, dict | list):
            if depth + 1 > limits.max_depth:
                raise YamlRefused(f"the manifest nests deeper than {limits.max_depth} levels")
            if isinstance(item, dict):
                stack.extend((v, depth + 1, f"{path}.{k}" if path else str(k)) for k, v in item.items())
            else:
                stack.extend((v, depth + 1, f"{path}[{i}]") for i, v in enumerate(item))
        elif isinstance(item, str):
            if len(item) > limits.max_scalar_chars:
                raise YamlRefused(
                    f"a value is longer than {limits.max_scalar_chars} characters ({len(item)})", path=path
                )
            chars += len(item)
        if nodes > limits.max_nodes or chars > limits.max_chars:
            what = f"{limits.max_nodes} values" if nodes > limits.max_nodes else f"{limits.max_chars} characters"
            raise YamlRefused(f"the text holds more than {what}")


def load_all(text: str, limits: Limits = LIMITS) -> list[Any]:
    """Every document's value (empty documents are None)."""
    return [construct(node) for node in compose_all(text, limits)]


def load(text: str, limits: Limits = LIMITS) -> Any:
    """The value of a one-document text (None when empty); ``YamlRefused`` for more documents."""
    values = load_all(text, limits)
    if len(values) > 1:
        raise YamlRefused(f"one document expected, the text holds {len(values)}")
    return values[0] if values else None


__all__ = [
    "CORE_TAGS",
    "LIMITS",
    "Limits",
    "Loader",
    "YamlRefused",
    "check",
    "check_size",
    "check_value",
    "compose_all",
    "construct",
    "load",
    "load_all",
    "load_json",
]
