"""The manifest surface, hardened (issue 24, part A): what the YAML edit page shows a viewer, the
one bounded YAML reader every user-supplied text goes through (the editor's validate, apply, the
CLI, scenarios and release files), validate's answers for namespaces the user cannot view, the
empty namespace, and the PromQL a manifest may make the controller run."""

from __future__ import annotations

import io
import json
import re
import time

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from rolloutui.models import AuditRecord, NamespaceGrant
from rolloutui.services import cluster, manifests

from .helpers import NAMESPACE, create_modelserving, manifest, unique_name

pytestmark = pytest.mark.django_db

VALIDATE = "/api/manifests/validate"
APPLY = "/api/modelservings/apply"
SECRETS = ("hf_live_secret", "pw-in-url", "sk-flag-secret")


def post(client, path, body):
    return client.post(path, json.dumps(body), content_type="application/json")


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def editor_boot(html: str) -> dict:
    found = re.search(r'<script id="editor-boot" type="application/json">(.*?)</script>', html, re.DOTALL)
    assert found, "the page carries the editor's boot data"
    return json.loads(found.group(1))


@pytest.fixture
def ms_with_secrets(db):
    """A ModelServing whose containers hold a token, a URL with a password and a secret flag."""
    name = unique_name("sec")
    create_modelserving(name)
    c = cluster.get_cluster()
    roles = c.get_modelserving(NAMESPACE, name)["spec"]["template"]["roles"]
    for role in roles:
        engine = role["entryTemplate"]["spec"]["containers"][0]
        engine["env"] = [
            {"name": "HF_TOKEN", "value": "hf_live_secret"},
            {"name": "CACHE", "value": "redis://:pw-in-url@redis:6379/0"},
        ]
        engine["args"] = ["--api-key=sk-flag-secret", "--port=8000"]
    c.patch_modelserving(NAMESPACE, name, {"spec": {"template": {"roles": roles}}})
    return {"namespace": NAMESPACE, "name": name}


# --- 1. The edit page ------------------------------------------------------------------------------------------
def test_a_viewer_never_reads_an_env_secret_on_the_edit_page_and_sees_the_text_masked_and_read_only(
    viewer_client, ms_with_secrets
):
    page = viewer_client.get(f"/modelservings/{NAMESPACE}/{ms_with_secrets['name']}/edit/")
    assert page.status_code == 200
    html = page.content.decode()
    for secret in SECRETS:
        assert secret not in html, secret
    boot = editor_boot(html)
    assert boot["readOnly"] is True
    text = boot["text"]
    assert "value: <masked>" in text and "redis://:<masked>@redis" in text and "--api-key=<masked>" in text
    assert 'data-testid="editor-masked"' in html and "cannot be applied as it is" in html


def test_an_operator_edits_the_whole_stored_text_on_the_edit_page(operator_client, ms_with_secrets):
    html = operator_client.get(f"/modelservings/{NAMESPACE}/{ms_with_secrets['name']}/edit/").content.decode()
    boot = editor_boot(html)
    assert boot["readOnly"] is False
    assert all(secret in boot["text"] for secret in SECRETS)
    assert 'data-testid="editor-masked"' not in html


def test_an_operator_elsewhere_who_only_views_this_namespace_gets_the_masked_read_only_page(
    django_user_model, ms_with_secrets
):
    bob = django_user_model.objects.create_user("bob", password="pw-123456789")
    NamespaceGrant.objects.create(user=bob, namespace=NAMESPACE, role="viewer")
    NamespaceGrant.objects.create(user=bob, namespace="team-b", role="operator")
    boot = editor_boot(
        signed_in(bob).get(f"/modelservings/{NAMESPACE}/{ms_with_secrets['name']}/edit/").content.decode()
    )
    assert boot["readOnly"] is True and not any(secret in boot["text"] for secret in SECRETS)


