// Header: phase badge, facts (revisions, counts, partition, strategy, cluster time), the paused
// and degraded banners, and the connection indicator with its "showing data as of" banner.

import { byId, h, memo, mount } from "../../lib/dom.js";
import { phaseClass } from "../../lib/format.js";
import { revLabel } from "../common.js";

// The AnalysisFailed condition while it stands (status "True"), else null.
export function analysisFailed(state) {
  return (state.conditions || []).find((c) => c && c.type === "AnalysisFailed" && c.status === "True") || null;
}

// The AnalysisInconclusive condition while it stands: the analysis paused the rollout for want of
// evidence, its message the shortfall ("3 windows with 4-12 canary requests, fewer than
// minRequests 20"); else null.
export function analysisInconclusive(state) {
  return (state.conditions || []).find((c) => c && c.type === "AnalysisInconclusive" && c.status === "True") || null;
}

// Why the phase is Degraded or the rollout stalled past its deadline (the view's "degraded": the
// failing instances with their reason and restarts, the deadline, the availability), else hidden.
function renderDegraded(degraded) {
  const banner = byId("degraded-banner");
  banner.hidden = !degraded;
  if (!degraded) return;
  byId("degraded-title").textContent = `${degraded.title}.`;
  const reasons = degraded.reasons || [];
  mount(byId("degraded-reasons"), reasons.length ? h("ul", null, reasons.map((r) => h("li", null, r))) : "No reason reported yet.");
}

export function createHeader({ boot, phases }) {
  const changed = memo();

  function renderConn(conn) {
    const el = byId("conn");
    el.className = "conn conn-" + conn.kind;
    el.textContent = conn.text;
    document.body.classList.toggle("is-stale", conn.kind !== "live");
    byId("stale-banner").hidden = conn.kind === "live" || conn.kind === "connecting";
    byId("stale-since").textContent = conn.lastMessageAt ? conn.lastMessageAt.toLocaleTimeString() : "page load";
  }

  function render({ state, revNumbers, conn }) {
    renderConn(conn);
    if (!changed(state)) return;
    const phase = byId("phase");
    phase.textContent = state.phase;
    phase.className = phaseClass(state.phase, phases);
    byId("paused-banner").hidden = !state.spec.paused;
    // Who paused it, when the canary analysis did: its AnalysisFailed condition carries the metric,
    // the figures and the limit, its AnalysisInconclusive condition the shortfall of evidence
    // (controller/core/planner/canary.py and core/evidence.py word them).
    const byAnalysis = analysisFailed(state) || analysisInconclusive(state);
    const cause = byId("paused-cause");
    cause.hidden = !(state.spec.paused && byAnalysis);
    mount(cause, state.spec.paused && byAnalysis ? [h("b", null, "Paused by the canary analysis: "), byAnalysis.message || ""] : null);
    renderDegraded(state.degraded);
    const cur = state.currentRevision;
    const upd = state.updateRevision;
    mount(
      byId("fact-rev"),
      cur && upd && cur !== upd
        ? [revLabel(cur, revNumbers), " ", h("span", { class: "arrow" }, "→"), " ", revLabel(upd, revNumbers)]
        : revLabel(upd || cur, revNumbers),
    );
    const c = state.counts || {};
    byId("fact-updated").textContent = `${c.updatedReplicas ?? "—"} / ${state.spec.replicas}`;
    byId("fact-available").textContent = `${c.availableReplicas ?? "—"} / ${state.spec.replicas}`;
    const p = state.spec.partition;
    // While canary steps run, the step sets the partition the planner uses, not spec.partition:
    // show that one ("3 · canary"), as the Effective strategy panel does.
    const stepPartition = ((state.strategy || {}).group || {}).partition;
    byId("fact-partition").textContent =
      stepPartition && stepPartition.source === "canary"
        ? `${stepPartition.count} · canary`
        : p !== null && typeof p === "object"
          ? JSON.stringify(p)
          : String(p);
    byId("fact-strategy").textContent = state.strategyType;
    byId("fact-time").textContent =
      state.time == null
        ? "—"
        : state.time > 1e9
          ? new Date(state.time * 1000).toLocaleTimeString()
          : Math.round(state.time) + " s";
    document.title = `${state.phase} · ${boot.namespace}/${boot.name} · RolloutUI`;
  }

  return { render };
}
