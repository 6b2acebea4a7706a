"""The steps of a Standard-mode canary's promote and rollback (``controller.core.kserve.handover``):
what each step patches, when the next one is due, and what a handover in progress refuses."""

from __future__ import annotations

import pytest

from controller.core.controls import ControlError
from controller.core.kserve import handover
from controller.core.kserve.materialize import deployments
from controller.core.kserve.spec import parse_inferenceservice
from controller.core.mergepatch import merge_patch

from .test_kserve_controls import STANDARD, V2
from .test_kserve_strategy import MODEL, isvc


def running(predictor, *, ready=True, canary_extra=None):
    """An InferenceService with canary v2 at 25%, as KServe reports it once it reconciled."""
    manifest = isvc(
        predictor, canary=[{"predictor": {"name": "v2", **V2, **(canary_extra or {})}, "trafficPercent": 25}]
    )
    manifest["metadata"]["generation"] = 2
    manifest["status"] = {"observedGeneration": 2, "canaryStatuses": [{"name": "v2", "ready": ready}]}
    return manifest


def applied(manifest, patch):
    """The manifest after ``patch``, as KServe would have observed it."""
    out = merge_patch(manifest, patch)
    out["metadata"]["generation"] = manifest["metadata"]["generation"] + 1
    out["status"] = {**out["status"], "observedGeneration": out["metadata"]["generation"]}
    return out


def deployment(name, available):
    return {"metadata": {"name": name}, "spec": {"replicas": available}, "status": {"availableReplicas": available}}


def test_a_promote_first_asks_the_canary_for_the_full_count_and_the_stable_share_then_switches():
    manifest = running({**MODEL, "minReplicas": 4})
    step1 = applied(manifest, handover.begin_promote(manifest, STANDARD))
    (entry,) = step1["spec"]["canary"]
    assert (entry["predictor"]["minReplicas"], entry["trafficPercent"]) == (4, 100)
    plans = {d.name: d.replicas for d in deployments(parse_inferenceservice(step1, STANDARD), STANDARD)}
    assert plans["llm-v2-predictor"] == 4
    # Waits while the canary has fewer than 4 pods available, or KServe does not report it Ready.
    assert handover.advance(step1, [deployment("llm-v2-predictor", 3)], STANDARD) == (None, None)
    not_ready = {**step1, "status": {**step1["status"], "canaryStatuses": [{"name": "v2", "ready": False}]}}
    assert handover.advance(not_ready, [deployment("llm-v2-predictor", 4)], STANDARD) == (None, None)
    patch, step = handover.advance(step1, [deployment("llm-v2-predictor", 4)], STANDARD)
    done = merge_patch(step1, patch)
    assert step == "switch" and done["spec"]["predictor"]["name"] == "v2"
    assert done["spec"]["predictor"]["minReplicas"] == 4 and "canary" not in done["spec"]
    assert handover.ANNOTATION not in done["metadata"].get("annotations", {})


@pytest.mark.parametrize(
    ("predictor", "restored"),
    [
        ({**MODEL, "minReplicas": 4}, {"minReplicas": 4}),
        ({**MODEL, "minReplicas": 4, "maxReplicas": 4}, {"minReplicas": 4, "maxReplicas": 4}),
    ],
    ids=["min only", "max raised and restored"],
)
def test_a_rollback_of_a_ready_canary_gives_the_stable_predictor_its_count_back_before_removing_it(predictor, restored):
    manifest = running(predictor)
    step1 = applied(manifest, handover.begin_rollback(manifest, STANDARD))
    # KServe's stable count is minReplicas minus the Ready canary's 1: 5 - 1 = 4.
    assert step1["spec"]["predictor"]["minReplicas"] == 5
    assert step1["spec"]["canary"][0]["predictor"]["minReplicas"] == 1  # pinned: its share would grow with 5
    plans = {
        d.name: d.replicas
        for d in deployments(parse_inferenceservice(step1, STANDARD), STANDARD, ready_canaries=frozenset({"v2"}))
    }
    assert plans == {"llm-predictor": 4, "llm-v2-predictor": 1}
    assert handover.advance(step1, [deployment("llm-predictor", 3)], STANDARD) == (None, None)
    patch, step = handover.advance(step1, [deployment("llm-predictor", 4)], STANDARD)
    done = merge_patch(step1, patch)
    assert step == "remove" and "canary" not in done["spec"]
    assert {k: done["spec"]["predictor"].get(k) for k in restored} == restored


def test_rolling_back_a_canary_that_is_not_ready_removes_it_at_once():
    manifest = running({**MODEL, "minReplicas": 4}, ready=False)
    assert handover.begin_rollback(manifest, STANDARD) == {"spec": {"canary": None}}


@pytest.mark.parametrize(
    ("first", "second", "refusal"),
    [
        ("promote", "promote", "the promote of canary v2 is in progress already (step scale)"),
        ("rollback", "rollback", "the rollback of canary v2 is in progress already (step scale)"),
        ("rollback", "promote", "the rollback of canary v2 is in progress (step scale); roll it back or wait"),
        ("promote", "rollback", None),  # the way out of a promote that cannot finish
    ],
)
def test_a_handover_in_progress_refuses_another_one_but_a_promote_can_be_rolled_back(first, second, refusal):
    begin = {"promote": handover.begin_promote, "rollback": handover.begin_rollback}
    manifest = running({**MODEL, "minReplicas": 4})
    started = applied(manifest, begin[first](manifest, STANDARD))
    if refusal is None:
        patch = begin[second](started, STANDARD)
        assert handover.read(merge_patch(started, patch)).action == second
    else:
        with pytest.raises(ControlError, match=refusal.replace("(", r"\(").replace(")", r"\)")):
            begin[second](started, STANDARD)


def test_a_handover_whose_canary_was_removed_by_hand_ends_without_touching_the_spec():
    manifest = running({**MODEL, "minReplicas": 4})
    started = applied(manifest, handover.begin_promote(manifest, STANDARD))
    removed = applied(started, {"spec": {"canary": None}})
    patch, step = handover.advance(removed, [], STANDARD)
    assert step == "ended" and patch == {"metadata": {"annotations": {handover.ANNOTATION: None}}}
