"""Planner benchmark: one reconcile pass's pure work (observe + plan) mid-rollout, and plan alone.

Shape: N ServingGroups x 4 roles x 8 pods (each role has one instance of 1 entry + 7 workers, so
8 pods per role and 32 per group). 1,000 groups = 32,000 pods; a tenth of that = 3,200 pods.

Mid-rollout: the top 40% of ordinals are on the new revision, one group is being replaced (its pods
terminating), the rest are old and Ready. A reconcile pass observes the pods (pods -> instances ->
groups) then plans. Observation is measured warm: the pods are unchanged since the last pass, as
nearly all pods are between two passes (their parse is cached by uid and resourceVersion); the
cold parse of every pod is reported too.

Output: a table (medians of wall time, and of CPU time: on a shared machine CPU time is the steadier
figure); with ``--json`` the last line is
``[{"pods": 3200, "ms": ..., "observe_plan_ms": ...}, {"pods": 32000, ...}]`` (``ms`` = median of plan()).

Through the Kubernetes adapter (``--no-adapter`` skips it): the 32,000 pods are put in the API
server double (``tests/kubernetes/apiserver_double.py``, real HTTP), the adapter's pod cache
(``controller.k8s.informer``) LISTs them once and watches; a pass is then ``list_pods`` from the cache
+ observe + plan, measured warm (nothing changed since the last pass) and after 1 % of the pods
(10 groups) changed through the double's watch since the last pass (the wait for those events is
not timed: each pass starts once the cache holds them, as it does when it waits for a write). This
part runs with a Celery pool process's garbage-collector settings (``rolloutui.gctuning``).

Targets at 32,000 pods on a 2-core machine: one pass (observe + plan) under 40 ms, plan alone under
20 ms, cost growing no faster than linearly; a pass through the Kubernetes adapter under 25 ms
(issue 27: it was 28 ms with a plain list, every pod decoded anew by each LIST).

Figures measured so far, with their dates and the host's speed: bench/README.md.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from typing import Any

from controller.core import naming
from controller.core.observe import observe, parse_pod
from controller.core.passcache import PassCache
from controller.core.planner import plan
from controller.core.podtemplate import build_instance_pods
from controller.core.ports import SharedObjects
from controller.core.revisions import History, RevisionAction, project, revision_hash, revision_object
from controller.core.spec import parse_modelserving

ROLES = ("prefill", "decode", "router", "kvcache")
WORKERS = 7  # 1 entry + 7 workers = 8 pods per role instance
# Issue 15's targets at 32,000 pods, medians of wall time.
PASS_TARGET_MS = 40
PLAN_TARGET_MS = 20
# Issue 27: a pass on Kubernetes (the adapter's pods) at 32,000 pods.
ADAPTER_TARGET_MS = 25


def _manifest(groups: int, image: str) -> dict[str, Any]:
    def role(name: str) -> dict[str, Any]:
        container = {"name": "engine", "image": image, "resources": {"limits": {naming.GPU_RESOURCE: "1"}}}
        return {
            "name": name,
            "replicas": 1,
            "workerReplicas": WORKERS,
            "entryTemplate": {"spec": {"containers": [dict(container)]}},
            "workerTemplate": {"spec": {"containers": [dict(container)]}},
        }

    return {
        "apiVersion": naming.API_VERSION,
        "kind": "ModelServing",
        "metadata": {"name": "big", "namespace": "default", "uid": "uid-big", "generation": 2},
        "spec": {
            "replicas": groups,
            "rolloutStrategy": {
                "type": "ServingGroupRollingUpdate",
                "rollingUpdateConfiguration": {"maxUnavailable": "1%"},
            },
            "template": {"roles": [role(n) for n in ROLES]},
        },
    }


def _ready(pod: dict[str, Any], uid: str) -> dict[str, Any]:
    pod["metadata"]["uid"] = uid
    pod["metadata"]["resourceVersion"] = "1"
    pod["spec"]["nodeName"] = "node"
    pod["status"] = {
        "phase": "Running",
        "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}],
        "containerStatuses": [
            {"name": "engine", "ready": True, "restartCount": 0, "image": pod["spec"]["containers"][0]["image"]}
        ],
    }
    return pod


# The benchmark's controller cache (``core.passcache``): one for the process, as a reconcile worker
# keeps one per ModelServing across its passes.
CACHE = PassCache()


def build_state(groups: int) -> tuple[Any, History, Any, dict[str, Any], list[dict[str, Any]]]:
    old = _manifest(groups, "engine:v1")
    new = _manifest(groups, "engine:v2")
    old_data, new_data = project(old["spec"]), project(new["spec"])
    old_hash, new_hash = revision_hash(old_data), revision_hash(new_data)
    revisions = [
        revision_object(new, RevisionAction("create", f"big-{old_hash}", old_hash, 1, old_data)),
        revision_object(new, RevisionAction("create", f"big-{new_hash}", new_hash, 2, new_data)),
    ]
    history = History.from_objects(revisions)
    updated_from = groups - max(groups * 4 // 10, 1)
    pods: list[dict[str, Any]] = []
    uid = 0
    for g in range(groups):
        rev, data = (new_hash, new_data) if g >= updated_from else (old_hash, old_data)
        for role in data["roles"]:
            for pod in build_instance_pods(
                ms=new, revision_hash=rev, role_data=role, group=g, ordinal=0, in_place_gate=False
            ):
                uid += 1
                pod = _ready(pod, f"u{uid}")
                if g == updated_from - 1:
                    pod["metadata"]["deletionTimestamp"] = "2026-11-29T00:00:00Z"
                pods.append(pod)
    status = {"currentRevision": old_hash, "updateRevision": new_hash}
    return parse_modelserving(new), history, observe(pods, cache=CACHE), status, pods


def _median_ms(fn, repeats: int, *, collect: bool = True) -> tuple[float, float]:
    """(median wall ms, median CPU ms) of ``fn()`` over ``repeats`` runs."""
    wall, cpu = [], []
    for _ in range(repeats):
        if collect:
            # Collect first so a collection of the 32,000 pod dicts built above is not billed to fn.
            gc.collect()
        started, started_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
    return round(statistics.median(wall), 2), round(statistics.median(cpu), 2)


def measure(groups: int, repeats: int) -> dict[str, Any]:
    ms, history, observed, status, plain = build_state(groups)
    # As the embedded cluster's store and the in-memory simulator list them: an unchanged pod is
    # the same object from one list to the next (``ports.SharedObjects``). ``plain`` is a list as
    # the Kubernetes adapter returns it, every pod read by its uid and resourceVersion.
    pods = SharedObjects(plain)
    cache = CACHE  # a controller's cache, carried from pass to pass (``core.passcache``)
    observe(pods, cache=cache)
    result = plan(ms, history, observed, 1000.0, status=status, cache=cache)
    plan_ms, plan_cpu = _median_ms(lambda: plan(ms, history, observed, 1000.0, status=status, cache=cache), repeats)
    # Warm: the pods are unchanged since the last pass, as most pods are between two passes.
    observe_ms, observe_cpu = _median_ms(lambda: observe(pods, cache=cache), repeats)
    # One pass's pure work: observe the pods, then plan on that observation.
    both_ms, both_cpu = _median_ms(
        lambda: plan(ms, history, observe(pods, cache=cache), 1000.0, status=status, cache=cache), repeats
    )
    plain_ms, plain_cpu = _median_ms(
        lambda: plan(ms, history, observe(plain, cache=cache), 1000.0, status=status, cache=cache), repeats
    )
    started = time.perf_counter()
    for raw in plain:
        parse_pod(raw)
    cold_ms = (time.perf_counter() - started) * 1000
    return {
        "groups": groups,
        "pods": len(pods),
        "ms": plan_ms,
        "plan_cpu_ms": plan_cpu,
        "observe_ms": observe_ms,
        "observe_cpu_ms": observe_cpu,
        "observe_plan_ms": both_ms,
        "observe_plan_cpu_ms": both_cpu,
        "observe_plan_plain_ms": plain_ms,
        "observe_plan_plain_cpu_ms": plain_cpu,
        "parse_cold_ms": round(cold_ms, 2),
        "actions": len(result.actions),
        "blocked": len(result.blocked),
    }


def measure_adapter(groups: int, repeats: int) -> dict[str, Any]:
    """A pass through the Kubernetes adapter's pod cache over the API server double (see the
    module docstring): list_pods + observe + plan, warm and after 1 % of the pods changed."""
    import copy
    from pathlib import Path

    tests_dir = Path(__file__).resolve().parents[1] / "tests" / "kubernetes"
    if str(tests_dir) not in sys.path:
        sys.path.insert(0, str(tests_dir))
    from apiserver_double import RESOURCES, RunningApiServer

    from controller.k8s.informer import CachedKubernetesCluster, pod_informer

    ms, history, _, status, plain = build_state(groups)
    with RunningApiServer(RESOURCES, set()) as server:
        copies = [copy.deepcopy(pod) for pod in plain]

        def load(chunk: list[dict[str, Any]]) -> None:
            emu = server.emu
            for obj in chunk:
                emu.rv += 1
                obj["metadata"]["resourceVersion"] = str(emu.rv)
                emu.store[("/v1/pods", obj["metadata"]["namespace"], obj["metadata"]["name"])] = obj

        for start in range(0, len(copies), 2_000):  # in steps: each call must end within 10 s
            server.call(load, copies[start : start + 2_000])
        client = server.api_client()
        informer = pod_informer(client, idle_timeout=300)
        started = time.perf_counter()
        informer.start()
        if not informer.wait_synced(300):
            raise RuntimeError("the pod cache did not sync in 300 s")
        sync_s = time.perf_counter() - started
        cluster = CachedKubernetesCluster(client, pods=informer)
        # As in a Celery pool process (``rolloutui.gctuning.tune_worker_process``): start-up frozen,
        # the oldest generation collected 100x less often than CPython's default. Without it the
        # 320 pods each round decodes push a full collection of this process's ~100 MB of pods
        # (the double's copies included) into a pass now and then.
        from rolloutui.gctuning import OLD_GENERATION_THRESHOLD

        thresholds = gc.get_threshold()
        gc.collect()
        gc.freeze()
        gc.set_threshold(thresholds[0], thresholds[1], OLD_GENERATION_THRESHOLD)

        def one_pass() -> None:
            pods = cluster.list_pods("default", "big")
            plan(ms, history, observe(pods, cache=CACHE), 1000.0, status=status, cache=CACHE)

        one_pass()
        warm_ms, warm_cpu = _median_ms(one_pass, repeats)
        # 1 % of the pods (every pod of 10 groups) change between two passes, through the watch.
        names = [p["metadata"]["name"] for p in plain if p["metadata"]["name"].startswith("big-1")][: len(plain) // 100]
        walls, cpus = [], []
        for round_ in range(repeats):

            def change(round_: int = round_) -> int:
                emu = server.emu
                for name in names:
                    key = ("/v1/pods", "default", name)
                    obj = copy.deepcopy(emu.store[key])
                    obj["metadata"].setdefault("annotations", {})["bench/round"] = str(round_)
                    emu._bump(obj)
                    emu.store[key] = obj
                    emu._emit("MODIFIED", "/v1/pods", obj)
                emu.events_log.clear()  # the bench's events need no replay
                return emu.rv

            version = server.call(change)
            if not informer.caught_up(60, version):
                raise RuntimeError("the pod cache did not catch up in 60 s")
            gc.collect()
            t0, c0 = time.perf_counter(), time.process_time()
            one_pass()
            walls.append((time.perf_counter() - t0) * 1000)
            cpus.append((time.process_time() - c0) * 1000)
        informer.stop(timeout=10)
        gc.set_threshold(*thresholds)
        gc.unfreeze()
        # What the cache saves: the plain adapter LISTs the pods from the API server every pass.
        from controller.k8s.cluster import KubernetesCluster

        direct = KubernetesCluster(client)
        list_ms, list_cpu = _median_ms(
            lambda: plan(
                ms,
                history,
                observe(direct.list_pods("default", "big"), cache=CACHE),
                1000.0,
                status=status,
                cache=CACHE,
            ),
            3,
        )
        client.close()
    return {
        "pods": len(plain),
        "sync_s": round(sync_s, 2),
        "warm_ms": warm_ms,
        "warm_cpu_ms": warm_cpu,
        "changed": len(names),
        "changed_ms": round(statistics.median(walls), 2),
        "changed_cpu_ms": round(statistics.median(cpus), 2),
        "list_ms": list_ms,
        "list_cpu_ms": list_cpu,
    }


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    repeats = 15
    rows = [measure(100, repeats), measure(1000, repeats)]
    adapter = None if "--no-adapter" in argv else measure_adapter(1000, repeats)
    print(
        f"{'groups':>7} {'pods':>7} {'observe+plan ms':>16} {'plan ms':>8} {'observe ms':>11} "
        f"{'(CPU: o+p':>10} {'plan':>6} {'observe)':>9} {'o+p plain':>10} {'parse ms cold':>14} "
        f"{'actions':>8} {'blocked':>8}"
    )
    for row in rows:
        print(
            f"{row['groups']:>7} {row['pods']:>7} {row['observe_plan_ms']:>16.2f} {row['ms']:>8.2f} "
            f"{row['observe_ms']:>11.2f} {row['observe_plan_cpu_ms']:>10.2f} {row['plan_cpu_ms']:>6.2f} "
            f"{row['observe_cpu_ms']:>9.2f} {row['observe_plan_plain_ms']:>10.2f} {row['parse_cold_ms']:>14.2f} "
            f"{row['actions']:>8} {row['blocked']:>8}"
        )
    print(
        "(o+p plain: observe + plan of a plain list, as the Kubernetes adapter lists pods, each read by its "
        "uid and resourceVersion; the other columns list them as the embedded cluster and the simulator do)"
    )
    ratio = rows[1]["observe_plan_ms"] / rows[0]["observe_plan_ms"] if rows[0]["observe_plan_ms"] else float("nan")
    print(
        f"growth 3,200 -> 32,000 pods: x{ratio:.1f} for x10 pods (linear = x10); "
        f"targets at 32,000 pods: observe+plan < {PASS_TARGET_MS} ms, plan < {PLAN_TARGET_MS} ms (medians, wall)"
    )
    big = rows[1]
    for what, value, target in (
        ("observe+plan", big["observe_plan_ms"], PASS_TARGET_MS),
        ("observe+plan of a plain list (Kubernetes)", big["observe_plan_plain_ms"], PASS_TARGET_MS),
        ("plan", big["ms"], PLAN_TARGET_MS),
    ):
        verdict = "met" if value < target else "MISSED"
        print(f"  {what} at {big['pods']:,} pods: {value:.2f} ms, target < {target} ms: {verdict}")
    if adapter is not None:
        print(
            f"through the Kubernetes adapter's pod cache over the API server double ({adapter['pods']:,} pods, "
            f"first LIST and sync {adapter['sync_s']:.1f} s): list_pods + observe + plan"
        )
        for what, value, cpu in (
            ("nothing changed since the last pass", adapter["warm_ms"], adapter["warm_cpu_ms"]),
            (
                f"{adapter['changed']:,} pods changed through the watch",
                adapter["changed_ms"],
                adapter["changed_cpu_ms"],
            ),
        ):
            verdict = "met" if value < ADAPTER_TARGET_MS else "MISSED"
            print(f"  {what}: {value:.2f} ms (CPU {cpu:.2f} ms), target < {ADAPTER_TARGET_MS} ms: {verdict}")
        print(
            f"  without the cache (a LIST from the double every pass, median of 3): {adapter['list_ms']:,.0f} ms "
            f"(CPU {adapter['list_cpu_ms']:,.0f} ms; the double's own JSON encoding runs in this process too)"
        )
    if as_json:
        print(
            json.dumps(
                [
                    {
                        "pods": r["pods"],
                        "ms": r["ms"],
                        "observe_plan_ms": r["observe_plan_ms"],
                        "observe_plan_plain_ms": r["observe_plan_plain_ms"],
                        "observe_ms": r["observe_ms"],
                        "cpu": {
                            "plan": r["plan_cpu_ms"],
                            "observe": r["observe_cpu_ms"],
                            "observe_plan": r["observe_plan_cpu_ms"],
                        },
                    }
                    for r in rows
                ]
                + ([{"adapter": adapter}] if adapter is not None else [])
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
