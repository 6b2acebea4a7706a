"""The action registry: every declared control is reachable from the API, the CLI and the page, with
the same arguments, errors, permission and audit, and a new declaration appears in all three."""

from __future__ import annotations

import importlib
import io
import json
import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import clear_url_caches, resolve, reverse

from controller.core.controls import ControlError
from rolloutui.models import AuditRecord
from rolloutui.services import actions, controls

from .helpers import NAMESPACE, manifest, reconcile

pytestmark = pytest.mark.django_db

# A valid request for every declared ModelServing action, in registry order, on a ModelServing with
# partition 2 (each row applies after the previous ones: resume after pause, abort while set-image's
# revision 2 rolls out, rollback to 2 after the abort went back to 1). A new declaration fails the
# tests below until it has its row here. The actions
# on model versions and releases are exercised the same way in tests/releases/test_release_actions.py.
VALID = {
    "pause": {},
    "resume": {},
    "promote": {"partition": 1},
    "set-image": {"role": "decode", "image": "engine:v2"},
    "abort": {},
    "rollback": {"toRevision": 2},
    "scale": {"replicas": 3},
    "autoscale": {"maxReplicas": 4},
    # The advisor's control: an advice (ADVICE: computed for the ModelServing as it then is, one
    # candidate) applied: its change alone (the rollout is paused after abort: no candidate finishes).
    "apply-advice": {"advice": "ADVICE", "keepStrategy": True},
    "delete": {},
    # A collection action: recreates the ModelServing the row above deleted (NAME is replaced).
    "apply": {"manifest": "NAME"},
}


def valid(action, ms) -> dict:
    values = dict(VALID[action.name])
    if values.get("manifest") == "NAME":
        values["manifest"] = json.dumps(manifest(ms["name"], partition=2))
    if values.get("advice") == "ADVICE":
        import uuid

        from django.contrib.auth import get_user_model

        from rolloutui.services import advisor

        user = get_user_model().objects.filter(username="operator").first()
        change = {"role": "decode", "image": "engine:v3"}
        # Without an operator the request is refused before the advice is read: any id does.
        values["advice"] = (
            advisor.advise_for(user, ms["namespace"], ms["name"], set_image=change, limit=1, source="api")["id"]
            if user is not None
            else str(uuid.uuid4())
        )
    return values


def every_action():
    return list(actions.all_actions(target=actions.MODELSERVING))


def url(ms, action_name):
    if actions.get(action_name).scope == actions.COLLECTION:
        return f"/api/modelservings/{action_name}"
    return f"/api/modelservings/{ms['namespace']}/{ms['name']}/{action_name}"


def post(client, path, body):
    return client.post(path, body, content_type="application/json")


def cli(action, ms, values, *, reason="from the shell", user="operator", tmp_path=None):
    """``manage.py rollout`` with the flags the declaration generates for ``values``."""
    flags = []
    for arg in action.args:
        value = values.get(arg.name)
        if arg.from_file and value is not None:
            path = tmp_path / "manifest.yaml"
            path.write_text(value)
            flags += ["-f", str(path)]
        elif value is True:
            flags.append(arg.flag)
        elif value not in (None, False):
            flags += [arg.flag, str(value)]
    out = io.StringIO()
    target = [f"{ms['namespace']}/{ms['name']}"] if action.scope == actions.OBJECT else []
    call_command("rollout", action.name, *target, "--reason", reason, "--user", user, *flags, stdout=out)
    return out.getvalue()


def page_actions(client, ms) -> dict:
    html = client.get(f"/modelservings/{ms['namespace']}/{ms['name']}/").content.decode()
    found = re.search(r'<script id="rollout-actions" type="application/json">(.*?)</script>', html, re.S)
    assert found, "the detail page carries no rollout-actions JSON"
    return json.loads(found.group(1))


def reload_urls():
    import rolloutui.api.urls
    import rolloutui.urls

    importlib.reload(rolloutui.api.urls)
    importlib.reload(rolloutui.urls)
    clear_url_caches()


