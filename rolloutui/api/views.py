"""Thin API views: validate the request, call one service function, shape the answer.

Service exceptions become HTTP errors in one place (``rolloutui.api.errors``): ``ControlError`` ->
400 naming the field, ``NotFound`` -> 404, ``ControlDenied`` -> 403, cluster errors -> 409/422/502/503.
The operator controls are one view, ``Control``, routed once per action of the registry
(``rolloutui.services.actions``); its body is the serializer generated from the action's arguments.

Every request runs inside ``services.origin.acting``: the audit records it leads to carry the
client's address and how it signed in (session, token, oidc). Requests from the dashboard's own
pages send ``X-RolloutUI-Source: page``; honoured with a session only (a script with a token is
always ``api``), it makes their audit records say ``page``.
"""

from __future__ import annotations

import contextlib

from django.urls import reverse
from django.utils.cache import get_conditional_response
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from knox.auth import TokenAuthentication
from knox.models import AuthToken
from knox.settings import knox_settings
from rest_framework import exceptions, generics, status
from rest_framework import serializers as drf_serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BrowsableAPIRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from controller.core.ports import NotFound
from rolloutui.models import AuditRecord, PreviewJob
from rolloutui.services import (
    access,
    actions,
    audit,
    autoscale,
    cluster,
    events,
    jobs,
    manifests,
    notifications,
    origin,
    pods,
    preview,
    records,
    simulation,
    state,
)
from rolloutui.services.controls import ControlDenied
from rolloutui.services.controls import audit as write_audit
from rolloutui.services.kserve import controls as kserve_controls
from rolloutui.services.kserve import state as kserve_state
from rolloutui.throttling import ScopedRateThrottle

from . import serializers as s
from .authentication import IngestTokenAuthentication
from .parsers import check_depth
from .permissions import OPERATE, VIEW, CanIngest, CanOperate, CanRun, CanView
from .renderers import FastJSONRenderer

SOURCE = "api"
PAGE_SOURCE_HEADER = "X-RolloutUI-Source"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def source_of(request) -> str:
    """``page`` for the dashboard's own fetches (header, session auth only), else ``api``."""
    if request.headers.get(PAGE_SOURCE_HEADER, "").strip().lower() == "page" and isinstance(
        request.successful_authenticator, SessionAuthentication
    ):
        return AuditRecord.Source.PAGE
    return SOURCE


@contextlib.contextmanager
def denied_as_not_found(request, namespace: str, what: str):
    """A refusal (``ControlDenied``, audited by the service) answered 404 ``{what} not found`` when
    the user may not even view ``namespace``: the answer then says nothing of what exists there, as
    a GET's would. Otherwise the refusal goes on (403)."""
    try:
        yield
    except ControlDenied:
        if not access.allowed(request.user, VIEW, namespace):
            raise exceptions.NotFound(f"{what} not found") from None
        raise


def seconds_param(request, key: str, default: float) -> float:
    """The query parameter ``key`` as a positive, finite number of seconds (``default`` when absent or
    empty); a ValidationError naming ``key`` otherwise."""
    raw = request.query_params.get(key)
    if raw in (None, ""):
        return default
    try:
        value = float(raw)
    except ValueError:
        raise exceptions.ValidationError({key: [f"must be a number of seconds, got {raw!r}"]}) from None
    if not (value > 0 and value < float("inf")):
        raise exceptions.ValidationError({key: ["must be more than 0"]})
    return value


def origin_of(request) -> origin.Origin:
    authenticator = getattr(request, "successful_authenticator", None)
    if isinstance(authenticator, TokenAuthentication):
        method = AuditRecord.AuthMethod.TOKEN
    elif isinstance(authenticator, SessionAuthentication):
        method = origin.session_auth_method(request)
    else:
        method = ""
    return origin.Origin(client_ip=origin.client_ip(request), auth_method=method)


