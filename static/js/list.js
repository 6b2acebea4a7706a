// Workload list (ModelServings and KServe InferenceServices, with a kind column): instant
// client-side filtering, and a refresh every 5 s from GET /api/workloads/ (one request) while the
// tab is visible. A ModelServing's row key is "namespace/name", an InferenceService's
// "namespace/name#InferenceService" (both kinds may use one name).
//
// Rows are made once (the server renders the first ones; a ModelServing that appears gets a new
// row) and then updated in place: a refresh touches only the cells whose values changed, so
// 1,000 rows cost 1,000 comparisons, not 1,000 new rows every 5 s. Filtering hides rows.
//
// At 10,000 rows (issue 27, `python -m bench list --count 10000`) one pass over every row is too
// long for one task: a refresh compares the rows in slices of a few milliseconds and lets the
// browser draw a frame between two slices, then writes what changed in one task (see `sync`);
// what filtering reads of a row is kept in the row's entry, not read from the DOM.

import { api } from "./lib/api.js";
import { byId, h, mount, readJson } from "./lib/dom.js";
import { phaseClass } from "./lib/format.js";

// Every 5 s; `?refresh=<ms>` (at least 1000) polls faster, which `python -m bench list` uses to
// measure the frames while rows change.
const REFRESH_MS = Math.max(1000, Number(new URLSearchParams(location.search).get("refresh")) || 5000);
const phases = readJson("phases", []);
const form = byId("filters");
const rowsEl = byId("ms-rows"); // the rows of the list's grid (one div per workload)
const countEl = byId("ms-count");
const statusEl = byId("refresh-status");

const ISVC = "InferenceService";
const keyOf = (r) => `${r.namespace}/${r.name}` + (r.kind === ISVC ? "#" + ISVC : "");
const pct = (a, b) => (b > 0 ? Math.min(100, Math.round((100 * a) / b)) : 0);

// key -> {el, cells, data, phase, kind, ns, text}: data is the row as last written (null for a
// server-rendered row not yet refreshed, so the first refresh writes every cell once); cells are
// found when the row is first written (finding the cells of 10,000 server-rendered rows at load
// took 60,000 queries before the list was live); phase, kind, namespace and the lower-case
// "namespace/name" are what the filters compare.
const rows = new Map();
let emptyRow = rowsEl.querySelector(".ms-row.empty");

function cellsOf(el) {
  const [, , phase, counts, revision, strategy] = el.children;
  return {
    phase: phase.querySelector(".phase"),
    bars: counts.querySelector(".bars"),
    upd: counts.querySelector(".bar-upd"),
    ready: counts.querySelector(".bar-ready"),
    barsText: counts.querySelector(".bars-text"),
    revision,
    strategy,
  };
}

// One cell of a row; `className` adds to "ms-cell".
const cell = (className, ...children) =>
  h("div", { class: className ? `ms-cell ${className}` : "ms-cell", role: "cell" }, ...children);

// A new row, in the same structure as the server renders (pages._list_rows_html).
function createRow(r) {
  const isvc = r.kind === ISVC;
  const base = isvc ? "/inferenceservices/" : "/modelservings/";
  const href = `${base}${encodeURIComponent(r.namespace)}/${encodeURIComponent(r.name)}/`;
  const el = h(
    "div",
    { class: "ms-row", role: "row", "data-key": keyOf(r), "data-kind": isvc ? ISVC : "ModelServing" },
    cell("", h("a", { class: "ms-link", href }, h("span", { class: "muted" }, r.namespace + "/"), r.name)),
    cell("", h("span", { class: isvc ? "kind-badge kind-isvc" : "kind-badge" }, isvc ? ISVC : "ModelServing")),
    cell("", h("span", { class: "phase" })),
    cell(
      "",
      h(
        "div",
        { class: "bars" },
        h("div", { class: "bar" }, h("i", { class: "bar-upd" })),
        h("div", { class: "bar" }, h("i", { class: "bar-ready" })),
      ),
      h("span", { class: "bars-text num" }),
    ),
    cell("mono"),
    cell("muted"),
  );
  return entryOf(el, r.phase);
}

