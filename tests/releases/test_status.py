"""The release status machine judged from state views (table of sentences), in the shape the
controller reports serving gates (``gate``, ``gateFailed``, ``gateWaiting``, ``servingRevisions``)
and in the older shape without them; and the runtime's post-reconcile hooks."""

from __future__ import annotations

import logging

import pytest

from controller.runtime import hooks
from rolloutui.services.releases.status import judge

NEW, OLD = "newhash", "oldhash"


def inst(group, revision=NEW, *, gate="Serving", failed=None, role="decode", reason=None, state="Ready"):
    return {
        "group": group,
        "role": role,
        "ordinal": 0,
        "revision": revision,
        "state": state,
        "gate": gate,
        "gateFailed": failed,
        "gateTimes": {},
        "gateWaiting": {"gate": failed, "since": 10.0, "reason": reason} if failed else None,
    }


def view(instances, *, update=NEW, current=NEW, converged=True, phase="Healthy", generation=3, **extra):
    serving: dict[str, dict[str, int]] = {}
    for i in instances:
        tally = serving.setdefault(i["revision"], {"instances": 0, "serving": 0, "failed": 0})
        tally["instances"] += 1
        tally["serving"] += i["gate"] == "Serving" and not i["gateFailed"]
        tally["failed"] += bool(i["gateFailed"])
    return {
        "generation": generation,
        "updateRevision": update,
        "currentRevision": current,
        "converged": converged,
        "phase": phase,
        "instances": instances,
        "servingRevisions": serving,
        "revisions": [{"number": 1, "hash": OLD}, {"number": 2, "hash": NEW}, {"number": 3, "hash": "otherhash"}],
        "conditions": [],
        "waiting": [],
        **extra,
    }


CASES = [
    (
        "every instance of the release at gate Serving after convergence makes it Serving",
        view([inst(0), inst(1)]),
        ("Serving", "all 2 instances passed every gate"),
    ),
    (
        "an instance still at Routed keeps it Deploying",
        view([inst(0), inst(1, gate="Routed")], converged=False),
        None,
    ),
    (
        "Ready is not Serving: a converged rollout with an instance short of Serving keeps it Deploying",
        view([inst(0), inst(1, gate="Verified")]),
        None,
    ),
    (
        "an instance of the old revision left keeps it Deploying",
        view([inst(0), inst(1, OLD)], current=OLD, converged=False),
        None,
    ),
    (
        "an instance of the release that failed a gate makes it Failed, naming the instance, the gate and why",
        view([inst(0, failed="Loaded", gate="Started", reason="CrashLoopBackOff"), inst(1, OLD)], converged=False),
        ("Failed", "group 0 decode-0 failed at gate Loaded: CrashLoopBackOff"),
    ),
    (
        "a failed verification makes it Failed at gate Verified",
        view([inst(0, failed="Verified", gate="Routed", reason="HTTP 500 from /v1/health")], converged=False),
        ("Failed", "group 0 decode-0 failed at gate Verified: HTTP 500 from /v1/health"),
    ),
    (
        "a failed instance of the old revision is not the release's failure",
        view([inst(0), inst(1, OLD, failed="Started", gate="Scheduled")], converged=False),
        None,
    ),
    (
        "the progress deadline makes it Failed with the condition's message",
        view(
            [inst(0, gate="Loaded")],
            converged=False,
            phase="Degraded",
            conditions=[
                {
                    "type": "Progressing",
                    "status": "False",
                    "reason": "ProgressDeadlineExceeded",
                    "message": "no progress for 600 s",
                }
            ],
        ),
        ("Failed", "ProgressDeadlineExceeded: no progress for 600 s"),
    ),
    (
        "a rollout blocked by an unschedulable surge makes it Failed with the planner's reason",
        view(
            [inst(0, gate="Created")],
            converged=False,
            phase="Blocked",
            waiting=[{"reason": "surge pod unschedulable", "kind": "unschedulable", "role": None, "groups": [2]}],
        ),
        ("Failed", "blocked: surge pod unschedulable (groups 2)"),
    ),
    (
        "a rollout waiting on its budget is not a failure",
        view(
            [inst(0, gate="Loaded")],
            converged=False,
            phase="Progressing",
            waiting=[{"reason": "maxUnavailable reached", "kind": "budget", "role": None, "groups": [1]}],
        ),
        None,
    ),
    (
        "a ModelServing that moved on to a revision no release wrote supersedes it",
        view([inst(0, "otherhash")], update="otherhash", current="otherhash"),
        ("Superseded", "replaced by revision #3 (hash otherhash), which no release wrote"),
    ),
    (
        "a state read before the deploy was written says nothing",
        view([inst(0, OLD)], update=OLD, current=OLD, generation=2),
        None,
    ),
]


@pytest.mark.parametrize("sentence, state, expected", CASES, ids=[c[0] for c in CASES])
def test_a_deploying_release_is_judged_from_the_state(sentence, state, expected):
    verdict = judge(revision=NEW, generation=3, view=state)
    assert (verdict.status, verdict.reason) == expected if expected else verdict is None, verdict


def test_without_gates_in_the_state_ready_counts_as_serving_and_failed_as_failed():
    def legacy(i):
        return {k: v for k, v in i.items() if not k.startswith("gate")}

    ok = view([inst(0), inst(1)])
    ok["instances"] = [legacy(i) for i in ok["instances"]]
    del ok["servingRevisions"]
    assert judge(revision=NEW, generation=3, view=ok).status == "Serving"
    broken = view([inst(0, state="Failed")], converged=False)
    broken["instances"] = [legacy(i) for i in broken["instances"]]
    del broken["servingRevisions"]
    assert judge(revision=NEW, generation=3, view=broken).reason == "group 0 decode-0 failed (state Failed)"


def test_a_serving_release_only_ever_becomes_superseded_here():
    failing = view([inst(0, failed="Loaded", gate="Started")], converged=False)
    assert judge(revision=NEW, generation=3, view=failing, status="Serving") is None
    moved = view([inst(0, "otherhash")], update="otherhash")
    assert judge(revision=NEW, generation=3, view=moved, status="Serving").status == "Superseded"


# -- The runtime's hooks -----------------------------------------------------------------------------------

CALLS: list[tuple] = []


def recording_hook(namespace, name, state):
    CALLS.append((namespace, name, state["phase"]))


def broken_hook(namespace, name, state):
    raise RuntimeError("boom")


def test_the_runtime_calls_every_listed_hook_by_name_and_a_failing_hook_fails_nothing(settings, caplog):
    CALLS.clear()
    settings.ROLLOUTUI_POST_RECONCILE_HOOKS = [
        "tests.releases.test_status.broken_hook",
        "tests.releases.test_status.recording_hook",
    ]
    with caplog.at_level(logging.ERROR, logger="controller.runtime.hooks"):
        hooks.run_post_reconcile("default", "chat", {"phase": "Healthy"})
    assert CALLS == [("default", "chat", "Healthy")]
    assert "post-reconcile hook broken_hook failed for default/chat" in caplog.text


def test_the_release_status_hook_is_listed_in_the_settings():
    from django.conf import settings

    assert "rolloutui.services.releases.status.after_reconcile" in settings.ROLLOUTUI_POST_RECONCILE_HOOKS
