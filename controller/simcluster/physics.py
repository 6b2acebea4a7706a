"""Pod physics of the simulated cluster: the scheduler's placement and the kubelet, as pure functions.

Both drivers call these and only store and schedule what they return: the in-memory driver
(``memory``: ``simulate``, the preview, the tests) sets a wake-up on its event loop at ``next_at``;
the database driver (``database``: the running product) stores ``next_at`` in ``SimObject.next_at``
and its periodic tick calls ``advance`` for every pod that is due. So the two cannot drift.

Timeline of a healthy pod (durations drawn per pod when a timing is a range ``[min, max]``)::

    created --schedule--> bound (``bind``) --pull + start--> running, loading --load--> Ready
    deleted --terminate (at most the grace period)--> removed; its GPUs are free only then

Example with timing {schedule: 1, pull: 5, start: 2, load: 30, terminate: 3}: a pod created at
t=100 is bound at 101, its container runs at 108 (101 + 5 + 2) and is Ready at 138; deleted at 200,
it is gone (and its GPU free) at 203.

- Images (config ``images``): a ``crash`` image exits at the end of every load, so it never gets
  Ready; its restartCount grows and it waits in CrashLoopBackOff, 10 s after the first crash, then
  20 s, 40 s, ... at most 300 s (as the real kubelet), before starting and loading again. ``load``
  overrides the load timing for that image.
- Pod ``Ready`` = every container ready AND every ``spec.readinessGates`` condition True;
  ``recompute_ready`` runs when someone else (the controller) set a gate.
- In-place image change (``on_images_changed``): a container whose spec image differs from the one
  it was started from is killed and restarted from the new image: restartCount + 1, pull + start +
  load again, and only then do ``image``/``imageID`` show the new image. UID, node and IP are kept.
- Digests: a container's image is resolved when it is pulled (``ClusterConfig.digest``: the
  registry, where a scenario's ``retag`` moves a tag); ``imageID`` is ``<repository>@<digest>``
  (``engine@sha256:...``) and stays what was pulled, so pods of one tag started before and after a
  retag report different digests, as on a real cluster.
- A pod stops serving (its requests in flight are interrupted: ``Outcome.stops_serving``) when it
  starts terminating, when a container restarts for a new image, when its node is lost and when it
  is killed.

The kubelet's own state (what each container runs, its restarts, the next step and its deadline)
lives in the pod, in the annotation ``sim.rolloutui.io/kubelet`` (JSON), so a pod is all a function
needs and any process can continue where another stopped::

    {"phase": "scheduling" | "running" | "terminating" | "killed",
     "at": <deadline of the pod itself: the scheduling attempt, or the final removal>,
     "containers": [{"name", "image" (to run), "runs" (running now, or null), "restarts",
                     "state": "waiting" | "running", "reason", "startedAt", "ready", "started",
                     "attempts" (start attempts), "step": "run" | "loaded" | null, "at",
                     "lastExit" (the last crash: {"exitCode", "reason", "finishedAt"}, absent before one)}]}

A step's time is its deadline (not the time the driver got round to it), so a tick that comes late
computes the same timeline as the event loop. Random durations come from one stream per (seed, pod
UID, purpose): ``Random(f"{seed}:{uid}:{key}")``, so a pod's timings do not depend on other pods, the
same seed replays the same run (``simulate``), and in the live app (seed 0, random UIDs) any process
draws the same value for a pod.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Mapping
from typing import Any, NamedTuple

import orjson

from controller.core import naming, podresources
from controller.core.ports import Obj

from .config import ClusterConfig, Span, default_digest
from .config import image_id as config_image_id
from .objects import rfc3339

ANNOTATION_KUBELET = "sim.rolloutui.io/kubelet"
CRASH_BACKOFF_START = 10.0
CRASH_BACKOFF_MAX = 300.0
# A tick after a long outage may owe a pod several steps; the event loop takes one round at a time.
CATCH_UP_ROUNDS = 8
KUBELET_OWNED = ("Initialized", "ContainersReady", "Ready")

SCHEDULING, RUNNING, TERMINATING, KILLED = "scheduling", "running", "terminating", "killed"
STEP_RUN, STEP_LOADED = "run", "loaded"


class Outcome(NamedTuple):
    """What a kubelet step did: the new pod (``None``: remove it), when the kubelet must look at it
    again by itself (``None``: not before something happens to it), and whether the requests in
    flight on it are interrupted now."""

    pod: Obj | None
    next_at: float | None
    stops_serving: bool = False


# -- small shared rules ---------------------------------------------------------------------------------


def image_id(image: str, config: ClusterConfig | None = None) -> str:
    """``imageID`` of a container pulled from ``image`` now (default registry without ``config``)."""
    digest = config.digest(image) if config is not None else default_digest(image)
    return config_image_id(image, digest)


def draw(config: ClusterConfig, pod: Obj, key: str, span: Span) -> float:
    """A duration from ``span`` on the pod's own random stream for ``key`` (e.g. ``"pull"``)."""
    if span.low == span.high:
        return span.low  # a fixed span draws nothing: no stream to build
    uid = (pod.get("metadata") or {}).get("uid", "")
    return span.draw(random.Random(f"{config.seed}:{uid}:{key}"))