# --- 2. One bounded YAML reader --------------------------------------------------------------------------------
def billion_laughs(levels: int = 9, width: int = 9) -> str:
    """The classic alias bomb (Kubernetes' CVE-2019-11253 was this document in a ConfigMap): each
    level a list of ``width`` aliases of the level before, ``width ** levels`` values once expanded."""
    lines = [f"a0: &a0 [{', '.join(['lol'] * width)}]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


MS_HEAD = "apiVersion: serving.rolloutui.io/v1alpha1\nkind: ModelServing\n"

HOSTILE = [
    # (text, words the answer's message holds, the path it names)
    pytest.param(billion_laughs(), "aliases", "", id="an alias bomb is refused before it is expanded"),
    pytest.param("a: &a [*a]\n", "alias", "a[0]", id="an alias inside the node it names is refused"),
    pytest.param(
        "a: !!python/object/apply:os.system ['true']\n",
        "!!python/object/apply:os.system",
        "a",
        id="a python tag is refused naming the tag",
    ),
    pytest.param("a: !vault secret\n", "!vault", "a", id="a local tag is refused"),
    pytest.param("a: !!binary aGk=\n", "!!binary", "a", id="a tag outside the core schema is refused"),
    pytest.param("a: !!bool maybe\n", "!!bool", "a", id="a value its core tag cannot hold is refused"),
    pytest.param("a: " + "9" * 5000 + "\n", "cannot be read", "a", id="an integer of thousands of digits is refused"),
    pytest.param("a: !!float ''\n", "!!float", "a", id="an empty value under a number tag is refused"),
    pytest.param(
        MS_HEAD + "metadata:\n  name: one\n  name: two\n",
        "metadata.name",
        "metadata.name",
        id="a duplicate key is refused with its path",
    ),
    pytest.param("? [a, b]\n: c\n", "plain value", "", id="a key that is a list is refused"),
    pytest.param("---\na: 1\n" * 101, "100 documents", "", id="more than a hundred documents are refused"),
    pytest.param("a: " + "x" * 200_000 + "\n", "longer than", "a", id="a huge value is refused"),
    pytest.param("a: " + "[" * 100 + "]" * 100 + "\n", "deeper than 64", "", id="deep nesting is refused"),
]


@pytest.mark.parametrize("text, words, path", HOSTILE)
def test_a_hostile_text_is_a_400_naming_the_problem_within_milliseconds_on_validate_and_apply(
    viewer_client, operator_client, text, words, path
):
    for client, url, body in (
        (viewer_client, VALIDATE, {"manifest": text}),
        (operator_client, APPLY, {"manifest": text, "reason": "hostile"}),
    ):
        post(client, url, {"manifest": "a: 1\n", "reason": "warm"})  # the first request loads the URL map
        # CPU time of this process: the work the text caused, whatever else the machine runs.
        started = time.process_time()
        resp = post(client, url, body)
        took = time.process_time() - started
        assert resp.status_code == 400, (url, resp.status_code, resp.content[:300])
        answer = resp.json()
        assert words in answer["manifest"][0], answer
        assert answer["errors"][0]["path"] == path, answer
        assert took < 0.25, f"{url} took {took:.3f} s of CPU"


def test_a_duplicate_key_is_named_at_its_line_as_kubernetes_strict_decoding_does(operator):
    text = MS_HEAD + "metadata:\n  name: one\n  namespace: default\n  name: two\n"
    with pytest.raises(manifests.ManifestError) as err:
        manifests.parse_documents(text)
    (error,) = err.value.errors
    assert (error["path"], error["line"]) == ("metadata.name", 6)
    assert "already set at line 4" in error["message"]


def test_anchors_within_the_budget_still_read_as_kubernetes_reads_them(operator):
    name = unique_name()
    body = manifest(name)
    env = [{"name": "LOG_LEVEL", "value": "info"}]
    for role in body["spec"]["template"]["roles"]:
        role["entryTemplate"]["spec"]["containers"][0]["env"] = env
    text = yaml.safe_dump(body, sort_keys=False)  # the shared list is written once with an anchor
    assert "&id001" in text and "*id001" in text
    (record,) = manifests.apply(operator, manifest=text, reason="anchors", source="api")
    stored = cluster.get_cluster().get_modelserving(NAMESPACE, name)
    assert record.details["outcome"] == "created"
    assert all(r["entryTemplate"]["spec"]["containers"][0]["env"] == env for r in stored["spec"]["template"]["roles"])


def test_a_date_looking_value_stays_text_as_in_kubernetes_json(operator):
    name = unique_name()
    text = yaml.safe_dump(manifest(name), sort_keys=False).replace(
        f"name: {name}\n", f"name: {name}\n  annotations:\n    team/since: 2024-01-31\n", 1
    )
    manifests.apply(operator, manifest=text, reason="a date", source="api")
    stored = cluster.get_cluster().get_modelserving(NAMESPACE, name)
    assert stored["metadata"]["annotations"]["team/since"] == "2024-01-31"


def test_the_cli_the_scenario_reader_and_the_release_files_refuse_the_same_alias_bomb(operator, tmp_path):
    from controller.simcluster.scenario import ScenarioError, load_scenario

    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(billion_laughs())
    started = time.process_time()
    lines = manifests.load_path(str(bomb), operator, reason="cli")
    assert len(lines) == 1 and "aliases" in lines[0]
    with pytest.raises(ScenarioError, match="aliases"):
        load_scenario(bomb)
    with pytest.raises(CommandError, match="aliases"):
        call_command("release", "register", str(bomb), "--user", "operator", stdout=io.StringIO())
    assert time.process_time() - started < 1.0


def test_validate_is_rate_limited_per_user(viewer_client, operator_client, settings):
    from rest_framework.throttling import ScopedRateThrottle

    rates_before = ScopedRateThrottle.THROTTLE_RATES
    ScopedRateThrottle.THROTTLE_RATES = {**rates_before, "validate": "2/min"}
    try:
        codes = [post(viewer_client, VALIDATE, {"manifest": "a: 1\n"}).status_code for _ in range(3)]
        assert codes == [200, 200, 429]
        # Another user has a count of their own.
        assert post(operator_client, VALIDATE, {"manifest": "a: 1\n"}).status_code == 200
    finally:
        ScopedRateThrottle.THROTTLE_RATES = rates_before


def test_the_validate_rate_comes_from_its_setting():
    from django.conf import settings

    assert settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["validate"] == "60/min"


# --- 4. No existence oracle ------------------------------------------------------------------------------------
def test_validate_answers_the_same_for_a_namespace_the_user_cannot_view_whether_or_not_the_object_exists(
    django_user_model, ms
):
    carol = django_user_model.objects.create_user("carol", password="pw-123456789")
    NamespaceGrant.objects.create(user=carol, namespace="team-a", role="viewer")
    client = signed_in(carol)

    def checked(name):
        resp = post(client, VALIDATE, {"manifest": yaml.safe_dump(manifest(name))})
        assert resp.status_code == 200
        return json.loads(json.dumps(resp.json()).replace(name, "NAME"))

    existing, absent = checked(ms["name"]), checked(unique_name("absent"))
    assert existing == absent
    assert existing["documents"][0]["exists"] is None
    # Where the user may view, the editor still says whether it creates or updates.
    NamespaceGrant.objects.create(user=carol, namespace=NAMESPACE, role="viewer")
    seen = post(client, VALIDATE, {"manifest": yaml.safe_dump(manifest(ms["name"]))}).json()
    assert seen["documents"][0]["exists"] is True


# --- 5. The empty namespace ------------------------------------------------------------------------------------
@pytest.mark.parametrize("written", ["", None], ids=["empty", "null"])
def test_a_manifest_with_an_empty_namespace_is_stored_in_default_and_stays_manageable_as_kubectl_does(
    operator, written
):
    name = unique_name()
    body = manifest(name)
    body["metadata"]["namespace"] = written
    text = yaml.safe_dump(body)
    assert manifests.validate(text)["documents"][0]["namespace"] == "default"
    (record,) = manifests.apply(operator, manifest=text, reason="no namespace", source="api")
    assert (record.namespace, record.name) == ("default", name)
    stored = cluster.get_cluster().get_modelserving("default", name)
    assert stored["metadata"]["namespace"] == "default"
    manifests.delete(operator, "default", name, reason="gone", source="api")
    assert AuditRecord.objects.filter(action="delete", namespace="default", name=name, result="ok").exists()


# --- 6. PromQL only from the installation's templates ----------------------------------------------------------
ALLOWED = {
    "router-requests": 'sum(increase(router_requests_total{ns="{{namespace}}",revision="{{revision}}"}[{{window}}]))',
    "router-error-rate": 'sum(rate(router_errors_total{revision="{{revision}}"}[{{window}}]))',
}
QUERIES = "spec.rolloutStrategy.canary.analysis.queries"


def canary_manifest(name: str, queries: dict) -> dict:
    body = manifest(name)
    body["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"].pop("partition", None)
    body["spec"]["rolloutStrategy"]["canary"] = {
        "steps": [{"setPartition": "50%"}, {"pause": {}}],
        "analysis": {"provider": "prometheus", "queries": queries, "metrics": [{"metric": "errorRate", "max": 0.05}]},
    }
    return body


PROMQL = [
    pytest.param(
        {"requests": "router-requests", "errorRate": "router-error-rate"},
        None,
        id="templates named by key are accepted",
    ),
    pytest.param(
        {"requests": ALLOWED["router-requests"], "errorRate": "router-error-rate"},
        None,
        id="the text of an allowed template is accepted",
    ),
    pytest.param(
        {
            "requests": "router-requests",
            "errorRate": 'sum(rate(secrets_total{namespace="kube-system"}[5m])) + 0*{{revision}}',
        },
        f"{QUERIES}.errorRate",
        id="a raw query outside the allowed set is refused naming its metric",
    ),
    pytest.param(
        {"requests": "router-requests", "errorRate": "no-such-template"},
        f"{QUERIES}.errorRate",
        id="an unknown template is refused naming its metric",
    ),
]


@pytest.mark.parametrize("queries, refused_at", PROMQL)
def test_a_manifest_runs_only_the_promql_templates_the_installation_allows(operator, settings, queries, refused_at):
    settings.ROLLOUTUI_PROMETHEUS_TEMPLATES = ALLOWED
    text = yaml.safe_dump(canary_manifest(unique_name(), queries))
    errors = manifests.validate(text)["errors"]
    if refused_at is None:
        assert errors == []
        manifests.apply(operator, manifest=text, reason="canary", source="api")
        return
    assert [e["path"] for e in errors] == [refused_at]
    assert "router-error-rate" in errors[0]["message"]  # the message lists what is allowed
    with pytest.raises(manifests.ManifestError):
        manifests.apply(operator, manifest=text, reason="canary", source="api")