# --- Reachable from every entry point ------------------------------------------------------------------
def test_every_declared_action_has_a_sample_request_in_this_file():
    assert [a.name for a in every_action()] == list(VALID)


def test_every_action_runs_through_the_api_and_audits_under_its_declared_name(operator_client, ms_partitioned):
    ms = ms_partitioned
    for action in every_action():
        resp = post(operator_client, url(ms, action.name), {**valid(action, ms), "reason": f"api {action.name}"})
        assert resp.status_code == 200, (action.name, resp.content)
        body = resp.json()
        if action.scope == actions.COLLECTION:
            (record,) = body["audit"]
            assert record["action"] == action.audit and record["source"] == "api" and record["name"] == ms["name"]
            assert record["reason"] == f"api {action.name}"
        else:
            assert body["audit"]["action"] == action.audit and body["audit"]["source"] == "api"
            assert body["audit"]["reason"] == f"api {action.name}"
            assert action.name == "delete" or body["state"]["name"] == ms["name"]
        reconcile(ms["name"])
    assert AuditRecord.objects.filter(name=ms["name"], result="ok").count() == len(VALID)


def test_every_action_runs_through_the_cli_and_audits_under_its_declared_name(operator, ms_partitioned, tmp_path):
    ms = ms_partitioned
    for action in every_action():
        out = cli(action, ms, valid(action, ms), reason=f"cli {action.name}", tmp_path=tmp_path)
        outcome = "created" if action.scope == actions.COLLECTION else "ok"
        assert f"{action.name} {NAMESPACE}/{ms['name']}: {outcome}" in out, out
        record = AuditRecord.objects.latest("id")
        assert (record.action, record.source, record.result) == (action.audit, "cli", "ok")
        assert record.reason == f"cli {action.name}" and record.actor == operator
        reconcile(ms["name"])


def test_the_page_describes_every_action_with_a_url_that_routes_to_it(operator_client, ms):
    described = page_actions(operator_client, ms)["actions"]
    on_one = [a for a in every_action() if a.scope == actions.OBJECT]
    assert [a["name"] for a in described] == [a.name for a in on_one]
    for entry, action in zip(described, on_one):
        assert entry["url"] == reverse(f"api-{action.name}", kwargs={"namespace": NAMESPACE, "name": ms["name"]})
        match = resolve(entry["url"])
        assert match.func.view_initkwargs["control"] is action
        assert entry["method"] == "POST" and entry["label"] == action.label and entry["audit"] == action.audit
        assert [f["name"] for f in entry["fields"]] == [a.name for a in action.args] + ["reason"]


def test_the_page_says_which_actions_the_signed_in_user_may_run(operator_client, viewer_client, ms):
    for entry in page_actions(operator_client, ms)["actions"]:
        assert entry["allowed"] is True and entry["permission"] == "rolloutui.operate_modelserving"
    for entry in page_actions(viewer_client, ms)["actions"]:
        assert entry["allowed"] is False


def test_the_page_description_carries_labels_fields_exclusions_and_presets(viewer_client, ms):
    by_name = {a["name"]: a for a in page_actions(viewer_client, ms)["actions"]}
    promote = by_name["promote"]
    assert promote["exclusive"] == [["partition", "full"]]
    assert promote["presets"] == [{"key": "promote-full", "label": "Promote fully", "values": {"full": True}}]
    partition = promote["fields"][0]
    assert partition == {
        "name": "partition",
        "type": "integer",
        "label": "Lower the partition to",
        "help": partition["help"],
        "required": False,
        "default": None,
        "min": 0,
        "max": None,
        "maxLength": None,
        "choicesFrom": None,
        "fromFile": False,
    }
    assert by_name["rollback"]["fields"][0]["choicesFrom"] == "revisions" and by_name["rollback"]["tone"] == "danger"
    assert by_name["set-image"]["fields"][0]["choicesFrom"] == "roles"
    reason = by_name["pause"]["fields"][-1]
    assert reason["name"] == "reason" and reason["required"] is True and reason["maxLength"] == 2000