def pod_gpus(pod: Obj) -> int:
    """GPUs a pod needs: Kubernetes' effective request (``controller.core.podresources.pod_gpus``).

    Example: containers with limits {"nvidia.com/gpu": "1"} and {"nvidia.com/gpu": "2"} need 3.
    """
    return podresources.pod_gpus(pod.get("spec"))


def pod_ip(number: int) -> str:
    """The ``number``-th pod IP from 10.128.0.0/9: 1 -> 10.128.0.1, 256 -> 10.128.1.0."""
    return f"10.{128 + (number >> 16) % 128}.{(number >> 8) & 255}.{number & 255}"


def node_ip(index: int) -> str:
    """The IP of node ``index``: node-0 is 10.0.0.1, node-1 10.0.0.2, ..."""
    return f"10.0.{(index + 1) >> 8}.{(index + 1) & 255}"


# -- kubelet state in the pod ------------------------------------------------------------------------


def kubelet_state(pod: Obj) -> dict[str, Any] | None:
    """The kubelet's state of the pod (``None``: neither waiting for the scheduler nor started)."""
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_KUBELET)
    return _parse(raw) if raw else None


_parsed: dict[str, dict[str, Any]] = {}


def _parse(raw: str) -> dict[str, Any]:
    # Many changes of a pod leave its kubelet state as it was (a gate, a label); decode each text once.
    # The result is shared: every transition below builds new dicts instead of changing it.
    state = _parsed.get(raw)
    if state is None:
        if len(_parsed) > 50_000:
            _parsed.clear()
        try:
            state = orjson.loads(raw)
        except orjson.JSONDecodeError:
            state = {}
        _parsed[raw] = state
    return state


def with_state(pod: Obj, state: dict[str, Any]) -> Obj:
    meta = dict(pod.get("metadata") or {})
    # orjson: every kubelet step of every pod writes its state (~10 times per pod of a preview);
    # compact JSON like ``json.dumps(state, separators=(",", ":"))``, read back to the same values, ~8x faster.
    meta["annotations"] = {**(meta.get("annotations") or {}), ANNOTATION_KUBELET: orjson.dumps(state).decode()}
    return {**pod, "metadata": meta}


def next_at(state: dict[str, Any] | None) -> float | None:
    """The earliest deadline in a kubelet state: when the pod must be looked at again."""
    if not state:
        return None
    times = [c["at"] for c in state.get("containers") or () if c.get("at") is not None]
    if state.get("at") is not None:
        times.append(state["at"])
    return min(times) if times else None


def awaiting_schedule(pod: Obj) -> bool:
    """Not bound yet, and its scheduling delay is recorded in the pod (database driver)."""
    state = kubelet_state(pod)
    return bool(state) and state.get("phase") == SCHEDULING and not (pod.get("spec") or {}).get("nodeName")


def is_terminating(pod: Obj) -> bool:
    state = kubelet_state(pod)
    return bool(state) and state.get("phase") in (TERMINATING, KILLED)


# -- scheduler -------------------------------------------------------------------------------------------


def schedule_delay(pod: Obj, config: ClusterConfig) -> float:
    """How long after its creation the scheduler considers a pod."""
    return draw(config, pod, "schedule", config.timing["schedule"])


