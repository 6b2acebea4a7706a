"""Scenario files (YAML): parsing and validation. The format is public: docs/scenarios.md.

Every problem is reported as one ``ScenarioError`` whose text is one line naming the field path,
e.g. ``events[2].do: unknown action 'restart'`` or ``cluster.timing.load: expected a number or
[min, max]``. The manifest is checked by the controller's own validation
(``controller.core.spec.parse_modelserving``) and its errors are prefixed with ``modelServing.``.
Unknown keys are errors too: in a public format a typo (``unitl``) must not be silently ignored.

Manifest-changing events (``patch``, ``setImage``, ``pause``, ``resume``, ``promote``) are dry-run
in time order through the same control functions the run uses, so an event that would produce an
invalid manifest is reported before the run starts, as ``events[i].patch: spec.replicas: ...``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from controller.core import safeyaml
from controller.core.spec import ValidationError
from controller.core.strategy import ClusterSettings, parse_cluster_settings

from .config import DEFAULT_TIMING, PHASES, ClusterConfig, ImageBehaviour, Span, Traffic


class ScenarioError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


ACTIONS: dict[str, dict[str, tuple[str, bool]]] = {
    # action -> {field: (type, required)}; every event also takes `at` and an optional `reason`.
    "apply": {},
    "setImage": {"role": ("str", True), "image": ("str", True), "container": ("str", False)},
    "patch": {"patch": ("dict", True)},
    "deletePods": {"group": ("int", False), "role": ("str", False), "instance": ("int", False)},
    "failNode": {"node": ("node", True)},
    "addNodes": {"count": ("posint", False), "gpusPerNode": ("int", False)},
    "restartController": {},
    "pause": {},
    "resume": {},
    "promote": {"partition": ("int", False), "full": ("bool", False)},
    "rollback": {"toRevision": ("posint", True)},
    # Back to the stable revision, paused (needs the status and the revisions, like rollback).
    "abort": {},
    "corruptRevision": {"revision": ("posint", True)},
    # The registry moves a tag to other bytes: pods pulling it from now on run another digest.
    "retag": {"image": ("str", True)},
}
MANIFEST_EVENTS = {"patch", "setImage", "pause", "resume", "promote"}
TOP_LEVEL = {"name", "seed", "until", "cluster", "clusterSettings", "images", "traffic", "modelServing", "events"}
# InferenceService scenarios (section at the end of this file).
TOP_LEVEL |= {"inferenceService", "kserveConfig"}


@dataclass
class Event:
    index: int  # position in the file's `events` list (for messages)
    at: float
    do: str
    args: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None

    def describe(self) -> dict[str, Any]:
        out = {"do": self.do, **self.args}
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass
class Scenario:
    name: str
    seed: int
    until: float
    cluster: ClusterConfig
    traffic: Traffic | None
    manifest: dict[str, Any]
    events: list[Event]  # in time order (stable: file order at equal times), `apply` included
    # "ModelServing", or "InferenceService" (then ``kserve_config`` is the ConfigMap's ``deploy``
    # value, None without a ConfigMap).
    kind: str = "ModelServing"
    kserve_config: str | None = None
    # ``clusterSettings``: the cluster-wide strategy settings every pass gets (None: none given, and
    # the trace's frames carry no ``strategy``).
    settings: ClusterSettings | None = None

    @property
    def namespace(self) -> str:
        return (self.manifest.get("metadata") or {}).get("namespace") or "default"

    @property
    def ms_name(self) -> str:
        return self.manifest["metadata"]["name"]


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _number(v: Any, path: str, *, minimum: float = 0.0, positive: bool = False) -> float:
    if not _is_number(v):
        raise ScenarioError(path, f"expected a number, got {_show(v)}")
    if v < minimum or (positive and v <= 0):
        raise ScenarioError(path, f"must be {'> 0' if positive else f'>= {minimum:g}'}, got {v}")
    return float(v)


def _int(v: Any, path: str, *, minimum: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ScenarioError(path, f"expected an integer, got {_show(v)}")
    if v < minimum:
        raise ScenarioError(path, f"must be >= {minimum}, got {v}")
    return v


def parse_span(v: Any, path: str) -> Span:
    """A number, or [min, max] with 0 <= min <= max."""
    if _is_number(v):
        if v < 0:
            raise ScenarioError(path, f"must be >= 0, got {v}")
        return Span.fixed(v)
    if isinstance(v, list) and len(v) == 2 and all(_is_number(x) for x in v):
        low, high = v
        if low < 0 or high < low:
            raise ScenarioError(path, f"[min, max] needs 0 <= min <= max, got {v}")
        return Span(float(low), float(high))
    raise ScenarioError(path, f"expected a number or [min, max], got {_show(v)}")


def _mapping(v: Any, path: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise ScenarioError(path, f"expected a mapping, got {_show(v)}")
    return v


def _no_unknown(obj: dict[str, Any], allowed: set[str] | dict, path: str) -> None:
    for key in obj:
        if key not in allowed:
            where = f"{path}.{key}" if path else str(key)
            raise ScenarioError(where, f"unknown field (expected one of: {', '.join(sorted(allowed))})")


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def load_scenario(path: str | Path, *, seed: int | None = None) -> Scenario:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ScenarioError(str(path), f"cannot read: {exc.strerror or exc}") from None
    try:
        raw = safeyaml.load(text)  # the bounded reader every user-supplied YAML goes through
    except safeyaml.YamlRefused as exc:
        where = f"line {exc.line}" if exc.line else "yaml"
        raise ScenarioError(where, f"refused: {exc.path + ': ' if exc.path else ''}{exc.message}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "yaml"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ScenarioError(where, f"invalid YAML: {problem}") from None
    return parse_scenario(raw, default_name=path.stem, seed=seed)


def parse_scenario(raw: Any, *, default_name: str = "scenario", seed: int | None = None) -> Scenario:
    doc = _mapping(raw, "scenario") if raw is not None else {}
    _no_unknown(doc, TOP_LEVEL, "")
    name = doc.get("name", default_name)
    if not isinstance(name, str) or not name:
        raise ScenarioError("name", f"expected a non-empty string, got {_show(name)}")
    file_seed = _int(doc["seed"], "seed") if "seed" in doc else 0
    until = _number(doc.get("until", 3600), "until", positive=True)
    cluster = _cluster(doc.get("cluster", {}))
    cluster.images = parse_images(doc.get("images", {}))
    traffic = _traffic(doc["traffic"]) if doc.get("traffic") is not None else None
    if "inferenceService" in doc or "kserveConfig" in doc:
        return _inferenceservice_scenario(doc, name, file_seed if seed is None else seed, until, cluster, traffic)
    if "modelServing" not in doc:
        raise ScenarioError("modelServing", "required: a full ModelServing manifest")
    manifest = _manifest(doc["modelServing"])
    _check_route(traffic, manifest)
    events = _events(doc.get("events", []), until)
    settings = None
    if "clusterSettings" in doc:
        try:
            settings = parse_cluster_settings(doc["clusterSettings"] or {})
        except ValidationError as exc:
            raise ScenarioError(exc.field, exc.rule) from None
    scenario = Scenario(
        name, file_seed if seed is None else seed, until, cluster, traffic, manifest, events, settings=settings
    )
    _dry_run(scenario)
    return scenario


def _cluster(raw: Any) -> ClusterConfig:
    c = _mapping(raw, "cluster")
    _no_unknown(c, {"nodes", "gpusPerNode", "timing"}, "cluster")
    nodes = _int(c.get("nodes", 4), "cluster.nodes")
    gpus = _int(c.get("gpusPerNode", 8), "cluster.gpusPerNode")
    timing = dict(DEFAULT_TIMING)
    t = _mapping(c.get("timing", {}), "cluster.timing")
    _no_unknown(t, set(PHASES), "cluster.timing")
    for phase in PHASES:
        if phase in t:
            timing[phase] = parse_span(t[phase], f"cluster.timing.{phase}")
    return ClusterConfig(nodes=nodes, gpus_per_node=gpus, timing=timing)


def parse_images(raw: Any) -> dict[str, ImageBehaviour]:
    images = _mapping(raw, "images")
    out = {}
    for image, spec in images.items():
        path = f"images[{image!r}]" if not isinstance(image, str) else f"images.{image}"
        if not isinstance(image, str) or not image:
            raise ScenarioError(path, "image names must be non-empty strings")
        spec = _mapping(spec if spec is not None else {}, path)
        _no_unknown(
            spec, {"crash", "load", "errorRate", "timeoutRate", "latencyMs", "kvFormat", "ttftMs", "tpotMs"}, path
        )
        crash = spec.get("crash", False)
        if not isinstance(crash, bool):
            raise ScenarioError(f"{path}.crash", f"expected true or false, got {_show(crash)}")
        rate = _number(spec.get("errorRate", 0), f"{path}.errorRate")
        if rate > 1:
            raise ScenarioError(f"{path}.errorRate", f"must be between 0 and 1, got {rate:g}")
        timeouts = _number(spec.get("timeoutRate", 0), f"{path}.timeoutRate")
        if timeouts > 1:
            raise ScenarioError(f"{path}.timeoutRate", f"must be between 0 and 1, got {timeouts:g}")
        out[image] = ImageBehaviour(
            crash=crash,
            load=parse_span(spec["load"], f"{path}.load") if "load" in spec else None,
            error_rate=rate,
            timeout_rate=timeouts,
            latency_ms=parse_span(spec["latencyMs"], f"{path}.latencyMs") if "latencyMs" in spec else None,
            kv_format=_kv_format(spec.get("kvFormat"), f"{path}.kvFormat"),
            ttft_ms=parse_span(spec["ttftMs"], f"{path}.ttftMs") if "ttftMs" in spec else None,
            tpot_ms=parse_span(spec["tpotMs"], f"{path}.tpotMs") if "tpotMs" in spec else None,
        )
    return out


def parse_tokens(raw: Any, path: str) -> tuple[Span | None, Span | None]:
    """``{input: N or [min, max], output: N or [min, max]}`` tokens per request, or None."""
    if raw is None:
        return None, None
    tokens = _mapping(raw, path)
    _no_unknown(tokens, {"input", "output"}, path)
    for key in ("input", "output"):
        if key not in tokens:
            raise ScenarioError(f"{path}.{key}", "required: a number or [min, max] of tokens")
    return parse_span(tokens["input"], f"{path}.input"), parse_span(tokens["output"], f"{path}.output")


def _kv_format(v: Any, path: str) -> str | None:
    if v is None:
        return None
    if not isinstance(v, str) or not v:
        raise ScenarioError(path, f"expected a non-empty string naming the KV cache format, got {_show(v)}")
    return v


ROUTE_FIELDS = ("path", "scope", "routing")  # override the ModelServing's spec.traffic for the run


def _traffic(raw: Any) -> Traffic:
    t = _mapping(raw, "traffic")
    _no_unknown(t, {"rps", "durationSeconds", "tokens", *ROUTE_FIELDS}, "traffic")
    if "rps" not in t:
        raise ScenarioError("traffic.rps", "required")
    rps = _number(t["rps"], "traffic.rps")
    duration = parse_span(t.get("durationSeconds", 1), "traffic.durationSeconds")
    input_tokens, output_tokens = parse_tokens(t.get("tokens"), "traffic.tokens")
    route = tuple((k, t[k]) for k in ROUTE_FIELDS if k in t)
    return Traffic(rps=rps, duration=duration, input_tokens=input_tokens, output_tokens=output_tokens, route=route)


def _check_route(traffic: Traffic | None, manifest: dict[str, Any]) -> None:
    """The scenario's ``traffic.path/scope/routing`` read over the manifest's spec.traffic, with
    the manifest's roles and dependencies (``spec.parse_traffic``)."""
    if traffic is None or not traffic.route:
        return
    from controller.core.spec import parse_modelserving, parse_traffic

    ms = parse_modelserving(manifest)
    try:
        parse_traffic(dict(traffic.route), "traffic", ms.role_names, ms.strategy.coordination, ms.traffic)
    except ValidationError as exc:
        raise ScenarioError(exc.field, exc.rule) from None


