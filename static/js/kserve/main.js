// The KServe InferenceService page (issue 13): components, Deployments with their ReplicaSets old
// and new and their pods coloured by revision, the effective strategy with the source of each
// value and the mode, why it waits, the traffic split, a progress chart, the controls of the action
// registry's InferenceService target, and the history of changes with the diff of the spec.
//
// The state comes over the websocket /ws/inferenceservices/{ns}/{name}/ (rolloutui/consumers.py
// InferenceServiceConsumer): the REST GET payload of /api/inferenceservices/{ns}/{name}/ first, then
// deltas of it whenever the controller sees the InferenceService change, with the ModelServing
// page's protocol (connectStream in ../detail/stream.js: acknowledgements, resync, reconnects).
// While the socket is down the page reads the REST state every FALLBACK_MS instead. Every value is put in the page as text (lib/dom.js `h`);
// the controls and their dialogs are built from the registry's description (json_script
// "rollout-actions"), and a control the mode or the spec does not allow is disabled with the
// server's reason (state.controls, the refusal's own words).

import { api, post } from "../lib/api.js";
import { byId, h, mount, readJson } from "../lib/dom.js";
import { actionLabel, isEpoch, phaseClass, readableError } from "../lib/format.js";
import { revisionColour } from "../lib/colors.js";
import { createDialog, toast } from "../detail/dialog.js";
import { chartConfig, chartLayout, lineMode, loadPlotly } from "../detail/panels/charts.js";
import { connectStream } from "../detail/stream.js";

// The slow read of the REST state while the websocket is down (reconnecting or refused).
const FALLBACK_MS = 10000;
const boot = readJson("boot");
const registry = readJson("rollout-actions", { actions: [] });
const phases = readJson("phases", []);
const plotlySrc = readJson("plotly-src");
let state = readJson("initial-state");

// Revisions (pod-template hashes) keep one colour by their hash, as on the ModelServing page.
const colourOf = (revision) => revisionColour(revision);

const SOURCE_WORDS = {
  default: "KServe default",
  configMap: "ConfigMap inferenceservice-config",
  deploymentStrategy: "component deploymentStrategy",
  multiNodeOverride: "multi-node override",
};
const sourceText = (src) => SOURCE_WORDS[src] || String(src);

// -- Header ---------------------------------------------------------------------------------------
function renderHeader(s) {
  const phase = s.phase; // the server's (core.kserve.view.inferenceservice_phase)
  const badge = byId("phase");
  badge.className = phaseClass(phase, phases);
  badge.textContent = phase;
  byId("fact-mode").textContent = s.deploymentMode || "—";
  byId("fact-generation").textContent = `${s.generation ?? "—"} (observed ${s.observedGeneration ?? "—"})`;
  const predictor = ((s.spec || {}).components || {}).predictor || {};
  byId("fact-image").textContent = predictor.image || "—";
  const desired = s.deployments.reduce((n, d) => n + d.replicas, 0);
  const ready = s.deployments.reduce((n, d) => n + d.counts.availableReplicas, 0);
  byId("fact-ready").textContent = `${ready} / ${desired}`;
  byId("fact-canary").textContent = canaryWords(s.canary);
  byId("fact-converged").textContent = s.converged ? "yes" : "no";
  const banner = byId("error-banner");
  banner.hidden = !s.error;
  if (s.error) {
    const what = s.error.source === "configMap" ? "KServe cannot read its ConfigMap: " : "KServe refuses the spec: ";
    mount(banner, h("b", null, what), `${s.error.field}: ${s.error.rule}`);
  }
  const unmanaged = byId("unmanaged-banner");
  unmanaged.hidden = s.managed !== false;
  if (s.managed === false) mount(unmanaged, h("b", null, "Not managed by RolloutUI: "), s.unmanagedReason || "");
  // What KServe accepts and ignores (an unknown mode annotation, canaryTrafficPercent in Standard mode, ...).
  const warnings = s.warnings || [];
  const list = byId("warnings");
  list.hidden = !warnings.length;
  mount(list, warnings.map((w) => h("li", { "data-field": w.field }, h("b", null, "KServe ignores: "), `${w.field}: ${w.message}`)));
}

