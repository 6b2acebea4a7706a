"""What a release writes into a ModelServing's role templates, and reading it back per layer. Pure.

Place in the flow: ``deploy`` turns a DeploymentRevision into a ``ReleaseContent`` (``content_of``),
builds the merge patch of the target roles (``patch_for``) and applies it through the cluster port;
the rollback dialog compares what the templates say now with what they would say after
(``read_layers`` on both sides, ``layered_diff``), so the comparison uses the very bytes a deploy
writes, never a second description of them.

Each target role's entry and worker templates get, together (seed 004, section 6: a rollback that
changed only the artifact URI and kept an incompatible image would still fail):

==========  ==========================================================================================
layer       written as
==========  ==========================================================================================
image       the container's ``image`` (the ModelVersion's digest-pinned runtime image)
model       env ``MODEL_URI``, ``MODEL_VERSION`` (``<model>.<version>``), ``MODEL_CHECKSUM``,
            ``MODEL_FORMAT``, ``MODEL_FRAMEWORK_VERSION``, ``MODEL_PREPROCESSING_REF``,
            ``MODEL_PREPROCESSING_CHECKSUM``, and the template label ``serving.rolloutui.io/model-version``
schema      env ``MODEL_INPUT_SCHEMA_VERSION``, ``MODEL_OUTPUT_SCHEMA_VERSION``
config      env ``MODEL_CONFIG``: canonical JSON of the version's batching and timeouts with the
            release's overrides on top, e.g. ``{"batching":{"maxBatchSize":16},"timeouts":{"requestSeconds":60}}``
resources   the container's ``resources`` (cpu, memory, ``nvidia.com/gpu``) and the role's ``replicas``,
            from the version's needs, the resource profile, and the profile's per-role entry (later wins)
==========  ==========================================================================================

Every ``MODEL_*`` variable is owned by releases: a deploy removes the ones the new release does not
set (a version without preprocessing leaves no stale ``MODEL_PREPROCESSING_REF`` behind). Other
variables and containers are left as they are. Nothing per-release (number, reason) goes into a
template, so a rollback to a release writes the same template bytes and selects the same controller
revision it produced before.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.core import naming
from controller.core.controls import ControlError
from controller.core.mergepatch import merge_patch
from controller.core.spec import ValidationError, parse_modelserving, roles_as_written

LABEL_MODEL_VERSION = naming.PREFIX + "model-version"
LAYERS = ("model", "image", "config", "resources", "schema")
# The layers a rollback by layer takes back alone (the schema goes with the model: the schema
# versions describe the model's inputs and outputs).
ROLLBACK_LAYERS = ("model", "image", "config", "resources")

MODEL_ENV = (
    "MODEL_URI",
    "MODEL_VERSION",
    "MODEL_CHECKSUM",
    "MODEL_FORMAT",
    "MODEL_FRAMEWORK_VERSION",
    "MODEL_PREPROCESSING_REF",
    "MODEL_PREPROCESSING_CHECKSUM",
)
SCHEMA_ENV = ("MODEL_INPUT_SCHEMA_VERSION", "MODEL_OUTPUT_SCHEMA_VERSION")
CONFIG_ENV = "MODEL_CONFIG"
MANAGED_ENV = (*MODEL_ENV, *SCHEMA_ENV, CONFIG_ENV)

# ModelVersion resources -> container resource keys (limits; cpu and memory are also requested).
_RESOURCE_KEYS = {"cpu": "cpu", "memory": "memory", "gpus": naming.GPU_RESOURCE}


@dataclass(frozen=True)
class ReleaseContent:
    """Everything one release writes, per role where it differs by role."""

    image: str
    label: str
    env: dict[str, str]  # the managed variables that have a value, in MANAGED_ENV order
    resources: dict[str, dict[str, Any]] = field(default_factory=dict)  # role -> {"cpu", "memory", "gpus"}
    replicas: dict[str, int] = field(default_factory=dict)  # role -> replicas (absent: keep)
    # role -> the container's whole ``resources`` object, written as is (a restored release: see ``restoring``).
    exact_resources: dict[str, dict[str, Any]] = field(default_factory=dict)

    def restoring(self, applied: dict[str, Any]) -> ReleaseContent:
        """This content with the resources and replicas a release had when it was deployed
        (``applied``, from ``snapshot``), so a rollback also restores what that release left as it
        was: a release that set no replicas ran with the replicas of its day, and restoring it after
        one that scaled a role to 2 brings back that count."""
        roles = (applied or {}).get("roles") or {}
        return ReleaseContent(
            image=self.image,
            label=self.label,
            env=dict(self.env),
            resources=dict(self.resources),
            replicas={**self.replicas, **{r: v["replicas"] for r, v in roles.items() if v.get("replicas")}},
            exact_resources={r: v.get("resources") or {} for r, v in roles.items()},
        )


def mix_layer(live: ReleaseContent, old: ReleaseContent, layer: str) -> ReleaseContent:
    """``live`` with one layer (``ROLLBACK_LAYERS``) taken from ``old``: what a rollback by layer
    writes. ``model`` brings back the artifact variables, the model-version label and the schema
    variables; ``config`` the ``MODEL_CONFIG`` variable (removed when ``old`` had none);
    ``resources`` the container resources and replicas.

    Example: live image ``engine:v2`` and model ``m.v2``, old ``engine:v1`` / ``m.v1``; layer
    ``image`` -> image ``engine:v1``, model ``m.v2``."""
    if layer == "image":
        return ReleaseContent(
            old.image, live.label, dict(live.env), dict(live.resources), dict(live.replicas), dict(live.exact_resources)
        )
    if layer in ("model", "config"):
        names = (*MODEL_ENV, *SCHEMA_ENV) if layer == "model" else (CONFIG_ENV,)
        merged = {
            **{k: v for k, v in live.env.items() if k not in names},
            **{k: old.env[k] for k in names if k in old.env},
        }
        env = {k: merged[k] for k in MANAGED_ENV if k in merged}
        label = old.label if layer == "model" else live.label
        return ReleaseContent(
            live.image, label, env, dict(live.resources), dict(live.replicas), dict(live.exact_resources)
        )
    if layer == "resources":
        return ReleaseContent(
            live.image, live.label, dict(live.env), dict(old.resources), dict(old.replicas), dict(old.exact_resources)
        )
    raise ControlError(f"layer must be one of {', '.join(ROLLBACK_LAYERS)}", field="layer")


def effective_config(version: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The version's batching and timeouts with the release's overrides on top (empty parts left out)."""
    out = {}
    for part in ("batching", "timeouts"):
        merged = {**(version.get(part) or {}), **(overrides.get(part) or {})}
        if merged:
            out[part] = dict(sorted(merged.items()))
    return out