def _manifest(raw: Any) -> dict[str, Any]:
    from controller.core.spec import ValidationError, parse_modelserving

    manifest = _mapping(raw, "modelServing")
    meta = manifest.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta.get("name"):
        raise ScenarioError("modelServing.metadata.name", "required: a non-empty string")
    if "namespace" in meta and meta["namespace"] in ("", None):  # as kubectl and the dashboard's apply read it
        meta["namespace"] = "default"
    try:
        parse_modelserving(manifest)
    except ValidationError as exc:
        raise ScenarioError(f"modelServing.{exc.field}", exc.rule) from None
    return manifest


def _events(
    raw: Any, until: float, actions: dict[str, dict[str, tuple[str, bool]]] | None = None, manifest_events=None
) -> list[Event]:
    actions = ACTIONS if actions is None else actions
    manifest_events = MANIFEST_EVENTS if manifest_events is None else manifest_events
    if not isinstance(raw, list):
        raise ScenarioError("events", f"expected a list, got {_show(raw)}")
    events = []
    for i, item in enumerate(raw):
        path = f"events[{i}]"
        item = _mapping(item, path)
        if "do" not in item:
            raise ScenarioError(f"{path}.do", "required")
        do = item["do"]
        if do not in actions:
            raise ScenarioError(f"{path}.do", f"unknown action {do!r} (expected one of: {', '.join(actions)})")
        if "at" not in item:
            raise ScenarioError(f"{path}.at", "required: virtual seconds")
        at = _number(item["at"], f"{path}.at")
        if at > until:
            raise ScenarioError(f"{path}.at", f"{at:g} is after until ({until:g})")
        fields = actions[do]
        _no_unknown(item, {"at", "do", "reason", *fields}, path)
        reason = item.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise ScenarioError(f"{path}.reason", f"expected a string, got {_show(reason)}")
        args = {}
        for key, (kind, required) in fields.items():
            if key not in item:
                if required:
                    raise ScenarioError(f"{path}.{key}", f"required for {do}")
                continue
            args[key] = _typed(item[key], kind, f"{path}.{key}")
        if do == "promote" and "partition" in args and args.get("full"):
            raise ScenarioError(f"{path}.full", "give either partition or full, not both")
        events.append(Event(i, at, do, args, reason))
    events.sort(key=lambda e: (e.at, e.index))
    applies = [e for e in events if e.do == "apply"]
    if len(applies) > 1:
        raise ScenarioError(
            f"events[{applies[1].index}].do", "apply may appear only once (use patch to change the manifest)"
        )
    if not applies:
        events.insert(0, Event(-1, 0.0, "apply"))
    else:
        apply_at = applies[0].at
        for e in events:
            if e.do in manifest_events | {"rollback", "abort", "corruptRevision", "deletePods"} and e.at < apply_at:
                raise ScenarioError(f"events[{e.index}].at", f"{e.do} at {e.at:g} comes before apply at {apply_at:g}")
    return events


