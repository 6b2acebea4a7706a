// Audit: who did what to this ModelServing, when, why, from and to which revision (the newest 30
// records of GET /api/audit/).

import { api } from "../../lib/api.js";
import { byId, h, mount } from "../../lib/dom.js";
import { actionLabel, readableError } from "../../lib/format.js";

// From and to as numbered then, with the hash and the number it has now when a rollback re-numbered
// it ("revision #1 (hash 5d8c7f9b6a), now #3"); older answers without `revisions`: the labels.
function revisionsOf(a) {
  const r = a.revisions || {};
  if (r.from || r.to) {
    const side = (x) => h("span", { class: "mono", "data-testid": "audit-revision" }, x ? x.text : "—");
    return [side(r.from), " → ", side(r.to), " · "];
  }
  if (a.fromRevision || a.toRevision) return [h("span", { class: "mono" }, `${a.fromRevision || "—"} → ${a.toRevision || "—"}`), " · "];
  return null;
}

export function createAudit({ boot }) {
  const el = byId("audit");

  function item(a) {
    const when = a.when ? new Date(a.when) : null;
    return h(
      "li",
      { class: "tl tl-" + String(a.result) },
      h(
        "div",
        { class: "tl-head" },
        h("b", { title: String(a.action ?? "") }, actionLabel(a.action)),
        " ",
        h("span", { class: "muted" }, "by"),
        " ",
        a.who || "unknown",
        " ",
        h("span", { class: "badge" }, a.source),
        a.result !== "ok" ? [" ", h("span", { class: "badge badge-error" }, "failed")] : null,
        h("time", { class: "muted", datetime: a.when, title: a.when }, when ? when.toLocaleString() : "—"),
      ),
      h(
        "div",
        { class: "tl-body" },
        revisionsOf(a),
        a.details && a.details.replicas && typeof a.details.replicas === "object"
          ? [h("span", { class: "mono", "data-testid": "audit-replicas" }, `groups ${a.details.replicas.from ?? "—"} → ${a.details.replicas.to ?? "—"}`), " · "]
          : null,
        h("span", { class: "reason" }, `“${a.reason ?? ""}”`),
        a.error ? [" ", h("span", { class: "field-error", title: a.error }, readableError(a.error))] : null,
      ),
    );
  }

  async function load() {
    try {
      const query = `namespace=${encodeURIComponent(boot.namespace)}&name=${encodeURIComponent(boot.name)}&page_size=30`;
      const data = await api(`/api/audit/?${query}`);
      const items = data.results || [];
      mount(el, items.length ? items.map(item) : h("li", { class: "muted" }, "No action recorded yet."));
    } catch (err) {
      mount(el, h("li", { class: "field-error" }, err.message));
    }
  }

  return { load };
}
