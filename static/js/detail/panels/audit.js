// Audit: who did what to this ModelServing, when, why, from and to which revision (the newest 30
// records of GET /api/audit/).

import { api } from "../../lib/api.js";
import { byId, h, mount } from "../../lib/dom.js";

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
        h("b", null, String(a.action ?? "").replace("_", " ")),
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
        a.fromRevision || a.toRevision
          ? [h("span", { class: "mono" }, `${a.fromRevision || "—"} → ${a.toRevision || "—"}`), " · "]
          : null,
        a.details && a.details.replicas && typeof a.details.replicas === "object"
          ? [h("span", { class: "mono", "data-testid": "audit-replicas" }, `groups ${a.details.replicas.from ?? "—"} → ${a.details.replicas.to ?? "—"}`), " · "]
          : null,
        h("span", { class: "reason" }, `“${a.reason ?? ""}”`),
        a.error ? [" ", h("span", { class: "field-error" }, a.error)] : null,
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
