"""Hypothesis properties of the planner over random specs and observed states.

A random ModelServing (1-6 groups, 1-3 roles with 1-3 instances and 0-2 workers, random budgets
including percentages, a random partition, ServingGroupRollingUpdate or RoleRollingUpdate) is
deployed, its image is changed, and the harness is driven through random operations: passes with
and without the kubelet settling, pods deleted, pods failing, pods turning unready, pause and
resume, a second template change mid-rollout, scaling, revisions corrupted, and controller "restarts"
(the controller keeps no memory, so a restart is simply another pass from cluster state).

On every pass these hold:

- the pass's own update removals (deletes and drains for the rolling update) never take
  availability below ``replicas - maxUnavailable`` (groups, or a role's instances inside each group);
- never more than ``replicas + maxSurge`` groups (or instances of a role in a group) stay in service;
- no update removal touches a protected ordinal (below the partition);
- every pod created comes from a revision the controller can read, with that revision's template;

and, once the disturbances stop (resumed, revisions repaired), repeated planning against the
obeying cluster converges within a bound.
"""

from __future__ import annotations

import copy
import json
import os

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from controller.core import naming
from controller.core.observe import observe
from controller.core.revisions import canonicalize_data, parse_revision
from controller.core.spec import ValidationError, parse_modelserving
from tests import contract

from .harness import CountingRouter, FixedClock, MiniCluster, manifest, role, step
from .support import (
    NAME,
    NS,
    change_image,
    patch_spec,
    plan_with_and_without_memos,
    status,
    view_with_and_without_memos,
)

# Every recovery policy allowed with each strategy type (ServingGroupRecreate with
# RoleRollingUpdate is refused by validation).
RECOVERY_GROUP_LEVEL = ["RoleRecreate", "ServingGroupRecreate", "None"]
RECOVERY_ROLE_LEVEL = ["RoleRecreate", "None"]
UPDATE_REASONS = ("rolling update", "surge no longer needed")
CONVERGENCE_BOUND = 150

budget_values = st.sampled_from([0, 1, 2, 3, "0%", "25%", "34%", "50%", "100%"])
surge_values = st.sampled_from([0, 0, 1, 2, "25%", "50%"])
partition_values = st.sampled_from([None, 0, 1, 2, "20%", "50%"])


