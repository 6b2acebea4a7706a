"""What KServe makes of an InferenceService: Deployments (Standard mode) and the traffic split.

Standard mode, one Deployment per component, named as KServe names them:

- ``{isvc}-predictor`` (``{isvc}-{name}-predictor`` when the predictor has a ``name``: a canary
  promoted by renaming the predictor keeps its Deployment, so promotion restarts nothing);
- ``{isvc}-predictor-worker`` for the workers of a multi-node predictor;
- ``{isvc}-transformer``, ``{isvc}-explainer``;
- ``{isvc}-{name}-predictor`` per ``spec.canary[]`` entry, with ``minReplicas`` or
  ``ceil(stable minReplicas x trafficPercent / 100)`` replicas; the stable predictor gives up the
  replicas of Ready canaries, never going below 1.

Traffic: Standard mode weighs only Ready canaries (the stable predictor gets the rest); Knative
mode splits between the latest revision (``canaryTrafficPercent``) and the last rolled-out one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .config import DeployConfig
from .spec import Canary, Component, InferenceService
from .strategy import EffectiveRollout, resolve_rollout

LABEL_ISVC = "serving.kserve.io/inferenceservice"
LABEL_COMPONENT = "component"
LABEL_CANARY = "serving.rolloutui.io/canary"


@dataclass(frozen=True, slots=True)
class DeploymentPlan:
    name: str
    component: str  # predictor | predictor-worker | transformer | explainer | canary:<name>
    replicas: int
    template: dict[str, Any]
    strategy: EffectiveRollout
    canary: str | None = None  # the spec.canary entry it serves
    traffic_percent: int | None = None  # predictors only: the weight it gets when Ready


def predictor_deployment_name(isvc: str, predictor: Component) -> str:
    return f"{isvc}-{predictor.name}-predictor" if predictor.name else f"{isvc}-predictor"


def canary_replicas(canary: Canary, stable_min: int) -> int:
    """``minReplicas`` when the canary says it, else its share of the stable predictor's:
    ``ceil(stable minReplicas x trafficPercent / 100)``. Example: stable 4, canary 10% -> 1."""
    if canary.predictor.raw.get("minReplicas") is not None:
        return canary.predictor.min_replicas
    return max(math.ceil(stable_min * canary.traffic_percent / 100), 1 if canary.traffic_percent else 0)


def _template(isvc: InferenceService, component: str, containers: tuple[dict[str, Any], ...], extra: dict) -> dict:
    labels = {LABEL_ISVC: isvc.name, LABEL_COMPONENT: component, **extra}
    return {"metadata": {"labels": labels}, "spec": {"containers": [dict(c) for c in containers]}}


def deployments(isvc: InferenceService, config: DeployConfig, *, ready_canaries: frozenset[str] = frozenset()):
    """The Deployments of a Standard-mode InferenceService, predictor first."""
    out: list[DeploymentPlan] = []
    predictor = isvc.predictor
    canary_share = sum(canary_replicas(c, predictor.min_replicas) for c in isvc.canaries if c.name in ready_canaries)
    stable_replicas = max(predictor.min_replicas - canary_share, 1) if isvc.canaries else predictor.replicas
    ready_percent = sum(c.traffic_percent for c in isvc.canaries if c.name in ready_canaries)
    out.append(
        DeploymentPlan(
            predictor_deployment_name(isvc.name, predictor),
            "predictor",
            stable_replicas,
            _template(isvc, "predictor", predictor.containers, {}),
            resolve_rollout(predictor.strategy, config, multi_node_worker=False),
            traffic_percent=100 - ready_percent,
        )
    )
    if predictor.worker is not None:
        out.append(
            DeploymentPlan(
                f"{predictor_deployment_name(isvc.name, predictor)}-worker",
                "predictor-worker",
                # RAY_NODE_COUNT - 1, whatever the head's replica count (KServe's createRawDeployment).
                predictor.worker.replicas,
                _template(isvc, "predictor-worker", predictor.worker.containers, {}),
                resolve_rollout(predictor.strategy, config, multi_node_worker=True),
            )
        )
    for kind in ("transformer", "explainer"):
        comp = isvc.components.get(kind)
        if comp is not None:
            out.append(
                DeploymentPlan(
                    f"{isvc.name}-{kind}",
                    kind,
                    comp.replicas,
                    _template(isvc, kind, comp.containers, {}),
                    resolve_rollout(comp.strategy, config, multi_node_worker=False),
                )
            )
    for canary in isvc.canaries:
        out.append(
            DeploymentPlan(
                f"{isvc.name}-{canary.name}-predictor",
                f"canary:{canary.name}",
                canary_replicas(canary, predictor.min_replicas),
                # The canary's pods carry exactly the labels a stable predictor's would: promotion
                # (the predictor takes the canary's name and spec) keeps the pod template, so the
                # Deployment rolls nothing. The canary label goes on the Deployment itself.
                _template(isvc, "predictor", canary.predictor.containers, {}),
                resolve_rollout(canary.predictor.strategy, config, multi_node_worker=False),
                canary=canary.name,
                traffic_percent=canary.traffic_percent if canary.name in ready_canaries else 0,
            )
        )
    return out


def serverless_traffic(
    canary_percent: int | None, latest_ready: str | None, latest_rolled_out: str | None
) -> list[tuple[str, int]]:
    """Knative traffic targets KServe writes for a Knative component.

    - no ``canaryTrafficPercent``: 100% to the latest ready revision;
    - with it, and a rolled-out revision older than the latest: the latest gets the percentage,
      the last rolled-out one the rest (``canaryTrafficPercent: 0`` pins all traffic back);
    - nothing ready yet: the last rolled-out revision keeps everything.

    Example: rolled out r1, latest ready r2, canary 10 -> [(r2, 10), (r1, 90)].
    """
    if latest_ready is None:
        return [(latest_rolled_out, 100)] if latest_rolled_out else []
    if canary_percent is None or latest_rolled_out is None or latest_rolled_out == latest_ready:
        return [(latest_ready, 100)]
    targets = [(latest_ready, canary_percent), (latest_rolled_out, 100 - canary_percent)]
    return [t for t in targets if t[1] > 0] or [(latest_rolled_out, 100)]
