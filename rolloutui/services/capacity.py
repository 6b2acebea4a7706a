"""Capacity signals of one ModelServing, per role, and a recommended replica count with its reason.

What the Capacity panel (``static/js/detail/panels/capacity.js``) and
``GET /api/modelservings/<ns>/<name>/capacity/`` show. Nothing here scales anything: the
recommendation is advice, labelled so, and it never goes below one ServingGroup (scale to zero is
never a default).

Sources, per figure:

- **in flight** (concurrency): the router's in-flight counts, per role instance, from the state
  view (``controller.core.view``: the Redis hash the simulated traffic and a real router keep);
- **request rate**: on the simulated cluster the offered load of its ``SimTraffic`` row (``rps``),
  split over the roles by their share of the requests in flight (the router sends each request to
  the least busy entry pod of any role); the page also charts the measured rate from the row's
  ``sent`` counter between two polls. On Kubernetes: not available here (request records are);
- **queue time** (estimated): a batched engine runs at most ``safe concurrency`` requests at once
  (below); the rest wait. Little's law gives the wait: queued requests / arrival rate. Example:
  2 instances with 20 and 12 in flight, 16 safe each -> 4 queued; 8 requests/s reach the role ->
  4 / 8 = 0.5 s;
- **timeout rate**: needs per-request records (the page reads it from the comparison endpoint
  when the server has them); ``None`` here;
- **GPU utilisation and memory**: with ``ROLLOUTUI_PROMETHEUS_URL`` on Kubernetes, DCGM's
  ``DCGM_FI_DEV_GPU_UTIL`` and ``DCGM_FI_DEV_FB_USED`` / ``FB_FREE`` per pod; on the simulated
  cluster, modelled from the load (``simulated_gpu``); otherwise not available;
- **safe concurrency** per instance: the batching of the release whose model runs
  (``release_running``: the active release, else the one a set-image or a rollback superseded; the
  ModelVersion's batching with the release's overrides): ``maxBatchSize``, else
  ``maxConcurrentSequences``;
- **create-to-Serving**: per instance, Serving gate time - Created gate time (``controller.core
  .gates``), the median of the instances that reached Serving.
"""

from __future__ import annotations

import json
import math
import statistics
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.conf import settings

from controller.core import podresources
from controller.core.naming import LABEL_ROLE
from controller.core.ports import NotFound
from controller.core.spec import Role, ValidationError, parse_modelserving
from controller.runtime.simulator import get_simulator

from ..releases.models import DeploymentRevision
from . import cluster, state
from .releases import records as release_records
from .releases.templates import effective_config

RECOMMENDATION_LABEL = "recommendation, nothing is scaled"
# The share of an instance's safe concurrency a recommendation plans to use: 20% headroom for bursts.
TARGET_UTILISATION = 0.8
MIN_REPLICAS = 1  # scale to zero is never recommended by default

# The simulated GPU (see simulated_gpu): the loaded weights take this share of the memory, and the
# KV cache of a full set of concurrent sequences the next share.
SIM_WEIGHTS_MEMORY = 0.55
SIM_KV_MEMORY = 0.40

PROMETHEUS_TIMEOUT = 3.0


# --- The arithmetic (pure) -------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RoleLoad:
    """What the recommendation needs of one role."""

    name: str
    per_group: int  # instances of the role in one ServingGroup (role replicas)
    in_flight: int  # requests in flight on the role's instances now
    offered: float | None  # concurrency the offered load implies (rate x mean duration), if known
    safe: int | None  # safe concurrency per instance (None: unknown)


@dataclass(frozen=True, slots=True)
class Recommendation:
    replicas: int | None  # None: no recommendation (said why)
    current: int
    role: str | None  # the role that sets the count
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "replicas": self.replicas,
            "current": self.current,
            "role": self.role,
            "reason": self.reason,
            "label": RECOMMENDATION_LABEL,
        }


def _n(x: float) -> str:
    """1.0 -> "1", 2.5 -> "2.5", 12.75 -> "12.8"."""
    return f"{x:.1f}".rstrip("0").rstrip(".")


