// Effective strategy: each budget with the value it resolves to and where it came from (this
// object, a cluster default, the built-in default, or the multi-node override), and the cluster
// settings in force with their origin (boot.clusterSettings: the environment or a ConfigMap).

import { byId, h, memo, mount } from "../../lib/dom.js";

const SOURCES = {
  object: "this object",
  cluster: "cluster default",
  builtin: "built-in default",
  multiNodeOverride: "multi-node override",
};
const GROUP_LEVEL = "ServingGroupRollingUpdate";

// "Standard mode; defaults maxUnavailable 25%, maxSurge 1; multi-node override on (from the environment)"
function settingsLine(cs) {
  if (!cs) return null;
  const d = cs.defaultRollout || {};
  const defaults = Object.entries(d).map(([k, v]) => `${k} ${v}`);
  const parts = [
    `${cs.deploymentMode} mode` + (cs.deploymentMode === "Standard" ? "" : " (cluster defaults apply only in Standard)"),
    defaults.length ? "defaults " + defaults.join(", ") : "no cluster defaults",
    "multi-node override " + (cs.multiNodeOverride ? "on" : "off"),
  ];
  return h(
    "p",
    { class: "muted", "data-testid": "cluster-settings" },
    "Cluster settings: " + parts.join("; ") + ` (from ${cs.origin})`,
    cs.error ? h("span", { class: "error" }, " — " + cs.error) : null,
  );
}

export function createStrategy() {
  const el = byId("strategy");
  const changed = memo();

  function render({ state, boot }) {
    const s = state.strategy || {};
    if (!changed(JSON.stringify([s, state.strategyType]))) return;
    const scopes = [];
    if (s.group && typeof s.group === "object") scopes.push(["ServingGroups", s.group]);
    for (const [name, b] of Object.entries(s.roles || {})) {
      if (b && typeof b === "object") scopes.push(["role " + name, b]);
    }
    const rows = [];
    for (const [scope, budget] of scopes) {
      const fields = Object.entries(budget).filter(([, v]) => v && typeof v === "object" && "source" in v);
      fields.forEach(([field, v], i) => {
        rows.push(
          h(
            "tr",
            null,
            i === 0 ? h("td", { rowspan: fields.length }, scope, h("div", { class: "muted" }, `total ${budget.total}`)) : null,
            h("td", { class: "mono" }, field),
            h("td", { class: "mono" }, v.value),
            h("td", { class: "num" }, v.count),
            h("td", null, h("span", { class: "src src-" + String(v.source) }, SOURCES[v.source] || v.source)),
          ),
        );
      });
    }
    const type = s.type || state.strategyType;
    mount(
      el,
      h(
        "p",
        null,
        h("b", null, type),
        " ",
        h(
          "span",
          { class: "muted" },
          type === GROUP_LEVEL
            ? "— the group-level values apply; role values are shown for reference"
            : "— each role's values apply inside every group",
        ),
      ),
      h(
        "table",
        { class: "table compact" },
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            h("th", null, "Scope"),
            h("th", null, "Field"),
            h("th", null, "Value"),
            h("th", { class: "num" }, "Resolves to"),
            h("th", null, "Source"),
          ),
        ),
        h("tbody", null, rows),
      ),
      settingsLine(boot && boot.clusterSettings),
    );
  }

  return { render };
}
