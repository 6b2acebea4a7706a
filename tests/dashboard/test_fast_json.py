"""The orjson paths of the pages and the API write what Django's and DRF's own JSON writes: the
detail page's first state (``templatetags/pagejson.py``), the workload list's rows
(``api/renderers.py``) and the stored list summaries they are made of."""

from __future__ import annotations

import datetime
import decimal
import json
import re

import pytest
from django.utils.html import json_script
from django.utils.translation import gettext_lazy
from rest_framework.renderers import JSONRenderer

from rolloutui.api.renderers import FastJSONRenderer
from rolloutui.templatetags.pagejson import page_json

from .helpers import manifest

AWKWARD = {
    "phase": '</script><script>alert(1)</script><!--&amp;"',
    "separators": "a\u2028b\u2029c",
    "accents": "é, 漢字",
    "numbers": [0, -1, 2.5, 10**20, None, True, False],
    "nested": {"list": [{"a": "<b>"}]},
}


def script_text(element: str, element_id: str) -> str:
    m = re.fullmatch(rf'<script id="{element_id}" type="application/json">(.*)</script>', element, re.S)
    assert m, element
    return m.group(1)


def test_the_page_state_element_parses_to_the_same_value_as_json_script_and_never_closes_its_script():
    ours = script_text(str(page_json(AWKWARD, "initial-state")), "initial-state")
    theirs = script_text(str(json_script(AWKWARD, "initial-state")), "initial-state")
    assert json.loads(ours) == json.loads(theirs) == AWKWARD
    for raw in "<>&":
        assert raw not in ours


def test_the_page_state_element_escapes_its_id():
    assert 'id="a&quot;b"' in str(page_json({}, 'a"b'))


def test_what_orjson_refuses_goes_to_json_script():
    for value in ({1: "a non-string key"}, {"huge": 2**70}):
        assert str(page_json(value, "initial-state")) == str(json_script(value, "initial-state"))


@pytest.mark.parametrize(
    "data",
    [
        AWKWARD,
        [{"kind": "ModelServing", "namespace": "team-0", "name": "ms-0000", "ready": 1, "paused": False}],
        {
            "when": datetime.datetime(2026, 12, 5, 1, 2, 3, 456789, tzinfo=datetime.UTC),
            "amount": decimal.Decimal("1.5"),
        },
        {"lazy": gettext_lazy("Healthy")},
        {1: "a non-string key"},
        {"huge": 2**70},
        [],
    ],
)
def test_the_fast_renderer_writes_the_bytes_drf_writes(data):
    assert FastJSONRenderer().render(data) == JSONRenderer().render(data)


def test_the_fast_renderer_leaves_indented_responses_to_drf():
    media = "application/json; indent=2"
    assert FastJSONRenderer().render(AWKWARD, media, {}) == JSONRenderer().render(AWKWARD, media, {})


@pytest.mark.django_db
def test_the_workload_list_is_the_json_drf_would_write_of_the_stored_summaries(viewer_client):
    from rolloutui.services import cluster, state

    c = cluster.get_cluster()
    for i in range(12):
        m = manifest(f"ms-{i:02d}", replicas=2)
        m["metadata"]["namespace"] = f"team-{i % 3}"
        c.create_modelserving(m)
    resp = viewer_client.get("/api/workloads/", HTTP_ACCEPT="application/json")
    assert resp.status_code == 200
    summaries = state.list_summaries()
    assert [r["name"] for r in summaries] == [
        r["name"] for r in sorted(summaries, key=lambda r: (r["namespace"], r["name"]))
    ]
    expected = [{"kind": "ModelServing", **row} for row in summaries]
    assert resp.content == JSONRenderer().render(expected)
    # Each read decodes its own rows: changing one changes nothing the next read returns.
    summaries[0]["phase"] = "changed by a caller"
    assert state.list_summaries()[0]["phase"] != "changed by a caller"
