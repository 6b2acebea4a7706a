"""The list page and API serve 1,000 ModelServings (Argo's dashboard freezes at ~120).

How fast is measured by ``python -m bench list`` (list API, first render, frames while the list
updates), not here: these are the functional checks at that size.
"""

from __future__ import annotations

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

    resp = viewer_client.get("/")
    assert resp.status_code == 200
    html = resp.content.decode()
    assert html.count('role="row" data-key="') == 1000
    # Rows in the API's order (namespace, name), each linking to its page.
    assert html.index('data-key="team-0/ms-0000"') < html.index('data-key="team-0/ms-0010"')
    assert html.index('data-key="team-0/ms-0990"') < html.index('data-key="team-1/ms-0001"')
    assert 'href="/modelservings/team-3/ms-0003/"' in html

    rows = viewer_client.get("/api/modelservings/").json()
    assert len(rows) == 1000
    workloads = viewer_client.get("/api/workloads/").json()
    assert [(r["namespace"], r["name"]) for r in workloads] == sorted((r["namespace"], r["name"]) for r in rows)
    # Server-side filters narrow the page too (links keep working without JavaScript).
    filtered = viewer_client.get("/", {"namespace": "team-3", "q": "ms-00"}).content.decode()
    assert filtered.count('role="row" data-key="') == 10