class ServiceView(APIView):
    # Token first: an anonymous request then gets 401 with "WWW-Authenticate: Token" (DRF answers
    # 403 when the first authenticator is the session one). Session auth still enforces CSRF.
    authentication_classes = [TokenAuthentication, SessionAuthentication]
    permission_classes = [CanView]
    # The AuditRecord.action a refused write is recorded under (None: a read, nothing to record).
    audit_action: str | None = None

    def get_permissions(self):
        if self.request.method not in SAFE_METHODS:
            return [CanOperate()]
        return super().get_permissions()

    def initial(self, request, *args, **kwargs):
        # Authenticate first so a refusal below is audited with the origin already known.
        self.perform_authentication(request)
        self._origin_token = origin.set_current(origin_of(request))
        super().initial(request, *args, **kwargs)
        namespace = kwargs.get("namespace")
        if namespace and request.method in SAFE_METHODS and not access.allowed(request.user, VIEW, namespace):
            # Not 403: a user may not learn what exists in a namespace they cannot see.
            raise exceptions.NotFound(f"modelserving {namespace}/{kwargs.get('name')} not found")

    def finalize_response(self, request, response, *args, **kwargs):
        token = getattr(self, "_origin_token", None)
        if token is not None:
            origin.reset(token)
            self._origin_token = None
        return super().finalize_response(request, response, *args, **kwargs)

    def permission_denied(self, request, message=None, code=None):
        """A refused write by a signed-in user is recorded (who, what, where, from where)."""
        user = request.user
        if self.audit_action and request.method not in SAFE_METHODS and user and user.is_authenticated:
            try:
                data = request.data if isinstance(request.data, dict) else {}
            except exceptions.ParseError:  # a body that is not JSON: the refusal is still recorded
                data = {}
            write_audit(
                user,
                action=self.audit_action,
                namespace=self.kwargs.get("namespace") or str(data.get("namespace") or "")[:253],
                name=self.kwargs.get("name") or "",
                reason=data.get("reason"),
                source=source_of(request),
                error=ControlDenied(message or "permission denied"),
            )
        super().permission_denied(request, message=message, code=code)

    @staticmethod
    def validated(serializer_class, data):
        ser = serializer_class(data=data)
        ser.is_valid(raise_exception=True)
        return ser.validated_data


class ModelServingList(ServiceView):
    @extend_schema(parameters=[s.ListQuerySerializer], responses=s.SummarySerializer(many=True))
    def get(self, request):
        q = self.validated(s.ListQuerySerializer, request.query_params)
        filters = {key: value for key, value in q.items() if value}
        within = access.namespaces(request.user, VIEW, state.modelserving_namespaces)
        return Response(state.list_summaries(**filters, within=within))


class ActionRegistry(ServiceView):
    """``GET /api/actions/``: the action registry as data (``actions.registry_document``), from which
    the remote CLI (``rolloutui_cli``) builds one verb per control. Sent with an ``ETag`` (its
    ``version``): a client revalidates its cached copy with ``If-None-Match`` and gets 304."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request):
        document = actions.registry_document()
        etag = f'"{document["version"]}"'
        response = get_conditional_response(request, etag=etag)
        if response is None:
            response = Response(document)
        response["ETag"] = etag
        return response


class RolloutStatus(ServiceView):
    """``GET /api/modelservings/{ns}/{name}/status``: whether the rollout is done, failed or still
    progressing (``verdict``), and why in one line; what ``status`` in either CLI waits on."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, namespace, name):
        return Response(state.rollout_status(namespace, name))


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
            200: s.action_result_serializer(self.view.control.target),
            400: OpenApiResponse(
                OpenApiTypes.OBJECT, description='Bad input, naming the field: {"toRevision": ["..."]}'
            ),
            401: OpenApiResponse(description="Not signed in (send a session cookie or Authorization: Token ...)."),
            403: OpenApiResponse(description=f"Signed in without the {self.view.control.permission} permission."),
            404: OpenApiResponse(description=f"No such {self.view.control.target.label}."),
        }

    def get_summary(self):
        return self.view.control.label

    def get_description(self):
        return self.view.control.help

    def get_tags(self):
        target = self.view.control.target
        if target is actions.INFERENCESERVICE:
            return ["inferenceservices"]
        return ["releases"] if target is not actions.MODELSERVING else super().get_tags()


