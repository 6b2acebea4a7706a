"""Every API error as JSON naming the field (DRF's ``EXCEPTION_HANDLER``).

Place in the flow: a view raises (a service's ``ControlError``, ``NotFound``, ``ControlDenied`` or
``ClusterError``, DRF's own validation or authentication errors, Django's body-size error) ->
``exception_handler`` -> one JSON answer:

- a bad field: 400 ``{"<field>": ["<what is wrong>"]}`` (``{"toRevision": ["revision 42 does not exist ..."]}``);
  a body that is not JSON, or nests too deep (``parsers``): 400 ``{"body": ["<what is wrong>"]}``;
- not signed in 401, missing permission 403, unknown object 404, throttled 429: ``{"detail": ...}``;
- the cluster refused or failed (``controller.core.ports.ClusterError`` and the Kubernetes adapter's
  subclasses): 409 Conflict (someone kept changing the object), 422 ``Invalid`` naming the fields the
  API server named (``{"spec.replicas": ["..."], "cluster": "Invalid"}``), 502 ``Forbidden`` (the
  cluster refused RolloutUI's own account: a deployment problem, not the user's) or another
  answer from the API server, 503 when it could not be reached; never a 500;
- a body over the size limit: 413.
"""

from __future__ import annotations

import logging

from django.core.exceptions import RequestDataTooBig
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from controller.core.controls import ControlError
from controller.core.ports import ClusterError, Conflict, NotFound
from rolloutui.services.controls import ControlDenied

log = logging.getLogger(__name__)


def _cluster_error(exc: ClusterError) -> Response:
    from controller.k8s.client import Forbidden, Invalid, Unreachable

    kind = type(exc).__name__
    if isinstance(exc, Conflict):
        # Said the way the CLI says it: what to do next matters more than the resourceVersion.
        return Response(
            {"detail": f"{exc} (it changed since it was read; read it again)", "cluster": kind},
            status=status.HTTP_409_CONFLICT,
        )
    if isinstance(exc, Invalid):
        body: dict = {field: [message] for field, message in _causes(exc)}
        body.setdefault("detail", str(exc))
        body["cluster"] = kind
        return Response(body, status=status.HTTP_422_UNPROCESSABLE_ENTITY)
    if isinstance(exc, Unreachable):
        return Response(
            {"detail": f"the cluster's API server cannot be reached: {exc}", "cluster": kind},
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
        )
    what = "refused RolloutUI's service account" if isinstance(exc, Forbidden) else "failed"
    return Response({"detail": f"the cluster {what}: {exc}", "cluster": kind}, status=status.HTTP_502_BAD_GATEWAY)


def _causes(exc) -> list[tuple[str, str]]:
    return [
        (cause.get("field") or "detail", cause.get("message") or cause.get("reason") or "invalid")
        for cause in getattr(exc, "causes", []) or []
    ]


def _translate(exc: Exception) -> Exception:
    if isinstance(exc, ControlError):
        field = getattr(exc, "field", None) or "detail"
        return exceptions.ValidationError({field: [str(exc)]} if field != "detail" else {"detail": str(exc)})
    if isinstance(exc, NotFound):
        return exceptions.NotFound(str(exc) or "not found")
    if isinstance(exc, ControlDenied):
        return exceptions.PermissionDenied(str(exc) or "permission denied")
    if isinstance(exc, RequestDataTooBig):
        too_big = exceptions.APIException(f"request body too large: {exc}")
        too_big.status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
        return too_big
    return exc


def exception_handler(exc, context):
    from rolloutui.services.manifests import ManifestError

    if isinstance(exc, ManifestError):
        # The editor marks each error at its line: "errors": [{document, path, line, message}].
        return Response({"manifest": [str(exc)], "errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, ClusterError) and not isinstance(exc, NotFound):
        log.warning("cluster error answered to the client", extra={"error": str(exc), "kind": type(exc).__name__})
        return _cluster_error(exc)
    response = drf_exception_handler(_translate(exc), context)
    if response is None:
        return None  # a bug: Django's 500 handling (logged with the traceback)
    data = response.data
    if isinstance(exc, exceptions.ParseError):
        # The body itself is wrong (not JSON, nested too deep): that is the part named.
        response.data = {"body": [str(exc.detail)]}
        return response
    # A list (ValidationError(["..."]) from a serializer-level check) names no field: name it.
    if isinstance(data, list):
        response.data = {"non_field_errors": data}
    elif not isinstance(data, dict):
        response.data = {"detail": str(data)}
    elif "" in data:
        # A body key that is the empty string ({"": 1}) is refused under its own name, which names
        # nothing readable: say it in words.
        messages = data.pop("")
        messages = messages if isinstance(messages, list) else [messages]
        data.setdefault("non_field_errors", []).extend(f"the empty key '': {m}" for m in messages)
    return response