def _typed(v: Any, kind: str, path: str) -> Any:
    if kind == "str":
        if not isinstance(v, str) or not v:
            raise ScenarioError(path, f"expected a non-empty string, got {_show(v)}")
        return v
    if kind == "int":
        return _int(v, path)
    if kind == "posint":
        return _int(v, path, minimum=1)
    if kind == "bool":
        if not isinstance(v, bool):
            raise ScenarioError(path, f"expected true or false, got {_show(v)}")
        return v
    if kind == "dict":
        return _mapping(v, path)
    if kind == "node":
        # A node index (node-3 is `node: 3`) or its name.
        if isinstance(v, str) and v:
            return v
        return f"node-{_int(v, path)}"
    raise AssertionError(kind)


def _dry_run(s: Scenario) -> None:
    """Apply the manifest-changing events to a copy of the manifest, in time order; validate each."""
    if not any(e.do in MANIFEST_EVENTS for e in s.events):
        return
    from controller.core.mergepatch import merge_patch
    from controller.core.spec import ValidationError, headline, parse_modelserving

    ms = s.manifest
    for e in s.events:
        if e.do not in MANIFEST_EVENTS:
            continue
        if e.do == "promote" and headline(ms).has_canary_steps:
            continue  # with canary steps, what promote does depends on the running canary (status)
        path = f"events[{e.index}]"
        try:
            patch = control_patch(ms, e)
        except ValueError as exc:  # controls.ControlError: e.g. no such role
            raise ScenarioError(f"{path}.{_arg_field(e)}", str(exc)) from None
        candidate = merge_patch(ms, patch)
        try:
            parse_modelserving(candidate)
        except ValidationError as exc:
            if e.do == "patch":
                raise ScenarioError(f"{path}.patch.{exc.field}", exc.rule) from None
            raise ScenarioError(path, f"{e.do} would make the manifest invalid: {exc}") from None
        ms = candidate