class Control(ServiceView):
    """``POST <target path>/<action>``: one view for every action of the registry (``services.actions``),
    routed once per action by ``urls.py`` with ``as_view(control=action)``. The answer is the audit
    record and the object after the action, under the target's ``answer`` key (``state`` for a
    ModelServing, ``modelVersion``, ``deploymentRevision``)."""

    control: actions.Action | None = None
    schema = ControlSchema()

    def get_permissions(self):
        return [CanRun()]

    @property
    def audit_action(self):
        return self.control.audit

    def post(self, request, **path):
        target = self.control.target
        keys = target.convert(path)
        data = self.validated(s.request_serializer(self.control), request.data)
        try:
            record = actions.perform(self.control, request.user, *keys.values(), data, source=source_of(request))
        except ControlDenied:
            namespace, _ = target.where(*keys.values())
            if namespace and not access.allowed(request.user, VIEW, namespace):
                # Recorded; answered like a GET would be, so it says nothing of what exists there.
                raise exceptions.NotFound(f"{target.label} {target.describe(*keys.values())} not found") from None
            raise
        body = {"audit": s.AuditRecordSerializer(record).data}
        try:
            body[target.answer] = target.read(*keys.values())
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

    @property
    def audit_action(self):
        return self.control.audit

    def post(self, request):
        data = self.validated(s.request_serializer(self.control), request.data)
        records = actions.perform(self.control, request.user, data, source=source_of(request))
        return Response({"audit": s.AuditRecordSerializer(records, many=True).data}, status=status.HTTP_200_OK)


class ValidateManifest(ServiceView):
    """What applying a manifest would do, without doing it: its documents (kind, namespace, name,
    whether it exists: null in a namespace the user may not view) and every error with its
    document, field path and line (the YAML editor marks them). A text that cannot be read (not
    YAML or JSON, or past the reader's bounds: aliases, tags, duplicate keys, size) is a 400
    naming ``manifest``. Changes nothing, so it needs only the view permission; rate-limited per
    user (``validate``), since every viewer may call it."""

    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "validate"

    def get_permissions(self):
        return [CanView()]

    @extend_schema(
        request=s.ManifestTextSerializer,
        responses={
            200: OpenApiTypes.OBJECT,
            400: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description='The text cannot be read: {"manifest": ["..."], "errors": [{"document", "path", "line", '
                '"message"}]}',
            ),
            429: OpenApiResponse(description="Over ROLLOUTUI_VALIDATE_RATE for this user."),
        },
    )
    def post(self, request):
        d = self.validated(s.ManifestTextSerializer, request.data)
        return Response(manifests.validate(d["manifest"], user=request.user))


class History(ServiceView):
    """Sampled progress points for the charts, oldest first (``services.state.progress_history``).
    The page loads them once and extends the charts from the websocket."""

    @extend_schema(parameters=[s.HistoryQuerySerializer], responses=OpenApiTypes.OBJECT)
    def get(self, request, namespace, name):
        q = self.validated(s.HistoryQuerySerializer, request.query_params)
        ranged = (
            any(q.get(key) is not None for key in ("from", "to", "points"))
            or request.query_params.get("range") == "rollout"
        )
        if not ranged:
            return Response(state.progress_history(namespace, name, since=q.get("since")))
        # A time range (the charts' 15 min, 1 h, 6 h, the rollout, custom): {"points", "from", "to",
        # "stored", "downsampled"}, at most ``points`` points.
        return Response(
            state.history_range(
                namespace,
                name,
                start=q.get("from"),
                end=q.get("to"),
                rollout=request.query_params.get("range") == "rollout",
                points=q.get("points") or state.DEFAULT_POINTS,
            )
        )


