"""The named steps of ``convergence.is_converged``: the parsed spec, why one instance is not done,
the partition, and which instances run the update revision."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from controller.core import strategy
from controller.core.observe import InstanceObs
from controller.core.revisions import History, RevisionAction, project, revision_hash, revision_object
from controller.core.spec import parse_modelserving
from controller.simcluster import convergence
from tests.factories import group_strategy, role, role_strategy
from tests.factories import modelserving as manifest


def _rule(m: dict, *, history: tuple[dict, ...] = (), update: str = "B") -> convergence.Convergence:
    spec = parse_modelserving(m)
    return convergence.Convergence(spec, strategy.resolve(spec), _history(*history), update)


def _history(*manifests: dict) -> History:
    """Each manifest stored as a revision, numbered in order."""
    objs = []
    for number, m in enumerate(manifests, start=1):
        data = project(m["spec"])
        objs.append(revision_object(m, RevisionAction("create", f"ms-{number}", revision_hash(data), number, data)))
    return History.from_objects(objs)


def _hash_of(m: dict) -> str:
    return revision_hash(project(m["spec"]))


def _instance(group=0, role_="serve", ordinal=0, *, pods=1, revision="B", role_hash="", ready=True, **state):
    """An instance of ``pods`` pods (indexes 0..pods-1), all Ready or none."""
    members = {i: SimpleNamespace(ready=ready, scheduled=True) for i in range(pods)}
    return InstanceObs(
        group=group,
        role=role_,
        ordinal=ordinal,
        pods=members,
        revision=revision,
        role_hash=role_hash,
        all_ready=ready,
        contiguous=pods,
        **state,
    )


GROUPS = manifest(replicas=3, strategy=group_strategy(partition=1))


@pytest.mark.parametrize(
    ("inst", "reason"),
    [
        pytest.param(_instance(group=1), None, id="a ready instance on the update revision is done"),
        pytest.param(_instance(group=3), convergence.SURPLUS, id="a group beyond the replicas is a leftover surge"),
        pytest.param(_instance(ordinal=1), convergence.SURPLUS, id="an ordinal beyond the roles replicas is surplus"),
        pytest.param(_instance(draining=True), convergence.NOT_READY, id="a draining instance is not done"),
        pytest.param(_instance(ready=False), convergence.NOT_READY, id="an instance with a pod not ready is not done"),
        pytest.param(_instance(pods=2), convergence.PODS_MISSING, id="an instance with a pod too many is not done"),
        pytest.param(
            _instance(group=1, revision="A"),
            convergence.OUTDATED,
            id="an old revision outside the partition is not done",
        ),
        pytest.param(_instance(group=0, revision="A"), None, id="an old revision inside the partition is done"),
    ],
)
def test_an_instance_keeps_a_rollout_unfinished_for_one_named_reason(inst, reason):
    assert _rule(GROUPS).unfinished(inst.group, inst.role, inst.ordinal, inst) == reason


ROLES = manifest(
    replicas=4,
    roles=[role("prefill", replicas=3, partition=2), role("decode", replicas=3)],
    strategy=role_strategy(),
)


@pytest.mark.parametrize(
    ("m", "group", "role_", "ordinal", "protected"),
    [
        pytest.param(GROUPS, 0, "serve", 0, True, id="a group below the partition is protected"),
        pytest.param(GROUPS, 1, "serve", 0, False, id="a group at the partition is not"),
        pytest.param(ROLES, 3, "prefill", 1, True, id="under role strategies the role partition counts ordinals"),
        pytest.param(ROLES, 0, "prefill", 2, False, id="an ordinal at the role partition is not protected"),
        pytest.param(ROLES, 0, "decode", 0, False, id="a role without a partition protects nothing"),
    ],
)
def test_the_partition_protects_groups_or_role_ordinals_by_the_strategy(m, group, role_, ordinal, protected):
    assert _rule(m).protected(group, role_, ordinal) is protected


def _pair(prefill_image: str, decode_image: str) -> dict:
    roles = [role("prefill", image=prefill_image), role("decode", image=decode_image)]
    return manifest(replicas=1, roles=roles, strategy=role_strategy())


OLD = _pair("engine:v1", "engine:v1")
NEW_PREFILL = _pair("engine:v2", "engine:v1")  # the update: prefill changed, decode did not


def _update_hashes() -> dict[str, str]:
    return _history(NEW_PREFILL).get(_hash_of(NEW_PREFILL)).role_hashes()


@pytest.mark.parametrize(
    ("revision", "role_", "role_hash", "runs"),
    [
        pytest.param("update", "prefill", "", True, id="an instance labelled with the update revision runs it"),
        pytest.param("old", "decode", "", True, id="an unchanged role of an older revision runs the update"),
        pytest.param("old", "prefill", "", False, id="a changed role of an older revision does not"),
        pytest.param("unknown", "decode", "", False, id="a revision no longer stored is not known to run it"),
        pytest.param(
            "unknown", "decode", "update decode", True, id="the update revisions role hash on the pod is enough"
        ),
    ],
)
def test_under_role_strategies_an_instance_runs_the_update_when_its_role_template_is_the_updates(
    revision, role_, role_hash, runs
):
    update = _hash_of(NEW_PREFILL)
    revisions = {"update": update, "old": _hash_of(OLD), "unknown": "gone"}
    hashes = {"": "", "update decode": _update_hashes()["decode"]}
    rule = _rule(NEW_PREFILL, history=(OLD, NEW_PREFILL), update=update)
    inst = _instance(role_=role_, revision=revisions[revision], role_hash=hashes[role_hash])
    assert rule.runs_update(inst, role_) is runs


@pytest.mark.parametrize(
    ("revision", "runs"),
    [
        pytest.param("B", True, id="an instance labelled with the update revision runs it"),
        pytest.param("A", False, id="any other label does not even with the same templates"),
    ],
)
def test_under_group_strategies_only_the_update_revision_label_counts(revision, runs):
    assert _rule(GROUPS, history=(GROUPS,), update="B").runs_update(_instance(revision=revision), "serve") is runs


@pytest.mark.parametrize(
    ("m", "parsed"),
    [
        pytest.param(GROUPS, True, id="a valid ModelServing is parsed with its effective strategy"),
        pytest.param(manifest(replicas=-1), False, id="an invalid ModelServing never converges"),
    ],
)
def test_the_spec_is_parsed_once_per_version_of_the_modelserving(m, parsed):
    m = {**m, "metadata": {**m["metadata"], "uid": "u1", "resourceVersion": "7"}}
    cache: dict = {}
    first = convergence._parsed_spec(m, cache)
    assert (first is not None) is parsed
    if parsed:
        assert convergence._parsed_spec(m, cache) is first
        assert list(cache) == [("u1", "7")]
