"""Helpers shared by the planner tests (on top of ``harness``)."""

from __future__ import annotations

import copy
import weakref
from collections.abc import Callable
from typing import Any

from controller.core import naming
from controller.core.observe import observe
from controller.core.passcache import PassCache
from controller.core.planner import plan
from controller.core.revisions import History
from controller.core.spec import parse_modelserving
from controller.core.view import build_view
from tests.factories import coordinated, group_strategy, inplace_strategy, prefill_decode, role_strategy

from .harness import FixedClock, MiniCluster, manifest, run_until_converged, step

NS = "default"
NAME = "ms"


def deploy(m: dict, *, gpus: int | None = None, settings=None) -> tuple[MiniCluster, FixedClock]:
    """A cluster running ``m`` fully converged, with an empty log."""
    cluster, clock = MiniCluster(gpus=gpus), FixedClock()
    cluster.create_modelserving(m)
    run_until_converged(cluster, clock, settings=settings)
    cluster.log.clear()
    return cluster, clock


def spec(cluster: MiniCluster) -> dict:
    return cluster.ms[(NS, NAME)]["spec"]


def status(cluster: MiniCluster) -> dict:
    return cluster.ms[(NS, NAME)].get("status") or {}


def patch_spec(cluster: MiniCluster, patch: dict) -> None:
    cluster.patch_modelserving(NS, NAME, {"spec": patch})


def change_image(cluster: MiniCluster, image: str, roles: list[str] | None = None) -> None:
    """Set the first container's image in the entry and worker templates of ``roles`` (all)."""
    rs = copy.deepcopy(spec(cluster)["template"]["roles"])
    for r in rs:
        if roles is None or r["name"] in roles:
            for key in ("entryTemplate", "workerTemplate"):
                if r.get(key):
                    r[key]["spec"]["containers"][0]["image"] = image
    patch_spec(cluster, {"template": {"roles": rs}})


def label(pod: dict, key: str) -> str:
    return pod["metadata"]["labels"][key]


def group_of(pod: dict) -> int:
    return int(label(pod, naming.LABEL_GROUP_ORDINAL))


def pods_of_group(cluster: MiniCluster, ordinal: int) -> list[dict]:
    return [p for p in cluster.pods.values() if group_of(p) == ordinal]


def group_revisions(cluster: MiniCluster) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for p in cluster.pods.values():
        out.setdefault(group_of(p), set()).add(label(p, naming.LABEL_REVISION))
    return dict(sorted(out.items()))


def group_images(cluster: MiniCluster) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for p in cluster.pods.values():
        out.setdefault(group_of(p), set()).update(c["image"] for c in p["spec"]["containers"])
    return dict(sorted(out.items()))


def lose_group(cluster: MiniCluster, ordinal: int) -> None:
    """Every pod of the group vanishes (node failure, manual deletion)."""
    for name in [n for n, p in cluster.pods.items() if group_of(p) == ordinal]:
        del cluster.pods[name]


def lose_pods(cluster: MiniCluster, *names: str) -> None:
    for name in names:
        del cluster.pods[name]


def set_not_ready(cluster: MiniCluster, name: str) -> None:
    pod = cluster.pods[name]
    conds = [c for c in pod["status"]["conditions"] if c["type"] != "Ready"]
    pod["status"]["conditions"] = conds + [{"type": "Ready", "status": "False"}]


def log_groups(cluster: MiniCluster, verb: str) -> list[int]:
    """Group ordinals in the order the cluster saw ``verb`` on their entry pods."""
    out = []
    for v, name in cluster.log:
        if v == verb and name.endswith("-0-0"):
            out.append(int(name.split("-")[1]))
    return out


def actions(result) -> list[tuple]:
    return [(a.verb, a.group, a.role, a.ordinal) for a in result.actions]


def update_deletes(result) -> list:
    return [a for a in result.actions if a.verb in ("delete", "drain") and a.reason == "rolling update"]


def available_groups(cluster: MiniCluster, m: dict | None = None) -> set[int]:
    """Groups whose every desired instance has all its pods Ready, none draining or deleting."""
    ms = parse_modelserving(m or cluster.ms[(NS, NAME)])
    observed = observe(list(cluster.pods.values()))
    out = set()
    for o, group in observed.groups.items():
        ok = True
        for r in ms.roles:
            for k in range(r.replicas):
                inst = group.instances.get((r.name, k))
                if inst is None or not inst.ready(r.pods_per_instance):
                    ok = False
        if ok:
            out.add(o)
    return out


