"""Release records over REST: model versions, environments, deployment revisions.

    GET  /api/model-versions/?model=&status=&q=            list (paginated)
    POST /api/model-versions/                              register (immutable afterwards: no PUT/PATCH/DELETE)
    GET  /api/model-versions/{model}/{version}/            detail, with its releases
    GET  /api/environments/   POST /api/environments/      list, create (with targets and resource profiles)
    GET  /api/environments/{name}/                         detail
    GET  /api/deployment-revisions/?environment=&model=&version=&namespace=&name=&status=
    POST /api/deployment-revisions/                        plan a release (Pending)
    GET  /api/deployment-revisions/{ns}/{name}/{number}/   detail
    GET  /api/deployment-revisions/{ns}/{name}/{number}/change   what deploying/restoring it changes, per layer
    GET  /api/modelservings/{ns}/{name}/releases           the ModelServing page's releases (hash -> "r31 · v12")

The release actions (approve, deprecate, deploy, rollback-release, promote-release) are routed
from the action registry like every control (``urls._control_routes``). Thin views: the services
validate (a ``ControlError`` becomes a 400 naming the field) and shape the JSON.

Reads follow the namespace grants (``records.visible_namespaces``): lists hold the records of the
namespaces the user may view, and a record of another namespace answers 404 (an environment none
of whose targets the user may view, a release or its change: ``ServiceView.initial`` checks the
path's namespace).
"""

from __future__ import annotations

from django.urls import re_path
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, status
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response

from rolloutui.services import actions
from rolloutui.services.releases import deploy, records

from . import release_serializers as rs
from .serializers import AuditRecordSerializer
from .views import SOURCE, ServiceView

IMMUTABLE = "a model version is immutable: register a new version (POST /api/model-versions/) to change it"


class RecordsPagination(PageNumberPagination):
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 500


class _Records(ServiceView):
    def paginated(self, request, rows, shape):
        pager = RecordsPagination()
        page = pager.paginate_queryset(rows, request, view=self)
        return pager.get_paginated_response([shape(row) for row in page])


def _created(record, key: str, value) -> Response:
    return Response({"audit": AuditRecordSerializer(record).data, key: value}, status=status.HTTP_201_CREATED)


@extend_schema(tags=["releases"])
class ModelVersionList(_Records):
    @extend_schema(parameters=[rs.ModelVersionQuerySerializer], responses=rs.ModelVersionSerializer(many=True))
    def get(self, request):
        q = self.validated(rs.ModelVersionQuerySerializer, request.query_params)
        return self.paginated(request, records.model_versions(**q), lambda mv: records.shown_to(request.user, mv))

    @extend_schema(request=rs.ModelVersionCreateSerializer, responses={201: rs.ModelVersionResultSerializer})
    def post(self, request):
        body = dict(request.data) if isinstance(request.data, dict) else request.data
        reason = body.pop("reason", "") if isinstance(body, dict) else ""
        mv, record = records.register_model_version(request.user, body, reason=reason, source=SOURCE)
        return _created(record, "modelVersion", records.model_version_json(mv))


@extend_schema(tags=["releases"])
class ModelVersionDetail(ServiceView):
    def http_method_not_allowed(self, request, *args, **kwargs):
        if request.method in ("PUT", "PATCH", "DELETE"):
            raise exceptions.MethodNotAllowed(request.method, detail=IMMUTABLE)
        return super().http_method_not_allowed(request, *args, **kwargs)

    @extend_schema(responses=rs.ModelVersionSerializer)
    def get(self, request, model, version):
        mv = records.get_model_version(model, version)
        return Response(records.shown_to(request.user, mv, with_deployments=True))


@extend_schema(tags=["releases"])
class EnvironmentList(_Records):
    @extend_schema(responses=rs.EnvironmentSerializer(many=True))
    def get(self, request):
        within = records.visible_namespaces(request.user)
        return self.paginated(request, records.environments(within), records.environment_json)

    @extend_schema(request=rs.EnvironmentCreateSerializer, responses={201: rs.EnvironmentResultSerializer})
    def post(self, request):
        body = dict(request.data) if isinstance(request.data, dict) else request.data
        reason = body.pop("reason", "") if isinstance(body, dict) else ""
        env, record = records.create_environment(request.user, body, reason=reason, source=SOURCE)
        return _created(record, "environment", records.environment_json(env))


@extend_schema(tags=["releases"])
class EnvironmentDetail(ServiceView):
    @extend_schema(responses=rs.EnvironmentSerializer)
    def get(self, request, name):
        try:
            env = records.environments(records.visible_namespaces(request.user)).get(name=name)
        except records.Environment.DoesNotExist:
            raise exceptions.NotFound(f"environment {name} does not exist") from None
        return Response(records.environment_json(env))


@extend_schema(tags=["releases"])
class ReleaseList(_Records):
    @extend_schema(parameters=[rs.ReleaseQuerySerializer], responses=rs.ReleaseSerializer(many=True))
    def get(self, request):
        q = self.validated(rs.ReleaseQuerySerializer, request.query_params)
        within = records.visible_namespaces(request.user)
        return self.paginated(request, records.releases(**q, within=within), records.release_json)

    @extend_schema(request=rs.ReleaseCreateSerializer, responses={201: rs.ReleaseResultSerializer})
    def post(self, request):
        # With "deploy": true the release is planned and deployed in one action (nothing stays
        # Pending if the deploy is refused).
        dr, record = deploy.create_and_deploy(request.user, request.data, source=SOURCE)
        return _created(record, "deploymentRevision", records.release_json(dr))


@extend_schema(tags=["releases"])
class ReleaseDetail(ServiceView):
    @extend_schema(responses=rs.ReleaseSerializer)
    def get(self, request, namespace, name, number):
        return Response(records.release_json(records.get_release(namespace, name, int(number))))


@extend_schema(tags=["releases"])
class ReleaseChange(ServiceView):
    """What deploying (or rolling back to) this release would change on its target now, per layer
    (model, image, config, resources, schema). Nothing is applied."""

    @extend_schema(responses=rs.ReleaseChangeSerializer)
    def get(self, request, namespace, name, number):
        return Response(deploy.release_change(namespace, name, int(number), user=request.user))


class ModelServingReleases(ServiceView):
    """The releases of one ModelServing: its environment, the live release, and the controller
    revision hashes releases produced (the Revisions panel shows "r31 · v12" beside each)."""

    @extend_schema(responses=rs.ModelServingReleasesSerializer, tags=["releases"])
    def get(self, request, namespace, name):
        return Response(records.releases_of_modelserving(namespace, name))


MV = actions.MODEL_VERSION.route
DR = actions.DEPLOYMENT_REVISION.route

urlpatterns = [
    re_path(r"^model-versions/?$", ModelVersionList.as_view(), name="api-model-versions"),
    re_path(MV + r"/?$", ModelVersionDetail.as_view(), name="api-model-version"),
    re_path(r"^environments/?$", EnvironmentList.as_view(), name="api-environments"),
    re_path(
        r"^environments/(?P<name>[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)/?$",
        EnvironmentDetail.as_view(),
        name="api-environment",
    ),
    re_path(r"^deployment-revisions/?$", ReleaseList.as_view(), name="api-deployment-revisions"),
    re_path(DR + r"/?$", ReleaseDetail.as_view(), name="api-deployment-revision"),
    re_path(DR + r"/change/?$", ReleaseChange.as_view(), name="api-deployment-revision-change"),
]