function canaryWords(canary) {
  if (!canary) return "none";
  if (canary.mode === "Knative") {
    return `${canary.canaryTrafficPercent}% to ${canary.latestRevision || "the latest revision"} (stable ${canary.stableRevision || "—"})`;
  }
  return canary.canaries.map((c) => `${c.name} ${c.trafficPercent}%${c.ready ? "" : " (not Ready)"}`).join(", ");
}

// -- Strategy -------------------------------------------------------------------------------------
function renderStrategy(s) {
  const rows = [];
  for (const d of s.deployments) {
    const st = d.strategy || {};
    const value = (v) =>
      v
        ? h(
            "span",
            null,
            h("b", { class: "mono" }, String(v.value)),
            ` = ${v.count} pod${v.count === 1 ? "" : "s"} `,
            h("span", { class: "source-tag", "data-source": v.source }, sourceText(v.source)),
          )
        : "—";
    rows.push(
      h(
        "tr",
        { "data-deployment": d.name },
        h("td", { class: "mono" }, d.name),
        h("td", null, d.component),
        h("td", null, value(st.maxSurge)),
        h("td", null, value(st.maxUnavailable)),
        h("td", null, h("span", { class: "mode-tag" }, st.mode || "—")),
        // What the surge costs in GPUs (a multi-node worker's maxSurge 100%: as many again).
        h("td", { class: "num", "data-surge-gpus": String(st.surgeGpus ?? "") }, st.surgeGpus == null ? "—" : `${st.surgeGpus} (${d.gpusPerPod}/pod)`),
        h("td", { class: "num" }, String(st.progressDeadlineSeconds ?? d.progressDeadlineSeconds ?? "—") + "s"),
      ),
    );
  }
  // A Recreate Deployment stops every old pod before a new one starts: say so above the table.
  const outages = s.deployments
    .filter((d) => (d.strategy || {}).note)
    .map((d) => h("p", { class: "banner banner-stale small", "data-outage": d.name }, h("b", null, `${d.name}: ${d.strategy.mode}`), ` (${d.strategy.note})`));
  mount(
    byId("strategy"),
    h("p", { class: "muted small" }, "Mode: ", h("b", null, s.deploymentMode || "—"),
      s.deploymentMode === "Knative" ? " (Knative revisions: no rolling-update budget applies)" : ""),
    outages,
    rows.length
      ? h(
          "table",
          { class: "table compact" },
          h("thead", null, h("tr", null, ["Deployment", "Component", "maxSurge", "maxUnavailable", "Mode", "Surge GPUs", "Deadline"].map((t) => h("th", null, t)))),
          h("tbody", null, rows),
        )
      : h("p", { class: "muted" }, "KServe has created no Deployment yet."),
  );
}

// -- Preview: what a new image would do to the predictor's Ready pods (nothing is applied) ----------
function bindPreview() {
  const form = byId("preview-form");
  const out = byId("preview-result");
  if (!boot.canOperate) {
    form.hidden = true;
    return;
  }
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const image = form.elements.image.value.trim();
    mount(out, "Simulating the rollout on a copy…");
    try {
      const t = await post(boot.api + "preview", { image });
      const gap = t.gapSeconds > 0 ? h("b", { "data-gap": String(t.gapSeconds) }, `none Ready for ${Math.round(t.gapSeconds)} s`) : "never none";
      mount(
        out,
        `While ${image} rolls out (${t.mode || "—"}): at least ${t.minAvailable} of ${t.desired ?? "—"} predictor pods Ready, `,
        gap,
        `; done after ${Math.round(t.durationSeconds)} s${t.converged ? "" : " (not converged)"}.`,
        t.note ? h("span", { class: "field-error" }, ` ${t.note}.`) : null,
      );
    } catch (err) {
      mount(out, h("span", { class: "field-error" }, err.message));
    }
  });
}

// -- Traffic --------------------------------------------------------------------------------------
function renderTraffic(s) {
  const items = s.traffic || [];
  if (!items.length) return mount(byId("traffic"), h("p", { class: "muted" }, "No traffic reported yet."));
  const bar = h(
    "div",
    { class: "traffic-bar" },
    items
      .filter((t) => t.percent > 0)
      .map((t) =>
        h(
          "span",
          { class: "traffic-seg", style: { width: t.percent + "%", background: colourOf(t.revision) }, title: `${t.revision}: ${t.percent}%` },
          `${t.percent}%`,
        ),
      ),
  );
  const table = h(
    "table",
    { class: "table compact" },
    h("thead", null, h("tr", null, ["Revision", "Backend", "Tag", "Percent"].map((t) => h("th", null, t)))),
    h(
      "tbody",
      null,
      items.map((t) =>
        h(
          "tr",
          { "data-revision": t.revision },
          h("td", { class: "mono" }, h("span", { class: "swatch", style: { background: colourOf(t.revision) } }), t.revision || "—"),
          h("td", { class: "mono" }, t.backend || t.component || "—"),
          h("td", null, t.tag || ""),
          h("td", { class: "num" }, `${t.percent}%`),
        ),
      ),
    ),
  );
  mount(byId("traffic"), bar, table);
}

