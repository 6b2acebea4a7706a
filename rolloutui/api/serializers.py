"""Request bodies (validated here, so bad input is a 400 naming the field) and response shapes.

State payloads are produced by ``controller.core.view.build_view`` through the services and are
passed through unchanged (one serializer for REST and websocket); the classes below only describe
them for the OpenAPI schema.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from controller.core.phases import PHASES
from rolloutui.models import AuditRecord


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
    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 2000)
        kwargs.setdefault("trim_whitespace", True)
        kwargs.setdefault(
            "error_messages",
            {
                "required": "reason is required: say why you take this action (it goes to the audit trail).",
                "blank": "reason must not be blank: say why you take this action (it goes to the audit trail).",
            },
        )
        kwargs.setdefault("help_text", "Why the action is taken; recorded in the audit trail.")
        super().__init__(**kwargs)


class ReasonSerializer(_StrictSerializer):
    reason = ReasonField()


class PromoteSerializer(_StrictSerializer):
    partition = serializers.IntegerField(
        required=False,
        min_value=0,
        help_text="Lower the partition to this value. Omit it (and full) for one step down.",
        error_messages={"min_value": "partition must be 0 or more, got a negative number."},
    )
    full = serializers.BooleanField(required=False, default=False, help_text="Partition 0, and resume if paused.")
    reason = ReasonField()

    def validate(self, attrs):
        if attrs.get("full") and attrs.get("partition") is not None:
            raise serializers.ValidationError({"partition": ["give either partition or full, not both"]})
        return attrs


class RollbackSerializer(_StrictSerializer):
    toRevision = serializers.IntegerField(
        min_value=1,
        help_text="Revision number as listed by GET .../revisions/.",
        error_messages={"required": "toRevision is required (a revision number from GET .../revisions/)."},
    )
    reason = ReasonField()


class SetImageSerializer(_StrictSerializer):
    role = serializers.CharField(max_length=253)
    container = serializers.CharField(
        max_length=253,
        required=False,
        allow_null=True,
        default=None,
        help_text="Container name; the first container when omitted.",
    )
    image = serializers.CharField(max_length=1024)
    reason = ReasonField()


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
    namespace = serializers.CharField(required=False, allow_blank=True)
    search = serializers.CharField(required=False, allow_blank=True)
    phase = serializers.ChoiceField(choices=PHASES, required=False, allow_blank=True)


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
    """A spec change to simulate: a raw JSON merge patch, or a set-image shortcut."""

    patch = serializers.DictField(required=False, help_text="JSON merge patch of the ModelServing manifest.")
    setImage = SetImageSerializer(required=False, partial=True)

    def to_internal_value(self, data):
        if isinstance(data, dict) and isinstance(data.get("setImage"), dict):
            # The preview changes nothing, so it needs no reason.
            data = {**data, "setImage": {"reason": "preview", **data["setImage"]}}
        return super().to_internal_value(data)

    def validate(self, attrs):
        if bool(attrs.get("patch")) == bool(attrs.get("setImage")):
            raise serializers.ValidationError({"patch": ["give exactly one of patch or setImage"]})
        return attrs


class AuditRecordSerializer(serializers.ModelSerializer):
    who = serializers.CharField(source="actor_name")
    when = serializers.DateTimeField(source="created_at")
    fromRevision = serializers.CharField(source="from_revision")
    toRevision = serializers.CharField(source="to_revision")

    class Meta:
        model = AuditRecord
        fields = [
            "id",
            "when",
            "who",
            "source",
            "action",
            "namespace",
            "name",
            "reason",
            "fromRevision",
            "toRevision",
            "details",
            "result",
            "error",
        ]


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


def _condition(pod: dict[str, Any], ctype: str) -> str | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c.get("status")
    return None


def pod_summary(pod: dict[str, Any], in_flight: int) -> dict[str, Any]:
    """What the topology's pod panel shows of one Kubernetes-shaped pod dict."""
    from controller.core import naming

    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    statuses = {c.get("name"): c for c in status.get("containerStatuses") or []}
    containers = []
    for c in spec.get("containers") or []:
        st = statuses.get(c.get("name")) or {}
        containers.append(
            {
                "name": c.get("name"),
                "image": c.get("image"),
                "ready": bool(st.get("ready")),
                "restarts": int(st.get("restartCount") or 0),
            }
        )
    gates = [
        {"type": g.get("conditionType"), "status": _condition(pod, g.get("conditionType"))}
        for g in spec.get("readinessGates") or []
    ]
    return {
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "node": spec.get("nodeName"),
        "phase": status.get("phase"),
        "ready": _condition(pod, "Ready") == "True",
        "readinessGates": gates,
        "containers": containers,
        "restarts": sum(c["restarts"] for c in containers),
        "inFlight": int(in_flight),
        "revision": labels.get(naming.LABEL_REVISION),
        "group": labels.get(naming.LABEL_GROUP_ORDINAL),
        "role": labels.get(naming.LABEL_ROLE),
        "roleOrdinal": labels.get(naming.LABEL_ROLE_ORDINAL),
        "podIndex": labels.get(naming.LABEL_POD_INDEX),
        "entry": labels.get(naming.LABEL_ENTRY) == "true",
        "draining": naming.ANNOTATION_DRAINING in annotations,
        "deleting": bool(meta.get("deletionTimestamp")),
        "podIP": status.get("podIP"),
    }