def role_resources(version: Mapping[str, Any], profile: Mapping[str, Any], role: str) -> dict[str, Any]:
    """Resources of one role: the version's needs, then the profile, then the profile's entry for the role.

    Example: version ``{"gpus": 1, "memory": "40Gi"}``, profile ``{"resources": {"cpu": "8"},
    "roles": {"prefill": {"resources": {"gpus": 2}}}}`` -> prefill ``{"gpus": 2, "memory": "40Gi",
    "cpu": "8"}``, decode ``{"gpus": 1, "memory": "40Gi", "cpu": "8"}``.
    """
    per_role = ((profile.get("roles") or {}).get(role) or {}).get("resources") or {}
    return {**(version.get("resources") or {}), **(profile.get("resources") or {}), **per_role}


def content_of(
    version: Mapping[str, Any], *, roles: list[str], config: Mapping[str, Any], profile: Mapping[str, Any]
) -> ReleaseContent:
    """The release of ``version`` (API field names, as ``ModelVersion.contract_values`` gives them)."""
    label = f"{version['model']}.{version['version']}"
    pre = version.get("preprocessing") or {}
    values = {
        "MODEL_URI": version["artifactUri"],
        "MODEL_VERSION": label,
        "MODEL_CHECKSUM": version["artifactChecksum"],
        "MODEL_FORMAT": version.get("format") or "",
        "MODEL_FRAMEWORK_VERSION": version.get("frameworkVersion") or "",
        "MODEL_PREPROCESSING_REF": pre.get("ref") or "",
        "MODEL_PREPROCESSING_CHECKSUM": pre.get("checksum") or "",
        "MODEL_INPUT_SCHEMA_VERSION": version.get("inputSchemaVersion") or "",
        "MODEL_OUTPUT_SCHEMA_VERSION": version.get("outputSchemaVersion") or "",
    }
    merged = effective_config(version, config)
    if merged:
        values[CONFIG_ENV] = json.dumps(merged, sort_keys=True, separators=(",", ":"))
    env = {name: values[name] for name in MANAGED_ENV if values.get(name)}
    replicas = {}
    for role in roles:
        wanted = ((profile.get("roles") or {}).get(role) or {}).get("replicas", profile.get("replicas"))
        if wanted is not None:
            replicas[role] = int(wanted)
    return ReleaseContent(
        image=version["runtimeImage"],
        label=label,
        env=env,
        resources={role: role_resources(version, profile, role) for role in roles},
        replicas=replicas,
    )