// -- Why it waits ---------------------------------------------------------------------------------
function renderWaits(s) {
  const items = s.blocked || [];
  if (!items.length) {
    return mount(byId("waits"), h("li", { class: "muted" }, s.converged ? "Nothing: converged." : "Nothing blocks it; pods are on their way."));
  }
  mount(
    byId("waits"),
    items.map((b) => h("li", null, h("b", null, b.deployment || b.component), ": ", b.reason)),
  );
}

// -- Handover: a canary's promote or rollback in steps (core.kserve.handover) -----------------------
function renderHandover(s) {
  const handover = s.handover;
  byId("handover-panel").hidden = !handover;
  if (!handover) return;
  byId("handover-title").textContent = `${handover.action === "promote" ? "Promoting" : "Rolling back"} canary ${handover.canary}`;
  mount(
    byId("handover-steps"),
    handover.steps.map((step) =>
      h(
        "li",
        { "data-step": step.step, "data-state": step.state },
        h("b", null, step.state === "active" ? "Now: " : "Then: "),
        step.title,
        step.waiting ? h("span", { class: "muted" }, ` (${step.waiting})`) : null,
      ),
    ),
  );
}

// -- Components, ReplicaSets and pods -------------------------------------------------------------
function renderComponents(s) {
  const pods = new Map((s.instances || []).map((i) => [i.pod, i]));
  mount(
    byId("components"),
    s.deployments.map((d) =>
      h(
        "div",
        { class: "deployment", "data-deployment": d.name },
        h(
          "div",
          { class: "deployment-head" },
          h("b", { class: "mono" }, d.name),
          " ",
          h("span", { class: "muted" }, d.component),
          d.knativeRevision ? [" ", h("span", { class: "mode-tag" }, `revision ${d.knativeRevision}`)] : null,
          d.paused ? [" ", h("span", { class: "phase phase-paused" }, "paused")] : null,
          " ",
          h(
            "span",
            { class: "muted small" },
            `replicas ${d.replicas}, updated ${d.counts.updatedReplicas}, available ${d.counts.availableReplicas}` +
              (d.complete ? ", rollout complete" : ""),
          ),
        ),
        (d.replicaSets || []).map((rs) => {
          // The revision its pods report: the Knative revision (Knative mode) or the template hash.
          const rev = d.knativeRevision || rs.hash || rs.name;
          return h(
            "div",
            { class: "replicaset" + (rs.new ? " rs-new" : " rs-old"), "data-replicaset": rs.name },
            h(
              "span",
              { class: "rs-label" },
              h("span", { class: "swatch", style: { background: colourOf(rev) } }),
              h("span", { class: "mono" }, rs.name),
              ` r${rs.revision ?? "?"} `,
              h("span", { class: rs.new ? "rs-tag rs-tag-new" : "rs-tag" }, rs.new ? "new" : "old"),
              ` ${rs.availableReplicas}/${rs.replicas} available`,
            ),
            h(
              "span",
              { class: "pods" },
              (rs.pods || []).map((name) => {
                const i = pods.get(name) || {};
                return h(
                  "span",
                  {
                    class: `pod pod-${String(i.state || "unknown").toLowerCase()}`,
                    style: { borderColor: colourOf(i.revision || rev) },
                    title: `${name}\n${i.state || "?"}, gate ${i.gate || "?"}${i.gateFailed ? " (" + i.gateFailed + ")" : ""}${i.node ? ", on " + i.node : ""}`,
                    "data-pod": name,
                  },
                  h("span", { class: "pod-fill", style: { background: colourOf(i.revision || rev) } }),
                  i.gate || i.state || "?",
                );
              }),
            ),
          );
        }),
      ),
    ),
  );
}

