"""The remote CLI builds one verb per action from the registry document the server publishes
(``GET /api/actions/``), and has a read verb for every read of the API: checked here without a
server (the live run is tests/dashboard/test_remote_cli_live.py)."""

from __future__ import annotations

import io
import os
import stat

import pytest
from django.urls import URLPattern, URLResolver

from rolloutui.api import urls as api_urls
from rolloutui.api import views
from rolloutui.services import actions
from rolloutui_cli import commands, config, output
from rolloutui_cli.client import ApiError

# A registry document as the server sends it, small enough to read: one ModelServing action with an
# integer, a switch and an exclusive pair, and one collection action reading a file.
DOCUMENT = {
    "version": "test",
    "actions": [
        {
            "name": "promote",
            "help": "Lower the partition.",
            "scope": "object",
            "path": "/api/modelservings/{namespace}/{name}/promote",
            "target": {
                "kind": "modelserving",
                "label": "ModelServing",
                "keys": ["namespace", "name"],
                "metavar": "NAMESPACE/NAME",
                "cli": r"(?P<namespace>[^/\s]+)/(?P<name>[^/\s]+)",
            },
            "exclusive": [["partition", "full"]],
            "args": [
                {"name": "partition", "type": "integer", "help": "To this value.", "flag": "--partition"},
                {"name": "full", "type": "boolean", "help": "Partition 0.", "flag": "--full"},
                {"name": "reason", "type": "string", "help": "Why.", "flag": "--reason", "required": True},
            ],
        },
        {
            "name": "apply",
            "help": "Create or update from a manifest.",
            "scope": "collection",
            "path": "/api/modelservings/apply",
            "target": {"kind": "modelserving", "label": "ModelServing", "keys": [], "metavar": "", "cli": ""},
            "exclusive": [],
            "args": [
                {"name": "manifest", "type": "string", "help": "YAML.", "flag": "--filename", "fromFile": True},
                {"name": "reason", "type": "string", "help": "Why.", "flag": "--reason", "required": True},
            ],
        },
    ],
}


def request_of(argv: list[str], files: dict[str, str] | None = None):
    options = vars(commands.build_parser(DOCUMENT).parse_args(argv))
    return commands.action_request(options["action"], options, lambda path: (files or {})[path])


@pytest.mark.parametrize(
    ("argv", "path", "body"),
    [
        (
            ["promote", "default/demo", "--reason", "ok"],
            "/api/modelservings/default/demo/promote",
            {"reason": "ok"},
        ),
        (
            ["promote", "default/demo", "--partition", "2", "--reason", "ok"],
            "/api/modelservings/default/demo/promote",
            {"partition": 2, "reason": "ok"},
        ),
        (
            ["promote", "team-a/chat.v2", "--full", "--reason", "ok"],
            "/api/modelservings/team-a/chat.v2/promote",
            {"full": True, "reason": "ok"},
        ),
        (
            ["apply", "-f", "ms.yaml", "--reason", "new"],
            "/api/modelservings/apply",
            {"manifest": "kind: ModelServing", "reason": "new"},
        ),
    ],
)
def test_a_verb_built_from_the_registry_document_posts_the_declared_body_to_the_declared_path(argv, path, body):
    got_path, got_body, _ = request_of(argv, {"ms.yaml": "kind: ModelServing"})
    assert (got_path, got_body) == (path, body)


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["promote", "default/demo"], "the following arguments are required: --reason"),
        (["promote", "default/demo", "--partition", "two", "--reason", "x"], "--partition: invalid int value"),
        (["promote", "default/demo", "--partition", "1", "--full", "--reason", "x"], "not allowed with argument"),
        (["promote", "--reason", "x"], "the following arguments are required: NAMESPACE/NAME"),
    ],
)
def test_the_command_line_is_refused_naming_the_flag_before_anything_is_sent(argv, complaint, capsys):
    with pytest.raises(SystemExit) as leaving:
        commands.build_parser(DOCUMENT).parse_args(argv)
    assert leaving.value.code == 2
    assert complaint in capsys.readouterr().err


