// Canary: the steps of spec.rolloutStrategy.canary with the current one marked, the time left in a
// timed pause, the phase, the analysis windows with their verdicts and the failed checks' reasons
// (worded by controller/core/analysis.py), and stable against canary from the comparison endpoint
// (GET .../comparison/: figures per revision over a window, and a series per time bucket), charted
// with Plotly. Hidden when the ModelServing has no canary steps. With setWeight steps the step list
// shows the weight in force and beside it the split actually observed (``observedText``).
//
// The countdown runs on the cluster's clock, not the browser's: the page gets the cluster's time
// and speed when it loads (boot.clock; the simulated cluster may run faster than the wall), so
// cluster now = clock.now + (browser seconds since load) * clock.speed. Example: a pause of 300 s
// started at cluster time 1000; the page loaded at cluster time 1100, 20 browser seconds ago, speed
// 2 -> now 1140, 160 s left.
//
// The comparison endpoint belongs to the request records (another part of the product): while it is
// missing (404) the panel says the figures are not available yet, and asks again later.

import { api } from "../../lib/api.js";
import { byId, h, memo, mount } from "../../lib/dom.js";
import { isEpoch } from "../../lib/format.js";
import { revLabel } from "../common.js";
import { chartConfig, chartLayout, loadPlotly } from "./charts.js";
import { analysisFailed, analysisInconclusive } from "./header.js";
import { revisionColour } from "../../lib/colors.js";

const COMPARISON_REFRESH_MS = 15000;
export const COMPARISON_QUERY = "window=900&bucket=60"; // 15 minutes in 1-minute buckets (seconds)
const SHOWN_WINDOWS = 10;

// The figures side by side: key, label, how to show a value.
const pct = (v) => (v * 100).toFixed(v < 0.1 ? 2 : 1) + "%";
const ms = (v) => Math.round(v).toLocaleString("en-US") + " ms";
export const FIGURES = [
  ["requests", "Requests", (v) => Math.round(v).toLocaleString("en-US")],
  ["errorRate", "Error rate", pct],
  ["timeoutRate", "Timeout rate", pct],
  ["latencyP50Ms", "Latency p50", ms],
  ["latencyP95Ms", "Latency p95", ms],
  ["latencyP99Ms", "Latency p99", ms],
  // Token figures (records that carry them; "—" otherwise): time to first token, time per output token.
  ["ttftP95Ms", "TTFT p95", ms],
  ["tpotP95Ms", "TPOT p95", ms],
  ["mixedPaths", "Mixed-path requests", (v) => Math.round(v).toLocaleString("en-US")],
  ["feedbackMean", "Mean feedback", (v) => Number(v).toFixed(2)],
  // Resources per revision (GPU utilisation and memory of its Serving instances; "—" without a source).
  ["gpuUtilization", "GPU utilisation", pct],
  ["gpuMemoryMiB", "GPU memory", (v) => Math.round(v).toLocaleString("en-US") + " MiB"],
];

const show = (fmt, v) => (v === null || v === undefined || Number.isNaN(Number(v)) ? "—" : fmt(Number(v)));

// 75 -> "1m 15s", 3600 -> "60m 0s", 12 -> "12s".
export function fmtLeft(seconds) {
  const s = Math.max(0, Math.ceil(seconds));
  return s >= 60 ? `${Math.floor(s / 60)}m ${s % 60}s` : `${s}s`;
}

// One step in words: {setPartition: "90%"} -> "Set partition 90%"; {setWeight: 10} -> "Set weight
// 10%"; {pause: {durationSeconds: 300}} -> "Pause 5m 0s"; {pause: {}} -> "Pause until promoted".
export function stepText(step) {
  if (step && step.setPartition !== undefined) {
    const p = step.setPartition;
    return `Set partition ${typeof p === "object" ? JSON.stringify(p) : p}`;
  }
  if (step && step.setWeight !== undefined) return `Set weight ${Number(step.setWeight)}%`;
  const d = step && step.pause && step.pause.durationSeconds;
  return d === undefined || d === null ? "Pause until promoted" : `Pause ${fmtLeft(d)}`;
}

