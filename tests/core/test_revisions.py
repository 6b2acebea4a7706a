"""Revisions.

Canonical projection of versioned fields only; hash and stored data from the same bytes; semantic
comparison; StatefulSet numbering; collision handling; GC that never deletes a referenced
revision; unreadable revisions reported, never guessed; rollback that keeps runtime fields; a
structured field-level diff.
"""

from __future__ import annotations

import copy
import json

import pytest

from controller.core import naming
from controller.core.controls import ControlError, rollback
from controller.core.mergepatch import merge_patch
from controller.core.revisions import (
    History,
    Revision,
    RevisionAction,
    apply_revision,
    canonical_bytes,
    diff,
    gc_actions,
    parse_revision,
    project,
    record_update_revision,
    revision_hash,
    revision_object,
)

from .harness import FixedClock, MiniCluster, manifest, role, run_until_converged, step


def base(**kw):
    return manifest(replicas=2, roles=[role("prefill", replicas=2), role("decode", replicas=1, workers=1)], **kw)


def rhash(m: dict) -> str:
    return revision_hash(project(m["spec"]))


def roles_of(m: dict) -> dict[str, dict]:
    return {r["name"]: r for r in m["spec"]["template"]["roles"]}


def set_role(m, name, **fields):
    roles_of(m)[name].update(fields)


def set_image(m, name, image, *, worker=False):
    key = "workerTemplate" if worker else "entryTemplate"
    roles_of(m)[name][key]["spec"]["containers"][0]["image"] = image


def add_env(m, name, env):
    for key in ("entryTemplate", "workerTemplate"):
        t = roles_of(m)[name].get(key)
        if t:
            t["spec"]["containers"][0].setdefault("env", []).extend(copy.deepcopy(env))


# --------------------------------------------------------------------------------------------
# Canonical projection


RUNTIME_CHANGES = [
    pytest.param(lambda m: m["spec"].update(replicas=7), id="servinggroup-replicas"),
    pytest.param(lambda m: set_role(m, "prefill", replicas=6), id="role-replicas-4-to-6-is-capacity"),
    pytest.param(
        lambda m: m["spec"].update(
            rolloutStrategy={"rollingUpdateConfiguration": {"maxUnavailable": 2, "maxSurge": "50%"}}
        ),
        id="group-budgets",
    ),
    pytest.param(
        lambda m: m["spec"].update(rolloutStrategy={"rollingUpdateConfiguration": {"partition": 1}}), id="partition"
    ),
    pytest.param(lambda m: m["spec"].update(rolloutStrategy={"type": "RoleRollingUpdate"}), id="strategy-type"),
    pytest.param(
        lambda m: set_role(m, "decode", maxUnavailable=0, maxSurge=1, partition=1), id="role-budgets-and-partition"
    ),
    pytest.param(lambda m: m["spec"].update(recoveryPolicy="None"), id="recovery-policy"),
    pytest.param(lambda m: m["spec"].update(paused=True), id="pause"),
    pytest.param(lambda m: m["spec"].update(drain={"timeoutSeconds": 120}), id="drain-timeout"),
    pytest.param(lambda m: m["spec"].update(revisionHistoryLimit=2), id="revision-history-limit"),
    pytest.param(lambda m: m["metadata"].update(annotations={"x": "y"}, generation=9), id="object-metadata"),
]


@pytest.mark.parametrize("change", RUNTIME_CHANGES)
def test_a_runtime_field_does_not_change_the_revision(change):
    m = base()
    before = rhash(m)
    change(m)
    assert rhash(m) == before


