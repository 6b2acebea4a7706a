"""A Kubernetes API server double for the adapter tests: kmock's emulator, made strict enough.

``kmock.KubernetesEmulator`` serves the Kubernetes REST layout over real HTTP (aiohttp), parses
requests into (resource, namespace, name, subresource) and renders errors as ``Status`` objects,
but it ignores label selectors and resourceVersions, has no PUT, no uid, no 410 and no way to drop
a watch. The adapter's correctness rests on exactly those, so ``ApiServerDouble`` keeps kmock's
server, request parsing, discovery and error rendering, and replaces the object store for declared
resources with one that behaves like the real API server where it matters:

- ``metadata.uid``, ``resourceVersion`` (one global counter), ``creationTimestamp``, ``generation``
  (bumped on spec changes);
- GET/LIST (label selectors; the list carries the current resourceVersion), POST (409 on a
  duplicate), PUT (409 on a stale resourceVersion; custom resources require one), PATCH as JSON
  merge patch or JSON patch (a ``metadata.resourceVersion`` in the patch is a precondition),
  DELETE (uid/resourceVersion preconditions; owned objects are garbage-collected);
- ``status`` subresources: writes to the main resource keep the stored status and writes to
  ``/status`` change only status;
- pods: spec is immutable except container images (422 otherwise), status starts ``Pending``;
  a ControllerRevision's ``data`` is immutable;
- custom resources with a schema (``schemas``): unknown fields are pruned as the structural schema
  says before validation and storage; ``?fieldValidation=Strict`` refuses them instead (400,
  ``strict decoding error: unknown field "spec.replica"``), the default (Warn) answers with a
  ``Warning`` header per pruned field;
- ``metadata.name``/``namespace`` cannot change (a PUT naming another object is 400, a patch that
  changes them is 422), a PUT with another ``metadata.uid`` is a failed precondition (409), a
  patch that changes it is 422; ``creationTimestamp``/``generation`` are the server's;
- errors are ``Status`` objects as the API server writes them: ``reason``, ``message`` and
  ``details`` (``name``, ``group``, ``kind``, and for 422 ``causes[]`` of ``reason``, ``message``,
  ``field``), never a traceback;
- optional RBAC (``authorizer``): a request carrying ``Impersonate-User`` is checked against that
  user's rules (verb from the method: get/list/watch/create/update/patch/delete, resource with its
  subresource, namespace, resourceNames) and refused with the API server's 403; a request without
  it is the cluster admin (the tests' kubelet and fixtures); ``POST
  /apis/authorization.k8s.io/v1/subjectaccessreviews`` answers ``status.allowed`` from the same rules
  (and asking needs ``create`` on ``subjectaccessreviews`` itself);
- a pod's ``log`` subresource (the lines a test put in ``pod_logs``; ``tailLines``, ``limitBytes``,
  ``timestamps``) and ``fieldSelector`` equality terms on lists (events by ``involvedObject.name``);
- labels as the API server checks them (qualified-name keys: prefix <= 253, name <= 63; values
  <= 63), 422 otherwise;
- WATCH from a resourceVersion (replaying the event log) or from "now" (ADDED for every object),
  ``timeoutSeconds``, label selectors; an ERROR event with code 410 when the version was compacted.

Test controls (call through ``RunningApiServer.call`` from the test thread):
``drop_watches(abort=...)`` ends every open watch cleanly or cuts its TCP connection, and
``compact()`` expires every resourceVersion issued so far (the next watch from one gets 410),
``bookmark()`` sends a BOOKMARK at the current version to every watch that allows them, and
``touch()`` moves the version on as a write of another resource would.
"""

from __future__ import annotations

import asyncio
import copy
import datetime
import json
import re
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

import aiohttp.web
import kmock
import kubernetes
from kmock._internal import dicts as kmock_dicts
from kmock._internal.k8s import KubernetesError

Key = tuple[str, str | None, str]  # (resource "group/version/plural", namespace, name)

DROP, ABORT = object(), object()

CORE_GROUPS = {"", "apps", "coordination.k8s.io", "events.k8s.io"}


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _error(status: int, reason: str, message: str, details: dict[str, Any] | None = None) -> KubernetesError:
    return KubernetesError(status=status, reason=reason, message=message, details=details or {})


def _group_kind(resource: str) -> tuple[str, str]:
    """``"serving.rolloutui.io/v1alpha1/modelservings"`` -> ("serving.rolloutui.io", "modelservings")."""
    group, _, plural = resource.split("/")
    return group, plural


def _qualified(resource: str) -> str:
    group, plural = _group_kind(resource)
    return f"{plural}.{group}" if group else plural


