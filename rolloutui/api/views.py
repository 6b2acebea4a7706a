"""Thin API views: validate the request, call one service function, shape the answer.

Service exceptions become HTTP errors in one place (``ServiceView.handle_exception``):
``ControlError`` -> 400 naming the field, ``NotFound`` -> 404, ``ControlDenied`` -> 403.
The operator controls are one view, ``Control``, routed once per action of the registry
(``rolloutui.services.actions``); its body is the serializer generated from the action's arguments.
"""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import exceptions, generics, status
from rest_framework import serializers as drf_serializers
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response
from rest_framework.views import APIView

from controller.core.controls import ControlError
from controller.core.ports import ClusterError, Conflict, NotFound
from rolloutui.services import actions, audit, cluster, manifests, preview, simulation, state
from rolloutui.services.controls import ControlDenied

from . import serializers as s
from .permissions import CanOperate, CanRun, CanView

SOURCE = "api"


class ServiceView(APIView):
    # Token first: an anonymous request then gets 401 with "WWW-Authenticate: Token" (DRF answers
    # 403 when the first authenticator is the session one). Session auth still enforces CSRF.
    authentication_classes = [TokenAuthentication, SessionAuthentication]
    permission_classes = [CanView]

    def get_permissions(self):
        if self.request.method not in ("GET", "HEAD", "OPTIONS"):
            return [CanOperate()]
        return super().get_permissions()

    def handle_exception(self, exc):
        if isinstance(exc, manifests.ManifestError):
            # The editor marks each error at its line: "errors": [{document, path, line, message}].
            response = Response({"manifest": [str(exc)], "errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST)
            return response
        if isinstance(exc, Conflict):
            return Response(
                {"detail": f"{exc}: it changed since it was read; reload and apply again"},
                status=status.HTTP_409_CONFLICT,
            )
        if isinstance(exc, ClusterError) and not isinstance(exc, NotFound):
            code = status.HTTP_403_FORBIDDEN if type(exc).__name__ == "Forbidden" else status.HTTP_502_BAD_GATEWAY
            return Response({"detail": f"the cluster refused: {exc}"}, status=code)
        if isinstance(exc, ControlError):
            field = getattr(exc, "field", None) or "detail"
            exc = exceptions.ValidationError({field: [str(exc)]} if field != "detail" else {"detail": str(exc)})
        elif isinstance(exc, NotFound):
            exc = exceptions.NotFound(str(exc) or "not found")
        elif isinstance(exc, ControlDenied):
            exc = exceptions.PermissionDenied(str(exc) or CanOperate.message)
        return super().handle_exception(exc)

    @staticmethod
    def validated(serializer_class, data):
        ser = serializer_class(data=data)
        ser.is_valid(raise_exception=True)
        return ser.validated_data


class ModelServingList(ServiceView):
    @extend_schema(parameters=[s.ListQuerySerializer], responses=s.SummarySerializer(many=True))
    def get(self, request):
        q = self.validated(s.ListQuerySerializer, request.query_params)
        return Response(state.list_summaries(**{key: value for key, value in q.items() if value}))


class ModelServingDetail(ServiceView):
    @extend_schema(responses=s.StateSerializer, description="Exactly what the websocket sends.")
    def get(self, request, namespace, name):
        return Response(state.get_state(namespace, name))


class ControlSchema(AutoSchema):
    """The OpenAPI operation of one declared action: its generated body, its label and help."""

    def get_request_serializer(self):
        return s.request_serializer(self.view.control)

    def get_response_serializers(self):
        return {
            200: s.ActionResultSerializer,
            400: OpenApiResponse(
                OpenApiTypes.OBJECT, description='Bad input, naming the field: {"toRevision": ["..."]}'
            ),
            401: OpenApiResponse(description="Not signed in (send a session cookie or Authorization: Token ...)."),
            403: OpenApiResponse(description=f"Signed in without the {self.view.control.permission} permission."),
            404: OpenApiResponse(description="No such ModelServing."),
        }

    def get_summary(self):
        return self.view.control.label

    def get_description(self):
        return self.view.control.help


class Control(ServiceView):
    """``POST .../<action>``: one view for every action of the registry (``services.actions``),
    routed once per action by ``urls.py`` with ``as_view(control=action)``."""

    control: actions.Action | None = None
    schema = ControlSchema()

    def get_permissions(self):
        return [CanRun()]

    def post(self, request, namespace, name):
        data = self.validated(s.request_serializer(self.control), request.data)
        record = actions.perform(self.control, request.user, namespace, name, data, source=SOURCE)
        body = {"audit": s.AuditRecordSerializer(record).data}
        try:
            body["state"] = state.get_state(namespace, name)
        except NotFound:  # deleted meanwhile: the audit record still says what was done
            pass
        return Response(body, status=status.HTTP_200_OK)


class CollectionControlSchema(ControlSchema):
    def get_response_serializers(self):
        responses = super().get_response_serializers()
        responses[200] = s.CollectionResultSerializer
        responses[400] = OpenApiResponse(
            OpenApiTypes.OBJECT,
            description='Bad input: {"manifest": ["..."], "errors": [{"document", "path", "line", "message"}]}',
        )
        responses[409] = OpenApiResponse(description="The ModelServing changed since the resourceVersion given.")
        del responses[404]
        return responses


class CollectionControl(ServiceView):
    """``POST /api/modelservings/<action>``: an action of the registry on the set of ModelServings
    (``apply``), routed once per collection action by ``urls.py``."""

    control: actions.Action | None = None
    schema = CollectionControlSchema()

    def get_permissions(self):
        return [CanRun()]

    def post(self, request):
        data = self.validated(s.request_serializer(self.control), request.data)
        records = actions.perform(self.control, request.user, None, None, data, source=SOURCE)
        return Response({"audit": s.AuditRecordSerializer(records, many=True).data}, status=status.HTTP_200_OK)


class ValidateManifest(ServiceView):
    """What applying a manifest would do, without doing it: its documents (kind, namespace, name,
    whether it exists) and every error with its document, field path and line (the YAML editor
    marks them). Changes nothing, so it needs only the view permission."""

    def get_permissions(self):
        return [CanView()]

    @extend_schema(request=s.ManifestTextSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request):
        d = self.validated(s.ManifestTextSerializer, request.data)
        return Response(manifests.validate(d["manifest"]))


class History(ServiceView):
    """Sampled progress points for the charts, oldest first (``services.state.progress_history``).
    The page loads them once and extends the charts from the websocket."""

    @extend_schema(parameters=[s.HistoryQuerySerializer], responses=OpenApiTypes.OBJECT)
    def get(self, request, namespace, name):
        q = self.validated(s.HistoryQuerySerializer, request.query_params)
        return Response(state.progress_history(namespace, name, since=q.get("since")))


class Manifest(ServiceView):
    """The ModelServing object as stored (metadata and spec; status is in the state). The page
    reads values the state does not carry, such as the coordination's maxSkew and role images."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, namespace, name):
        return Response(state.get_manifest(namespace, name))


class Revisions(ServiceView):
    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, namespace, name):
        return Response(state.list_revisions(namespace, name))


class RevisionDiff(ServiceView):
    @extend_schema(
        parameters=[s.DiffQuerySerializer],
        responses=OpenApiTypes.OBJECT,
        description='{"from", "to", "changes": [{"path", "change", "from", "to"}], "runtime": {...}}',
    )
    def get(self, request, namespace, name):
        q = self.validated(s.DiffQuerySerializer, request.query_params)
        return Response(state.revision_diff(namespace, name, q["from"], q["to"]))


class Pods(ServiceView):
    """Pods of one ModelServing, optionally of one group / role / role instance (the topology's
    cell detail). Node, phase, readiness gates, images, restarts and in-flight requests."""

    @extend_schema(parameters=[s.PodQuerySerializer], responses=OpenApiTypes.OBJECT)
    def get(self, request, namespace, name):
        q = self.validated(s.PodQuerySerializer, request.query_params)
        return Response(state.list_pods(namespace, name, **q))


class AuditPagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500


class AuditList(generics.ListAPIView):
    """The audit trail, newest first. Filters: namespace, name, action, who, source, result."""

    authentication_classes = ServiceView.authentication_classes
    permission_classes = [CanView]
    serializer_class = s.AuditRecordSerializer
    pagination_class = AuditPagination

    @extend_schema(parameters=[s.AuditQuerySerializer])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        return audit.search(**ServiceView.validated(s.AuditQuerySerializer, self.request.query_params))


class TokenView(ObtainAuthToken):
    """POST username + password -> {"token": ...}; use it as ``Authorization: Token <token>``."""

    @extend_schema(
        request=inline_serializer(
            "TokenRequest", {"username": drf_serializers.CharField(), "password": drf_serializers.CharField()}
        ),
        responses=inline_serializer("TokenResponse", {"token": drf_serializers.CharField()}),
    )
    def post(self, request, *args, **kwargs):
        return super().post(request, *args, **kwargs)


# --- Simulation (backend "sim" only) --------------------------------------------------------
class _SimView(ServiceView):
    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if cluster.backend_name() != "sim":
            raise exceptions.NotFound("simulation endpoints exist only when the backend is the simulated cluster")


class SimNodes(_SimView):
    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request):
        return Response(simulation.list_nodes())


def _fault(serializer):
    """The schema of a fault injection: its body, and the audit record as the answer."""
    return extend_schema(request=serializer, responses={200: s.ActionResultSerializer})


def _audited(record):
    return Response({"audit": s.AuditRecordSerializer(record).data})


class SimKillPod(_SimView):
    @_fault(s.KillPodSerializer)
    def post(self, request):
        d = self.validated(s.KillPodSerializer, request.data)
        return _audited(simulation.kill_pod(request.user, d["namespace"], d["pod"], reason=d["reason"], source=SOURCE))


class SimFailNode(_SimView):
    @_fault(s.FailNodeSerializer)
    def post(self, request):
        d = self.validated(s.FailNodeSerializer, request.data)
        return _audited(simulation.fail_node(request.user, d["node"], reason=d["reason"], source=SOURCE))


class SimAddNode(_SimView):
    @_fault(s.AddNodeSerializer)
    def post(self, request):
        d = self.validated(s.AddNodeSerializer, request.data)
        return _audited(simulation.add_node(request.user, gpus=d["gpus"], reason=d["reason"], source=SOURCE))


class SimPreview(_SimView):
    """Simulate a spec change on a copy of the ModelServing; nothing is applied. Viewers may
    preview (it changes nothing), so this POST only needs the view permission."""

    def get_permissions(self):
        return [CanView()]

    @extend_schema(request=s.PreviewSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request, namespace, name):
        d = self.validated(s.PreviewSerializer, request.data)
        return Response(preview.preview_change(namespace, name, patch=d.get("patch"), set_image=d.get("setImage")))
