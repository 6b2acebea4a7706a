"""Publish ids (controller/runtime/publish.py): the hub applies a delta only to the state whose id
the delta names, so ids must not repeat across processes, including processes of different pods
that have the same pid."""

from __future__ import annotations

import pytest

from controller.runtime import publish
from rolloutui.consumers import _publisher_of


def _ids(monkeypatch, pid: int, n: int = 2) -> list[str]:
    monkeypatch.setattr(publish.os, "getpid", lambda: pid)
    return [publish._delta_fields(f"ms.test.{pid}", {"time": float(i)})["id"] for i in range(n)]


def _same_pid_in_two_pods(monkeypatch) -> tuple[list[str], list[str]]:
    first = _ids(monkeypatch, 7)
    # Another pod: the same pid, this module freshly imported there.
    monkeypatch.setitem(publish._process, "pid", None)
    return first, _ids(monkeypatch, 7)


def _fork(monkeypatch) -> tuple[list[str], list[str]]:
    return _ids(monkeypatch, 100), _ids(monkeypatch, 101)


@pytest.mark.parametrize(
    "sentence, pair, same_publisher",
    [
        ("two publishes of one process name the same publisher", lambda m: (_ids(m, 5, 1), _ids(m, 5, 1)), True),
        ("a forked child (another pid) is another publisher", _fork, False),
        ("the same pid in two pods gives two publishers", _same_pid_in_two_pods, False),
    ],
)
def test_publish_ids(monkeypatch, sentence, pair, same_publisher):
    monkeypatch.setattr(publish, "_last", type(publish._last)())
    monkeypatch.setitem(publish._process, "pid", None)
    a, b = pair(monkeypatch)
    assert len(set(a + b)) == len(a + b), sentence
    assert (_publisher_of(a[0]) == _publisher_of(b[0])) is same_publisher, (sentence, a, b)
