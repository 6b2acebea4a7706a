"""Request bodies (validated here, so bad input is a 400 naming the field) and response shapes.

The controls' bodies are generated from the action registry (``request_serializer``): one DRF
field per declared argument plus the reason, with the registry's limits and error texts, and the
declaration's own checks (``Action.clean``) as ``validate``; so the API and the CLI refuse the same
values with the same words.

State payloads are produced by ``controller.core.view.build_view`` through the services and are
passed through unchanged (one serializer for REST and websocket); the classes below only describe
them for the OpenAPI schema.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.settings import api_settings

from controller.core.controls import ControlError
from controller.core.phases import PHASES
from rolloutui.models import AuditRecord, NotificationDelivery
from rolloutui.services import actions
from rolloutui.services.actions import REASON

from .audit_serializers import AuditRecordSerializer
from .release_serializers import ANSWERS


class _StrictSerializer(serializers.Serializer):
    """Rejects unknown keys: a typo such as ``toRevison`` must not be silently ignored."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {key: [f"unknown field (allowed: {', '.join(sorted(self.fields))})"] for key in unknown}
                )
        return super().to_internal_value(data)


class ReasonField(serializers.CharField):
    """The reason of a simulated fault (the controls' reason comes from ``actions.REASON``)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", REASON.max_length)
        kwargs.setdefault("trim_whitespace", True)
        kwargs.setdefault("error_messages", _messages(REASON))
        kwargs.setdefault("help_text", REASON.help)
        super().__init__(**kwargs)


# -- Request bodies generated from the action registry ----------------------------------------------------

_ERROR_CODES = ("required", "null", "blank", "invalid", "min_value", "max_value", "max_length")


def _messages(arg: actions.Arg) -> dict[str, str]:
    # DRF formats these with str.format (e.g. {max_length}); the texts are final, so braces are escaped.
    return {code: arg.message(code).replace("{", "{{").replace("}", "}}") for code in _ERROR_CODES}


def _field(arg: actions.Arg) -> serializers.Field:
    """The DRF field of one declared argument: same type, limits and error texts as ``Arg.clean``."""
    common: dict[str, Any] = {"help_text": arg.help, "error_messages": _messages(arg)}
    if arg.type == actions.BOOLEAN:
        return serializers.BooleanField(required=False, default=False, **common)
    if not arg.required:
        common.update(required=False, allow_null=True, default=None)
    if arg.type == actions.INTEGER:
        return serializers.IntegerField(min_value=arg.min_value, max_value=arg.max_value, **common)
    return serializers.CharField(
        max_length=arg.max_length, trim_whitespace=True, allow_blank=not arg.required, **common
    )


class _ActionSerializer(_StrictSerializer):
    """Base of the generated request bodies: the declaration's own rules (exclusive arguments) run
    after the fields', with the same ``ControlError`` texts as the CLI, as a 400 naming the field."""

    action: actions.Action
    with_reason = True

    def validate(self, attrs):
        try:
            return self.action.clean(attrs, reason=self.with_reason)
        except ControlError as err:
            raise serializers.ValidationError({err.field or api_settings.NON_FIELD_ERRORS_KEY: [str(err)]}) from None


_GENERATED: dict[tuple[str, bool], tuple[actions.Action, type[serializers.Serializer]]] = {}


def request_serializer(action: actions.Action, *, with_reason: bool = True) -> type[serializers.Serializer]:
    """The request body of ``action``, built once from its declared arguments (and the reason).

    Named ``<Action>Request`` (``SetImageRequest``) in the OpenAPI schema; ``with_reason=False``
    gives ``<Action>Preview``, the arguments alone (a preview changes nothing, so needs no reason).
    """
    key = (action.name, with_reason)
    cached = _GENERATED.get(key)
    if cached is not None and cached[0] is action:
        return cached[1]
    camel = "".join(part.capitalize() for part in action.name.split("-"))
    fields = {arg.name: _field(arg) for arg in (action.fields if with_reason else action.args)}
    cls = type(
        f"{camel}Request" if with_reason else f"{camel}Preview",
        (_ActionSerializer,),
        {**fields, "action": action, "with_reason": with_reason, "__doc__": action.help, "__module__": __name__},
    )
    _GENERATED[key] = (action, cls)
    return cls


