"""Manifest builders shared by every test suite: one way to write a ModelServing, its roles and
rollout strategy, and a KServe InferenceService.

Each builder returns a fresh dict (callers mutate what they get) and writes only the fields it is
given, so a manifest is exactly what the test states and nothing the product would default anyway.

    modelserving(replicas=4, roles=[role("prefill", workers=1), role("decode", replicas=2)],
                 strategy=group_strategy(maxUnavailable=1, maxSurge=1, partition=2))

Field names are the contract's (``docs/concepts.md``: ``maxUnavailable``, ``maxSurge``,
``partition``, ``coordination``...), passed through unchanged, so a test reads like the manifest.
"""

from __future__ import annotations

import copy
from typing import Any

from controller.core import naming

IMAGE = "engine:v1"
NAMESPACE = "default"
KSERVE_API_VERSION = "serving.kserve.io/v1beta1"
KSERVE_MODE_ANNOTATION = "serving.kserve.io/deploymentMode"


def container(image: str = IMAGE, *, name: str = "engine", gpus: Any = 1, env: list | None = None) -> dict:
    """One container; ``gpus=None`` leaves out the resources (the API server tests do not need them)."""
    c: dict[str, Any] = {"name": name, "image": image}
    if env is not None:
        c["env"] = copy.deepcopy(env)
    if gpus is not None:
        c["resources"] = {"limits": {naming.GPU_RESOURCE: str(gpus)}}
    return c


def pod_template(image: str = IMAGE, **container_kw) -> dict:
    return {"spec": {"containers": [container(image, **container_kw)]}}


def role(name: str, *, replicas: int = 1, workers: int = 0, image: str = IMAGE, **extra) -> dict:
    """A role: ``replicas`` instances per group, each one entry pod plus ``workers`` worker pods.

    ``gpus``, ``env`` and ``container_name`` shape the container; any other keyword is a role field
    (``maxUnavailable``, ``partition``... for role-level strategies) written as given.
    """
    kw = {k: extra.pop(k) for k in ("gpus", "env") if k in extra}
    if "container_name" in extra:
        kw["name"] = extra.pop("container_name")
    r = {
        "name": name,
        "replicas": replicas,
        "workerReplicas": workers,
        "entryTemplate": pod_template(image, **kw),
    }
    if workers:
        r["workerTemplate"] = pod_template(image, **kw)
    r.update(extra)
    return r


def prefill_decode(image: str = IMAGE, *, decode_replicas: int = 2, prefill_workers: int = 1, **container_kw) -> list:
    """The usual disaggregated pair: one prefill instance with workers, ``decode_replicas`` decodes."""
    return [
        role("prefill", replicas=1, workers=prefill_workers, image=image, **container_kw),
        role("decode", replicas=decode_replicas, image=image, **container_kw),
    ]


def group_strategy(**budgets) -> dict:
    """ServingGroupRollingUpdate with the given ``rollingUpdateConfiguration`` fields (camelCase)."""
    return {"type": "ServingGroupRollingUpdate", "rollingUpdateConfiguration": dict(budgets)}


def role_strategy(**config) -> dict:
    """RoleRollingUpdate; keywords go to ``roleRollingUpdateConfiguration`` (none: the bare type)."""
    out: dict[str, Any] = {"type": "RoleRollingUpdate"}
    if config:
        out["roleRollingUpdateConfiguration"] = dict(config)
    return out


def coordinated(skew: str = "10%", deps: dict | None = None, roles: list | None = None) -> dict:
    """RoleRollingUpdate with ``coordination``: ``deps`` maps a role to the roles it calls."""
    coordination: dict[str, Any] = {"maxSkew": skew}
    if deps:
        coordination["dependencies"] = [{"role": r, "dependsOn": list(on)} for r, on in deps.items()]
    if roles:
        coordination["roles"] = list(roles)
    return role_strategy(coordination=coordination)


def chain(*names: str) -> dict:
    """chain("a", "b", "c") -> a depends on b, b depends on c (A -> B -> C)."""
    return {names[i]: [names[i + 1]] for i in range(len(names) - 1)}


def inplace_strategy() -> dict:
    return {"type": "InPlaceRollingUpdate"}


def with_canary(strategy: dict, steps: list, analysis: dict | None = None) -> dict:
    """``strategy`` with ``canary.steps`` (and ``canary.analysis`` when given)."""
    out = copy.deepcopy(strategy)
    out["canary"] = {"steps": copy.deepcopy(steps)}
    if analysis is not None:
        out["canary"]["analysis"] = copy.deepcopy(analysis)
    return out


def modelserving(
    *,
    name: str = "ms",
    namespace: str = NAMESPACE,
    replicas: int = 4,
    roles: list | None = None,
    strategy: dict | None = None,
    recovery: str | None = None,
    api_version: str = naming.API_VERSION,
    uid: str | None = None,
    annotations: dict | None = None,
    gang_policy: dict | None = None,
    **spec_extra,
) -> dict:
    """A ModelServing: ``replicas`` groups of ``roles`` (default one ``serve`` role); other keywords
    are spec fields (``drain``, ``paused``, ``revisionHistoryLimit``, ``schedulerName``...).

    ``uid`` and ``annotations`` go to the metadata, ``gang_policy`` (role -> minRoleReplicas) to
    ``spec.template.gangPolicy.minRoleReplicas``; each only when given."""
    template: dict[str, Any] = {"roles": copy.deepcopy(roles) if roles else [role("serve")]}
    if gang_policy is not None:
        template["gangPolicy"] = {"minRoleReplicas": copy.deepcopy(gang_policy)}
    spec: dict[str, Any] = {"replicas": replicas, "template": template}
    if strategy:
        spec["rolloutStrategy"] = copy.deepcopy(strategy)
    if recovery:
        spec["recoveryPolicy"] = recovery
    spec.update(copy.deepcopy(spec_extra))
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if uid is not None:
        meta["uid"] = uid
    if annotations is not None:
        meta["annotations"] = copy.deepcopy(annotations)
    return {"apiVersion": api_version, "kind": naming.KIND, "metadata": meta, "spec": spec}


def inferenceservice(
    name: str = "llm",
    *,
    namespace: str = NAMESPACE,
    mode: str | None = None,
    predictor: dict | None = None,
    replicas: int | None = None,
    image: str = IMAGE,
    gpus: int | None = 1,
    env: list | None = None,
    **spec,
) -> dict:
    """A KServe InferenceService. Without ``predictor``: a vLLM model with ``image`` and
    ``replicas`` (``minReplicas``). ``mode`` sets the deploymentMode annotation."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if mode:
        meta["annotations"] = {KSERVE_MODE_ANNOTATION: mode}
    if predictor is None:
        model: dict[str, Any] = {"modelFormat": {"name": "vLLM"}, "image": image}
        if env is not None:
            model["env"] = copy.deepcopy(env)
        if gpus is not None:
            model["resources"] = {"limits": {naming.GPU_RESOURCE: str(gpus)}}
        predictor = {"model": model}
        if replicas is not None:
            predictor = {"minReplicas": replicas, **predictor}
    return {
        "apiVersion": KSERVE_API_VERSION,
        "kind": "InferenceService",
        "metadata": meta,
        "spec": {"predictor": copy.deepcopy(predictor), **copy.deepcopy(spec)},
    }