def on_create(pod: Obj, now: float, config: ClusterConfig) -> Outcome:
    """A new pod waits for the scheduler; the deadline is kept in the pod (the database driver has no
    memory between ticks; the in-memory scheduler keeps a timer at ``now + schedule_delay``)."""
    at = now + schedule_delay(pod, config)
    return Outcome(with_state(pod, {"phase": SCHEDULING, "at": at}), at)


def place(free_by_node: Mapping[str, int], need: int) -> tuple[str | None, int]:
    """kube-scheduler's LeastAllocated choice: the node with the most free GPUs that fits ``need``
    (ties go to the earlier node). ``free_by_node``: free GPUs by node name, in node order. Returns
    ``(node or None, the most free GPUs on any node)``.

    Example: free {"node-0": 2, "node-1": 5, "node-2": 5}, need 3 -> ("node-1", 5).

    The node with the most free GPUs is the best fit whenever any node fits (the one that fits with
    the most free is that node), so one ``max`` answers both: it returns the first of equals, which
    is the tie rule. It runs in C: a 1,000-group preview places 6,000 pods on ~380 nodes.
    """
    if not free_by_node:
        return None, 0
    best = max(free_by_node, key=free_by_node.__getitem__)
    most_free = free_by_node[best]
    return (best if most_free >= need else None), max(most_free, 0)


class FreeGpus(Mapping[str, int]):
    """Free GPUs by node name, in node order (a node added again goes last), answering ``place``
    without a walk over every node: a heap of (-free, order, node) entries, one pushed at every
    change, a stale one (the node is gone, or its figure moved on) dropped when it reaches the top.
    ``best(need) == place(self, need)`` for every sequence of changes (``tests/sim``).

    Why: the in-memory scheduler places each pod on its own, and a 1,000-group preview places 6,000
    pods on ~380 nodes: ``place``'s ``max`` walks all 380 for each (~0.2 s of the run); the heap
    answers in O(log nodes) per change.

    Example: set node-0 to 2, node-1 to 5, node-2 to 5: best(3) is ("node-1", 5) (ties go to the
    earlier node); add(node-1, -3): best(3) is ("node-2", 5); best(6) is (None, 5).
    """

    def __init__(self) -> None:
        self._free: dict[str, int] = {}
        self._order: dict[str, int] = {}
        self._heap: list[tuple[int, int, str]] = []
        self._added = 0

    def __getitem__(self, node: str) -> int:
        return self._free[node]

    def __iter__(self):
        return iter(self._free)

    def __len__(self) -> int:
        return len(self._free)

    def set(self, node: str, free: int) -> None:
        if node not in self._free:
            self._added += 1
            self._order[node] = self._added
        self._free[node] = free
        if len(self._heap) > 2 * len(self._free) + 64:
            # Mostly stale entries: start again from the figures (one entry per node).
            self._heap = [(-f, self._order[n], n) for n, f in self._free.items()]
            heapq.heapify(self._heap)
        else:
            heapq.heappush(self._heap, (-free, self._order[node], node))

    def add(self, node: str, delta: int) -> None:
        self.set(node, self._free[node] + delta)

    def remove(self, node: str) -> None:
        self._free.pop(node, None)
        self._order.pop(node, None)

    def best(self, need: int) -> tuple[str | None, int]:
        """``place(self, need)``: (the node with the most free GPUs if that fits ``need``, else
        None; the most free GPUs on any node, or 0)."""
        heap = self._heap
        while heap:
            neg_free, order, node = heap[0]
            if self._free.get(node) == -neg_free and self._order.get(node) == order:
                most_free = -neg_free
                return (node if most_free >= need else None), max(most_free, 0)
            heapq.heappop(heap)
        return None, 0


def place_gang(free_by_node: Mapping[str, int], needs: list[int], min_placed: int) -> list[str | None] | None:
    """Volcano's gang rule: place the pods of one PodGroup (GPU needs ``needs``, in queue order)
    together or not at all. Each pod goes where ``place`` would put it given the pods placed
    before it; the result (a node, or None, per pod) is kept only if at least ``min_placed`` pods
    found a node, else None: no pod of the gang is bound.

    Example: free {"node-0": 4, "node-1": 1}, needs [2, 2, 2], min_placed 3 -> None (5 GPUs
    free, but only 2 pods of 2 fit); min_placed 2 -> ["node-0", "node-0", None].
    """
    free = dict(free_by_node)  # a copy in the same node order: the caller's stays as it was
    out: list[str | None] = []
    for need in needs:
        node, _ = place(free, need)
        if node is not None:
            free[node] -= need
        out.append(node)
    placed = sum(1 for node in out if node is not None)
    return out if placed >= min_placed else None


