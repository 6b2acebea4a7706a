"""Thin API views: validate the request, call one service function, shape the answer.

Service exceptions become HTTP errors in one place (``ServiceView.handle_exception``):
``ControlError`` -> 400 naming the field, ``NotFound`` -> 404, ``ControlDenied`` -> 403.
"""

from __future__ import annotations

from django.db.models import Q
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import exceptions, generics, status
from rest_framework import serializers as drf_serializers
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response
from rest_framework.views import APIView

from controller.core.controls import ControlError
from controller.core.ports import NotFound
from rolloutui.models import AuditRecord

from . import serializers as s
from .permissions import CanOperate, CanView

SOURCE = "api"


def _services():
    # Imported at call time: the service layer is a separate package, and importing it lazily
    # keeps URL loading (and the schema) working even while a backend fails to initialise.
    import rolloutui.services as services
    from rolloutui.services import cluster, controls, simulation, state  # noqa: F401

    return services


def _control_denied():
    from rolloutui.services.controls import ControlDenied

    return ControlDenied


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
        if isinstance(exc, ControlError):
            field = getattr(exc, "field", None) or "detail"
            exc = exceptions.ValidationError({field: [str(exc)]} if field != "detail" else {"detail": str(exc)})
        elif isinstance(exc, NotFound):
            exc = exceptions.NotFound(str(exc) or "not found")
        elif isinstance(exc, _control_denied()):
            exc = exceptions.PermissionDenied(str(exc) or CanOperate.message)
        return super().handle_exception(exc)

    @staticmethod
    def validated(serializer_class, data):
        ser = serializer_class(data=data)
        ser.is_valid(raise_exception=True)
        return ser.validated_data


LIST_PARAMS = [
    OpenApiParameter("namespace", str, description="Only this namespace."),
    OpenApiParameter("phase", str, enum=list(s.PHASES)),
    OpenApiParameter("search", str, description="Substring of namespace/name."),
]


class ModelServingList(ServiceView):
    @extend_schema(parameters=LIST_PARAMS, responses=s.SummarySerializer(many=True))
    def get(self, request):
        q = self.validated(s.ListQuerySerializer, request.query_params)
        rows = _services().state.list_summaries(
            namespace=q.get("namespace") or None, search=q.get("search") or None, phase=q.get("phase") or None
        )
        return Response(rows)


class ModelServingDetail(ServiceView):
    @extend_schema(responses=s.StateSerializer, description="Exactly what the websocket sends.")
    def get(self, request, namespace, name):
        return Response(_services().state.get_state(namespace, name))


class _Control(ServiceView):
    serializer_class = s.ReasonSerializer

    def act(self, user, namespace, name, data):
        raise NotImplementedError

    def post(self, request, namespace, name):
        data = self.validated(self.serializer_class, request.data)
        record = self.act(request.user, namespace, name, data)
        body = {"audit": s.AuditRecordSerializer(record).data}
        try:
            body["state"] = _services().state.get_state(namespace, name)
        except NotFound:
            pass
        return Response(body, status=status.HTTP_200_OK)


def _control_schema(ser):
    return extend_schema(request=ser, responses={200: s.ActionResultSerializer})


class Pause(_Control):
    @_control_schema(s.ReasonSerializer)
    def post(self, request, namespace, name):
        return super().post(request, namespace, name)

    def act(self, user, namespace, name, data):
        return _services().controls.pause(user, namespace, name, reason=data["reason"], source=SOURCE)


class Resume(_Control):
    @_control_schema(s.ReasonSerializer)
    def post(self, request, namespace, name):
        return super().post(request, namespace, name)

    def act(self, user, namespace, name, data):
        return _services().controls.resume(user, namespace, name, reason=data["reason"], source=SOURCE)


