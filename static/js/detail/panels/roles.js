// Roles: desired, Ready and updated instances per role, and progress (updated and Ready over
// desired).

import { byId, h, memo, mount } from "../../lib/dom.js";

export function createRoles() {
  const el = byId("roles");
  const changed = memo();

  function render({ state }) {
    const roles = state.roles || [];
    if (!changed(JSON.stringify(roles))) return;
    const pct = (r) => Math.round(100 * (Number(r.progress) || 0));
    mount(
      el,
      h(
        "table",
        { class: "table compact" },
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            h("th", null, "Role"),
            h("th", { class: "num" }, "Desired"),
            h("th", { class: "num" }, "Ready"),
            h("th", { class: "num" }, "Updated"),
            h("th", { title: "updated and Ready, over desired" }, "Progress"),
          ),
        ),
        h(
          "tbody",
          null,
          roles.map((r) =>
            h(
              "tr",
              null,
              h("td", null, r.name),
              h("td", { class: "num" }, r.desired),
              h("td", { class: "num" }, r.ready),
              h("td", { class: "num" }, r.updated),
              h(
                "td",
                { class: "nowrap" },
                h("div", { class: "bar bar-sm" }, h("i", { class: "bar-upd", style: { width: pct(r) + "%" } })),
                " ",
                h("span", { class: "num" }, pct(r) + "%"),
              ),
            ),
          ),
        ),
      ),
    );
  }

  return { render };
}