VERSIONED_CHANGES = [
    pytest.param(lambda m: set_image(m, "prefill", "engine:v2"), id="entry-image"),
    pytest.param(lambda m: set_image(m, "decode", "engine:v2", worker=True), id="worker-image"),
    pytest.param(lambda m: set_role(m, "decode", workerReplicas=3), id="workerReplicas-1-to-3-is-structure"),
    pytest.param(lambda m: m["spec"].update(schedulerName="volcano"), id="scheduler-name"),
    pytest.param(lambda m: m["spec"].update(plugins=[{"name": "lws-standard-labels"}]), id="plugins"),
    pytest.param(lambda m: add_env(m, "prefill", [{"name": "MODEL", "value": "x"}]), id="a-users-env-var"),
    pytest.param(
        lambda m: roles_of(m)["prefill"]["entryTemplate"].update(metadata={"labels": {"tier": "gold"}}),
        id="pod-template-labels",
    ),
    pytest.param(lambda m: m["spec"]["template"]["roles"].append(role("router")), id="a-new-role"),
]


@pytest.mark.parametrize("change", VERSIONED_CHANGES)
def test_a_versioned_field_changes_the_revision(change):
    m = base()
    before = rhash(m)
    change(m)
    assert rhash(m) != before


def test_plugin_order_is_versioned_but_plugin_type_defaults():
    a = base(plugins=[{"name": "p1"}, {"name": "p2", "type": "BuiltIn"}])
    b = base(plugins=[{"name": "p1", "type": "BuiltIn"}, {"name": "p2"}])
    c = base(plugins=[{"name": "p2"}, {"name": "p1"}])
    assert rhash(a) == rhash(b)
    assert rhash(a) != rhash(c)


def test_role_order_does_not_change_the_revision():
    m = base()
    swapped = copy.deepcopy(m)
    swapped["spec"]["template"]["roles"].reverse()
    assert rhash(m) == rhash(swapped)
    assert [r["name"] for r in project(swapped["spec"])["roles"]] == ["decode", "prefill"]


def test_controller_injected_env_is_ignored():
    m = base()
    injected = copy.deepcopy(m)
    add_env(
        injected,
        "prefill",
        [
            {"name": "GROUP_SIZE", "value": "1"},
            {"name": "WORKER_INDEX", "value": "0"},
            {"name": "ENTRY_ADDRESS", "value": "ms-0-prefill-0-0.ms-pods.default.svc"},
        ],
    )
    add_env(injected, "decode", [{"name": "GROUP_SIZE", "value": "2"}])
    assert rhash(m) == rhash(injected)
    assert "env" not in json.dumps(project(injected["spec"]))


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda m: add_env(m, "prefill", []), id="an-empty-env-list"),
        pytest.param(
            lambda m: roles_of(m)["prefill"]["entryTemplate"].update(metadata={}), id="an-empty-metadata-block"
        ),
        pytest.param(
            lambda m: roles_of(m)["prefill"]["entryTemplate"].update(metadata={"labels": {}, "annotations": None}),
            id="empty-labels-and-null-annotations",
        ),
        pytest.param(
            lambda m: roles_of(m)["prefill"]["entryTemplate"]["spec"]["containers"][0].update(
                args=[], command=None, workingDir=""
            ),
            id="empty-args-null-command-empty-workingDir",
        ),
        pytest.param(lambda m: m["spec"].update(plugins=[]), id="an-empty-plugin-list"),
        pytest.param(lambda m: m["spec"].update(schedulerName=""), id="an-empty-scheduler-name"),
        pytest.param(lambda m: roles_of(m)["prefill"].pop("workerReplicas"), id="workerReplicas-missing-defaults-to-0"),
        pytest.param(
            lambda m: roles_of(m)["prefill"]["entryTemplate"]["spec"].update(volumes=[]), id="an-empty-volume-list"
        ),
    ],
)
def test_empty_values_and_defaults_do_not_change_the_revision(change):
    m = base()
    before = rhash(m)
    change(m)
    assert rhash(m) == before


def test_the_projection_holds_only_versioned_fields():
    data = project(base(schedulerName="volcano", paused=True, recoveryPolicy="None")["spec"])
    assert set(data) <= {"schedulerName", "plugins", "roles"}
    for r in data["roles"]:
        assert set(r) <= {"name", "entryTemplate", "workerReplicas", "workerTemplate"}