// -- Progress chart (Plotly) ----------------------------------------------------------------------
const samples = [];
let plotted = false;
function sample(s) {
  const t = isEpoch(s.time) ? new Date(s.time * 1000) : s.time;
  const row = { t };
  for (const d of s.deployments) row[d.name] = { updated: d.counts.updatedReplicas, available: d.counts.availableReplicas, desired: d.replicas };
  samples.push(row);
  if (samples.length > 600) samples.shift();
}

// Plotly reads a few HTML-like tags in legend text: names are shown as written.
const plotlyText = (v) => String(v).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

function drawChart() {
  if (!window.Plotly) return;
  const names = [...new Set(samples.flatMap((r) => Object.keys(r).filter((k) => k !== "t")))];
  const traces = [];
  for (const name of names) {
    const rows = samples.filter((r) => r[name]);
    // A first sample is drawn as a dot (a one-point line shows nothing).
    const mode = lineMode(rows.length);
    traces.push({ x: rows.map((r) => r.t), y: rows.map((r) => r[name].updated), name: plotlyText(`${name} updated`), mode });
    traces.push({ x: rows.map((r) => r.t), y: rows.map((r) => r[name].available), name: plotlyText(`${name} available`), mode, line: { dash: "dot" } });
  }
  const layout = { margin: { l: 36, r: 10, t: 10, b: 30 }, height: 220, legend: { orientation: "h" }, yaxis: { rangemode: "tozero" } };
  const config = { displayModeBar: false, responsive: true };
  if (plotted) window.Plotly.react("chart", traces, layout, config);
  else {
    window.Plotly.newPlot("chart", traces, layout, config);
    plotted = true;
  }
}

// -- Capacity: the ModelServing page's capacity panel, per Deployment ------------------------------
// Counted from each state the socket delivers, with the ModelServing panel's rule: a Deployment's
// pods, those at gate Serving, the sum of their requests in flight, and its GPUs (per pod x pods).
// The two charts follow the same counts over time (since the page opened). No replica
// recommendation: that one needs a ModelServing's batching and ServingGroups.
const capacityPoints = []; // {t, deployments: {name: {inFlight, serving}}}
let capacityDirty = false;

function capacityRows(s) {
  const rows = new Map(
    s.deployments.map((d) => [d.name, { name: d.name, component: d.component, pods: 0, serving: 0, inFlight: 0, gpus: 0, gpusPerPod: d.gpusPerPod || 0 }]),
  );
  for (const i of s.instances || []) {
    const row = rows.get(i.deployment);
    if (!row) continue;
    row.pods += 1;
    if (i.gate === "Serving") row.serving += 1;
    row.inFlight += Number(i.inFlight) || 0;
    row.gpus += row.gpusPerPod;
  }
  return [...rows.values()];
}

function renderCapacity(s) {
  const rows = capacityRows(s);
  mount(
    byId("isvc-capacity"),
    rows.length
      ? h(
          "table",
          { class: "table compact capacity-table", "data-testid": "isvc-capacity-rows" },
          h("thead", null, h("tr", null, ["Deployment", "Component", "Serving / pods", "In flight", "GPUs"].map((t, i) => h("th", { class: i > 1 ? "num" : null }, t)))),
          h(
            "tbody",
            null,
            rows.map((r) =>
              h(
                "tr",
                { "data-deployment": r.name },
                h("td", { class: "mono" }, r.name),
                h("td", null, r.component),
                h("td", { class: "num" }, `${r.serving} / ${r.pods}`),
                h("td", { class: "num" }, String(r.inFlight)),
                h("td", { class: "num" }, String(r.gpus)),
              ),
            ),
          ),
        )
      : h("p", { class: "muted" }, "KServe has created no Deployment yet."),
  );
  const point = { t: isEpoch(s.time) ? new Date(s.time * 1000) : s.time, deployments: {} };
  for (const r of rows) point.deployments[r.name] = { inFlight: r.inFlight, serving: r.serving };
  capacityPoints.push(point);
  if (capacityPoints.length > 720) capacityPoints.shift();
  capacityDirty = true;
}

