"""ModelServing manifests from an operator: apply (create or update) and delete, with the errors an
editor needs. The only implementation; the action registry declares ``apply`` and ``delete``
(``services.actions``), from which the REST API routes, the ``manage.py rollout apply|delete``
subcommands and the page's buttons are generated; the YAML editor page validates with ``validate``.

Input: YAML or JSON text, one or more documents (``---``). Both apiVersions are accepted:
``serving.rolloutui.io/v1alpha1`` and Kthena's ``workload.serving.volcano.sh/v1alpha1`` (the same
fields; stored under ours, as the Kubernetes adapter and the CRD do). Documents of another kind
(a ConfigMap beside the ModelServing in a Kthena example) are skipped and said so; a text without
any ModelServing is an error.

Errors carry where they are: ``{"document": 0, "path": "spec.template.roles[0].replicas", "line": 12,
"message": "..."}``. The path is the controller's own validation's (``core.spec.parse_modelserving``);
the line is found in the YAML node tree (the nearest existing parent when the field is missing), so
the editor can mark it.

Apply, per ModelServing document, like ``kubectl apply``:

- absent: created (server-owned metadata and status dropped);
- present: its spec is replaced by the document's (a merge patch computed from the two, so removed
  fields go), labels and annotations are added or changed (never removed: the controls' change-cause
  annotation stays); with ``metadata.resourceVersion`` in the document (the editor sends the version it
  loaded) the write fails with ``Conflict`` if the object changed since;
- unchanged: nothing is written.

Every document applied leaves an ``AuditRecord`` (``apply``; details: outcome created / configured /
unchanged, the apiVersion it came with, and ``warnings``: the probe advice, when there is some) and a
reconcile; ``delete`` leaves one (``delete``). Both need
``rolloutui.operate_modelserving``. On Kubernetes the web's ServiceAccount may not create or delete
ModelServings (deploy/rbac.yaml): there the API server refuses and the error says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from controller.core import canary as canary_rules
from controller.core import mergepatch, naming, promql, safeyaml
from controller.core.controls import ControlError
from controller.core.ports import ClusterError, Conflict, NotFound
from controller.core.spec import ModelServing, ValidationError, check_update, parse_modelserving
from controller.runtime import clustersettings, enqueue

from ..models import AuditRecord
from . import controls, kv_advice, masking, probe_advice
from .cluster import canary_weights_need_a_route, get_cluster

MAX_BYTES = 1_000_000
# Deeper than any ModelServing (about 12 levels) by far; the API's JSON bodies have the same bound
# (``rolloutui.api.parsers``). A deeper text is refused before anything recurses through it.
MAX_DEPTH = 2 * mergepatch.MAX_DEPTH
# What one text may hold (controller.core.safeyaml): the API's body limit (256 kB) comes first;
# files from the CLI may be larger, up to MAX_BYTES.
LIMITS = safeyaml.Limits(max_bytes=MAX_BYTES, max_depth=MAX_DEPTH)
VIEW = "rolloutui.view_modelserving"
SERVER_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "deletionTimestamp")


class ManifestError(ControlError):
    """The text cannot be applied; ``errors`` lists each problem with its document, path and line."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        first = errors[0]
        where = f"document {first['document'] + 1}, line {first['line']}: " if first.get("line") else ""
        path = f"{first['path']}: " if first.get("path") else ""
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        super().__init__(f"{where}{path}{first['message']}{more}", field="manifest")
        self.errors = errors


@dataclass
class Document:
    index: int
    obj: Any
    line: int  # 1-based line of the document's first node
    lines: dict[str, int] = field(default_factory=dict)  # field path -> 1-based line

    def line_of(self, path: str) -> int:
        """The line of ``path``, or of its nearest parent that exists (a missing field)."""
        while path:
            if path in self.lines:
                return self.lines[path]
            cut = max(path.rfind("."), path.rfind("["))
            path = path[:cut] if cut > 0 else ""
        return self.line