class DiffQuerySerializer(serializers.Serializer):
    # "from" is a Python keyword: declared through the fields mapping below.
    def get_fields(self):
        return {
            "from": serializers.IntegerField(
                min_value=1, error_messages={"required": "from is required: ?from=N&to=M"}
            ),
            "to": serializers.IntegerField(min_value=1, error_messages={"required": "to is required: ?from=N&to=M"}),
        }


class ListQuerySerializer(serializers.Serializer):
    namespace = serializers.CharField(required=False, allow_blank=True, help_text="Only this namespace.")
    search = serializers.CharField(required=False, allow_blank=True, help_text="Substring of namespace/name.")
    phase = serializers.ChoiceField(choices=PHASES, required=False, allow_blank=True)


class HistoryQuerySerializer(serializers.Serializer):
    since = serializers.FloatField(
        required=False,
        help_text="Only points after this cluster time.",
        error_messages={"invalid": "since must be a number (cluster seconds)"},
    )
    # "from" is a Python keyword: declared in get_fields.
    to = serializers.FloatField(
        required=False,
        help_text="Only points up to this cluster time (a time range's end).",
        error_messages={"invalid": "to must be a number (cluster seconds)"},
    )
    points = serializers.IntegerField(
        required=False,
        min_value=2,
        max_value=5000,
        help_text="At most this many points: a longer range is downsampled on the server (default 600).",
        error_messages={"invalid": "points must be an integer from 2 to 5000"},
    )

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.FloatField(
            required=False,
            help_text="Only points from this cluster time on (a time range's start).",
            error_messages={"invalid": "from must be a number (cluster seconds)"},
        )
        return fields

    def validate(self, attrs):
        if attrs.get("from") is not None and attrs.get("to") is not None and attrs["from"] > attrs["to"]:
            raise serializers.ValidationError({"from": "from must not be after to"})
        return attrs


class EventsQuerySerializer(serializers.Serializer):
    """Filters of the Events feed (``services.events.feed``); empty values are no filter."""

    namespace = serializers.CharField(required=False, allow_blank=True, help_text="Only this namespace.")
    workload = serializers.CharField(
        required=False, allow_blank=True, help_text="Only this workload: NAME or NAMESPACE/NAME."
    )
    action = serializers.CharField(
        required=False, allow_blank=True, help_text="An audit action, event reason or notification kind."
    )
    who = serializers.CharField(required=False, allow_blank=True, help_text="The acting user (or controller).")
    type = serializers.ChoiceField(
        choices=["audit", "event", "notification"], required=False, allow_blank=True, help_text="Only this type."
    )
    since = serializers.FloatField(
        required=False,
        help_text="Only items after this time (epoch seconds).",
        error_messages={"invalid": "since must be a number (epoch seconds)"},
    )
    limit = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=500,
        help_text="At most this many items (default 100).",
        error_messages={"invalid": "limit must be an integer from 1 to 500"},
    )


class PodLogQuerySerializer(serializers.Serializer):
    tail = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=1000,
        help_text="The last this many lines (default 200).",
        error_messages={"invalid": "tail must be an integer from 1 to 1000"},
    )


class AuditQuerySerializer(serializers.Serializer):
    """Filters of the audit trail (``services.audit.search``); empty values are no filter."""

    namespace = serializers.CharField(required=False, allow_blank=True)
    name = serializers.CharField(required=False, allow_blank=True)
    action = serializers.CharField(required=False, allow_blank=True, help_text="e.g. pause, set_image.")
    who = serializers.CharField(required=False, allow_blank=True, help_text="The acting user's name.")
    source = serializers.ChoiceField(choices=AuditRecord.Source.choices, required=False, allow_blank=True)
    result = serializers.ChoiceField(choices=AuditRecord.Result.choices, required=False, allow_blank=True)
    q = serializers.CharField(required=False, allow_blank=True, help_text="Substring of the reason or the user.")