class Promote(_Control):
    serializer_class = s.PromoteSerializer

    @_control_schema(s.PromoteSerializer)
    def post(self, request, namespace, name):
        return super().post(request, namespace, name)

    def act(self, user, namespace, name, data):
        return _services().controls.promote(
            user,
            namespace,
            name,
            partition=data.get("partition"),
            full=data.get("full", False),
            reason=data["reason"],
            source=SOURCE,
        )


class Rollback(_Control):
    serializer_class = s.RollbackSerializer

    @_control_schema(s.RollbackSerializer)
    def post(self, request, namespace, name):
        return super().post(request, namespace, name)

    def act(self, user, namespace, name, data):
        return _services().controls.rollback(
            user, namespace, name, to_revision=data["toRevision"], reason=data["reason"], source=SOURCE
        )


class SetImage(_Control):
    serializer_class = s.SetImageSerializer

    @_control_schema(s.SetImageSerializer)
    def post(self, request, namespace, name):
        return super().post(request, namespace, name)

    def act(self, user, namespace, name, data):
        return _services().controls.set_image(
            user,
            namespace,
            name,
            role=data["role"],
            image=data["image"],
            container=data.get("container"),
            reason=data["reason"],
            source=SOURCE,
        )


class History(ServiceView):
    """Sampled progress points for the charts, oldest first (``services.state.progress_history``).
    The page loads them once and extends the charts from the websocket."""

    @extend_schema(
        parameters=[OpenApiParameter("since", float, description="Only points after this cluster time.")],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request, namespace, name):
        since = request.query_params.get("since")
        try:
            since_value = float(since) if since not in (None, "") else None
        except ValueError:
            raise exceptions.ValidationError(
                {"since": [f"since must be a number (cluster seconds), got {since!r}"]}
            ) from None
        services = _services()
        services.cluster.get_cluster().get_modelserving(namespace, name)  # 404 for an unknown ModelServing
        return Response(services.state.progress_history(namespace, name, since=since_value))