def _container(template: Mapping[str, Any], container: str, *, role: str, where: str) -> dict[str, Any] | None:
    containers = (template.get("spec") or {}).get("containers") or []
    if not containers:
        return None
    if not container:
        return containers[0]
    for c in containers:
        if c.get("name") == container:
            return c
    if where == "entryTemplate":
        raise ControlError(f"role {role!r} has no container {container!r} in its entry template", field="container")
    return None


def _write_container(c: dict[str, Any], content: ReleaseContent, role: str) -> None:
    c["image"] = content.image
    env = [e for e in c.get("env") or [] if e.get("name") not in MANAGED_ENV]
    env += [{"name": name, "value": value} for name, value in content.env.items()]
    c["env"] = env
    if role in content.exact_resources:
        exact = content.exact_resources[role]
        if exact:
            c["resources"] = copy.deepcopy(exact)
        else:
            c.pop("resources", None)
        return
    wanted = content.resources.get(role) or {}
    if wanted:
        res = copy.deepcopy(c.get("resources") or {})
        limits = dict(res.get("limits") or {})
        requests = dict(res.get("requests") or {})
        for key, k8s in _RESOURCE_KEYS.items():
            if key in wanted:
                limits[k8s] = str(wanted[key])
                if key != "gpus":
                    requests[k8s] = str(wanted[key])
        res["limits"] = limits
        if requests:
            res["requests"] = requests
        c["resources"] = res


def patch_for(ms: Mapping[str, Any], content: ReleaseContent, *, roles: list[str], container: str = "") -> dict:
    """The merge patch that writes ``content`` into ``roles``' entry and worker templates.

    Refuses (``ControlError``) a role the ModelServing does not have (field ``roles``), a container
    its entry template does not have (``container``), and a result the controller would reject
    (the field it names).
    """
    spec_roles = roles_as_written(ms)
    by_name = {r.get("name"): r for r in spec_roles}
    for role in roles:
        target = by_name.get(role)
        if target is None:
            names = ", ".join(str(r.get("name")) for r in spec_roles) or "none"
            raise ControlError(f"role {role!r} does not exist in the ModelServing (roles: {names})", field="roles")
        for key in ("entryTemplate", "workerTemplate"):
            template = target.get(key)
            if not template:
                continue
            chosen = _container(template, container, role=role, where=key)
            if chosen is None:
                continue
            _write_container(chosen, content, role)
            meta = template.setdefault("metadata", {})
            meta["labels"] = {**(meta.get("labels") or {}), LABEL_MODEL_VERSION: content.label}
        if role in content.replicas:
            target["replicas"] = content.replicas[role]
    patch = {"spec": {"template": {"roles": spec_roles}}}
    try:
        parse_modelserving(merge_patch(dict(ms), patch))
    except ValidationError as err:
        raise ControlError(f"the release would make the ModelServing invalid: {err}", field=err.field) from None
    return patch