# --------------------------------------------------------------------------------------------
# Hash and stored data from the same bytes


def test_the_hash_is_the_hash_of_the_stored_data_bytes():
    m = base(schedulerName="volcano")
    update = record_update_revision("ms", m["spec"], History([]))
    (create,) = update.actions
    obj = revision_object({**m, "metadata": {"name": "ms", "namespace": "default", "uid": "u1"}}, create)
    stored = json.loads(json.dumps(obj["data"]))  # what the API server would hand back
    assert canonical_bytes(stored) == canonical_bytes(update.data)
    assert revision_hash(stored) == update.hash == obj["metadata"]["labels"][naming.LABEL_REVISION]
    assert obj["metadata"]["name"] == f"ms-{update.hash}"
    assert parse_revision(obj).hash == update.hash


def test_the_stored_revision_objects_in_a_cluster_rehash_to_their_names():
    cluster, clock = MiniCluster(), FixedClock()
    cluster.create_modelserving(base())
    run_until_converged(cluster, clock)
    cluster.patch_modelserving("default", "ms", {"spec": {"schedulerName": "volcano"}})
    run_until_converged(cluster, clock)
    assert len(cluster.revisions) == 2
    for name, obj in cluster.revisions.items():
        h = obj["metadata"]["labels"][naming.LABEL_REVISION]
        assert name == f"ms-{h}"
        assert revision_hash(obj["data"]) == h


# --------------------------------------------------------------------------------------------
# History: semantic comparison, numbering, collisions


def stored(name_hash: str, number: int, data, *, ms="ms") -> dict:
    return {
        "metadata": {
            "name": f"{ms}-{name_hash}",
            "namespace": "default",
            "labels": {naming.LABEL_NAME: ms, naming.LABEL_REVISION: name_hash},
        },
        "data": data,
        "revision": number,
    }


def old_serialisation(data: dict) -> dict:
    """What an older controller might have stored: the same template plus empty fields."""
    old = copy.deepcopy(data)
    for r in old["roles"]:
        r["entryTemplate"]["spec"]["containers"][0]["env"] = []
        r["entryTemplate"]["metadata"] = {}
    old["plugins"] = []
    return old


def test_an_old_revision_with_an_extra_empty_field_is_reused_without_a_new_revision():
    m = base()
    data = project(m["spec"])
    history = History.from_objects([stored("0ldser1a1z", 1, old_serialisation(data))])
    update = record_update_revision("ms", m["spec"], history)
    assert update.hash == "0ldser1a1z"
    assert update.actions == []
    assert update.number == 1


def test_a_controller_upgrade_with_an_older_serialisation_starts_no_rollout():
    cluster, clock = MiniCluster(), FixedClock()
    m = base()
    cluster.create_modelserving(m)
    data = old_serialisation(project(m["spec"]))
    cluster.revisions["ms-0ldser1a1z"] = stored("0ldser1a1z", 1, data)
    run_until_converged(cluster, clock)
    assert list(cluster.revisions) == ["ms-0ldser1a1z"]
    assert cluster.revisions["ms-0ldser1a1z"]["data"] == data  # untouched
    labels = {p["metadata"]["labels"][naming.LABEL_REVISION] for p in cluster.pods.values()}
    assert labels == {"0ldser1a1z"}
    status = cluster.ms[("default", "ms")]["status"]
    assert status["updateRevision"] == status["currentRevision"] == "0ldser1a1z"
    before = dict(cluster.pods)
    step(cluster, clock)
    assert set(cluster.pods) == set(before)


def apply_actions(objs: list[dict], update, ms_name="ms") -> list[dict]:
    """Play the revision actions against a list of stored objects, as the reconcile pass does."""
    objs = copy.deepcopy(objs)
    for action in update.actions:
        if action.verb == "create":
            objs.append(revision_object({"metadata": {"name": ms_name, "namespace": "default"}}, action))
        elif action.verb == "renumber":
            (obj,) = [o for o in objs if o["metadata"]["name"] == action.name]
            obj["revision"] = action.number
    return objs