def gang_message(members: int, gpus_needed: int, gpus_free: int) -> str:
    """Why a gang waits: ``gang of 8 pods cannot be placed: 5 GPUs free`` (and what it needs)."""
    return (
        f"gang of {members} pods cannot be placed: {gpus_free} GPUs free "
        f"(the gang needs {gpus_needed} {naming.GPU_RESOURCE} at once)"
    )


def gang_incomplete_message(members: int, present: int) -> str:
    """Volcano waits for a PodGroup's ``minMember`` pods to exist before it places any."""
    return f"gang of {members} pods cannot be placed: {present} of {members} pods created"


ANNOTATION_GANG = "scheduling.k8s.io/group-name"  # core.gang.ANNOTATION_GROUP_NAME
VOLCANO = "volcano"


def gang_of(pod: Obj) -> str | None:
    """The PodGroup a pod belongs to when Volcano schedules it (``None``: scheduled on its own)."""
    if (pod.get("spec") or {}).get("schedulerName") != VOLCANO:
        return None
    return ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_GANG)


def schedule_gang(
    podgroup: Obj, members: list[Obj], free_by_node: Mapping[str, int]
) -> tuple[dict[str, str], str | None]:
    """Volcano's decision for one PodGroup: which of its pending members to bind where, or why none.

    ``members``: the group's pods that are not terminating. Once ``minMember`` of them are bound
    the rest are placed one by one like any pod (``{}, None``: the caller places them); before,
    the pending ones are placed all together (``place_gang``) so that at least ``minMember`` run,
    or none is. Returns ``({pod name: node}, None)``, or ``({}, message)`` for every pending member.

    Example: minMember 8, eight 1-GPU pods pending, 5 GPUs free -> ``({}, "gang of 8 pods cannot
    be placed: 5 GPUs free (the gang needs 8 nvidia.com/gpu at once)")``.
    """
    min_member = int((podgroup.get("spec") or {}).get("minMember") or 1)
    bound = [p for p in members if (p.get("spec") or {}).get("nodeName")]
    if len(bound) >= min_member:
        return {}, None
    pending = sorted(
        (p for p in members if not (p.get("spec") or {}).get("nodeName")),
        key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]),
    )
    missing = min_member - len(bound)
    if len(pending) < missing:
        return {}, gang_incomplete_message(min_member, len(members))
    needs = [pod_gpus(p) for p in pending]
    placed = place_gang(free_by_node, needs, missing)
    if placed is None:
        return {}, gang_message(min_member, sum(needs[:missing]), sum(max(0, f) for f in free_by_node.values()))
    return {p["metadata"]["name"]: node for p, node in zip(pending, placed) if node is not None}, None


def unschedulable(pod: Obj, now: float, nodes: int, need: int, most_free: int, *, message: str | None = None) -> Obj:
    """The pod stays Pending with kube-scheduler's reason, e.g. on three full 2-GPU nodes:
    ``0/3 nodes are available: 3 Insufficient nvidia.com/gpu (pod needs 1 free nvidia.com/gpu; the
    most free on one node is 0)``; a gang's pods with ``message`` (``gang_message``). The pod
    itself when that is already its status."""
    status = dict(pod.get("status") or {})
    message = message or (
        f"0/{nodes} nodes are available: {nodes} Insufficient {naming.GPU_RESOURCE} "
        f"(pod needs {need} free {naming.GPU_RESOURCE}; the most free on one node is {most_free})"
    )
    old = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
    if old and old.get("status") == "False" and old.get("message") == message:
        return pod
    since = old.get("lastTransitionTime", rfc3339(now)) if old and old.get("status") == "False" else rfc3339(now)
    cond = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": message,
        "lastTransitionTime": since,
    }
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    return {**pod, "status": {**status, "phase": "Pending", "conditions": [cond, *conditions]}}


