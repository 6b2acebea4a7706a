// Workload list (ModelServings and KServe InferenceServices, with a kind column): instant
// client-side filtering, and a refresh every 5 s from GET /api/workloads/ (one request) while the
// tab is visible. A ModelServing's row key is "namespace/name", an InferenceService's
// "namespace/name#InferenceService" (both kinds may use one name).
//
// Rows are made once (the server renders the first ones; a ModelServing that appears gets a new
// row) and then updated in place: a refresh touches only the cells whose values changed, so
// 1,000 rows cost 1,000 comparisons, not 1,000 new rows every 5 s. Filtering hides rows.

import { api } from "./lib/api.js";
import { byId, h, mount, readJson } from "./lib/dom.js";
import { phaseClass } from "./lib/format.js";

const REFRESH_MS = 5000;
const phases = readJson("phases", []);
const form = byId("filters");
const tbody = byId("ms-rows");
const countEl = byId("ms-count");
const statusEl = byId("refresh-status");

const ISVC = "InferenceService";
const keyOf = (r) => `${r.namespace}/${r.name}` + (r.kind === ISVC ? "#" + ISVC : "");
const pct = (a, b) => (b > 0 ? Math.min(100, Math.round((100 * a) / b)) : 0);

// key -> {tr, cells, data}: data is the row as last written (null for a server-rendered row not
// yet refreshed, so the first refresh writes every cell once).
const rows = new Map();
let emptyRow = tbody.querySelector("tr.empty");

function cellsOf(tr) {
  return {
    phase: tr.cells[2].querySelector(".phase"),
    bars: tr.cells[3].querySelector(".bars"),
    upd: tr.cells[3].querySelector(".bar-upd"),
    ready: tr.cells[3].querySelector(".bar-ready"),
    barsText: tr.cells[3].querySelector(".bars-text"),
    revision: tr.cells[4],
    strategy: tr.cells[5],
  };
}

// A new row, in the same structure as the template's.
function createRow(r) {
  const isvc = r.kind === ISVC;
  const base = isvc ? "/inferenceservices/" : "/modelservings/";
  const href = `${base}${encodeURIComponent(r.namespace)}/${encodeURIComponent(r.name)}/`;
  const tr = h(
    "tr",
    { "data-key": keyOf(r), "data-kind": isvc ? ISVC : "ModelServing" },
    h("td", null, h("a", { class: "ms-link", href }, h("span", { class: "muted" }, r.namespace + "/"), r.name)),
    h("td", null, h("span", { class: isvc ? "kind-badge kind-isvc" : "kind-badge" }, isvc ? ISVC : "ModelServing")),
    h("td", null, h("span", { class: "phase" })),
    h(
      "td",
      { class: "bars-col" },
      h(
        "div",
        { class: "bars" },
        h("div", { class: "bar" }, h("i", { class: "bar-upd" })),
        h("div", { class: "bar" }, h("i", { class: "bar-ready" })),
      ),
      h("span", { class: "bars-text num" }),
    ),
    h("td", { class: "mono" }),
    h("td", { class: "muted" }),
  );
  return { tr, cells: cellsOf(tr), data: null };
}

const changed = (prev, r, ...fields) => !prev || fields.some((f) => prev[f] !== r[f]);

// Write what changed since the row's last data.
function updateRow(row, r) {
  const prev = row.data;
  const { cells } = row;
  if (changed(prev, r, "phase")) {
    row.tr.dataset.phase = r.phase;
    cells.phase.className = phaseClass(r.phase, phases);
    cells.phase.textContent = r.phase;
  }
  if (changed(prev, r, "updated", "ready", "desired")) {
    cells.bars.title = `updated ${r.updated}, ready ${r.ready}, desired ${r.desired}`;
    cells.upd.style.width = pct(r.updated, r.desired) + "%";
    cells.ready.style.width = pct(r.ready, r.desired) + "%";
    cells.barsText.textContent = `${r.updated} / ${r.ready} / ${r.desired}`;
  }
  if (r.kind === ISVC) {
    if (changed(prev, r, "canary")) cells.revision.textContent = r.canary || "—";
    if (changed(prev, r, "deploymentMode")) cells.strategy.textContent = r.deploymentMode ?? "";
    row.data = r;
    return;
  }
  if (changed(prev, r, "currentRevision", "updateRevision")) {
    const moving = r.updateRevision && r.updateRevision !== r.currentRevision;
    mount(
      cells.revision,
      r.currentRevision || "—",
      moving ? [" ", h("span", { class: "arrow" }, "→"), " ", h("b", null, r.updateRevision)] : null,
    );
  }
  if (changed(prev, r, "strategyType")) cells.strategy.textContent = r.strategyType ?? "";
  row.data = r;
}

