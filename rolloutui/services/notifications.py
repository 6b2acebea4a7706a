"""Notifications: rollout and release events sent to webhooks and Slack-compatible incoming webhooks.

Place in the flow. An event becomes notifications in one of three places, each of which only writes
``NotificationDelivery`` rows (pending) and, once the transaction commits, queues one Celery task per
row; nothing here waits on a destination, so a control answers at once whatever the endpoints do:

- every audit record written (``post_save`` of ``AuditRecord``, connected in ``rolloutui.apps``) of a
  notifiable kind (``kinds_of_record``): paused, aborted, rolled back, the analysis' pauses and
  rollbacks, a model version approved;
- the post-reconcile hook ``after_reconcile`` (``ROLLOUTUI_POST_RECONCILE_HOOKS``): a rollout that
  completed, a progress deadline exceeded; each at most once per workload and revision
  (``NotifiedTransition``), so a pass that sees the same state again, or a restarted worker, sends
  nothing more;
- a release that became Failed (``post_save`` of ``DeploymentRevision``), once per release.

The worker's task (``rolloutui.tasks.deliver_notification``) posts the payload (``payload``) and
records every attempt on the row; a failure is retried with exponential back-off (Celery's
``retry_backoff``), never in the web process.

Destinations come from ``ROLLOUTUI_NOTIFICATIONS`` (``load``): a file path or inline JSON/YAML of
``{"destinations": [{name, type, url | urlFrom: {env}, filters: {namespaces, workloads, kinds}}]}``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import yaml
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from ..models import AuditRecord, NotificationDelivery, NotifiedTransition

log = logging.getLogger(__name__)

# The event kinds, named after Argo Rollouts' notification triggers where one exists
# (on-analysis-run-failed, on-analysis-run-inconclusive, on-rollout-paused, on-rollout-aborted,
# on-rollout-completed) and after the Deployment condition reason for the deadline.
ANALYSIS_FAILED = "analysis_failed"
ANALYSIS_INCONCLUSIVE = "analysis_inconclusive"
PAUSED = "paused"
ABORTED = "aborted"
ROLLED_BACK = "rolled_back"
COMPLETED = "completed"
PROGRESS_DEADLINE_EXCEEDED = "progress_deadline_exceeded"
RELEASE_APPROVED = "release_approved"
RELEASE_FAILED = "release_failed"
KINDS = (
    ANALYSIS_FAILED,
    ANALYSIS_INCONCLUSIVE,
    PAUSED,
    ABORTED,
    ROLLED_BACK,
    COMPLETED,
    PROGRESS_DEADLINE_EXCEEDED,
    RELEASE_APPROVED,
    RELEASE_FAILED,
)
TYPES = ("webhook", "slack")
# A marker, not an event: the revision was seen rolling out (so its completion is a transition).
_ROLLING = "_rolling"
DEADLINE_REASON = "ProgressDeadlineExceeded"

# Audit actions of operators that are events by themselves.
_ACTION_KINDS = {
    "pause": PAUSED,
    "isvc_pause": PAUSED,
    "rollback": ROLLED_BACK,
    "isvc_rollback": ROLLED_BACK,
    "rollback_release": ROLLED_BACK,
    "abort": ABORTED,
    "approve": RELEASE_APPROVED,
}


class NotificationConfigError(ValueError):
    """The notification settings are wrong; the message starts with the field's path."""

    def __init__(self, field_path: str, problem: str) -> None:
        super().__init__(f"ROLLOUTUI_NOTIFICATIONS: {field_path}: {problem}")
        self.field = field_path


@dataclass(frozen=True)
class Destination:
    name: str
    type: str
    url: str = field(repr=False)  # may hold a token: never logged, stored or shown
    namespaces: frozenset[str] = frozenset()
    workloads: frozenset[str] = frozenset()
    kinds: frozenset[str] = frozenset()

    @property
    def host(self) -> str:
        """What may be shown of the URL: its host (the path and query may hold a token)."""
        return urlsplit(self.url).hostname or ""

    def wants(self, event: Event) -> bool:
        """Each filter given must match; an empty filter matches everything. A workload filter
        entry is ``name`` or ``namespace/name``."""
        if self.kinds and event.kind not in self.kinds:
            return False
        if self.namespaces and event.namespace not in self.namespaces:
            return False
        if self.workloads and not ({event.name, f"{event.namespace}/{event.name}"} & self.workloads):
            return False
        return True


@dataclass(frozen=True)
class Event:
    kind: str
    namespace: str
    name: str
    revision: str
    message: str
    at: Any  # datetime


# -- Configuration ----------------------------------------------------------------------------------


