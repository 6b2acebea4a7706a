"""InPlaceRollingUpdate (domain.md "In-place update", kthena-modelserving.md 5.1).

``InPlaceKubelet`` is a MiniCluster whose kubelet is in-place aware, like a real one: a container
whose spec image changes is restarted (restartCount + 1) and, one settle later, runs the new image
with a new imageID; a pod keeps its UID, node and IP through that. Images in ``fail_images`` crash
(CrashLoopBackOff, restartCount growing). ``slow`` adds settles before a restarted container runs.
"""

from __future__ import annotations

import copy
import json

import pytest

from controller.core import naming

from .helpers import NAME, NS, FixedClock, MiniCluster, manifest, role, run_until_converged, spec_of, step

GATE = naming.CONDITION_INPLACE_READY

# The restart, rollback and malformed-annotation tests below found bugs in 7eec38f that 82a46d6
# fixed; they are plain tests now.

INPLACE = {"type": "InPlaceRollingUpdate"}
# An in-place update never deletes or recreates a pod. (A drain mark on the instance being updated,
# so its in-flight requests finish before the container restarts, is allowed; see
# test_a_bad_image... for "no further batches", which counts drains too.)
POD_VERBS = ("create", "delete", "recreate")


class InPlaceKubelet(MiniCluster):
    def __init__(self, *, slow: int = 0):
        super().__init__()
        self.slow = slow
        self.runtime: dict[tuple[str, str], dict] = {}  # (uid, container) -> running state
        self.ips = 0

    def settle(self):
        for name in [n for n, p in self.pods.items() if p["metadata"].get("deletionTimestamp")]:
            del self.pods[name]
        for pod in self.pods.values():
            status = pod["status"]
            uid = pod["metadata"]["uid"]
            if not pod["spec"].get("nodeName"):
                pod["spec"]["nodeName"] = "node-0"
                self.ips += 1
                status["podIP"] = f"10.0.0.{self.ips}"
            statuses = []
            for c in pod["spec"]["containers"]:
                rt = self.runtime.get((uid, c["name"]))
                if rt is None:
                    rt = self.runtime[(uid, c["name"])] = {"image": c["image"], "restarts": 0, "wait": 0}
                elif rt["image"] != c["image"] and rt.get("pending") != c["image"]:
                    rt["pending"], rt["restarts"], rt["wait"] = c["image"], rt["restarts"] + 1, self.slow + 1
                if rt.get("pending"):
                    if rt["wait"] > 0:
                        rt["wait"] -= 1
                    else:
                        rt["image"] = rt.pop("pending")
                bad = rt["image"] in self.fail_images
                if bad:
                    rt["restarts"] += 1
                waiting = rt.get("pending") is not None
                state = (
                    {"waiting": {"reason": "CrashLoopBackOff"}}
                    if bad
                    else {"waiting": {"reason": "ContainerCreating"}}
                    if waiting
                    else {"running": {}}
                )
                statuses.append(
                    {
                        "name": c["name"],
                        "image": rt["image"],
                        "imageID": "sha256:" + rt["image"],
                        "containerID": f"cri://{uid}/{c['name']}/{rt['restarts']}",
                        "ready": not bad and not waiting,
                        "restartCount": rt["restarts"],
                        "state": state,
                    }
                )
            status["phase"] = "Running"
            status["containerStatuses"] = statuses
            status["conditions"] = [c for c in status.get("conditions", []) if c["type"] != "PodScheduled"] + [
                {"type": "PodScheduled", "status": "True"}
            ]
            self._refresh_ready(pod)


def inplace_manifest(*, groups=1, replicas=2, workers=1, max_unavailable=1, partition=None, roles=None, **extra):
    budgets = {"maxUnavailable": max_unavailable}
    if partition is not None:
        budgets["partition"] = partition
    roles = roles or [role("serve", replicas=replicas, workers=workers, **budgets)]
    return manifest(replicas=groups, roles=roles, strategy=INPLACE, drain={"timeoutSeconds": 0}, **extra)


def started(m=None, *, slow=0):
    cluster, clock = InPlaceKubelet(slow=slow), FixedClock()
    cluster.create_modelserving(m or inplace_manifest())
    run_until_converged(cluster, clock)
    return cluster, clock