def test_the_page_escapes_the_description_it_embeds(operator_client, ms, monkeypatch):
    sneaky = actions.Action(
        name="sneaky",
        label="</script><script>alert(1)</script>",
        help="<b>bold</b>",
        service=controls.pause,
        audit="pause",
    )
    monkeypatch.setitem(actions.registry._REGISTRY, "sneaky", sneaky)  # on the page only: the routes are not reloaded
    html = operator_client.get(f"/modelservings/{ms['namespace']}/{ms['name']}/").content.decode()
    assert "<script>alert(1)</script>" not in html
    assert page_actions(operator_client, ms)["actions"][-1]["label"] == sneaky.label


# --- A new declaration -------------------------------------------------------------------------------------
RETAG = actions.Action(
    name="retag",
    label="Retag",
    help="Set a role's image (a second declaration of the set-image service).",
    service=controls.set_image,
    audit="set_image",
    args=(
        actions.Arg("role", actions.STRING, "The role.", required=True),
        actions.Arg("image", actions.STRING, "The image.", required=True),
    ),
)


@pytest.fixture
def retag_declared(monkeypatch):
    monkeypatch.setattr(actions.registry, "_REGISTRY", dict(actions.registry._REGISTRY))
    actions.register(RETAG)
    reload_urls()
    yield RETAG
    monkeypatch.undo()
    reload_urls()


def test_a_new_declaration_appears_in_the_api_the_cli_the_page_and_the_schema(retag_declared, operator_client, ms):
    resp = post(operator_client, url(ms, "retag"), {"role": "decode", "image": "engine:v2", "reason": "via api"})
    assert resp.status_code == 200, resp.content
    assert resp.json()["audit"]["action"] == "set_image"
    missing = post(operator_client, url(ms, "retag"), {"role": "decode", "reason": "no image"})
    assert missing.status_code == 400 and missing.json() == {"image": ["image is required: The image."]}

    out = cli(RETAG, ms, {"role": "decode", "image": "engine:v3"}, reason="via cli")
    assert f"retag {NAMESPACE}/{ms['name']}: ok" in out
    with pytest.raises(CommandError, match=r"^image: required for retag \(--image \.\.\.\)$"):
        cli(RETAG, ms, {"role": "decode"})

    assert page_actions(operator_client, ms)["actions"][-1]["name"] == "retag"

    schema = json.loads(operator_client.get("/api/schema/", HTTP_ACCEPT="application/json").content)
    body = schema["paths"]["/api/modelservings/{namespace}/{name}/retag/"]["post"]["requestBody"]
    assert body["content"]["application/json"]["schema"]["$ref"] == "#/components/schemas/RetagRequest"
    assert schema["components"]["schemas"]["RetagRequest"]["required"] == ["image", "reason", "role"]


def test_a_declaration_with_a_stricter_permission_is_refused_everywhere_to_an_operator(
    monkeypatch, operator, operator_client, ms
):
    strict = actions.Action(
        name="freeze",
        label="Freeze",
        help="Pause, for superusers only.",
        service=controls.pause,
        audit="pause",
        permission="auth.delete_user",
    )
    monkeypatch.setattr(actions.registry, "_REGISTRY", dict(actions.registry._REGISTRY))
    actions.register(strict)
    reload_urls()
    try:
        resp = post(operator_client, url(ms, "freeze"), {"reason": "x"})
        assert resp.status_code == 403 and "auth.delete_user" in resp.json()["detail"]
        with pytest.raises(CommandError, match="permission denied: .*auth.delete_user"):
            cli(strict, ms, {})
        # Both refusals are recorded: the API's (before the body is even read) and the CLI's.
        records = AuditRecord.objects.filter(action="pause").order_by("id")
        assert [(r.result, r.source, r.actor_name) for r in records] == [
            ("error", "api", "operator"),
            ("error", "cli", "operator"),
        ]
        entry = page_actions(operator_client, ms)["actions"][-1]
        assert (entry["name"], entry["allowed"], entry["permission"]) == ("freeze", False, "auth.delete_user")
    finally:
        monkeypatch.undo()
        reload_urls()