def _arg_field(e: Event) -> str:
    return {"setImage": "role", "promote": "partition", "patch": "patch"}.get(e.do, "do")


def control_patch(ms: dict[str, Any], e: Event) -> dict[str, Any]:
    """The merge patch an operator event makes, through the same controls as the dashboard."""
    if e.do == "patch":
        return e.args["patch"]
    from controller.core import controls

    if e.do == "setImage":
        return controls.set_image(ms, role=e.args["role"], image=e.args["image"], container=e.args.get("container"))
    if e.do == "pause":
        return controls.pause(ms)
    if e.do == "resume":
        return controls.resume(ms)
    if e.do == "promote":
        return controls.promote(ms, partition=e.args.get("partition"), full=bool(e.args.get("full")))
    raise AssertionError(e.do)


# -- InferenceService scenarios (KServe; docs/scenarios.md, "InferenceService scenarios") --------
#
# ``inferenceService`` (a full serving.kserve.io/v1beta1 manifest) instead of ``modelServing``,
# ``kserveConfig: {deploy: '<JSON string>'}`` for the inferenceservice-config ConfigMap, and these
# events. The manifest and every manifest-changing event are checked as KServe's webhook would
# (``controller.core.kserve``), so an InferenceService KServe would refuse is reported before the
# run, with the field path: ``inferenceService.spec.predictor.deploymentStrategy: ...``.