def image_spec(image: str) -> dict:
    return manifest(replicas=1, roles=[role("serve", image=image)])["spec"]


def test_revisions_are_numbered_like_statefulsets_and_reapplying_an_old_one_renumbers_it():
    objs: list[dict] = []
    hashes = {}
    for image in ("A", "B", "C"):
        update = record_update_revision("ms", image_spec(image), History.from_objects(objs))
        assert [a.verb for a in update.actions] == ["create"]
        objs = apply_actions(objs, update)
        hashes[image] = update.hash
    history = History.from_objects(objs)
    assert {image: history.get(h).number for image, h in hashes.items()} == {"A": 1, "B": 2, "C": 3}

    again = record_update_revision("ms", image_spec("A"), history)
    assert again.hash == hashes["A"]
    assert [(a.verb, a.name, a.number) for a in again.actions] == [("renumber", f"ms-{hashes['A']}", 4)]
    objs = apply_actions(objs, again)
    assert len(objs) == 3
    history = History.from_objects(objs)
    assert [(r.hash, r.number) for r in history.revisions] == [(hashes["B"], 2), (hashes["C"], 3), (hashes["A"], 4)]


def test_reapplying_the_newest_revision_is_a_no_op():
    objs = apply_actions([], record_update_revision("ms", image_spec("A"), History([])))
    again = record_update_revision("ms", image_spec("A"), History.from_objects(objs))
    assert again.actions == [] and again.number == 1


def test_a_rollback_in_a_cluster_reuses_the_old_revision_object_and_renumbers_it():
    cluster, clock = MiniCluster(), FixedClock()
    cluster.create_modelserving(manifest(replicas=2))
    run_until_converged(cluster, clock)
    for image in ("engine:v2", "engine:v3", "engine:v1"):
        cluster.patch_modelserving("default", "ms", {"spec": {"template": {"roles": [role("serve", image=image)]}}})
        run_until_converged(cluster, clock)
    numbers = {
        r["data"]["roles"][0]["entryTemplate"]["spec"]["containers"][0]["image"]: r["revision"]
        for r in cluster.revisions.values()
    }
    assert numbers == {"engine:v2": 2, "engine:v3": 3, "engine:v1": 4}


def test_a_hash_collision_bumps_collisioncount_and_never_overwrites_existing_data():
    spec_a = image_spec("A")
    data_a, data_b = project(spec_a), project(image_spec("B"))
    h = revision_hash(data_a)
    squatter = stored(h, 1, data_b)  # the name of A's hash holds B's data
    history = History.from_objects([squatter])
    update = record_update_revision("ms", spec_a, history)
    assert update.collision_count == 1
    assert update.hash == revision_hash(data_a, 1) != h
    (create,) = update.actions
    assert (create.verb, create.name, create.number, create.data) == ("create", f"ms-{update.hash}", 2, data_a)


def test_a_collision_in_a_cluster_is_recorded_in_status_and_leaves_the_squatter_alone():
    cluster, clock = MiniCluster(), FixedClock()
    m = manifest(replicas=2)
    cluster.create_modelserving(m)
    h = rhash(m)
    squatter = stored(h, 1, project(image_spec("other")))
    cluster.revisions[f"ms-{h}"] = copy.deepcopy(squatter)
    run_until_converged(cluster, clock)
    assert cluster.revisions[f"ms-{h}"] == squatter
    status = cluster.ms[("default", "ms")]["status"]
    assert status["collisionCount"] == 1
    salted = revision_hash(project(m["spec"]), 1)
    assert status["updateRevision"] == salted
    assert {p["metadata"]["labels"][naming.LABEL_REVISION] for p in cluster.pods.values()} == {salted}
    # the next pass finds the salted revision again: no further collision, no new object
    step(cluster, clock)
    assert cluster.ms[("default", "ms")]["status"]["collisionCount"] == 1
    assert len(cluster.revisions) == 2


# --------------------------------------------------------------------------------------------
# GC


