// Workload list (ModelServings and KServe InferenceServices, with a kind column): instant
// client-side filtering, and a refresh every 5 s from GET /api/workloads/ (one request) while the
// tab is visible. A ModelServing's row key is "namespace/name", an InferenceService's
// "namespace/name#InferenceService" (both kinds may use one name).
//
// The list is windowed (issue 27: 10,000 workloads, `python -m bench list --count 10000`): the
// rows are data (`all`, in the API's order: namespace, name, kind; `shown`, those that pass the
// filters), and only the rows in and near the viewport are elements. The row group is padded above
// and below to the height the other rows would take, so the page scrolls as if every row were
// there. Scrolling, filtering and a refresh redraw the window; a row that stays in the window is
// the same element, and only the cells whose values changed are written. 10,000 rows as elements
// cost a second of parsing and layout before the list was live, and ~45 ms of style, layout and
// paint for every frame that changed one of them; the window is ~70 rows, whatever the list's size.
//
// What the window changes for a person: the browser's find sees only the rows on screen (the
// filter box is the list's search); with a row's link focused, the arrow keys, Page Up/Down and
// Home/End move to another row (Tab moves to the next row too); a screen reader hears each row's
// place in the whole list (aria-rowcount on the table, aria-rowindex on each row).

import { api } from "./lib/api.js";
import { byId, h, mount, readJson } from "./lib/dom.js";
import { phaseClass } from "./lib/format.js";
import { decodeRows } from "./lib/workload-rows.js";

// Every 5 s; `?refresh=<ms>` (at least 1000) polls faster, which `python -m bench list` uses to
// measure the frames while rows change.
const REFRESH_MS = Math.max(1000, Number(new URLSearchParams(location.search).get("refresh")) || 5000);
const phases = readJson("phases", []);
const form = byId("filters");
const tableEl = byId("ms-table"); // role=table: aria-rowcount; focus rests here when a focused row scrolls away
const rowsEl = byId("ms-rows"); // the row group: the window's rows, padded to the whole list's height
const countEl = byId("ms-count");
const statusEl = byId("refresh-status");

const ISVC = "InferenceService";
const keyOf = (r) => `${r.namespace}/${r.name}` + (r.kind === ISVC ? "#" + ISVC : "");
const pct = (a, b) => (b > 0 ? Math.min(100, Math.round((100 * a) / b)) : 0);

// Rows kept beyond each edge of the viewport: a Tab or a short scroll lands on a row that is
// already there, and a fast scroll shows rows, not the padding, in most frames.
const OVERSCAN = 20;
// A row's height in pixels, measured from a drawn row (every row is one line: the cells do not
// wrap); 34 until then, the height the stylesheet gives a row at the default font size.
let rowHeight = 34;

// Every row, in the API's order (the page's data is arrays of the shown fields: lib/workload-rows.js;
// its text goes to the refresh's worker too).
const dataText = byId("workload-rows")?.textContent ?? '{"fields": [], "rows": []}';
let all = decodeRows(dataText);
let shown = []; // the rows that pass the filters, in the same order
// key -> {el, cells, data} of the rows that are elements now (the window): data is the row as
// last written (null for a server-rendered row not written yet, so its first write compares
// every cell with the data and writes only what differs); cells are found when first written.
const drawn = new Map();
let emptyRow = rowsEl.querySelector(".ms-row.empty");
// The key of a focused row that left the window (focus waits on the table): it gets focus back
// when it is drawn again.
let parkedKey = null;

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

// A new row, in the same structure as the server renders (pages._list_rows_html); its
// aria-rowindex is set where it is placed.
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
  return { el, cells: null, data: null };
}

const changed = (prev, r, ...fields) => !prev || fields.some((f) => prev[f] !== r[f]);

// Writes that skip what the element already shows: the first write of a server-rendered row
// compares every cell (its data is unknown), and a cell written with its own value would still
// cost a style and layout pass of its row (and a mutation record).
function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}
function setClass(el, name) {
  if (el.className !== name) el.className = name;
}
function setWidth(el, width) {
  if (el.style.width !== width) el.style.width = width;
}
function setAttr(el, name, value) {
  if (el.getAttribute(name) !== value) el.setAttribute(name, value);
}

