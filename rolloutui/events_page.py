"""The Events page (``/events/``): every audit record, cluster event and notification delivery the
user may see, across workloads, newest first (``services.events.feed``), filterable by namespace,
workload, action and user (and type). The first rows are rendered here; ``static/js/events/main.js``
then asks ``GET /api/events/`` every few seconds for what is newer and puts it on top, so the page
is live without reloading. Filters are a GET form: a filtered page has its own URL to share."""

from __future__ import annotations

import re

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import render
from django.urls import reverse

from rolloutui.services import access, events

VIEW = "rolloutui.view_modelserving"
FILTERS = ("namespace", "workload", "action", "who", "type")
FIRST_ROWS = 100
# The kinds that have a page (an account's record or a pod's event on Kubernetes has none).
WORKLOAD_PAGES = {"ModelServing": "modelserving-detail", "InferenceService": "inferenceservice-detail"}


def action_label(action: str) -> str:
    """An audit action as people read it: ``isvc_rollback`` -> ``Rollback`` (the kind column says
    InferenceService), ``set_image`` -> ``Set image``; the same words as the pages' ``actionLabel``."""
    words = re.sub(r"^isvc_", "", action or "").replace("_", " ").strip()
    return words[:1].upper() + words[1:] if words else "—"


def _href(item: dict) -> str:
    """The workload's page: an InferenceService's or a ModelServing's (by the item's kind)."""
    if not item.get("namespace") or not item.get("name") or item.get("kind") not in WORKLOAD_PAGES:
        return ""
    page = WORKLOAD_PAGES[item["kind"]]
    return reverse(page, args=(item["namespace"], item["name"]))


@login_required
def events_page(request):
    if not access.anywhere(request.user, VIEW):
        raise PermissionDenied(f"{request.user.get_username()} may not view workloads")
    filters = {key: (request.GET.get(key) or "").strip() for key in FILTERS}
    if filters["type"] not in events.TYPES:
        filters["type"] = ""
    rows = events.feed(request.user, **{k: v for k, v in filters.items() if v}, limit=FIRST_ROWS)
    for row in rows:
        row["href"] = _href(row)
        row["actionLabel"] = action_label(row.get("action") or "")
    return render(
        request,
        "events/index.html",
        {
            "rows": rows,
            "filters": filters,
            "choices": events.choices(request.user),
            "types": events.TYPES,
            "boot": {
                "api": reverse("api-events"),
                "filters": {k: v for k, v in filters.items() if v},
                "newest": rows[0]["t"] if rows else None,
                "pages": {
                    "ModelServing": reverse("modelserving-detail", args=("NS_", "NAME_")),
                    "InferenceService": reverse("inferenceservice-detail", args=("NS_", "NAME_")),
                },
            },
        },
    )
