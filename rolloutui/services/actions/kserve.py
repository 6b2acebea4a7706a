"""The KServe InferenceService's actions (target ``INFERENCESERVICE``, issue 13): what a KServe user
would change, never a fight with KServe.

Named isvc-* because an action's name is also its CLI subcommand (``manage.py rollout isvc-promote
default/llm``), unique over every target. Their services are ``services.kserve.controls``.
"""

from __future__ import annotations

from ..kserve import controls as kserve_controls
from .registry import INTEGER, STRING, Action, Arg, register
from .targets import INFERENCESERVICE

_COMPONENT = Arg(
    "component",
    STRING,
    "predictor (default), transformer or explainer.",
    label="Component",
    max_length=63,
)
_CANARY_NAME = Arg(
    "canary",
    STRING,
    "Standard mode: the spec.canary[] entry's name (needed only when there are several).",
    label="Canary",
    max_length=63,
)

ISVC_SET_IMAGE = register(
    Action(
        name="isvc-set-image",
        label="Set image",
        help=(
            "Set a component's image (its model.image, or a container's image): KServe rolls it out "
            "(Standard: a new ReplicaSet under the effective strategy; Serverless: a new revision)."
        ),
        service=kserve_controls.set_image,
        audit="isvc_set_image",
        target=INFERENCESERVICE,
        args=(
            Arg(
                "image",
                STRING,
                "The new image, e.g. vllm/vllm-openai:v0.9.2.",
                required=True,
                label="Image",
                max_length=1024,
            ),
            _COMPONENT,
            Arg(
                "container",
                STRING,
                "Container name, for a component with containers (the first when omitted).",
                label="Container",
                max_length=253,
            ),
        ),
    )
)

ISVC_CANARY = register(
    Action(
        name="isvc-canary",
        label="Start canary",
        help=(
            "Send a percentage of the traffic to a new version. Serverless: canaryTrafficPercent (with an image, "
            "the new revision that gets it). Standard: a spec.canary[] entry running the image; it gets its "
            "weight once its Deployment is Ready."
        ),
        service=kserve_controls.start_canary,
        audit="isvc_canary",
        target=INFERENCESERVICE,
        args=(
            Arg(
                "percent",
                INTEGER,
                "The canary's share of the traffic, 0 to 100.",
                required=True,
                label="Traffic percent",
                min_value=0,
                max_value=100,
            ),
            Arg("image", STRING, "The canary's image (required in Standard mode).", label="Image", max_length=1024),
            Arg(
                "canary",
                STRING,
                "Standard mode: the canary entry's name (default canary).",
                label="Canary name",
                max_length=63,
            ),
        ),
        tone="primary",
    )
)

ISVC_PROMOTE = register(
    Action(
        name="isvc-promote",
        label="Promote canary",
        help=(
            "Serverless: remove canaryTrafficPercent (the latest revision takes all traffic). Standard: the "
            "canary becomes the predictor and its entry goes."
        ),
        service=kserve_controls.promote,
        audit="isvc_promote",
        target=INFERENCESERVICE,
        args=(_CANARY_NAME,),
        tone="primary",
    )
)

ISVC_ROLLBACK = register(
    Action(
        name="isvc-rollback",
        label="Roll back canary",
        help=(
            "Serverless: canaryTrafficPercent 0 (all traffic to the last rolled-out revision). Standard: the "
            "canary entry is removed."
        ),
        service=kserve_controls.rollback,
        audit="isvc_rollback",
        target=INFERENCESERVICE,
        args=(_CANARY_NAME, _COMPONENT),
        tone="danger",
    )
)

ISVC_PAUSE = register(
    Action(
        name="isvc-pause",
        label="Pause",
        help=(
            "kubectl rollout pause of the InferenceService's Deployments (Standard mode only: in Serverless "
            "mode Knative owns them)."
        ),
        service=kserve_controls.pause,
        audit="isvc_pause",
        target=INFERENCESERVICE,
    )
)

ISVC_RESUME = register(
    Action(
        name="isvc-resume",
        label="Resume",
        help="kubectl rollout resume of the InferenceService's Deployments (Standard mode only).",
        service=kserve_controls.resume,
        audit="isvc_resume",
        target=INFERENCESERVICE,
    )
)
