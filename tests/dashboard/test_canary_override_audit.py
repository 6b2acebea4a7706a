"""Operators decide after the analysis (the traffic contract's "Evidence before progress"): a
resume or promote that lifts a pause the canary analysis set is audited as overriding it, with the
analysis' words; an operator's own pause lifted is audited as before."""

from __future__ import annotations

import pytest

from rolloutui.models import AuditRecord
from rolloutui.services.cluster import get_cluster

pytestmark = pytest.mark.django_db

SHORTFALL = "3 windows with 4-12 canary requests, fewer than minRequests 20"


def url(ms, suffix=""):
    return f"/api/modelservings/{ms['namespace']}/{ms['name']}/{suffix}"


def paused_by(ms, canary: dict) -> None:
    """The ModelServing paused, with ``canary`` as its status.canary (what the analysis wrote)."""
    cluster = get_cluster()
    cluster.patch_modelserving(ms["namespace"], ms["name"], {"spec": {"paused": True}})
    obj = cluster.get_modelserving(ms["namespace"], ms["name"])
    status = {**(obj.get("status") or {}), "canary": canary}
    cluster.replace_modelserving_status(
        ms["namespace"], ms["name"], status, resource_version=obj["metadata"]["resourceVersion"]
    )


def last_audit(ms) -> AuditRecord:
    return AuditRecord.objects.filter(name=ms["name"]).order_by("-id").first()


@pytest.mark.parametrize(
    ("canary", "condition", "message"),
    [
        (
            {
                "revision": "r2",
                "stable": "r1",
                "phase": "Paused",
                "analysisPause": {"reason": "AnalysisInconclusive", "message": SHORTFALL},
            },
            "AnalysisInconclusive",
            SHORTFALL,
        ),
        (
            {
                "revision": "r2",
                "stable": "r1",
                "phase": "Failed",
                "onFailure": "Pause",
                "message": "canary error rate 30.0% is above the limit 5.0%",
            },
            "AnalysisFailed",
            "canary error rate 30.0% is above the limit 5.0%",
        ),
    ],
    ids=["a resume after an inconclusive pause", "a resume after a failed analysis paused the rollout"],
)
def test_lifting_a_pause_the_analysis_set_is_audited_as_overriding_it(operator_client, ms, canary, condition, message):
    paused_by(ms, canary)
    resp = operator_client.post(
        url(ms, "resume"), {"reason": "the traffic is low tonight"}, content_type="application/json"
    )
    assert resp.status_code == 200, resp.content
    record = last_audit(ms)
    assert record.action == "resume" and record.details["overridesAnalysis"] == {
        "condition": condition,
        "message": message,
    }


def test_resuming_an_operator_s_own_pause_overrides_nothing(operator_client, ms):
    paused_by(ms, {"revision": "r2", "stable": "r1", "phase": "Paused"})
    resp = operator_client.post(url(ms, "resume"), {"reason": "done looking"}, content_type="application/json")
    assert resp.status_code == 200, resp.content
    assert "overridesAnalysis" not in last_audit(ms).details
