"""A release's actions (target ``DEPLOYMENT_REVISION``): deploy, roll back (the whole release or
one layer) and promote to another environment.

Their services are ``services.releases.deploy``.
"""

from __future__ import annotations

from ..releases import deploy as release_deploy
from .registry import STRING, Action, Arg, register
from .targets import DEPLOYMENT_REVISION

DEPLOY = register(
    Action(
        name="deploy",
        label="Deploy",
        help=(
            "Write a Pending release into its target's templates: the version's image, artifact and checksum, "
            "schema versions, config and resources, together. Refused for an unapproved version where the "
            "environment requires approval."
        ),
        service=release_deploy.deploy,
        audit="deploy",
        target=DEPLOYMENT_REVISION,
        tone="primary",
    )
)

ROLLBACK_RELEASE = register(
    Action(
        name="rollback-release",
        label="Roll back to this release",
        help=(
            "Restore this release's model, image, config, schema and resources together, as a new release; the "
            "live release becomes RolledBack."
        ),
        service=release_deploy.rollback_release,
        audit="rollback_release",
        target=DEPLOYMENT_REVISION,
        tone="danger",
    )
)

ROLLBACK_LAYER = register(
    Action(
        name="rollback-layer",
        label="Roll back this layer",
        help=(
            "Take ONE layer of the live release (model, image, config or resources) back to the value of the "
            "release deployed before it, keeping the other layers; the release stays live and its history "
            "records the change."
        ),
        service=release_deploy.rollback_layer,
        audit="rollback_layer",
        target=DEPLOYMENT_REVISION,
        args=(
            Arg(
                "layer",
                STRING,
                "The layer to roll back: model (artifact, label and schema), image, config or resources.",
                required=True,
                max_length=16,
            ),
        ),
        tone="danger",
    )
)

PROMOTE_RELEASE = register(
    Action(
        name="promote-release",
        label="Promote to production",
        help=(
            "Create and deploy the release of this Serving release's version in another environment "
            "(production by default), with the same config."
        ),
        service=release_deploy.promote_release,
        audit="promote_release",
        target=DEPLOYMENT_REVISION,
        args=(
            Arg("environment", STRING, "The environment to promote to (default production).", max_length=63),
            Arg(
                "target",
                STRING,
                "The environment's ModelServing (namespace/name); optional when it has one.",
                max_length=320,
            ),
            Arg(
                "resourceProfile",
                STRING,
                "A resource profile of that environment; default the same name as this release's, if it has it.",
                label="Resource profile",
                max_length=63,
            ),
        ),
        tone="primary",
    )
)


# -- KServe InferenceService actions (issue 13): what a KServe user would change, never a fight with KServe --
