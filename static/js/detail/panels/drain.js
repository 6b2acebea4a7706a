// Drain: pods draining, their requests in flight and the time left before the drain timeout; and
// the requests that were still in flight when a drain timed out (the pod went anyway), from the
// rollout's audit trail (action drain_timeout, recorded by the system), re-read when a drain ends.

import { api } from "../../lib/api.js";
import { byId, h, memo, mount } from "../../lib/dom.js";

const SHOWN = 50;

export function createDrain({ boot } = {}) {
  const el = byId("drain");
  const interruptedEl = byId("drain-interrupted");
  const changed = memo();
  let draining = -1;

  async function loadInterrupted() {
    if (!boot || !interruptedEl) return;
    const q = new URLSearchParams({ namespace: boot.namespace, name: boot.name, action: "drain_timeout", page_size: "20" });
    let records = [];
    try {
      const page = await api("/api/audit/?" + q.toString());
      records = page.results || page || [];
    } catch {
      return;
    }
    if (!records.length) {
      mount(interruptedEl, h("p", { class: "muted" }, "No request was interrupted at a drain timeout."));
      return;
    }
    const total = records.reduce((n, r) => n + (Number(r.details && r.details.interrupted) || 0), 0);
    mount(
      interruptedEl,
      h(
        "p",
        { class: "warn", "data-testid": "drain-interrupted-total" },
        `${total} request${total === 1 ? "" : "s"} interrupted at the drain timeout`,
        records.length === 20 ? " (the latest 20 drains)" : "",
      ),
      h(
        "ul",
        { class: "compact-list" },
        records.slice(0, 5).map((r) =>
          h(
            "li",
            { class: "mono" },
            `${(r.details && r.details.pod) || "?"}: ${(r.details && r.details.interrupted) || 0} at `,
            h("time", { datetime: r.when }, r.when ? new Date(r.when).toLocaleTimeString() : "—"),
            r.toRevision ? ` (rolling out ${r.toRevision})` : "",
          ),
        ),
      ),
    );
  }

  function render({ state }) {
    const d = state.drain || [];
    // A drain that ends may have timed out: read the trail again then (and once at the start).
    if (d.length < draining || draining < 0) loadInterrupted();
    draining = d.length;
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
