// Views shared by the Releases page and the ModelServing page's release panel.

import { h } from "../lib/dom.js";

// The serving gates in order (controller/core/gates.py).
export const GATES = ["Created", "Scheduled", "Started", "Loaded", "Routed", "Verified", "Serving"];
export const LAYERS = ["model", "image", "config", "resources", "schema"];

// A release status (Pending, Deploying, Serving, Failed, Superseded, RolledBack) as a badge.
export const statusBadge = (status, title) =>
  h(
    "span",
    { class: "badge rs-" + String(status || "").toLowerCase(), "data-status": status, title: title || null },
    status || "—",
  );

// A model version state (Registered, Approved, Deprecated) as a badge.
export const versionBadge = (status) =>
  h("span", { class: "badge vs-" + String(status || "").toLowerCase(), "data-status": status }, status || "—");

// Why a release went out: the reason given when it was deployed, else the one it was planned with.
export function deployReason(release) {
  const deployed = (release.events || []).find((e) => e.status === "Deploying");
  return (deployed && deployed.reason) || release.reason || "";
}

export function fmtSeconds(s) {
  if (s == null || !Number.isFinite(s)) return "";
  if (s < 90) return `${Math.round(s)} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

// Ready (Kubernetes: every pod Ready) and Serving (every gate passed) counts of a state.
export function readyServing(state) {
  const instances = ((state && state.instances) || []).filter((i) => i.state !== "Deleting");
  const ready = instances.filter((i) => i.state === "Ready").length;
  const serving = instances.filter((i) => i.gate === "Serving" && !i.gateFailed).length;
  return { ready, serving, total: instances.length, gates: instances.some((i) => "gate" in i) };
}

function value(v) {
  if (v === null || v === undefined) return h("span", { class: "muted" }, "—");
  return h("code", null, typeof v === "object" ? JSON.stringify(v) : String(v));
}

// What deploying or restoring a release changes, per layer (GET .../deployment-revisions/.../change):
// each of model, image, config, resources and schema with its changed fields, or "unchanged".
// The same change in several roles is one row naming the roles.
function grouped(changes) {
  const rows = new Map();
  for (const c of changes) {
    const key = JSON.stringify([c.field, c.from, c.to]);
    if (!rows.has(key)) rows.set(key, { ...c, roles: [] });
    rows.get(key).roles.push(c.role);
  }
  return [...rows.values()].map((r) => ({ ...r, role: r.roles.join(", ") }));
}

export function layersView(change) {
  const byLayer = new Map((change.layers || []).map((l) => [l.layer, grouped(l.changes || [])]));
  return h(
    "div",
    { class: "layer-list", "data-testid": "layers" },
    LAYERS.map((layer) => {
      const changes = byLayer.get(layer) || [];
      return h(
        "div",
        { class: "layer", dataset: { layer, changed: changes.length ? "yes" : "no" } },
        h("h4", null, layer, " ", changes.length ? h("span", { class: "badge badge-warn" }, `${changes.length} field${changes.length === 1 ? "" : "s"} change`) : h("span", { class: "unchanged" }, "unchanged")),
        changes.length
          ? h(
              "table",
              { class: "table compact" },
              h("thead", null, h("tr", null, h("th", null, "Roles"), h("th", null, "Field"), h("th", null, "Now"), h("th", null, "After"))),
              h(
                "tbody",
                null,
                changes.map((c) =>
                  h("tr", null, h("td", null, c.role), h("td", { class: "mono" }, c.field), h("td", null, value(c.from)), h("td", null, value(c.to))),
                ),
              ),
            )
          : null,
      );
    }),
  );
}