ISVC_ACTIONS: dict[str, dict[str, tuple[str, bool]]] = {
    "apply": {},
    "setImage": {"component": ("str", False), "image": ("str", True), "container": ("str", False)},
    "patch": {"patch": ("dict", True)},
    "deletePods": {"component": ("str", False), "revision": ("str", False), "pod": ("str", False)},
    "failNode": {"node": ("node", True)},
    "addNodes": {"count": ("posint", False), "gpusPerNode": ("int", False)},
    "restartController": {},
    "pause": {},
    "resume": {},
    "promote": {"canary": ("str", False)},
    # A canary is rolled back (``canary`` names one of several); with ``toRevision`` and no canary,
    # ``component`` (default predictor) goes back to the pod template of that Deployment revision
    # (Standard) or Knative revision number (Serverless).
    "rollback": {"canary": ("str", False), "component": ("str", False), "toRevision": ("posint", False)},
}
ISVC_MANIFEST_EVENTS = {"patch", "setImage", "promote", "rollback", "pause", "resume"}


def _inferenceservice_scenario(
    doc: dict[str, Any], name: str, seed: int, until: float, cluster: ClusterConfig, traffic: Traffic | None
) -> Scenario:
    from controller.core.kserve.config import parse_deploy_config
    from controller.core.kserve.errors import KServeError

    if "modelServing" in doc:
        raise ScenarioError("inferenceService", "give either modelServing or inferenceService, not both")
    if traffic is not None and traffic.route:
        raise ScenarioError(f"traffic.{traffic.route[0][0]}", "request paths apply to ModelServing scenarios only")
    if "inferenceService" not in doc:
        raise ScenarioError("inferenceService", "required with kserveConfig: a full InferenceService manifest")
    deploy = None
    if doc.get("kserveConfig") is not None:
        raw = _mapping(doc["kserveConfig"], "kserveConfig")
        _no_unknown(raw, {"deploy"}, "kserveConfig")
        if "deploy" not in raw:
            raise ScenarioError("kserveConfig.deploy", "required: the ConfigMap's deploy value (a JSON string)")
        deploy = raw["deploy"]
        if isinstance(deploy, dict):
            deploy = json.dumps(deploy)
        if not isinstance(deploy, str):
            raise ScenarioError("kserveConfig.deploy", f"expected a JSON string, got {_show(deploy)}")
    try:
        config = parse_deploy_config(deploy)
    except KServeError as exc:
        raise ScenarioError(
            "kserveConfig.deploy" + exc.field.removeprefix("inferenceservice-config.deploy"), exc.rule
        ) from None
    manifest = _isvc_manifest(doc["inferenceService"], config)
    events = _events(doc.get("events", []), until, ISVC_ACTIONS, ISVC_MANIFEST_EVENTS)
    for e in events:
        if e.do == "rollback" and "toRevision" in e.args and "canary" in e.args:
            raise ScenarioError(f"events[{e.index}].toRevision", "give either canary or toRevision, not both")
    scenario = Scenario(name, seed, until, cluster, traffic, manifest, events, "InferenceService", deploy)
    _isvc_dry_run(scenario, config)
    return scenario


