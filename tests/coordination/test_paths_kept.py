"""The planner keeps consistent request paths possible (``planner.paths``): with ``spec.traffic.path``
and revision-affine routing, a coordinated update never leaves Ready entry instances (the path's
first role) without a consistent path, and says why it waits.

The property's oracle reads only the pods: their Ready condition, drain mark, deletion, and the
revision compatibility labels a router would match (``revision.serving.rolloutui.io/<hash>``)."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.core import naming
from controller.core.planner.paths import (
    ALLOWED,
    LAST_PATH_OF_ENTRIES,
    NEW_ENTRY_WITHOUT_PATH,
    PathView,
    replacement_case,
)
from tests.core.harness import FixedClock, MiniCluster, manifest, role, run_until_converged, step

# -- the decision, as a table ------------------------------------------------------------------------

# Revisions 2 (old) and 3 (new). "both": prefill and decode change; "decode": only decode changes.
BOTH = {"r2": {"prefill": "P2", "decode": "D2"}, "r3": {"prefill": "P3", "decode": "D3"}}
DECODE_ONLY = {"r2": {"prefill": "P2", "decode": "D2"}, "r3": {"prefill": "P2", "decode": "D3"}}
NAMES = {"r2": "revision 2", "r3": "revision 3"}


def view(templates, ready) -> PathView:
    return PathView(("prefill", "decode"), templates, ready, NAMES)


CASES = [
    (
        "a new prefill waits while no decode of the new revision is Ready",
        BOTH,
        {"prefill": {"P2": 2}, "decode": {"D2": 2}},
        ("prefill", "P2"),
        NEW_ENTRY_WITHOUT_PATH,
        "decode on revision 3 has no Ready instance: new prefill instances would have no consistent path",
    ),
    (
        "a new prefill may start once a decode of the new revision is Ready",
        BOTH,
        {"prefill": {"P2": 2}, "decode": {"D2": 1, "D3": 1}},
        ("prefill", "P2"),
        ALLOWED,
        "",
    ),
    (
        "an unchanged decode is compatible with the new prefill",
        {"r2": {"prefill": "P2", "decode": "D2"}, "r3": {"prefill": "P3", "decode": "D2"}},
        {"prefill": {"P2": 2}, "decode": {"D2": 1}},
        ("prefill", "P2"),
        ALLOWED,
        "",
    ),
    (
        "the last old decode stays while old prefill instances serve",
        BOTH,
        {"prefill": {"P2": 1, "P3": 1}, "decode": {"D2": 1, "D3": 1}},
        ("decode", "D2"),
        LAST_PATH_OF_ENTRIES,
        "keeps its last Ready decode of revision 2: prefill instances of revision 2 would have no consistent path",
    ),
    (
        "an old decode may go while another old decode remains",
        BOTH,
        {"prefill": {"P2": 2}, "decode": {"D2": 2}},
        ("decode", "D2"),
        ALLOWED,
        "",
    ),
    (
        "the last old decode may go once no old prefill serves",
        BOTH,
        {"prefill": {"P3": 2}, "decode": {"D2": 1, "D3": 1}},
        ("decode", "D2"),
        ALLOWED,
        "",
    ),
    (
        "an unchanged prefill lets the last old decode go once a new decode is Ready",
        DECODE_ONLY,
        {"prefill": {"P2": 2}, "decode": {"D2": 1, "D3": 1}},
        ("decode", "D2"),
        ALLOWED,
        "",
    ),
    (
        "an unchanged prefill keeps the only decode when no new decode is Ready yet",
        DECODE_ONLY,
        {"prefill": {"P2": 2}, "decode": {"D2": 1}},
        ("decode", "D2"),
        LAST_PATH_OF_ENTRIES,
        "keeps its last Ready decode of revision 2: prefill instances of revision 2 would have no consistent path",
    ),
    (
        "a decode that serves nothing may always go",
        BOTH,
        {"prefill": {"P2": 1}, "decode": {"D2": 1}},
        ("decode", None),
        ALLOWED,
        "",
    ),
    (
        "entries already without a path never hold a replacement back",
        BOTH,
        {"prefill": {"P2": 1, "P3": 1}, "decode": {"D3": 2}},
        ("decode", "D3"),
        ALLOWED,
        "",
    ),
]


@pytest.mark.parametrize(
    ("templates", "ready", "candidate", "case", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_replacement_keeps_consistent_paths_possible(templates, ready, candidate, case, reason):
    role_name, leaving = candidate
    got = replacement_case(view(templates, ready), role_name, leaving, "r3")
    assert (got.case, got.reason) == (case, reason)


# -- through the planner -----------------------------------------------------------------------------


def pd_manifest(*, prefill=2, decode=2, surge=0, unavailable=1, skew="10%", scope="group", groups=1) -> dict:
    return path_manifest(
        {"prefill": prefill, "decode": decode},
        surge=surge,
        unavailable=unavailable,
        skew=skew,
        scope=scope,
        groups=groups,
    )


def path_manifest(
    replicas: dict[str, int], *, surge=0, unavailable=1, skew="10%", scope="group", groups=1, coordinated=None
) -> dict:
    """A ModelServing whose request path is its roles in the order of ``replicas``; ``coordinated``:
    the roles of ``coordination.roles`` (all when None)."""
    coordination = {"maxSkew": skew, **({"roles": list(coordinated)} if coordinated else {})}
    return manifest(
        replicas=groups,
        roles=[
            role(name, replicas=n, maxUnavailable=min(unavailable, n), maxSurge=surge) for name, n in replicas.items()
        ],
        strategy={"type": "RoleRollingUpdate", "roleRollingUpdateConfiguration": {"coordination": coordination}},
        traffic={"path": list(replicas), "scope": scope},
    )


def set_images(cluster: MiniCluster, images: dict[str, str]) -> None:
    ms = cluster.ms[("default", "ms")]
    roles = copy.deepcopy(ms["spec"]["template"]["roles"])
    for r in roles:
        if r["name"] in images:
            r["entryTemplate"]["spec"]["containers"][0]["image"] = images[r["name"]]
    cluster.patch_modelserving("default", "ms", {"spec": {"template": {"roles": roles}}})


def _ready(pod) -> bool:
    meta = pod["metadata"]
    return (
        not meta.get("deletionTimestamp")
        and naming.ANNOTATION_DRAINING not in (meta.get("annotations") or {})
        and any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions") or [])
    )


def stranded_entries(cluster: MiniCluster, scope: str = "group", path=("prefill", "decode")) -> list[str]:
    """Ready pods of the path's first role from which no consistent path exists, judged from the
    labels alone: no revision R they carry has, for every later role, a Ready pod labelled R (in the
    same group with scope ``group``)."""
    serving: dict[tuple, list[set[str]]] = {}
    for pod in cluster.pods.values():
        labels = pod["metadata"]["labels"]
        if _ready(pod):
            key = (labels[naming.LABEL_GROUP_ORDINAL] if scope == "group" else None, labels[naming.LABEL_ROLE])
            serving.setdefault(key, []).append(naming.compat_revisions(labels))
    out = []
    for pod in cluster.pods.values():
        labels = pod["metadata"]["labels"]
        if labels[naming.LABEL_ROLE] != path[0] or not _ready(pod):
            continue
        group = labels[naming.LABEL_GROUP_ORDINAL] if scope == "group" else None
        if not any(
            all(any(rev in revs for revs in serving.get((group, later), [])) for later in path[1:])
            for rev in naming.compat_revisions(labels)
        ):
            out.append(pod["metadata"]["name"])
    return out


def roll(cluster, clock, *, scope="group", path=("prefill", "decode"), max_steps=300):
    """Pass after pass until converged or nothing moves; the oracle checked after every pass's
    writes and again once the kubelet acted. Returns the last result."""
    idle = 0
    result = None
    for _ in range(max_steps):
        result = step(cluster, clock, settle=False)
        assert stranded_entries(cluster, scope, path) == [], result.actions
        cluster.settle()
        assert stranded_entries(cluster, scope, path) == []
        status = cluster.ms[("default", "ms")].get("status") or {}
        if status.get("converged") and not result.actions:
            return result
        idle = idle + 1 if not result.actions else 0
        if idle >= 3:
            return result
    return result


def deployed(m: dict) -> tuple[MiniCluster, FixedClock]:
    cluster, clock = MiniCluster(), FixedClock()
    cluster.create_modelserving(m)
    run_until_converged(cluster, clock)
    return cluster, clock


def converged(cluster) -> bool:
    status = cluster.ms[("default", "ms")].get("status") or {}
    return bool(status.get("converged")) and status.get("currentRevision") == status.get("updateRevision")


def test_a_coordinated_update_of_both_roles_never_strands_an_entry_and_converges():
    cluster, clock = deployed(pd_manifest())
    set_images(cluster, {"prefill": "engine:v2", "decode": "engine:v2"})
    roll(cluster, clock)
    assert converged(cluster)


def test_a_prefill_waits_for_a_ready_decode_of_its_revision_and_says_so():
    cluster, clock = deployed(pd_manifest())
    set_images(cluster, {"prefill": "engine:v2", "decode": "engine:v2"})
    first = step(cluster, clock, settle=False)
    number = cluster.ms[("default", "ms")]["status"]["updateRevision"]
    reasons = [b["reason"] for b in first.blocked if b["role"] == "prefill"]
    assert any("has no Ready instance: new prefill instances would have no consistent path" in r for r in reasons), (
        reasons,
        number,
    )
    assert {a.role for a in first.actions if a.verb in ("drain", "delete")} == {"decode"}


@pytest.mark.parametrize("surge", [0, 1])
def test_a_last_decode_kept_for_old_prefills_counts_as_done_for_max_skew_so_the_roles_never_wait_on_each_other(
    surge,
):
    # Read literally, decode at 4/5 would cap prefill at ceil((0.8 + 0.1) * 10) = 9 of 10 replacements,
    # and the tenth old prefill would keep the last old decode forever.
    cluster, clock = deployed(pd_manifest(prefill=10, decode=5, skew="10%", surge=surge))
    set_images(cluster, {"prefill": "engine:v2", "decode": "engine:v2"})
    roll(cluster, clock, max_steps=600)
    assert converged(cluster)


def test_a_single_decode_without_surge_cannot_move_and_the_stall_names_the_way_out():
    cluster, clock = deployed(pd_manifest(prefill=1, decode=1))
    set_images(cluster, {"prefill": "engine:v2", "decode": "engine:v2"})
    result = roll(cluster, clock)
    assert not converged(cluster)
    stalled = [b for b in result.blocked if b["kind"] == "deadlock"]
    assert stalled and all("maxSurge" in b["reason"] for b in stalled)


def test_a_single_decode_with_surge_converges_without_stranding_an_entry():
    cluster, clock = deployed(pd_manifest(prefill=1, decode=1, surge=1))
    set_images(cluster, {"prefill": "engine:v2", "decode": "engine:v2"})
    roll(cluster, clock)
    assert converged(cluster)


def test_blind_routing_leaves_the_order_to_the_budgets():
    m = pd_manifest()
    m["spec"]["traffic"]["routing"] = "blind"
    cluster, clock = deployed(m)
    set_images(cluster, {"prefill": "engine:v2", "decode": "engine:v2"})
    first = step(cluster, clock, settle=False)
    assert "prefill" in {a.role for a in first.actions if a.verb in ("drain", "delete")}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    prefill=st.integers(1, 3),
    decode=st.integers(1, 3),
    surge=st.integers(0, 1),
    unavailable=st.integers(1, 2),
    skew=st.sampled_from(["10%", "50%", "100%"]),
    scope=st.sampled_from(["group", "any"]),
    groups=st.integers(1, 2),
    changed=st.sampled_from([("prefill",), ("decode",), ("prefill", "decode")]),
)
def test_after_every_pass_of_a_random_coordinated_update_each_ready_entry_has_a_consistent_path(
    prefill, decode, surge, unavailable, skew, scope, groups, changed
):
    cluster, clock = deployed(
        pd_manifest(
            prefill=prefill,
            decode=decode,
            surge=surge,
            unavailable=min(unavailable, prefill, decode),
            skew=skew,
            scope=scope,
            groups=groups,
        )
    )
    set_images(cluster, dict.fromkeys(changed, "engine:v2"))
    result = roll(cluster, clock, scope=scope)
    # It either converges or says it is stalled and how to free it: never a silent wait.
    if not converged(cluster):
        assert any(b["kind"] == "deadlock" for b in result.blocked), result.blocked


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 2)),
    surge=st.integers(0, 1),
    skew=st.sampled_from(["10%", "50%"]),
    scope=st.sampled_from(["group", "any"]),
    changed=st.sets(st.sampled_from(["router", "prefill", "decode"]), min_size=1),
)
def test_a_three_hop_path_keeps_every_ready_entry_on_a_consistent_path_after_every_pass(
    sizes, surge, skew, scope, changed
):
    path = ("router", "prefill", "decode")
    cluster, clock = deployed(path_manifest(dict(zip(path, sizes)), surge=surge, skew=skew, scope=scope))
    set_images(cluster, dict.fromkeys(changed, "engine:v2"))
    result = roll(cluster, clock, scope=scope, path=path)
    if not converged(cluster):
        assert any(b["kind"] == "deadlock" for b in result.blocked), result.blocked


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    surge=st.integers(0, 1),
    coordinated=st.sampled_from([["prefill"], ["decode"]]),
    changed=st.sampled_from([("prefill",), ("decode",), ("prefill", "decode")]),
)
def test_a_path_role_left_out_of_coordination_still_never_strands_a_ready_entry(sizes, surge, coordinated, changed):
    cluster, clock = deployed(
        path_manifest(dict(zip(("prefill", "decode"), sizes)), surge=surge, coordinated=coordinated)
    )
    set_images(cluster, dict.fromkeys(changed, "engine:v2"))
    result = roll(cluster, clock)
    if not converged(cluster):
        assert any("consistent path" in b["reason"] for b in result.blocked), result.blocked