def test_a_target_that_is_not_namespace_slash_name_is_refused_naming_the_target():
    with pytest.raises(commands.UsageError, match=r"^target: expected NAMESPACE/NAME, got 'demo'$"):
        request_of(["promote", "demo", "--reason", "x"])


def test_without_a_registry_the_cli_still_has_its_reads_and_login_but_no_controls():
    verbs = subcommands(commands.build_parser(None))
    assert {"login", "get", "status", "capacity", "comparison", "pods"} <= verbs
    assert "promote" not in verbs


def subcommands(parser) -> set[str]:
    (sub,) = [a for a in parser._actions if a.dest == "verb"]
    return set(sub.choices)


# --- Every control and read of the API has its verb ----------------------------------------------------

# Routes of the API with no CLI verb, and why. A new route fails the test below until it has a verb
# (in rolloutui_cli.commands.READS, or as an action of the registry) or a line here.
NO_VERB = {
    "api-actions": "the registry document itself: the CLI reads it to build its control verbs",
    "api-token": "POST is `rolloutui login`, DELETE is `rolloutui logout`",
    "api-tokens": "revoking every token of a user is an account matter, done once in a while with curl",
    "api-ingest-tokens": "ingest tokens are issued by an administrator (manage.py ingest_token)",
    "api-ingest-token": "ingest tokens are issued by an administrator (manage.py ingest_token)",
    "api-request-records": "written by the inference gateway's exporter, not by people (POST only)",
    "api-manifest-validate": "apply validates the same text and says which field is wrong",
    "api-sim-kill-pod": "fault injection of the simulated cluster: a demo tool of the dashboard",
    "api-sim-fail-node": "fault injection of the simulated cluster: a demo tool of the dashboard",
    "api-sim-add-node": "fault injection of the simulated cluster: a demo tool of the dashboard",
}
# Creating release records (not controls of the registry): GET has a verb, POST is done with manage.py
# release or the Releases page.
CREATE_ONLY_BY_OTHER_MEANS = {"api-model-versions", "api-environments", "api-deployment-revisions"}


def api_routes():
    for pattern in api_urls.urlpatterns:
        assert not isinstance(pattern, URLResolver), "a nested urlconf: walk it too"
        assert isinstance(pattern, URLPattern)
        yield pattern.name, pattern.callback.view_class


def test_every_action_of_the_registry_has_a_verb_of_the_remote_cli():
    verbs = subcommands(commands.build_parser(actions.registry_document()))
    missing = [a.name for a in actions.all_actions() if a.name not in verbs]
    assert missing == []


def test_no_read_verb_hides_an_action_of_the_registry():
    own = set(commands.READS_BY_VERB) | set(commands.OWN_VERBS)
    assert own.isdisjoint(a.name for a in actions.all_actions())


def test_every_read_of_the_api_has_a_read_verb_or_a_stated_reason():
    covered = {route for read in commands.READS for route in read.routes}
    readable = {name for name, view in api_routes() if hasattr(view, "get")}
    assert sorted(readable - covered - set(NO_VERB)) == []


def test_every_write_of_the_api_is_an_action_verb_or_has_a_stated_reason():
    writes = {
        name
        for name, view in api_routes()
        if any(hasattr(view, m) for m in ("post", "put", "patch", "delete"))
        and not issubclass(view, (views.Control, views.CollectionControl))
    }
    # Simulations change nothing: the previews and the advisor (reads that POST).
    simulations = {
        route for read in commands.READS if read.verb.endswith("preview") or read.post for route in read.routes
    }
    assert sorted(writes - set(NO_VERB) - CREATE_ONLY_BY_OTHER_MEANS - simulations) == []