def component_patch(isvc: Mapping[str, Any], content: ReleaseContent, *, component: str, container: str = "") -> dict:
    """The merge patch that writes ``content`` into an InferenceService component: its ``model``
    (image, env, resources, and ``storageUri`` = the artifact URI, which KServe's storage
    initializer downloads) or, for a component with ``containers``, the chosen container (default
    the first); the component's ``labels`` get ``serving.rolloutui.io/model-version`` (KServe puts
    a component's labels on its pods). The component's ``minReplicas`` follows the profile's replicas.

    Refuses (``ControlError``) a component the InferenceService does not have (field ``component``)
    and a container the component does not have (``container``)."""
    spec = isvc.get("spec") or {}
    raw = spec.get(component)
    if not isinstance(raw, dict):
        present = ", ".join(c for c in ("predictor", "transformer", "explainer") if spec.get(c)) or "none"
        raise ControlError(
            f"component {component!r} does not exist in the InferenceService (it has {present})", field="component"
        )
    target = copy.deepcopy(raw)
    out: dict[str, Any] = {}
    if target.get("containers"):
        containers = target["containers"]
        chosen = containers[0] if not container else next((c for c in containers if c.get("name") == container), None)
        if chosen is None:
            raise ControlError(f"component {component!r} has no container {container!r}", field="container")
        _write_container(chosen, content, component)
        out["containers"] = containers
    else:
        model = target.get("model") or {}
        _write_container(model, content, component)
        if content.env.get("MODEL_URI"):
            model["storageUri"] = content.env["MODEL_URI"]
        out["model"] = model
    out["labels"] = {**(target.get("labels") or {}), LABEL_MODEL_VERSION: content.label}
    if component in content.replicas:
        out["minReplicas"] = content.replicas[component]
    return {"spec": {component: out}}


def snapshot(ms: Mapping[str, Any], *, roles: list[str], container: str = "") -> dict[str, Any]:
    """What a deploy left in the resources layer, to restore it later (``ReleaseContent.restoring``):
    ``{"roles": {role: {"replicas": n, "resources": <the entry container's resources>}}}``."""
    out: dict[str, Any] = {}
    by_name = {r.get("name"): r for r in roles_as_written(ms)}
    for role in roles:
        spec_role = by_name.get(role)
        if spec_role is None:
            continue
        try:
            c = _container(spec_role.get("entryTemplate") or {}, container, role=role, where="entryTemplate") or {}
        except ControlError:
            c = {}
        out[role] = {"replicas": spec_role.get("replicas", 1), "resources": copy.deepcopy(c.get("resources") or {})}
    return {"roles": out}


def _env(c: Mapping[str, Any]) -> dict[str, str]:
    return {e.get("name"): e.get("value") for e in c.get("env") or [] if e.get("name")}


def read_layers(ms: Mapping[str, Any], *, roles: list[str], container: str = "") -> dict[str, dict[str, dict]]:
    """What the templates of ``roles`` say now, per role and layer: ``{role: {layer: {field: value}}}``.

    Read from the entry template (the worker template gets the same release); a worker running
    another image is shown as ``workerImage``. A role that is missing reads as empty layers.
    """
    out: dict[str, dict[str, dict]] = {}
    by_name = {r.get("name"): r for r in roles_as_written(ms)}
    for role in roles:
        layers: dict[str, dict] = {layer: {} for layer in LAYERS}
        out[role] = layers
        spec_role = by_name.get(role)
        if spec_role is None:
            continue
        entry = spec_role.get("entryTemplate") or {}
        try:
            c = _container(entry, container, role=role, where="entryTemplate") or {}
        except ControlError:
            c = {}
        env = _env(c)
        layers["image"]["image"] = c.get("image")
        worker = spec_role.get("workerTemplate")
        if worker:
            wc = _container(worker, container, role=role, where="workerTemplate") or {}
            if wc.get("image") != c.get("image"):
                layers["image"]["workerImage"] = wc.get("image")
        for name in MODEL_ENV:
            layers["model"][name] = env.get(name)
        layers["model"]["label"] = ((entry.get("metadata") or {}).get("labels") or {}).get(LABEL_MODEL_VERSION)
        for name in SCHEMA_ENV:
            layers["schema"][name] = env.get(name)
        raw = env.get(CONFIG_ENV)
        if raw is not None:
            try:
                parsed = json.loads(raw)
                for part, values in sorted(parsed.items()):
                    for key, value in sorted((values or {}).items()):
                        layers["config"][f"{part}.{key}"] = value
            except (ValueError, AttributeError):
                layers["config"][CONFIG_ENV] = raw
        res = c.get("resources") or {}
        for kind in ("limits", "requests"):
            for key, value in sorted((res.get(kind) or {}).items()):
                layers["resources"][f"{kind}.{key}"] = value
        layers["resources"]["replicas"] = spec_role.get("replicas", 1)
    return out