def _invalid(resource: str, obj: dict[str, Any], causes: list[dict[str, str]]) -> KubernetesError:
    """422 as the API server writes it: ``ModelServing.serving.rolloutui.io "chat" is invalid: ...``."""
    group, plural = _group_kind(resource)
    kind = obj.get("kind") or plural
    name = (obj.get("metadata") or {}).get("name", "")
    parts = [f"{c['field']}: {c['message']}" for c in causes]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return _error(
        422,
        "Invalid",
        f'{kind}{"." + group if group else ""} "{name}" is invalid: {joined}',
        {"name": name, "group": group, "kind": kind, "causes": causes},
    )


def _conflict(resource: str, name: str, message: str) -> KubernetesError:
    group, plural = _group_kind(resource)
    return _error(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(resource)} "{name}": {message}',
        {"name": name, "group": group, "kind": plural},
    )


def parse_selector(text: str | None) -> list[tuple[str, str, str | None]]:
    """``a=b,c!=d,e,!f`` -> [(op, key, value)]; the subset of label selector syntax clients send."""
    terms: list[tuple[str, str, str | None]] = []
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        if "!=" in part:
            key, value = part.split("!=", 1)
            terms.append(("!=", key.strip(), value.strip()))
        elif "=" in part:
            key, value = part.replace("==", "=").split("=", 1)
            terms.append(("=", key.strip(), value.strip()))
        elif part.startswith("!"):
            terms.append(("!", part[1:].strip(), None))
        else:
            terms.append(("exists", part, None))
    return terms


