// Drain: pods draining, their requests in flight and the time left before the drain timeout.

import { byId, h, memo, mount } from "../../lib/dom.js";

const SHOWN = 50;

export function createDrain() {
  const el = byId("drain");
  const changed = memo();

  function render({ state }) {
    const d = state.drain || [];
    if (!changed(JSON.stringify([d, state.time]))) return;
    byId("drain-sub").textContent = d.length ? `${d.length} pod${d.length > 1 ? "s" : ""}` : "";
    if (!d.length) {
      mount(el, h("p", { class: "calm" }, "No pod is draining."));
      return;
    }
    const rows = d.slice(0, SHOWN).map((p) => {
      // The bar shows the share of the drain timeout still left: 20 s left of 30 -> 67 %.
      const total = p.secondsLeft + Math.max(0, state.time - p.since);
      const pct = total > 0 ? Math.round((100 * p.secondsLeft) / total) : 0;
      return h(
        "tr",
        null,
        h("td", { class: "mono" }, p.pod),
        h("td", { class: "num" }, p.inFlight),
        h(
          "td",
          null,
          h("div", { class: "timeleft" }, h("i", { style: { width: pct + "%" } })),
          " ",
          h("span", { class: "num" }, Number(p.secondsLeft).toFixed(0) + "s"),
        ),
      );
    });
    mount(
      el,
      h(
        "table",
        { class: "table compact" },
        h(
          "thead",
          null,
          h("tr", null, h("th", null, "Pod"), h("th", { class: "num" }, "In flight"), h("th", null, "Time left")),
        ),
        h("tbody", null, rows),
      ),
      d.length > SHOWN ? h("p", { class: "muted" }, `and ${d.length - SHOWN} more`) : null,
    );
  }

  return { render };
}