def patch_role(cluster, fn, role_name="serve"):
    template = spec_of(cluster)["template"]
    for r in template["roles"]:
        if r["name"] == role_name:
            fn(r)
    cluster.patch_modelserving(NS, NAME, {"spec": {"template": template}})


def set_image(image, role_name="serve"):
    def fn(r):
        for key in ("entryTemplate", "workerTemplate"):
            if r.get(key):
                r[key]["spec"]["containers"][0]["image"] = image

    return fn


def identity(cluster):
    return {
        n: (p["metadata"]["uid"], p["spec"].get("nodeName"), p["status"].get("podIP")) for n, p in cluster.pods.items()
    }


def gate_of(pod):
    return next((c["status"] for c in pod["status"].get("conditions", []) if c["type"] == GATE), None)


def ready(pod):
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions", []))


def annotation(pod):
    raw = (pod["metadata"].get("annotations") or {}).get(naming.ANNOTATION_INPLACE_STATE)
    return json.loads(raw) if raw else None


def drive(cluster, clock, passes=40, *, until_converged=True):
    actions = []
    for _ in range(passes):
        result = step(cluster, clock)
        actions.extend(result.actions)
        status = cluster.get_modelserving(NS, NAME).get("status") or {}
        if until_converged and status.get("converged") and not result.actions:
            break
    return actions, result


# -- only images may change ------------------------------------------------------------------------


def _env(r):
    r["entryTemplate"]["spec"]["containers"][0]["env"] = [{"name": "MODE", "value": "fast"}]


def _resources(r):
    r["entryTemplate"]["spec"]["containers"][0]["resources"] = {"limits": {naming.GPU_RESOURCE: "2"}}


def _command(r):
    r["entryTemplate"]["spec"]["containers"][0]["command"] = ["serve", "--fast"]


def _sidecar(r):
    r["entryTemplate"]["spec"]["containers"].append({"name": "sidecar", "image": "proxy:v1"})


def _workers(r):
    r["workerReplicas"] = 2


def _image_and_env(r):
    set_image("engine:v2")(r)
    _env(r)


def _init_image(r):
    r["entryTemplate"]["spec"]["initContainers"] = [{"name": "fetch", "image": "fetch:v2"}]


@pytest.mark.parametrize(
    "change, words",
    [
        pytest.param(_env, "entryTemplate", id="env"),
        pytest.param(_resources, "entryTemplate", id="resources"),
        pytest.param(_command, "entryTemplate", id="command"),
        pytest.param(_sidecar, "containers", id="a container added"),
        pytest.param(_workers, "workerReplicas", id="workerReplicas"),
        pytest.param(_image_and_env, "entryTemplate", id="an image together with env"),
        pytest.param(_init_image, "init", id="an init container added"),
    ],
)
def test_a_change_other_than_container_images_is_refused_with_a_reason_and_nothing_is_recreated(change, words):
    cluster, clock = started()
    before = identity(cluster)
    images_before = {n: [c["image"] for c in p["spec"]["containers"]] for n, p in cluster.pods.items()}
    patch_role(cluster, change)
    actions, result = drive(cluster, clock, passes=8, until_converged=False)
    assert [a for a in actions if a.verb in POD_VERBS + ("drain", "patchImage")] == []
    assert not any(a.verb == "setGate" and a.condition and a.condition["status"] == "False" for a in actions)
    assert identity(cluster) == before
    assert {n: [c["image"] for c in p["spec"]["containers"]] for n, p in cluster.pods.items()} == images_before
    refused = [b for b in result.blocked if b.get("kind") == "refused"]
    assert refused, result.blocked
    assert "only container images may change" in refused[0]["reason"] and words in refused[0]["reason"]
    assert cluster.get_modelserving(NS, NAME)["status"]["phase"] == "Blocked"