class Capacity(ServiceView):
    """Capacity signals per role (request rate, in flight, queue time, GPU, safe concurrency,
    create-to-Serving), a recommended replica count with its reason (``services.capacity``) and
    the autoscale setting (``services.autoscale``): the recommendation is applied only where an
    operator turned autoscale on."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, namespace, name):
        return Response(autoscale.capacity(namespace, name))


class Manifest(ServiceView):
    """The ModelServing object as stored (metadata and spec; status is in the state). The page
    reads values the state does not carry, such as the coordination's maxSkew and role images."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, namespace, name):
        return Response(state.get_manifest(namespace, name, user=request.user))


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
        return Response(state.revision_diff(namespace, name, q["from"], q["to"], user=request.user))


class Pods(ServiceView):
    """Pods of one ModelServing, optionally of one group / role / role instance (the topology's
    cell detail). Node, phase, readiness gates, images, restarts and in-flight requests."""

    @extend_schema(parameters=[s.PodQuerySerializer], responses=OpenApiTypes.OBJECT)
    def get(self, request, namespace, name):
        q = self.validated(s.PodQuerySerializer, request.query_params)
        return Response(state.list_pods(namespace, name, **q))


class PodEvents(ServiceView):
    """The pod's events, oldest first (scheduled, pulled, started, probe failures, back-off,
    kills): on Kubernetes the Events whose involvedObject is the pod (``services.pods``)."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, namespace, name):
        return Response(pods.events(request.user, namespace, name))


class PodLog(ServiceView):
    """The last lines of the pod's engine container (``?tail=``, at most 1000): on Kubernetes the
    API's log endpoint. Masked as manifests are for whoever may not operate in the namespace."""

    @extend_schema(parameters=[s.PodLogQuerySerializer], responses=OpenApiTypes.OBJECT)
    def get(self, request, namespace, name):
        q = self.validated(s.PodLogQuerySerializer, request.query_params)
        return Response(pods.log(request.user, namespace, name, tail=q.get("tail") or pods.DEFAULT_TAIL))


class EventList(ServiceView):
    """Every audit record, cluster event and notification delivery the user may see, newest first
    (``services.events``). Filters: namespace, workload, action, who, type, since; limit."""

    @extend_schema(parameters=[s.EventsQuerySerializer], responses=OpenApiTypes.OBJECT)
    def get(self, request):
        q = self.validated(s.EventsQuerySerializer, request.query_params)
        filters = {key: value for key, value in q.items() if value not in (None, "")}
        return Response(events.feed(request.user, **filters))


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
        filters = ServiceView.validated(s.AuditQuerySerializer, self.request.query_params)
        return audit.search(**filters, within=access.namespaces(self.request.user, VIEW, audit.namespaces))


class NotificationDeliveryList(generics.ListAPIView):
    """Recent notification deliveries, newest first, of the namespaces where the user may operate
    (deliveries of no namespace, such as a model version's approval, for those who operate everywhere).
    Destinations are shown by name and host only."""

    authentication_classes = ServiceView.authentication_classes
    permission_classes = [CanOperate]
    serializer_class = s.NotificationDeliverySerializer
    pagination_class = AuditPagination

    def get_queryset(self):
        within = access.namespaces(self.request.user, OPERATE, notifications.namespaces)
        return notifications.search(within=within)


# --- API tokens (django-rest-knox: stored hashed, expiring, revocable) -------------------------------
def _audit_token(user, action: str, request, *, details=None, error=None) -> None:
    with origin.acting(origin_of(request)):
        write_audit(user, action=action, namespace="", name="", reason="", source=SOURCE, details=details, error=error)