def numbered(n: int) -> Revision:
    return Revision(name=f"ms-h{n}", hash=f"h{n}", number=n, data={"roles": [{"name": "serve"}]})


@pytest.mark.parametrize(
    "limit, referenced, deleted",
    [
        pytest.param(2, {"h5", "h2"}, ["h1"], id="limit-2-of-five-with-5-and-2-referenced-deletes-only-1"),
        pytest.param(0, {"h5", "h2"}, ["h1", "h3", "h4"], id="limit-0-deletes-every-unreferenced-oldest-first"),
        pytest.param(0, {"h1", "h2", "h3", "h4", "h5"}, [], id="limit-0-keeps-all-referenced"),
        pytest.param(10, set(), [], id="within-the-limit-nothing-is-deleted"),
        pytest.param(3, {"h1"}, ["h2"], id="the-oldest-referenced-revision-survives"),
    ],
)
def test_gc_deletes_unreferenced_revisions_beyond_the_limit_oldest_first(limit, referenced, deleted):
    history = History([numbered(n) for n in (3, 1, 5, 2, 4)])
    actions = gc_actions(history, referenced=referenced, limit=limit)
    assert [a.hash for a in actions] == deleted
    assert all(a.verb == "delete" for a in actions)


def test_gc_in_a_cluster_keeps_the_history_limit_and_every_referenced_revision():
    cluster, clock = MiniCluster(), FixedClock()
    cluster.create_modelserving(
        manifest(replicas=3, revisionHistoryLimit=1, strategy={"rollingUpdateConfiguration": {"partition": 1}})
    )
    run_until_converged(cluster, clock)
    first = cluster.ms[("default", "ms")]["status"]["updateRevision"]
    for image in ("engine:v2", "engine:v3", "engine:v4", "engine:v5"):
        cluster.patch_modelserving("default", "ms", {"spec": {"template": {"roles": [role("serve", image=image)]}}})
        run_until_converged(cluster, clock)
        status = cluster.ms[("default", "ms")]["status"]
        hashes = {o["metadata"]["labels"][naming.LABEL_REVISION] for o in cluster.revisions.values()}
        # group 0 is protected by the partition and still runs the first revision
        assert first in hashes
        running = {p["metadata"]["labels"][naming.LABEL_REVISION] for p in cluster.pods.values()}
        assert running <= hashes
        assert set(status["referencedRevisions"]) <= hashes
        unreferenced = hashes - set(status["referencedRevisions"])
        assert len(unreferenced) <= 1
    assert len(cluster.revisions) <= 3


# --------------------------------------------------------------------------------------------
# Unreadable revisions


@pytest.mark.parametrize(
    "data",
    [
        pytest.param("<corrupted>", id="a-string-that-is-not-json"),
        pytest.param({"spec": {}}, id="an-object-without-roles"),
        pytest.param({"roles": [{"entryTemplate": {}}]}, id="a-role-without-a-name"),
        pytest.param(None, id="no-data-at-all"),
        pytest.param(json.dumps([1, 2]), id="json-that-is-not-an-object"),
    ],
)
def test_an_unreadable_revision_is_reported_not_guessed(data):
    rev = parse_revision(stored("abc", 3, data))
    assert rev.readable is False and rev.data is None
    assert rev.error
    assert rev.to_json()["readable"] is False and rev.to_json()["error"] == rev.error
    assert History([rev]).data_of("abc") is None


def test_revision_data_stored_as_a_json_string_is_read():
    data = project(image_spec("A"))
    rev = parse_revision(stored("abc", 1, json.dumps(data)))
    assert rev.readable and rev.data == data


def test_unreadable_data_under_our_own_hash_is_never_overwritten():
    spec = image_spec("A")
    h = revision_hash(project(spec))
    update = record_update_revision("ms", spec, History.from_objects([stored(h, 1, "<corrupted>")]))
    assert not [a for a in update.actions if a.name == f"ms-{h}" and a.verb == "create"]