def _isvc_manifest(raw: Any, config) -> dict[str, Any]:
    from controller.core.kserve.errors import KServeError
    from controller.core.kserve.spec import parse_inferenceservice

    manifest = _mapping(raw, "inferenceService")
    try:
        parse_inferenceservice(manifest, config)
    except KServeError as exc:
        raise ScenarioError(f"inferenceService.{exc.field}", exc.rule) from None
    return manifest


def isvc_control_patch(manifest: dict[str, Any], e: Event, config) -> dict[str, Any] | None:
    """The merge patch of the InferenceService an operator event makes (the controls of
    ``controller.core.kserve.controls``); None for the events that patch Deployments (pause,
    resume) or need the cluster (rollback to a revision). Raises ``ControlError``."""
    from controller.core.kserve import controls

    if e.do == "patch":
        return e.args["patch"]
    if e.do == "setImage":
        return controls.set_image(
            manifest,
            config,
            image=e.args["image"],
            component=e.args.get("component", "predictor"),
            container=e.args.get("container"),
        )
    if e.do == "promote":
        return controls.promote(manifest, config, canary=e.args.get("canary"))
    if e.do == "rollback" and "toRevision" not in e.args:
        return controls.rollback(
            manifest, config, canary=e.args.get("canary"), component=e.args.get("component", "predictor")
        )
    if e.do in ("pause", "resume"):
        controls.check_pausable(manifest, config)
    return None


def _isvc_dry_run(s: Scenario, config) -> None:
    from controller.core.controls import ControlError
    from controller.core.kserve.errors import KServeError
    from controller.core.kserve.spec import parse_inferenceservice
    from controller.core.mergepatch import merge_patch

    manifest = s.manifest
    for e in s.events:
        if e.do not in ISVC_MANIFEST_EVENTS:
            continue
        path = f"events[{e.index}]"
        try:
            patch = isvc_control_patch(manifest, e, config)
        except ControlError as exc:
            where = f"{path}.{exc.field}" if exc.field and exc.field in ISVC_ACTIONS[e.do] else f"{path}.do"
            raise ScenarioError(where, str(exc)) from None
        if patch is None:
            continue
        candidate = merge_patch(manifest, patch)
        try:
            parse_inferenceservice(candidate, config)
        except KServeError as exc:
            raise ScenarioError(f"{path}.patch.{exc.field}", exc.rule) from None
        manifest = candidate
