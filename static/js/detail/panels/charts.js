// Progress charts (Plotly, served from /static/vendor/plotly.min.js): per-role updated-and-Ready
// fraction over time, available groups against the budget floor, and the skew the planner enforces
// against maxSkew: per ServingGroup, between the coordinated roles only, net of the partition
// (state.skew: the widest group's gap, maxSkew, and the lead the rounded-up start quotas allow).
// Without coordination there is no skew rule, and the chart says so instead of plotting a spread.
//
// Time ranges, Grafana-style (#chart-range): the last 15 min, 1 h (the default) or 6 h of cluster
// time, this rollout (since the newest revision started rolling out), or a custom from-to. Each
// reads the stored samples of that range (GET .../history/?from=&to=&points=, downsampled on the
// server to at most POINTS points, so a 6 h range costs what 15 min does); a relative range and
// "this rollout" are then extended with every state the page receives (`observe`) and drop what
// falls out of the window, a custom range is fixed. Plotly (4.6 MB) is loaded after the first
// render, off the critical path, and the charts redraw at most once a second: Plotly is the most
// expensive thing on the page.

import { api } from "../../lib/api.js";
import { byId, h } from "../../lib/dom.js";
import { isEpoch } from "../../lib/format.js";

const MAX_SAMPLES = 4000;
const POINTS = 600;
const LINE_COLOURS = ["#3b6fd4", "#d98a1c", "#17a38b", "#8c5bd6", "#d2477f", "#6f9a22"];
export const chartConfig = { displayModeBar: false, responsive: true, staticPlot: false };

export function chartLayout(title, ytitle, extra = {}, time = 0) {
  return {
    title: { text: title, font: { size: 12, color: "#1f2328" }, x: 0.01, xanchor: "left" },
    margin: { l: 42, r: 10, t: 28, b: 30 },
    height: 220,
    font: { family: "system-ui, sans-serif", size: 11, color: "#5b6470" },
    paper_bgcolor: "#fff",
    plot_bgcolor: "#fff",
    xaxis: {
      title: { text: isEpoch(time) ? "" : "cluster time (s)", standoff: 4 },
      gridcolor: "#eef0f3",
      zeroline: false,
      ...(isEpoch(time) ? { type: "date", tickformat: "%H:%M:%S" } : {}),
    },
    yaxis: { title: { text: ytitle }, gridcolor: "#eef0f3", zeroline: false, ...extra },
    legend: { orientation: "h", y: -0.28, font: { size: 10 } },
    showlegend: true,
  };
}

// Plotly reads a few HTML-like tags in legend text (<b>, <br>, <a href>); a role name from the
// server is shown as written: its markup characters become entities, which Plotly prints as is.
const plotlyText = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

const xOf = (t) => (isEpoch(t) ? new Date(t * 1000) : t);

// maxSkew of the coordination settings as a fraction: "20%" -> 0.2, 20 -> 0.2, 0.2 -> 0.2.
function maxSkew(manifest) {
  const strategy = manifest && manifest.spec && manifest.spec.rolloutStrategy;
  const role = strategy && strategy.roleRollingUpdateConfiguration;
  const coord = role && role.coordination;
  if (!coord || coord.maxSkew == null) return null;
  const v = String(coord.maxSkew);
  return v.endsWith("%") ? parseFloat(v) / 100 : Number(v) > 1 ? Number(v) / 100 : Number(v);
}

// Plotly is a classic script (a UMD bundle that sets window.Plotly): added as a <script src> from
// our own origin, which a `script-src 'self'` policy allows.
// Plotly draws nothing of a "lines" trace with a single point: a first sample shows as a dot.
export function lineMode(points) {
  return points > 1 ? "lines" : "lines+markers";
}

export function loadPlotly(src, onLoad) {
  if (window.Plotly) return onLoad();
  // Asked for already (by another chart panel): this caller's draw waits for the same load.
  const asked = document.getElementById("plotly-js");
  if (asked) return asked.addEventListener("load", onLoad);
  const script = document.createElement("script");
  script.id = "plotly-js";
  script.src = src;
  script.addEventListener("load", onLoad);
  document.head.appendChild(script);
}