function entryOf(el, phase) {
  const key = el.dataset.key;
  return {
    el,
    cells: null,
    data: null,
    phase,
    kind: el.dataset.kind,
    ns: key.slice(0, key.indexOf("/")),
    text: key.replace(/#.*$/, "").toLowerCase(),
  };
}

const changed = (prev, r, ...fields) => !prev || fields.some((f) => prev[f] !== r[f]);

// Writes that skip what the element already shows: the first refresh compares every cell of the
// server-rendered rows (their data is unknown), and a cell written with its own value would still
// cost a style and layout pass of its row.
function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}
function setClass(el, name) {
  if (el.className !== name) el.className = name;
}
function setWidth(el, width) {
  if (el.style.width !== width) el.style.width = width;
}

// Write what changed since the row's last data.
function updateRow(row, r) {
  const prev = row.data;
  if (!row.cells) row.cells = cellsOf(row.el);
  const { cells } = row;
  if (changed(prev, r, "phase")) {
    row.phase = r.phase;
    if (row.el.dataset.phase !== r.phase) row.el.dataset.phase = r.phase;
    setClass(cells.phase, phaseClass(r.phase, phases));
    setText(cells.phase, r.phase);
  }
  if (changed(prev, r, "updated", "ready", "desired")) {
    const title = `updated ${r.updated}, ready ${r.ready}, desired ${r.desired}`;
    if (cells.bars.title !== title) cells.bars.title = title;
    setWidth(cells.upd, pct(r.updated, r.desired) + "%");
    setWidth(cells.ready, pct(r.ready, r.desired) + "%");
    setText(cells.barsText, `${r.updated} / ${r.ready} / ${r.desired}`);
  }
  if (r.kind === ISVC) {
    if (changed(prev, r, "canary")) setText(cells.revision, r.canary || "—");
    if (changed(prev, r, "deploymentMode")) setText(cells.strategy, r.deploymentMode ?? "");
    row.data = r;
    return;
  }
  if (changed(prev, r, "currentRevision", "updateRevision")) {
    const moving = r.updateRevision && r.updateRevision !== r.currentRevision;
    // The cell's text is "1" or "1 → 2" whichever wrote it (this script or the server).
    const text = (r.currentRevision || "—") + (moving ? ` → ${r.updateRevision}` : "");
    if (cells.revision.textContent !== text) {
      mount(
        cells.revision,
        r.currentRevision || "—",
        moving ? [" ", h("span", { class: "arrow" }, "→"), " ", h("b", null, r.updateRevision)] : null,
      );
    }
  }
  if (changed(prev, r, "strategyType")) setText(cells.strategy, r.strategyType ?? "");
  row.data = r;
}

// Adopt the rows the server rendered.
for (const el of rowsEl.querySelectorAll(".ms-row[data-key]")) rows.set(el.dataset.key, entryOf(el, el.dataset.phase));

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
  for (const row of rows.values()) {
    const phase = row.phase;
    const inScope = (!f.ns || row.ns === f.ns) && (!f.q || row.text.includes(f.q)) && (!f.kind || row.kind === f.kind);
    if (inScope) counts[phase] = (counts[phase] || 0) + 1;
    const visible = inScope && (!f.phase || phase === f.phase);
    if (row.el.hidden === visible) row.el.hidden = !visible;
    if (visible) shown++;
  }
  if (!shown && !emptyRow) {
    emptyRow = h("div", { class: "ms-row empty", role: "row" }, cell("", "No workload matches."));
    rowsEl.appendChild(emptyRow);
  }
  if (emptyRow) emptyRow.hidden = shown > 0;
  setText(countEl, String(shown));
  for (const el of document.querySelectorAll("[data-phase-count]")) setText(el, String(counts[el.dataset.phaseCount] || ""));
  for (const label of form.querySelectorAll(".seg-item")) label.classList.toggle("on", label.querySelector("input").checked);
  const params = new URLSearchParams();
  if (f.q) params.set("q", f.q);
  if (f.ns) params.set("namespace", f.ns);
  if (f.phase) params.set("phase", f.phase);
  if (f.kind) params.set("kind", f.kind);
  const url = params.toString() ? "?" + params : location.pathname;
  if (location.search !== (params.toString() ? "?" + params : "")) history.replaceState(null, "", url);
}

