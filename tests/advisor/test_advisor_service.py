"""The advisor on the demo with real previews: the advice, its reproducibility, the API, the CLI and
applying it (one audited action)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from rolloutui.models import AuditRecord
from rolloutui.services import advisor, cluster

pytestmark = pytest.mark.django_db

CHANGE = {"role": "decode", "image": "vllm/vllm-openai:v0.9.2"}
MS = "/api/modelservings/default/demo/"


def _without_timing(advice: dict) -> dict:
    return {k: v for k, v in advice.items() if k not in ("elapsedSeconds", "id")}


def test_the_demo_advice_lists_the_current_strategy_and_recommends_the_fastest_feasible_candidate(demo):
    advice = advisor.advise("default", "demo", set_image=CHANGE)
    rows = advice["candidates"]
    assert len(rows) >= 3 and rows[0]["current"] and sum(r["current"] for r in rows) == 1
    assert rows[0]["strategy"] == {"type": "ServingGroupRollingUpdate", "maxUnavailable": 1, "maxSurge": 0}
    assert advice["floor"]["groups"] == 3 and "current strategy" in advice["floor"]["why"]
    assert "safe concurrency" in advice["floor"]["why"]  # the load sets no floor here, and it says why
    rec = rows[advice["recommended"]]
    assert rec["feasible"] and rec["minAvailable"] >= 3
    assert all(rec["durationSeconds"] <= r["durationSeconds"] for r in rows if r["feasible"])
    # Infeasible candidates say why in words; the demo has 20 GPUs free for a 6-GPU group.
    assert any(r["why"] == "surge 4 needs 24 GPUs, 20 free (not simulated)" for r in rows)
    assert any("below the floor of 3" in r["why"] for r in rows if not r["feasible"])


def test_the_same_input_gives_the_same_advice(demo):
    first = advisor.advise("default", "demo", set_image=CHANGE)
    again = advisor.advise("default", "demo", set_image=CHANGE)
    assert _without_timing(first) == _without_timing(again)


def test_a_lower_floor_lets_a_faster_strategy_win_and_the_page_sentence_compares_it_with_the_current(demo):
    advice = advisor.advise("default", "demo", set_image=CHANGE, floor=2)
    rows = advice["candidates"]
    rec = rows[advice["recommended"]]
    assert not rec["current"] and rec["durationSeconds"] < rows[0]["durationSeconds"]
    assert "x faster than the current strategy" in advice["summary"] and "never below" in advice["summary"]


def test_the_cli_prints_the_advice_as_json_and_stores_it_for_apply_advice(demo, operator):
    out = io.StringIO()
    call_command(
        "rollout", "advise", "default/demo", "--role", "decode", "--image", CHANGE["image"], "--json",
        "--user", "operator", stdout=out,
    )  # fmt: skip
    advice = json.loads(out.getvalue())
    assert set(advice) >= {"floor", "candidates", "recommended", "id"}
    assert set(advice["floor"]) == {"groups", "why"}
    for row in advice["candidates"]:
        assert {"strategy", "current", "durationSeconds", "minAvailable", "gpusBorrowed", "feasible", "why"} <= set(row)
    assert advice["candidates"][advice["recommended"]]["feasible"]

    call_command(
        "rollout", "apply-advice", "default/demo", "--advice", advice["id"], "--reason", "advised",
        "--user", "operator", stdout=io.StringIO(),
    )  # fmt: skip
    record = AuditRecord.objects.filter(action="apply_advice").latest("id")
    assert (
        record.result == "ok"
        and record.details["advice"]["strategy"] == (advice["candidates"][advice["recommended"]]["strategy"])
    )
    ms = cluster.get_cluster().get_modelserving("default", "demo")
    decode = next(r for r in ms["spec"]["template"]["roles"] if r["name"] == "decode")
    assert decode["entryTemplate"]["spec"]["containers"][0]["image"] == CHANGE["image"]


def test_a_viewer_may_not_advise_nor_apply_and_both_refusals_are_audited(demo, viewer_client):
    resp = viewer_client.post(MS + "advise/", {"setImage": CHANGE}, content_type="application/json")
    assert resp.status_code == 403
    assert AuditRecord.objects.filter(action="advise", result="error").exists()
    resp = viewer_client.post(
        MS + "apply-advice", {"advice": "00000000-0000-0000-0000-000000000000", "reason": "r"},
        content_type="application/json",
    )  # fmt: skip
    assert resp.status_code == 403
    assert AuditRecord.objects.filter(action="apply_advice", result="error").exists()


def test_the_api_runs_the_advice_as_a_job_and_applies_a_chosen_candidate_with_the_change_in_one_action(
    demo, operator_client, celery_eager, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        resp = operator_client.post(MS + "advise/", {"setImage": CHANGE, "floor": 2}, content_type="application/json")
    assert resp.status_code == 202, resp.content
    job = operator_client.get(resp.json()["url"]).json()
    assert job["status"] == "done", job
    advice = job["result"]
    chosen = advice["recommended"]
    assert not advice["candidates"][chosen]["current"]
    bad = operator_client.post(
        MS + "apply-advice", {"advice": advice["id"], "candidate": 99, "reason": "r"}, content_type="application/json"
    )
    assert bad.status_code == 400 and "candidate" in bad.json()
    before = AuditRecord.objects.count()
    done = operator_client.post(
        MS + "apply-advice", {"advice": advice["id"], "reason": "fastest safe"}, content_type="application/json"
    )
    assert done.status_code == 200, done.content
    assert AuditRecord.objects.count() == before + 1  # one action: the change and the strategy
    ms = cluster.get_cluster().get_modelserving("default", "demo")
    strategy = advice["candidates"][chosen]["strategy"]
    written = ms["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]
    assert (written["maxUnavailable"], written["maxSurge"]) == (strategy["maxUnavailable"], strategy["maxSurge"])
    # The ModelServing changed since the advice: applying it again is refused, naming the field.
    again = operator_client.post(
        MS + "apply-advice", {"advice": advice["id"], "reason": "again"}, content_type="application/json"
    )
    assert again.status_code == 400 and "advise again" in again.json()["advice"][0]


def test_an_advice_is_published_to_the_preview_workers_queue(
    demo, operator, monkeypatch, django_capture_on_commit_callbacks
):
    from rolloutui.celery import app

    published = []
    monkeypatch.setattr(
        app.amqp, "send_task_message", lambda producer, name, message, **options: published.append((name, options))
    )
    with django_capture_on_commit_callbacks(execute=True):
        advisor.start(operator, "default", "demo", set_image=CHANGE, source="api")
    ((name, options),) = published
    assert name == "rolloutui.tasks.run_advice" and options["queue"].name == "preview"


def test_the_load_floor_is_what_the_offered_load_needs_at_the_safe_concurrency(monkeypatch):
    from rolloutui.services import capacity

    signals = {
        "traffic": {"durationSeconds": [2.0, 20.0]},
        "roles": [
            {"name": "prefill", "perGroup": 1, "requestRate": 2.0, "safeConcurrency": 16},  # 22 at once: 2 groups
            {"name": "decode", "perGroup": 2, "requestRate": 4.0, "safeConcurrency": 8},  # 44: 7 instances, 4 groups
        ],
    }
    monkeypatch.setattr(capacity, "capacity", lambda namespace, name: signals)
    groups, why = advisor._load_floor("default", "demo")
    assert groups == 4
    assert why.startswith("capacity signals: decode is offered 44.0 requests at once (4 req/s x 11 s)")
    signals["roles"] = [{"name": "decode", "perGroup": 2, "requestRate": 4.0, "safeConcurrency": None}]
    assert advisor._load_floor("default", "demo")[0] is None


def test_a_coordinated_role_level_rollout_gets_role_budgets_and_max_skew_candidates_from_real_previews(demo):
    from controller.runtime.reconciler import run_reconcile
    from controller.simcluster.database.tick import tick
    from tests.factories import modelserving, role

    from .conftest import ready

    pd = modelserving(
        name="pd",
        replicas=2,
        strategy={"type": "RoleRollingUpdate", "roleRollingUpdateConfiguration": {"coordination": {"maxSkew": "50%"}}},
        roles=[
            role("prefill", replicas=2, gpus=1, maxUnavailable=1),
            role("decode", replicas=2, gpus=1, maxUnavailable=1),
        ],
    )
    cluster.get_cluster().create_modelserving(pd)
    for _ in range(300):
        demo.t += 1
        tick(cluster.get_cluster())
        run_reconcile("default", "pd")
        if ready("default", "pd"):
            break
    assert ready("default", "pd")
    advice = advisor.advise("default", "pd", set_image={"role": "decode", "image": "engine:v2"}, limit=6)
    rows = advice["candidates"]
    assert rows[0]["current"] and rows[0]["strategy"]["maxSkew"] == "50%"
    assert rows[0]["strategy"]["roles"] == {
        "decode": {"maxUnavailable": 1, "maxSurge": 0},
        "prefill": {"maxUnavailable": 1, "maxSurge": 0},
    }
    # Every group spends its own budget: 1 of 2 decodes and 1 of 2 prefills serve in each: 1 of 2 groups' worth.
    assert advice["floor"]["groups"] == 1 and "groups' worth" in advice["floor"]["why"]
    assert all(r["minAvailable"] >= 1 for r in rows if r["feasible"])
    assert len([r for r in rows if r["simulated"]]) >= 2
    assert {r["strategy"].get("maxSkew") for r in rows[1:]} & {"25%", "100%"}
    rec = rows[advice["recommended"]]
    assert rec["feasible"] and all(rec["durationSeconds"] <= r["durationSeconds"] for r in rows if r["feasible"])