def selector_matches(terms: list[tuple[str, str, str | None]], obj: dict[str, Any]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for op, key, value in terms:
        if op == "=" and labels.get(key) != value:
            return False
        if op == "!=" and labels.get(key) == value:
            return False
        if op == "exists" and key not in labels:
            return False
        if op == "!" and key in labels:
            return False
    return True


@dataclass(eq=False)
class _Watcher:
    resource: str
    namespace: str | None
    selector: list[tuple[str, str, str | None]]
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    bookmarks: bool = False  # the client asked for allowWatchBookmarks

    def wants(self, resource: str, obj: dict[str, Any]) -> bool:
        ns = (obj.get("metadata") or {}).get("namespace")
        return (
            resource == self.resource
            and (self.namespace is None or ns == self.namespace)
            and selector_matches(self.selector, obj)
        )


class ApiServerDouble(kmock.KubernetesEmulator):
    """See the module docstring. Declare resources in ``resources`` as with kmock."""

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self.store: dict[Key, dict[str, Any]] = {}
        self.rv = 0
        self.compacted = 0
        self.events_log: list[tuple[int, str, str, dict[str, Any]]] = []
        self.watchers: set[_Watcher] = set()
        self.status_subresources: set[str] = set()
        self.calls: list[tuple[str, str, dict[str, str]]] = []
        # The specs of the SubjectAccessReviews asked (POST .../subjectaccessreviews), answered by
        # ``authorizer``.
        self.reviews: list[dict[str, Any]] = []
        # resource -> fn(obj) -> list of causes ({reason, message, field}) or of strings: the CRD's
        # schema and CEL rules, checked on every write (422).
        self.validators: dict[str, Any] = {}
        # resource -> structural schema (openAPIV3Schema): unknown fields are pruned on writes.
        self.schemas: dict[str, dict[str, Any]] = {}
        # fn(user, verb, resource, subresource, namespace, name) -> bool; None: no RBAC.
        self.authorizer: Any = None
        # (namespace, pod) -> [(RFC 3339 stamp, line)]: what ``GET .../pods/{name}/log`` serves.
        self.pod_logs: dict[tuple[str | None, str], list[tuple[str, str]]] = {}
        self._request_params: dict[str, str] = {}
        self._warnings: list[str] = []

    # ------------------------------------------------------------------ dispatch

    async def _render_error(self, exc: Exception) -> aiohttp.web.StreamResponse:
        if isinstance(exc, KubernetesError):
            body: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "Status",
                "metadata": {},
                "status": "Failure",
                "message": exc.message or "",
                "reason": exc.reason or "",
                "code": exc.status,
            }
            if exc.details:
                body["details"] = exc.details
            return aiohttp.web.json_response(body, status=exc.status)
        return await super()._render_error(exc)

    def _declared(self, res: Any) -> str | None:
        for known in self._resources:
            if (known.group, known.version, known.plural) == (res.group, res.version, res.plural):
                return f"{res.group}/{res.version}/{res.plural}"
        return None

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        res = request.resource
        if res is not None and (res.group, res.plural) == ("authorization.k8s.io", "subjectaccessreviews"):
            # Asking is itself authorized: create on subjectaccessreviews (cluster-scoped).
            self._authorize(
                request.headers.get("Impersonate-User"),
                "POST",
                {},
                "authorization.k8s.io/v1/subjectaccessreviews",
                None,
                None,
                None,
            )
            return self._json(self._review(request.data or {}), 201)
        if res is None or res.plural is None:
            return await super()._handle(request)  # discovery, /version, ...
        resource = self._declared(res)
        if resource is None:
            raise _error(404, "NotFound", f"the server could not find the requested resource ({res.plural})")
        method = request.method.value.upper()
        params = dict(request.params)
        self.calls.append((method, str(request.url.path), params))
        name, ns, sub = request.name, request.namespace, request.subresource
        self._request_params = params
        self._warnings = []
        self._authorize(request.headers.get("Impersonate-User"), method, params, resource, sub, ns, name)
        if method == "GET" and params.get("watch") in ("true", "1"):
            return await self._watch(request, resource)
        if method == "GET" and resource == "/v1/pods" and sub == "log":
            return self._pod_log((resource, ns, name), params)
        if method == "GET" and name is None:
            return self._json(self._list(resource, ns, params))
        if method == "GET":
            return self._json(self._get((resource, ns, name)))
        if method == "POST" and name is None:
            return self._json(self._create(resource, ns, request.data), 201)
        if method == "PUT" and name is not None:
            return self._json(self._replace((resource, ns, name), request.data, sub))
        if method == "PATCH" and name is not None:
            ctype = request.headers.get("Content-Type", "")
            return self._json(self._patch((resource, ns, name), request.data, ctype, sub))
        if method == "DELETE" and name is not None:
            return self._json(self._delete((resource, ns, name), request.data or {}))
        raise _error(405, "MethodNotAllowed", f"{method} is not supported on {request.url.path}")

    def _review(self, review: dict[str, Any]) -> dict[str, Any]:
        """A SubjectAccessReview answered by the same ``authorizer`` the double enforces (no
        authorizer: everything is allowed, as the double allows every call then)."""
        spec = review.get("spec") or {}
        attrs = spec.get("resourceAttributes") or {}
        self.reviews.append(spec)
        allowed = self.authorizer is None or bool(
            self.authorizer(
                spec.get("user"),
                attrs.get("verb"),
                attrs.get("group", ""),
                attrs.get("resource"),
                attrs.get("namespace"),
                attrs.get("name"),
            )
        )
        return {**review, "status": {"allowed": allowed}}

    def _json(self, obj: dict[str, Any], status: int = 200) -> aiohttp.web.Response:
        response = aiohttp.web.json_response(obj, status=status)
        for warning in self._warnings:
            response.headers.add("Warning", f'299 - "{warning}"')
        return response

    def _authorize(self, user, method, params, resource, sub, namespace, name) -> None:
        if self.authorizer is None or not user:
            return
        if method == "GET":
            verb = "watch" if params.get("watch") in ("true", "1") else ("get" if name else "list")
        else:
            verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]
        group, plural = _group_kind(resource)
        full = f"{plural}/{sub}" if sub else plural
        if self.authorizer(user, verb, group, full, namespace, name):
            return
        scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
        subject = f'{_qualified(resource)} "{name}"' if name else _qualified(resource)
        raise _error(
            403,
            "Forbidden",
            f'{subject} is forbidden: User "{user}" cannot {verb} resource "{full}" in API group "{group}" {scope}',
            {"name": name or "", "group": group, "kind": plural},
        )

    # ------------------------------------------------------------------ store operations

    def _get(self, key: Key) -> dict[str, Any]:
        obj = self.store.get(key)
        if obj is None:
            raise _error(404, "NotFound", f'{key[0].rsplit("/", 1)[-1]} "{key[2]}" not found')
        return copy.deepcopy(obj)

    def _pod_log(self, key: Key, params: dict[str, str]) -> aiohttp.web.Response:
        """``GET .../pods/{name}/log``: the lines a test gave the pod's container (``pod_logs``),
        ``tailLines`` and ``limitBytes`` applied as the kubelet applies them (the last lines, then
        at most that many bytes), each prefixed by its RFC 3339 stamp with ``timestamps=true``."""
        self._get(key)  # 404 for an unknown pod
        lines = list(self.pod_logs.get((key[1], key[2]), []))
        if params.get("tailLines"):
            lines = lines[-int(params["tailLines"]) :] if int(params["tailLines"]) else []
        stamped = params.get("timestamps") in ("true", "1")
        text = "".join(f"{t} {line}\n" if stamped else f"{line}\n" for t, line in lines)
        if params.get("limitBytes"):
            text = text.encode()[: int(params["limitBytes"])].decode(errors="ignore")
        return aiohttp.web.Response(text=text, content_type="text/plain")

    def _list(self, resource: str, ns: str | None, params: dict[str, str]) -> dict[str, Any]:
        terms = parse_selector(params.get("labelSelector"))
        fields = [t.split("=", 1) for t in (params.get("fieldSelector") or "").split(",") if "=" in t]

        def field_value(obj: dict[str, Any], path: str) -> Any:
            for part in path.split("."):
                obj = obj.get(part) if isinstance(obj, dict) else None
            return obj

        items = [
            copy.deepcopy(obj)
            for (res, obj_ns, _), obj in sorted(self.store.items(), key=lambda kv: (kv[0][1] or "", kv[0][2]))
            if res == resource
            and (ns is None or obj_ns == ns)
            and selector_matches(terms, obj)
            and all(str(field_value(obj, path)) == value for path, value in fields)
        ]
        return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": str(self.rv)}, "items": items}

    def _bump(self, obj: dict[str, Any]) -> None:
        self.rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)

    def _create(self, resource: str, ns: str | None, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise _error(400, "BadRequest", "the body of a create must be a JSON object")
        obj = copy.deepcopy(body)
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        if not meta.get("name"):
            raise _error(422, "Invalid", "metadata.name: Required value")
        if ns is not None:
            if meta.get("namespace") not in (None, ns):
                raise _error(
                    400, "BadRequest", "the namespace of the object does not match the namespace of the request"
                )
            meta["namespace"] = ns
        _check_string_maps(obj)
        obj = self._prune(resource, obj)
        meta = obj["metadata"]
        self._validate(resource, obj)
        key = (resource, ns, meta["name"])
        if key in self.store:
            group, plural = _group_kind(resource)
            raise _error(
                409,
                "AlreadyExists",
                f'{_qualified(resource)} "{meta["name"]}" already exists',
                {"name": meta["name"], "group": group, "kind": plural},
            )
        if resource == "/v1/pods":
            containers = (obj.get("spec") or {}).get("containers") or []
            if not containers or not all(c.get("name") and c.get("image") for c in containers):
                raise _invalid(
                    resource,
                    {"kind": "Pod", **obj},
                    [{"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers"}],
                )
            obj["status"] = {"phase": "Pending"}
        elif resource in self.status_subresources:
            obj.pop("status", None)
        meta.update(uid=str(uuid.uuid4()), creationTimestamp=_now(), generation=1)
        for dropped in ("resourceVersion", "deletionTimestamp"):
            meta.pop(dropped, None)
        self._bump(obj)
        self.store[key] = obj
        self._emit("ADDED", resource, obj)
        return copy.deepcopy(obj)

    def _check_version(self, current: dict[str, Any], wanted: str | None, resource: str) -> None:
        have = current["metadata"]["resourceVersion"]
        if wanted and wanted != have:
            raise _conflict(
                resource,
                current["metadata"]["name"],
                "the object has been modified; please apply your changes to the latest version and try again",
            )

    def _commit(self, key: Key, current: dict[str, Any], new: dict[str, Any], sub: str | None) -> dict[str, Any]:
        resource = key[0]
        if sub == "status":
            merged = copy.deepcopy(current)
            merged["status"] = new.get("status")
            if merged["status"] is None:
                merged.pop("status")
            new = merged
        elif sub is not None:
            raise _error(404, "NotFound", f"subresource {sub} is not served")
        else:
            if resource in self.status_subresources or resource == "/v1/pods":
                new["status"] = copy.deepcopy(current.get("status"))
                if new["status"] is None:
                    new.pop("status")
            if resource == "/v1/pods" and not _pod_spec_update_allowed(
                current.get("spec") or {}, new.get("spec") or {}
            ):
                raise _invalid(
                    resource,
                    {"kind": "Pod", **current},
                    [
                        {
                            "reason": "FieldValueForbidden",
                            "message": "Forbidden: pod updates may not change fields other than "
                            "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
                            "`spec.tolerations` (only additions to existing tolerations)",
                            "field": "spec",
                        }
                    ],
                )
            if resource == "apps/v1/controllerrevisions" and new.get("data") != current.get("data"):
                raise _invalid(
                    resource,
                    {"kind": "ControllerRevision", **current},
                    [{"reason": "FieldValueInvalid", "message": "Invalid value: field is immutable", "field": "data"}],
                )
        meta = new.setdefault("metadata", {})
        for immutable in ("name", "namespace", "uid"):
            if meta.get(immutable) not in (None, current["metadata"].get(immutable)):
                raise _invalid(
                    resource,
                    current,
                    [
                        {
                            "reason": "FieldValueInvalid",
                            "message": f"Invalid value: {json.dumps(meta[immutable])}: field is immutable",
                            "field": f"metadata.{immutable}",
                        }
                    ],
                )
        for kept in ("uid", "creationTimestamp", "name", "namespace", "generation"):
            if kept in current["metadata"]:
                meta[kept] = current["metadata"][kept]
        new = self._prune(resource, new)
        meta = new["metadata"]
        if "spec" in current and new.get("spec") != current.get("spec"):
            meta["generation"] = current["metadata"].get("generation", 1) + 1
        # Checked on the object as it would be stored (after the status subresource's merge).
        _check_string_maps(new)
        self._validate(resource, new)
        if resource == "/v1/pods":
            _check_pod_condition_times(new)
        if new == current:
            return copy.deepcopy(current)  # a no-op write keeps the version, as on a real server
        self._bump(new)
        self.store[key] = new
        self._emit("MODIFIED", resource, new)
        return copy.deepcopy(new)

    def _replace(self, key: Key, body: Any, sub: str | None) -> dict[str, Any]:
        current = self._get(key)
        if not isinstance(body, dict):
            raise _error(400, "BadRequest", "the body of a replace must be a JSON object")
        body_meta = body.get("metadata") or {}
        if body_meta.get("name") not in (None, key[2]):
            raise _error(
                400,
                "BadRequest",
                f"the name of the object ({body_meta['name']}) does not match the name on the URL ({key[2]})",
            )
        if body_meta.get("uid") not in (None, current["metadata"]["uid"]):
            raise _conflict(
                key[0],
                key[2],
                f"Precondition failed: UID in precondition: {body_meta['uid']}, "
                f"UID in object meta: {current['metadata']['uid']}",
            )
        wanted = body_meta.get("resourceVersion")
        group = key[0].split("/")[0]
        if not wanted and group not in CORE_GROUPS:
            raise _error(
                422, "Invalid", "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
            )
        self._check_version(current, wanted, key[0])
        return self._commit(key, current, copy.deepcopy(body), sub)

    def _patch(self, key: Key, body: Any, content_type: str, sub: str | None) -> dict[str, Any]:
        current = self._get(key)
        if content_type.startswith("application/merge-patch+json"):
            if not isinstance(body, dict):
                raise _error(400, "BadRequest", "a merge patch must be a JSON object")
            self._check_version(current, (body.get("metadata") or {}).get("resourceVersion"), key[0])
            new = dict(kmock_dicts.merge_patch_dict(copy.deepcopy(current), body))
        elif content_type.startswith("application/json-patch+json"):
            new = dict(kmock_dicts.json_patch_dict(copy.deepcopy(current), body))
            # A JSON patch that sets metadata.resourceVersion makes it a precondition too.
            self._check_version(current, (new.get("metadata") or {}).get("resourceVersion"), key[0])
        else:
            raise _error(415, "UnsupportedMediaType", f"the double serves merge and JSON patches, not {content_type!r}")
        return self._commit(key, current, copy.deepcopy(new), sub)

    def _delete(self, key: Key, options: dict[str, Any]) -> dict[str, Any]:
        current = self._get(key)
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != current["metadata"]["uid"]:
            raise _conflict(
                key[0],
                key[2],
                f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: "
                f"{current['metadata']['uid']}",
            )
        self._check_version(current, pre.get("resourceVersion"), key[0])
        del self.store[key]
        self._bump(current)
        self._emit("DELETED", key[0], current)
        # Garbage collection of dependents (what kube-controller-manager does for ownerReferences).
        uid = current["metadata"]["uid"]
        for other_key, other in list(self.store.items()):
            refs = (other.get("metadata") or {}).get("ownerReferences") or []
            if other_key in self.store and any(ref.get("uid") == uid for ref in refs):
                self._delete(other_key, {})
        return copy.deepcopy(current)

    def _validate(self, resource: str, obj: dict[str, Any]) -> None:
        check = self.validators.get(resource)
        errors = check(obj) if check else []
        if errors:
            causes = [
                e if isinstance(e, dict) else {"reason": "FieldValueInvalid", "message": str(e), "field": ""}
                for e in errors
            ]
            raise _invalid(resource, obj, causes)

    def _prune(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Drop the fields the resource's structural schema does not know, as the API server does;
        ``fieldValidation=Strict`` refuses them (400), the default warns."""
        schema = self.schemas.get(resource)
        if schema is None:
            return obj
        from crd_jsonschema import prune

        pruned, removed = prune(obj, schema)
        if removed and self._request_params.get("fieldValidation") == "Strict":
            unknown = ", ".join(f'unknown field "{path}"' for path in removed)
            group, plural = _group_kind(resource)
            raise _error(
                400,
                "BadRequest",
                f'{obj.get("kind", plural)} in version "{resource.split("/")[1]}" cannot be handled as a '
                f"{obj.get('kind', plural)}: strict decoding error: {unknown}",
                {
                    "causes": [
                        {"reason": "FieldValueInvalid", "message": f'unknown field "{p}"', "field": p} for p in removed
                    ]
                },
            )
        if self._request_params.get("fieldValidation") != "Ignore":
            self._warnings += [f'unknown field "{path}"' for path in removed]
        return pruned

    def _emit(self, type_: str, resource: str, obj: dict[str, Any]) -> None:
        snapshot = copy.deepcopy(obj)
        self.events_log.append((self.rv, resource, type_, snapshot))
        for watcher in list(self.watchers):
            if watcher.wants(resource, snapshot):
                watcher.queue.put_nowait({"type": type_, "object": snapshot})

    # ------------------------------------------------------------------ watch

    async def _watch(self, request: kmock.Request, resource: str) -> aiohttp.web.StreamResponse:
        params = dict(request.params)
        watcher = _Watcher(resource, request.namespace, parse_selector(params.get("labelSelector")))
        watcher.bookmarks = params.get("allowWatchBookmarks") in ("true", "1")
        since = params.get("resourceVersion")
        initial: list[dict[str, Any]] = []
        gone = False
        # Snapshot and registration happen with no await in between: no event can fall in a gap.
        if since and since != "0":
            if int(since) < self.compacted:
                gone = True
                initial.append(
                    {
                        "type": "ERROR",
                        "object": {
                            "apiVersion": "v1",
                            "kind": "Status",
                            "status": "Failure",
                            "code": 410,
                            "reason": "Expired",
                            "message": f"too old resource version: {since} ({self.compacted})",
                        },
                    }
                )
            else:
                initial = [
                    {"type": type_, "object": obj}
                    for rv, res, type_, obj in self.events_log
                    if rv > int(since) and watcher.wants(res, obj)
                ]
        else:
            listing = self._list(resource, request.namespace, params)
            initial = [{"type": "ADDED", "object": obj} for obj in listing["items"]]
        if not gone:
            self.watchers.add(watcher)
        raw = request._raw_request
        response = aiohttp.web.StreamResponse(status=200)
        response.content_type = "application/json"
        try:
            await response.prepare(raw)
            for event in initial:
                await response.write(json.dumps(event).encode() + b"\n")
            if gone:
                await response.write_eof()
                return response
            timeout = float(params["timeoutSeconds"]) if params.get("timeoutSeconds") else None
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout if timeout else None
            while True:
                remaining = None if deadline is None else max(0.0, deadline - loop.time())
                try:
                    item = await asyncio.wait_for(watcher.queue.get(), remaining)
                except TimeoutError:
                    break
                if item is DROP:
                    break
                if item is ABORT:
                    # Cut the TCP connection mid-stream: the client sees a truncated chunked body.
                    raw.transport.close()
                    return response
                await response.write(json.dumps(item).encode() + b"\n")
            await response.write_eof()
        except (ConnectionResetError, aiohttp.ClientConnectionResetError):
            pass  # the client went away
        finally:
            self.watchers.discard(watcher)
        return response

    # ------------------------------------------------------------------ test controls

    def drop_watches(self, *, abort: bool = False) -> int:
        for watcher in list(self.watchers):
            watcher.queue.put_nowait(ABORT if abort else DROP)
        return len(self.watchers)

    def bookmark(self) -> int:
        """A BOOKMARK at the current resourceVersion to every watch that allows them (as the API
        server sends one now and then): a client resumes from it. Returns how many were sent."""
        sent = 0
        for watcher in list(self.watchers):
            if watcher.bookmarks:
                kind = watcher.resource.rsplit("/", 1)[-1]
                watcher.queue.put_nowait(
                    {"type": "BOOKMARK", "object": {"kind": kind, "metadata": {"resourceVersion": str(self.rv)}}}
                )
                sent += 1
        return sent

    def touch(self) -> None:
        """Advance the resourceVersion without changing any object (another resource's write)."""
        self.rv += 1

    def compact(self) -> None:
        self.rv += 1
        self.compacted = self.rv

    def watch_calls(self, path_part: str = "") -> list[tuple[str, str, dict[str, str]]]:
        return [c for c in self.calls if c[2].get("watch") in ("true", "1") and path_part in c[1]]

    def list_calls(self, path_part: str = "") -> list[tuple[str, str, dict[str, str]]]:
        return [c for c in self.calls if c[0] == "GET" and "watch" not in c[2] and path_part in c[1]]


def _check_string_maps(obj: dict[str, Any]) -> None:
    # Labels and annotations are map[string]string: a number or a list there fails to decode.
    meta = obj.get("metadata") or {}
    for field_name in ("labels", "annotations"):
        for k, v in (meta.get(field_name) or {}).items():
            if not isinstance(v, str):
                raise _error(400, "BadRequest", f"metadata.{field_name}[{k}]: cannot decode {v!r} as a string")
    for k, v in (meta.get("labels") or {}).items():
        # The API server's label rules: a qualified-name key (an optional DNS subdomain prefix of at
        # most 253 characters, then a name of at most 63) and a value of at most 63.
        prefix, _, name = k.rpartition("/")
        if (
            (prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)))
            or len(name) > 63
            or not _LABEL_NAME.match(name)
            or (v and (len(v) > 63 or not _LABEL_NAME.match(v)))
        ):
            raise _error(422, "Invalid", f"metadata.labels: Invalid value: {k!r}: {v!r} is not a valid label")


_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def _check_pod_condition_times(pod: dict[str, Any]) -> None:
    # metav1.Time fields: a real API server fails to decode anything but an RFC 3339 string.
    for cond in (pod.get("status") or {}).get("conditions") or []:
        for key in ("lastTransitionTime", "lastProbeTime"):
            value = cond.get(key)
            if value is not None and not (isinstance(value, str) and _is_rfc3339(value)):
                raise _error(
                    400, "BadRequest", f"status.conditions.{key}: cannot decode {value!r} as a time (RFC 3339 expected)"
                )


def _is_rfc3339(value: str) -> bool:
    try:
        datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return "T" in value


def _pod_spec_update_allowed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    old, new = copy.deepcopy(old), copy.deepcopy(new)
    for key in ("containers", "initContainers"):
        before, after = old.get(key) or [], new.get(key) or []
        if len(before) != len(after):
            return False
        for a, b in zip(before, after):
            a.pop("image", None)
            b.pop("image", None)
    for mutable in ("activeDeadlineSeconds", "tolerations"):
        old.pop(mutable, None)
        new.pop(mutable, None)
    return old == new


MODELSERVINGS = "serving.rolloutui.io/v1alpha1/modelservings"
INFERENCESERVICES = "serving.kserve.io/v1beta1/inferenceservices"

# What the adapter tests need served: our CRD (with its status subresource) and the built-ins.
RESOURCES = {
    MODELSERVINGS: kmock.ResourceInfo(kind="ModelServing", namespaced=True, subresources={"status", "scale"}),
    "v1/pods": kmock.ResourceInfo(kind="Pod", namespaced=True, subresources={"status", "log"}),
    "v1/events": kmock.ResourceInfo(kind="Event", namespaced=True),
    "apps/v1/controllerrevisions": kmock.ResourceInfo(kind="ControllerRevision", namespaced=True),
    "coordination.k8s.io/v1/leases": kmock.ResourceInfo(kind="Lease", namespaced=True),
    "v1/configmaps": kmock.ResourceInfo(kind="ConfigMap", namespaced=True),
    # KServe's kinds: what KServe creates and the product reads and patches.
    INFERENCESERVICES: kmock.ResourceInfo(kind="InferenceService", namespaced=True, subresources={"status"}),
    "apps/v1/deployments": kmock.ResourceInfo(kind="Deployment", namespaced=True, subresources={"status"}),
    "apps/v1/replicasets": kmock.ResourceInfo(kind="ReplicaSet", namespaced=True, subresources={"status"}),
    # The headless Service pods resolve through, and Volcano's PodGroup (its CRD installed).
    "v1/services": kmock.ResourceInfo(kind="Service", namespaced=True),
    # What the endpoint controller publishes of a Service (the Routed gate reads it).
    "discovery.k8s.io/v1/endpointslices": kmock.ResourceInfo(kind="EndpointSlice", namespaced=True),
    "scheduling.volcano.sh/v1beta1/podgroups": kmock.ResourceInfo(kind="PodGroup", namespaced=True),
}

# Gateway API and its Inference Extension: served only when a test installs their CRDs (without
# them the API server answers 404 for the kind, as a cluster without the Gateway API does).
HTTPROUTES = "gateway.networking.k8s.io/v1/httproutes"
INFERENCEPOOLS = "inference.networking.k8s.io/v1/inferencepools"
GATEWAY_RESOURCES = {
    HTTPROUTES: kmock.ResourceInfo(kind="HTTPRoute", namespaced=True, subresources={"status"}),
    INFERENCEPOOLS: kmock.ResourceInfo(kind="InferencePool", namespaced=True, subresources={"status"}),
}
MAX_BACKEND_WEIGHT = 1_000_000  # Gateway API: a backendRef's weight is 0..1,000,000


def _cause(field: str, message: str, reason: str = "FieldValueInvalid") -> dict[str, str]:
    return {"reason": reason, "message": message, "field": field}


def _port_causes(field: str, port: Any) -> list[dict[str, str]]:
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        return [_cause(field, f"Invalid value: {port!r}: must be between 1 and 65535, inclusive")]
    return []


def httproute_causes(obj: dict[str, Any]) -> list[dict[str, str]]:
    """What the Gateway API CRD's schema and CEL rules refuse in an HTTPRoute (the subset the
    product writes): at most 32 parentRefs and 16 rules, at most 16 backendRefs a rule, each with a
    name, a weight of 0..1,000,000 and, for a Service (the default kind), a port."""
    spec = obj.get("spec") or {}
    causes = []
    if len(spec.get("parentRefs") or []) > 32:
        causes.append(_cause("spec.parentRefs", "Too many: must have at most 32 items", "FieldValueTooMany"))
    rules = spec.get("rules") or []
    if len(rules) > 16:
        causes.append(_cause("spec.rules", "Too many: must have at most 16 items", "FieldValueTooMany"))
    for i, rule in enumerate(rules):
        refs = (rule or {}).get("backendRefs") or []
        if len(refs) > 16:
            causes.append(
                _cause(f"spec.rules[{i}].backendRefs", "Too many: must have at most 16 items", "FieldValueTooMany")
            )
        for j, ref in enumerate(refs):
            where = f"spec.rules[{i}].backendRefs[{j}]"
            if not ref.get("name"):
                causes.append(_cause(f"{where}.name", "Required value", "FieldValueRequired"))
            weight = ref.get("weight", 1)
            if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= MAX_BACKEND_WEIGHT:
                causes.append(
                    _cause(f"{where}.weight", f"Invalid value: {weight!r}: must be between 0 and {MAX_BACKEND_WEIGHT}")
                )
            if ref.get("group", "") == "" and ref.get("kind", "Service") == "Service" and "port" not in ref:
                causes.append(_cause(where, "Invalid value: Must have port for Service reference"))
    return causes


def service_causes(obj: dict[str, Any]) -> list[dict[str, str]]:
    """What the API server refuses in a Service (the subset the product writes): ports are required
    unless it is headless, each between 1 and 65535."""
    spec = obj.get("spec") or {}
    ports = spec.get("ports") or []
    if not ports and spec.get("clusterIP") != "None":
        return [_cause("spec.ports", "Required value", "FieldValueRequired")]
    causes = []
    for i, port in enumerate(ports):
        causes += _port_causes(f"spec.ports[{i}].port", port.get("port"))
    return causes


def inferencepool_causes(obj: dict[str, Any]) -> list[dict[str, str]]:
    """What the Inference Extension's v1 CRD refuses in an InferencePool (the subset the product
    writes): a selector, 1-8 targetPorts, an endpointPickerRef with a name (and a port, for a
    Service picker)."""
    spec = obj.get("spec") or {}
    causes = []
    if not ((spec.get("selector") or {}).get("matchLabels")):
        causes.append(_cause("spec.selector.matchLabels", "Required value", "FieldValueRequired"))
    ports = spec.get("targetPorts") or []
    if not 1 <= len(ports) <= 8:
        causes.append(_cause("spec.targetPorts", "Invalid value: must have 1 to 8 items"))
    for i, port in enumerate(ports):
        causes += _port_causes(f"spec.targetPorts[{i}].number", (port or {}).get("number"))
    picker = spec.get("endpointPickerRef") or {}
    if not picker.get("name"):
        causes.append(_cause("spec.endpointPickerRef.name", "Required value", "FieldValueRequired"))
    if picker.get("kind", "Service") == "Service" and not (picker.get("port") or {}).get("number"):
        causes.append(_cause("spec.endpointPickerRef", "Invalid value: port is required when kind is 'Service'"))
    return causes


GATEWAY_VALIDATORS = {
    HTTPROUTES: httproute_causes,
    INFERENCEPOOLS: inferencepool_causes,
    "/v1/services": service_causes,
}


class RunningApiServer:
    """``ApiServerDouble`` + ``kmock.Server`` on 127.0.0.1 in a background thread's event loop."""

    def __init__(
        self,
        resources: dict[str, kmock.ResourceInfo],
        status_subresources: set[str],
        validators: dict[str, Any] | None = None,
        schemas: dict[str, dict[str, Any]] | None = None,
        authorizer: Any = None,
    ):
        self._resources = resources
        self._status = status_subresources
        self._validators = validators or {}
        self._schemas = schemas or {}
        self._authorizer = authorizer
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self.loop = asyncio.new_event_loop()
        self.emu: ApiServerDouble | None = None
        self.url = ""
        self._thread = threading.Thread(target=self._main, name="apiserver-double", daemon=True)

    def __enter__(self) -> RunningApiServer:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the API server double did not start in 10 s")
        if self._failure is not None:
            raise RuntimeError("the API server double failed to start") from self._failure
        return self

    def __exit__(self, *exc: Any) -> None:
        self.loop.call_soon_threadsafe(self._stopping.set)
        self._thread.join(10)

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._serve())
        except BaseException as exc:  # noqa: BLE001 - reported to the test thread
            self._failure = exc
            self._ready.set()
        finally:
            self.loop.close()

    async def _serve(self) -> None:
        self._stopping = asyncio.Event()
        async with ApiServerDouble() as emu, kmock.Server(emu, host="127.0.0.1") as server:
            for path, info in self._resources.items():
                emu.resources[path] = info
            emu.status_subresources = set(self._status)
            emu.validators = dict(self._validators)
            emu.schemas = dict(self._schemas)
            emu.authorizer = self._authorizer
            self.emu = emu
            self.url = f"http://127.0.0.1:{server.port}"
            self._ready.set()
            await self._stopping.wait()
            emu.drop_watches()
            await asyncio.sleep(0.05)  # grace for the dropped watch responses to flush before the loop stops

    def call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Run ``fn`` in the server's loop (its state is only touched there) and return the result."""

        async def run() -> Any:
            return fn(*args, **kwargs)

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(10)

    def api_client(self, user: str | None = None) -> kubernetes.client.ApiClient:
        """A client; with ``user``, every request impersonates it (checked by the authorizer)."""
        configuration = kubernetes.client.Configuration(host=self.url)
        client = kubernetes.client.ApiClient(configuration)
        if user:
            client.set_default_header("Impersonate-User", user)
        return client
