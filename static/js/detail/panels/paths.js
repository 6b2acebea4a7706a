// Paths: how requests travelled through the roles of spec.traffic.path (prefill -> decode ...), from
// the stored request records (GET .../paths/: the server sums them per revision pair and outcome per
// bucket, a few rows however many requests). A pair is the revisions of a request's first and last
// hop ("a/b"; "a/-" for a request refused before any hop). Outcomes: consistent (one revision),
// mixed (hops of more than one revision), refused (noRoute: no consistent path, never sent down a
// mixed one) and kvMismatch (hops disagreed on the KV cache format). Broken requests are drawn in
// red, each with its own fill pattern, so the chart does not rest on colour alone.
//
// Beside the chart, per ServingGroup, the revisions its Ready instances can serve end to end right
// now ("consistent path: #3 abc123"), or "no consistent path" in red: the topology's groups seen
// by the router's rule. Hidden behind one line when the ModelServing has no path.
//
// Everything shown comes from the server as text nodes (h); Plotly's legend text is escaped.

import { api } from "../../lib/api.js";
import { byId, h, memo, mount } from "../../lib/dom.js";
import { revLabel } from "../common.js";
import { chartConfig, chartLayout, loadPlotly } from "./charts.js";

const REFRESH_MS = 10000;
export const PATHS_QUERY = "window=900&bucket=60"; // 15 minutes in 1-minute buckets (seconds)

// Outcome -> label, colour, fill pattern. Consistent in green, the broken ones in reds.
export const OUTCOMES = [
  ["consistent", "consistent", "#1f883d", ""],
  ["mixed", "mixed", "#cf222e", "/"],
  ["noRoute", "refused (noRoute)", "#a40e26", "."],
  ["kvMismatch", "kvMismatch", "#e5534b", "x"],
];

// Broken in the pages' error red (set through the CSSOM: the page's style-src allows no inline style).
const BROKEN = { color: "var(--error)", fontWeight: "600" };

const plotlyText = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const count = (n) => Math.round(Number(n) || 0).toLocaleString("en-US");