function drawCapacity() {
  if (!window.Plotly || !capacityDirty || !capacityPoints.length) return;
  capacityDirty = false;
  const x = capacityPoints.map((p) => p.t);
  const names = [...new Set(capacityPoints.flatMap((p) => Object.keys(p.deployments)))];
  const mode = lineMode(capacityPoints.length);
  const series = (field) =>
    names.map((n) => ({
      x,
      y: capacityPoints.map((p) => (p.deployments[n] ? p.deployments[n][field] : null)),
      name: plotlyText(n),
      mode,
      line: { width: 2 },
    }));
  const t0 = capacityPoints[0].t instanceof Date ? capacityPoints[0].t.getTime() / 1000 : capacityPoints[0].t;
  window.Plotly.react("isvc-capacity-flight", series("inFlight"), chartLayout("Requests in flight, per Deployment", "requests", { rangemode: "tozero" }, t0), chartConfig);
  window.Plotly.react("isvc-capacity-serving", series("serving"), chartLayout("Pods serving, per Deployment", "pods", { rangemode: "tozero" }, t0), chartConfig);
}

// -- History --------------------------------------------------------------------------------------
async function renderHistory() {
  let rows;
  try {
    rows = await api(boot.history);
  } catch {
    return;
  }
  if (!rows.length) return mount(byId("history"), h("p", { class: "muted" }, "No change made through RolloutUI yet."));
  mount(
    byId("history"),
    h(
      "table",
      { class: "table compact" },
      h("thead", null, h("tr", null, ["When", "Who", "Action", "Generation", "Reason", "Spec change"].map((t) => h("th", null, t)))),
      h(
        "tbody",
        null,
        rows.map((r) =>
          h(
            "tr",
            { class: r.result === "error" ? "row-error" : "", "data-action": r.action },
            h("td", { class: "num" }, new Date(r.time).toLocaleTimeString()),
            h("td", null, `${r.actor} via ${r.source}`),
            h("td", { title: r.action }, actionLabel(r.action), r.result === "error" ? [" ", h("span", { class: "phase phase-blocked" }, "refused")] : null),
            h("td", { class: "num" }, r.toGeneration ? `${r.fromGeneration} → ${r.toGeneration}` : r.fromGeneration || "—"),
            h("td", null, r.reason),
            h(
              "td",
              null,
              r.error
                ? h("span", { class: "field-error", title: r.error }, readableError(r.error))
                : r.specDiff
                  ? h("pre", { class: "mono diff", tabindex: "0", "aria-label": "Spec diff" }, JSON.stringify(r.specDiff, null, 1))
                  : r.deployments
                    ? `Deployments: ${r.deployments.join(", ")}`
                    : "",
            ),
          ),
        ),
      ),
    ),
  );
}

// -- Controls -------------------------------------------------------------------------------------
const audits = new Map(registry.actions.map((a) => [a.name, a.audit]));
const dialog = createDialog({
  onDone: (result) => {
    toast(`${result.audit.action.replace(/^isvc_/, "")}: done (audit #${result.audit.id})`);
    if (result.state) apply(result.state);
    renderHistory();
  },
});

function inputFor(f, action) {
  const attrs = { name: f.name, "data-field": f.name, "aria-label": f.label };
  if (f.type === "integer") {
    const props = { ...attrs, type: "number", min: f.min ?? undefined, max: f.max ?? undefined, step: 1 };
    if (action.name === "isvc-canary" && f.name === "percent") props.value = 10;
    return h("input", props);
  }
  if (f.type === "boolean") return h("input", { ...attrs, type: "checkbox" });
  const props = { ...attrs, type: "text", maxlength: f.maxLength ?? undefined, autocomplete: "off" };
  if (f.name === "image") {
    const current = (((state.spec || {}).components || {}).predictor || {}).image;
    if (current) props.placeholder = `now ${current}`;
  }
  return h("input", props);
}

