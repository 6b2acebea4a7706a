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


# -- Revision numbers as they were ---------------------------------------------------------------------
# A ControllerRevision's number is not its identity: a rollback re-numbers the revision rolled back to
# as the newest (Kubernetes' StatefulSet rule, which Kthena follows), so "revision 1" in an old record
# may be "revision 3" today. Records keep the number as it was and the hash (``details.fromRevision``,
# ``details.toRevision``: ``{"number", "hash"}``); readers add the number the hash has now.

# How many of a ModelServing's newest records are searched for the numbers revisions had.
FORMER_NUMBERS_SCAN = 2000


def numbers_now(namespace: str, name: str) -> dict[str, int]:
    """Revision hash -> its number now, for the ModelServing ``namespace/name`` ({} if it is gone)."""
    from controller.core.ports import ClusterError
    from controller.core.revisions import History

    from .cluster import get_cluster

    try:
        revisions = get_cluster().list_revisions(namespace, name)
    except ClusterError:
        return {}
    return {r.hash: r.number for r in History.from_objects(revisions).revisions}


def former_numbers(namespace: str, name: str) -> dict[int, str]:
    """Number a revision of ``namespace/name`` had at some time -> its hash, from the revisions the
    audit records name (a number is never given to another revision: new ones take max + 1)."""
    seen: dict[int, str] = {}
    rows = AuditRecord.objects.filter(namespace=namespace, name=name).values_list("details", flat=True)
    for details in rows[:FORMER_NUMBERS_SCAN]:
        for key in ("fromRevision", "toRevision"):
            ref = (details or {}).get(key) if isinstance(details, dict) else None
            if not isinstance(ref, dict) or not ref.get("hash"):
                continue
            for number in (ref.get("number"), ref.get("becomes")):
                if isinstance(number, int) and not isinstance(number, bool):
                    seen.setdefault(number, ref["hash"])
    return seen


def revision_ref(number: int | None, rev_hash: str | None, now: dict[str, int]) -> dict | None:
    """``{"number" (as it was), "hash", "now" (its number today, None if no longer listed), "text"}``,
    e.g. ``revision #1 (hash 5d8c7f9b6a), now #3``."""
    if not rev_hash and number is None:
        return None
    current = now.get(rev_hash) if rev_hash else None
    shown = number if number is not None else current
    text = f"revision #{shown}" if shown is not None else "revision"
    if rev_hash:
        text += f" (hash {rev_hash})"
    if current is not None and shown is not None and current != shown:
        text += f", now #{current}"
    return {"number": shown, "hash": rev_hash or None, "now": current, "text": text}


def record_revisions(record: AuditRecord, now: dict[str, int]) -> dict:
    """The revisions ``record`` names, each as ``revision_ref``: ``{"from", "to"}`` (None where none).
    From the details written with it; a record with only the column's label (a number, or the hash
    the canary analysis writes) is read as far as that goes."""
    details = record.details if isinstance(record.details, dict) else {}
    out = {}
    for side, column in (("from", record.from_revision), ("to", record.to_revision)):
        ref = details.get(f"{side}Revision")
        if isinstance(ref, dict) and (ref.get("hash") or ref.get("number") is not None):
            number = ref.get("number") if isinstance(ref.get("number"), int) else None
            out[side] = revision_ref(number, ref.get("hash"), now)
        elif column and column.isdigit():
            out[side] = revision_ref(int(column), None, now)
        elif column:
            out[side] = revision_ref(None, column, now)
        else:
            out[side] = None
    return out


def _numbers_of(record: AuditRecord, cache: dict) -> dict[str, int]:
    """``numbers_now`` of the record's ModelServing, read once per ``cache`` (one listing's records)."""
    if not record.namespace:
        return {}
    key = (record.namespace, record.name)
    if key not in cache:
        cache[key] = numbers_now(*key)
    return cache[key]


def record_json(record: AuditRecord, *, reader=None, numbers: dict | None = None) -> dict:
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
        "revisions": record_revisions(record, _numbers_of(record, {} if numbers is None else numbers)),
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
    now: dict[str, int] | None = None
    for entry in entries:
        if entry.get("source") != "analysis":
            continue
        details = dict(entry.get("details") or {})
        # The analysis names revisions by hash; the numbers they have now go with them, as a
        # control's record keeps them, so the record still reads right after a renumbering.
        if now is None:
            now = numbers_now(namespace, name)
        for side in ("from", "to"):
            rev_hash = str(entry.get(f"{side}Revision") or "")
            if rev_hash and f"{side}Revision" not in details:
                details[f"{side}Revision"] = {"number": now.get(rev_hash), "hash": rev_hash}
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