def _strings(value: Any, path: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise NotificationConfigError(path, "must be a list of non-empty strings")
    return frozenset(value)


def _url(entry: Mapping[str, Any], path: str, environ: Mapping[str, str]) -> str:
    if ("url" in entry) == ("urlFrom" in entry):
        raise NotificationConfigError(f"{path}.url", "give exactly one of url and urlFrom")
    if "url" in entry:
        url, where = entry["url"], f"{path}.url"
    else:
        source = entry["urlFrom"]
        if not isinstance(source, dict) or set(source) != {"env"} or not isinstance(source["env"], str):
            raise NotificationConfigError(f"{path}.urlFrom", 'must be {"env": "VARIABLE_NAME"}')
        where = f"{path}.urlFrom.env"
        if source["env"] not in environ:
            raise NotificationConfigError(where, f"the environment variable {source['env']} is not set")
        url = environ[source["env"]]
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        # The value itself is not repeated: it may be a secret.
        raise NotificationConfigError(where, "must be an http:// or https:// URL with a host")
    return url


def parse(document: Any, environ: Mapping[str, str] | None = None) -> list[Destination]:
    """The destinations of a configuration document (already read from JSON/YAML)."""
    environ = os.environ if environ is None else environ
    if document is None:
        return []
    if not isinstance(document, dict):
        raise NotificationConfigError("(top level)", 'must be an object: {"destinations": [...]}')
    unknown = set(document) - {"destinations"}
    if unknown:
        raise NotificationConfigError(sorted(unknown)[0], "unknown field (expected destinations)")
    entries = document.get("destinations")
    entries = [] if entries is None else entries
    if not isinstance(entries, list):
        raise NotificationConfigError("destinations", "must be a list")
    destinations: list[Destination] = []
    for i, entry in enumerate(entries):
        path = f"destinations[{i}]"
        if not isinstance(entry, dict):
            raise NotificationConfigError(path, "must be an object")
        unknown = set(entry) - {"name", "type", "url", "urlFrom", "filters"}
        if unknown:
            raise NotificationConfigError(f"{path}.{sorted(unknown)[0]}", "unknown field")
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip() or len(name) > 100:
            raise NotificationConfigError(f"{path}.name", "is required (a string of at most 100 characters)")
        if any(d.name == name for d in destinations):
            raise NotificationConfigError(f"{path}.name", f"{name!r} is used by another destination")
        kind = entry.get("type")
        if kind not in TYPES:
            raise NotificationConfigError(f"{path}.type", f"must be one of {', '.join(TYPES)}, got {kind!r}")
        filters = entry.get("filters") or {}
        if not isinstance(filters, dict):
            raise NotificationConfigError(f"{path}.filters", "must be an object")
        unknown = set(filters) - {"namespaces", "workloads", "kinds"}
        if unknown:
            raise NotificationConfigError(f"{path}.filters.{sorted(unknown)[0]}", "unknown filter")
        kinds = _strings(filters.get("kinds"), f"{path}.filters.kinds")
        wrong = sorted(kinds - set(KINDS))
        if wrong:
            raise NotificationConfigError(
                f"{path}.filters.kinds", f"unknown kind {wrong[0]!r} (kinds: {', '.join(KINDS)})"
            )
        destinations.append(
            Destination(
                name=name,
                type=kind,
                url=_url(entry, path, environ),
                namespaces=_strings(filters.get("namespaces"), f"{path}.filters.namespaces"),
                workloads=_strings(filters.get("workloads"), f"{path}.filters.workloads"),
                kinds=kinds,
            )
        )
    return destinations


def read(setting: str, environ: Mapping[str, str] | None = None) -> list[Destination]:
    """``ROLLOUTUI_NOTIFICATIONS``'s destinations: inline JSON/YAML when it starts with ``{``, else
    the path of a JSON or YAML file (a ConfigMap mounted as a file)."""
    setting = (setting or "").strip()
    if not setting:
        return []
    if setting.startswith("{"):
        text = setting
    else:
        try:
            text = Path(setting).read_text(encoding="utf-8")
        except OSError as err:
            raise NotificationConfigError("(file)", f"cannot read {setting}: {err.strerror}") from None
    try:
        document = yaml.safe_load(text)  # YAML 1.1 reads JSON documents too
    except yaml.YAMLError as err:
        raise NotificationConfigError("(document)", f"not valid JSON or YAML: {err}") from None
    return parse(document, environ)


_loaded: dict[str, list[Destination]] = {}


def destinations() -> list[Destination]:
    """The configured destinations (read once per setting value)."""
    setting = settings.ROLLOUTUI_NOTIFICATIONS
    if setting not in _loaded:
        _loaded[setting] = read(setting)
    return _loaded[setting]


def destination(name: str) -> Destination | None:
    return next((d for d in destinations() if d.name == name), None)


# -- Events -----------------------------------------------------------------------------------------


def kinds_of_record(record: AuditRecord) -> list[str]:
    """The event kinds an audit record stands for (none for a refused or failed control)."""
    if record.result != AuditRecord.Result.OK:
        return []
    if record.source == AuditRecord.Source.ANALYSIS:
        if (record.details or {}).get("condition") == "AnalysisInconclusive":
            return [ANALYSIS_INCONCLUSIVE]
        if record.action == "rollback":
            # As Argo Rollouts: a failed analysis aborts the rollout back to the stable revision.
            return [ANALYSIS_FAILED, ABORTED]
        return [ANALYSIS_FAILED]
    kind = _ACTION_KINDS.get(record.action)
    return [kind] if kind else []


def _message(record: AuditRecord, kind: str) -> str:
    target = f"{record.namespace}/{record.name}" if record.namespace else record.name
    text = f"{target}: {kind.replace('_', ' ')}"
    if record.source != AuditRecord.Source.ANALYSIS:
        # The analysis names itself in the kind; a person (or the system) is named as who acted.
        text += f" by {record.actor_name or record.source}"
    return f"{text}: {record.reason}" if record.reason else text


def notify(event: Event) -> list[NotificationDelivery]:
    """Write one pending delivery per destination that wants ``event`` and queue their sending
    once the current transaction commits. Never raises for a destination's sake."""
    rows = [
        NotificationDelivery.objects.create(
            destination=d.name,
            destination_type=d.type,
            host=d.host,
            kind=event.kind,
            namespace=event.namespace,
            name=event.name,
            revision=event.revision,
            message=event.message,
            event_at=event.at,
        )
        for d in destinations()
        if d.wants(event)
    ]
    for row in rows:
        # robust: a broker that cannot be reached is logged; the control that led here has succeeded.
        transaction.on_commit(lambda pk=row.pk: _enqueue(pk), robust=True)
    return rows


def _enqueue(delivery_id: int) -> None:
    from rolloutui.tasks import deliver_notification

    deliver_notification.delay(delivery_id)


def record_written(sender, instance: AuditRecord, created: bool, raw: bool = False, **_: Any) -> None:
    """``post_save`` receiver of ``AuditRecord``: notify the kinds the record stands for."""
    if not created or raw or not destinations():
        return
    for kind in kinds_of_record(instance):
        notify(
            Event(
                kind=kind,
                namespace=instance.namespace,
                name=instance.name,
                revision=instance.to_revision or instance.from_revision,
                message=_message(instance, kind),
                at=instance.created_at,
            )
        )


def _first_time(namespace: str, name: str, kind: str, revision: str) -> bool:
    """Remember (namespace, name, kind, revision); True only the first time, across processes."""
    try:
        with transaction.atomic():
            _, created = NotifiedTransition.objects.get_or_create(
                namespace=namespace, name=name, kind=kind, revision=revision
            )
    except IntegrityError:  # another worker remembered it at the same moment
        return False
    return created


def after_reconcile(namespace: str, name: str, view: Mapping[str, Any] | None) -> None:
    """The post-reconcile hook: a completed rollout and an exceeded progress deadline, each notified
    once per update revision. Completion counts only for a revision that was seen rolling out, so
    the steady state found when the worker starts is not news."""
    if not view or view.get("deleted") or not destinations():
        return
    revision = str(view.get("updateRevision") or "")
    if not revision:
        return
    now = timezone.now()
    progressing = next((c for c in view.get("conditions") or [] if c.get("type") == "Progressing"), {})
    if progressing.get("status") == "False" and progressing.get("reason") == DEADLINE_REASON:
        if _first_time(namespace, name, PROGRESS_DEADLINE_EXCEEDED, revision):
            detail = progressing.get("message") or "no progress within spec.progressDeadlineSeconds"
            notify(Event(PROGRESS_DEADLINE_EXCEEDED, namespace, name, revision, f"{namespace}/{name}: {detail}", now))
    done = bool(view.get("converged")) and view.get("currentRevision") == revision
    if not done:
        _first_time(namespace, name, _ROLLING, revision)
        return
    rolled = NotifiedTransition.objects.filter(namespace=namespace, name=name, kind=_ROLLING, revision=revision)
    if rolled.exists() and _first_time(namespace, name, COMPLETED, revision):
        notify(Event(COMPLETED, namespace, name, revision, f"{namespace}/{name}: rollout of {revision} completed", now))


def release_saved(sender, instance, created: bool, raw: bool = False, **_: Any) -> None:
    """``post_save`` receiver of ``DeploymentRevision``: a release that became Failed, once."""
    if raw or instance.status != instance.Status.FAILED or not destinations():
        return
    target = instance.target
    namespace, name = target.namespace, target.name
    if not _first_time(namespace, name, RELEASE_FAILED, f"r{instance.number}"):
        return
    reason = instance.status_reason or "failed"
    notify(
        Event(
            RELEASE_FAILED,
            namespace,
            name,
            str(instance.controller_revision or f"r{instance.number}"),
            f"{namespace}/{name}: release r{instance.number} failed: {reason}",
            instance.status_changed_at or timezone.now(),
        )
    )


# -- Sending (in the worker) ------------------------------------------------------------------------


def workload_url(namespace: str, name: str) -> str | None:
    """The workload's page under ``ROLLOUTUI_PUBLIC_URL``, or None when that is not set."""
    base = settings.ROLLOUTUI_PUBLIC_URL
    if not base or not namespace or not name:
        return None
    return f"{base}/modelservings/{quote(namespace, safe='')}/{quote(name, safe='')}/"


def payload(delivery: NotificationDelivery, destination_type: str) -> dict[str, Any]:
    """The JSON body: the generic webhook's object, or Slack's ``{"text", "blocks"}``."""
    url = workload_url(delivery.namespace, delivery.name)
    if destination_type == "slack":
        text = delivery.message
        blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": _slack_escape(text)}}]
        if url:
            blocks.append(
                {
                    "type": "actions",
                    "elements": [{"type": "button", "text": {"type": "plain_text", "text": "Open"}, "url": url}],
                }
            )
        return {"text": text, "blocks": blocks}
    return {
        "kind": delivery.kind,
        "namespace": delivery.namespace,
        "name": delivery.name,
        "revision": delivery.revision,
        "message": delivery.message,
        "at": delivery.event_at.isoformat(),
        "url": url,
    }


def _slack_escape(text: str) -> str:
    # Slack's mrkdwn treats &, < and > as control characters (its "escaping text" rule).
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def send(delivery_id: int) -> None:
    """One attempt at one delivery, recorded on its row; ``DeliveryFailed`` when it should be retried."""
    import httpx

    from rolloutui.tasks import DeliveryFailed

    delivery = NotificationDelivery.objects.filter(pk=delivery_id).first()
    if delivery is None or delivery.status == NotificationDelivery.Status.DELIVERED:
        return
    target = destination(delivery.destination)
    delivery.attempts += 1
    delivery.last_attempt_at = timezone.now()
    if target is None:
        delivery.status = NotificationDelivery.Status.FAILED
        delivery.last_error = "the destination is no longer configured"
        delivery.save()
        return
    try:
        answer = httpx.post(
            target.url,
            json=payload(delivery, target.type),
            timeout=settings.ROLLOUTUI_NOTIFY_TIMEOUT_SECONDS,
            follow_redirects=False,
        )
    except httpx.HTTPError as err:
        # The exception's text may repeat the URL (and its token): only its type is kept.
        delivery.last_error = f"{type(err).__name__}: no answer from {target.host}"
        delivery.response_code = None
        delivery.save()
        raise DeliveryFailed(delivery.last_error) from None
    delivery.response_code = answer.status_code
    if answer.is_success:
        delivery.status = NotificationDelivery.Status.DELIVERED
        delivery.delivered_at = timezone.now()
        delivery.last_error = ""
        delivery.save()
        return
    delivery.last_error = f"HTTP {answer.status_code} from {target.host}"
    delivery.save()
    raise DeliveryFailed(delivery.last_error)


def give_up(delivery_id: int) -> None:
    """The retries are spent: the delivery is failed for good."""
    NotificationDelivery.objects.filter(pk=delivery_id).exclude(status=NotificationDelivery.Status.DELIVERED).update(
        status=NotificationDelivery.Status.FAILED
    )


# -- Reading ----------------------------------------------------------------------------------------


def namespaces() -> set[str]:
    """The namespaces deliveries name (candidates for ``access.namespaces``)."""
    return set(NotificationDelivery.objects.exclude(namespace="").values_list("namespace", flat=True).distinct())


def search(*, within: set[str] | None):
    """Deliveries, newest first, of the namespaces in ``within`` only (None: all, including those of
    no namespace such as a model version's approval)."""
    rows = NotificationDelivery.objects.all()
    if within is not None:
        rows = rows.filter(namespace__in=sorted(within))
    return rows