def bind(pod: Obj, now: float, node: str, host_ip: str, ip: str) -> Obj:
    """The scheduler's binding: ``spec.nodeName``, ``PodScheduled=True``, the node's and the pod's IPs."""
    status = dict(pod.get("status") or {})
    stamp = rfc3339(now)
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.insert(0, {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp})
    status.update(
        phase="Pending", conditions=conditions, hostIP=host_ip, podIP=ip, podIPs=[{"ip": ip}], startTime=stamp
    )
    return {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": node}, "status": status}


# -- kubelet ---------------------------------------------------------------------------------------------


def start(pod: Obj, now: float, config: ClusterConfig) -> Outcome:
    """The node's kubelet takes a freshly bound pod: one image pull and one start for the pod (in this
    model), then every container runs ``pull + start`` from now."""
    until_running = draw(config, pod, "pull", config.timing["pull"]) + draw(
        config, pod, "start", config.timing["start"]
    )
    containers = [
        {
            "name": c.get("name", f"c{i}"),
            "image": c.get("image", ""),
            "runs": None,
            "restarts": 0,
            "state": "waiting",
            "reason": "ContainerCreating",
            "startedAt": None,
            "ready": False,
            "started": False,
            "attempts": 1,
            "step": STEP_RUN,
            "at": now + until_running,
        }
        for i, c in enumerate((pod.get("spec") or {}).get("containers") or [])
    ]
    return _outcome(pod, {"phase": RUNNING, "at": None, "containers": containers}, now)


def advance(pod: Obj, now: float, config: ClusterConfig, *, rounds: int = CATCH_UP_ROUNDS) -> Outcome:
    """Run the kubelet steps that are due at ``now``: a container that finished pulling and starting
    runs and starts loading; one that finished loading is ready (or crashes into CrashLoopBackOff);
    a terminating pod whose time is up is removed (``Outcome.pod is None``).

    Each round runs every step due at its start once, in container order; a step that makes another
    one due at once (a zero load time) runs in the next round. The database tick catches up on up
    to ``CATCH_UP_ROUNDS`` rounds; the event loop takes one round per wake-up, so a step due at the
    same instant comes after whatever else was already due then.
    """
    state = kubelet_state(pod)
    if not state or state.get("phase") == SCHEDULING:
        return Outcome(pod, next_at(state))
    changed = False
    for _ in range(rounds):
        if state.get("phase") == TERMINATING and state["at"] <= now:
            return Outcome(None, None)
        due = [i for i, c in enumerate(state.get("containers") or ()) if c.get("at") is not None and c["at"] <= now]
        if not due:
            break
        containers = list(state["containers"])
        for i in due:
            containers[i] = _container_step(containers[i], pod, config)
        state = {**state, "containers": containers}
        changed = True
    if not changed:
        return Outcome(pod, next_at(state))
    return _outcome(pod, state, now)


def _container_step(c: dict[str, Any], pod: Obj, config: ClusterConfig) -> dict[str, Any]:
    t = c["at"]
    behaviour = config.image(c["image"])
    if c["step"] == STEP_RUN:
        # Pulled and started: the container runs and loads its model.
        c = {**c, "state": "running", "reason": "", "started": True, "ready": False, "runs": c["image"], "startedAt": t}
        # The digest the tag resolves to at the pull (kept: a later retag does not change what runs).
        c["imageID"] = image_id(c["image"], config)
        load = draw(config, pod, f"load/{c['name']}/{c['attempts']}", behaviour.load or config.timing["load"])
        return {**c, "step": STEP_LOADED, "at": t + load}
    if behaviour.crash:
        # Exit 1, then CrashLoopBackOff: 10 s after the first crash, 20 s, 40 s, ... at most 300 s.
        restarts = c["restarts"] + 1
        backoff = min(CRASH_BACKOFF_MAX, CRASH_BACKOFF_START * 2 ** (restarts - 1))
        start_after = draw(config, pod, f"start/{c['name']}/{c['attempts']}", config.timing["start"])
        c = {**c, "restarts": restarts, "state": "waiting", "reason": "CrashLoopBackOff", "started": False}
        # Reported as the container's lastState.terminated, as the kubelet does, until it exits again.
        c["lastExit"] = {"exitCode": 1, "reason": "Error", "finishedAt": t}
        return {**c, "ready": False, "attempts": c["attempts"] + 1, "step": STEP_RUN, "at": t + (backoff + start_after)}
    return {**c, "ready": True, "step": None, "at": None}


def on_images_changed(pod: Obj, now: float, config: ClusterConfig) -> Outcome:
    """The pod's spec names a new image for some container (an in-place update): each such container
    is killed and started again from the new image (restartCount + 1; pull, start and load again).
    Nothing happens before the pod started (it starts from the spec) or once it is terminating."""
    state = kubelet_state(pod)
    if not state or state.get("phase") != RUNNING:
        return Outcome(pod, next_at(state))
    wanted = {c.get("name"): c.get("image", "") for c in (pod.get("spec") or {}).get("containers") or []}
    containers, restarted = [], False
    for c in state["containers"]:
        image = wanted.get(c["name"], c["image"])
        if image != c["image"]:
            restarted = True
            pull = draw(config, pod, f"pull/{c['name']}/{c['attempts']}", config.timing["pull"])
            start_after = draw(config, pod, f"start/{c['name']}/{c['attempts']}", config.timing["start"])
            c = {
                **c,
                "image": image,
                "restarts": c["restarts"] + 1,
                "state": "waiting",
                "reason": "ContainerCreating",
                "started": False,
                "ready": False,
                "attempts": c["attempts"] + 1,
                "step": STEP_RUN,
                "at": now + (pull + start_after),
            }
        containers.append(c)
    if not restarted:
        return Outcome(pod, next_at(state))
    return _outcome(pod, {**state, "containers": containers}, now, stops_serving=True)


def recompute_ready(pod: Obj, now: float) -> Obj:
    """The kubelet's status sync after someone else changed the pod's conditions (a readiness gate):
    ``Ready`` follows. The pod itself when nothing changes or the pod is not running."""
    state = kubelet_state(pod)
    if not state or state.get("phase") != RUNNING:
        return pod
    status = render_status(pod, state, now)
    return pod if status == pod.get("status") else {**pod, "status": status}


def on_delete(pod: Obj, now: float, config: ClusterConfig) -> Outcome:
    """Graceful termination of a started pod (``deletionTimestamp`` set): it stops serving, its
    containers are no longer ready, and it is removed ``terminate`` later (at most its grace period:
    SIGKILL then)."""
    state = kubelet_state(pod)
    if not state or state.get("phase") in (SCHEDULING, TERMINATING):
        return Outcome(pod, next_at(state))
    delay = draw(config, pod, "terminate", config.timing["terminate"])
    grace = (pod.get("metadata") or {}).get("deletionGracePeriodSeconds")
    if grace is not None:
        delay = min(delay, float(grace))
    containers = [{**c, "ready": False, "step": None, "at": None} for c in state.get("containers") or ()]
    return _outcome(pod, {**state, "phase": TERMINATING, "at": now + delay, "containers": containers}, now, True)


def node_lost_status(status: Obj, node: str, pod_name: str | None) -> Obj:
    """The status of a pod whose node is lost: Failed, NodeLost, its containers no longer ready."""
    status = {
        **status,
        "phase": "Failed",
        "reason": "NodeLost",
        "message": f"Node {node} which was running pod {pod_name} is unresponsive",
    }
    status["conditions"] = [
        {**c, "status": "False"} if c.get("type") in ("Ready", "ContainersReady") else c
        for c in status.get("conditions") or []
    ]
    return status


def node_lost(pod: Obj, node: str) -> Outcome:
    """The pod's node is lost: the pod fails (the driver removes it right after); it stops serving."""
    status = node_lost_status(pod.get("status") or {}, node, (pod.get("metadata") or {}).get("name"))
    return Outcome({**pod, "status": status}, None, True)


def kill(pod: Obj, now: float, reason: str) -> Outcome:
    """The containers are killed for good (an operator's fault injection): phase Failed, not ready,
    exit code 137; the controller's recovery replaces the pod."""
    state = kubelet_state(pod) or {}
    containers = [{**c, "ready": False, "step": None, "at": None} for c in state.get("containers") or ()]
    new = with_state(pod, {**state, "phase": KILLED, "at": None, "containers": containers})
    status = dict(new.get("status") or {})
    stamp = rfc3339(now)
    status.update(phase="Failed", reason="Killed", message=reason)
    status["conditions"] = [
        {**c, "status": "False", "lastTransitionTime": stamp} if c.get("type") in ("Ready", "ContainersReady") else c
        for c in status.get("conditions") or []
    ]
    status["containerStatuses"] = [
        {
            **c,
            "ready": False,
            "started": False,
            "state": {"terminated": {"exitCode": 137, "reason": "Killed", "finishedAt": stamp}},
        }
        for c in status.get("containerStatuses") or []
    ]
    return Outcome({**new, "status": status}, None, True)


# -- status ----------------------------------------------------------------------------------------------


def _outcome(pod: Obj, state: dict[str, Any], now: float, stops_serving: bool = False) -> Outcome:
    new = with_state(pod, state)
    return Outcome({**new, "status": render_status(new, state, now)}, next_at(state), stops_serving)


def render_status(pod: Obj, state: dict[str, Any], now: float) -> Obj:
    """The pod's status as the kubelet reports it, from its state: container statuses, phase, and the
    conditions ``Initialized``, ``ContainersReady`` and ``Ready`` (every other condition is kept).

    One walk over the containers takes the statuses, readiness and phase: every kubelet step of
    every pod renders (12,000 times in a 1,000-group preview)."""
    status = dict(pod.get("status") or _EMPTY)
    containers = state.get("containers") or ()
    statuses = []
    all_ready, started = bool(containers), False
    for c in containers:
        runs = c["runs"]
        shown = runs or c["image"]
        ready = c["ready"]
        entry = {
            "name": c["name"],
            "image": shown,
            "imageID": (c.get("imageID") or image_id(shown)) if runs else "",
            "ready": ready,
            "started": c["started"],
            "restartCount": c["restarts"],
        }
        if c["state"] == "running":
            entry["state"] = {"running": {"startedAt": rfc3339(c["startedAt"] or 0.0)}}
        else:
            entry["state"] = {"waiting": {"reason": c["reason"]}}
        last = c.get("lastExit")
        if last:
            entry["lastState"] = {
                "terminated": {
                    "exitCode": last["exitCode"],
                    "reason": last["reason"],
                    "finishedAt": rfc3339(last["finishedAt"]),
                }
            }
        statuses.append(entry)
        all_ready = all_ready and ready
        started = started or c["started"] or bool(c["restarts"])
    containers_ready = all_ready and state.get("phase") == RUNNING
    conditions = ready_conditions(pod, status.get("conditions") or (), containers_ready, rfc3339(now))
    phase = "Running" if started else "Pending"
    if status.get("phase") == "Failed":
        phase = "Failed"  # terminal: a failed pod never runs again
    status.update(phase=phase, conditions=conditions, containerStatuses=statuses)
    return status


_EMPTY: dict[str, Any] = {}
_KUBELET_OWNED = frozenset(KUBELET_OWNED)


def ready_conditions(pod: Obj, conditions: list[Obj], containers_ready: bool, stamp: str) -> list[Obj]:
    """Initialized / ContainersReady / Ready, keeping every other condition (readiness gates).

    A condition keeps its ``lastTransitionTime`` while its status stays (the last condition of a
    type counts, as the kubelet's lookup by type). Example: Ready "False" since 10 s, containers
    now ready at 40 s: Ready "True" since 40 s; Initialized "True" since 10 s stays."""
    by_type: dict[Any, Obj] = {}
    out = []
    for c in conditions:
        ctype = c.get("type")
        by_type[ctype] = c
        if ctype not in _KUBELET_OWNED:
            out.append(c)
    gates_ok = True
    for g in (pod.get("spec") or _EMPTY).get("readinessGates") or ():
        if (by_type.get(g.get("conditionType")) or _EMPTY).get("status") != "True":
            gates_ok = False
            break
    ready = containers_ready and gates_ok
    for ctype, value in (("Initialized", True), ("ContainersReady", containers_ready), ("Ready", ready)):
        text = "True" if value else "False"
        old = by_type.get(ctype)
        since = old.get("lastTransitionTime") if old and old.get("status") == text else stamp
        cond = {"type": ctype, "status": text, "lastTransitionTime": since}
        if ctype == "Ready" and not value and containers_ready and not gates_ok:
            cond["reason"] = "ReadinessGatesNotReady"
        out.append(cond)
    return out