// Adopt the rows the server rendered.
for (const tr of tbody.querySelectorAll("tr[data-key]")) rows.set(tr.dataset.key, { tr, cells: cellsOf(tr), data: null });

function filters() {
  const data = new FormData(form);
  return {
    q: String(data.get("q") || "")
      .toLowerCase()
      .trim(),
    ns: String(data.get("namespace") || "").trim(),
    phase: String(data.get("phase") || ""),
    kind: String(data.get("kind") || ""),
  };
}

// Show the rows that match the filters, count them per phase, and keep the URL in step.
function applyFilters() {
  const f = filters();
  const counts = {};
  let shown = 0;
  for (const [key, row] of rows) {
    const ns = key.slice(0, key.indexOf("/"));
    const phase = row.tr.dataset.phase;
    const name = key.replace(/#.*$/, "");
    const inScope =
      (!f.ns || ns === f.ns) && (!f.q || name.toLowerCase().includes(f.q)) && (!f.kind || row.tr.dataset.kind === f.kind);
    if (inScope) counts[phase] = (counts[phase] || 0) + 1;
    const visible = inScope && (!f.phase || phase === f.phase);
    row.tr.hidden = !visible;
    if (visible) shown++;
  }
  if (!shown && !emptyRow) {
    emptyRow = h("tr", { class: "empty" }, h("td", { colspan: 6 }, "No workload matches."));
    tbody.appendChild(emptyRow);
  }
  if (emptyRow) emptyRow.hidden = shown > 0;
  countEl.textContent = shown;
  for (const el of document.querySelectorAll("[data-phase-count]")) el.textContent = counts[el.dataset.phaseCount] || "";
  for (const label of form.querySelectorAll(".seg-item")) label.classList.toggle("on", label.querySelector("input").checked);
  const params = new URLSearchParams();
  if (f.q) params.set("q", f.q);
  if (f.ns) params.set("namespace", f.ns);
  if (f.phase) params.set("phase", f.phase);
  if (f.kind) params.set("kind", f.kind);
  history.replaceState(null, "", params.toString() ? "?" + params : location.pathname);
}

// Bring the table to `data` (sorted by namespace/name): update rows in place, add the new ones,
// remove the gone ones; a row moves only when its position changed.
function sync(data) {
  const keys = new Set(data.map(keyOf));
  // The row in the table where the next row of `data` belongs (rows about to go, and the empty
  // row, are skipped).
  let cursor = tbody.firstElementChild;
  const settle = () => {
    while (cursor && !keys.has(cursor.dataset.key)) cursor = cursor.nextElementSibling;
  };
  for (const r of data) {
    const key = keyOf(r);
    let row = rows.get(key);
    if (!row) {
      row = createRow(r);
      rows.set(key, row);
    }
    updateRow(row, r);
    settle();
    if (cursor === row.tr) cursor = cursor.nextElementSibling;
    else tbody.insertBefore(row.tr, cursor);
  }
  for (const [key, row] of rows) {
    if (!keys.has(key)) {
      row.tr.remove();
      rows.delete(key);
    }
  }
}

async function refresh() {
  if (document.hidden) return; // no polling in background tabs
  try {
    const data = await api("/api/workloads/");
    data.sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
    sync(data);
    applyFilters();
    statusEl.textContent = "updated " + new Date().toLocaleTimeString();
    statusEl.classList.remove("stale");
  } catch (err) {
    if (err.status === 401 || err.status === 403) {
      location.reload();
      return;
    }
    statusEl.textContent = "refresh failed; retrying";
    statusEl.classList.add("stale");
  }
}

form.addEventListener("input", applyFilters);
form.addEventListener("submit", (e) => {
  e.preventDefault();
  applyFilters();
});
document.addEventListener("visibilitychange", () => {
  if (!document.hidden) refresh();
});
setInterval(refresh, REFRESH_MS);
refresh();