// The mark of the step a canary is at, by its phase: one that is over (rolled back, failed) says
// where it stopped, not "now".
const STEP_MARK = {
  Running: "now",
  Paused: "waiting here",
  Failed: "failed here",
  RolledBack: "rolled back here",
  Aborted: "aborted here",
};

// The split actually observed beside the weight: the share of the requests that started in the
// analysis windows run wholly at this weight that went to the canary (the view's observedWeight).
// Without an analysis, the share of the comparison's finished requests over its window
// (``comparison``: the comparison endpoint's data, {canary, stable}).
// Examples: {percent: 9.8, canary: 118, total: 1204, windows: 3} -> "observed 9.8% (118 of 1,204
// requests, 3 windows)"; an analysis with no such window yet -> "observed: no window at this weight yet".
export function observedText(observed, comparison, analysed) {
  const n = (v) => Math.round(v).toLocaleString("en-US");
  if (observed && typeof observed.percent === "number") {
    const w = observed.windows === 1 ? "1 window" : `${observed.windows} windows`;
    return `observed ${observed.percent}% (${n(observed.canary)} of ${n(observed.total)} requests, ${w})`;
  }
  if (analysed) return "observed: no window at this weight yet";
  const c = comparison && comparison.canary ? Number(comparison.canary.requests) || 0 : 0;
  const s = comparison && comparison.stable ? Number(comparison.stable.requests) || 0 : 0;
  if (c + s > 0) return `observed ${((100 * c) / (c + s)).toFixed(1)}% (${n(c)} of ${n(c + s)} requests, last figures)`;
  return "observed: no requests yet";
}

const clockText = (t) => (t == null ? "—" : isEpoch(t) ? new Date(t * 1000).toLocaleTimeString() : Math.round(t) + " s");

function hasCanarySpec(manifest) {
  const s = manifest && manifest.spec && manifest.spec.rolloutStrategy;
  return Boolean(s && s.canary);
}