function openAction(action) {
  const inputs = action.fields.filter((f) => f.name !== "reason").map((f) => [f, inputFor(f, action)]);
  // Before a change that rolls the predictor out: a Recreate strategy means an outage (its note).
  const recreate = (state.deployments || []).find((d) => d.component === "predictor" && (d.strategy || {}).note);
  const rolls = ["isvc-set-image", "isvc-canary", "isvc-rollback", "isvc-promote"].includes(action.name);
  const body = [
    recreate && rolls ? h("p", { class: "banner banner-stale", "data-warning": "recreate" }, h("b", null, `${recreate.name} uses Recreate: `), recreate.strategy.note) : null,
    h("p", { class: "muted" }, action.help),
    inputs.map(([f, el]) =>
      h("label", { class: "field" }, h("span", { class: "field-label" }, f.label, f.required ? " (required)" : ""), el, h("span", { class: "muted small" }, f.help)),
    ),
  ];
  dialog.open({
    title: `${action.label}: ${boot.namespace}/${boot.name}`,
    body,
    confirm: action.label,
    danger: action.tone === "danger",
    onConfirm: (reason) => {
      const values = { reason };
      for (const [f, el] of inputs) {
        if (f.type === "boolean") {
          if (el.checked) values[f.name] = true;
        } else if (el.value.trim() !== "") {
          values[f.name] = f.type === "integer" ? Number(el.value) : el.value.trim();
        }
      }
      return post(action.url, values);
    },
  });
}

const buttons = new Map();
function buildButtons() {
  const host = byId("isvc-buttons");
  for (const action of registry.actions) {
    const button = h(
      "button",
      {
        class: "btn" + (action.tone === "primary" ? " btn-primary" : action.tone === "danger" ? " btn-danger" : ""),
        type: "button",
        "data-action": action.name,
        onclick: () => openAction(action),
      },
      action.label,
    );
    buttons.set(action.name, { action, button });
    host.appendChild(button);
  }
}

function renderControls(s) {
  const why = [];
  for (const { action, button } of buttons.values()) {
    const reason = !action.allowed
      ? `needs ${action.permission} in ${boot.namespace}`
      : ((s.controls || {})[audits.get(action.name)] ?? null);
    button.disabled = reason !== null;
    button.title = reason || action.help;
    if (reason && action.allowed) why.push(h("span", { "data-why": action.name }, h("b", null, action.label), ": ", reason));
  }
  if (!boot.canOperate) why.unshift(h("span", null, "Read only: you may view this InferenceService but not operate it."));
  mount(byId("controls-why"), why);
}

// -- Refresh --------------------------------------------------------------------------------------
function apply(next) {
  state = next;
  renderHeader(state);
  renderStrategy(state);
  renderTraffic(state);
  renderWaits(state);
  renderHandover(state);
  renderComponents(state);
  renderControls(state);
  renderCapacity(state);
  sample(state);
  drawChart();
  drawCapacity();
}

// The history is read again when the spec's generation or a Deployment's pause changes.
let lastHistory = null;
function show(next) {
  apply(next);
  const generation = `${state.generation}/${state.deployments.map((d) => d.paused).join()}`;
  if (generation !== lastHistory) {
    lastHistory = generation;
    renderHistory();
  }
}

function setConn(kind, text, title) {
  const conn = byId("conn");
  conn.className = `conn conn-${kind}`;
  conn.textContent = text;
  conn.title = title;
}

// Fallback only: a read of the REST state while the socket is not live.
let streamLive = false;
async function fallbackRefresh() {
  if (streamLive || document.hidden) return;
  try {
    show(await api(boot.api));
    if (!streamLive) setConn("stale", "polling", `The live connection is down: read from the API every ${FALLBACK_MS / 1000} s`);
  } catch (err) {
    if (err.status === 401) return location.reload();
    if (!streamLive) setConn("stale", "refresh failed; retrying", "Neither the live connection nor the API answers");
  }
}

buildButtons();
bindPreview();
show(state);
loadPlotly(plotlySrc, () => {
  drawChart();
  drawCapacity();
});
const stream = connectStream(boot.ws, {
  onState: (next) => show(next),
  onStatus: (kind, text) => {
    const wasLive = streamLive;
    streamLive = kind === "live";
    if (streamLive) {
      if (!wasLive) setConn("live", "live", "Updated over the websocket as the InferenceService changes");
    } else {
      setConn(kind === "down" ? "stale" : kind, text, "The live connection is down: read from the API meanwhile");
      if (wasLive) fallbackRefresh();
    }
  },
  onSignedOut: () => location.reload(),
});
// For tests and debugging, as on the ModelServing page.
window.__isvcStream = stream;
setInterval(fallbackRefresh, FALLBACK_MS);
// Where the server does not push every change (Kubernetes without the InferenceService cache), the
// page also reads the API every 2 s, as before the websocket; the socket still brings controls at once.
if (boot.pushed === false) {
  setInterval(() => {
    if (!document.hidden) api(boot.api).then(show, () => {});
  }, 2000);
}