def test_a_new_declaration_appears_in_the_remote_cli_with_no_change_to_the_cli(monkeypatch):
    monkeypatch.setattr(actions.registry, "_REGISTRY", dict(actions.registry._REGISTRY))
    actions.register(
        actions.Action(
            name="retag",
            label="Retag",
            help="Set a role's image.",
            service=lambda *a, **k: None,
            audit="set_image",
            args=(actions.Arg("image", actions.STRING, "The image.", required=True),),
        )
    )
    document = actions.registry_document()
    options = vars(
        commands.build_parser(document).parse_args(["retag", "default/demo", "--image", "v2", "--reason", "r"])
    )
    path, body, _ = commands.action_request(options["action"], options, io.StringIO)
    assert (path, body) == ("/api/modelservings/default/demo/retag", {"image": "v2", "reason": "r"})


def test_the_registry_version_changes_when_a_declaration_does(monkeypatch):
    before = actions.registry_document()["version"]
    monkeypatch.setattr(
        actions.registry, "_REGISTRY", {k: v for k, v in actions.registry._REGISTRY.items() if k != "pause"}
    )
    assert actions.registry_document()["version"] != before


# --- The server's side -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_registry_document_is_served_to_a_viewer_and_revalidated_with_its_etag(viewer_client):
    first = viewer_client.get("/api/actions/")
    assert first.status_code == 200
    assert first.json() == actions.registry_document()
    # RFC 9110 section 13.1.2: If-None-Match with the current entity tag -> 304 Not Modified.
    again = viewer_client.get("/api/actions/", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304


@pytest.mark.django_db
def test_the_registry_document_needs_a_signed_in_user():
    from django.test import Client

    assert Client().get("/api/actions/").status_code == 401


# --- The config file ---------------------------------------------------------------------------------


def test_login_stores_the_token_readable_by_its_owner_only_even_with_a_permissive_umask(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    old = os.umask(0)
    try:
        path = config.save("http://server", "secret-token", "alice")
        config.save("http://server", "second-token", "alice")  # rewritten, still private
    finally:
        os.umask(old)
    assert path == tmp_path / "rolloutui" / "config.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert config.load() == {"server": "http://server", "token": "second-token", "username": "alice"}


@pytest.mark.parametrize(("text", "seconds"), [("90", 90), ("90s", 90), ("10m", 600), ("1h", 3600), ("500ms", 0.5)])
def test_durations_are_read_as_kubectl_reads_its_timeout(text, seconds):
    assert commands.parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("body", "lines"),
    [
        ({"toRevision": ["revision 9 does not exist"]}, ["toRevision: revision 9 does not exist"]),
        ({"detail": "You need the operate permission."}, ["You need the operate permission."]),
        (
            {"manifest": ["not YAML"], "reason": ["reason is required"]},
            ["manifest: not YAML", "reason: reason is required"],
        ),
    ],
)
def test_an_api_error_is_shown_one_line_per_field_it_names(body, lines):
    assert ApiError(400, "HTTP 400", body).lines() == lines


def test_yaml_output_prints_the_answer_unchanged():
    import yaml

    answer = {"namespace": "default", "roles": [{"name": "decode", "replicas": 2}]}
    assert yaml.safe_load(output.dump(answer, "yaml")) == answer


def test_a_control_without_a_server_says_how_to_name_one(tmp_path, monkeypatch, capsys):
    from rolloutui_cli import main

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("ROLLOUTUI_SERVER", raising=False)
    assert main.run(["pause", "default/demo", "--reason", "hold"]) == 2
    assert capsys.readouterr().err.startswith("error: server: give --server URL")


def test_a_control_answer_with_advice_prints_each_warning_under_its_result(capsys):
    from rolloutui_cli import main

    class Answering:
        def post(self, path, body):
            details = {"warnings": ["spec.traffic.path: the roles of the request path prefill -> decode differ"]}
            return {"audit": {"id": 7, "who": "ops", "result": "ok", "details": details}}

    options = vars(commands.build_parser(DOCUMENT).parse_args(["promote", "default/demo", "--reason", "ok"]))
    assert main.do_action(Answering(), options["action"], options) == 0
    assert capsys.readouterr().out.splitlines() == [
        "promote default/demo: ok (audit #7, by ops)",
        "  warning: spec.traffic.path: the roles of the request path prefill -> decode differ",
    ]