@pytest.mark.parametrize(
    "declaration, complaint",
    [
        (dict(name="Pause Now"), "lower-case-words"),
        (dict(name="x", args=(actions.Arg("reason", actions.STRING, "h"),)), "not 'reason'"),
        (dict(name="x", exclusive=(("a", "b"),)), "unknown arguments"),
        (dict(name="x", presets=(actions.Preset("p", "P", {"nope": 1}),)), "unknown arguments"),
    ],
    ids=["a name that is not a url segment", "an argument called reason", "an exclusion of unknown args", "a preset"],
)
def test_an_inconsistent_declaration_is_refused_when_it_is_made(declaration, complaint):
    with pytest.raises(ValueError, match=complaint):
        actions.Action(**{"label": "X", "help": "h", "service": controls.pause, "audit": "pause", **declaration})


def test_a_boolean_argument_cannot_be_required_and_an_action_cannot_be_declared_twice():
    with pytest.raises(ValueError, match="switch"):
        actions.Arg("full", actions.BOOLEAN, "h", required=True)
    with pytest.raises(ValueError, match="declared twice"):
        actions.register(actions.PAUSE)


# --- Errors name the field, with the same words in the API and the CLI -------------------------------------
BAD_INPUT = [
    ("an unknown key", "promote", {"partiton": 1}, "partiton", "unknown field (allowed: full, partition, reason)"),
    ("text where a number belongs", "promote", {"partition": "two"}, "partition", "partition must be an integer"),
    ("a negative partition", "promote", {"partition": -1}, "partition", "partition must not be negative"),
    (
        "partition and full together",
        "promote",
        {"partition": 1, "full": True},
        "partition",
        "give either partition or full, not both",
    ),  # noqa: E501
    ("full that is not a boolean", "promote", {"full": "maybe"}, "full", "full must be true or false"),
    (
        "a missing revision",
        "rollback",
        {},
        "toRevision",
        "toRevision is required: Revision number as listed by GET .../revisions/.",
    ),  # noqa: E501
    ("revision zero", "rollback", {"toRevision": 0}, "toRevision", "toRevision must be 1 or more"),
    ("a blank image", "set-image", {"role": "decode", "image": "  "}, "image", "image must not be blank"),
    (
        "an image too long",
        "set-image",
        {"role": "decode", "image": "x" * 1025},
        "image",
        "image must be at most 1024 characters",
    ),  # noqa: E501
]


@pytest.mark.parametrize(
    "action_name, body, field, message", [row[1:] for row in BAD_INPUT], ids=[row[0] for row in BAD_INPUT]
)
def test_bad_input_is_refused_naming_the_field_with_the_same_words_in_the_api_and_the_cli(
    operator_client, ms_partitioned, action_name, body, field, message
):
    resp = post(operator_client, url(ms_partitioned, action_name), {**body, "reason": "r"})
    assert resp.status_code == 400
    assert resp.json() == {field: [message]}
    with pytest.raises(ControlError) as refused:
        actions.get(action_name).clean({**body, "reason": "r"})
    assert (refused.value.field, str(refused.value)) == (field, message)
    # Refused before the service: nothing was attempted (the sign-in of the test client is recorded).
    assert not AuditRecord.objects.exclude(action__in=AuditRecord.ACCOUNT_ACTIONS).exists()


@pytest.mark.parametrize("reason, code", [(None, "required"), ("   ", "blank"), ("x" * 2001, "max_length")])
def test_every_action_refuses_a_missing_blank_or_overlong_reason_naming_it(operator_client, ms, reason, code):
    for action in every_action():
        body = dict(VALID[action.name]) | ({} if reason is None else {"reason": reason})
        resp = post(operator_client, url(ms, action.name), body)
        assert resp.status_code == 400, action.name
        assert resp.json() == {"reason": [actions.REASON.message(code)]}