# -- readiness gate --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "strategy, gated",
    [
        pytest.param(INPLACE, True, id="InPlaceRollingUpdate pods carry the gate"),
        pytest.param({"type": "RoleRollingUpdate"}, False, id="RoleRollingUpdate pods do not"),
    ],
)
def test_pods_created_under_in_place_carry_the_in_place_update_ready_gate_initialised_true(strategy, gated):
    m = inplace_manifest()
    m["spec"]["rolloutStrategy"] = strategy
    cluster, clock = started(m)
    for pod in cluster.pods.values():
        gates = [g["conditionType"] for g in pod["spec"].get("readinessGates") or []]
        assert (GATE in gates) == gated
        if gated:
            assert gate_of(pod) == "True" and ready(pod)


def test_pods_recreated_by_scale_up_during_in_place_also_carry_the_gate():
    cluster, clock = started()
    patch_role(cluster, lambda r: r.update(replicas=3))
    drive(cluster, clock)
    new = [p for n, p in cluster.pods.items() if "-serve-2-" in n]
    assert new and all(GATE in [g["conditionType"] for g in p["spec"]["readinessGates"]] for p in new)


# -- the protocol ----------------------------------------------------------------------------------


def test_the_protocol_runs_gate_false_then_annotation_and_image_then_gate_true_then_labels_once_the_image_is_ready():
    cluster, clock = started(inplace_manifest(replicas=1, workers=1), slow=2)
    old_rev = {p["metadata"]["labels"][naming.LABEL_REVISION] for p in cluster.pods.values()}
    before = identity(cluster)
    patch_role(cluster, set_image("engine:v2"))
    snapshots, seen = [], []
    for _ in range(30):
        seen.append(copy.deepcopy(cluster.pods))
        result = step(cluster, clock, settle=False)
        snapshots.append(copy.deepcopy(cluster.pods))
        cluster.settle()
        if (cluster.get_modelserving(NS, NAME).get("status") or {}).get("converged") and not result.actions:
            break
    for name in before:
        seq = [s[name] for s in snapshots]
        phases = []
        for pod in seq:
            st = annotation(pod)
            image = pod["spec"]["containers"][0]["image"]
            label = pod["metadata"]["labels"][naming.LABEL_REVISION]
            phases.append((gate_of(pod), st is not None, image, label in old_rev))
        # 1. gate False first, with the old image and no annotation yet
        first_false = next(i for i, p in enumerate(phases) if p[0] == "False")
        assert phases[first_false][1:] == (False, "engine:v1", True)
        # 2. then annotation and image patch together, gate still False
        patched = next(i for i, p in enumerate(phases) if p[2] == "engine:v2")
        assert patched > first_false and phases[patched][:2] == ("False", True)
        # 3. gate True and labels on the new revision only after the new image ran and was Ready
        done = next(i for i, p in enumerate(phases) if p[0] == "True" and i > first_false)
        assert done > patched and phases[done][3] is False
        prior = seen[done][name]["status"]["containerStatuses"][0]  # what the pass that set True saw
        assert prior["imageID"] == "sha256:engine:v2" and prior["ready"] is True
        assert all(p[0] == "False" for p in phases[first_false:done])
        state = annotation(seq[patched])
        assert state["containers"]["engine"]["imageID"] == "sha256:engine:v1"
        assert state["containers"]["engine"]["restartCount"] == 0
    assert identity(cluster) == before


def test_an_in_place_rollout_keeps_uid_node_and_ip_and_ends_on_the_new_revision():
    cluster, clock = started(inplace_manifest(groups=2, replicas=3, workers=1))
    before = identity(cluster)
    patch_role(cluster, set_image("engine:v2"))
    actions, _ = drive(cluster, clock, passes=80)
    assert [a for a in actions if a.verb in POD_VERBS] == []
    assert identity(cluster) == before
    status = cluster.get_modelserving(NS, NAME)["status"]
    assert status["converged"]
    assert {p["metadata"]["labels"][naming.LABEL_REVISION] for p in cluster.pods.values()} == {status["updateRevision"]}
    assert all(
        p["spec"]["containers"][0]["image"] == "engine:v2" and gate_of(p) == "True" and ready(p)
        for p in cluster.pods.values()
    )


