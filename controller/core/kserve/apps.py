"""Reading ``apps/v1`` Deployments and ReplicaSets and their pods, as the Deployment controller
reads them. Pure Python.

The simulated Deployment controller (``controller.simcluster.deployments``) decides with these,
and the read side (``view``) explains a Deployment's state with the very same ones, on the
simulated cluster and on Kubernetes:

- a Deployment's ReplicaSets are split into the **new** one (it runs the Deployment's pod template,
  compared without the ``pod-template-hash`` label: kube's ``EqualIgnoreHash``) and the **old**
  ones, oldest revision first (annotation ``deployment.kubernetes.io/revision``);
- ``maxSurge``/``maxUnavailable`` come from ``spec.strategy.rollingUpdate`` (apps/v1 defaults
  25%/25%) and resolve to pod counts with ``rolling.resolve_fenceposts``;
- a rollout is **complete** when every wanted pod is updated and available and nothing old is left
  (kube's ``DeploymentComplete``).

Names and labels written by Kubernetes, KServe and Knative are here too, so every module spells
them once.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..intorpercent import IntOrPercent, IntOrPercentError
from .rolling import ReplicaSetCount, resolve_fenceposts

Obj = dict[str, Any]

# Kubernetes
LABEL_TEMPLATE_HASH = "pod-template-hash"
ANNOTATION_REVISION = "deployment.kubernetes.io/revision"
PROGRESSING_TIMED_OUT = "ProgressDeadlineExceeded"
PROGRESSING_COMPLETE = "NewReplicaSetAvailable"
PROGRESSING_PAUSED = "DeploymentPaused"
DEFAULT_BUDGET = IntOrPercent(25, True)
DEFAULT_PROGRESS_DEADLINE_SECONDS = 600
# KServe (raw Deployments): the pods' Service selects ``app: isvc.<deployment>``.
LABEL_APP = "app"
# Knative (Knative mode, legacy name Serverless): every pod of a revision carries its name.
LABEL_KNATIVE_REVISION = "serving.knative.dev/revision"
LABEL_KNATIVE_CONFIGURATION = "serving.knative.dev/configuration"
LABEL_KNATIVE_SERVICE = "serving.knative.dev/service"


def meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def name(obj: Obj) -> str:
    return meta(obj).get("name") or ""


def labels(obj: Obj) -> dict[str, str]:
    return meta(obj).get("labels") or {}


def annotations(obj: Obj) -> dict[str, str]:
    return meta(obj).get("annotations") or {}


def controller_ref(obj: Obj) -> Obj | None:
    """The ownerReference with ``controller: true``, or None."""
    for ref in meta(obj).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def controlled_by(obj: Obj, owner: Obj) -> bool:
    ref = controller_ref(obj)
    return ref is not None and ref.get("uid") == meta(owner).get("uid") and ref.get("name") == name(owner)


def condition(obj: Obj | None, ctype: str) -> Obj | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


# -- Deployments and ReplicaSets ---------------------------------------------------------------------


def replicas_of(obj: Obj) -> int:
    """``spec.replicas`` (1 when unset, as the API server defaults it)."""
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def status_count(obj: Obj | None, key: str) -> int:
    return int(((obj or {}).get("status") or {}).get(key) or 0)


def revision_of(obj: Obj) -> int:
    """The ``deployment.kubernetes.io/revision`` annotation (0 when absent or unreadable)."""
    try:
        return int(annotations(obj).get(ANNOTATION_REVISION) or 0)
    except ValueError:
        return 0


def _safe_encode(digest: bytes, length: int = 10) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"  # kube's SafeEncodeString alphabet
    return "".join(alphabet[b % len(alphabet)] for b in digest[:length])


def template_hash(template: Obj, collision_count: int = 0) -> str:
    """A ``pod-template-hash``: a hash of the template's canonical JSON and the Deployment's
    collision count, 10 characters of kube's safe alphabet. Equal templates, equal hashes."""
    body = json.dumps([template, collision_count], sort_keys=True, separators=(",", ":"))
    return _safe_encode(hashlib.sha256(body.encode()).digest())


def _without_hash(template: Obj) -> Obj:
    tmeta = dict(template.get("metadata") or {})
    tmeta["labels"] = {k: v for k, v in (tmeta.get("labels") or {}).items() if k != LABEL_TEMPLATE_HASH}
    return {**template, "metadata": tmeta}


def same_template(rs: Obj, template: Obj) -> bool:
    """kube's ``EqualIgnoreHash``: the ReplicaSet runs this pod template."""
    return _without_hash((rs.get("spec") or {}).get("template") or {}) == _without_hash(template)


def oldest_first(rss: list[Obj]) -> list[Obj]:
    return sorted(rss, key=lambda r: (revision_of(r), meta(r).get("creationTimestamp") or "", name(r)))