def _walk(node: yaml.Node, prefix: str, out: dict[str, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            name = str(key.value)
            path = f"{prefix}.{name}" if prefix else name
            out[path] = key.start_mark.line + 1
            _walk(value, path, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            path = f"{prefix}[{i}]"
            out[path] = item.start_mark.line + 1
            _walk(item, path, out)


def _refused(exc: safeyaml.YamlRefused) -> ManifestError:
    return ManifestError([{"document": exc.document, "path": exc.path, "line": exc.line, "message": exc.message}])


def _namespaced(obj: Any) -> Any:
    """A ModelServing whose ``metadata.namespace`` is empty or null is in ``default``, as kubectl
    fills in the context's namespace: stored under "" it could be neither found nor managed."""
    if _kind_of(obj) == naming.KIND and isinstance(obj.get("metadata"), dict):
        if obj["metadata"].get("namespace") in ("", None):
            obj["metadata"]["namespace"] = "default"
    return obj


def parse_documents(text: Any) -> list[Document]:
    """The documents of a YAML or JSON text (empty documents dropped), with a line for every field
    path. Read by the one bounded reader of user YAML (``controller.core.safeyaml``: size,
    documents, depth, values with aliases expanded, tags, duplicate keys, all counted before any
    value is built). ``ManifestError`` naming the line (and the field, where there is one) for text
    that is not YAML or JSON or that the reader refuses."""
    if not isinstance(text, str) or not text.strip():
        raise ManifestError([{"document": 0, "path": "", "line": None, "message": "the manifest is empty"}])
    try:
        try:
            nodes = safeyaml.compose_all(text, LIMITS)
            objects = [safeyaml.construct(node) for node in nodes]
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            # JSON that YAML 1.1 cannot read (tabs for indentation, say) is still JSON.
            try:
                objects, nodes = [safeyaml.load_json(text, LIMITS)], [None]
            except ValueError as not_json:
                if isinstance(not_json, safeyaml.YamlRefused):
                    raise
                raise ManifestError(
                    [
                        {
                            "document": 0,
                            "path": "",
                            "line": mark.line + 1 if mark else None,
                            "message": f"not valid YAML or JSON: {problem}",
                        }
                    ]
                ) from None
    except safeyaml.YamlRefused as exc:
        raise _refused(exc) from None
    docs = []
    for node, obj in zip(nodes, objects, strict=True):
        if obj is None:
            continue
        lines: dict[str, int] = {}
        if node is not None:
            _walk(node, "", lines)
        docs.append(Document(len(docs), _namespaced(obj), (node.start_mark.line + 1) if node is not None else 1, lines))
    return docs


def _kind_of(obj: Any) -> str | None:
    return obj.get("kind") if isinstance(obj, dict) else None


def validate(text: Any, *, user=None) -> dict[str, Any]:
    """What applying ``text`` would do, without doing it: ``{"documents": [{"document", "line",
    "kind", "namespace", "name", "exists", "skipped"?}], "errors": [...], "warnings": [...]}``, the errors
    being the documents' own (a field the controller's validation refuses), the warnings the probe
    advice of the valid ones (``probe_advice``: ``{"document", "line", "role", "template", "container",
    "probe", "path", "message"}``) and their KV cache format advice (``kv_advice``: ``{"document",
    "line", "path": "spec.traffic.path", "message"}``); warnings never make a document invalid.
    Read-only (view permission).

    ``ManifestError`` when the text cannot be read at all (not YAML or JSON, or refused by the
    bounded reader: the API answers 400). ``exists`` is None for a namespace ``user`` may not view
    (None: a trusted internal caller), whether or not the object is there: like every answer about
    such a namespace, validate must not tell what exists in it."""
    from . import access

    docs = parse_documents(text)
    out, errors, warnings = [], [], []
    cluster = get_cluster()
    for doc in docs:
        entry: dict[str, Any] = {"document": doc.index, "line": doc.line, "kind": _kind_of(doc.obj)}
        if not isinstance(doc.obj, dict):
            errors.append({"document": doc.index, "path": "", "line": doc.line, "message": "must be an object"})
        elif _kind_of(doc.obj) != naming.KIND:
            entry["skipped"] = f"not a {naming.KIND} (kind {_kind_of(doc.obj)!r}): skipped"
        else:
            try:
                parsed = _parse(doc)
            except ValidationError as err:
                errors.append(
                    {"document": doc.index, "path": err.field, "line": doc.line_of(err.field), "message": err.rule}
                )
            else:
                entry.update(namespace=parsed.namespace, name=parsed.name, exists=None)
                warnings.extend(_probe_warnings(doc, parsed, user))
                warnings.extend(
                    {"document": doc.index, "line": doc.line_of(w["path"]), **w} for w in kv_advice.warnings_of(parsed)
                )
                if user is None or access.allowed(user, VIEW, parsed.namespace):
                    try:
                        cluster.get_modelserving(parsed.namespace, parsed.name)
                        entry["exists"] = True
                    except NotFound:
                        entry["exists"] = False
        out.append(entry)
    if not errors and not any(d.get("name") for d in out):
        errors.append({"document": 0, "path": "kind", "line": 1, "message": f"no {naming.KIND} document in the text"})
    return {"documents": out, "errors": errors, "warnings": warnings}


def _probe_warnings(doc: Document, parsed, user) -> list[dict[str, Any]]:
    """Probe advice for a valid document (``probe_advice``): where it is, and what it says. Never an
    error: a manifest with weak probes still applies."""
    return [
        {"document": doc.index, "line": doc.line_of(w.path), **w.to_json()}
        for w in probe_advice.advice_for(parsed, user=user)
    ]


def _parse(doc: Document):
    """The controller's own validation of a ModelServing document, and the installation's: the
    PromQL of its canary analysis must be one of the templates it allows (``core.promql``)."""
    parsed = parse_modelserving(doc.obj)
    if canary_weights_need_a_route():
        # setWeight steps need an HTTPRoute to write to on Kubernetes (core.canary).
        refused = canary_rules.kubernetes_refusal(parsed.canary)
        if refused is not None:
            raise ValidationError(refused.field, refused.rule)
    analysis = parsed.canary.analysis if parsed.canary is not None else None
    if analysis is not None and analysis.queries:
        try:
            promql.resolve(analysis.queries, clustersettings.prometheus_templates(), promql.QUERIES_FIELD)
        except promql.QueryRefused as err:
            raise ValidationError(err.field, err.rule) from None
    return parsed


def _modelservings(text: Any) -> list[tuple[Document, ModelServing]]:
    """Each ModelServing document with its parsed value (parsed once here; the checks and the apply
    read the value)."""
    docs = parse_documents(text)
    errors, found = [], []
    for doc in docs:
        if not isinstance(doc.obj, dict):
            errors.append({"document": doc.index, "path": "", "line": doc.line, "message": "must be an object"})
            continue
        if _kind_of(doc.obj) != naming.KIND:
            continue
        try:
            parsed = _parse(doc)
        except ValidationError as err:
            errors.append(
                {"document": doc.index, "path": err.field, "line": doc.line_of(err.field), "message": err.rule}
            )
            continue
        found.append((doc, parsed))
    if errors:
        raise ManifestError(errors)
    if not found:
        raise ManifestError([{"document": 0, "path": "kind", "line": 1, "message": f"no {naming.KIND} document"}])
    return found


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _created_body(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in SERVER_METADATA}
    meta.setdefault("namespace", "default")
    return {"apiVersion": naming.API_VERSION, "kind": naming.KIND, "metadata": meta, "spec": obj.get("spec") or {}}


def _cause(user, source: str, action: str, reason: str) -> str:
    return f"{controls.username(user)} via {source}: {action}: {reason}"


def apply(user, *, manifest: str, reason: str, source: str) -> list[AuditRecord]:
    """Apply every ModelServing of ``manifest`` (see the module docstring). Returns one audit record
    per ModelServing, in document order. Raises ``ManifestError`` (nothing applied) for any invalid
    document, ``ControlDenied``, ``Conflict`` (a stale ``resourceVersion``) or the cluster's error."""
    controls.check_source(source)
    try:
        reason = controls.check_reason(reason)
        found = _modelservings(manifest)
        # The operate permission in the namespace of every ModelServing it names, before any is applied.
        for namespace in sorted({parsed.namespace for _, parsed in found}):
            controls.check_permission(user, namespace=namespace)
        # The approval rule too, for every ModelServing before any is applied: a document refused
        # for it must not leave the others applied.
        stored = _stored_of(found)
        _check_approvals(user, stored)
        _check_updates(stored)
    except (ControlError, controls.ControlDenied) as exc:
        refusal = getattr(exc, "refusal", None)
        controls.audit(
            user,
            action="apply",
            namespace="",
            name="",
            reason=reason,
            source=source,
            details={"refused": refusal} if refusal else None,
            error=exc,
        )
        raise
    records = []
    for doc, parsed in found:
        records.append(_apply_one(user, doc, parsed, reason, source))
    return records


def _stored_of(found: list[tuple[Document, ModelServing]]) -> list[tuple[Any, dict[str, Any], dict | None]]:
    """Each document's parsed ModelServing, its object, and the stored ModelServing it would change
    (None for a new one): read once for the checks that run on every document before any is applied."""
    cluster = get_cluster()
    out = []
    for doc, parsed in found:
        obj = doc.obj
        try:
            current = cluster.get_modelserving(parsed.namespace, parsed.name)
        except NotFound:
            current = None
        out.append((parsed, obj, current))
    return out


def _check_approvals(user, stored: list[tuple[Any, dict[str, Any], dict | None]]) -> None:
    """``ApprovalRequired`` when a document would put an unapproved image on a target of an
    environment that requires approval (``releases.approval``), checked for all before any is applied."""
    from .releases.approval import check_direct_change

    for parsed, obj, current in stored:
        body = _created_body(_without_nulls(obj))
        after = body if current is None else {**current, "spec": body["spec"]}
        check_direct_change(user, parsed.namespace, parsed.name, current, after)


def _check_updates(stored: list[tuple[Any, dict[str, Any], dict | None]]) -> None:
    """``ControlError`` naming the field when a document would change a stored ModelServing in a way
    Kthena's CRD refuses on an update (``spec.check_update``), checked for all before any is applied."""
    for parsed, obj, current in stored:
        if current is None:
            continue
        try:
            check_update(current, obj)
        except ValidationError as err:
            raise ControlError(f"{parsed.namespace}/{parsed.name}: {err}", field=err.field) from None


def _apply_one(user, doc: Document, parsed: ModelServing, reason: str, source: str) -> AuditRecord:
    # An environment that requires approval takes no unapproved image from a manifest either.
    from .releases.approval import BYPASS_PERMISSION, check_direct_change

    cluster = get_cluster()
    obj = doc.obj
    namespace, name = parsed.namespace, parsed.name
    body = _created_body(_without_nulls(obj))
    cause = _cause(user, source, "apply", reason)
    details: dict[str, Any] = {"document": doc.index, "apiVersion": obj.get("apiVersion")}
    # Said in the answer and kept in the audit record; weak probes never stop an apply.
    warnings = [w.message for w in probe_advice.advice_for(parsed, user=user)]
    warnings += [f"{w['path']}: {w['message']}" for w in kv_advice.warnings_of(parsed)]
    if warnings:
        details["warnings"] = warnings
    given_rv = (obj.get("metadata") or {}).get("resourceVersion")
    with controls.audited(
        user, action="apply", namespace=namespace, name=name, reason=reason, source=source, details=details
    ) as control:
        try:
            current = cluster.get_modelserving(namespace, name)
        except NotFound:
            current = None
        after = body if current is None else {**current, "spec": body["spec"]}
        bypassed = check_direct_change(user, namespace, name, current, after)
        if bypassed:
            details["approvalBypassed"] = {"images": bypassed, "permission": BYPASS_PERMISSION}
        if current is None:
            if given_rv:
                raise Conflict(f"modelserving {namespace}/{name} no longer exists (it was deleted since it was read)")
            body["metadata"]["annotations"] = {
                **(body["metadata"].get("annotations") or {}),
                naming.ANNOTATION_CHANGE_CAUSE: cause,
            }
            cluster.create_modelserving(body)
            details["outcome"] = "created"
        else:
            meta = current.get("metadata") or {}
            patch: dict[str, Any] = {}
            spec_patch = mergepatch.diff(current.get("spec") or {}, body["spec"])
            if spec_patch:
                patch["spec"] = spec_patch
            for key in ("labels", "annotations"):
                wanted = body["metadata"].get(key) or {}
                changed = {k: v for k, v in wanted.items() if (meta.get(key) or {}).get(k) != v}
                if changed:
                    patch.setdefault("metadata", {})[key] = changed
            if not patch:
                details["outcome"] = "unchanged"
            else:
                annotations = patch.setdefault("metadata", {}).setdefault("annotations", {})
                annotations[naming.ANNOTATION_CHANGE_CAUSE] = cause
                cluster.patch_modelserving(namespace, name, patch, resource_version=str(given_rv) if given_rv else None)
                details["outcome"] = "configured"
                details["patch"] = patch
            details["generation"] = {"before": meta.get("generation")}
    enqueue.reconcile_soon(namespace, name)
    return control.record


def delete(user, namespace: str, name: str, *, reason: str, source: str) -> AuditRecord:
    """Delete one ModelServing (its pods and revisions go with it). Audited as ``delete``."""
    details: dict[str, Any] = {}
    with controls.audited(
        user, action="delete", namespace=namespace, name=name, reason=reason, source=source, details=details
    ) as control:
        controls.check_source(source)
        controls.check_permission(user, namespace=namespace)
        reason = controls.check_reason(reason)
        cluster = get_cluster()
        current = cluster.get_modelserving(namespace, name)
        status = current.get("status") or {}
        details.update(
            updateRevision=status.get("updateRevision"), replicas=(current.get("spec") or {}).get("replicas")
        )
        cluster.delete_modelserving(namespace, name)
        from controller.models import ProgressSample

        ProgressSample.objects.filter(namespace=namespace, name=name).delete()  # its history goes with it
    enqueue.reconcile_soon(namespace, name)  # the pass sees it gone and tells the dashboard
    return control.record


MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def load_path(path: str, user, *, reason: str, source: str = "system") -> list[str]:
    """Apply a manifest file, or every ``*.yaml``, ``*.yml`` and ``*.json`` of a folder in name order
    (``ROLLOUTUI_LOAD`` for ``runall``). Each file is applied on its own: one that fails is reported
    and the others are still applied. Returns one line per ModelServing or error."""
    from pathlib import Path

    root = Path(path)
    if root.is_dir():
        files = sorted(p for p in root.iterdir() if p.suffix in MANIFEST_SUFFIXES and p.is_file())
    elif root.is_file():
        files = [root]
    else:
        return [f"{path}: no such file or folder"]
    lines = []
    for file in files:
        try:
            records = apply(user, manifest=file.read_text(encoding="utf-8"), reason=reason, source=source)
        except (ControlError, ClusterError, controls.ControlDenied) as exc:
            lines.append(f"{file}: {exc}")
            continue
        for record in records:
            lines.append(f"{file}: {record.namespace}/{record.name} {record.details.get('outcome')}")
    return lines


def manifest_text(namespace: str, name: str, *, user=None) -> str:
    """The stored ModelServing as the editor shows it: YAML of apiVersion, kind, metadata (name,
    namespace, labels, annotations, and the resourceVersion the apply will check) and spec.
    Secret-looking values are masked unless ``user`` may operate in the namespace (None: a trusted
    internal caller), as the API's ``manifest`` masks them (``masking.mask_for``)."""
    obj = get_cluster().get_modelserving(namespace, name)
    meta = obj.get("metadata") or {}
    shown_meta = {"name": meta.get("name"), "namespace": meta.get("namespace") or "default"}
    for key in ("labels", "annotations"):
        if meta.get(key):
            shown_meta[key] = meta[key]
    shown_meta["resourceVersion"] = str(meta.get("resourceVersion") or "")
    doc = {"apiVersion": obj.get("apiVersion") or naming.API_VERSION, "kind": naming.KIND, "metadata": shown_meta}
    doc["spec"] = obj.get("spec") or {}
    return yaml.safe_dump(masking.mask_for(user, namespace, doc), sort_keys=False, default_flow_style=False, width=120)


__all__ = [
    "ManifestError",
    "apply",
    "delete",
    "load_path",
    "manifest_text",
    "parse_documents",
    "validate",
]
