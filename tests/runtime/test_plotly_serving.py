"""Plotly (4.6 MB) is served compressed and cacheable (issue 31): the pages load a copy named with
its version and a hash of its content, which WhiteNoise sends gzipped to a browser that accepts it
and marks immutable for a year; the copy is made once in the var dir and again when the wheel's
file changes (rolloutui/staticfinders.py)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re

import pytest

from rolloutui import staticfinders

pytestmark = pytest.mark.django_db


def test_the_modelserving_page_loads_a_hashed_plotly_that_is_sent_gzipped_and_cached_for_a_year(operator_client):
    from tests.dashboard.helpers import NAMESPACE, create_modelserving

    create_modelserving("plotly-page", partition=0)
    html = operator_client.get(f"/modelservings/{NAMESPACE}/plotly-page/").content.decode()
    (src,) = re.findall(r'<script id="plotly-src" type="application/json">"([^"]+)"</script>', html)
    assert re.fullmatch(r"/static/vendor/plotly-[0-9.]+\.[0-9a-f]{12}\.min\.js", src), src
    source = staticfinders.plotly_source().read_bytes()
    assert src.split(".")[-3] == hashlib.sha256(source).hexdigest()[:12]

    resp = operator_client.get(src, HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    assert resp.status_code == 200
    assert resp["Content-Encoding"] == "gzip"
    assert "immutable" in resp["Cache-Control"] and "max-age=315360000" in resp["Cache-Control"]
    body = b"".join(resp.streaming_content)
    assert len(body) < len(source) / 2
    assert gzip.decompress(body) == source

    plain = operator_client.get(src)
    assert "Content-Encoding" not in plain and b"".join(plain.streaming_content) == source


def test_other_static_files_keep_a_short_cache(client):
    resp = client.get("/static/css/app.css")
    assert resp.status_code == 200
    assert "immutable" not in resp.get("Cache-Control", "")


def test_the_hashed_copy_is_made_once_and_again_when_the_wheels_file_changes(tmp_path, monkeypatch):
    source = tmp_path / "wheel" / "plotly.min.js"
    source.parent.mkdir()
    source.write_bytes(b"/* plotly.js v1 */" + b"x" * 1000)
    monkeypatch.setattr(staticfinders, "plotly_source", lambda: source)
    out = tmp_path / "vendor"
    first = staticfinders.hashed_plotly(out)
    assert first.read_bytes() == source.read_bytes()
    assert gzip.decompress(first.with_name(first.name + ".gz").read_bytes()) == source.read_bytes()
    made = first.stat().st_mtime_ns
    assert staticfinders.hashed_plotly(out) == first and first.stat().st_mtime_ns == made

    source.write_bytes(b"/* plotly.js v2 */" + b"y" * 1000)
    os.utime(source, ns=(made + 10**9, made + 10**9))
    second = staticfinders.hashed_plotly(out)
    assert second != first and second.read_bytes() == source.read_bytes()
    assert sorted(p.name for p in out.iterdir()) == sorted([second.name, second.name + ".gz", "manifest.json"])
    assert json.loads((out / "manifest.json").read_text())["name"] == second.name
