"""The remote CLI's half of the websocket delta format (``rolloutui_cli.stream.apply_delta``): it
rebuilds what the server's producer (``controller.runtime.delta.make_delta``) encoded, on the golden
fixtures the page is tested with and on every pair of their states, through a JSON round trip as on
the wire."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.runtime.delta import make_delta
from rolloutui_cli.stream import apply_delta, socket_url

FIXTURES = sorted((Path(__file__).resolve().parents[1] / "dashboard" / "fixtures" / "deltas").glob("*.json"))


def wire(value):
    return json.loads(json.dumps(value))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_the_cli_applies_each_golden_delta_to_the_expected_state(path):
    case = json.loads(path.read_text())
    assert apply_delta(case["base"], case["delta"]) == case["expected"]


def test_the_cli_rebuilds_every_state_from_the_producers_delta_between_any_two_fixture_states():
    states = [s for p in FIXTURES for s in (json.loads(p.read_text())["base"], json.loads(p.read_text())["expected"])]
    assert len(states) >= 10
    for old in states:
        for new in states:
            assert apply_delta(old, wire(make_delta(old, new))) == new


def test_the_base_state_is_left_as_it_was():
    case = json.loads(FIXTURES[0].read_text())
    before = json.dumps(case["base"], sort_keys=True)
    apply_delta(case["base"], case["delta"])
    assert json.dumps(case["base"], sort_keys=True) == before


def test_an_unknown_list_is_refused_by_name():
    with pytest.raises(ValueError, match="'pods'"):
        apply_delta({"time": 1}, {"lists": {"pods": {}}, "time": 2})


def test_the_socket_url_follows_the_servers_scheme_and_path():
    assert (
        socket_url("http://localhost:8000", "default", "chat") == "ws://localhost:8000/ws/modelservings/default/chat/"
    )
    assert socket_url("https://r.example/ui/", "a b", "c") == "wss://r.example/ui/ws/modelservings/a%20b/c/"
