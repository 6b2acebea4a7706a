"""The navigation every page shows (templates/base.html): the same entries in the same order on
every page, the current one marked with aria-current. A template context processor, so no view
has to remember it; an entry appears only for users who may open it, and the Events page's entry
as soon as its URL exists."""

from __future__ import annotations

from django.urls import NoReverseMatch, reverse

# (URL name, label, the URL names that count as this entry's pages)
ENTRIES = (
    (
        "home",
        "Workloads",
        {"home", "modelserving-detail", "modelserving-edit", "manifest-apply", "inferenceservice-detail"},
    ),
    ("releases", "Releases", {"releases"}),
    ("events", "Events", {"events"}),
    ("notification-deliveries", "Notifications", {"notification-deliveries"}),
    ("api-docs", "API", {"api-docs"}),
)


def _may_see(request, url_name: str) -> bool:
    if url_name != "notification-deliveries":
        return True
    from rolloutui.services import access

    return access.anywhere(request.user, "rolloutui.operate_modelserving")


def nav_items(request) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"nav_items": []}
    match = getattr(request, "resolver_match", None)
    current = match.url_name if match else None
    items = []
    for url_name, label, pages in ENTRIES:
        try:
            href = reverse(url_name)
        except NoReverseMatch:
            continue
        if not _may_see(request, url_name):
            continue
        items.append({"href": href, "label": label, "current": current in pages})
    return {"nav_items": items}