@st.composite
def modelservings(draw, group_recovery=RECOVERY_GROUP_LEVEL, role_recovery=RECOVERY_ROLE_LEVEL):
    strategy_type = draw(st.sampled_from(["ServingGroupRollingUpdate", "RoleRollingUpdate"]))
    replicas = draw(st.integers(1, 6))
    names = draw(st.lists(st.sampled_from(["prefill", "decode", "router"]), min_size=1, max_size=3, unique=True))
    roles = []
    for name in names:
        extra = {}
        if strategy_type == "RoleRollingUpdate":
            extra["maxUnavailable"] = draw(budget_values)
            extra["maxSurge"] = draw(surge_values)
            p = draw(partition_values)
            if p is not None:
                extra["partition"] = p
        roles.append(role(name, replicas=draw(st.integers(1, 3)), workers=draw(st.integers(0, 2)), **extra))
    strategy: dict = {"type": strategy_type}
    if strategy_type == "ServingGroupRollingUpdate":
        cfg = {"maxUnavailable": draw(budget_values), "maxSurge": draw(surge_values)}
        p = draw(partition_values)
        if p is not None:
            cfg["partition"] = p
        strategy["rollingUpdateConfiguration"] = cfg
        recovery = draw(st.sampled_from(group_recovery))
    else:
        recovery = draw(st.sampled_from(role_recovery))
    drain = draw(st.sampled_from([0, 0, 3]))
    m = manifest(replicas=replicas, roles=roles, strategy=strategy, recovery=recovery, drain={"timeoutSeconds": drain})
    try:
        parse_modelserving(m)
    except ValidationError:
        # both budgets resolving to 0 is invalid by design: use a legal neighbour instead
        if strategy_type == "ServingGroupRollingUpdate":
            m["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]["maxUnavailable"] = 1
        else:
            for r in m["spec"]["template"]["roles"]:
                r["maxUnavailable"] = 1
        parse_modelserving(m)
    return m


operations = st.lists(
    st.one_of(
        st.tuples(st.just("step"), st.booleans()),  # settle afterwards or not
        st.tuples(st.just("restart"), st.just(None)),
        st.tuples(st.just("lose-pod"), st.integers(0, 10_000)),
        st.tuples(st.just("fail-pod"), st.integers(0, 10_000)),
        st.tuples(st.just("unready-pod"), st.integers(0, 10_000)),
        st.tuples(st.just("lose-group"), st.integers(0, 5)),
        st.tuples(st.just("pause"), st.booleans()),
        st.tuples(st.just("change-image"), st.sampled_from(["engine:v3", "engine:v1", "engine:v4"])),
        st.tuples(st.just("corrupt"), st.integers(0, 10_000)),
        st.tuples(st.just("scale"), st.integers(1, 6)),
        st.tuples(st.just("traffic"), st.integers(0, 10_000)),
    ),
    min_size=5,
    max_size=30,
)


# --------------------------------------------------------------------------------------------
# What the cluster holds, seen the way the planner sees it


def _ms(cluster):
    return parse_modelserving(cluster.get_modelserving(NS, NAME))


def _available_instances(cluster, ms):
    """{(group, role): set of available instance ordinals}, and the set of available groups.

    Read from the pods with the contract's words, not the planner's observation: an instance is
    available when every one of its pods (entry plus workers, pod indexes 0..workers) exists, has
    not ended (phase Failed or Succeeded), has the Kubernetes Ready condition True, and is neither
    terminating nor marked draining (the router sends it nothing). A group is available when
    every instance of every role is, at ordinals 0..replicas-1, and none of its pods is being
    taken away."""
    pods_of: dict[tuple[int, str, int], dict[int, dict]] = {}
    removing_groups: set[int] = set()
    for pod in cluster.pods.values():
        meta = pod["metadata"]
        labels = meta["labels"]
        o = int(labels[naming.LABEL_GROUP_ORDINAL])
        key = (o, labels[naming.LABEL_ROLE], int(labels[naming.LABEL_ROLE_ORDINAL]))
        pods_of.setdefault(key, {})[int(labels[naming.LABEL_POD_INDEX])] = pod
        if meta.get("deletionTimestamp") or naming.ANNOTATION_DRAINING in (meta.get("annotations") or {}):
            removing_groups.add(o)

    def pod_serving(pod) -> bool:
        meta = pod["metadata"]
        if meta.get("deletionTimestamp") or naming.ANNOTATION_DRAINING in (meta.get("annotations") or {}):
            return False
        status = pod.get("status") or {}
        if status.get("phase") in ("Failed", "Succeeded"):
            return False  # a pod that has ended serves nothing, whatever its last Ready condition said
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])

    def available(key, pods_per_instance: int) -> bool:
        pods = pods_of.get(key, {})
        return all(i in pods and pod_serving(pods[i]) for i in range(pods_per_instance))

    per_role: dict[tuple[int, str], set[int]] = {}
    for o, rname, k in pods_of:
        r = ms.role(rname)
        if r is not None and available((o, rname, k), r.pods_per_instance):
            per_role.setdefault((o, rname), set()).add(k)
    groups = {
        o
        for o in {key[0] for key in pods_of}
        if o not in removing_groups
        and all(available((o, r.name, k), r.pods_per_instance) for r in ms.roles for k in range(r.replicas))
    }
    return per_role, groups


def _in_service(cluster):
    """Groups and (group, role) instances with at least one pod that is neither draining nor deleting."""
    groups: set[int] = set()
    instances: dict[tuple[int, str], set[int]] = {}
    for pod in cluster.pods.values():
        meta = pod["metadata"]
        if meta.get("deletionTimestamp") or naming.ANNOTATION_DRAINING in (meta.get("annotations") or {}):
            continue
        labels = meta["labels"]
        o = int(labels[naming.LABEL_GROUP_ORDINAL])
        groups.add(o)
        instances.setdefault((o, labels[naming.LABEL_ROLE]), set()).add(int(labels[naming.LABEL_ROLE_ORDINAL]))
    return groups, instances


def _readable(cluster):
    out = {}
    for obj in cluster.revisions.values():
        rev = parse_revision(obj)
        if rev.readable:
            out[rev.hash] = rev.data
    return out


