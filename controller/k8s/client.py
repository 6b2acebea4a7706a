"""Building an API client and calling the API with raw JSON in and out.

Every call goes through the typed API classes of the official client (``CustomObjectsApi``,
``CoreV1Api``, ``AppsV1Api``, ``CoordinationV1Api``) with ``_preload_content=False``, and the body is
parsed as plain JSON. The core then sees exactly what the API server sent, the same
Kubernetes-shaped dicts the simulated cluster stores, with no round trip through the generated
models (which drop unknown fields and rename keys to snake_case).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from typing import Any

import kubernetes
import urllib3
from kubernetes.client.exceptions import ApiException

from controller.core.ports import ClusterError, Conflict, NotFound

log = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"

# (connect, read) seconds for ordinary requests: a hung API server must not hang a reconcile pass
# forever; the pass fails, and the next one (a resync at the latest) starts from the cluster again.
DEFAULT_TIMEOUT = (5.0, 30.0)


def build_api_client(kubeconfig: str | None = None, *, context: str | None = None) -> kubernetes.client.ApiClient:
    """An ApiClient for the cluster this process should control.

    Order: an explicit ``kubeconfig`` path, then ``$KUBECONFIG``, then the in-cluster service
    account (when ``KUBERNETES_SERVICE_HOST`` is set, i.e. running in a pod), then
    ``~/.kube/config``. Raises ``ClusterError`` naming what was tried when none works.
    """
    path = kubeconfig or os.environ.get("KUBECONFIG")
    if path:
        # KUBECONFIG may list several files separated by ':' like kubectl; the client merges them.
        return kubernetes.config.new_client_from_config(config_file=path, context=context)
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        configuration = kubernetes.client.Configuration()
        kubernetes.config.load_incluster_config(client_configuration=configuration)
        return kubernetes.client.ApiClient(configuration)
    default = os.path.expanduser(kubernetes.config.KUBE_CONFIG_DEFAULT_LOCATION)
    if os.path.exists(default):
        return kubernetes.config.new_client_from_config(config_file=default, context=context)
    raise ClusterError(
        "no Kubernetes configuration found: set KUBECONFIG to a kubeconfig file, run inside a pod "
        f"(in-cluster service account), or create {default}"
    )


class Invalid(ClusterError):
    """The API server refused the object (422 Invalid, or 400 for a strict decoding error such as
    an unknown field). ``causes``: the Status's ``details.causes`` (``field``, ``message``,
    ``reason``); the message names every field, e.g. ``create modelserving default/chat: invalid:
    spec.replicas: Invalid value: -1: ...``."""

    def __init__(self, message: str, causes: list[dict[str, str]] | None = None):
        super().__init__(message)
        self.causes = causes or []

    @property
    def fields(self) -> list[str]:
        return [c.get("field", "") for c in self.causes if c.get("field")]


class Forbidden(ClusterError):
    """RBAC refused the call (403); the message says which verb on which resource, and for whom."""


class Unreachable(ClusterError):
    """The API server could not be reached (refused connection, timeout, reset): the dashboard
    answers 503, the request may succeed later."""


def translate(exc: ApiException, what: str) -> ClusterError:
    """The port's error for an API error: 404 -> NotFound, 409 -> Conflict, 422 (and a 400 about the
    body) -> Invalid with the causes, 403 -> Forbidden, else ClusterError."""
    status = _status(exc)
    message = str(status.get("message") or exc.reason or "")
    if exc.status == 404:
        return NotFound(f"{what}: not found ({message})")
    if exc.status == 409:
        return Conflict(f"{what}: conflict ({message})")
    if exc.status == 403:
        return Forbidden(f"{what}: forbidden ({message})")
    if exc.status in (400, 422):
        causes = [c for c in (status.get("details") or {}).get("causes") or [] if isinstance(c, dict)]
        if causes:
            detail = "; ".join(f"{c.get('field') or '<object>'}: {c.get('message', '')}" for c in causes)
        else:
            detail = message
        return Invalid(f"{what}: invalid: {detail}", causes)
    return ClusterError(f"{what}: HTTP {exc.status} {exc.reason} ({message})")


def _status(exc: ApiException) -> dict[str, Any]:
    # The API server answers errors with a Status object: message, reason, details.causes.
    try:
        body = json.loads(exc.body) if exc.body else {}
    except (TypeError, ValueError):
        return {"message": str(exc.body or exc.reason or "")}
    return body if isinstance(body, dict) else {"message": str(body)}


def call_json(fn: Callable[..., Any], *args: Any, what: str, **kwargs: Any) -> dict[str, Any]:
    """Call a typed API method and return the response body as JSON, translating errors.

    Transport failures (refused connection, timeout, reset) become ``ClusterError`` too, so the
    caller handles one error family.
    """
    kwargs.setdefault("_request_timeout", DEFAULT_TIMEOUT)
    try:
        response = fn(*args, _preload_content=False, **kwargs)
    except ApiException as exc:
        raise translate(exc, what) from exc
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise Unreachable(f"{what}: cannot reach the API server ({exc})") from exc
    data = response.data
    return json.loads(data) if data else {}


def raw_json(
    api_client: kubernetes.client.ApiClient,
    method: str,
    path: str,
    *,
    what: str,
    body: Any = None,
    content_type: str = "application/json",
) -> dict[str, Any]:
    """One request with a JSON body sent exactly as given, bypassing the typed models
    (``content_type``: ``MERGE_PATCH`` for a JSON merge patch).

    For objects whose models would rewrite the body: the generated ``V1Lease`` turns
    ``renewTime``/``acquireTime`` into datetimes and writes them back without the six fractional
    digits ``MicroTime`` requires (``...:00+00:00``), which a real API server refuses.
    """
    headers = {"Accept": "application/json", "Content-Type": content_type}
    method_, url, headers, serialized, _ = api_client.param_serialize(
        method=method,
        resource_path=path,
        header_params=headers,
        body=body,
        auth_settings=["BearerToken"],
    )
    try:
        response = api_client.call_api(
            method_, url, header_params=headers, body=serialized, _request_timeout=DEFAULT_TIMEOUT
        )
        response.read()
    except ApiException as exc:
        raise translate(exc, what) from exc
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise Unreachable(f"{what}: cannot reach the API server ({exc})") from exc
    if not 200 <= response.status <= 299:
        exc = ApiException(status=response.status, reason=response.reason)
        exc.body = response.data.decode("utf-8", "replace") if response.data else ""
        raise translate(exc, what)
    return json.loads(response.data) if response.data else {}
