"""The named steps of ``reconcile._reconcile_once``: an invalid spec refused, the pass's
observation, a plan dropped when its spec moved on, what the result records, and what the page's
view is drawn from."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from controller.core import naming, phases, reconcile
from controller.core.ports import NotFound
from controller.core.spec import ValidationError

NS, NAME = "default", "ms"


class RecordingCluster:
    """Answers reads from fixed lists and records what the steps ask and write, in order."""

    def __init__(self, *, generation=1, pods=(), revisions=(), found=True):
        self.generation, self.pods, self.revisions, self.found = generation, pods, revisions, found
        self.calls: list[tuple] = []

    def get_modelserving(self, namespace, name):
        self.calls.append(("get", name))
        if not self.found:
            raise NotFound(name)
        return {"metadata": {"name": name, "generation": self.generation}}

    def read_modelserving(self, namespace, name):
        return self.get_modelserving(namespace, name)

    def generation_of(self, namespace, name):
        self.calls.append(("generation", name))
        if not self.found:
            raise NotFound(name)
        return self.generation

    def replace_modelserving_status(self, namespace, name, status, *, resource_version):
        self.calls.append(("status", resource_version, status))

    def list_pods(self, namespace, name):
        self.calls.append(("list_pods",))
        return self.pods

    def list_revisions(self, namespace, name):
        self.calls.append(("list_revisions",))
        return self.revisions

    def routable_pods(self, namespace, name, pods):
        return None


class RecordingRouter:
    def __init__(self, in_flight=None):
        self.counts, self.asked = in_flight or {}, []

    def in_flight(self, namespace, pod_name):
        self.asked.append(pod_name)
        return self.counts.get(pod_name, 0)

    def routable_pods(self, namespace, name, pods):
        return {"ms-0-serve-0-0": 12.0}


INVALID = ValidationError("spec.replicas", "must be >= 0")
REFUSED = {
    "type": "SpecInvalid",
    "status": "True",
    "reason": "ValidationFailed",
    "message": str(INVALID),
    "lastTransitionTime": 50.0,
}
OTHER = {"type": "Progressing", "status": "True"}


@pytest.mark.parametrize(
    ("prev_status", "conditions", "written"),
    [
        pytest.param({}, [REFUSED], True, id="a first invalid spec writes the refusal into status"),
        pytest.param(
            {"conditions": [OTHER, {**REFUSED, "message": "older"}]},
            [OTHER, REFUSED],
            True,
            id="the refusal replaces an older one and keeps the other conditions",
        ),
        pytest.param(
            {
                "conditions": [REFUSED],
                "phase": phases.BLOCKED,
                "waiting": [{"reason": f"spec invalid: {INVALID}", "kind": "refused", "role": None, "groups": [None]}],
            },
            [REFUSED],
            False,
            id="a status that already says so is not written again",
        ),
    ],
)
def test_an_invalid_spec_is_refused_in_status_and_nothing_else_happens(prev_status, conditions, written):
    cluster, result = RecordingCluster(), reconcile.ReconcileResult(NS, NAME)
    obj = {"metadata": {"name": NAME, "resourceVersion": "41"}, "status": prev_status}
    reconcile._refuse_invalid_spec(cluster, NS, NAME, obj, INVALID, 50.0, result)
    assert (result.error, result.status["conditions"], result.status["phase"]) == (
        str(INVALID),
        conditions,
        phases.BLOCKED,
    )
    assert [c[:2] for c in cluster.calls] == ([("status", "41")] if written else [])
    assert [b["reason"] for b in result.blocked] == [f"spec invalid: {INVALID}"]


def _pod(name, *, draining=None):
    annotations = {} if draining is None else {naming.ANNOTATION_DRAINING: draining}
    labels = {
        naming.LABEL_GROUP_ORDINAL: "0",
        naming.LABEL_ROLE: "serve",
        naming.LABEL_ROLE_ORDINAL: "0",
        naming.LABEL_POD_INDEX: name[-1],
        naming.LABEL_REVISION: "rev1",
    }
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    return {"metadata": {"name": name, "annotations": annotations, "labels": labels}, "status": status}


def test_the_pass_asks_the_router_only_about_pods_leaving_routing_and_keeps_its_routing_table():
    pods = [_pod("ms-0-serve-0-0"), _pod("ms-0-serve-0-1", draining="10.0")]
    router = RecordingRouter({"ms-0-serve-0-1": 3})
    observed = reconcile._observe_for_pass(RecordingCluster(), router, NS, NAME, pods)
    assert router.asked == ["ms-0-serve-0-1"]
    assert (dict(observed.in_flight), observed.routed) == ({"ms-0-serve-0-1": 3}, {"ms-0-serve-0-0": 12.0})


@pytest.mark.parametrize(
    ("actions", "generation", "found", "superseded"),
    [
        pytest.param(["delete"], 1, True, False, id="a plan on the spec that still stands is kept"),
        pytest.param(["delete"], 2, True, True, id="a plan whose spec moved on is dropped and runs again at once"),
        pytest.param(["delete"], 1, False, True, id="a plan whose modelserving is gone is dropped"),
        pytest.param([], 2, True, False, id="a plan without actions has nothing to drop"),
    ],
)
def test_a_plan_is_dropped_when_its_spec_moved_on_while_it_was_made(actions, generation, found, superseded):
    cluster, result = RecordingCluster(generation=generation, found=found), reconcile.ReconcileResult(NS, NAME)
    the_plan = SimpleNamespace(actions=actions)
    assert reconcile._superseded(cluster, NS, NAME, SimpleNamespace(generation=1), the_plan, result) is superseded
    assert (result.superseded, result.requeue_after) == ((True, 0.0) if superseded else (False, None))
    assert cluster.calls == ([("generation", NAME)] if actions else [])  # never the whole object


def test_the_result_records_the_plan_with_its_audit_stamped_at_the_pass_time():
    blocked = SimpleNamespace(to_json=lambda: {"reason": "waiting"})
    the_plan = SimpleNamespace(
        actions=["a"],
        blocked=[blocked],
        requeue_after=2.0,
        holds_for=1.5,
        audit=[{"what": "x"}],
        analysis=[{"w": 1}],
        status={"p": 1},
    )
    result = reconcile.ReconcileResult(NS, NAME)
    reconcile._record_result(result, the_plan, 99.0)
    got = (result.actions, result.blocked, result.requeue_after, result.audit, result.analysis, result.status)
    assert got == (["a"], [{"reason": "waiting"}], 2.0, [{"what": "x", "t": 99.0}], [{"w": 1}], {"p": 1})
    assert result.holds_for == 1.5


class TickingClock:
    def __init__(self, t):
        self.t = t

    def now(self):
        self.t += 1.0
        return self.t


@pytest.mark.parametrize(
    ("actions", "revision_actions", "expected", "calls"),
    [
        pytest.param(
            [],
            [],
            (10.0, "read pods", "observed", "read revisions"),
            [],
            id="without actions the view is what the pass read",
        ),
        pytest.param(
            [],
            ["create"],
            (10.0, "read pods", "observed", "listed revisions"),
            [("list_revisions",)],
            id="a plan that changed revisions lists them again",
        ),
        pytest.param(
            ["delete"],
            [],
            (21.0, "listed pods", None, "listed revisions"),
            [("list_pods",), ("list_revisions",)],
            id="after actions the pods and revisions are listed again at the time of that list",
        ),
    ],
)
def test_the_view_is_drawn_from_what_stands_after_the_pass(actions, revision_actions, expected, calls):
    cluster = RecordingCluster(pods="listed pods", revisions="listed revisions")
    the_plan = SimpleNamespace(actions=actions, revision_actions=revision_actions)
    got = reconcile._view_inputs(
        cluster, TickingClock(20.0), NS, NAME, the_plan, "read pods", "observed", "read revisions", 10.0
    )
    assert got == expected
    assert cluster.calls == calls