class PodQuerySerializer(serializers.Serializer):
    group = serializers.IntegerField(min_value=0, required=False)
    role = serializers.CharField(required=False)
    ordinal = serializers.IntegerField(min_value=0, required=False)


class KillPodSerializer(_StrictSerializer):
    namespace = serializers.CharField(max_length=253)
    pod = serializers.CharField(max_length=253)
    reason = ReasonField()


class FailNodeSerializer(_StrictSerializer):
    node = serializers.CharField(max_length=253)
    reason = ReasonField()


class AddNodeSerializer(_StrictSerializer):
    gpus = serializers.IntegerField(min_value=1, max_value=64, default=8)
    reason = ReasonField()


class PreviewSerializer(_StrictSerializer):
    """A spec change to simulate: a raw JSON merge patch, or the arguments of a set-image."""

    patch = serializers.DictField(required=False, help_text="JSON merge patch of the ModelServing manifest.")
    setImage = request_serializer(actions.SET_IMAGE, with_reason=False)(required=False)

    def validate(self, attrs):
        if bool(attrs.get("patch")) == bool(attrs.get("setImage")):
            raise serializers.ValidationError({"patch": ["give exactly one of patch or setImage"]})
        if attrs.get("patch"):
            from controller.core.mergepatch import PatchTooLarge, check_patch_limits

            try:
                check_patch_limits(attrs["patch"])
            except PatchTooLarge as err:
                raise serializers.ValidationError({"patch": [str(err)]}) from None
        return attrs


class PreviewJobSerializer(serializers.Serializer):
    """A preview computed by a worker: poll ``url`` until ``status`` is done (``result``) or error
    (``error``, naming the field)."""

    id = serializers.UUIDField()
    url = serializers.CharField()
    namespace = serializers.CharField()
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=["queued", "running", "done", "error"])
    progress = serializers.JSONField(help_text='{"phase", "simulatedSeconds", "elapsedSeconds", "limitSeconds"}')
    result = serializers.JSONField(allow_null=True)
    error = serializers.JSONField(allow_null=True)


class SummarySerializer(serializers.Serializer):
    """One row of GET /api/modelservings/ (schema only: rows come from services.state.list_summaries)."""

    namespace = serializers.CharField()
    name = serializers.CharField()
    phase = serializers.ChoiceField(choices=PHASES)
    replicas = serializers.IntegerField()
    ready = serializers.IntegerField()
    updated = serializers.IntegerField()
    desired = serializers.IntegerField()
    currentRevision = serializers.CharField(allow_null=True)
    updateRevision = serializers.CharField(allow_null=True)
    paused = serializers.BooleanField()
    strategyType = serializers.CharField()


class StateSerializer(serializers.Serializer):
    """The state of one ModelServing (schema only): ``controller.core.view.build_view``'s output,
    identical to what the websocket sends."""

    namespace = serializers.CharField()
    name = serializers.CharField()
    spec = serializers.JSONField(help_text='{"replicas", "partition", "paused"}')
    phase = serializers.ChoiceField(choices=PHASES)
    currentRevision = serializers.CharField(allow_null=True)
    updateRevision = serializers.CharField(allow_null=True)
    conditions = serializers.JSONField()
    revisions = serializers.JSONField()
    instances = serializers.JSONField(help_text="One entry per ServingGroup x role instance.")
    blocked = serializers.JSONField(help_text='[{"group", "role", "reason", "kind"}]')
    groups = serializers.JSONField()
    roles = serializers.JSONField()
    strategy = serializers.JSONField(help_text="Effective values with the source of each.")
    drain = serializers.JSONField()
    time = serializers.FloatField()


