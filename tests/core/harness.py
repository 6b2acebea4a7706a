"""A tiny in-memory cluster for planner tests: it obeys the plan instantly and exactly.

``MiniCluster`` implements the cluster port with dicts. ``settle()`` plays the kubelet: pods that
exist become Running and Ready (unless told to fail), pods being deleted disappear. Tests drive
``step()`` = one reconcile pass + settle, and look at what happened in between.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from typing import Any

from controller.core import naming
from controller.core.ports import Conflict, NoRouter, NotFound
from controller.core.reconcile import reconcile
from tests.factories import modelserving as manifest  # noqa: F401  (the suites' name for it)
from tests.factories import role  # noqa: F401


def _versioned(pod: dict) -> dict:
    """``pod`` with a resourceVersion that changes whenever its content does, as an API server's:
    the tests edit pods in place, and the observation caches (parse, group, the planner's memos)
    reuse what they derived from a pod whose uid and resourceVersion are unchanged."""
    meta = pod["metadata"]
    meta.pop("resourceVersion", None)
    meta["resourceVersion"] = hashlib.sha1(json.dumps(pod, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return pod


class FixedClock:
    def __init__(self, t: float = 0.0):
        self.t = t

    def now(self) -> float:
        return self.t


class CountingRouter(NoRouter):
    """In-flight counts the test sets (``counts``), asked pod by pod; no table of targets."""

    def __init__(self):
        self.counts: dict[str, int] = {}

    def in_flight(self, namespace: str, pod_name: str) -> int:
        return self.counts.get(pod_name, 0)


class MiniCluster:
    def __init__(self, gpus: int | None = None):
        self.ms: dict[tuple[str, str], dict[str, Any]] = {}
        self.pods: dict[str, dict[str, Any]] = {}
        self.revisions: dict[str, dict[str, Any]] = {}
        self.owned: dict[tuple[str, str], dict[str, Any]] = {}  # (kind, name) -> Service or PodGroup
        self.events: list[tuple[str, str]] = []
        self.interrupted: list[tuple[str, int]] = []  # (pod, requests) the pass reported
        self.uids = itertools.count(1)
        self.rv = itertools.count(1)
        self.log: list[tuple[str, str]] = []  # (verb, pod name) in order
        self.gpus = gpus  # total GPU slots (1 per pod); None = unlimited
        self.fail_images: set[str] = set()

    # ModelServings
    def list_modelservings(self, namespace=None):
        return [copy.deepcopy(o) for (ns, _), o in self.ms.items() if namespace in (None, ns)]

    def get_modelserving(self, namespace, name):
        try:
            return copy.deepcopy(self.ms[(namespace, name)])
        except KeyError:
            raise NotFound(name) from None

    def read_modelserving(self, namespace, name):
        return self.get_modelserving(namespace, name)

    def generation_of(self, namespace, name):
        try:
            return self.ms[(namespace, name)]["metadata"].get("generation") or 0
        except KeyError:
            raise NotFound(name) from None

    def create_modelserving(self, obj):
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        meta.setdefault("namespace", "default")
        key = (meta["namespace"], meta["name"])
        if key in self.ms:
            raise Conflict(meta["name"])
        meta["uid"] = f"ms-uid-{next(self.uids)}"
        meta["generation"] = 1
        meta["resourceVersion"] = str(next(self.rv))
        self.ms[key] = obj
        return copy.deepcopy(obj)

    def patch_modelserving(self, namespace, name, patch, *, resource_version=None):
        from controller.core.mergepatch import merge_patch

        obj = self.ms[(namespace, name)]
        new = merge_patch(obj, patch)
        new["metadata"] = dict(new["metadata"])  # the merge shares what the patch left alone with obj
        if new.get("spec") != obj.get("spec"):
            new["metadata"]["generation"] = obj["metadata"]["generation"] + 1
        new["metadata"]["resourceVersion"] = str(next(self.rv))
        self.ms[(namespace, name)] = new
        return copy.deepcopy(new)

    def replace_modelserving_status(self, namespace, name, status, *, resource_version):
        obj = self.ms[(namespace, name)]
        if obj["metadata"]["resourceVersion"] != resource_version:
            raise Conflict(name)
        obj["status"] = copy.deepcopy(status)
        obj["metadata"]["resourceVersion"] = str(next(self.rv))
        return copy.deepcopy(obj)

    def delete_modelserving(self, namespace, name):
        self.ms.pop((namespace, name), None)

    # Pods
    def list_pods(self, namespace, ms_name):
        return [
            _versioned(copy.deepcopy(p))
            for p in self.pods.values()
            if p["metadata"]["labels"].get(naming.LABEL_NAME) == ms_name
        ]

    def get_pod(self, namespace, name):
        try:
            return copy.deepcopy(self.pods[name])
        except KeyError:
            raise NotFound(name) from None

    def pod_events(self, namespace, name):
        self.get_pod(namespace, name)
        return []  # the instant kubelet records no events

    def pod_log(self, namespace, name, *, tail=200):
        self.get_pod(namespace, name)
        return []  # and runs no engine that would log

    def create_pod(self, pod):
        name = pod["metadata"]["name"]
        if name in self.pods:
            raise Conflict(name)
        pod = copy.deepcopy(pod)
        pod["metadata"]["uid"] = f"uid-{next(self.uids)}"
        pod["status"] = {"phase": "Pending", "conditions": []}
        self.pods[name] = pod
        self.log.append(("create", name))
        return copy.deepcopy(pod)

    def delete_pod(self, namespace, name, *, uid=None):
        pod = self.pods.get(name)
        if pod is None:
            raise NotFound(name)
        if uid and pod["metadata"]["uid"] != uid:
            raise Conflict(name)
        pod["metadata"]["deletionTimestamp"] = "now"
        self.log.append(("delete", name))

    def patch_pod(self, namespace, name, patch):
        from controller.core.mergepatch import merge_patch

        if name not in self.pods:
            raise NotFound(name)
        self.pods[name] = merge_patch(self.pods[name], patch)
        self.log.append(("patch", name))
        return copy.deepcopy(self.pods[name])

    def set_pod_condition(self, namespace, name, condition):
        pod = self.pods.get(name)
        if pod is None:
            raise NotFound(name)
        conds = [c for c in pod["status"].get("conditions", []) if c["type"] != condition["type"]]
        conds.append(dict(condition))
        pod["status"]["conditions"] = conds
        self._refresh_ready(pod)
        return copy.deepcopy(pod)

    # Revisions
    def list_revisions(self, namespace, ms_name):
        return [
            copy.deepcopy(r)
            for r in self.revisions.values()
            if r["metadata"]["labels"].get(naming.LABEL_NAME) == ms_name
        ]

    def create_revision(self, revision):
        name = revision["metadata"]["name"]
        if name in self.revisions:
            raise Conflict(name)
        self.revisions[name] = copy.deepcopy(revision)
        return revision

    def set_revision_number(self, namespace, name, number):
        self.revisions[name]["revision"] = number
        return self.revisions[name]

    def annotate_revision(self, namespace, name, annotations):
        if name not in self.revisions:
            raise NotFound(name)
        self.revisions[name]["metadata"].setdefault("annotations", {}).update(annotations)
        return copy.deepcopy(self.revisions[name])

    def delete_revision(self, namespace, name):
        if name not in self.revisions:
            raise NotFound(name)
        del self.revisions[name]

    # Services and PodGroups
    def list_owned(self, kind, namespace, ms_name):
        return [
            copy.deepcopy(o)
            for (k, _), o in self.owned.items()
            if k == kind and o["metadata"].get("labels", {}).get(naming.LABEL_NAME) == ms_name
        ]

    def create_owned(self, obj):
        key = (obj["kind"], obj["metadata"]["name"])
        if key in self.owned:
            raise Conflict(key[1])
        self.owned[key] = copy.deepcopy(obj)
        return copy.deepcopy(obj)

    def patch_owned(self, kind, namespace, name, patch):
        from controller.core.mergepatch import merge_patch

        if (kind, name) not in self.owned:
            raise NotFound(name)
        self.owned[(kind, name)] = merge_patch(self.owned[(kind, name)], patch)
        return copy.deepcopy(self.owned[(kind, name)])

    def delete_owned(self, kind, namespace, name):
        if self.owned.pop((kind, name), None) is None:
            raise NotFound(name)

    # Events and traffic
    def record_event(self, namespace, ms_name, *, reason, message, type="Normal"):
        self.events.append((reason, message))

    def report_interrupted(self, namespace, ms_name, pod, count, reason):
        self.interrupted.append((pod, count))

    def routable_pods(self, namespace, ms_name, pods=None):
        return None  # no router: Routed is inferred from the pods

    def route_canary_weight(self, namespace, name, status):
        pass  # no router to tell

    # The kubelet
    def _refresh_ready(self, pod):
        status = pod["status"]
        if status.get("phase") != "Running":
            return
        gates_ok = all(
            any(c["type"] == g["conditionType"] and c["status"] == "True" for c in status.get("conditions", []))
            for g in pod["spec"].get("readinessGates") or []
        )
        containers_ready = all(cs.get("ready") for cs in status.get("containerStatuses", []))
        conds = [c for c in status.get("conditions", []) if c["type"] not in ("Ready", "ContainersReady")]
        conds.append({"type": "ContainersReady", "status": "True" if containers_ready else "False"})
        conds.append({"type": "Ready", "status": "True" if containers_ready and gates_ok else "False"})
        status["conditions"] = conds

    def settle(self):
        """Deleted pods vanish; the rest are scheduled (if GPUs allow) and become Ready."""
        for name in [n for n, p in self.pods.items() if p["metadata"].get("deletionTimestamp")]:
            del self.pods[name]
        used = sum(1 for p in self.pods.values() if p["spec"].get("nodeName"))
        for pod in self.pods.values():
            status = pod["status"]
            if not pod["spec"].get("nodeName"):
                if self.gpus is not None and used >= self.gpus:
                    status["conditions"] = [
                        {
                            "type": "PodScheduled",
                            "status": "False",
                            "reason": "Unschedulable",
                            "message": "0/1 nodes have free nvidia.com/gpu",
                        }
                    ]
                    continue
                pod["spec"]["nodeName"] = "node-0"
                used += 1
            images = [c["image"] for c in pod["spec"]["containers"]]
            bad = any(i in self.fail_images for i in images)
            status["phase"] = "Running"
            status["containerStatuses"] = [
                {
                    "name": c["name"],
                    "image": c["image"],
                    "imageID": "sha256:" + c["image"],
                    "ready": not bad,
                    "restartCount": 0,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}} if bad else {"running": {}},
                }
                for c in pod["spec"]["containers"]
            ]
            status["conditions"] = [c for c in status.get("conditions", []) if c["type"] != "PodScheduled"] + [
                {"type": "PodScheduled", "status": "True"}
            ]
            self._refresh_ready(pod)


def step(
    cluster: MiniCluster, clock: FixedClock, router=None, *, namespace="default", name="ms", settle=True, settings=None
):
    result = reconcile(cluster, router or CountingRouter(), clock, namespace, name, settings=settings)
    if settle:
        cluster.settle()
    clock.t += 1
    return result


def run_until_converged(cluster, clock, *, name="ms", max_steps=200, on_step=None, settings=None):
    for _ in range(max_steps):
        result = step(cluster, clock, name=name, settings=settings)
        if on_step:
            on_step(result)
        status = cluster.get_modelserving("default", name).get("status") or {}
        if status.get("converged") and not result.actions:
            return result
    raise AssertionError(f"did not converge in {max_steps} steps; blocked: {result.blocked}")
