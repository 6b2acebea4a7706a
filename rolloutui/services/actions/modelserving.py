"""The ModelServing's actions: the rollout controls (pause, resume, promote, set-image, abort,
rollback), its size (scale, autoscale, apply-advice), delete, and the collection action apply.

Their services are ``services.controls`` (the rollout controls), ``services.advisor`` and
``services.manifests``; the declaration order is the order of the page's buttons and the CLI's help.
"""

from __future__ import annotations

from controller.core import scaling

from .. import advisor, controls, manifests
from .registry import BOOLEAN, COLLECTION, INTEGER, STRING, Action, Arg, Preset, register

PAUSE = register(
    Action(
        name="pause",
        label="Pause",
        help=(
            "Stop rollout progress: no update creates, deletes or drains start until it is resumed. "
            "Recovery of failed pods continues."
        ),
        service=controls.pause,
        audit="pause",
    )
)

RESUME = register(
    Action(
        name="resume",
        label="Resume",
        help="Continue a paused rollout from where it stopped.",
        service=controls.resume,
        audit="resume",
    )
)

PROMOTE = register(
    Action(
        name="promote",
        label="Promote one step",
        help=(
            "Lower the partition: by one step, to a given value, or fully (partition 0, and resume if paused). "
            "Groups at or above the partition move to the update revision."
        ),
        service=controls.promote,
        audit="promote",
        args=(
            Arg(
                "partition",
                INTEGER,
                "Lower the partition to this value. Omit it (and full) for one step down.",
                label="Lower the partition to",
                min_value=0,
            ),
            Arg("full", BOOLEAN, "Partition 0, and resume if paused.", label="Promote fully"),
        ),
        exclusive=(("partition", "full"),),
        presets=(Preset("promote-full", "Promote fully", {"full": True}),),
        tone="primary",
    )
)

SET_IMAGE = register(
    Action(
        name="set-image",
        label="Set image",
        help="Set one container's image in a role's entry and worker templates: a new revision, rolled out.",
        service=controls.set_image,
        audit="set_image",
        args=(
            Arg(
                "role",
                STRING,
                "The role whose image changes.",
                required=True,
                label="Role",
                max_length=253,
                choices_from="roles",
            ),
            Arg(
                "image",
                STRING,
                "The new image, e.g. vllm/vllm-openai:v0.9.2.",
                required=True,
                label="Image",
                max_length=1024,
            ),
            Arg(
                "container",
                STRING,
                "Container name; the first container when omitted.",
                label="Container",
                max_length=253,
            ),
        ),
    )
)

ABORT = register(
    Action(
        name="abort",
        label="Abort",
        help=(
            "Stop the rollout in progress and go back to its stable revision (the one the canary is compared "
            "with, else the current revision): the canary steps end Aborted, every group returns to the stable "
            "revision and the rollout stays paused. Resume is the retry."
        ),
        service=controls.abort,
        audit="abort",
        tone="danger",
    )
)

ROLLBACK = register(
    Action(
        name="rollback",
        label="Roll back",
        help=(
            "Write an earlier revision's versioned fields (role templates, scheduler name, plugins) back into "
            "the spec; replicas, budgets, partition and pause are kept."
        ),
        service=controls.rollback,
        audit="rollback",
        args=(
            Arg(
                "toRevision",
                INTEGER,
                "Revision number as listed by GET .../revisions/.",
                required=True,
                label="To revision",
                min_value=1,
                choices_from="revisions",
            ),
        ),
        tone="danger",
    )
)

SCALE = register(
    Action(
        name="scale",
        label="Scale",
        help=(
            "Set the number of ServingGroups (spec.replicas). New groups are created like any missing group; "
            "groups beyond the count drain (no new requests, those in flight finish) and are then deleted. "
            "0 only with allowZero."
        ),
        service=controls.scale,
        audit="scale",
        args=(
            Arg(
                "replicas",
                INTEGER,
                f"The number of ServingGroups, 1 to {scaling.MAX_REPLICAS} (0 only with allowZero).",
                required=True,
                label="ServingGroups",
                min_value=0,
                max_value=scaling.MAX_REPLICAS,
            ),
            Arg(
                "allowZero",
                BOOLEAN,
                "Confirm a scale to zero: every ServingGroup drains and none serves.",
                label="Allow zero",
            ),
        ),
    )
)

AUTOSCALE = register(
    Action(
        name="autoscale",
        label="Autoscale",
        help=(
            "Opt in to autoscaling: the autoscaler applies the capacity recommendation within minReplicas "
            "(default 1, never 0) and maxReplicas, after a cooldown, never during a rollout; each change "
            "is audited (source autoscaler). disable turns it off (replicas stay where they are)."
        ),
        service=controls.autoscale,
        audit="autoscale",
        args=(
            Arg(
                "minReplicas",
                INTEGER,
                "The fewest ServingGroups the autoscaler keeps (default 1).",
                label="Min ServingGroups",
                min_value=scaling.MIN_AUTOSCALE_REPLICAS,
                max_value=scaling.MAX_REPLICAS,
            ),
            Arg(
                "maxReplicas",
                INTEGER,
                "The most ServingGroups the autoscaler sets (required to turn it on).",
                label="Max ServingGroups",
                min_value=scaling.MIN_AUTOSCALE_REPLICAS,
                max_value=scaling.MAX_REPLICAS,
            ),
            Arg("disable", BOOLEAN, "Turn autoscale off.", label="Turn off"),
        ),
        exclusive=(("minReplicas", "disable"), ("maxReplicas", "disable")),
        presets=(Preset("autoscale-off", "Autoscale off", {"disable": True}),),
    )
)

APPLY_ADVICE = register(
    Action(
        name="apply-advice",
        label="Apply advice",
        help=(
            "Apply the change an advice was computed for (advise) with its recommended strategy, or another "
            "feasible candidate, in one audited action; keepStrategy applies the change alone."
        ),
        service=advisor.apply_advice,
        audit="apply_advice",
        panel="advisor-panel",
        args=(
            Arg("advice", STRING, "The advice's id (advise prints it).", required=True, label="Advice", max_length=64),
            Arg(
                "candidate",
                INTEGER,
                "The candidate to apply (its index); the recommended one when omitted.",
                label="Candidate",
                min_value=0,
            ),
            Arg(
                "keepStrategy", BOOLEAN, "Apply the change alone and keep the current strategy.", label="Keep strategy"
            ),
        ),
        exclusive=(("candidate", "keepStrategy"),),
        tone="primary",
    )
)

DELETE = register(
    Action(
        name="delete",
        label="Delete",
        help="Delete the ModelServing; its pods and revisions go with it. Recorded in the audit trail.",
        service=manifests.delete,
        audit="delete",
        tone="danger",
    )
)

APPLY = register(
    Action(
        name="apply",
        label="Apply manifest",
        help=(
            "Create or update ModelServings from a YAML or JSON manifest (several documents with ---; "
            "apiVersion serving.rolloutui.io/v1alpha1 or Kthena's workload.serving.volcano.sh/v1alpha1). "
            "An existing one gets the manifest's spec; other kinds are skipped."
        ),
        service=manifests.apply,
        audit="apply",
        args=(
            Arg(
                "manifest",
                STRING,
                "The manifest text (YAML or JSON); from the CLI, -f FILE (- for standard input).",
                required=True,
                label="Manifest",
                max_length=manifests.MAX_BYTES,
                from_file=True,
            ),
        ),
        tone="primary",
        scope=COLLECTION,
    )
)