# --------------------------------------------------------------------------------------------
# The checks of one pass


def checked_step(cluster, clock, router, *, settle):
    ms = _ms(cluster)
    spec = cluster.get_modelserving(NS, NAME)["spec"]
    group_budgets, role_budgets = contract.group_budgets(spec), contract.role_budgets(spec)
    role_avail, group_avail = _available_instances(cluster, ms)
    readable_before = _readable(cluster)
    memoised, fresh = plan_with_and_without_memos(cluster, clock)
    assert memoised == fresh, "the planner's memos changed a plan"
    leaving = [p.name for p in observe(cluster.list_pods(NS, NAME)).leaving_routing]
    memoised, fresh = view_with_and_without_memos(
        cluster, clock, {name: router.in_flight(NS, name) for name in leaving}
    )
    assert memoised == fresh, "the view's memos changed a view"
    result = step(cluster, clock, router, settle=False)
    readable = {**readable_before, **_readable(cluster)}

    removals = [a for a in result.actions if a.verb in ("delete", "drain") and a.reason in UPDATE_REASONS]
    if ms.role_level:
        touched: dict[tuple[int, str], set[int]] = {}
        for a in removals:
            assert a.role is not None and a.ordinal is not None
            r = ms.role(a.role)
            partition = role_budgets[a.role].partition
            if a.reason == "rolling update":
                assert not (a.ordinal < partition), (
                    f"update removal of protected {a.role}-{a.ordinal} (partition {partition}): {a.describe()}"
                )
            touched.setdefault((a.group, a.role), set()).add(a.ordinal)
            assert r is not None
        for (o, rname), ks in touched.items():
            avail = role_avail.get((o, rname), set())
            lost = ks & avail
            if lost:
                floor = ms.role(rname).replicas - role_budgets[rname].max_unavailable
                assert len(avail) - len(lost) >= floor, (
                    f"group {o} role {rname}: available {sorted(avail)}, update removes {sorted(lost)}, floor {floor}"
                )
    else:
        partition = group_budgets.partition
        # "scale" too at group level: a Ready group beyond replicas of an older revision (the surge
        # of a rollout replaced by a newer one) is not removed below the floor either.
        # Only inside the surge slots: a group at replicas + maxSurge or beyond must go whatever
        # the floor, since at most replicas + maxSurge groups exist (docs/concepts.md).
        scaled = [
            a
            for a in result.actions
            if a.verb in ("delete", "drain") and a.reason == "scale" and a.group < ms.replicas + group_budgets.max_surge
        ]
        touched_groups = {a.group for a in removals + scaled}
        for a in removals:
            if a.reason == "rolling update":
                assert a.group >= partition, (
                    f"update removal of protected group {a.group} (partition {partition}): {a.describe()}"
                )
        lost = touched_groups & group_avail
        if lost:
            floor = ms.replicas - group_budgets.max_unavailable
            assert len(group_avail) - len(lost) >= floor, (
                f"available {sorted(group_avail)}, update removes {sorted(lost)}, floor {floor}"
            )

    # Never more than replicas + maxSurge in service.
    groups, instances = _in_service(cluster)
    if ms.role_level:
        assert all(o < ms.replicas for o in groups), f"role-level strategies have no surge groups: {sorted(groups)}"
        for (o, rname), ks in instances.items():
            r = ms.role(rname)
            if r is not None and o < ms.replicas:
                assert len(ks) <= r.replicas + role_budgets[rname].max_surge, (
                    f"group {o} role {rname} has {sorted(ks)} in service"
                )
    else:
        assert len(groups) <= ms.replicas + group_budgets.max_surge, f"groups in service {sorted(groups)}"

    # Every created pod comes from a readable revision, with that revision's template.
    for a in result.actions:
        if a.verb != "create":
            continue
        assert a.revision in readable, f"created {a.pod_names} from unreadable or unknown revision {a.revision}"
        data = readable[a.revision]
        (rdata,) = [r for r in data["roles"] if r["name"] == a.role]
        for pod in a.pods:
            assert pod["metadata"]["labels"][naming.LABEL_REVISION] == a.revision
            index = int(pod["metadata"]["labels"][naming.LABEL_POD_INDEX])
            template = rdata["entryTemplate"] if index == 0 else rdata.get("workerTemplate") or rdata["entryTemplate"]
            want = [c["image"] for c in template["spec"]["containers"]]
            assert [c["image"] for c in pod["spec"]["containers"]] == want

    if settle:
        cluster.settle()
    return result


