"""Controls of KServe InferenceServices, declared once in the action registry: the API, the
CLI and the page description reach the same service, which patches what a KServe user would patch
(the InferenceService, or its Deployments' spec.paused), needs operate permission in the namespace
and leaves an audit record with the spec before and after (the page's history diffs)."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from controller.runtime.kserve import passes as kserve_passes
from controller.simcluster.database.store import DatabaseCluster
from controller.simcluster.database.tick import tick
from controller.simcluster.kserve import controller as kserve_controller
from rolloutui.models import AuditRecord
from rolloutui.services import actions

pytestmark = pytest.mark.django_db

BASE = "/api/inferenceservices/default/llm/"


class Clock:
    def __init__(self):
        self.t = 1_000_000.0

    def now(self):
        return self.t


def make_cluster(mode: str | None = None) -> DatabaseCluster:
    from tests.live.helpers import config
    from tests.live.test_live_kserve import STANDARD, manifest

    cluster = DatabaseCluster(Clock(), actor="operator", config=config())
    cluster.add_node(8)
    cluster.create_object(kserve_controller.config_map(STANDARD))
    cluster.create_object(manifest(replicas=4, mode=mode))
    settle(cluster)
    return cluster


def settle(cluster: DatabaseCluster, seconds: int = 60, *, each=None) -> None:
    """``seconds`` ticks of the simulated cluster, each followed, as the live app's tick is, by the
    next step of any promote or rollback handed over in steps."""
    for _ in range(seconds):
        cluster.clock.t += 1
        tick(cluster)
        kserve_passes.advance_handovers(cluster=cluster)
        if each is not None:
            each()


@pytest.fixture
def standard(db):
    return make_cluster()


@pytest.fixture
def serverless(db):
    return make_cluster("Serverless")


def post(client, action, body):
    return client.post(BASE + action, body, content_type="application/json")


def spec(cluster):
    return cluster.get_object("InferenceService", "default", "llm")["spec"]


def test_every_inferenceservice_action_is_routed_under_the_inferenceservice_and_has_a_cli_subcommand():
    from rolloutui.management.commands.rollout import Command

    parser = Command().create_parser("manage.py", "rollout")
    subparsers = next(a for a in parser._actions if a.dest == "command")
    declared = list(actions.all_actions(target=actions.INFERENCESERVICE))
    assert [a.name for a in declared] == [
        "isvc-set-image",
        "isvc-canary",
        "isvc-promote",
        "isvc-rollback",
        "isvc-pause",
        "isvc-resume",
    ]
    for action in declared:
        assert action.name in subparsers.choices
        assert action.permission == "rolloutui.operate_modelserving"


def test_a_standard_mode_canary_gets_its_weight_once_ready_and_promotion_makes_it_the_predictor(
    operator_client, standard
):
    resp = post(operator_client, "isvc-canary", {"percent": 25, "image": "engine:v2", "reason": "try v2"})
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["audit"]["action"] == "isvc_canary" and body["audit"]["result"] == "ok"
    assert (body["audit"]["fromRevision"], body["audit"]["toRevision"]) == ("1", "2")  # generations
    (entry,) = spec(standard)["canary"]
    assert entry["trafficPercent"] == 25 and entry["predictor"]["model"]["image"] == "engine:v2"
    settle(standard)
    state = operator_client.get(BASE).json()
    assert state["canary"]["canaries"][0]["ready"] is True
    assert sorted(t["percent"] for t in state["traffic"]) == [25, 75]
    assert state["controls"]["isvc_promote"] is None and state["controls"]["isvc_rollback"] is None

    resp = post(operator_client, "isvc-promote", {"reason": "v2 is good"})
    assert resp.status_code == 200, resp.content
    # First step: the canary asks for the predictor's 4 replicas and the stable share.
    (entry,) = spec(standard)["canary"]
    assert (entry["predictor"]["minReplicas"], entry["trafficPercent"]) == (4, 100)
    state = operator_client.get(BASE).json()
    assert [(s["step"], s["state"]) for s in state["handover"]["steps"]] == [("scale", "active"), ("switch", "pending")]
    assert state["controls"]["isvc_promote"] == "the promote of canary canary is in progress already (step scale)"
    ready_counts = []

    def count_ready():
        ready_counts.append(
            sum(
                1
                for i in operator_client.get(BASE).json()["instances"]
                if i["state"] == "Ready" and i["component"] in ("predictor", "canary:canary")
            )
        )

    settle(standard, each=count_ready)
    assert min(ready_counts) >= 3  # 4 replicas - maxUnavailable 25% (1)
    after = spec(standard)
    assert "canary" not in after and after["predictor"]["model"]["image"] == "engine:v2"
    assert after["predictor"]["minReplicas"] == 4  # the stable predictor's replicas stay
    state = operator_client.get(BASE).json()
    assert state["converged"] and state["canary"] is None
    assert state["controls"]["isvc_promote"] == "there is no canary (spec.canary is empty)"


def test_rolling_back_a_standard_mode_canary_removes_its_entry(operator_client, standard):
    assert post(operator_client, "isvc-canary", {"percent": 10, "image": "engine:v2", "reason": "r"}).status_code == 200
    resp = post(operator_client, "isvc-rollback", {"reason": "errors"})
    assert resp.status_code == 200, resp.content
    assert "canary" not in spec(standard) and spec(standard)["predictor"]["model"]["image"] == "engine:v1"


def test_a_serverless_canary_is_a_traffic_percent_promoted_by_removing_it_and_rolled_back_with_zero(
    operator_client, serverless
):
    resp = post(operator_client, "isvc-canary", {"percent": 20, "image": "engine:v2", "reason": "try v2"})
    assert resp.status_code == 200, resp.content
    assert spec(serverless)["predictor"]["canaryTrafficPercent"] == 20
    settle(serverless)
    state = operator_client.get(BASE).json()
    assert state["canary"]["canaryTrafficPercent"] == 20
    assert sorted(t["percent"] for t in state["traffic"]) == [20, 80]
    assert post(operator_client, "isvc-rollback", {"reason": "bad"}).status_code == 200
    assert spec(serverless)["predictor"]["canaryTrafficPercent"] == 0
    assert post(operator_client, "isvc-promote", {"reason": "fixed"}).status_code == 200
    assert "canaryTrafficPercent" not in spec(serverless)["predictor"]
    settle(serverless)
    state = operator_client.get(BASE).json()
    assert [t["percent"] for t in state["traffic"]] == [100]


def test_pause_is_refused_in_serverless_mode_with_the_reason_and_the_page_shows_it_disabled(
    operator_client, serverless
):
    state = operator_client.get(BASE).json()
    assert state["controls"]["isvc_pause"].startswith("pause applies to Standard mode only")
    resp = post(operator_client, "isvc-pause", {"reason": "hold"})
    assert resp.status_code == 400 and "Standard mode only" in str(resp.json())
    record = AuditRecord.objects.latest("id")
    assert (record.action, record.result) == ("isvc_pause", "error")


def test_pause_and_resume_patch_the_deployments_in_standard_mode(operator_client, standard):
    assert post(operator_client, "isvc-pause", {"reason": "hold"}).status_code == 200
    deployments = standard.list_objects("Deployment", "default", owner="llm")
    assert deployments and all(d["spec"].get("paused") for d in deployments)
    settle(standard, 3)
    assert operator_client.get("/api/inferenceservices/").json()[0]["phase"] == "Paused"
    assert operator_client.get(BASE).json()["controls"]["isvc_pause"] == "every Deployment is paused already"
    assert post(operator_client, "isvc-resume", {"reason": "go"}).status_code == 200
    assert not any(d["spec"].get("paused") for d in standard.list_objects("Deployment", "default", owner="llm"))


def test_set_image_starts_a_rollout_and_the_history_shows_the_spec_diff(operator_client, standard):
    resp = post(operator_client, "isvc-set-image", {"image": "engine:v3", "reason": "upgrade"})
    assert resp.status_code == 200, resp.content
    (change,) = operator_client.get(BASE + "history/").json()
    assert change["action"] == "isvc_set_image" and change["reason"] == "upgrade"
    assert change["specDiff"] == {"predictor": {"model": {"image": "engine:v3"}}}
    assert (change["fromGeneration"], change["toGeneration"]) == ("1", "2")
    annotations = standard.get_object("InferenceService", "default", "llm")["metadata"]["annotations"]
    assert "upgrade" in annotations["serving.rolloutui.io/change-cause"]


@pytest.mark.parametrize(
    "action, body, field, words",
    [
        ("isvc-canary", {"percent": 101, "image": "x:v2"}, "percent", "percent must be 100 or less"),
        ("isvc-canary", {"percent": 10}, "image", "a Standard-mode canary runs a new image"),
        ("isvc-set-image", {"image": "x:v2", "component": "explainer"}, "component", "no component 'explainer'"),
        ("isvc-promote", {}, "detail", "there is no canary"),
        ("isvc-set-image", {"image": "x:v2", "colour": "red"}, "colour", "unknown field"),
    ],
)
def test_bad_input_is_refused_naming_the_field(operator_client, standard, action, body, field, words):
    resp = post(operator_client, action, {**body, "reason": "r"})
    assert resp.status_code == 400, resp.content
    assert words in str(resp.json()[field])


def test_a_viewer_is_refused_by_the_api_and_the_cli_and_both_refusals_are_audited(viewer, viewer_client, standard):
    resp = post(viewer_client, "isvc-canary", {"percent": 10, "image": "engine:v2", "reason": "r"})
    assert resp.status_code == 403 and "rolloutui.operate_modelserving" in resp.json()["detail"]
    with pytest.raises(CommandError, match="permission denied"):
        call_command("rollout", "isvc-promote", "default/llm", "--reason", "r", "--user", "viewer")
    api, cli = AuditRecord.objects.filter(action__startswith="isvc_").order_by("id")
    assert (api.action, api.source, api.result, api.actor) == ("isvc_canary", "api", "error", viewer)
    assert (cli.action, cli.source, cli.result) == ("isvc_promote", "cli", "error")
    assert "canary" not in spec(standard)


def test_anonymous_requests_get_401(standard):
    from django.test import Client

    for action in actions.all_actions(target=actions.INFERENCESERVICE):
        assert Client().post(BASE + action.name, {"reason": "r"}, content_type="application/json").status_code == 401


def test_the_cli_starts_and_promotes_a_canary_audited_with_source_cli(operator, standard):
    out = io.StringIO()
    call_command(
        "rollout",
        "isvc-canary",
        "default/llm",
        "--percent",
        "30",
        "--image",
        "engine:v2",
        "--reason",
        "from the shell",
        "--user",
        "operator",
        stdout=out,
    )
    assert "isvc-canary default/llm: ok (generation 1 -> 2; audit #" in out.getvalue()
    assert spec(standard)["canary"][0]["trafficPercent"] == 30
    settle(standard)
    call_command("rollout", "isvc-promote", "default/llm", "--reason", "good", "--user", "operator", stdout=out)
    settle(standard)
    assert spec(standard)["predictor"]["model"]["image"] == "engine:v2"
    records = AuditRecord.objects.filter(action__startswith="isvc_").order_by("id")
    assert [(r.action, r.source, r.result, r.actor_name) for r in records] == [
        ("isvc_canary", "cli", "ok", "operator"),
        ("isvc_promote", "cli", "ok", "operator"),
    ]
    assert records[0].details["specAfter"]["canary"][0]["predictor"]["model"]["image"] == "engine:v2"


def test_the_page_description_of_an_inferenceservice_lists_only_its_actions_with_urls(operator):
    description = actions.page_description(
        operator, api_base=BASE, targets=(actions.INFERENCESERVICE,), namespace="default"
    )
    assert [a["name"] for a in description["actions"]][:2] == ["isvc-set-image", "isvc-canary"]
    assert all(a["url"] == BASE + a["name"] and a["allowed"] for a in description["actions"])


def test_the_lists_show_a_viewer_only_the_namespaces_they_may_view(db, django_user_model, standard):
    from django.test import Client

    from rolloutui.models import NamespaceGrant

    user = django_user_model.objects.create_user("outsider", password="pw")
    NamespaceGrant.objects.create(user=user, namespace="elsewhere", role="viewer")
    client = Client()
    client.force_login(user)
    assert client.get("/api/inferenceservices/").json() == []
    assert client.get("/api/workloads/?kind=InferenceService").json() == []


def test_operate_is_checked_in_the_inferenceservices_namespace(db, django_user_model, standard):
    from django.test import Client

    from rolloutui.models import NamespaceGrant

    elsewhere = django_user_model.objects.create_user("elsewhere-operator", password="pw")
    NamespaceGrant.objects.create(user=elsewhere, namespace="other", role="operator")
    NamespaceGrant.objects.create(user=elsewhere, namespace="default", role="viewer")
    client = Client()
    client.force_login(elsewhere)
    resp = post(client, "isvc-pause", {"reason": "r"})
    assert resp.status_code == 403
    record = AuditRecord.objects.filter(action="isvc_pause").latest("id")
    assert (record.result, record.actor, record.namespace) == ("error", elsewhere, "default")
    assert client.get(BASE).json()["name"] == "llm"  # viewing is allowed

    stranger = django_user_model.objects.create_user("stranger", password="pw")
    NamespaceGrant.objects.create(user=stranger, namespace="other", role="operator")
    client.force_login(stranger)
    # Neither the state, the history nor the page say whether it exists to someone who may not view it.
    assert client.get(BASE).status_code == 404
    assert client.get(BASE + "history/").status_code == 404
    assert client.get("/inferenceservices/default/llm/").status_code == 404
    assert post(client, "isvc-pause", {"reason": "r"}).status_code == 404
