"""The audit record as the API answers it: its own module, shared by every serializer module that
answers a control with the record it left (``serializers``, ``release_serializers``), so neither
imports the other."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from rolloutui.models import AuditRecord
from rolloutui.services import audit, masking

__all__ = ["AuditRecordSerializer"]


class AuditRecordSerializer(serializers.ModelSerializer):
    """One audit record. With a ``request`` in the context (``GET /api/audit/``), ``details`` (an
    applied manifest's ``patch``, an InferenceService's ``specBefore``/``specAfter``, a refused
    attempt's ``args``) is masked like a manifest (``services.masking``) for a reader who may not
    operate in the record's namespace (every namespace for a record of none). Without one (a
    control's answer to the one who acted) it is whole."""

    who = serializers.CharField(source="actor_name")
    when = serializers.DateTimeField(source="created_at")
    fromRevision = serializers.CharField(source="from_revision")
    toRevision = serializers.CharField(source="to_revision")
    revisions = serializers.SerializerMethodField(
        help_text=(
            '{"from", "to"}: each {"number" (as it was then), "hash", "now" (its number today), "text"}, '
            'e.g. "revision #1 (hash 5d8c7f9b6a), now #3" after a rollback re-numbered it.'
        )
    )
    clientIp = serializers.CharField(source="client_ip", allow_null=True)
    authMethod = serializers.CharField(source="auth_method")
    osUser = serializers.CharField(source="os_user")

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
            "revisions",
            "details",
            "result",
            "error",
            "clientIp",
            "authMethod",
            "osUser",
        ]

    def get_revisions(self, record) -> dict[str, Any]:
        if not record.namespace:
            return {"from": None, "to": None}
        numbers = self.__dict__.setdefault("_numbers_now", {})  # one read of the revisions per ModelServing per answer
        key = (record.namespace, record.name)
        if key not in numbers:
            numbers[key] = audit.numbers_now(*key)
        return audit.record_revisions(record, numbers[key])

    def to_representation(self, instance):
        data = super().to_representation(instance)
        request = self.context.get("request")
        if request is not None and data.get("details"):
            namespace = instance.namespace or None
            reveals = self.__dict__.setdefault("_reveals", {})  # one decision per namespace per answer
            if namespace not in reveals:
                reveals[namespace] = masking.reveals(request.user, namespace)
            if not reveals[namespace]:
                data["details"] = masking.mask_tree(data["details"])
        return data