class TokenView(APIView):
    """POST username + password -> {"token", "expiry"}; send it as ``Authorization: Token <token>``.

    Only a digest of the token is stored. It expires after ROLLOUTUI_TOKEN_HOURS; ``DELETE`` on this
    path (with the token) revokes it, ``DELETE /api/auth/tokens/`` revokes all of the user's tokens,
    and changing the password revokes them too. Failed attempts count towards the sign-in lockout
    (django-axes) and the ``token`` rate limits tries per address. Issuing and revoking are audited.
    """

    authentication_classes = [TokenAuthentication]
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "token"

    def get_permissions(self):
        return [IsAuthenticated()] if self.request.method == "DELETE" else []

    def get_throttles(self):
        return super().get_throttles() if self.request.method == "POST" else []

    @extend_schema(
        request=inline_serializer(
            "TokenRequest", {"username": drf_serializers.CharField(), "password": drf_serializers.CharField()}
        ),
        responses=inline_serializer(
            "TokenResponse", {"token": drf_serializers.CharField(), "expiry": drf_serializers.DateTimeField()}
        ),
    )
    def post(self, request):
        # Wrong credentials go through authenticate(): its user_login_failed signal is audited
        # (rolloutui.signals) and counted by django-axes like a failed sign-in on the page.
        serializer = AuthTokenSerializer(data=request.data, context={"request": request._request})
        try:
            serializer.is_valid(raise_exception=True)
        except exceptions.ValidationError as err:
            if "username" not in err.detail and "password" not in err.detail:  # wrong credentials
                err.detail = {"password": ["unable to sign in with these credentials"]}
            raise
        user = serializer.validated_data["user"]
        instance, token = AuthToken.objects.create(user, knox_settings.TOKEN_TTL)
        _audit_token(
            user, "token_issued", request, details={"tokenKey": instance.token_key, "expiry": str(instance.expiry)}
        )
        return Response({"token": token, "expiry": instance.expiry})

    @extend_schema(request=None, responses={204: None})
    def delete(self, request):
        """Revoke the token this request is authenticated with."""
        key = request.auth.token_key
        request.auth.delete()
        _audit_token(request.user, "token_revoked", request, details={"tokenKey": key})
        return Response(status=status.HTTP_204_NO_CONTENT)


class TokensView(APIView):
    """``DELETE /api/auth/tokens/``: revoke every API token of the signed-in user."""

    authentication_classes = [TokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=None, responses={200: inline_serializer("Revoked", {"revoked": drf_serializers.IntegerField()})}
    )
    def delete(self, request):
        revoked, _ = AuthToken.objects.filter(user=request.user).delete()
        _audit_token(request.user, "token_revoked", request, details={"all": True, "count": revoked})
        return Response({"revoked": revoked})


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
    audit_action = "kill_pod"

    @_fault(s.KillPodSerializer)
    def post(self, request):
        d = self.validated(s.KillPodSerializer, request.data)
        return _audited(
            simulation.kill_pod(request.user, d["namespace"], d["pod"], reason=d["reason"], source=source_of(request))
        )


class SimFailNode(_SimView):
    audit_action = "fail_node"

    @_fault(s.FailNodeSerializer)
    def post(self, request):
        d = self.validated(s.FailNodeSerializer, request.data)
        return _audited(simulation.fail_node(request.user, d["node"], reason=d["reason"], source=source_of(request)))


class SimAddNode(_SimView):
    audit_action = "add_node"

    @_fault(s.AddNodeSerializer)
    def post(self, request):
        d = self.validated(s.AddNodeSerializer, request.data)
        return _audited(
            simulation.add_node(request.user, gpus=d["gpus"], reason=d["reason"], source=source_of(request))
        )


class SimPreview(_SimView):
    """Simulate a spec change on a copy of the ModelServing; nothing is applied. A preview costs
    seconds to minutes of CPU, so it needs the operate permission in the namespace, is rate-limited
    per user (``preview``), bounded in size, and runs in a worker: the answer is 202 with the job
    to poll (``GET /api/previews/<id>/``)."""

    audit_action = "preview"
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = jobs.THROTTLE_SCOPE

    @extend_schema(request=s.PreviewSerializer, responses={202: s.PreviewJobSerializer})
    def post(self, request, namespace, name):
        d = self.validated(s.PreviewSerializer, request.data)
        with denied_as_not_found(request, namespace, f"modelserving {namespace}/{name}"):
            job = preview.start(
                request.user,
                namespace,
                name,
                patch=d.get("patch"),
                set_image=d.get("setImage"),
                source=source_of(request),
            )
        return Response(preview_job_json(job), status=status.HTTP_202_ACCEPTED)