def test_unreadable_data_under_our_own_hash_is_reported_and_no_pod_is_built_from_a_guess():
    cluster, clock = MiniCluster(), FixedClock()
    m = manifest(replicas=2)
    cluster.create_modelserving(m)
    h = rhash(m)
    cluster.revisions[f"ms-{h}"] = stored(h, 1, "<corrupted>")
    for _ in range(3):
        result = step(cluster, clock)
    assert cluster.revisions[f"ms-{h}"]["data"] == "<corrupted>"
    for pod in cluster.pods.values():
        rev = pod["metadata"]["labels"][naming.LABEL_REVISION]
        assert parse_revision(cluster.revisions[f"ms-{rev}"]).readable
    assert (
        any(h in b["reason"] for b in result.blocked) or cluster.ms[("default", "ms")]["status"]["collisionCount"] == 1
    )


def test_rollback_to_an_unreadable_revision_is_refused():
    ms = manifest(replicas=2)
    with pytest.raises(ControlError) as info:
        rollback(ms, [stored("abc", 1, "<corrupted>")], to_revision=1)
    assert info.value.field == "toRevision"
    assert "cannot be read" in str(info.value)


# --------------------------------------------------------------------------------------------
# Rollback keeps runtime fields


def rollback_fixture():
    old = manifest(
        replicas=2,
        roles=[role("prefill", replicas=1, image="engine:v1"), role("router", replicas=2, image="router:v1")],
        schedulerName="volcano",
    )
    current = manifest(
        replicas=6,
        roles=[
            role("prefill", replicas=4, image="engine:v2", maxUnavailable=2, maxSurge=1, partition=1),
            role("decode", replicas=3, workers=1, image="engine:v2"),
        ],
        strategy={"type": "RoleRollingUpdate"},
        recovery="None",
        paused=True,
        drain={"timeoutSeconds": 60},
        revisionHistoryLimit=4,
    )
    return old, current


def test_rollback_writes_the_revisions_versioned_fields_and_keeps_runtime_fields():
    old, current = rollback_fixture()
    new_spec = apply_revision(current["spec"], project(old["spec"]))
    # runtime fields stay
    assert new_spec["replicas"] == 6
    assert new_spec["rolloutStrategy"] == {"type": "RoleRollingUpdate"}
    assert (new_spec["recoveryPolicy"], new_spec["paused"], new_spec["drain"], new_spec["revisionHistoryLimit"]) == (
        "None",
        True,
        {"timeoutSeconds": 60},
        4,
    )
    roles = {r["name"]: r for r in new_spec["template"]["roles"]}
    assert (
        roles["prefill"]["replicas"],
        roles["prefill"]["maxUnavailable"],
        roles["prefill"]["maxSurge"],
        roles["prefill"]["partition"],
    ) == (4, 2, 1, 1)
    # versioned fields come from the revision
    assert roles["prefill"]["entryTemplate"]["spec"]["containers"][0]["image"] == "engine:v1"
    assert new_spec["schedulerName"] == "volcano"
    # a role only in the revision comes back with replicas 1; a role absent from it is removed
    assert set(roles) == {"prefill", "router"}
    assert roles["router"]["replicas"] == 1
    assert roles["router"]["entryTemplate"]["spec"]["containers"][0]["image"] == "router:v1"
    # and the result projects back to exactly the revision
    assert project(new_spec) == project(old["spec"])


def test_rollback_keeps_a_group_level_partition_and_budgets():
    old = manifest(replicas=2)
    current = manifest(
        replicas=6,
        roles=[role("serve", image="engine:v2")],
        strategy={"rollingUpdateConfiguration": {"partition": 2, "maxUnavailable": 3, "maxSurge": "50%"}},
    )
    new_spec = apply_revision(current["spec"], project(old["spec"]))
    assert new_spec["replicas"] == 6
    assert new_spec["rolloutStrategy"]["rollingUpdateConfiguration"] == {
        "partition": 2,
        "maxUnavailable": 3,
        "maxSurge": "50%",
    }


