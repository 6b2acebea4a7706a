// "Why it waits": the planner's blocked reasons grouped by kind, most urgent first, each reason
// with the groups and roles it holds.

import { byId, h, memo, mount } from "../../lib/dom.js";
import { ranges } from "../../lib/format.js";

// Kinds of blocked reasons the planner reports: title, help, tone.
const KINDS = {
  paused: ["Paused", "The rollout is paused; no update step starts until it is resumed.", "info"],
  partition: ["Held by the partition", "Groups below the partition stay on the old revision until promoted.", "info"],
  budget: [
    "Waiting for the unavailability budget",
    "maxUnavailable instances are already down or updating; the next step starts when one becomes Ready.",
    "neutral",
  ],
  drain: ["Draining requests", "Pods finish their in-flight requests before they are deleted.", "neutral"],
  skew: [
    "Held back by maxSkew",
    "A role is ahead of the slowest role by the allowed skew; it waits for the others to catch up.",
    "neutral",
  ],
  dependency: ["Waiting for a dependency", "New capacity of a role it depends on must be Ready first.", "neutral"],
  unschedulable: [
    "Cannot schedule",
    "No node has room for the new pods; add capacity or allow more unavailability.",
    "stuck",
  ],
  failing: [
    "Instances failing",
    "New instances fail to become Ready; the rollout does not continue past them.",
    "stuck",
  ],
  revision: [
    "Revision unreadable",
    "A referenced revision cannot be parsed; work that depends on it is paused.",
    "stuck",
  ],
  refused: ["Refused", "The requested change cannot be applied with this strategy.", "stuck"],
  deadlock: ["Deadlock", "The constraints cannot all be met; an operator must change a budget or surge.", "stuck"],
};
// Most urgent first; unknown kinds last.
const ORDER = ["unschedulable", "failing", "revision", "refused", "deadlock", "paused", "skew", "dependency", "budget", "drain", "partition"];
const rank = (kind) => (ORDER.includes(kind) ? ORDER.indexOf(kind) : ORDER.length);
const SHOWN = 6;

export function createWaits() {
  const el = byId("waits");
  const changed = memo();

  function render({ state }) {
    const blocked = state.blocked || [];
    if (!changed(JSON.stringify([blocked, !!state.converged]))) return;
    if (!blocked.length) {
      mount(
        el,
        h(
          "p",
          { class: "calm" },
          state.converged
            ? "Nothing waits: every group runs the update revision and is Ready."
            : "Nothing blocks the planner right now; the rollout is moving.",
        ),
      );
      return;
    }
    // kind -> reason -> {groups, roles}
    const byKind = new Map();
    for (const b of blocked) {
      const kind = b.kind || "other";
      if (!byKind.has(kind)) byKind.set(kind, new Map());
      const reasons = byKind.get(kind);
      if (!reasons.has(b.reason)) reasons.set(b.reason, { groups: [], roles: new Set() });
      const r = reasons.get(b.reason);
      if (b.group != null) r.groups.push(b.group);
      if (b.role) r.roles.add(b.role);
    }
    const kinds = [...byKind.keys()].sort((a, b) => rank(a) - rank(b));
    mount(
      el,
      kinds.map((kind) => {
        const [title, help, tone] = KINDS[kind] || [kind, "", "neutral"];
        const reasons = [...byKind.get(kind).entries()];
        return h(
          "div",
          { class: "wait wait-" + tone },
          h("div", { class: "wait-title" }, title),
          h("div", { class: "wait-help muted" }, help),
          h(
            "ul",
            null,
            reasons.slice(0, SHOWN).map(([reason, r]) =>
              h(
                "li",
                null,
                reason,
                r.groups.length
                  ? [" ", h("span", { class: "muted" }, `· group${r.groups.length > 1 ? "s" : ""} ${ranges(r.groups)}`)]
                  : null,
                r.roles.size ? [" ", h("span", { class: "muted" }, "· " + [...r.roles].join(", "))] : null,
              ),
            ),
            reasons.length > SHOWN ? h("li", { class: "muted" }, `and ${reasons.length - SHOWN} more reasons`) : null,
          ),
        );
      }),
    );
  }

  return { render };
}