def preview_job_json(job: PreviewJob) -> dict:
    return {
        "id": str(job.pk),
        "url": reverse("api-preview-job", kwargs={"job_id": job.pk}),
        "namespace": job.namespace,
        "name": job.name,
        "status": job.status,
        "progress": job.progress,
        "result": job.result,
        "error": job.error,
    }


class PreviewJobView(ServiceView):
    """A preview job: its progress while it runs, then its result or its error. Only the user who
    started it sees it (404 for anyone else)."""

    @extend_schema(responses=s.PreviewJobSerializer)
    def get(self, request, job_id):
        job = PreviewJob.objects.filter(pk=job_id, user=request.user).first()
        if job is None:
            raise exceptions.NotFound("no such preview")
        return Response(preview_job_json(job))


# -- KServe InferenceServices and the list of both kinds (issue 13; controls: the registry) ----------


class WorkloadList(ServiceView):
    # 10,000 rows are 2.8 MB of JSON, read by the list page every 5 s: written by orjson.
    renderer_classes = [FastJSONRenderer, BrowsableAPIRenderer]

    @extend_schema(parameters=[s.WorkloadQuerySerializer], responses=s.WorkloadSerializer(many=True))
    def get(self, request):
        q = self.validated(s.WorkloadQuerySerializer, request.query_params)
        within = access.namespaces(request.user, VIEW, _workload_namespaces)
        return Response(kserve_state.list_workloads(**{key: value for key, value in q.items() if value}, within=within))


class InferenceServiceList(ServiceView):
    @extend_schema(parameters=[s.ListQuerySerializer], responses=s.InferenceServiceSummarySerializer(many=True))
    def get(self, request):
        q = self.validated(s.ListQuerySerializer, request.query_params)
        within = access.namespaces(request.user, VIEW, _workload_namespaces)
        return Response(kserve_state.list_summaries(**{key: value for key, value in q.items() if value}, within=within))


def _workload_namespaces() -> set[str]:
    return set(state.modelserving_namespaces()) | {
        (o.get("metadata") or {}).get("namespace", "default") for o in kserve_state.list_raw()
    }


class InferenceServiceDetail(ServiceView):
    @extend_schema(
        responses=s.InferenceServiceStateSerializer,
        description="The view, with controls (which controls apply now, or why not) and the manifest's spec.",
    )
    def get(self, request, namespace, name):
        return Response(kserve_controls.get_state(namespace, name, user=request.user))


class InferenceServiceHistory(ServiceView):
    @extend_schema(responses=s.InferenceServiceHistorySerializer(many=True))
    def get(self, request, namespace, name):
        return Response(kserve_controls.history(namespace, name, user=request.user))


class InferenceServicePreview(ServiceView):
    """``POST /api/inferenceservices/{ns}/{name}/preview``: what a new image would do to the
    predictor's Ready pods, simulated on a copy (``kserve_controls.preview``); nothing is applied.
    Needs the operate permission, rate-limited like the ModelServing preview (``preview``); the
    simulation takes well under a second, so the answer is the timeline itself. A Recreate
    strategy's outage shows as ``minAvailable`` 0 and its ``gapSeconds``."""

    audit_action = "isvc_preview"
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "preview"

    @extend_schema(request=s.InferenceServicePreviewSerializer, responses=s.InferenceServicePreviewResultSerializer)
    def post(self, request, namespace, name):
        d = self.validated(s.InferenceServicePreviewSerializer, request.data)
        with denied_as_not_found(request, namespace, f"inferenceservice {namespace}/{name}"):
            result = kserve_controls.preview(
                request.user,
                namespace,
                name,
                image=d["image"],
                component=d.get("component"),
                container=d.get("container"),
            )
        return Response(result)