def recommend(
    current: int, roles: list[RoleLoad], *, create_to_serving: float | None = None, min_replicas: int = MIN_REPLICAS
) -> Recommendation:
    """The ServingGroups the load needs, and why, in words.

    Per role: demand = the larger of what is in flight and what the offered load implies; each
    instance takes ``safe x TARGET_UTILISATION`` of it; the instances needed, rounded up, become
    groups by the role's instances per group, rounded up. The role that needs the most groups sets
    the count; never below ``min_replicas``.

    Worked example: decode, 2 instances per group, 16 safe, 40 in flight -> 40 / (16 x 0.8) = 3.1
    -> 4 instances -> 2 groups.
    """
    sized = [r for r in roles if r.safe and r.safe > 0]
    if not sized:
        return Recommendation(
            None,
            current,
            None,
            "No recommendation: the safe concurrency per instance is unknown "
            "(no active release with batching targets this ModelServing).",
        )
    best: tuple[int, float, RoleLoad, float, int] | None = None
    for r in sized:
        demand = max(float(r.in_flight), r.offered or 0.0)
        per_instance = r.safe * TARGET_UTILISATION
        instances = math.ceil(demand / per_instance - 1e-9) if demand > 0 else 0
        groups = math.ceil(instances / max(r.per_group, 1))
        if best is None or groups > best[0]:
            best = (groups, demand, r, per_instance, instances)
    assert best is not None
    groups, demand, role, per_instance, instances = best
    replicas = max(groups, min_replicas)
    source = (
        "in flight now" if demand == role.in_flight else f"implied by the offered load ({role.in_flight} in flight now)"
    )
    if demand <= 0:
        kept = f"{min_replicas} group{'s' if min_replicas != 1 else ''}"
        why = f"No requests reach {role.name}: {kept} kept (never zero by default)."
    else:
        why = (
            f"{role.name}: {_n(demand)} requests {source} at {role.safe} safe per instance with "
            f"{round((1 - TARGET_UTILISATION) * 100)}% headroom need {instances} "
            f"instance{'s' if instances != 1 else ''} "
            f"({_n(demand)} / ({role.safe} x {TARGET_UTILISATION:g}) = {_n(demand / per_instance)}, rounded up); "
            f"at {role.per_group} per group that is {groups} group{'s' if groups != 1 else ''}"
        )
        if replicas > groups:
            why += f", raised to the minimum of {min_replicas}"
        why += "."
    if replicas > current:
        why += f" {current} run now: add {replicas - current}."
        if create_to_serving is not None:
            why += f" A new instance has taken about {round(create_to_serving)} s from Created to Serving."
    elif replicas < current:
        why += f" {current} run now: {current - replicas} could go (a scale-down drains like any delete)."
    else:
        why += f" {current} run now: enough."
    return Recommendation(replicas, current, role.name, why)


def queue_seconds(in_flight: list[int], safe: int | None, rate: float | None) -> float | None:
    """Estimated wait before a request runs (Little's law): requests beyond ``safe`` per instance
    wait; wait = queued / arrival rate. Example: [20, 12] in flight, safe 16, 8 req/s -> 4 / 8 = 0.5 s."""
    if not safe or not rate or rate <= 0:
        return None
    queued = sum(max(0, n - safe) for n in in_flight)
    return round(queued / rate, 3)


def simulated_gpu(in_flight: list[int], safe: int | None, sequences: int | None) -> tuple[float | None, float | None]:
    """The simulated cluster's GPUs, modelled from the load of the serving instances.

    Utilisation: a batched engine's compute grows with its batch until the batch is full:
    min(1, in flight / safe). Memory: the loaded weights (55%) plus the KV cache of the sequences in
    flight (40% at ``maxConcurrentSequences``). Means over the instances. Example: [8, 16] in
    flight, safe 16, 128 sequences -> utilisation (0.5 + 1) / 2 = 0.75; memory 0.55 + 0.40 x 12/128
    = 0.5875."""
    if not in_flight:
        return None, None
    util = None
    if safe:
        util = round(sum(min(1.0, n / safe) for n in in_flight) / len(in_flight), 4)
    seqs = sequences or safe
    memory = None
    if seqs:
        memory = round(
            sum(SIM_WEIGHTS_MEMORY + SIM_KV_MEMORY * min(1.0, n / seqs) for n in in_flight) / len(in_flight), 4
        )
    return util, memory