class ActionResultSerializer(serializers.Serializer):
    audit = AuditRecordSerializer()
    state = StateSerializer(required=False)


def action_result_serializer(target: actions.Target) -> type[serializers.Serializer] | serializers.Serializer:
    """The answer to an action on ``target``: the audit record and the object after it, under the
    target's ``answer`` key (``state`` for a ModelServing)."""
    if target is actions.MODELSERVING:
        return ActionResultSerializer
    if target is actions.INFERENCESERVICE:
        return InferenceServiceActionResultSerializer
    return ANSWERS[target.kind]


# -- KServe InferenceServices and the list of both kinds (issue 13) ----------------------------------

KINDS = ("ModelServing", "InferenceService")


class WorkloadQuerySerializer(ListQuerySerializer):
    kind = serializers.ChoiceField(choices=KINDS, required=False, allow_blank=True, help_text="Only this kind.")


class InferenceServiceSummarySerializer(serializers.Serializer):
    """One row of GET /api/inferenceservices/ (schema only: services.kserve.state.summary)."""

    kind = serializers.ChoiceField(choices=KINDS)
    namespace = serializers.CharField()
    name = serializers.CharField()
    phase = serializers.ChoiceField(choices=PHASES)
    deploymentMode = serializers.ChoiceField(
        choices=("Standard", "Knative", "ModelMesh"),
        help_text="The mode's current name (KServe 0.16): RawDeployment is shown as Standard, Serverless as Knative.",
    )
    managed = serializers.BooleanField(help_text="False for ModelMesh: listed, not rolled out by RolloutUI.")
    replicas = serializers.IntegerField(help_text="The predictor's minReplicas.")
    desired = serializers.IntegerField(help_text="Pods wanted over every Deployment (canaries included).")
    ready = serializers.IntegerField()
    updated = serializers.IntegerField()
    paused = serializers.BooleanField()
    image = serializers.CharField(allow_null=True)
    canary = serializers.CharField(allow_null=True, help_text='e.g. "v2 25%" or "10% to llm-predictor-00002".')
    traffic = serializers.JSONField(help_text='[{"revision", "percent", "component", ...}]')
    blocked = serializers.IntegerField(help_text="How many reasons to wait.")
    converged = serializers.BooleanField()


class WorkloadSerializer(serializers.Serializer):
    """One row of GET /api/workloads/: a ModelServing row or an InferenceService row, with ``kind``."""

    kind = serializers.ChoiceField(choices=KINDS)
    namespace = serializers.CharField()
    name = serializers.CharField()
    phase = serializers.ChoiceField(choices=PHASES)
    replicas = serializers.IntegerField()
    ready = serializers.IntegerField()
    updated = serializers.IntegerField()
    desired = serializers.IntegerField()
    paused = serializers.BooleanField()


class InferenceServicePreviewSerializer(serializers.Serializer):
    """The body of POST /api/inferenceservices/{ns}/{name}/preview: the image set-image would set."""

    image = serializers.CharField(max_length=512, help_text="The new image.")
    component = serializers.ChoiceField(choices=("predictor", "transformer", "explainer"), required=False)
    container = serializers.CharField(max_length=63, required=False, help_text="A container of a containers component.")


class InferenceServicePreviewResultSerializer(serializers.Serializer):
    """What a new image would do to the predictor's Ready pods (``simcluster.kserve.preview``), schema only."""

    desired = serializers.IntegerField(allow_null=True)
    minAvailable = serializers.IntegerField(help_text="The fewest Ready predictor pods during the rollout.")
    gapSeconds = serializers.FloatField(help_text="Seconds with no Ready predictor pod (Recreate's outage).")
    durationSeconds = serializers.FloatField()
    converged = serializers.BooleanField()
    capacity = serializers.JSONField(help_text="[[seconds after the change, Ready predictor pods], ...]")
    mode = serializers.CharField(
        allow_null=True, help_text="The predictor's rollout mode (Recreate, Availability, ...)."
    )
    note = serializers.CharField(allow_null=True)