class RequestRecords(APIView):
    """``POST /api/request-records/``: one batch of request records from a router's or gateway's log
    shipper (docs/canary.md, "Request records").

    Body: a JSON list of records, or ``{"records": [...]}``; at most ``ROLLOUTUI_RECORDS_MAX_BATCH``
    records (5,000) and ``ROLLOUTUI_RECORDS_MAX_BODY_BYTES`` (4 MiB). A record: ``requestId``,
    ``namespace``, ``name``, ``revision`` (controller revision hash), optional
    ``deploymentRevision`` and ``modelVersion``, ``latencyMs`` (required for ok and error),
    ``status`` (ok, error, timeout, interrupted, or running), optional ``feedback``, ``started`` and
    ``finished`` (epoch seconds or ISO 8601 with a zone). A request still running is sent with
    status running and no ``finished``; its final record (same ``requestId``) replaces it.

    Token authentication only (``Authorization: Token <token>``): a long-lived ingest token
    (``/api/ingest-tokens/``, also as ``Bearer``) or an API token; permission
    ``rolloutui.ingest_requestrecords`` in each namespace of the batch (group ``ingesters``, or a
    grant of the role ``ingester``). Answers 201 ``{"stored": N}``; 400 naming each bad record by
    index and field, ``{"records": {"3": {"latencyMs": ["..."]}}}``, with nothing stored; 413 for a
    body over the limit; 401 without a token; 403 without the permission.
    """

    authentication_classes = [IngestTokenAuthentication, TokenAuthentication]
    permission_classes = [CanIngest]

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT})
    def post(self, request):
        import json

        limit = records.max_body_bytes()
        raw = request._request.read(limit + 1)
        if len(raw) > limit:
            too_big = exceptions.APIException(f"request body too large: more than {limit} bytes")
            too_big.status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
            raise too_big
        try:
            check_depth(raw)
            payload = json.loads(raw or b"null")
        except ValueError as exc:  # TooDeep included
            raise exceptions.ParseError(f"the body is not JSON: {exc}") from None
        try:
            stored = records.ingest(request.user, payload)
        except records.RecordsInvalid as exc:
            return Response(exc.errors, status=status.HTTP_400_BAD_REQUEST)
        except records.RecordsDenied as exc:
            raise exceptions.PermissionDenied(str(exc)) from None
        return Response(stored, status=status.HTTP_201_CREATED)


class Comparison(ServiceView):
    """``GET /api/modelservings/<ns>/<name>/comparison/?window=<seconds>&bucket=<seconds>``: request
    figures per revision over the same window (the last ``window`` seconds, default 600), for the
    Canary panel. Times are clock seconds (epoch seconds; the embedded cluster's simulated time).

    ``figures`` = ``requests`` (finished requests), ``errorRate``, ``timeoutRate`` (shares of
    them), ``latencyP50Ms``, ``latencyP95Ms``, ``latencyP99Ms`` (of answered requests, exact to the
    histogram bucket), ``feedbackMean``; rates, latencies and feedback are null without requests.

        {"window": {"start": 1700000000.0, "end": 1700000600.0, "seconds": 600},
         "bucketSeconds": 60,
         "stable": {"revision": "5f8d2c42cf", ...figures} | null,
         "canary": {"revision": "ba7ae46932", ...figures} | null,
         "revisions": [{"revision": "...", ...figures}],
         "series": [{"revision": "...", "bucketStart": 1700000000.0, ...figures}]}

    ``stable`` and ``canary`` come from ``status.canary`` while a canary runs (or was stopped by the
    analysis); otherwise ``stable`` is the current revision and ``canary`` null. ``series`` has one
    point per revision per bucket that had requests (``bucket`` rounded up to a multiple of 10 s,
    default 60), sorted by revision then time.
    """

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, namespace, name):
        window = seconds_param(request, "window", 600.0)
        bucket = seconds_param(request, "bucket", 60.0)
        try:
            got = records.comparison(request.user, namespace, name, window=window, bucket=bucket)
        except records.RecordsInvalid as exc:
            return Response(exc.errors, status=status.HTTP_400_BAD_REQUEST)
        return Response(got)