def test_the_cli_says_which_flag_is_missing_or_wrong(operator, ms_partitioned):
    ms = ms_partitioned
    rollback, promote = actions.get("rollback"), actions.get("promote")
    with pytest.raises(CommandError, match=r"^to-revision: required for rollback \(--to-revision N\)$"):
        cli(rollback, ms, {})
    with pytest.raises(CommandError, match="^partition: give either partition or full, not both$"):
        cli(promote, ms, {"partition": 1, "full": True})
    with pytest.raises(CommandError, match="^partition: partition must not be negative$"):
        cli(promote, ms, {"partition": -1})
    with pytest.raises(CommandError, match="invalid int value"):
        call_command("rollout", "promote", f"{NAMESPACE}/{ms['name']}", "--reason", "r", "--partition", "two")
    with pytest.raises(CommandError, match="^toRevision: revision 9 does not exist"):
        cli(rollback, ms, {"toRevision": 9})
    with pytest.raises(CommandError, match="invalid choice: 'explode'"):
        call_command("rollout", "explode", f"{NAMESPACE}/{ms['name']}", "--reason", "r")


def test_the_cli_has_one_subcommand_per_action_and_one_flag_per_argument():
    from rolloutui.management.commands.rollout import Command

    parser = Command().create_parser("manage.py", "rollout")
    subparsers = next(a for a in parser._actions if a.dest == "command")
    reading = ["list", "get", "status", "history", "diff", "audit", "preview", "advise"]
    assert list(subparsers.choices) == reading + [a.name for a in actions.all_actions()]
    for action in every_action():
        flags = {o for a in subparsers.choices[action.name]._actions for o in a.option_strings}
        assert {arg.flag for arg in action.args} | {"--reason", "--user"} <= flags, action.name


# --- Permissions --------------------------------------------------------------------------------------------
def test_anonymous_requests_to_every_action_get_401(ms):
    for action in every_action():
        resp = post(Client(), url(ms, action.name), {**valid(action, ms), "reason": "r"})
        assert resp.status_code == 401, action.name
        assert resp.headers["WWW-Authenticate"] == "Token"


def test_a_viewer_is_refused_every_action_by_the_api_and_the_cli_and_both_attempts_are_audited(
    viewer, viewer_client, ms, tmp_path
):
    for action in every_action():
        resp = post(viewer_client, url(ms, action.name), {**valid(action, ms), "reason": "r"})
        assert resp.status_code == 403 and "rolloutui.operate_modelserving" in resp.json()["detail"], action.name
        with pytest.raises(CommandError, match="permission denied"):
            cli(action, ms, valid(action, ms), user="viewer", tmp_path=tmp_path)
        api_record, cli_record = AuditRecord.objects.order_by("-id")[:2][::-1]
        for record, source in ((api_record, "api"), (cli_record, "cli")):
            assert (record.action, record.result, record.actor, record.source) == (
                action.audit,
                "error",
                viewer,
                source,
            )
            assert "ControlDenied" in record.error
    # Each refusal is recorded once per entry point (and the test client's sign-in once).
    assert AuditRecord.objects.exclude(action__in=AuditRecord.ACCOUNT_ACTIONS).count() == 2 * len(VALID)


# --- Schema ---------------------------------------------------------------------------------------------------
def test_the_schema_documents_every_action_with_its_body_and_its_answer(operator_client):
    schema = json.loads(operator_client.get("/api/schema/", HTTP_ACCEPT="application/json").content)
    components = schema["components"]["schemas"]
    for action in every_action():
        path = (
            f"/api/modelservings/{action.name}"
            if action.scope == actions.COLLECTION
            else f"/api/modelservings/{{namespace}}/{{name}}/{action.name}/"
        )
        operation = schema["paths"][path]["post"]
        ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        body = components[ref.rsplit("/", 1)[1]]
        assert list(body["properties"]) == [f.name for f in action.fields], action.name
        assert sorted(body.get("required", [])) == sorted(f.name for f in action.fields if f.required)
        assert operation["summary"] == action.label and operation["description"] == action.help
        answer = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        assert answer.endswith("/CollectionResult" if action.scope == actions.COLLECTION else "/ActionResult")
        assert {"400", "401", "403"} <= set(operation["responses"])
