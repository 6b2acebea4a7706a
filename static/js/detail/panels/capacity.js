// Capacity: per role, requests in flight against the safe concurrency, request rate, estimated queue
// time, GPU utilisation and memory, create-to-Serving time, and the recommended replica count with
// its reason (GET .../capacity/, rolloutui/services/capacity.py). A recommendation only, unless an
// operator turned autoscale on for this ModelServing (the Autoscale control): then the panel says
// so with its bounds, and the autoscaler applies the recommendation within them
// (rolloutui/services/autoscale.py).
//
// The charts are a rolling series kept here from the polls (every POLL_MS): in flight and the safe
// total per role, GPU utilisation per role, and the request rate measured from the simulated
// traffic's `sent` counter between two polls. Example: sent 1,200 at cluster time 100 and 1,290 at
// 105 -> 90 / 5 = 18 requests/s.
//
// The instance columns (serving / instances, in flight) are counted from the state the websocket
// delivers, the message the topology draws, with the server's rule (rolloutui/services/capacity.py:
// a role's instances, those at gate Serving, the sum of their in-flight requests): the table never
// says 2 of 2 serving while the topology already shows a group draining.

import { api } from "../../lib/api.js";
import { byId, h, mount } from "../../lib/dom.js";
import { isEpoch } from "../../lib/format.js";
import { chartConfig, chartLayout, lineMode, loadPlotly } from "./charts.js";

const POLL_MS = 5000;
const MAX_POINTS = 720; // an hour at one poll every 5 s

const dash = "—";
const num = (v, digits = 0) => (v === null || v === undefined ? dash : Number(v).toLocaleString("en-US", { maximumFractionDigits: digits }));
const pct = (v) => (v === null || v === undefined ? dash : (Number(v) * 100).toFixed(0) + "%");
const secs = (v) => (v === null || v === undefined ? dash : Number(v) < 10 ? Number(v).toFixed(2) + " s" : Math.round(Number(v)) + " s");
const COLOURS = ["#3b6fd4", "#d98a1c", "#17a38b", "#8c5bd6", "#d2477f", "#6f9a22"];
const legend = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