export function createPaths({ boot, plotlySrc }) {
  const panel = byId("paths-panel");
  const body = byId("paths-body");
  const changed = memo();
  let data = null;
  let error = null;
  let drawn = null;
  let revNumbers = new Map();
  let manifest = null;
  let timer = 0;

  // The server gives each point's first and last hop revision (a revision has no "/").
  function pairText(point) {
    const { first, last } = point;
    const name = (rev) => {
      if (!rev || rev === "-") return "none";
      const n = revNumbers.get(rev);
      return n ? `#${n} ${rev}` : rev;
    };
    return `${name(first)} → ${name(last)}`;
  }

  function renderGroups(groups) {
    if (!groups.length) return h("p", { class: "calm" }, "No instance of the path's roles yet.");
    return h(
      "ul",
      { class: "compact-list paths-groups", "data-testid": "paths-groups" },
      groups.map((g) =>
        h(
          "li",
          { dataset: { group: String(g.group) } },
          h("span", { class: "muted" }, `group ${g.group}: `),
          (g.consistent || []).length
            ? ["consistent path: ", (g.consistent || []).map((rev, i) => [i ? ", " : null, revLabel(rev, revNumbers)])]
            : h("span", { class: "paths-broken", style: BROKEN }, "no consistent path"),
        ),
      ),
    );
  }

  // Under the topology's canvas: one line per the same groups, so the grid reads with its paths.
  function renderTopology() {
    const el = byId("topo-paths");
    if (!el) return;
    const path = (data && data.path) || [];
    el.hidden = !path.length;
    if (!path.length) return;
    const groups = data.groups || [];
    mount(
      el,
      h("span", { class: "muted" }, `Paths (${path.join(" → ")}): `),
      groups.length
        ? groups.map((g, i) => [
            i ? " · " : null,
            h(
              "span",
              { dataset: { group: String(g.group) } },
              `group ${g.group} `,
              (g.consistent || []).length
                ? (g.consistent || []).map((rev, j) => [j ? ", " : null, revLabel(rev, revNumbers)])
                : h("span", { class: "paths-broken", style: BROKEN }, "no consistent path"),
            ),
          ])
        : h("span", { class: "muted" }, "no instance of the path's roles yet"),
    );
  }

  // The dashboard's suggestion: a canary analysis that does not check mixedPaths yet is offered
  // `{metric: mixedPaths, max: 0}`, which stops a canary as soon as one request crosses revisions.
  function suggestion() {
    const spec = (manifest && manifest.spec) || {};
    const canary = spec.rolloutStrategy && spec.rolloutStrategy.canary;
    const metrics = (canary && canary.analysis && canary.analysis.metrics) || [];
    if (metrics.some((m) => m && m.metric === "mixedPaths")) return null;
    return h(
      "p",
      { class: "muted paths-suggestion", "data-testid": "paths-suggestion" },
      "Suggested canary check: ",
      h("code", null, "{metric: mixedPaths, max: 0}"),
      " in spec.rolloutStrategy.canary.analysis.metrics stops a canary as soon as one request crosses revisions.",
    );
  }

  // The chart's element is made once and moved into each new body: made afresh on every read (every
  // 10 s), it sat blank until Plotly drew it again.
  let chartElement = null;
  function chartNode() {
    if (!chartElement) chartElement = h("div", { class: "chart", id: "paths-chart", "data-testid": "paths-chart" });
    return chartElement;
  }

  function renderBody() {
    renderTopology();
    if (error) {
      mount(body, h("p", { class: "warn" }, "Paths could not be read: " + error));
      return;
    }
    if (!data) {
      mount(body, h("p", { class: "calm" }, "Reading the request paths…"));
      return;
    }
    const path = data.path || [];
    if (!path.length) {
      byId("paths-sub").textContent = "";
      mount(body, h("p", { class: "calm", "data-testid": "paths-none" }, "No request path: " + (data.reason || "spec.traffic.path is not set") + "."));
      return;
    }
    byId("paths-sub").textContent = path.join(" → ");
    const totals = data.totals || {};
    const broken = (totals.mixed || 0) + (totals.noRoute || 0) + (totals.kvMismatch || 0);
    mount(
      body,
      h(
        "p",
        { class: "paths-totals", "data-testid": "paths-totals" },
        h("span", { class: "muted" }, "last 15 minutes: "),
        OUTCOMES.map(([key, label], i) =>
          h(
            "span",
            key === "consistent" || !totals[key] ? { dataset: { outcome: key } } : { class: "paths-broken", style: BROKEN, dataset: { outcome: key } },
            i ? " · " : "",
            `${label} ${count(totals[key])}`,
          ),
        ),
        broken ? null : h("span", { class: "muted" }, " — no broken request"),
      ),
      // The spec's own path hands the KV cache between images of different formats: a revision's
      // requests fail however they are routed (a "consistent" path below is one revision, not one format).
      (data.warnings || []).map((w) =>
        h("p", { class: "warn", "data-testid": "paths-kv-warning" }, h("code", null, w.path), ": ", w.message),
      ),
      suggestion(),
      h(
        "div",
        { class: "charts charts-2 paths-grid" },
        chartNode(),
        h("div", null, h("div", { class: "panel-subtitle" }, "Consistent paths per group, now"), renderGroups(data.groups || [])),
      ),
    );
    drawn = null;
    loadPlotly(plotlySrc, draw);
  }

  // One stacked bar trace per (pair, outcome) that had requests.
  function draw() {
    if (!window.Plotly || !data || drawn === data || !byId("paths-chart")) return;
    drawn = data;
    const series = data.series || [];
    const x = (t) => new Date(t * 1000);
    const traces = [];
    const pairs = [...new Set(series.map((p) => p.pair))].sort();
    const pointOf = new Map(series.map((p) => [p.pair, p]));
    for (const [key, label, colour, pattern] of OUTCOMES) {
      for (const pair of pairs) {
        const points = series.filter((p) => p.pair === pair && p[key]);
        if (!points.length) continue;
        traces.push({
          type: "bar",
          x: points.map((p) => (p.bucketStart > 1e9 ? x(p.bucketStart) : p.bucketStart)),
          y: points.map((p) => p[key]),
          name: plotlyText(`${label}: ${pairText(pointOf.get(pair))}`),
          // The pattern is drawn over the colour (fillmode overlay), so a broken bar stays red.
          marker: { color: colour, pattern: pattern ? { shape: pattern, fillmode: "overlay", fgcolor: "#fff", size: 6 } : undefined, line: { width: 0 } },
        });
      }
    }
    const t0 = series.length ? series[0].bucketStart : 0;
    window.Plotly.react(
      "paths-chart",
      traces,
      { ...chartLayout("Requests per revision pair (first hop → last hop)", "requests", { rangemode: "tozero" }, t0), barmode: "stack", height: 260 },
      chartConfig,
    );
  }

  async function load() {
    try {
      data = await api(boot.api + "paths/?" + PATHS_QUERY);
      error = null;
    } catch (err) {
      error = String((err && err.message) || err);
    }
    renderBody();
  }

  function render({ revNumbers: numbers, manifest: current }) {
    revNumbers = numbers || new Map();
    manifest = current || null;
    panel.hidden = false;
    if (!changed(JSON.stringify([[...revNumbers.entries()], manifest && manifest.spec && manifest.spec.rolloutStrategy]))) return;
    renderBody();
    if (!timer) {
      load();
      // Read again every 10 s while the page is visible (a hidden tab asks nothing).
      timer = setInterval(() => {
        if (!document.hidden) load();
      }, REFRESH_MS);
    }
  }

  return { render, load };
}