def test_in_place_respects_max_unavailable_per_role_and_group():
    cluster, clock = started(inplace_manifest(groups=2, replicas=4, workers=0, max_unavailable=1))
    patch_role(cluster, set_image("engine:v2"))
    worst = 0
    for _ in range(80):
        result = step(cluster, clock)
        for g in ("0", "1"):
            not_ready = sum(
                1
                for p in cluster.pods.values()
                if p["metadata"]["labels"][naming.LABEL_GROUP_ORDINAL] == g and not ready(p)
            )
            worst = max(worst, not_ready)
        if cluster.get_modelserving(NS, NAME)["status"].get("converged") and not result.actions:
            break
    assert worst == 1


class CrashingController(InPlaceKubelet):
    """The controller dies after ``budget`` writes in a pass (set before each pass)."""

    budget = None

    def _spend(self):
        if self.budget is not None:
            if self.budget <= 0:
                raise RuntimeError("controller killed")
            self.budget -= 1

    def create_pod(self, pod):
        self._spend()
        return super().create_pod(pod)

    def delete_pod(self, namespace, name, *, uid=None):
        self._spend()
        return super().delete_pod(namespace, name, uid=uid)

    def patch_pod(self, namespace, name, patch):
        self._spend()
        return super().patch_pod(namespace, name, patch)

    def set_pod_condition(self, namespace, name, condition):
        self._spend()
        return super().set_pod_condition(namespace, name, condition)


@pytest.mark.parametrize(
    "writes_per_life",
    [
        pytest.param(1, id="killed after every write"),
        pytest.param(2, id="killed after every second write"),
        pytest.param(3, id="killed after every third write"),
        pytest.param(5, id="killed after every fifth write"),
    ],
)
@pytest.mark.parametrize(
    "settle_between",
    [pytest.param(True, id="kubelet runs between lives"), pytest.param(False, id="restart before the kubelet acts")],
)
def test_the_protocol_resumes_after_a_controller_restart_at_every_intermediate_point(writes_per_life, settle_between):
    cluster = CrashingController(slow=1)
    clock = FixedClock()
    cluster.create_modelserving(inplace_manifest(replicas=2, workers=1))
    run_until_converged(cluster, clock)
    before = identity(cluster)
    patch_role(cluster, set_image("engine:v2"))
    actions = []
    for i in range(400):
        cluster.budget = writes_per_life
        try:
            result = step(cluster, clock, settle=False)
            actions.extend(result.actions)
        except RuntimeError:
            result = None
        cluster.budget = None
        if settle_between or i % 3 == 2:
            cluster.settle()
        status = cluster.get_modelserving(NS, NAME).get("status") or {}
        if result is not None and status.get("converged") and not result.actions:
            break
    assert cluster.get_modelserving(NS, NAME)["status"]["converged"]
    assert [a for a in actions if a.verb in POD_VERBS] == []
    assert identity(cluster) == before
    for pod in cluster.pods.values():
        assert pod["spec"]["containers"][0]["image"] == "engine:v2" and gate_of(pod) == "True" and ready(pod)
        # exactly one restart per pod: the image was patched once, never twice with a stale baseline
        assert pod["status"]["containerStatuses"][0]["restartCount"] == 1


@pytest.mark.parametrize(
    "killed_after",
    [
        pytest.param(1, id="after the entry pod's gate"),
        pytest.param(3, id="after the entry pod's image patch"),
    ],
)
def test_a_restart_between_the_pods_of_one_instance_still_updates_every_pod(killed_after):
    cluster = CrashingController()
    clock = FixedClock()
    cluster.create_modelserving(inplace_manifest(replicas=1, workers=1))
    run_until_converged(cluster, clock)
    patch_role(cluster, set_image("engine:v2"))
    writes = killed_after
    for _ in range(3):  # the first passes of the update, each killed once the write budget is spent
        cluster.budget = writes
        try:
            result = step(cluster, clock, settle=False)
            writes -= sum(len(a.pod_names) for a in result.actions)
        except RuntimeError:
            break
        finally:
            cluster.budget = None
            cluster.settle()
    drive(cluster, clock, passes=30)
    pods = sorted(cluster.pods.values(), key=lambda p: p["metadata"]["name"])
    assert [p["status"]["containerStatuses"][0]["image"] for p in pods] == ["engine:v2", "engine:v2"]
    assert len({p["metadata"]["labels"][naming.LABEL_REVISION] for p in pods}) == 1