class InferenceServiceStateSerializer(serializers.Serializer):
    """The state of one InferenceService (schema only): ``controller.core.kserve.view``'s output,
    the same as a ``simulate`` trace frame is made from."""

    kind = serializers.CharField()
    namespace = serializers.CharField()
    name = serializers.CharField()
    deploymentMode = serializers.CharField(allow_null=True, help_text="Standard, Knative or ModelMesh (current names).")
    managed = serializers.BooleanField(help_text="False for ModelMesh: listed, not rolled out by RolloutUI.")
    unmanagedReason = serializers.CharField(allow_null=True)
    warnings = serializers.JSONField(help_text='[{"field", "message"}]: what KServe accepts and ignores.')
    error = serializers.JSONField(
        allow_null=True,
        help_text='{"field", "rule", "source"} when KServe refuses the spec (source "spec") or cannot read its '
        'ConfigMap (source "configMap").',
    )
    spec = serializers.JSONField()
    conditions = serializers.JSONField()
    deployments = serializers.JSONField(help_text="Per Deployment: strategy with sources, counts, ReplicaSets.")
    instances = serializers.JSONField(help_text="Per pod: component, replicaSet, revision, state, gate.")
    strategy = serializers.JSONField()
    traffic = serializers.JSONField()
    revisions = serializers.JSONField()
    canary = serializers.JSONField(allow_null=True)
    blocked = serializers.JSONField(help_text='[{"component", "reason"}]')
    converged = serializers.BooleanField()
    time = serializers.FloatField()


class CollectionResultSerializer(serializers.Serializer):
    """A collection action's answer (``apply``): one audit record per ModelServing it touched, in
    document order; ``details.outcome`` says created, configured or unchanged."""

    audit = AuditRecordSerializer(many=True)


class ManifestTextSerializer(serializers.Serializer):
    manifest = serializers.CharField(
        max_length=1_000_000, trim_whitespace=False, help_text="YAML or JSON; several documents with ---."
    )


class InferenceServiceActionResultSerializer(serializers.Serializer):
    """The answer to an InferenceService action: the audit record and the state after it."""

    audit = AuditRecordSerializer()
    state = serializers.JSONField(help_text="The InferenceService's state, with controls (what applies now).")


class InferenceServiceHistorySerializer(serializers.Serializer):
    """One change of an InferenceService made through the product (services.kserve.controls.history)."""

    id = serializers.IntegerField()
    time = serializers.DateTimeField()
    actor = serializers.CharField()
    source = serializers.CharField()
    action = serializers.CharField()
    reason = serializers.CharField()
    result = serializers.CharField()
    error = serializers.CharField()
    fromGeneration = serializers.CharField()
    toGeneration = serializers.CharField()
    args = serializers.JSONField()
    deployments = serializers.JSONField(allow_null=True)
    specDiff = serializers.JSONField(allow_null=True, help_text="JSON merge patch from the spec before to after.")


class NotificationDeliverySerializer(serializers.ModelSerializer):
    """One notification delivery (``services.notifications``): the destination's name, type and host
    (never its URL, which may hold a token), the event, and how sending it went."""

    createdAt = serializers.DateTimeField(source="created_at")
    type = serializers.CharField(source="destination_type")
    lastError = serializers.CharField(source="last_error")
    responseCode = serializers.IntegerField(source="response_code", allow_null=True)
    lastAttemptAt = serializers.DateTimeField(source="last_attempt_at", allow_null=True)
    deliveredAt = serializers.DateTimeField(source="delivered_at", allow_null=True)

    class Meta:
        model = NotificationDelivery
        fields = [
            "id",
            "createdAt",
            "destination",
            "type",
            "host",
            "kind",
            "namespace",
            "name",
            "revision",
            "message",
            "status",
            "attempts",
            "lastError",
            "responseCode",
            "lastAttemptAt",
            "deliveredAt",
        ]