export function createCharts({ boot, plotlySrc }) {
  const samples = [];
  let dirty = true;
  let latest = null;

  // The range shown: {kind: "last", seconds} | {kind: "rollout"} | {kind: "custom", from, to}.
  let range = { kind: "last", seconds: 3600 };
  let loading = 0;
  let chosen = false; // the operator picked a range (the first one is the default)

  // One sample per state time: the values the three charts plot.
  function observe(state) {
    const t = state.time;
    if (range.kind === "custom") return; // a fixed window: live states are not part of it
    if (samples.length && samples[samples.length - 1].t >= t) return;
    const progress = {};
    for (const r of state.roles || []) progress[r.name] = Number(r.progress) || 0;
    const sk = state.skew || null;
    const g = (state.strategy && state.strategy.group) || {};
    // floor = total groups - maxUnavailable: 6 groups, maxUnavailable 1 -> 5 must stay available.
    const floor = Math.max(0, (g.total ?? state.spec.replicas ?? 0) - ((g.maxUnavailable && g.maxUnavailable.count) || 0));
    samples.push({
      t,
      progress,
      available: (state.counts || {}).availableReplicas || 0,
      floor,
      skew: sk ? Number(sk.percent) / 100 : null,
      skewLimit: sk ? Number(sk.limitPercent) / 100 : null,
      skewGroup: sk ? sk.group : null,
      maxSkew: sk ? Number(sk.maxSkewPercent) / 100 : null,
    });
    if (samples.length > MAX_SAMPLES) samples.splice(0, samples.length - MAX_SAMPLES);
    if (range.kind === "last") {
      const from = t - range.seconds;
      const drop = samples.findIndex((x) => x.t >= from);
      if (drop > 0) samples.splice(0, drop);
    }
    dirty = true;
  }

  const fromPoint = (p) => ({
    t: p.t,
    progress: p.roles || {},
    available: p.available,
    floor: p.floor,
    skew: p.skew == null ? null : p.skew / 100,
    skewLimit: p.skewLimit == null ? null : p.skewLimit / 100,
    skewGroup: p.skewGroup ?? null,
    maxSkew: p.maxSkew == null ? null : p.maxSkew / 100,
  });

  const clockNow = () => (latest && latest.state ? latest.state.time : samples.length ? samples[samples.length - 1].t : Date.now() / 1000);
  const stamp = (t) => (isEpoch(t) ? new Date(t * 1000).toLocaleString() : `${Math.round(t)} s`);

  // Read the range's stored samples and show them (replacing what the charts had).
  async function loadRange() {
    const ask = ++loading;
    const params = new URLSearchParams({ points: String(POINTS) });
    if (range.kind === "last") params.set("from", String(clockNow() - range.seconds));
    if (range.kind === "rollout") params.set("range", "rollout");
    if (range.kind === "custom") {
      params.set("from", String(range.from));
      params.set("to", String(range.to));
    }
    try {
      const body = await api(`${boot.api}history/?${params}`);
      if (ask !== loading) return; // a newer range was chosen meanwhile
      const points = body.points.map(fromPoint);
      if (range.kind !== "custom" && samples.length) {
        // Keep the live states newer than the stored ones (sampled at most once a second).
        const newest = points.length ? points[points.length - 1].t : -Infinity;
        points.push(...samples.filter((x) => x.t > newest));
      }
      samples.splice(0, samples.length, ...points);
      // The canary panel's stable-against-canary charts follow the same window (its length back
      // from now: the comparison endpoint's window).
      const from = range.kind === "custom" ? range.from : body.from ?? (points.length ? points[0].t : null);
      if (chosen && from != null) {
        const seconds = range.kind === "last" ? range.seconds : clockNow() - from;
        document.dispatchEvent(new CustomEvent("rollout:chart-range", { detail: { seconds, range } }));
      }
      const span = points.length ? `${stamp(points[0].t)} – ${stamp(points[points.length - 1].t)}` : "nothing stored in this range";
      const thinned = body.downsampled ? `, downsampled to ${body.points.length} points` : "";
      byId("charts-note").textContent = `${span}${thinned}${range.kind === "custom" ? "" : ", extended live"}`;
      dirty = true;
    } catch (err) {
      byId("charts-note").textContent = `no stored history (${err.message}): since this page opened, extended live`;
    }
  }

  // Seconds of cluster time <-> the custom inputs (datetime-local in the browser's zone).
  const toInput = (t) => {
    const d = new Date(t * 1000);
    const pad = (n) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  };
  const fromInput = (value) => new Date(value).getTime() / 1000;

  function choose(button) {
    const picker = byId("chart-range");
    for (const b of picker.querySelectorAll("button[data-range]")) b.setAttribute("aria-pressed", String(b === button));
    const kind = button.dataset.range;
    const custom = byId("chart-custom");
    if (kind === "custom") {
      custom.hidden = false;
      const now = clockNow();
      if (!byId("chart-from").value) byId("chart-from").value = toInput(now - 3600);
      if (!byId("chart-to").value) byId("chart-to").value = toInput(now);
      byId("chart-from").focus();
      return;
    }
    custom.hidden = true;
    chosen = true;
    range = kind === "rollout" ? { kind: "rollout" } : { kind: "last", seconds: Number(kind) };
    loadRange();
  }

  function applyCustom() {
    const from = fromInput(byId("chart-from").value);
    const to = fromInput(byId("chart-to").value);
    if (!Number.isFinite(from) || !Number.isFinite(to) || from > to) {
      byId("charts-note").textContent = "a custom range needs a start before its end";
      return;
    }
    range = { kind: "custom", from, to };
    chosen = true;
    loadRange();
  }

  function wireRange() {
    const picker = byId("chart-range");
    if (!picker) return;
    for (const b of picker.querySelectorAll("button[data-range]")) b.addEventListener("click", () => choose(b));
    byId("chart-apply").addEventListener("click", applyCustom);
  }

  // The first range (the last hour), once the page has its first state.
  async function loadHistory() {
    wireRange();
    await loadRange();
  }

  function draw() {
    if (!dirty || !window.Plotly || !samples.length || !latest) return;
    dirty = false;
    const { state, manifest } = latest;
    const Plotly = window.Plotly;
    const xs = samples.map((s) => xOf(s.t));
    // One sample (just after the page opened, before a second state) is drawn as a dot: a line
    // needs two, and the charts would otherwise sit empty until the next state.
    const mode = lineMode(samples.length);
    const names = (state.roles || []).map((r) => r.name);
    const layout = (title, ytitle, extra) => chartLayout(title, ytitle, extra, state.time);
    Plotly.react(
      "chart-progress",
      names.map((n, i) => ({
        x: xs,
        y: samples.map((s) => s.progress[n] ?? null),
        name: plotlyText(n),
        mode,
        line: { width: 2, color: LINE_COLOURS[i % LINE_COLOURS.length], shape: "hv" },
      })),
      layout("Updated and Ready, per role", "fraction", { range: [0, 1.05], tickformat: ".0%" }),
      chartConfig,
    );
    const replicas = state.spec.replicas || 0;
    Plotly.react(
      "chart-capacity",
      [
        {
          x: xs,
          y: samples.map((s) => s.available),
          name: "available groups",
          mode,
          fill: "tozeroy",
          fillcolor: "rgba(31,136,61,0.08)",
          line: { width: 2, color: "#1f883d", shape: "hv" },
        },
        {
          x: xs,
          y: samples.map((s) => s.floor),
          name: "budget floor (replicas − maxUnavailable)",
          mode: "lines",
          line: { width: 1.5, dash: "dash", color: "#cf222e", shape: "hv" },
        },
      ],
      layout("Available capacity vs budget floor", "groups", { range: [0, replicas * 1.1 + 0.5], rangemode: "tozero" }),
      chartConfig,
    );
    const last = samples[samples.length - 1];
    const skewLimit = last.maxSkew ?? maxSkew(manifest);
    const coordinated = samples.some((s) => s.skew != null);
    // Without coordinated roles there is no skew to chart: the chart is hidden and one line says why.
    const skewChart = byId("chart-skew");
    let skewNote = byId("chart-skew-note");
    if (!skewNote) {
      skewNote = h("p", { id: "chart-skew-note", class: "chart-note muted", "data-testid": "chart-skew-note" });
      skewChart.after(skewNote);
    }
    skewChart.hidden = !coordinated;
    skewNote.hidden = coordinated;
    skewNote.textContent = coordinated
      ? ""
      : "Skew is not charted: no roles are coordinated (spec.rolloutStrategy.roleRollingUpdateConfiguration.coordination), and maxSkew applies only to coordinated roles.";
    if (!coordinated) return;
    const traces = [];
    if (coordinated) {
      traces.push({
        x: xs,
        y: samples.map((s) => s.skew),
        text: samples.map((s) => (s.skewGroup == null ? "" : "group " + s.skewGroup)),
        name: "skew (widest group, coordinated roles, net of the partition)",
        mode: "lines",
        line: { width: 2, color: "#8c5bd6", shape: "hv" },
      });
      traces.push({
        x: xs,
        y: samples.map((s) => s.skewLimit),
        name: "allowed lead (start quotas round up)",
        mode: "lines",
        line: { width: 1, dash: "dot", color: "#d98a1c", shape: "hv" },
      });
    }
    if (skewLimit != null) {
      traces.push({
        x: [xs[0], xs[xs.length - 1]],
        y: [skewLimit, skewLimit],
        name: "maxSkew",
        mode: "lines",
        line: { width: 1.5, dash: "dash", color: "#cf222e" },
      });
    }
    Plotly.react(
      "chart-skew",
      traces,
      layout(
        "Skew between coordinated roles vs maxSkew",
        "fraction",
        { range: [0, 1.05], tickformat: ".0%" },
      ),
      chartConfig,
    );
  }

  function render(model) {
    if (!latest || latest.manifest !== model.manifest) dirty = true;
    latest = model;
  }

  // Called once after the first render of the page.
  function start() {
    loadPlotly(plotlySrc, () => {
      dirty = true;
      draw();
    });
    setInterval(draw, 1000);
  }

  return { observe, loadHistory, render, start, samples };
}
