"""``POST /api/modelservings/{ns}/{name}/advise/``: the strategy advisor, as a job on the preview worker.

The body names the change as for a preview (``setImage`` or ``patch``), with optional ``limit``
(candidates simulated, at most ROLLOUTUI_ADVISOR_CANDIDATES) and ``floor`` (groups to keep; derived
when omitted). Needs the operate permission in the namespace, throttled per user like a preview
(scope ``preview``); the answer is 202 with the job to poll (``GET /api/previews/<id>/``: its
``progress`` counts candidates done of ``total``, its ``result`` is the advice). The advice is applied
with the ``apply-advice`` control (``POST .../apply-advice``).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from rolloutui.services import advisor, jobs
from rolloutui.throttling import ScopedRateThrottle

from . import serializers as s
from .views import _SimView, denied_as_not_found, preview_job_json, source_of


class AdviseSerializer(s.PreviewSerializer):
    """A change to advise on (as for a preview) and the search's bounds."""

    limit = serializers.IntegerField(required=False, min_value=1, help_text="Candidates to simulate at most.")
    floor = serializers.IntegerField(required=False, min_value=0, help_text="ServingGroups the rollout must keep.")


class Advise(_SimView):
    """Find the fastest strategy for a change that keeps the floor (previews of candidate strategies)."""

    audit_action = advisor.ACTION
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = jobs.THROTTLE_SCOPE

    @extend_schema(request=AdviseSerializer, responses={202: s.PreviewJobSerializer})
    def post(self, request, namespace, name):
        d = self.validated(AdviseSerializer, request.data)
        with denied_as_not_found(request, namespace, f"modelserving {namespace}/{name}"):
            job = advisor.start(
                request.user,
                namespace,
                name,
                patch=d.get("patch"),
                set_image=d.get("setImage"),
                limit=d.get("limit"),
                floor=d.get("floor"),
                source=source_of(request),
            )
        return Response(preview_job_json(job), status=status.HTTP_202_ACCEPTED)