def history(cluster: MiniCluster) -> History:
    return History.from_objects(cluster.list_revisions(NS, NAME))


def blocked_for(result, group: int | None = None, role: Any = ...) -> list[str]:
    return [
        b["reason"]
        for b in result.blocked
        if (group is None or b["group"] == group) and (role is ... or b["role"] == role)
    ]


# The cache a controller of each test cluster carries from pass to pass (``passcache``).
_CACHES: weakref.WeakKeyDictionary[MiniCluster, PassCache] = weakref.WeakKeyDictionary()


def cache_of(cluster: MiniCluster) -> PassCache:
    """The pass cache of ``cluster``'s controller: one per cluster, kept across its passes."""
    cache = _CACHES.get(cluster)
    if cache is None:
        cache = _CACHES[cluster] = PassCache()
    return cache


def plan_with_and_without_memos(cluster: MiniCluster, clock: FixedClock) -> tuple[dict, dict]:
    """The plan of the next pass (actions, blocked reasons, status) computed through the cache the
    previous passes left (``cache_of``), and with no cache (the reference): a cache must never
    change a plan."""
    ms = parse_modelserving(cluster.ms[(NS, NAME)])
    hist, st, pods = history(cluster), status(cluster), cluster.list_pods(NS, NAME)

    def summary(result) -> dict:
        return {
            "actions": [a.to_trace() for a in result.actions],
            "blocked": [b.to_json() for b in result.blocked],
            "status": result.status,
        }

    cache = cache_of(cluster)
    memoised = summary(plan(ms, hist, observe(pods, cache=cache), clock.t, status=st, cache=cache))
    return memoised, summary(plan(ms, hist, observe(pods), clock.t, status=st))


def view_with_and_without_memos(
    cluster: MiniCluster, clock: FixedClock, in_flight: dict[str, int] | None = None
) -> tuple[dict, dict]:
    """The state view of the cluster now built through the cache earlier builds left
    (``cache_of``), and with no cache (the reference): a cache must never change a view.
    ``in_flight``: the router's counts, by pod name."""
    obj = cluster.ms[(NS, NAME)]
    pods, revisions = cluster.list_pods(NS, NAME), cluster.list_revisions(NS, NAME)
    memoised = build_view(obj, pods, revisions, in_flight or {}, clock.t, cache=cache_of(cluster))
    return memoised, build_view(obj, pods, revisions, in_flight or {}, clock.t)


# One rollout per strategy shape, which the memo tests drive from start to convergence.
ROLLOUTS = {
    "group rolling, 1 unavailable": dict(strategy=group_strategy(maxUnavailable=1)),
    "group rolling with a partition": dict(strategy=group_strategy(maxUnavailable=1, partition=2)),
    "group rolling with surge": dict(strategy=group_strategy(maxUnavailable=0, maxSurge=1)),
    "role rolling, coordinated": dict(strategy=coordinated("50%", deps={"prefill": ["decode"]})),
    "role rolling": dict(strategy=role_strategy()),
    "in place": dict(strategy=inplace_strategy()),
    "servinggroup recreate": dict(strategy=group_strategy(maxUnavailable=1), recovery="ServingGroupRecreate"),
}


def every_pass_of_a_rollout(rollout: str, check: Callable[[MiniCluster, FixedClock, int], None]) -> None:
    """``check(cluster, clock, n)`` before each pass ``n`` of ``ROLLOUTS[rollout]`` on 4 groups of
    prefill and 2 decode to engine:v2 (pods changing a few at a time, groups replaced, a pod lost
    after pass 5), until the rollout converged."""
    m = manifest(replicas=4, roles=prefill_decode(decode_replicas=2), **ROLLOUTS[rollout])
    cluster, clock = deploy(m)
    change_image(cluster, "engine:v2")
    for n in range(60):
        check(cluster, clock, n)
        if n == 5:
            lose_pods(cluster, next(iter(cluster.pods)))
        result = step(cluster, clock)
        if (status(cluster).get("converged") and not result.actions) and n > 5:
            break
    assert status(cluster).get("converged")