def test_the_rollback_control_patches_by_revision_number_and_the_result_is_valid():
    cluster, clock = MiniCluster(), FixedClock()
    old, current = rollback_fixture()
    old["spec"]["template"]["roles"][0].pop("partition", None)
    cluster.create_modelserving(old)
    run_until_converged(cluster, clock)
    current["spec"]["paused"] = False
    cluster.patch_modelserving("default", "ms", {"spec": current["spec"]})
    run_until_converged(cluster, clock)
    ms = cluster.get_modelserving("default", "ms")
    patch = rollback(ms, cluster.list_revisions("default", "ms"), to_revision=1)
    after = merge_patch(ms, patch)
    assert after["spec"]["replicas"] == 6
    roles = {r["name"]: r for r in after["spec"]["template"]["roles"]}
    assert (
        set(roles) == {"prefill", "router"} and roles["prefill"]["replicas"] == 4 and roles["router"]["replicas"] == 1
    )
    assert roles["prefill"]["partition"] == 1
    assert project(after["spec"]) == project(old["spec"])
    # applying it reuses revision 1 and renumbers it 3
    cluster.patch_modelserving(
        "default", "ms", {"spec": {"template": after["spec"]["template"], "schedulerName": "volcano"}}
    )
    step(cluster, clock)
    numbers = sorted(r["revision"] for r in cluster.revisions.values())
    assert numbers == [2, 3]


def test_rollback_to_an_unknown_revision_number_is_refused():
    with pytest.raises(ControlError) as info:
        rollback(manifest(), [], to_revision=5)
    assert info.value.field == "toRevision"


# --------------------------------------------------------------------------------------------
# Structured diff


def test_the_diff_between_two_revisions_names_each_changed_field():
    a = manifest(roles=[role("decode", workers=1, image="engine:v1"), role("prefill")])
    b = copy.deepcopy(a)
    set_image(b, "decode", "engine:v2")
    set_role(b, "decode", workerReplicas=3)
    b["spec"]["template"]["roles"] = [r for r in b["spec"]["template"]["roles"] if r["name"] != "prefill"] + [
        role("router")
    ]
    b["spec"]["schedulerName"] = "volcano"
    changes = diff(project(a["spec"]), project(b["spec"]))
    by_path = {c["path"]: c for c in changes}
    assert by_path["roles[decode].entryTemplate.spec.containers[engine].image"] == {
        "path": "roles[decode].entryTemplate.spec.containers[engine].image",
        "change": "changed",
        "from": "engine:v1",
        "to": "engine:v2",
    }
    assert by_path["roles[decode].workerReplicas"]["from"] == 1 and by_path["roles[decode].workerReplicas"]["to"] == 3
    assert by_path["roles[prefill]"]["change"] == "removed"
    assert by_path["roles[router]"]["change"] == "added"
    assert by_path["schedulerName"] == {"path": "schedulerName", "change": "added", "from": None, "to": "volcano"}
    assert "roles[decode].workerTemplate.spec.containers[engine].image" not in by_path  # worker image unchanged
    assert len(changes) == 5


def test_the_diff_of_a_revision_with_itself_is_empty_and_role_order_is_not_a_change():
    a = base()
    b = copy.deepcopy(a)
    b["spec"]["template"]["roles"].reverse()
    assert diff(project(a["spec"]), project(b["spec"])) == []


def test_the_diff_matches_env_by_name():
    a, b = base(), base()
    add_env(a, "prefill", [{"name": "A", "value": "1"}, {"name": "B", "value": "1"}])
    add_env(b, "prefill", [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}])
    changes = diff(project(a["spec"]), project(b["spec"]))
    assert changes == [
        {
            "path": "roles[prefill].entryTemplate.spec.containers[engine].env[B].value",
            "change": "changed",
            "from": "1",
            "to": "2",
        }
    ]


def test_revision_actions_are_plain_values():
    assert RevisionAction("delete", "ms-x", "x", 1) == RevisionAction("delete", "ms-x", "x", 1)