# --------------------------------------------------------------------------------------------


def _pod_names(cluster):
    return sorted(cluster.pods)


def _apply_operation(cluster, clock, router, op, arg, saved):
    if op == "step":
        checked_step(cluster, clock, router, settle=arg)
    elif op == "restart":
        # a new controller process: nothing but the cluster survives (a fresh router too)
        checked_step(cluster, clock, CountingRouter(), settle=True)
    elif op in ("lose-pod", "fail-pod", "unready-pod"):
        names = _pod_names(cluster)
        if not names:
            return
        pod = cluster.pods[names[arg % len(names)]]
        if op == "lose-pod":
            del cluster.pods[pod["metadata"]["name"]]
        elif op == "fail-pod":
            pod["status"]["phase"] = "Failed"
        else:
            conds = [c for c in pod["status"].get("conditions", []) if c["type"] != "Ready"]
            pod["status"]["conditions"] = conds + [{"type": "Ready", "status": "False"}]
    elif op == "lose-group":
        for name in [
            n for n, p in cluster.pods.items() if p["metadata"]["labels"][naming.LABEL_GROUP_ORDINAL] == str(arg)
        ]:
            del cluster.pods[name]
    elif op == "pause":
        patch_spec(cluster, {"paused": arg})
    elif op == "traffic":
        # requests in flight on a pod (0-3): a drain of it waits, up to drain.timeoutSeconds
        names = _pod_names(cluster)
        if names:
            router.counts[names[arg % len(names)]] = arg % 4
    elif op == "scale":
        # An API server with our validation refuses a scale that makes the spec invalid (say
        # maxUnavailable 25% of 1 group -> 0 with maxSurge 0); the operator never gets it in.
        candidate = copy.deepcopy(cluster.get_modelserving("default", "ms"))
        candidate["spec"]["replicas"] = arg
        try:
            parse_modelserving(candidate)
        except ValidationError:
            return
        patch_spec(cluster, {"replicas": arg})
    elif op == "change-image":
        change_image(cluster, arg)
    elif op == "corrupt":
        names = sorted(cluster.revisions)
        if names:
            name = names[arg % len(names)]
            saved.setdefault(name, copy.deepcopy(cluster.revisions[name]["data"]))
            cluster.revisions[name]["data"] = "<corrupted>"


def _converge(cluster, clock, router):
    for n in range(CONVERGENCE_BOUND):
        result = checked_step(cluster, clock, router, settle=True)
        st_ = status(cluster)
        if st_.get("converged") and not result.actions:
            return n
    raise AssertionError(
        f"did not converge within {CONVERGENCE_BOUND} passes; blocked: {json.dumps(result.blocked)[:800]}"
    )


def run_scenario(m, ops, settle_first):
    cluster, clock, router = MiniCluster(), FixedClock(), CountingRouter()
    cluster.create_modelserving(m)
    _converge(cluster, clock, router)
    change_image(cluster, "engine:v2")
    for _ in range(settle_first):
        checked_step(cluster, clock, router, settle=True)
    saved: dict[str, object] = {}
    for op, arg in ops:
        _apply_operation(cluster, clock, router, op, arg, saved)
    # the disturbances stop: resume, repair what was corrupted, let the kubelet catch up
    for name, data in saved.items():
        if name in cluster.revisions:
            cluster.revisions[name]["data"] = data
    if cluster.get_modelserving(NS, NAME)["spec"].get("paused"):
        patch_spec(cluster, {"paused": False})
    _converge(cluster, clock, router)

    # converged means: every eligible group / instance on the update revision, all Ready
    ms = _ms(cluster)
    spec = cluster.get_modelserving(NS, NAME)["spec"]
    group_budgets, role_budgets = contract.group_budgets(spec), contract.role_budgets(spec)
    st_ = status(cluster)
    update = st_["updateRevision"]
    _, group_avail = _available_instances(cluster, ms)
    assert group_avail == set(range(ms.replicas))
    if not ms.role_level:
        partition = group_budgets.partition
        readable = _readable(cluster)
        for pod in cluster.pods.values():
            o = int(pod["metadata"]["labels"][naming.LABEL_GROUP_ORDINAL])
            if o >= partition:
                # the update revision, or one whose data is the same (a salted twin after a collision)
                rev = pod["metadata"]["labels"][naming.LABEL_REVISION]
                assert canonicalize_data(readable[rev]) == canonicalize_data(readable[update])
        if partition == 0:
            assert st_["currentRevision"] == update
    else:
        for pod in cluster.pods.values():
            labels = pod["metadata"]["labels"]
            k = int(labels[naming.LABEL_ROLE_ORDINAL])
            rname = labels[naming.LABEL_ROLE]
            if k >= role_budgets[rname].partition:
                images = {c["image"] for c in pod["spec"]["containers"]}
                want = {
                    c["image"]
                    for r in cluster.ms[(NS, NAME)]["spec"]["template"]["roles"]
                    if r["name"] == rname
                    for c in r["entryTemplate"]["spec"]["containers"]
                }
                assert images == want


