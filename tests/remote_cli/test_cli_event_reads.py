"""The remote CLI's reads of the Events feed and of a pod's events and log: what each command line
asks the API."""

from __future__ import annotations

import pytest

from rolloutui_cli import commands


def request_of(argv: list[str]):
    options = vars(commands.build_parser(None).parse_args(argv))
    return commands.read_request(commands.READS_BY_VERB[argv[0]], options)


@pytest.mark.parametrize(
    ("argv", "path", "query"),
    [
        (
            ["events", "-n", "team-a", "--who", "alice", "--type", "audit", "--limit", "20"],
            "/api/events/",
            {"namespace": "team-a", "who": "alice", "type": "audit", "limit": 20},
        ),
        (
            ["events", "--workload", "default/chat", "--since", "1700000000.5"],
            "/api/events/",
            {"workload": "default/chat", "since": 1700000000.5},
        ),
        (["pod-events", "default/chat-0-decode-0-0"], "/api/pods/default/chat-0-decode-0-0/events/", {}),
        (
            ["pod-log", "default/chat-0-decode-0-0", "--tail", "50"],
            "/api/pods/default/chat-0-decode-0-0/log/",
            {"tail": 50},
        ),
    ],
)
def test_an_events_or_pod_read_asks_the_declared_path_with_its_filters(argv, path, query):
    got_path, got_query = request_of(argv)
    assert got_path == path
    assert {k: v for k, v in got_query.items() if v is not None} == query


def test_a_pod_read_needs_namespace_slash_pod_and_a_whole_tail(capsys):
    with pytest.raises(commands.UsageError, match="target: expected NAMESPACE/POD, got 'chat-0-decode-0-0'"):
        request_of(["pod-log", "chat-0-decode-0-0"])
    with pytest.raises(SystemExit):
        request_of(["pod-log", "default/chat-0", "--tail", "lots"])
    assert "--tail: invalid int value" in capsys.readouterr().err
