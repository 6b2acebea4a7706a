"""The named steps of ``planner.status._conditions``: Available, Progressing and UpdateInProgress as
a Deployment reports them (Kubernetes' deployment controller: Available is the minimum the budget
promises, Progressing turns False on a pause, on completion and past progressDeadlineSeconds), and
the conditions raised only while they hold."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from controller.core.plan import KIND_PARTITION, KIND_REVISION, Blocked
from controller.core.planner import status
from controller.core.spec import GROUP_ROLLING


def _ctx(*, replicas=4, max_unavailable=1, partition=0, paused=False, group_level=True):
    budgets = SimpleNamespace(
        max_unavailable=SimpleNamespace(count=max_unavailable), partition=SimpleNamespace(count=partition)
    )
    ms = SimpleNamespace(
        replicas=replicas,
        paused=paused,
        strategy=SimpleNamespace(type=GROUP_ROLLING if group_level else "RoleRollingUpdate"),
    )
    return SimpleNamespace(ms=ms, strategy=SimpleNamespace(group=budgets), update_hash="abc123")


def _totals(*, available=4, updated=4, converged=True):
    return SimpleNamespace(available_groups=available, updated_groups=updated, converged=converged)


def _group(*, surge=False, ready=True, updated=True, phase="Ready"):
    return {"surge": surge, "ready": ready, "updated": updated, "phase": phase}


def _progress(exceeded=False):
    return SimpleNamespace(exceeded=exceeded, deadline_seconds=600)


@pytest.mark.parametrize(
    ("ctx", "available", "groups", "expected"),
    [
        pytest.param(
            _ctx(),
            4,
            [_group()] * 4,
            (True, "AllGroupsReady", "4 of 4 ServingGroups available (at least 3 required)"),
            id="every group Ready is AllGroupsReady",
        ),
        pytest.param(
            _ctx(),
            3,
            [_group()] * 3 + [_group(ready=False)],
            (True, "MinimumGroupsAvailable", "3 of 4 ServingGroups available (at least 3 required)"),
            id="one group down within maxUnavailable 1 keeps Available True",
        ),
        pytest.param(
            _ctx(),
            2,
            [_group()] * 2 + [_group(ready=False)] * 2,
            (False, "GroupsUnavailable", "2 of 4 ServingGroups available (at least 3 required)"),
            id="more groups down than maxUnavailable allows makes Available False",
        ),
        pytest.param(
            _ctx(),
            4,
            [_group()] * 3 + [_group(ready=False), _group(surge=True)],
            (True, "MinimumGroupsAvailable", "4 of 4 ServingGroups available, 1 of them surge (at least 3 required)"),
            id="a Ready surge group counts towards the floor but not towards all groups Ready",
        ),
        pytest.param(
            _ctx(group_level=False),
            3,
            [_group()] * 3 + [_group(ready=False)],
            (False, "GroupsUnavailable", "3 of 4 ServingGroups available (at least 4 required)"),
            id="under a role-level strategy the group floor is every group",
        ),
    ],
)
def test_available_is_the_minimum_the_group_budget_promises(ctx, available, groups, expected):
    assert status._available(ctx, _totals(available=available), groups) == expected


@pytest.mark.parametrize(
    ("ctx", "totals", "progress", "expected"),
    [
        pytest.param(
            _ctx(paused=True),
            _totals(converged=False),
            _progress(exceeded=True),
            (False, "Paused", "rollout paused by spec.paused"),
            id="a paused rollout is not progressing whatever else holds",
        ),
        pytest.param(
            _ctx(),
            _totals(),
            _progress(exceeded=True),
            (False, "RolloutComplete", "revision abc123 rolled out"),
            id="a converged rollout is complete even past its deadline",
        ),
        pytest.param(
            _ctx(),
            _totals(converged=False),
            _progress(exceeded=True),
            (
                False,
                "ProgressDeadlineExceeded",
                "revision abc123 made no progress within progressDeadlineSeconds (600 s)",
            ),
            id="a rollout still past progressDeadlineSeconds has exceeded its deadline",
        ),
        pytest.param(
            _ctx(),
            _totals(converged=False),
            _progress(),
            (True, "RollingUpdate", "rolling out revision abc123"),
            id="a rollout within its deadline is rolling",
        ),
    ],
)
def test_progressing_follows_the_deployment_rules(ctx, totals, progress, expected):
    assert status._progressing(ctx, totals, progress) == expected


def _out(*blocked_kinds, failure=None, inconclusive=None):
    canary = SimpleNamespace(failure=failure, inconclusive=inconclusive) if failure or inconclusive else None
    return SimpleNamespace(blocked=[Blocked(0, None, f"waits: {k}", k) for k in blocked_kinds], canary=canary)


@pytest.mark.parametrize(
    ("ctx", "out", "totals", "groups", "expected"),
    [
        pytest.param(
            _ctx(),
            _out(),
            _totals(),
            [_group()] * 4,
            (False, "NoUpdate", "4 of 4 ServingGroups on revision abc123"),
            id="a converged ModelServing has no update in progress",
        ),
        pytest.param(
            _ctx(),
            _out("budget"),
            _totals(updated=2, converged=False),
            [_group()] * 4,
            (True, "GroupsUpdating", "2 of 4 ServingGroups on revision abc123"),
            id="outdated groups above the partition are an update in progress",
        ),
        pytest.param(
            _ctx(partition=2),
            _out(KIND_PARTITION),
            _totals(updated=2, converged=False),
            [_group()] * 4,
            (False, "NoUpdate", "2 of 4 ServingGroups on revision abc123"),
            id="groups a partition holds back do not keep the update in progress",
        ),
        pytest.param(
            _ctx(partition=2),
            _out(KIND_PARTITION),
            _totals(updated=2, converged=False),
            [_group()] * 3 + [_group(phase="Creating", ready=False)],
            (True, "GroupsUpdating", "2 of 4 ServingGroups on revision abc123"),
            id="a new group not yet Ready keeps the update in progress below the partition",
        ),
    ],
)
def test_update_in_progress_lasts_until_the_last_new_group_is_ready(ctx, out, totals, groups, expected):
    assert status._update_in_progress(ctx, out, totals, groups) == expected


@pytest.mark.parametrize(
    ("out", "expected"),
    [
        pytest.param(_out(), [], id="nothing raised on a plain pass"),
        pytest.param(
            _out(failure="errorRate 0.3 > 0.1"),
            [("AnalysisFailed", "errorRate 0.3 > 0.1")],
            id="a failed analysis raises AnalysisFailed with its reason",
        ),
        pytest.param(
            _out(inconclusive="5 of 20 requests"),
            [("AnalysisInconclusive", "5 of 20 requests")],
            id="an inconclusive analysis raises AnalysisInconclusive with the shortfall",
        ),
        pytest.param(
            _out(KIND_REVISION, KIND_REVISION),
            [("RevisionUnreadable", f"waits: {KIND_REVISION}")],
            id="unreadable revisions raise one RevisionUnreadable with the first reason",
        ),
    ],
)
def test_conditions_raised_only_while_they_hold(out, expected):
    assert status._raised(out) == expected