# -- bad image -------------------------------------------------------------------------------------


def test_a_bad_image_leaves_the_instance_updating_and_starts_no_further_batch():
    cluster, clock = started(inplace_manifest(replicas=3, workers=1, max_unavailable=1))
    cluster.fail_images.add("engine:v2-bad")
    patch_role(cluster, set_image("engine:v2-bad"))
    actions, result = drive(cluster, clock, passes=30, until_converged=False)
    patched = {(a.group, a.ordinal) for a in actions if a.verb == "patchImage"}
    assert len(patched) == 1
    touched = {
        (a.group, a.ordinal)
        for a in actions
        if a.verb in ("patchImage", "drain")
        or (a.verb == "setGate" and a.condition and a.condition["status"] == "False")
    }
    assert touched == patched, "a further instance was started"
    assert [a for a in actions if a.verb in POD_VERBS] == []
    ((g, k),) = patched
    view = {(i["group"], i["ordinal"]): i["state"] for i in result.view["instances"]}
    assert view[(g, k)] == "Updating"
    assert sorted(s for key, s in view.items() if key != (g, k)) == ["Ready", "Ready"]
    failing = [b for b in result.blocked if b.get("kind") == "failing"]
    assert failing and "not completing" in failing[0]["reason"]
    assert cluster.get_modelserving(NS, NAME)["status"]["phase"] == "Blocked"


@pytest.mark.parametrize(
    "fix", [pytest.param("engine:v3", id="a working new image"), pytest.param("engine:v1", id="the old image back")]
)
def test_after_a_bad_image_the_operator_setting_a_working_image_completes_in_place(fix):
    cluster, clock = started(inplace_manifest(replicas=2, workers=1, max_unavailable=1))
    before = identity(cluster)
    cluster.fail_images.add("engine:v2-bad")
    patch_role(cluster, set_image("engine:v2-bad"))
    drive(cluster, clock, passes=10, until_converged=False)
    patch_role(cluster, set_image(fix))
    actions, _ = drive(cluster, clock, passes=60)
    assert cluster.get_modelserving(NS, NAME)["status"]["converged"]
    assert [a for a in actions if a.verb in POD_VERBS] == []
    assert identity(cluster) == before
    assert all(
        p["spec"]["containers"][0]["image"] == fix and ready(p) and gate_of(p) == "True" for p in cluster.pods.values()
    )


# -- restart counts --------------------------------------------------------------------------------


def test_restart_counts_are_recorded_as_a_baseline_and_the_expected_restart_is_not_treated_as_a_failure():
    """What core does: the update-state annotation records each changed container's restartCount
    (and imageID, containerID) before the patch, and keeps it, marked completed, afterwards. The
    completion test uses the imageID, not the restart count, so the one restart an in-place update
    causes never counts as a failure; more restarts than baseline + 1 on a container that is not
    Ready mark the pod failing (test_restart_baseline.py)."""
    cluster, clock = started(inplace_manifest(replicas=1, workers=0))
    name = next(iter(cluster.pods))
    patch_role(cluster, set_image("engine:v2"))
    actions, _ = drive(cluster, clock)
    pod = cluster.pods[name]
    state = annotation(pod)
    assert state["completed"] is True
    assert state["containers"]["engine"]["restartCount"] == 0
    assert state["containers"]["engine"]["imageID"] == "sha256:engine:v1"
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 1
    assert [a for a in actions if a.verb in POD_VERBS] == []


# -- pause and partition ---------------------------------------------------------------------------


def test_a_paused_in_place_rollout_finishes_the_started_instance_and_starts_no_other():
    cluster, clock = started(inplace_manifest(replicas=3, workers=1), slow=2)
    patch_role(cluster, set_image("engine:v2"))
    first = step(cluster, clock)
    (gated,) = {a.ordinal for a in first.actions if a.verb == "setGate" and a.condition["status"] == "False"}
    cluster.patch_modelserving(NS, NAME, {"spec": {"paused": True}})
    actions, result = drive(cluster, clock, passes=20, until_converged=False)
    assert {a.ordinal for a in actions if a.verb in ("setGate", "patchImage")} == {gated}
    for name, pod in cluster.pods.items():
        assert pod["spec"]["containers"][0]["image"] == ("engine:v2" if f"-serve-{gated}-" in name else "engine:v1")
        assert ready(pod) and gate_of(pod) == "True"
    assert any(b.get("kind") == "paused" for b in result.blocked)