export function createCanary({ boot, plotlySrc }) {
  const panel = byId("canary-panel");
  const changed = memo();
  const clock = (boot && boot.clock) || null;
  const loadedAt = performance.now();
  let canary = null; // the state's canary view, for the countdown
  let comparison = { status: "loading" };
  let comparisonDrawn = null;
  let timer = 0;

  // Cluster seconds now, by the cluster's clock as the page learnt it (see the top).
  function clusterNow(state) {
    if (clock && typeof clock.now === "number") {
      return clock.now + ((performance.now() - loadedAt) / 1000) * (Number(clock.speed) || 1);
    }
    return state.time;
  }

  function pauseEndsAt() {
    if (!canary || canary.phase !== "Paused") return null;
    const step = (canary.steps || [])[canary.stepIndex];
    const d = step && step.pause && step.pause.durationSeconds;
    if (d === undefined || d === null || typeof canary.stepStartedAt !== "number") return null;
    return canary.stepStartedAt + Number(d);
  }

  let lastState = null;
  function tick() {
    const el = byId("canary-countdown");
    const end = pauseEndsAt();
    if (!el) return;
    if (end === null) {
      el.textContent = "";
      return;
    }
    const left = end - clusterNow(lastState);
    // Once its time is up a timed pause still waits for evidence (core/evidence.py, pause_hold):
    // the server says what it waits for.
    el.textContent =
      left > 0
        ? `${fmtLeft(left)} left in this pause`
        : canary.waitingFor
          ? `pause time is up, still ${canary.waitingFor}`
          : "pause over: the next step starts on the next pass";
  }

  const comparisonData = () => (comparison.status === "ok" ? comparison.data : null);

  // New comparison figures: the observed split follows them where the windows have none.
  function refreshObserved() {
    if (!canary || canary.weight === undefined || canary.weight === null) return;
    const text = observedText(canary.observedWeight, comparisonData(), canary.analysis);
    const main = panel.querySelector('[data-testid="canary-observed-weight"]');
    if (main) main.textContent = text;
    const beside = panel.querySelector('[data-testid="canary-step-weight"]');
    if (beside) beside.textContent = ` weight ${canary.weight}% · ${text}`;
  }

  // Beside the current step: the weight in force and the split observed ("10% · observed 9.8% ...").
  function weightBeside(c) {
    return h(
      "span",
      { class: "step-weight muted", "data-testid": "canary-step-weight" },
      ` weight ${c.weight}% · ${observedText(c.observedWeight, comparisonData(), c.analysis)}`,
    );
  }

  function renderSteps(c, revNumbers, failed, inconclusive, paused) {
    const steps = c.steps || [];
    const weighted = c.weight !== undefined && c.weight !== null;
    const done = c.stepIndex >= steps.length;
    return h(
      "div",
      { class: "canary-steps" },
      h(
        "div",
        { class: "canary-phase" },
        h("span", { class: "phase phase-" + String(c.phase || "").toLowerCase(), "data-testid": "canary-phase" }, c.phase || "—"),
        " ",
        h("span", { class: "muted" }, "canary "),
        revLabel(c.revision, revNumbers),
        h("span", { class: "muted" }, " against stable "),
        revLabel(c.stable, revNumbers),
      ),
      h(
        "ol",
        { class: "steps", "data-testid": "canary-steps" },
        steps.map((step, i) => {
          const state = i < c.stepIndex ? "done" : i === c.stepIndex ? "current" : "next";
          return h(
            "li",
            { class: "step step-" + state, "aria-current": state === "current" ? "step" : null },
            h("span", { class: "step-text" }, stepText(step)),
            state === "current" ? h("span", { class: "step-mark" }, STEP_MARK[c.phase] || "stopped here") : null,
            state === "current" && weighted ? weightBeside(c) : null,
            state === "done" ? h("span", { class: "step-mark muted" }, "done") : null,
          );
        }),
      ),
      done ? h("p", { class: "calm" }, "Every step is done.") : null,
      weighted
        ? h(
            "p",
            { class: "canary-weight", "data-testid": "canary-weight" },
            h("span", { class: "muted" }, "weight "),
            h("strong", null, `${c.weight}%`),
            " of new requests to the canary · ",
            h("span", { "data-testid": "canary-observed-weight" }, observedText(c.observedWeight, comparisonData(), c.analysis)),
          )
        : null,
      weighted && c.weightMessage ? h("p", { class: "warn", "data-testid": "canary-weight-message" }, c.weightMessage) : null,
      h("p", { class: "countdown", id: "canary-countdown", "data-testid": "canary-countdown" }),
      c.message ? h("p", { class: "canary-message", "data-testid": "canary-message" }, c.message) : null,
      failed
        ? h(
            "p",
            { class: "canary-condition", "data-testid": "canary-condition" },
            h("span", { class: "muted" }, "condition "),
            h("span", { class: "condition-type" }, failed.type),
            paused
              ? ": the analysis paused the rollout (Resume goes on, Roll back… returns to stable)."
              : c.onFailure === "Rollback"
                ? ": the analysis rolled the ModelServing back to the stable revision."
                : ": the analysis stopped the canary.",
          )
        : null,
      inconclusive
        ? h(
            "p",
            { class: "canary-condition", "data-testid": "canary-inconclusive" },
            h("span", { class: "muted" }, "condition "),
            h("span", { class: "condition-type" }, inconclusive.type),
            ": no evidence to go on, so the analysis paused the rollout: ",
            h("span", { class: "canary-shortfall" }, inconclusive.message || ""),
            ". Resume continues this step and Promote skips it; either overrides the analysis (audited as such).",
          )
        : null,
    );
  }

  // "· 1 failed (failureLimit 2) · 2 inconclusive in a row (inconclusiveLimit 3)"
  function countsText(c) {
    const limits = c.limits || {};
    const parts = [];
    if (c.failures) parts.push(`${c.failures} failed` + (limits.failureLimit ? ` (failureLimit ${limits.failureLimit})` : ""));
    if (c.inconclusive) parts.push(`${c.inconclusive} inconclusive in a row` + (limits.inconclusiveLimit ? ` (inconclusiveLimit ${limits.inconclusiveLimit})` : ""));
    return parts.length ? " · " + parts.join(" · ") : "";
  }

  function renderWindows(c) {
    const windows = (c.windows || []).slice(-SHOWN_WINDOWS).reverse();
    if (!c.analysis) return h("p", { class: "calm" }, "No analysis is set: the steps move on by time and promote only.");
    if (!windows.length) return h("p", { class: "calm" }, "No analysis window has ended yet.");
    return h(
      "table",
      { class: "table compact windows", "data-testid": "canary-windows" },
      h(
        "thead",
        null,
        h("tr", null, h("th", null, "Window ended"), h("th", null, "Verdict"), h("th", { class: "num" }, "Requests (canary / stable)"), h("th", null, "Why")),
      ),
      h(
        "tbody",
        null,
        windows.map((w) => {
          const f = w.figures || {};
          const cr = (f.canary || {}).requests;
          const sr = (f.stable || {}).requests;
          const verdict = String(w.verdict || "");
          return h(
            "tr",
            null,
            h("td", { class: "num" }, clockText(w.end)),
            h("td", null, h("span", { class: "verdict verdict-" + verdict.toLowerCase() }, verdict || "—")),
            h("td", { class: "num" }, `${cr ?? "—"} / ${sr ?? "—"}`),
            h(
              "td",
              { class: "reasons" },
              (w.reasons || []).length ? h("ul", { class: "compact-list" }, w.reasons.map((r) => h("li", null, String(r)))) : h("span", { class: "muted" }, "every check held"),
            ),
          );
        }),
      ),
    );
  }

  function renderComparison() {
    const el = byId("canary-compare");
    if (!el) return;
    if (comparison.status === "loading") {
      mount(el, h("p", { class: "calm" }, "Reading the figures…"));
      return;
    }
    if (comparison.status === "missing") {
      mount(el, h("p", { class: "calm", "data-testid": "canary-compare-missing" }, "Stable against canary figures are not available yet (no request records on this server)."));
      return;
    }
    if (comparison.status === "error") {
      mount(el, h("p", { class: "warn" }, "Figures could not be read: " + comparison.message));
      return;
    }
    const d = comparison.data || {};
    const stable = d.stable || null;
    const can = d.canary || null;
    const win = d.window || {};
    const span = typeof win.seconds === "number" ? win.seconds : Number(win.end) - Number(win.start);
    mount(
      el,
      h(
        "table",
        { class: "table compact compare", "data-testid": "canary-compare" },
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            h("th", null, span > 0 ? "Last " + fmtLeft(span) : "Window"),
            h("th", { class: "num" }, "Stable ", h("span", { class: "mono muted" }, stable ? String(stable.revision) : "")),
            h("th", { class: "num" }, "Canary ", h("span", { class: "mono muted" }, can ? String(can.revision) : "")),
          ),
        ),
        h(
          "tbody",
          null,
          FIGURES.map(([key, label, fmt]) =>
            h(
              "tr",
              { dataset: { figure: key } },
              h("th", null, label),
              h("td", { class: "num" }, stable ? show(fmt, stable[key]) : "—"),
              h("td", { class: "num" }, can ? show(fmt, can[key]) : "—"),
            ),
          ),
        ),
      ),
      !stable && !can ? h("p", { class: "calm" }, "No requests in this window.") : null,
    );
  }

  // Error rate and p99 per revision over time, from the comparison's series.
  function drawCharts() {
    if (!window.Plotly || comparison.status !== "ok" || comparisonDrawn === comparison) return;
    comparisonDrawn = comparison;
    const series = comparison.data.series || [];
    const byRev = new Map();
    for (const p of series) {
      const rev = String(p.revision);
      if (!byRev.has(rev)) byRev.set(rev, []);
      byRev.get(rev).push(p);
    }
    const d = comparison.data;
    const nameOf = (rev) => {
      const tag = d.canary && String(d.canary.revision) === rev ? "canary " : d.stable && String(d.stable.revision) === rev ? "stable " : "";
      return (tag + rev).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
    };
    const t0 = series.length ? series[0].bucketStart : 0;
    const x = (t) => (isEpoch(t) ? new Date(t * 1000) : t);
    const traces = (key) =>
      [...byRev.entries()].map(([rev, points]) => ({
        x: points.map((p) => x(p.bucketStart)),
        y: points.map((p) => (p[key] === undefined ? null : p[key])),
        name: nameOf(rev),
        mode: "lines+markers",
        // The revision's colour, by its hash: the same as in the topology and the revisions table.
        marker: { size: 4, color: revisionColour(rev) },
        line: { width: 2, shape: "hv", color: revisionColour(rev) },
      }));
    window.Plotly.react("canary-chart-errors", traces("errorRate"), chartLayout("Error rate per revision", "share", { tickformat: ".1%", rangemode: "tozero", automargin: true }, t0), chartConfig);
    window.Plotly.react("canary-chart-p99", traces("latencyP99Ms"), chartLayout("Latency p99 per revision", "ms", { rangemode: "tozero" }, t0), chartConfig);
  }

  // The progress charts' time range (charts.js) sets the comparison's window too: its length back
  // from now, in buckets of at least a minute (at most 120 points).
  let comparisonQuery = COMPARISON_QUERY;
  document.addEventListener("rollout:chart-range", (event) => {
    const seconds = Math.round(Math.min(7 * 24 * 3600, Math.max(60, Number(event.detail && event.detail.seconds) || 900)));
    comparisonQuery = `window=${seconds}&bucket=${Math.max(60, Math.ceil(seconds / 120))}`;
    loadComparison();
  });

  async function loadComparison() {
    if (!canary) return;
    try {
      comparison = { status: "ok", data: await api(boot.api + "comparison/?" + comparisonQuery) };
    } catch (err) {
      comparison = err && err.status === 404 ? { status: "missing" } : { status: "error", message: String(err.message || err) };
    }
    renderComparison();
    refreshObserved();
    if (comparison.status === "ok") loadPlotly(plotlySrc, drawCharts);
    drawCharts();
    const charts = byId("canary-charts");
    if (charts) charts.hidden = comparison.status !== "ok";
  }

  function render({ state, manifest, revNumbers }) {
    lastState = state;
    const c = state.canary || null;
    const failed = analysisFailed(state);
    const inconclusive = analysisInconclusive(state);
    if (!changed(JSON.stringify([c, failed, inconclusive, state.spec.paused, manifest ? hasCanarySpec(manifest) : null, state.revisions && state.revisions.length]))) return;
    const wasShown = Boolean(canary);
    canary = c;
    const body = byId("canary-body");
    if (!c) {
      // No canary run: hidden, or a note when the spec has steps that have not run yet.
      panel.hidden = !hasCanarySpec(manifest);
      mount(body, h("p", { class: "calm" }, "Canary steps are set; they run when a new revision rolls out."));
      byId("canary-sub").textContent = "";
      return;
    }
    panel.hidden = false;
    byId("canary-sub").textContent = `step ${Math.min(c.stepIndex + 1, (c.steps || []).length)} of ${(c.steps || []).length}`;
    mount(
      body,
      h(
        "div",
        { class: "canary-grid" },
        renderSteps(c, revNumbers, failed, inconclusive, Boolean(state.spec.paused)),
        h(
          "div",
          null,
          h("div", { class: "panel-subtitle" }, "Analysis windows", countsText(c) ? h("span", { class: "warn" }, countsText(c)) : null),
          renderWindows(c),
        ),
        h("div", null, h("div", { class: "panel-subtitle" }, "Stable against canary"), h("div", { id: "canary-compare" })),
      ),
      h(
        "div",
        { class: "charts charts-2", id: "canary-charts", hidden: comparison.status !== "ok" },
        h("div", { class: "chart", id: "canary-chart-errors", "data-testid": "canary-chart-errors" }),
        h("div", { class: "chart", id: "canary-chart-p99", "data-testid": "canary-chart-p99" }),
      ),
    );
    comparisonDrawn = null;
    renderComparison();
    if (comparison.status === "ok") loadPlotly(plotlySrc, drawCharts);
    tick();
    if (!wasShown) loadComparison();
    if (!timer) {
      timer = setInterval(tick, 1000);
      setInterval(loadComparison, COMPARISON_REFRESH_MS);
    }
  }

  return { render, clusterNow: () => clusterNow(lastState) };
}
