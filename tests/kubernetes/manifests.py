"""Loading deploy/: the raw manifest files, the kustomization as kustomize renders it, and helpers
that read what a pod would see (its env after the kubelet's $(VAR) expansion)."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


# Components of deploy/ (kustomize components, turned on in deploy/kustomization.yaml): checked as
# kustomize renders deploy/ with them (test_helm_chart.py), not as files of deploy/ itself.
COMPONENTS = ("ingress",)


def manifest_files() -> list[Path]:
    # The Helm chart (deploy/helm) holds Go templates, checked by test_helm_chart.py.
    return sorted(
        p
        for p in DEPLOY.rglob("*.yaml")
        if p.name != "kustomization.yaml" and not {"helm", *COMPONENTS} & set(p.relative_to(DEPLOY).parts)
    )


@functools.cache
def _raw() -> tuple[tuple[Path, dict[str, Any]], ...]:
    docs = []
    for path in manifest_files():
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                docs.append((path, doc))
    return tuple(docs)


def documents() -> list[tuple[Path, dict[str, Any]]]:
    import copy

    return [(p, copy.deepcopy(d)) for p, d in _raw()]


def by_kind(kind: str) -> list[dict[str, Any]]:
    return [doc for _, doc in documents() if doc["kind"] == kind]


def kustomize_command() -> list[str] | None:
    """``kubectl kustomize`` (kubectl embeds kustomize) or a ``kustomize`` binary; None if neither."""
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    return None


@functools.cache
def _kustomize_build(path: str) -> tuple[str, ...]:
    command = kustomize_command()
    if command is None:
        raise RuntimeError("neither kubectl nor kustomize is installed")
    out = subprocess.run([*command, path], capture_output=True, text=True, timeout=120, check=True).stdout
    return tuple(yaml.safe_dump(d) for d in yaml.safe_load_all(out) if d)


def kustomize_build(path: Path = DEPLOY) -> list[dict[str, Any]]:
    return [yaml.safe_load(d) for d in _kustomize_build(str(path))]


def deployment(name: str, docs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    docs = docs if docs is not None else by_kind("Deployment")
    return next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == name)


def containers_of(deployment: dict[str, Any], *, init: bool = True) -> list[dict[str, Any]]:
    spec = deployment["spec"]["template"]["spec"]
    return (spec.get("initContainers", []) if init else []) + spec["containers"]


_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def container_env(
    container: dict[str, Any],
    config_maps: dict[str, dict[str, str]],
    secrets: dict[str, dict[str, str]],
    field_refs: dict[str, str] | None = None,
) -> dict[str, str]:
    """The environment the kubelet gives ``container``: envFrom first, then env in order, with
    ``$(NAME)`` expanded from what is defined so far (an undefined reference stays as written)."""
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        if "configMapRef" in source:
            env.update(config_maps[source["configMapRef"]["name"]])
        if "secretRef" in source:
            ref = source["secretRef"]
            # As the kubelet: an optional Secret that does not exist adds nothing.
            if ref["name"] in secrets or not ref.get("optional"):
                env.update(secrets[ref["name"]])
    for item in container.get("env") or []:
        if "value" in item:
            env[item["name"]] = _REF.sub(lambda m: env.get(m.group(1), m.group(0)), item["value"])
            continue
        ref = item["valueFrom"]
        if "secretKeyRef" in ref:
            key = ref["secretKeyRef"]
            value = secrets.get(key["name"], {}).get(key["key"])
            if value is None:
                if key.get("optional"):
                    continue
                raise KeyError(f"{container['name']}: Secret {key['name']} has no key {key['key']}")
            env[item["name"]] = value
        elif "configMapKeyRef" in ref:
            key = ref["configMapKeyRef"]
            env[item["name"]] = config_maps[key["name"]][key["key"]]
        elif "fieldRef" in ref:
            env[item["name"]] = (field_refs or {}).get(ref["fieldRef"]["fieldPath"], "")
    return env


def config_maps(docs: list[dict[str, Any]] | None = None) -> dict[str, dict[str, str]]:
    docs = docs if docs is not None else by_kind("ConfigMap")
    return {c["metadata"]["name"]: dict(c.get("data") or {}) for c in docs if c["kind"] == "ConfigMap"}