def split_replica_sets(deployment: Obj, rss: list[Obj]) -> tuple[Obj | None, list[Obj]]:
    """(the ReplicaSet running the Deployment's template, the others oldest first)."""
    template = (deployment.get("spec") or {}).get("template") or {}
    ordered = oldest_first(rss)
    new = next((rs for rs in ordered if same_template(rs, template)), None)
    return new, [rs for rs in ordered if rs is not new]


def budgets(deployment: Obj) -> tuple[IntOrPercent, IntOrPercent]:
    """``maxSurge``, ``maxUnavailable`` as written on the Deployment (apps/v1 defaults 25% each)."""
    rolling = ((deployment.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    out = []
    for key in ("maxSurge", "maxUnavailable"):
        raw = rolling.get(key)
        try:
            out.append(DEFAULT_BUDGET if raw is None else IntOrPercent.parse(raw, max_percent=None))
        except IntOrPercentError:
            out.append(DEFAULT_BUDGET)
    return out[0], out[1]


def is_recreate(deployment: Obj) -> bool:
    """``spec.strategy.type: Recreate`` (kube's other strategy; RollingUpdate is the default)."""
    return ((deployment.get("spec") or {}).get("strategy") or {}).get("type") == "Recreate"


def fenceposts(deployment: Obj) -> tuple[int, int]:
    """(surge, unavailable) pod counts for the Deployment's replicas; unavailable is capped at the
    replicas (kube's ``MaxUnavailable``). Example: 8 replicas at 25%/25% -> (2, 2). A Recreate
    Deployment has neither (kube's ``MaxSurge`` and ``MaxUnavailable`` are 0 outside RollingUpdate)."""
    if is_recreate(deployment):
        return 0, 0
    desired = replicas_of(deployment)
    surge_raw, unavailable_raw = budgets(deployment)
    surge, unavailable = resolve_fenceposts(surge_raw, unavailable_raw, desired)
    return surge, min(unavailable, desired)


def progress_deadline(deployment: Obj) -> int | None:
    value = (deployment.get("spec") or {}).get("progressDeadlineSeconds", DEFAULT_PROGRESS_DEADLINE_SECONDS)
    return None if value is None else int(value)


def replica_set_count(rs: Obj | None) -> ReplicaSetCount:
    if rs is None:
        return ReplicaSetCount("", 0, 0)
    return ReplicaSetCount(name(rs), replicas_of(rs), status_count(rs, "availableReplicas"))


def is_complete(deployment: Obj, status: Obj | None = None) -> bool:
    """kube's ``DeploymentComplete`` (``status``: the Deployment's own unless given)."""
    status = (deployment.get("status") or {}) if status is None else status
    desired = replicas_of(deployment)
    return (
        int(status.get("updatedReplicas") or 0) == desired
        and int(status.get("replicas") or 0) == desired
        and int(status.get("availableReplicas") or 0) == desired
        and int(status.get("observedGeneration") or 0) >= int(meta(deployment).get("generation") or 1)
    )


def deadline_exceeded(deployment: Obj) -> bool:
    return (condition(deployment, "Progressing") or {}).get("reason") == PROGRESSING_TIMED_OUT


# -- pods ------------------------------------------------------------------------------------------


def is_terminating(pod: Obj) -> bool:
    return bool(meta(pod).get("deletionTimestamp"))


def is_active(pod: Obj) -> bool:
    """Counted by its ReplicaSet (kube's ``FilterActivePods``): not terminating, not finished."""
    return not is_terminating(pod) and (pod.get("status") or {}).get("phase") not in ("Failed", "Succeeded")


def is_ready(pod: Obj) -> bool:
    return (condition(pod, "Ready") or {}).get("status") == "True"


def is_available(pod: Obj) -> bool:
    """Ready and active (``minReadySeconds`` is 0 on every Deployment KServe writes)."""
    return is_active(pod) and is_ready(pod)


def is_scheduled(pod: Obj) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def unschedulable_message(pod: Obj) -> str | None:
    """kube-scheduler's message when the pod fits on no node, else None."""
    c = condition(pod, "PodScheduled")
    if c and c.get("status") == "False" and c.get("reason") == "Unschedulable":
        return c.get("message") or "Unschedulable"
    return None


def waiting_reason(pod: Obj) -> str | None:
    """The first container's waiting reason (``CrashLoopBackOff``, ``ContainerCreating``), if any."""
    for c in (pod.get("status") or {}).get("containerStatuses") or []:
        reason = ((c.get("state") or {}).get("waiting") or {}).get("reason")
        if reason:
            return reason
    return None


def restarts(pod: Obj) -> int:
    return max(
        (int(c.get("restartCount") or 0) for c in (pod.get("status") or {}).get("containerStatuses") or []), default=0
    )
