"""Read side for KServe InferenceServices (issue 13), and the list of every workload of both kinds.

The state of one InferenceService is ``controller.core.kserve.view.inferenceservice_view`` of the
live objects (``controller.runtime.kserve``): the same function ``simulate``'s trace uses, so the
REST API, the dashboard (the InferenceService page) and the trace agree; its controls are in
``controls``. A list row is a compact summary of it,
with the ModelServing rows' keys where they mean the same (``phase``, ``replicas``, ``ready``,
``updated``, ``desired``, ``paused``, ``blocked``) and a ``kind`` column.

Phases, in the ModelServing words: ``Degraded`` (KServe refuses the spec, a progress deadline
passed, a Knative revision failed), ``Unmanaged`` (ModelMesh: listed, not rolled
out by RolloutUI), ``Paused`` (a Deployment is paused), ``Healthy``
(converged), else ``Progressing``.
"""

from __future__ import annotations

from typing import Any

from controller.runtime.kserve import state as runtime_kserve

from .. import state as modelserving_state
from ..cluster import get_cluster

KIND_MODELSERVING = "ModelServing"
KIND_INFERENCESERVICE = "InferenceService"
KINDS = (KIND_MODELSERVING, KIND_INFERENCESERVICE)


def get_state(namespace: str, name: str) -> dict[str, Any]:
    """The state of one InferenceService. Raises ``NotFound``."""
    return runtime_kserve.inferenceservice_state(namespace, name)


def summary(view: dict[str, Any]) -> dict[str, Any]:
    """One list row of an InferenceService, from its view."""
    spec = view.get("spec") or {}
    predictor = (spec.get("components") or {}).get("predictor") or {}
    deployments = view["deployments"]
    canary = view.get("canary")
    return {
        "kind": KIND_INFERENCESERVICE,
        "namespace": view["namespace"],
        "name": view["name"],
        "phase": view["phase"],
        "deploymentMode": view.get("deploymentMode"),
        "managed": view.get("managed", True),
        "replicas": int(predictor.get("replicas") or 0),
        # Pods over every Deployment (components, canaries, Knative revisions still scaled up).
        "desired": sum(d["replicas"] for d in deployments),
        "ready": sum(d["counts"]["availableReplicas"] for d in deployments),
        "updated": sum(d["counts"]["updatedReplicas"] for d in deployments),
        "paused": any(d["paused"] for d in deployments),
        "image": predictor.get("image"),
        "canary": _canary_words(canary),
        "traffic": view["traffic"],
        "blocked": len(view["blocked"]),
        "converged": view["converged"],
    }


def _canary_words(canary: dict[str, Any] | None) -> str | None:
    if not canary:
        return None
    if canary["mode"] == "Knative":
        return f"{canary['canaryTrafficPercent']}% to {canary.get('latestRevision') or 'the latest revision'}"
    return ", ".join(
        f"{c['name']} {c['trafficPercent']}%{'' if c['ready'] else ' (not Ready)'}" for c in canary["canaries"]
    )


def list_raw() -> list[dict[str, Any]]:
    """Every InferenceService object (for the namespaces there are)."""
    return runtime_kserve.list_inferenceservices(None, cluster=get_cluster())


def list_summaries(
    *,
    namespace: str | None = None,
    search: str | None = None,
    phase: str | None = None,
    within: set[str] | None = None,
) -> list[dict[str, Any]]:
    """Rows of every InferenceService (empty when the cluster adapter does not read them yet);
    ``within``: only these namespaces (None: all), the ones the user may view."""
    cluster = get_cluster()
    rows = []
    for obj in runtime_kserve.list_inferenceservices(namespace or None, cluster=cluster):
        meta = obj.get("metadata") or {}
        if within is not None and meta.get("namespace", "default") not in within:
            continue
        view = runtime_kserve.inferenceservice_state(meta.get("namespace", "default"), meta["name"], cluster=cluster)
        rows.append(summary(view))
    if search:
        needle = search.strip().lower()
        rows = [r for r in rows if needle in f"{r['namespace']}/{r['name']}".lower()]
    if phase:
        rows = [r for r in rows if r["phase"] == phase]
    return sorted(rows, key=lambda r: (r["namespace"], r["name"]))


def list_workloads(
    *,
    namespace: str | None = None,
    search: str | None = None,
    phase: str | None = None,
    kind: str | None = None,
    within: set[str] | None = None,
) -> list[dict[str, Any]]:
    """ModelServings and InferenceServices in one list with a ``kind`` column, sorted by namespace,
    name and kind. ``kind`` keeps one of them; ``within``: only these namespaces (None: all)."""
    filters = {"namespace": namespace, "search": search, "phase": phase, "within": within}
    rows: list[dict[str, Any]] = []
    if kind in (None, "", KIND_MODELSERVING):
        rows += [{"kind": KIND_MODELSERVING, **row} for row in modelserving_state.list_summaries(**filters)]
    if kind in (None, "", KIND_INFERENCESERVICE):
        rows += list_summaries(**filters)
    return sorted(rows, key=lambda r: (r["namespace"], r["name"], r["kind"]))
