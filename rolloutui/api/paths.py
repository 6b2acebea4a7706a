"""``GET /api/modelservings/<ns>/<name>/paths/``: requests by the path they travelled through the
roles, for the Paths panel of the ModelServing page (``services.records.paths``)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from rolloutui.services import records

from .views import ServiceView, seconds_param


class Paths(ServiceView):
    """``GET /api/modelservings/<ns>/<name>/paths/?window=<seconds>&bucket=<seconds>``: requests by
    the path they travelled (docs/canary.md, "Request paths"), for the Paths panel: per revision pair
    (first hop / last hop) and bucket, how many were ``consistent``, ``mixed``, refused (``noRoute``)
    or failed on a KV cache mismatch (``kvMismatch``), from the stored sums of the request records
    (window default 900 s, at most a day; bucket default 60 s); and per ServingGroup the revisions
    with a consistent path now (``groups``). Without ``spec.traffic.path``: ``path`` is ``[]`` and
    ``reason`` says why there is nothing to show.
    """

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, namespace, name):
        window = seconds_param(request, "window", 900.0)
        bucket = seconds_param(request, "bucket", 60.0)
        try:
            got = records.paths(request.user, namespace, name, window=window, bucket=bucket)
        except records.RecordsInvalid as exc:
            return Response(exc.errors, status=status.HTTP_400_BAD_REQUEST)
        return Response(got)