// Write what changed since the row's last data.
function updateRow(row, r) {
  const prev = row.data;
  if (prev === r) return;
  if (!row.cells) row.cells = cellsOf(row.el);
  const { cells } = row;
  if (changed(prev, r, "phase")) {
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

// Adopt the rows the server rendered (the first ones of the filtered list).
for (const el of rowsEl.querySelectorAll(".ms-row[data-key]")) drawn.set(el.dataset.key, { el, cells: null, data: null });

// --- The window ------------------------------------------------------------------------------

// The rows [first, last) of `shown` that are in the viewport or within OVERSCAN rows of it. Row i
// of the list starts i * rowHeight below the row group's top (the padding above the window is
// part of the row group): with the group's top 3,400 px above the viewport and rows of 34 px,
// row 100 is at the viewport's top, and a 1,000 px viewport shows rows 100-129; the window is
// rows 80-149. `first` never passes the last screenful, so a list that got shorter (a filter, a
// refresh) is drawn at its end until the browser clamps the scroll position.
function windowRange() {
  const top = rowsEl.getBoundingClientRect().top;
  const onScreen = Math.ceil(innerHeight / rowHeight);
  const lastScreen = Math.max(0, shown.length - onScreen);
  const first = Math.max(0, Math.min(Math.floor(-top / rowHeight), lastScreen) - OVERSCAN);
  const last = Math.min(shown.length, Math.max(0, Math.ceil((innerHeight - top) / rowHeight)) + OVERSCAN);
  return [first, Math.max(first, last)];
}

// Park focus on the table when the focused row is about to leave the window (its element goes, and
// focus would fall to the page's body: the next Tab would start from the top of the page). Before
// any row is removed: focusing lays the page out, and a page laid out with rows gone and their
// padding not there yet is shorter, so the browser would clamp the scroll position (a jump to the
// end of the list came back 45 rows short).
function parkFocus(wanted) {
  const focused = document.activeElement?.closest?.("#ms-rows .ms-row[data-key]");
  if (focused && !wanted.has(focused.dataset.key)) {
    parkedKey = focused.dataset.key;
    tableEl.focus({ preventScroll: true });
  }
}

function setPadding(el, side, px) {
  const value = px + "px";
  if (el.style[side] !== value) el.style[side] = value;
}

// Draw the rows of the window: reuse the rows already drawn (writing what changed since they were
// drawn), make the rows that came into the window, remove those that left, and pad the row group
// for the rows above and below.
function drawWindow() {
  const [first, last] = windowRange();
  const wanted = new Map();
  for (let i = first; i < last; i++) wanted.set(keyOf(shown[i]), i);
  parkFocus(wanted);
  for (const [key, row] of drawn) {
    if (!wanted.has(key)) {
      row.el.remove();
      drawn.delete(key);
    }
  }
  // The drawn row where the next row of the window belongs (the empty row is skipped).
  let cursor = rowsEl.firstElementChild;
  const settle = () => {
    while (cursor && !drawn.has(cursor.dataset.key)) cursor = cursor.nextElementSibling;
  };
  for (const [key, i] of wanted) {
    let row = drawn.get(key);
    if (!row) {
      row = createRow(shown[i]);
      drawn.set(key, row);
    }
    updateRow(row, shown[i]);
    setAttr(row.el, "aria-rowindex", String(i + 2)); // the header is row 1
    settle();
    if (cursor === row.el) cursor = cursor.nextElementSibling;
    else rowsEl.insertBefore(row.el, cursor);
  }
  setPadding(rowsEl, "paddingTop", first * rowHeight);
  setPadding(rowsEl, "paddingBottom", (shown.length - last) * rowHeight);
  if (parkedKey && drawn.has(parkedKey) && document.activeElement === tableEl) {
    drawn.get(parkedKey).el.querySelector(".ms-link").focus({ preventScroll: true });
    parkedKey = null;
  }
}

// The height of a drawn row; when it is not the one assumed (another font size), the window is
// drawn again with it.
function measureRows() {
  const row = drawn.values().next().value;
  if (!row) return;
  const height = row.el.getBoundingClientRect().height;
  if (height > 0 && Math.abs(height - rowHeight) > 0.01) {
    rowHeight = height;
    drawWindow();
  }
}

// One redraw a frame, however many scroll events came in it.
let drawQueued = false;
function queueDraw() {
  if (drawQueued) return;
  drawQueued = true;
  requestAnimationFrame(() => {
    drawQueued = false;
    drawWindow();
  });
}

// --- Filters ---------------------------------------------------------------------------------

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

// The rows that match the filters, counted per phase, and the URL kept in step; then the window
// drawn. One pass over the data (10,000 rows: ~2 ms; the name is read only while a name filter
// is typed in).
function applyFilters() {
  const f = filters();
  const counts = {};
  shown = [];
  for (const r of all) {
    const inScope =
      (!f.ns || r.namespace === f.ns) &&
      (!f.kind || r.kind === f.kind) &&
      (!f.q || `${r.namespace}/${r.name}`.toLowerCase().includes(f.q));
    if (!inScope) continue;
    counts[r.phase] = (counts[r.phase] || 0) + 1;
    if (!f.phase || r.phase === f.phase) shown.push(r);
  }
  if (!shown.length && !emptyRow) {
    emptyRow = h("div", { class: "ms-row empty", role: "row" }, cell("", "No workload matches."));
    rowsEl.appendChild(emptyRow);
  }
  if (emptyRow) emptyRow.hidden = shown.length > 0;
  setAttr(tableEl, "aria-rowcount", String(shown.length + 1));
  setText(countEl, String(shown.length));
  for (const el of document.querySelectorAll("[data-phase-count]")) setText(el, String(counts[el.dataset.phaseCount] || ""));
  for (const label of form.querySelectorAll(".seg-item")) label.classList.toggle("on", label.querySelector("input").checked);
  drawWindow();
  const params = new URLSearchParams();
  if (f.q) params.set("q", f.q);
  if (f.ns) params.set("namespace", f.ns);
  if (f.phase) params.set("phase", f.phase);
  if (f.kind) params.set("kind", f.kind);
  const url = params.toString() ? "?" + params : location.pathname;
  if (location.search !== (params.toString() ? "?" + params : "")) history.replaceState(null, "", url);
}

// --- Keyboard --------------------------------------------------------------------------------

// The part of the viewport the sticky top bar does not cover.
function viewportTop() {
  const bar = document.querySelector(".topbar");
  return bar ? Math.max(0, bar.getBoundingClientRect().bottom) : 0;
}

// Focus row `index` of `shown`: scroll it into view (the least that shows it whole), draw the
// window there, and focus the row's link.
function focusRow(index) {
  if (!shown.length) return;
  const i = Math.max(0, Math.min(shown.length - 1, index));
  const rowTop = rowsEl.getBoundingClientRect().top + i * rowHeight;
  const above = rowTop - viewportTop();
  const below = rowTop + rowHeight - innerHeight;
  if (above < 0) window.scrollBy({ top: above, behavior: "instant" });
  else if (below > 0) window.scrollBy({ top: below, behavior: "instant" });
  drawWindow();
  drawn.get(keyOf(shown[i]))?.el.querySelector(".ms-link").focus({ preventScroll: true });
}

// With a row's link focused: the arrows move a row, Page Up/Down a screenful, Home/End to the
// first and last row (the grid pattern's keys; Tab and Shift+Tab move a row too, by the links).
function onRowKey(e) {
  const link = e.target.closest(".ms-link");
  if (!link || e.altKey || e.ctrlKey || e.metaKey) return;
  const index = Number(link.closest(".ms-row").getAttribute("aria-rowindex")) - 2;
  if (e.key === "Tab") {
    // Tab and Shift+Tab go to the neighbouring row's link, which the window holds already
    // (OVERSCAN rows beyond each edge) unless keys come faster than the window is redrawn after
    // the scroll they cause (a held Tab on a busy machine): then the browser would take focus
    // out of the list. Draw that row and focus it here instead.
    const next = index + (e.shiftKey ? -1 : 1);
    if (next >= 0 && next < shown.length && !drawn.has(keyOf(shown[next]))) {
      e.preventDefault();
      focusRow(next);
    }
    return;
  }
  if (e.shiftKey) return;
  const page = Math.max(1, Math.floor((innerHeight - viewportTop()) / rowHeight) - 1);
  const to = {
    ArrowDown: index + 1,
    ArrowUp: index - 1,
    PageDown: index + page,
    PageUp: index - page,
    Home: 0,
    End: shown.length - 1,
  }[e.key];
  if (to === undefined) return;
  e.preventDefault();
  focusRow(to);
}

// Focus parked on the table (its row scrolled away): a key that moves goes to the row nearest the
// viewport's top.
function onTableKey(e) {
  if (e.target !== tableEl || !["ArrowDown", "ArrowUp", "Tab"].includes(e.key) || e.shiftKey) return;
  const first = Math.floor((viewportTop() - rowsEl.getBoundingClientRect().top) / rowHeight);
  e.preventDefault();
  focusRow(Math.max(0, first));
}

// --- Refresh ---------------------------------------------------------------------------------

// The refresh's worker (static/js/list-refresh.js: it fetches and parses the 2.8 MB of 10,000
// rows off this thread, and answers with the rows that changed); null where a worker cannot run,
// and then this thread fetches.
let worker = null;
let answer = null; // resolves the refresh in flight with the worker's answer

function startWorker() {
  try {
    worker = new Worker(new URL("./list-refresh.js", import.meta.url), { type: "module" });
  } catch {
    return;
  }
  worker.onmessage = (e) => answered(e.data);
  worker.onerror = (e) => {
    e.preventDefault();
    worker.terminate();
    worker = null;
    answered({ failed: true });
  };
  worker.postMessage({ base: dataText });
}

function answered(message) {
  const resolve = answer;
  answer = null;
  resolve?.(message);
}

// The rows of the next answer: the worker's changes applied to `all`, or the whole list.
async function fetchRows() {
  if (worker) {
    const message = await new Promise((resolve) => {
      answer = resolve;
      worker.postMessage({ refresh: true });
    });
    if (message.error !== undefined) throw Object.assign(new Error("refresh failed"), { status: message.error });
    if (message.rows) return message.rows;
    if (message.changes) {
      for (const [index, row] of message.changes) all[index] = row;
      return all;
    }
  }
  return api("/api/workloads/"); // no worker (or it failed to start)
}

let refreshing = false;

async function refresh() {
  if (document.hidden || refreshing) return; // no polling in background tabs; one refresh at a time
  refreshing = true;
  try {
    // In the API's order (namespace, name, kind), the order of the page's data: the model is
    // updated, and the window's rows write the cells that changed (a row off screen is written
    // when it is drawn).
    all = await fetchRows();
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
rowsEl.addEventListener("keydown", onRowKey);
tableEl.addEventListener("keydown", onTableKey);
window.addEventListener("scroll", queueDraw, { passive: true });
window.addEventListener("resize", () => {
  queueDraw();
  requestAnimationFrame(measureRows);
});
document.addEventListener("visibilitychange", () => {
  if (!document.hidden) refresh();
});
// The server put the rows in the page moments ago: the first refresh is the next poll, not one
// right away (a second request and a pass over every row before the page settles). A page
// restored from the back/forward cache is old: refresh it.
window.addEventListener("pageshow", (e) => {
  if (e.persisted) refresh();
});
applyFilters();
measureRows();
startWorker();
setInterval(refresh, REFRESH_MS);
// For `python -m bench list`: when the list became live (rows drawn from the data, filters and
// polling armed).
window.__listReadyMs = performance.now();
