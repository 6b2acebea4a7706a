"""Applying a manifest parses each ModelServing document once and hands the parsed value to the
checks and the apply (issue 25: parse once, pass the value)."""

from __future__ import annotations

import json

import pytest
import yaml

from rolloutui.services import manifests

from .helpers import manifest, unique_name

pytestmark = pytest.mark.django_db


def test_applying_two_documents_parses_each_of_them_once(operator, monkeypatch):
    parsed_names = []
    real = manifests.parse_modelserving

    def counting(obj):
        parsed_names.append(obj["metadata"]["name"])
        return real(obj)

    monkeypatch.setattr(manifests, "parse_modelserving", counting)
    one, two = unique_name(), unique_name()
    text = json.dumps(manifest(one)) + "\n---\n" + yaml.safe_dump(manifest(two))
    records = manifests.apply(operator, manifest=text, reason="parse once", source="api")
    assert [r.name for r in records] == [one, two]
    assert sorted(parsed_names) == sorted([one, two])