export function createCapacity({ boot, plotlySrc }) {
  const el = byId("capacity");
  const points = []; // {t, roles: {name: {inFlight, safeTotal, util}}, rate}
  let last = null;
  let dirty = false;
  let latestState = null; // the last state message, for the instance columns

  // {role: {serving, instances, inFlight}} from a state message.
  function instanceColumns(state) {
    const out = {};
    for (const i of (state && state.instances) || []) {
      const c = (out[i.role] ||= { serving: 0, instances: 0, inFlight: 0 });
      c.instances += 1;
      if (i.gate === "Serving") c.serving += 1;
      c.inFlight += Number(i.inFlight) || 0;
    }
    return out;
  }

  // The polled rows with the instance columns of the latest state message.
  function withState(roles) {
    if (!latestState) return roles;
    const counted = instanceColumns(latestState);
    return roles.map((r) => ({ ...r, ...(counted[r.name] || { serving: 0, instances: 0, inFlight: 0 }) }));
  }

  // Whether autoscale is on, with its bounds (every value as text: h() never parses HTML).
  function autoscaleLine(auto) {
    if (!auto || !auto.enabled) {
      return h(
        "p",
        { class: "muted rec-autoscale", "data-testid": "capacity-autoscale", dataset: { enabled: "false" } },
        auto && auto.error ? `Autoscale off: ${String(auto.error)}` : "Autoscale off: nothing is scaled unless an operator turns it on (Autoscale).",
      );
    }
    return h(
      "p",
      { class: "rec-autoscale", "data-testid": "capacity-autoscale", dataset: { enabled: "true" } },
      h("b", null, "Autoscale on"),
      `: between ${num(auto.minReplicas)} and ${num(auto.maxReplicas)} ServingGroups, at most one change per ${num(auto.cooldownSeconds)} s, none during a rollout.`,
    );
  }

  function renderTable(data) {
    const rec = data.recommendation || {};
    const roles = withState(data.roles || []);
    mount(
      el,
      h(
        "div",
        { class: "recommendation", "data-testid": "capacity-recommendation" },
        h(
          "div",
          { class: "rec-head" },
          h("span", { class: "rec-label" }, String(rec.label || "recommendation, nothing is scaled")),
          rec.replicas === null || rec.replicas === undefined
            ? h("b", null, "No recommended replica count")
            : h("b", { "data-testid": "capacity-recommended" }, `${rec.replicas} ServingGroup${rec.replicas === 1 ? "" : "s"}`),
          h("span", { class: "muted" }, ` (${num(rec.current)} now)`),
        ),
        h("p", { class: "rec-reason", "data-testid": "capacity-reason" }, String(rec.reason || "")),
        autoscaleLine(data.autoscale),
      ),
      h(
        "div",
        { class: "table-scroll" },
        h(
          "table",
          { class: "table compact capacity-table", "data-testid": "capacity-roles" },
          h(
            "thead",
            null,
            h(
              "tr",
              null,
              ["Role", "Serving / instances", "In flight", "Safe (each / total)", "Requests/s", "Queue time (est.)", "Timeout rate", "GPUs", "GPU util", "GPU memory", "Created → Serving (median)"].map(
                (t, i) => h("th", { class: i ? "num" : null }, t),
              ),
            ),
          ),
          h(
            "tbody",
            null,
            roles.map((r) =>
              h(
                "tr",
                { dataset: { role: String(r.name) } },
                h("td", null, String(r.name)),
                h("td", { class: "num" }, `${num(r.serving)} / ${num(r.instances)}`),
                h("td", { class: "num" }, num(r.inFlight)),
                h("td", { class: "num" }, r.safeConcurrency ? `${num(r.safeConcurrency)} / ${num(r.safeTotal)}` : dash),
                h("td", { class: "num" }, num(r.requestRate, 1)),
                h("td", { class: "num" }, secs(r.queueSeconds)),
                h("td", { class: "num", title: "needs per-request records" }, r.timeoutRate == null ? dash : pct(r.timeoutRate)),
                h("td", { class: "num" }, num(r.gpus)),
                h("td", { class: "num" }, pct(r.gpuUtilisation)),
                h("td", { class: "num" }, pct(r.gpuMemory)),
                h("td", { class: "num" }, r.createToServing && r.createToServing.medianSeconds != null ? `${secs(r.createToServing.medianSeconds)} (${r.createToServing.count})` : dash),
              ),
            ),
          ),
        ),
      ),
      h(
        "p",
        { class: "muted capacity-notes", "data-testid": "capacity-notes" },
        `Requests: ${data.requestSource}. GPU: ${data.gpuSource}. Safe concurrency: `,
        data.release ? `${data.release} batching ${JSON.stringify(data.batching || {})}` : "unknown (no release deployed with batching)",
        ". Timeout rate: needs per-request records.",
      ),
    );
  }

  function observe(data) {
    const t = data.time;
    let rate = null;
    const tr = data.traffic;
    if (last && last.traffic && tr && t > last.time) rate = Math.max(0, (tr.sent - last.traffic.sent) / (t - last.time));
    const roles = {};
    for (const r of data.roles || []) roles[r.name] = { inFlight: r.inFlight, safeTotal: r.safeTotal, util: r.gpuUtilisation };
    points.push({ t, roles, rate, offered: tr ? tr.rps : null });
    if (points.length > MAX_POINTS) points.splice(0, points.length - MAX_POINTS);
    last = data;
    dirty = true;
  }

  // The progress charts' time range (charts.js) bounds these charts too: they show what was polled
  // since the page opened, within the window chosen (a custom from-to, or the last N seconds).
  let shownRange = null;
  document.addEventListener("rollout:chart-range", (event) => {
    const d = event.detail || {};
    shownRange = d.range && d.range.kind === "custom" ? { from: d.range.from, to: d.range.to } : { seconds: d.seconds };
    dirty = true;
    draw();
  });
  const inRange = () => {
    if (!shownRange || !points.length) return points;
    const newest = points[points.length - 1].t;
    const from = shownRange.from ?? newest - shownRange.seconds;
    const to = shownRange.to ?? Infinity;
    return points.filter((p) => p.t >= from && p.t <= to);
  };

  function draw() {
    const points = inRange();
    if (dirty && window.Plotly && shownRange && !points.length) {
      // Nothing polled in the window chosen (it ends before the page opened): no stale lines.
      for (const id of ["capacity-chart-flight", "capacity-chart-rate", "capacity-chart-gpu"]) window.Plotly.purge(id);
      dirty = false;
      return;
    }
    if (!dirty || !window.Plotly || !points.length) return;
    dirty = false;
    const P = window.Plotly;
    const x = points.map((p) => (isEpoch(p.t) ? new Date(p.t * 1000) : p.t));
    const names = Object.keys(points[points.length - 1].roles);
    const t0 = points[0].t;
    // The first poll's single point shows as a dot at once, not an empty chart for 5 s.
    const mode = lineMode(points.length);
    const flight = [];
    names.forEach((n, i) => {
      const color = COLOURS[i % COLOURS.length];
      flight.push({ x, y: points.map((p) => (p.roles[n] ? p.roles[n].inFlight : null)), name: legend(n + " in flight"), mode, line: { width: 2, color } });
      if (points.some((p) => p.roles[n] && p.roles[n].safeTotal != null)) {
        flight.push({ x, y: points.map((p) => (p.roles[n] ? p.roles[n].safeTotal : null)), name: legend(n + " safe total"), mode, line: { width: 1, dash: "dash", color } });
      }
    });
    P.react("capacity-chart-flight", flight, chartLayout("In flight vs safe concurrency, per role", "requests", { rangemode: "tozero" }, t0), chartConfig);
    P.react(
      "capacity-chart-rate",
      [
        { x, y: points.map((p) => p.rate), name: "measured", mode: "lines+markers", marker: { size: 3 }, line: { width: 2 } },
        { x, y: points.map((p) => p.offered), name: "offered (simulated traffic)", mode, line: { width: 1, dash: "dot" } },
      ],
      chartLayout("Request rate", "requests/s", { rangemode: "tozero" }, t0),
      chartConfig,
    );
    P.react(
      "capacity-chart-gpu",
      names.map((n, i) => ({ x, y: points.map((p) => (p.roles[n] ? p.roles[n].util : null)), name: legend(n), mode, line: { width: 2, color: COLOURS[i % COLOURS.length] } })),
      chartLayout("GPU utilisation, per role", "share", { range: [0, 1.05], tickformat: ".0%" }, t0),
      chartConfig,
    );
  }

  async function poll() {
    // A hidden tab asks nothing (each answer builds the ModelServing's whole view on the server).
    if (document.hidden && points.length) return;
    try {
      const data = await api(boot.api + "capacity/");
      observe(data);
      renderTable(data);
      byId("capacity-sub").textContent = `polled every ${POLL_MS / 1000} s`;
      loadPlotly(plotlySrc, draw);
      draw();
    } catch (err) {
      byId("capacity-sub").textContent = "could not read: " + String(err.message || err);
    }
  }

  function start() {
    poll();
    setInterval(poll, POLL_MS);
  }

  // Every state message: the instance columns follow it at once (the rest waits for the poll).
  function render(model) {
    const state = model && model.state;
    if (!state || state === latestState) return;
    latestState = state;
    if (last) renderTable(last);
  }

  return { render, start, points };
}
