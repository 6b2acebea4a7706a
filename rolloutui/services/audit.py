"""Read side of the audit trail: the records the controls and faults write (``controls.audit``).

Place in the flow: ``GET /api/audit/`` (and any other reader) -> ``search`` -> ``AuditRecord`` rows,
newest first (the model's ordering).
"""

from __future__ import annotations

from django.db.models import Q, QuerySet

from ..models import AuditRecord
from . import masking

# Filter name -> model field; each matches exactly.
EXACT_FILTERS = {
    "namespace": "namespace",
    "name": "name",
    "action": "action",
    "who": "actor_name",
    "source": "source",
    "result": "result",
}


def namespaces() -> set[str]:
    """The namespaces audit records name (the empty one of account and cluster-wide records aside)."""
    return set(AuditRecord.objects.exclude(namespace="").values_list("namespace", flat=True).distinct())


def search(
    *,
    namespace: str | None = None,
    name: str | None = None,
    action: str | None = None,
    who: str | None = None,
    source: str | None = None,
    result: str | None = None,
    q: str | None = None,
    within: set[str] | None = None,
) -> QuerySet[AuditRecord]:
    """Audit records matching every given filter (empty or None: no filter); ``q`` is a
    case-insensitive substring of the reason or the user's name. ``within``: only records of these
    namespaces (what the reader may view, ``access.namespaces``); None for all records, including
    those of no namespace (cluster-wide faults, sign-ins)."""
    given = {"namespace": namespace, "name": name, "action": action, "who": who, "source": source, "result": result}
    records = AuditRecord.objects.filter(**{EXACT_FILTERS[key]: value for key, value in given.items() if value})
    if within is not None:
        records = records.filter(namespace__in=sorted(within))
    if q:
        records = records.filter(Q(reason__icontains=q) | Q(actor_name__icontains=q))
    return records


def record_json(record: AuditRecord, *, reader=None) -> dict:
    """One audit record as the API shows it (the CLI's ``-o json|yaml``). ``details`` (an applied
    manifest's patch, an InferenceService's spec before and after) is masked as the API masks it
    (``masking.mask_for``) unless ``reader`` may operate in the record's namespace (every namespace
    for a record of none); no ``reader``: whole, for the one who just acted."""
    return {
        "id": record.pk,
        "when": record.created_at.isoformat(),
        "who": record.actor_name,
        "source": record.source,
        "action": record.action,
        "namespace": record.namespace,
        "name": record.name,
        "reason": record.reason,
        "fromRevision": record.from_revision,
        "toRevision": record.to_revision,
        "details": masking.mask_for(reader, record.namespace or None, record.details),
        "result": record.result,
        "error": record.error,
    }


def record_drain_timeout(*, namespace: str, name: str, pod: str, count: int, reason: str, **_: object) -> None:
    """Requests cut off at a drain timeout become part of the rollout's audit trail (action
    ``drain_timeout``, source ``system``, the update revision it happened under), so the Drain panel
    and the audit show them. Receiver of ``controller.runtime.interruptions.requests_interrupted``."""
    from controller.runtime.interruptions import DRAIN_TIMEOUT

    if reason != DRAIN_TIMEOUT or count <= 0:
        return
    from controller.core.ports import ClusterError
    from controller.runtime.backend import get_cluster

    try:
        status = get_cluster().get_modelserving(namespace, name).get("status") or {}
    except ClusterError:
        status = {}
    AuditRecord.objects.create(
        actor=None,
        actor_name="system",
        source=AuditRecord.Source.SYSTEM,
        action="drain_timeout",
        namespace=namespace,
        name=name,
        reason=f"{count} request(s) in flight on {pod} were interrupted at the drain timeout",
        from_revision=status.get("currentRevision") or "",
        to_revision=status.get("updateRevision") or "",
        details={"pod": pod, "interrupted": count},
    )


def record_analysis(*, namespace: str, name: str, entries: list[dict], **_: object) -> None:
    """The canary analysis paused or rolled back a rollout: one audit record per act, source
    ``analysis``, with the reason (metric, figures, threshold) and the failed window's figures of
    stable and canary in ``details``. Receiver of ``controller.runtime.analysis.analysis_acted``."""
    for entry in entries:
        if entry.get("source") != "analysis":
            continue
        details = dict(entry.get("details") or {})
        window = details.get("window") or {}
        if window.get("figures"):
            details["figures"] = window["figures"]
        AuditRecord.objects.create(
            actor=None,
            actor_name="analysis",
            source=AuditRecord.Source.ANALYSIS,
            action=str(entry.get("action") or "analysis"),
            namespace=namespace,
            name=name,
            reason=str(entry.get("reason") or ""),
            from_revision=str(entry.get("fromRevision") or ""),
            to_revision=str(entry.get("toRevision") or ""),
            details=details,
            auth_method=AuditRecord.AuthMethod.SYSTEM,
        )
