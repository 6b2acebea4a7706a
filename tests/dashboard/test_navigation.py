"""One navigation on every page (issue 31, "Looks and habits"): the same entries in the same order
from templates/base.html (rolloutui/navigation.py), the list called "Workloads" everywhere, the
current section marked, Notifications only for users who may open it, and a favicon."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db

NAV = re.compile(r'<nav class="topnav" aria-label="Main">(.*?)</nav>', re.S)
LINK = re.compile(r'<a href="([^"]+)"( aria-current="page")?>([^<]+)</a>')


def nav_of(html: str) -> list[tuple[str, str, bool]]:
    (inner,) = NAV.findall(html)
    return [(label, href, bool(current)) for href, current, label in LINK.findall(inner)]


def pages(ms) -> list[str]:
    ns, name = ms["namespace"], ms["name"]
    return [
        "/",
        f"/modelservings/{ns}/{name}/",
        f"/modelservings/{ns}/{name}/edit/",
        "/manifests/apply/",
        "/releases/",
        "/notifications/",
        "/events/",
    ]


def test_every_page_shows_the_same_navigation_with_workloads_first_and_the_current_section_marked(ms, operator_client):
    seen = {}
    for path in pages(ms):
        resp = operator_client.get(path)
        assert resp.status_code == 200, path
        html = resp.content.decode()
        seen[path] = nav_of(html)
        assert 'rel="icon" type="image/svg+xml"' in html and "favicon.svg" in html
        assert "ModelServings</a>" not in html, f"{path}: the list is called Workloads"
    labels = {tuple(label for label, _, _ in nav) for nav in seen.values()}
    assert len(labels) == 1, labels
    (order,) = labels
    assert order[0] == "Workloads" and order[1] == "Releases" and order[-1] == "API"
    assert "Notifications" in order
    current = {path: [label for label, _, now in nav if now] for path, nav in seen.items()}
    assert current["/"] == ["Workloads"]
    assert current[pages(ms)[1]] == ["Workloads"]
    assert current["/releases/"] == ["Releases"]
    assert current["/notifications/"] == ["Notifications"]
    assert current["/events/"] == ["Events"]
    assert order == ("Workloads", "Releases", "Events", "Notifications", "API")


def test_a_viewer_gets_the_same_navigation_without_notifications_and_a_visitor_none(ms, viewer_client, client):
    nav = nav_of(viewer_client.get("/").content.decode())
    assert [label for label, _, _ in nav if label != "Events"] == ["Workloads", "Releases", "API"]
    html = client.get("/accounts/login/").content.decode()
    assert 'class="topnav"' not in html


def test_the_favicon_is_served(client):
    from django.contrib.staticfiles import finders

    assert finders.find("favicon.svg"), "static/favicon.svg"