// How long one slice of a refresh may hold the main thread.
const SLICE_MS = 8;
// Give the browser the main thread and come back after it has drawn the next frame (a task queued
// from a frame callback runs after that frame): one frame between two slices, whatever the
// browser's task priorities. A hidden tab draws no frames: there, after the tasks already queued.
const yieldToBrowser = () =>
  new Promise((resolve) =>
    document.hidden ? setTimeout(resolve, 0) : requestAnimationFrame(() => setTimeout(resolve, 0)),
  );

// The fields a row shows: a row whose fields all equal its last data needs no write.
const SHOWN = [
  ...["phase", "updated", "ready", "desired"],
  ...["currentRevision", "updateRevision", "strategyType"], // a ModelServing's
  ...["canary", "deploymentMode"], // an InferenceService's
];
const shownChanged = (prev, r) => SHOWN.some((f) => prev[f] !== r[f]);

// Bring the table to `data` (in the API's order): update rows in place, add the new ones,
// remove the gone ones; a row moves only when its position changed.
//
// In two steps, for 10,000 rows. First, in slices of SLICE_MS with a frame between two slices,
// each row is compared with its last data (and a server-rendered row not written yet with its
// cells, which writes only what differs). Then, in one task, the rows that changed are written,
// new rows made and placed, gone rows removed: each frame with a changed row costs a style,
// layout and visibility pass over the list (Chromium checks every content-visibility row, ~18 ms
// of CPU at 10,000 rows), so the writes of one refresh go into one frame, not one per slice.
async function sync(data) {
  const keys = new Set();
  const writes = [];
  let sliceStarted = performance.now();
  for (let i = 0; i < data.length; i++) {
    // The clock is read every 64 rows (comparing a row costs about a microsecond).
    if (i % 64 === 63 && performance.now() - sliceStarted > SLICE_MS) {
      await yieldToBrowser();
      sliceStarted = performance.now();
    }
    const r = data[i];
    const key = keyOf(r);
    keys.add(key);
    const row = rows.get(key);
    if (!row) continue; // made in the second step
    if (!row.data) updateRow(row, r);
    else if (shownChanged(row.data, r)) writes.push([row, r]);
    else row.data = r;
  }
  for (const [row, r] of writes) updateRow(row, r);
  // The row in the table where the next row of `data` belongs (rows about to go, and the empty
  // row, are skipped).
  let cursor = rowsEl.firstElementChild;
  const settle = () => {
    while (cursor && !keys.has(cursor.dataset.key)) cursor = cursor.nextElementSibling;
  };
  for (const r of data) {
    const key = keyOf(r);
    let row = rows.get(key);
    if (!row) {
      row = createRow(r);
      rows.set(key, row);
      updateRow(row, r);
    }
    settle();
    if (cursor === row.el) cursor = cursor.nextElementSibling;
    else rowsEl.insertBefore(row.el, cursor);
  }
  for (const [key, row] of rows) {
    if (!keys.has(key)) {
      row.el.remove();
      rows.delete(key);
    }
  }
}

let refreshing = false;

async function refresh() {
  if (document.hidden || refreshing) return; // no polling in background tabs; one refresh at a time
  refreshing = true;
  try {
    // In the API's order (namespace, name, kind), the order the server rendered the rows in: a
    // refresh then moves no row that kept its place.
    const data = await api("/api/workloads/");
    await sync(data);
    applyFilters();
    statusEl.textContent = "updated " + new Date().toLocaleTimeString();
    statusEl.classList.remove("stale");
    window.__listRefreshes = (window.__listRefreshes || 0) + 1; // for `python -m bench list`
  } catch (err) {
    if (err.status === 401 || err.status === 403) {
      location.reload();
      return;
    }
    statusEl.textContent = "refresh failed; retrying";
    statusEl.classList.add("stale");
  } finally {
    refreshing = false;
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
// The server rendered the rows from the same data moments ago: the first refresh is the next
// poll, not one right away (at 1,000 rows that would be a second request and a pass over every
// cell before the page settles). A page restored from the back/forward cache is old: refresh it.
window.addEventListener("pageshow", (e) => {
  if (e.persisted) refresh();
});
applyFilters();
setInterval(refresh, REFRESH_MS);
// For `python -m bench list`: when the list became live (rows adopted, filters and polling armed).
window.__listReadyMs = performance.now();