def test_in_place_leaves_instances_below_the_partition_on_the_old_image():
    cluster, clock = started(inplace_manifest(replicas=3, workers=0, partition=1))
    before = identity(cluster)
    patch_role(cluster, set_image("engine:v2"))
    actions, result = drive(cluster, clock)
    assert identity(cluster) == before
    assert {n: p["spec"]["containers"][0]["image"] for n, p in cluster.pods.items()} == {
        "ms-0-serve-0-0": "engine:v1",
        "ms-0-serve-1-0": "engine:v2",
        "ms-0-serve-2-0": "engine:v2",
    }
    assert any(b.get("kind") == "partition" for b in result.blocked)


# -- changes of mind and damaged state during an update ------------------------------------------


def test_setting_the_old_image_back_before_the_kubelet_restarted_the_container_completes():
    cluster, clock = started(inplace_manifest(replicas=1, workers=0), slow=1)
    before = identity(cluster)
    patch_role(cluster, set_image("engine:v2"))
    step(cluster, clock)  # gate False
    step(cluster, clock, settle=False)  # annotation + image patch; the kubelet has not acted yet
    patch_role(cluster, set_image("engine:v1"))
    actions, result = drive(cluster, clock, passes=30)
    assert identity(cluster) == before
    pod = next(iter(cluster.pods.values()))
    assert pod["spec"]["containers"][0]["image"] == "engine:v1" and gate_of(pod) == "True" and ready(pod), (
        result.blocked
    )
    assert cluster.get_modelserving(NS, NAME)["status"]["converged"]


def test_a_malformed_update_state_annotation_is_never_taken_as_success():
    cluster, clock = started(inplace_manifest(replicas=1, workers=0), slow=3)
    patch_role(cluster, set_image("engine:v2"))
    step(cluster, clock)  # gate False
    step(cluster, clock, settle=False)  # annotation + image patch; the old container still runs
    name = next(iter(cluster.pods))
    cluster.pods[name]["metadata"]["annotations"][naming.ANNOTATION_INPLACE_STATE] = "{not json"
    for _ in range(3):
        step(cluster, clock, settle=False)
        pod = cluster.pods[name]
        running = pod["status"]["containerStatuses"][0]
        if running["image"] != "engine:v2":
            assert gate_of(pod) == "False", "gate set True while the old image still runs"
            assert (
                pod["metadata"]["labels"][naming.LABEL_REVISION]
                != cluster.get_modelserving(NS, NAME)["status"]["updateRevision"]
            )
    drive(cluster, clock, passes=30)
    pod = cluster.pods[name]
    assert pod["status"]["containerStatuses"][0]["image"] == "engine:v2" and gate_of(pod) == "True" and ready(pod)


def test_no_pod_of_an_instance_is_restarted_while_its_entry_still_drains_requests():
    """An instance is one engine: the entry's in-flight requests run on its workers too, so the
    worker's container may restart only once the entry is drained (or the timeout passed), just
    as the workers of a draining instance are not deleted before the entry."""
    from .helpers import CountingRouter

    m = inplace_manifest(replicas=1, workers=1)
    m["spec"]["drain"] = {"timeoutSeconds": 100}
    cluster, clock = started(m)
    router = CountingRouter()
    router.counts["ms-0-serve-0-0"] = 3
    patch_role(cluster, set_image("engine:v2"))
    for _ in range(6):
        step(cluster, clock, router)
        assert {n: p["spec"]["containers"][0]["image"] for n, p in cluster.pods.items()} == {
            "ms-0-serve-0-0": "engine:v1",
            "ms-0-serve-0-1": "engine:v1",
        }
    router.counts["ms-0-serve-0-0"] = 0
    drive(cluster, clock, passes=30)
    assert all(p["spec"]["containers"][0]["image"] == "engine:v2" and ready(p) for p in cluster.pods.values())
