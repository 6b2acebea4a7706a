"""The runner's shortcut past ``is_converged`` after a pass that acted on pods (issue 27): a pod the
pass acted on that stands not Ready or being deleted means not converged, without listing and
observing every pod (``convergence.an_acted_pod_is_unfinished``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.core.observe import observe
from controller.core.plan import CREATE, DELETE, PATCH_LABELS, Action
from controller.simcluster.convergence import an_acted_pod_is_unfinished, is_converged
from controller.simcluster.runner import Runner
from controller.simcluster.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = [
    REPO / "examples" / "scenarios" / "group-rolling.yaml",
    REPO / "examples" / "scenarios" / "surge-unschedulable.yaml",
    REPO / "examples" / "scenarios" / "drain-no-loss.yaml",
    REPO / "tests" / "scenarios" / "crash-loop-rollout.yaml",
    REPO / "tests" / "scenarios" / "inplace-image-bump.yaml",
]


def _pod(name, *, ready=True, deleting=False):
    meta = {"name": name, **({"deletionTimestamp": "1970-01-01T00:01:00Z"} if deleting else {})}
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}] if ready is not None else []
    return {"metadata": meta, "status": {"conditions": conditions}}


def _action(verb, names):
    if verb == CREATE:
        return Action(verb, 0, "serve", 0, "A", "update", pods=[{"metadata": {"name": n}} for n in names])
    return Action(verb, 0, "serve", 0, "A", "update", pod_names=list(names))


@pytest.mark.parametrize(
    ("verb", "stored", "unfinished"),
    [
        (CREATE, _pod("p", ready=None), True),  # just created: no status yet
        (DELETE, _pod("p", deleting=True), True),  # terminating
        (DELETE, None, False),  # never bound: removed at once, the rest may have converged
        (PATCH_LABELS, _pod("p"), False),  # Ready and staying: ask is_converged
        (PATCH_LABELS, _pod("p", ready=False), True),
    ],
)
def test_an_acted_pod_that_is_not_ready_or_deleting_says_not_converged(verb, stored, unfinished):
    store = {"p": stored} if stored is not None else {}
    assert an_acted_pod_is_unfinished([_action(verb, ["p"])], store.get) is unfinished


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_whenever_the_shortcut_says_not_converged_is_converged_says_so_too(path):
    runner = Runner(load_scenario(path))
    kind = runner.kind
    ns, name = kind.scenario.namespace, kind.scenario.ms_name
    shortcuts = []

    def compare(now, result):
        if not result.actions or not an_acted_pod_is_unfinished(result.actions, lambda n: kind.store.peek_pod(ns, n)):
            return
        ms = kind.store.get_modelserving(ns, name)
        observed = observe(kind.store.list_pods(ns, name))  # the plain path, no cache
        assert not is_converged(ms, observed, kind.store.list_revisions(ns, name))
        shortcuts.append(now)

    kind.on_pass.append(compare)
    runner.run()
    assert shortcuts  # the scenario's passes took the shortcut