class Manifest(ServiceView):
    """The ModelServing object as stored (metadata and spec; status is in the state). The page
    reads values the state does not carry, such as the coordination's maxSkew and role images."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, namespace, name):
        obj = _services().cluster.get_cluster().get_modelserving(namespace, name)
        return Response({k: v for k, v in obj.items() if k != "status"})


class Revisions(ServiceView):
    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, namespace, name):
        return Response(_services().state.list_revisions(namespace, name))


class RevisionDiff(ServiceView):
    @extend_schema(
        parameters=[OpenApiParameter("from", int, required=True), OpenApiParameter("to", int, required=True)],
        responses=OpenApiTypes.OBJECT,
        description='{"from", "to", "changes": [{"path", "change", "from", "to"}], "runtime": {...}}',
    )
    def get(self, request, namespace, name):
        q = self.validated(s.DiffQuerySerializer, request.query_params)
        state = _services().state
        # Checked here against the history so an unknown number is a 400 naming the parameter,
        # whatever the service raises for it.
        numbers = sorted(r.get("number") for r in state.list_revisions(namespace, name))
        for key in ("from", "to"):
            if q[key] not in numbers:
                listed = ", ".join(map(str, numbers)) or "none"
                raise exceptions.ValidationError({key: [f"revision {q[key]} does not exist (revisions: {listed})"]})
        return Response(state.revision_diff(namespace, name, q["from"], q["to"]))


class Pods(ServiceView):
    """Pods of one ModelServing, optionally of one group / role / role instance (the topology's
    cell detail). Node, phase, readiness gates, images, restarts and in-flight requests."""

    @extend_schema(
        parameters=[OpenApiParameter("group", int), OpenApiParameter("role", str), OpenApiParameter("ordinal", int)],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request, namespace, name):
        from controller.core import naming

        q = self.validated(s.PodQuerySerializer, request.query_params)
        services = _services()
        cluster = services.cluster.get_cluster()
        cluster.get_modelserving(namespace, name)  # 404 for an unknown ModelServing
        wanted = {
            naming.LABEL_GROUP_ORDINAL: q.get("group"),
            naming.LABEL_ROLE: q.get("role"),
            naming.LABEL_ROLE_ORDINAL: q.get("ordinal"),
        }
        router = services.cluster.get_router()
        out = []
        for pod in cluster.list_pods(namespace, name):
            labels = (pod.get("metadata") or {}).get("labels") or {}
            if any(v is not None and str(labels.get(k)) != str(v) for k, v in wanted.items()):
                continue
            pod_name = pod["metadata"]["name"]
            out.append(s.pod_summary(pod, router.in_flight(namespace, pod_name)))
        out.sort(
            key=lambda p: (int(p["group"] or 0), p["role"] or "", int(p["roleOrdinal"] or 0), int(p["podIndex"] or 0))
        )
        return Response(out)


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

    @extend_schema(
        parameters=[OpenApiParameter(p, str) for p in ("namespace", "name", "action", "who", "source", "result", "q")]
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        qs = AuditRecord.objects.all()
        p = self.request.query_params
        for param, field in (
            ("namespace", "namespace"),
            ("name", "name"),
            ("action", "action"),
            ("who", "actor_name"),
            ("source", "source"),
            ("result", "result"),
        ):
            if p.get(param):
                qs = qs.filter(**{field: p[param]})
        if p.get("q"):
            qs = qs.filter(Q(reason__icontains=p["q"]) | Q(actor_name__icontains=p["q"]))
        return qs


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
        if _services().cluster.backend_name() != "sim":
            raise exceptions.NotFound("simulation endpoints exist only when the backend is the simulated cluster")


class SimNodes(_SimView):
    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request):
        return Response(_services().simulation.list_nodes())


class _SimAction(_SimView):
    serializer_class = s.ReasonSerializer

    def post(self, request):
        data = self.validated(self.serializer_class, request.data)
        return Response({"audit": s.AuditRecordSerializer(self.act(request.user, data)).data})


class SimKillPod(_SimAction):
    serializer_class = s.KillPodSerializer

    @_control_schema(s.KillPodSerializer)
    def post(self, request):
        return super().post(request)

    def act(self, user, d):
        return _services().simulation.kill_pod(user, d["namespace"], d["pod"], reason=d["reason"], source=SOURCE)


class SimFailNode(_SimAction):
    serializer_class = s.FailNodeSerializer

    @_control_schema(s.FailNodeSerializer)
    def post(self, request):
        return super().post(request)

    def act(self, user, d):
        return _services().simulation.fail_node(user, d["node"], reason=d["reason"], source=SOURCE)


class SimAddNode(_SimAction):
    serializer_class = s.AddNodeSerializer

    @_control_schema(s.AddNodeSerializer)
    def post(self, request):
        return super().post(request)

    def act(self, user, d):
        return _services().simulation.add_node(user, gpus=d["gpus"], reason=d["reason"], source=SOURCE)


class SimPreview(_SimView):
    """Simulate a spec change on a copy of the ModelServing; nothing is applied. Viewers may
    preview (it changes nothing), so this POST only needs the view permission."""

    def get_permissions(self):
        return [CanView()]

    @extend_schema(request=s.PreviewSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request, namespace, name):
        from controller.core import controls as core_controls

        d = self.validated(s.PreviewSerializer, request.data)
        services = _services()
        patch = d.get("patch")
        if d.get("setImage"):
            si = d["setImage"]
            if not si.get("role") or not si.get("image"):
                raise exceptions.ValidationError({"setImage": ["role and image are required"]})
            ms = services.cluster.get_cluster().get_modelserving(namespace, name)
            # The same pure patch builder the set-image control uses, so the preview simulates
            # exactly the change the button would make.
            patch = core_controls.set_image(ms, role=si["role"], image=si["image"], container=si.get("container"))
        return Response(services.simulation.preview(namespace, name, patch))
