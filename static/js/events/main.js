// The Events page: the server rendered the newest items; this asks GET /api/events/ (with the
// page's filters) every few seconds for the items newer than the newest shown and puts them on
// top, so the page is live. Times are shown in the browser's time zone. Every value is put in the
// page as text (h() sets textContent), never as markup.

import { api } from "../lib/api.js";
import { byId, h, readJson } from "../lib/dom.js";
import { actionLabel } from "../lib/format.js";

const POLL_MS = 3000;
const MAX_ROWS = 500;

const boot = readJson("events-boot", {});
let newest = boot.newest;
const seen = new Set([...document.querySelectorAll("#events-rows tr[data-id]")].map((tr) => tr.dataset.id));

const local = (t) => new Date(t * 1000).toLocaleString();
const bad = (level) => level === "error" || level === "Warning" || level === "failed";

function href(item) {
  const page = boot.pages && boot.pages[item.kind]; // workloads only (not an account, not a pod)
  if (!page || !item.namespace || !item.name) return null;
  return page.replace("NS_", encodeURIComponent(item.namespace)).replace("NAME_", encodeURIComponent(item.name));
}

function row(item) {
  const link = href(item);
  // The workload's kind goes under the type: a link alone in its cell (axe: link-in-text-block).
  // A record of no namespace (a model version, an environment) names only itself.
  const plain = item.namespace ? `${item.namespace}${item.name ? "/" + item.name : ""}` : item.name || "";
  const where = link ? h("a", { href: link }, `${item.namespace}/${item.name}`) : plain;
  return h(
    "tr",
    { class: `event event-${item.type} event-new`, dataset: { id: item.id } },
    h("td", null, h("time", { datetime: item.when, dataset: { t: item.t } }, local(item.t))),
    h("td", null, item.type, item.kind ? [h("br"), h("span", { class: "muted" }, item.kind)] : null),
    h("td", null, where),
    h("td", { dataset: { action: item.action || "" }, title: item.action || "" }, actionLabel(item.action)),
    h("td", null, item.who),
    h("td", null, h("span", { class: bad(item.level) ? "badge badge-error" : "badge" }, item.level)),
    h("td", null, item.message),
  );
}

function localiseTimes() {
  for (const el of document.querySelectorAll("#events-rows time[data-t]")) el.textContent = local(Number(el.dataset.t));
}

async function poll() {
  if (document.hidden) return; // a tab in the background asks nothing; it catches up when shown
  const params = new URLSearchParams(boot.filters || {});
  if (newest != null) params.set("since", String(newest));
  try {
    const items = await api(`${boot.api}?${params}`);
    const fresh = items.filter((i) => !seen.has(i.id));
    const body = byId("events-rows");
    // Newest first from the server: insert in reverse so the newest ends on top.
    for (const item of fresh.reverse()) {
      seen.add(item.id);
      body.insertBefore(row(item), body.firstChild);
    }
    while (body.rows.length > MAX_ROWS) body.deleteRow(body.rows.length - 1);
    if (items.length) newest = Math.max(newest ?? 0, ...items.map((i) => i.t));
    byId("events-count").textContent = String(body.rows.length);
    byId("events-empty").hidden = body.rows.length > 0;
    byId("events-live").textContent = `live · updated ${new Date().toLocaleTimeString()}`;
  } catch (err) {
    byId("events-live").textContent = `not updating: ${err.message}`;
  }
}

localiseTimes();
poll();
setInterval(poll, POLL_MS);
document.addEventListener("visibilitychange", () => {
  if (!document.hidden) poll();
});
