"""The list page and API serve 1,000 ModelServings (Argo's dashboard freezes at ~120).

How fast is measured by ``python -m bench list`` (list API, first render, frames while the list
updates), not here: these are the functional checks at that size.
"""

from __future__ import annotations

import json
import re

import pytest

from rolloutui.pages import FIRST_ROWS

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
    # The list is windowed: the first rows are HTML, every row is data for the script (in the
    # API's order: namespace, name), and the table says how many rows it has.
    assert html.count('role="row" aria-rowindex="') == 1 + FIRST_ROWS  # the header and the first rows
    assert html.index('data-key="team-0/ms-0000"') < html.index('data-key="team-0/ms-0010"')
    assert 'href="/modelservings/team-0/ms-0000/"' in html
    assert 'aria-rowcount="1001"' in html
    found = re.search(r'<script id="workload-rows" type="application/json">(.*?)</script>', html)
    page_data = json.loads(found.group(1))  # each row's shown fields, in the order the page names them
    data = [dict(zip(page_data["fields"], values, strict=True)) for values in page_data["rows"]]
    assert len(data) == 1000
    assert [(r["namespace"], r["name"]) for r in data] == sorted((r["namespace"], r["name"]) for r in data)

    rows = viewer_client.get("/api/modelservings/").json()
    assert len(rows) == 1000
    workloads = viewer_client.get("/api/workloads/").json()
    assert [(r["namespace"], r["name"]) for r in workloads] == sorted((r["namespace"], r["name"]) for r in rows)
    # The page's data is the API's rows, in the same order, with the fields the list shows.
    assert [{f: r.get(f) for f in page_data["fields"]} for r in workloads] == data
    # Server-side filters narrow the rows it renders too (links keep working without JavaScript).
    filtered = viewer_client.get("/", {"namespace": "team-3", "q": "ms-00"}).content.decode()
    assert filtered.count('role="row" aria-rowindex="') == 1 + 10
    assert 'href="/modelservings/team-3/ms-0003/"' in filtered
