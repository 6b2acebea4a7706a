"""The remote CLI's advise verb: the request it sends, its polling of the job and what it prints."""

from __future__ import annotations

import json

from rolloutui.services import actions
from rolloutui_cli import commands, main

ADVICE = {
    "id": "a1",
    "floor": {"groups": 3, "why": "the current strategy's floor"},
    "candidates": [
        {"strategy": {"maxUnavailable": 1, "maxSurge": 0}, "current": True, "durationSeconds": 126.0,
         "minAvailable": 3, "gpusBorrowed": 0, "feasible": True, "why": "done in 2 min"},
    ],
    "recommended": 0,
    "summary": "The current strategy is already the fastest safe one.",
}  # fmt: skip


class FakeServer:
    """Answers the advise POST with a queued job, then the job running, then done."""

    def __init__(self):
        self.sent: list[tuple[str, str, dict | None]] = []
        self.polls = [{"id": "a1", "status": "running", "progress": {"done": 1, "total": 3}}]

    def post(self, path, body):
        self.sent.append(("POST", path, body))
        return {"id": "a1", "url": "/api/previews/a1/", "status": "queued"}

    def get(self, path, **query):
        self.sent.append(("GET", path, None))
        return self.polls.pop(0) if self.polls else {"id": "a1", "status": "done", "result": ADVICE}


def test_advise_posts_the_change_and_bounds_polls_the_job_and_prints_the_advice_as_json(monkeypatch, capsys):
    monkeypatch.setattr(main.time, "sleep", lambda s: None)
    parser = commands.build_parser(actions.registry_document())
    argv = [
        "advise",
        "default/demo",
        "--role",
        "decode",
        "--image",
        "vllm/vllm-openai:v0.9.2",
        "--floor",
        "2",
        "--json",
    ]
    o = vars(parser.parse_args(argv))
    path, _ = commands.read_request(o["read"], o)
    server = FakeServer()
    assert main.do_advise(server, path, o) == 0
    assert server.sent[0] == (
        "POST",
        "/api/modelservings/default/demo/advise/",
        {"setImage": {"role": "decode", "image": "vllm/vllm-openai:v0.9.2"}, "floor": 2},
    )
    assert [s[1] for s in server.sent[1:]] == ["/api/previews/a1/", "/api/previews/a1/"]
    assert json.loads(capsys.readouterr().out) == ADVICE