def layered_diff(before: Mapping[str, Mapping[str, Mapping]], after: Mapping[str, Mapping[str, Mapping]]) -> dict:
    """Per layer (in ``LAYERS`` order), the fields that differ: ``{layer: [{"role", "field", "from", "to"}]}``.
    A layer without a difference maps to an empty list (the dialog says "unchanged")."""
    out: dict[str, list[dict[str, Any]]] = {layer: [] for layer in LAYERS}
    for role in sorted(set(before) | set(after)):
        for layer in LAYERS:
            was = (before.get(role) or {}).get(layer) or {}
            now = (after.get(role) or {}).get(layer) or {}
            for key in sorted(set(was) | set(now)):
                if was.get(key) != now.get(key):
                    out[layer].append({"role": role, "field": key, "from": was.get(key), "to": now.get(key)})
    return out


def change_of(ms: Mapping[str, Any], content: ReleaseContent, *, roles: list[str], container: str = "") -> dict:
    """What writing ``content`` would change: the layered diff between now and after (nothing applied)."""
    after = merge_patch(dict(ms), patch_for(ms, content, roles=roles, container=container))
    return layered_diff(
        read_layers(ms, roles=roles, container=container), read_layers(after, roles=roles, container=container)
    )


def _component_container(part: Mapping[str, Any], container: str) -> Mapping[str, Any]:
    containers = part.get("containers") or []
    if containers:
        if not container:
            return containers[0]
        return next((c for c in containers if c.get("name") == container), {})
    return part.get("model") or {}


def read_component_layers(
    isvc: Mapping[str, Any], *, component: str, container: str = ""
) -> dict[str, dict[str, dict]]:
    """What an InferenceService component says now, per layer, as ``read_layers`` reads a role:
    ``{component: {layer: {field: value}}}``. The model layer adds the ``storageUri`` KServe's
    storage initializer downloads; the resources layer reads the component's ``minReplicas``."""
    layers: dict[str, dict] = {layer: {} for layer in LAYERS}
    part = (isvc.get("spec") or {}).get(component)
    if not isinstance(part, Mapping):
        return {component: layers}
    c = _component_container(part, container)
    env = _env(c)
    layers["image"]["image"] = c.get("image")
    for name in MODEL_ENV:
        layers["model"][name] = env.get(name)
    if not part.get("containers"):
        layers["model"]["storageUri"] = c.get("storageUri")
    layers["model"]["label"] = (part.get("labels") or {}).get(LABEL_MODEL_VERSION)
    for name in SCHEMA_ENV:
        layers["schema"][name] = env.get(name)
    raw = env.get(CONFIG_ENV)
    if raw is not None:
        try:
            for part_name, values in sorted(json.loads(raw).items()):
                for key, value in sorted((values or {}).items()):
                    layers["config"][f"{part_name}.{key}"] = value
        except (ValueError, AttributeError):
            layers["config"][CONFIG_ENV] = raw
    res = c.get("resources") or {}
    for kind in ("limits", "requests"):
        for key, value in sorted((res.get(kind) or {}).items()):
            layers["resources"][f"{kind}.{key}"] = value
    layers["resources"]["minReplicas"] = part.get("minReplicas")
    return {component: layers}


def component_change_of(
    isvc: Mapping[str, Any], content: ReleaseContent, *, component: str, container: str = ""
) -> dict:
    """What writing ``content`` into an InferenceService component would change, per layer (nothing applied)."""
    after = merge_patch(dict(isvc), component_patch(isvc, content, component=component, container=container))
    return layered_diff(
        read_component_layers(isvc, component=component, container=container),
        read_component_layers(after, component=component, container=container),
    )


__all__ = [
    "ROLLBACK_LAYERS",
    "component_change_of",
    "mix_layer",
    "read_component_layers",
    "LABEL_MODEL_VERSION",
    "LAYERS",
    "MANAGED_ENV",
    "ReleaseContent",
    "change_of",
    "content_of",
    "effective_config",
    "layered_diff",
    "patch_for",
    "read_layers",
    "role_resources",
    "snapshot",
]