# --- Reading the sources ---------------------------------------------------------------------------
def _batching(namespace: str, name: str, view: dict[str, Any]) -> tuple[dict[str, Any], list[str], str | None]:
    """The batching of the release whose model runs (the version's with the release's overrides),
    the roles that run the model (empty: every role) and the release's label."""
    target = release_records.target_of(namespace, name)
    if target is None:
        return {}, [], None
    release, label = release_running(target, view)
    if release is None:
        return {}, list(target.roles or []), None
    version = release.model_version
    config = effective_config({"batching": version.batching or {}}, release.config or {})
    return config.get("batching") or {}, list(release.roles or target.roles or []), label


def release_running(target, view: dict[str, Any]) -> tuple[Any, str | None]:
    """The release whose model the ModelServing runs, with its label: the active one; else the
    newest whose controller revision runs now (a rollback to a released revision), else the newest
    deployed. A set-image or a rollback by hand supersedes a release (it no longer describes what
    rolls out) but leaves its model, and so its batching, in place: without this, safe concurrency
    and the GPU figures turned into "-" after any such change (issue 31)."""
    active = release_records.active_release(target)
    if active is not None:
        return active, str(active)
    deployed = DeploymentRevision.objects.select_related("model_version").filter(
        target=target, deployed_at__isnull=False
    )
    running = {view.get("updateRevision"), view.get("currentRevision")} - {None, ""}
    release = (
        deployed.filter(controller_revision__in=running).order_by("-deployed_at", "-number").first()
        or deployed.order_by("-deployed_at", "-number").first()
    )
    if release is None:
        return None, None
    return release, f"{release} ({release.status}: its model still runs)"


def safe_concurrency(batching: dict[str, Any]) -> int | None:
    """maxBatchSize (a full batch runs at once; more wait for a slot), else maxConcurrentSequences."""
    for key in ("maxBatchSize", "maxConcurrentSequences"):
        value = batching.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def spec_roles(manifest: Any) -> dict[str, Role]:
    """The roles of the parsed manifest by name (parsed once here, the figures read from the value);
    none for a manifest the spec refuses (its roles are then those its instances show)."""
    try:
        return {r.name: r for r in parse_modelserving(manifest).roles}
    except ValidationError:
        return {}


def gpus_per_instance(role: Role | None) -> int:
    """GPUs of one instance of ``role`` (``core.podresources``), 0 for a role the spec lacks."""
    if role is None:
        return 0
    return podresources.instance_gpus(role.entry_template, role.worker_replicas, role.worker_template)


def _prometheus(url: str, query: str) -> list[dict[str, Any]]:
    full = url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": query})
    with urllib.request.urlopen(full, timeout=PROMETHEUS_TIMEOUT) as resp:  # noqa: S310 (configured URL)
        body = json.loads(resp.read())
    return ((body or {}).get("data") or {}).get("result") or []