PROPERTY_SETTINGS = settings(
    max_examples=int(os.environ.get("PROPERTY_EXAMPLES", "60")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _manifest_for_example(recovery, strategy, roles):
    return manifest(replicas=2, roles=roles, strategy=strategy, recovery=recovery, drain={"timeoutSeconds": 0})


GROUP_STRATEGY = {"type": "ServingGroupRollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": 1}}

# Regressions the property found (fixed in core): each livelocked or broke a budget.
SGR_WHOLE_INSTANCE_LOST = _manifest_for_example(
    "ServingGroupRecreate", GROUP_STRATEGY, [role("prefill"), role("decode")]
)
NONE_ROLE_LEVEL = _manifest_for_example("None", {"type": "RoleRollingUpdate"}, [role("decode", replicas=2, workers=1)])
SURGE_SCALE_DOWN = manifest(
    replicas=3,
    roles=[role("prefill")],
    strategy={
        "type": "ServingGroupRollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 0, "maxSurge": "50%"},
    },
    drain={"timeoutSeconds": 0},
)

# Scale-down while a lost pod keeps a group unavailable: group 4 must go (at most replicas + maxSurge
# groups exist) even though the floor would like it kept.
SCALE_DOWN_BELOW_FLOOR = manifest(
    replicas=5,
    roles=[role("prefill")],
    strategy={"type": "ServingGroupRollingUpdate", "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 0}},
    drain={"timeoutSeconds": 0},
)

# Role level: the surge instance's slot (instance 3) still terminating while instance 0 is lost and
# refilled; the surge must wait for the slot, not take instance 4.
ROLE_SURGE_SLOT_TERMINATING = manifest(
    replicas=1,
    roles=[role("prefill", replicas=3, workers=0, maxUnavailable=0, maxSurge=1)],
    strategy={"type": "RoleRollingUpdate"},
    drain={"timeoutSeconds": 0},
)


@PROPERTY_SETTINGS
@given(m=modelservings(), ops=operations, settle_first=st.integers(0, 6))
@example(
    m=ROLE_SURGE_SLOT_TERMINATING,
    ops=[("step", False)] * 10 + [("change-image", "engine:v3"), ("step", False), ("lose-pod", 0)],
    settle_first=0,
)
@example(
    m=SCALE_DOWN_BELOW_FLOOR,
    ops=[("restart", None), ("step", False), ("step", False), ("lose-pod", 0), ("scale", 4)],
    settle_first=2,
)
@example(
    m=SGR_WHOLE_INSTANCE_LOST,
    ops=[("change-image", "engine:v1"), ("lose-pod", 0), ("step", True), ("step", True)],
    settle_first=0,
)
@example(m=NONE_ROLE_LEVEL, ops=[("lose-pod", 3), ("step", True), ("step", True)], settle_first=0)
@example(
    m=SURGE_SCALE_DOWN,
    ops=[("scale", 1), ("pause", True), ("step", False), ("step", False), ("step", False)],
    settle_first=1,
)
def test_the_planner_keeps_its_budgets_on_every_pass_and_converges(m, ops, settle_first):
    run_scenario(m, ops, settle_first)
