"""The list page stays fast with 1,000 ModelServings (Argo's dashboard freezes at ~120)."""

from __future__ import annotations

import time

import pytest

from .helpers import manifest

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def test_list_page_and_api_with_1000_modelservings(viewer_client):
    from rolloutui.services import cluster

    c = cluster.get_cluster()
    for i in range(1000):
        m = manifest(f"ms-{i:04d}", replicas=2)
        m["metadata"]["namespace"] = f"team-{i % 10}"
        c.create_modelserving(m)

    started = time.perf_counter()
    resp = viewer_client.get("/")
    page_seconds = time.perf_counter() - started
    assert resp.status_code == 200
    html = resp.content.decode()
    assert html.count('<tr data-key="') == 1000
    assert page_seconds < 1.5, f"the list page took {page_seconds:.2f}s"

    started = time.perf_counter()
    rows = viewer_client.get("/api/modelservings/").json()
    api_seconds = time.perf_counter() - started
    assert len(rows) == 1000 and api_seconds < 1.0, f"GET /api/modelservings/ took {api_seconds:.2f}s"
    # Server-side filters narrow the page too (links keep working without JavaScript).
    filtered = viewer_client.get("/", {"namespace": "team-3", "q": "ms-00"}).content.decode()
    assert filtered.count('<tr data-key="') == 10
