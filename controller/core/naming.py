"""Names, labels and annotations the controller writes.

They follow Kthena's scheme (``modelserving.volcano.sh/...``) under our own prefix, so a router or
a person who knows Kthena finds the same keys here:

    pod        <ms>-<groupOrdinal>-<role>-<instanceOrdinal>-<podIndex>    (podIndex 0 = entry)
    group      <ms>-<groupOrdinal>
    role id    <role>-<instanceOrdinal>
    revision   <ms>-<hash>                                             (ControllerRevision name)

Example: ``chat-1-decode-0-0`` is the entry pod of decode instance 0 in ServingGroup ``chat-1``.
"""

from __future__ import annotations

API_GROUP = "serving.rolloutui.io"
API_VERSION = f"{API_GROUP}/v1alpha1"
KTHENA_API_VERSION = "workload.serving.volcano.sh/v1alpha1"
KIND = "ModelServing"
PLURAL = "modelservings"

PREFIX = API_GROUP + "/"

# Labels (pods and ControllerRevisions).
LABEL_NAME = PREFIX + "name"
LABEL_GROUP_NAME = PREFIX + "group-name"
LABEL_GROUP_ORDINAL = PREFIX + "group-ordinal"
LABEL_ROLE = PREFIX + "role"
LABEL_ROLE_ID = PREFIX + "role-id"
LABEL_ROLE_ORDINAL = PREFIX + "role-ordinal"
LABEL_POD_INDEX = PREFIX + "pod-index"
LABEL_ENTRY = PREFIX + "entry"
LABEL_REVISION = PREFIX + "revision"
LABEL_ROLE_TEMPLATE_HASH = PREFIX + "role-template-hash"
# One label per revision the pod's role template is equal in (``revision.serving.rolloutui.io/<hash>:
# "true"``), set only when the ModelServing declares a request path (``spec.traffic.path``). A router
# keeps a request on revision R by choosing every hop among pods that carry R's label: a pod of a role
# that did not change between two revisions carries both. The controller adds the label to such pods
# when a new revision appears and removes it once that revision is gone from the history (a label
# patch, no restart). Key: prefix ``revision.serving.rolloutui.io`` (28 characters, at most 253 allowed)
# and the revision hash as the name (``revisions.HASH_LENGTH`` = 10, at most 63 allowed).
LABEL_REVISION_COMPAT_PREFIX = "revision." + API_GROUP + "/"
LABEL_REVISION_COMPAT_VALUE = "true"

# Annotations.
# On pods: set while the pod is being drained; the value is the drain start time (clock seconds).
# A router must stop sending new requests to a pod that carries it.
ANNOTATION_DRAINING = PREFIX + "draining"
# On pods under InPlaceRollingUpdate: JSON of the in-place update in progress (target revision, role
# hash, start time, and per changed container the image ID and restart count before the update).
ANNOTATION_INPLACE_STATE = PREFIX + "inplace-update-state"
# On entry pods: JSON of the last verification request of the instance (``spec.verification``):
# the revision it checked, when, whether it passed, and the response.
ANNOTATION_VERIFICATION = PREFIX + "verification"
# On ControllerRevisions: the format of ``data``.
ANNOTATION_REVISION_DATA_VERSION = PREFIX + "revision-data-version"
REVISION_DATA_VERSION = "v1"
# On ModelServings: who changed it last through a control, and why (the audit also keeps it).
ANNOTATION_CHANGE_CAUSE = PREFIX + "change-cause"

# On ModelServings: an operator's promote of a running canary (JSON {"revision", "step"} to skip the
# step it is on, or {"revision", "full": true} to skip every remaining step). The planner reads it;
# a promote of another revision or an already passed step does nothing.
ANNOTATION_CANARY_PROMOTE = PREFIX + "canary-promote"

# On ModelServings: an operator's abort of a rollout (JSON {"revision": the aborted update revision,
# "stable": the revision it went back to}), written by the ``abort`` control together with the
# stable revision's template and spec.paused. While the spec selects that stable revision, the
# planner takes the groups back to it although the rollout is paused (Argo Rollouts' abort: the
# canary is scaled down, the rollout waits for a retry), and a canary of the aborted revision ends
# Aborted at the step it had reached.
ANNOTATION_ABORT = PREFIX + "abort"

# On ModelServings: opt-in autoscaling, set by the ``autoscale`` control (JSON {"minReplicas",
# "maxReplicas"}; absent: off). The dashboard's autoscaler task reads it; the controller ignores it.
# Example: {"maxReplicas": 6, "minReplicas": 2} keeps spec.replicas between 2 and 6.
ANNOTATION_AUTOSCALE = PREFIX + "autoscale"

# Readiness gate for in-place updates.
CONDITION_INPLACE_READY = "InPlaceUpdateReady"

GPU_RESOURCE = "nvidia.com/gpu"

# Environment the controller injects into every container; never part of a revision.
INJECTED_ENV = ("GROUP_SIZE", "WORKER_INDEX", "ENTRY_ADDRESS")


def group_name(ms_name: str, ordinal: int) -> str:
    return f"{ms_name}-{ordinal}"


def role_id(role: str, ordinal: int) -> str:
    return f"{role}-{ordinal}"


def pod_name(ms_name: str, group_ordinal: int, role: str, instance_ordinal: int, pod_index: int) -> str:
    return f"{ms_name}-{group_ordinal}-{role}-{instance_ordinal}-{pod_index}"


def revision_object_name(ms_name: str, revision_hash: str) -> str:
    return f"{ms_name}-{revision_hash}"


def revision_compat_label(revision_hash: str) -> str:
    """The label a pod carries when its role template is equal in revision ``revision_hash``:
    ``revision.serving.rolloutui.io/<hash>``."""
    return LABEL_REVISION_COMPAT_PREFIX + revision_hash


def compat_revisions(labels: dict[str, str] | None) -> set[str]:
    """The revisions a pod's labels say its role template is equal in (``revision_compat_label``)."""
    prefix = LABEL_REVISION_COMPAT_PREFIX
    return {
        key[len(prefix) :]
        for key, value in (labels or {}).items()
        if key.startswith(prefix) and value == LABEL_REVISION_COMPAT_VALUE
    }
