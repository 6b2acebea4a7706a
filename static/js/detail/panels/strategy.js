// Effective strategy: each budget with the value it resolves to and where it came from (this
// object, a cluster default, the built-in default, or the multi-node override).

import { byId, h, memo, mount } from "../../lib/dom.js";

const SOURCES = {
  object: "this object",
  cluster: "cluster default",
  builtin: "built-in default",
  override: "multi-node override",
};
const GROUP_LEVEL = "ServingGroupRollingUpdate";

export function createStrategy() {
  const el = byId("strategy");
  const changed = memo();

  function render({ state }) {
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
    );
  }

  return { render };
}