def dcgm_by_role(url: str, namespace: str, pods: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """DCGM's GPU utilisation (0-1) and memory used (0-1) per role, the mean over the role's pods."""
    role_of = {
        (p.get("metadata") or {}).get("name"): ((p.get("metadata") or {}).get("labels") or {}).get(LABEL_ROLE)
        for p in pods
    }
    names = "|".join(sorted(n for n in role_of if n))
    if not names:
        return {}
    selector = f'namespace="{namespace}",pod=~"{names}"'
    util = _prometheus(url, f"avg by (pod) (DCGM_FI_DEV_GPU_UTIL{{{selector}}})")
    used = _prometheus(
        url,
        f"sum by (pod) (DCGM_FI_DEV_FB_USED{{{selector}}}) / "
        f"(sum by (pod) (DCGM_FI_DEV_FB_USED{{{selector}}}) + sum by (pod) (DCGM_FI_DEV_FB_FREE{{{selector}}}))",
    )
    out: dict[str, dict[str, list[float]]] = {}
    for series, key, scale in ((util, "util", 100.0), (used, "memory", 1.0)):
        for item in series:
            role = role_of.get((item.get("metric") or {}).get("pod"))
            if role is None:
                continue
            out.setdefault(role, {}).setdefault(key, []).append(float(item["value"][1]) / scale)
    return {role: {k: round(statistics.fmean(v), 4) for k, v in d.items()} for role, d in out.items()}


def clock() -> dict[str, float]:
    """The cluster's clock as the pages count with it: now and its speed (the simulated cluster may
    run faster than the wall)."""
    c = cluster.get_clock()
    return {"now": round(c.now(), 3), "speed": float(getattr(c, "speed", 1.0) or 1.0)}


def capacity(namespace: str, name: str) -> dict[str, Any]:
    """The capacity signals of one ModelServing per role and the recommended replica count.
    Raises ``NotFound`` for an unknown ModelServing."""
    view = state.get_state(namespace, name)
    manifest = cluster.get_cluster().get_modelserving(namespace, name)
    roles_by_name = spec_roles(manifest)
    simulator = get_simulator()
    simulated = simulator is not None
    batching, model_roles, release = _batching(namespace, name, view)
    traffic = simulator.traffic_of(namespace, name) if simulator is not None else None
    prometheus_url = getattr(settings, "ROLLOUTUI_PROMETHEUS_URL", "") or ""
    dcgm, gpu_source = _gpu_signals(namespace, name, simulated, prometheus_url)
    instances = view.get("instances") or []
    sources = _sources(batching, model_roles, traffic, simulated, dcgm, instances)
    names = list(roles_by_name) or sorted({i["role"] for i in instances})
    figures = [role_figures(role, instances, roles_by_name.get(role), sources) for role in names]
    current = int((view.get("spec") or {}).get("replicas") or 0)
    serve_times = [t for f in figures for t in f.create_to_serving]
    serving_median = statistics.median(serve_times) if serve_times else None
    rec = recommend(current, [f.load for f in figures if f.load is not None], create_to_serving=serving_median)
    now = clock()
    return {
        "namespace": namespace,
        "name": name,
        "time": now["now"],
        "clock": now,
        "backend": cluster.backend_name(),
        "release": release,
        "batching": batching,
        "gpuSource": gpu_source,
        "requestSource": "simulated traffic" if traffic else "not available (no simulated traffic or request records)",
        "traffic": traffic,
        "replicas": current,
        "roles": [f.row for f in figures],
        "createToServing": {
            "medianSeconds": round(serving_median, 3) if serving_median is not None else None,
            "count": len(serve_times),
        },
        "recommendation": rec.to_json(),
    }


def _gpu_signals(
    namespace: str, name: str, simulated: bool, prometheus_url: str
) -> tuple[dict[str, dict[str, float]], str]:
    """DCGM's figures per role (``dcgm_by_role``) on Kubernetes with a Prometheus URL, and where the
    GPU figures come from, in words: simulated, Prometheus, or why they are not available."""
    if simulated:
        return {}, "simulated"
    if not prometheus_url:
        return {}, "not available (set ROLLOUTUI_PROMETHEUS_URL for DCGM)"
    try:
        return dcgm_by_role(prometheus_url, namespace, cluster.get_cluster().list_pods(namespace, name)), (
            "prometheus (DCGM)"
        )
    except (OSError, ValueError, KeyError) as exc:
        return {}, f"not available (Prometheus: {exc})"


@dataclass(frozen=True, slots=True)
class Sources:
    """What every role's figures read: the batching's safe concurrency and sequences, the roles
    that run the model (empty: every role), the offered load (rate and mean request duration), the
    GPU figures' source, and the totals a role's share of the rate is taken from."""

    safe: int | None
    sequences: int | None
    model_roles: list[str]
    rps: float | None
    mean_duration: float | None
    simulated: bool
    dcgm: dict[str, dict[str, float]]
    total_in_flight: int
    total_instances: int


def _sources(
    batching: dict[str, Any],
    model_roles: list[str],
    traffic: dict[str, Any] | None,
    simulated: bool,
    dcgm: dict[str, dict[str, float]],
    instances: list[dict[str, Any]],
) -> Sources:
    sequences = batching.get("maxConcurrentSequences")
    return Sources(
        safe=safe_concurrency(batching),
        sequences=sequences if isinstance(sequences, int) else None,
        model_roles=model_roles,
        rps=float(traffic["rps"]) if traffic else None,
        # durationSeconds is [shortest, longest]; its middle stands for the mean request duration.
        mean_duration=sum(traffic["durationSeconds"]) / 2 if traffic else None,
        simulated=simulated,
        dcgm=dcgm,
        total_in_flight=sum(int(i.get("inFlight") or 0) for i in instances),
        total_instances=len(instances),
    )


class RoleFigures(NamedTuple):
    row: dict[str, Any]  # the role's entry in ``roles``
    load: RoleLoad | None  # what the recommendation reads of it (None: the role runs no model)
    create_to_serving: list[float]  # Serving - Created, per instance that reached Serving


def role_figures(role: str, instances: list[dict[str, Any]], spec_role: Role | None, src: Sources) -> RoleFigures:
    """One role's figures from its instances in the state view (``spec_role``: the role in the
    parsed spec, None when the spec lacks it: one instance per group then)."""
    mine = [i for i in instances if i["role"] == role]
    serving = [i for i in mine if i.get("gate") == "Serving"]
    flights = [int(i.get("inFlight") or 0) for i in serving]
    in_flight = sum(int(i.get("inFlight") or 0) for i in mine)
    rate = role_rate(in_flight, len(mine), src)
    times = create_to_serving_times(mine)
    runs_model = not src.model_roles or role in src.model_roles
    role_safe = src.safe if runs_model else None
    if src.simulated:
        util, memory = simulated_gpu(flights, role_safe, src.sequences if runs_model else None)
    else:
        util, memory = (src.dcgm.get(role) or {}).get("util"), (src.dcgm.get(role) or {}).get("memory")
    per_group = spec_role.replicas if spec_role is not None else 1
    row = {
        "name": role,
        "instances": len(mine),
        "serving": len(serving),
        "perGroup": per_group,
        "inFlight": in_flight,
        "requestRate": rate,
        "queueSeconds": queue_seconds(flights, role_safe, rate),
        "timeoutRate": None,
        "gpus": gpus_per_instance(spec_role) * len(mine),
        "gpuUtilisation": util,
        "gpuMemory": memory,
        "safeConcurrency": role_safe,
        "safeTotal": role_safe * len(serving) if role_safe else None,
        "createToServing": {
            "medianSeconds": round(statistics.median(times), 3) if times else None,
            "count": len(times),
            "maxSeconds": round(max(times), 3) if times else None,
        },
    }
    offered = rate * src.mean_duration if rate is not None and src.mean_duration is not None else None
    return RoleFigures(row, RoleLoad(role, per_group, in_flight, offered, role_safe) if runs_model else None, times)


def role_rate(in_flight: int, instances: int, src: Sources) -> float | None:
    """The role's share of the offered rate. The router spreads requests over every role's entry
    pods: the role's share of the rate is its share of the requests in flight (of the instances
    when none are in flight). Example: 10 requests/s, 6 of 8 in flight on this role -> 7.5/s."""
    share = (
        in_flight / src.total_in_flight
        if src.total_in_flight
        else (instances / src.total_instances if src.total_instances else 0.0)
    )
    return round(src.rps * share, 3) if src.rps is not None else None


def create_to_serving_times(instances: list[dict[str, Any]]) -> list[float]:
    """Serving gate time - Created gate time of each instance that has both."""
    return [
        i["gateTimes"]["Serving"] - i["gateTimes"]["Created"]
        for i in instances
        if (i.get("gateTimes") or {}).get("Serving") is not None
        and (i.get("gateTimes") or {}).get("Created") is not None
    ]


__all__ = ["NotFound", "capacity", "clock", "recommend", "RoleLoad", "Recommendation"]
