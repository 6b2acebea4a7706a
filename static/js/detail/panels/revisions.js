// Revisions: the history with "compare" radios (A, B), the diff of two revisions' versioned fields
// (runtime fields shown apart, since a rollback keeps them), "Roll back to #N" on each older
// revision, and beside a hash the release that produced it ("r31 · v12").

import { api } from "../../lib/api.js";
import { byId, h, memo, mount } from "../../lib/dom.js";
import { fmtAge, shortDigest } from "../../lib/format.js";
import { revisionColour } from "../../lib/colors.js";

function fmtVal(v) {
  if (v === null || v === undefined) return h("span", { class: "muted" }, "—");
  if (typeof v === "object") return h("pre", null, JSON.stringify(v, null, 2));
  return h("code", null, String(v));
}

export function createRevisions({ boot, onRollback }) {
  const table = byId("revisions");
  const tbody = table.querySelector("tbody");
  // The table scrolls inside its panel instead of pushing its last column (the rollback
  // buttons) under the next panel when a row is wider than the panel (digest images, long causes).
  if (!table.parentElement.classList.contains("table-scroll")) {
    const scroller = h("div", { class: "table-scroll" });
    table.replaceWith(scroller);
    scroller.appendChild(table);
  }
  const diffButton = byId("diff-btn");
  const diffBox = byId("diff");
  const changed = memo();
  // The two revisions to compare: the newest against the one before, until the operator picks.
  const pick = { a: null, b: null };

  const canCompare = () => pick.a && pick.b && pick.a !== pick.b;

  // "r31 · v12": the release that produced this controller revision (GET .../releases, byRevision).
  function releaseChip(r, releases) {
    const rel = releases && releases.byRevision ? releases.byRevision[r.hash] : null;
    if (!rel) return null;
    return h(
      "span",
      { class: "rel-chip", title: `${rel.environment}: ${rel.model}:${rel.version} (${rel.status})`, "data-testid": "rev-release" },
      rel.label,
    );
  }

  // Each image of the revision by tag, with the digest it first ran from, and a warning when the
  // tag now resolves to other bytes (a pod of this revision runs a different digest).
  function images(r) {
    const list = r.images || [];
    if (!list.length) return null;
    return h(
      "div",
      { class: "rev-images", "data-testid": "rev-images" },
      list.map((img) =>
        h(
          "div",
          { class: "rev-image" },
          // A digest reference is ~110 characters: cut with an ellipsis, whole in the title.
          h("code", { class: "long-value", title: img.image }, img.image),
          " ",
          img.digest
            ? h("span", { class: "mono muted", title: img.digest, "data-testid": "rev-digest" }, shortDigest(img.digest))
            : h("span", { class: "muted", title: "No pod of this revision has pulled it yet" }, "digest not seen yet"),
          img.moved
            ? [
                " ",
                h(
                  "span",
                  {
                    class: "badge badge-error",
                    title: `${img.image} now resolves to ${img.moved} (first ran ${img.digest}): pods of this revision run different bytes`,
                    "data-testid": "rev-digest-moved",
                  },
                  "tag moved",
                ),
              ]
            : null,
        ),
      ),
    );
  }

  function row(r, state, releases) {
    const created = r.created ? Date.parse(r.created) / 1000 : null;
    const canRollBack = boot.canOperate && r.hash !== state.updateRevision && r.readable !== false;
    const radio = (name, title) =>
      h("input", {
        type: "radio",
        name,
        value: r.number,
        checked: pick[name === "diff-a" ? "a" : "b"] === r.number,
        "aria-label": `${title} #${r.number}`,
      });
    return h(
      "tr",
      { dataset: { rev: r.number } },
      h("td", null, radio("diff-a", "compare from")),
      h("td", null, radio("diff-b", "compare to")),
      h("td", null, h("span", { class: "rev-dot", style: { background: revisionColour(r.hash) } }), r.number),
      h("td", null, h("span", { class: "mono" }, r.hash), releaseChip(r, releases), images(r)),
      h("td", { class: "num" }, fmtAge(created != null ? state.time - created : null)),
      h(
        "td",
        null,
        r.hash === state.updateRevision ? [h("span", { class: "badge badge-info" }, "update"), " "] : null,
        r.hash === state.currentRevision ? [h("span", { class: "badge" }, "current"), " "] : null,
        r.readable === false ? h("span", { class: "badge badge-error", title: r.error || "" }, "unreadable") : null,
        r.changeCause || "",
      ),
      h(
        "td",
        null,
        canRollBack
          ? h(
              "button",
              {
                class: "btn btn-quiet btn-xs",
                type: "button",
                dataset: { action: "rollback", revision: r.number },
                onclick: () => onRollback(Number(r.number)),
              },
              `Roll back to #${r.number}`,
            )
          : null,
      ),
    );
  }

  function render({ state, releases }) {
    const revs = (state.revisions || []).slice().reverse();
    if (pick.a == null && revs.length > 1) {
      pick.a = revs[1].number;
      pick.b = revs[0].number;
    }
    // Ages move with the cluster clock: re-render when a minute-level age could change.
    const byRevision = releases ? releases.byRevision : null;
    const key = JSON.stringify([revs, state.updateRevision, state.currentRevision, pick, Math.floor(state.time / 30), byRevision]);
    if (changed(key)) mount(tbody, revs.map((r) => row(r, state, releases)));
    diffButton.disabled = !canCompare();
  }

  table.addEventListener("change", (e) => {
    if (e.target.name === "diff-a") pick.a = Number(e.target.value);
    if (e.target.name === "diff-b") pick.b = Number(e.target.value);
    diffButton.disabled = !canCompare();
  });

  diffButton.addEventListener("click", async () => {
    const from = pick.a;
    const to = pick.b;
    mount(diffBox, h("p", { class: "muted" }, "Loading diff…"));
    try {
      const d = await api(`${boot.api}revisions/diff?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`);
      const changes = d.changes || [];
      const runtime = { ...(d.runtime || {}) };
      const note = runtime.note || "Runtime fields are not versioned: a rollback keeps them; these are the current values.";
      delete runtime.note;
      mount(
        diffBox,
        h(
          "div",
          { class: "panel-subtitle" },
          `Versioned fields: #${from} → #${to} · ${changes.length} change${changes.length === 1 ? "" : "s"}`,
        ),
        changes.length
          ? h(
              "table",
              { class: "table compact diff-table" },
              h("thead", null, h("tr", null, h("th", null, "Field"), h("th", null, `#${from}`), h("th", null, `#${to}`))),
              h(
                "tbody",
                null,
                changes.map((c) =>
                  h(
                    "tr",
                    { class: "chg-" + String(c.change) },
                    h("td", { class: "mono path" }, c.path),
                    h("td", { class: "from" }, fmtVal(c.from)),
                    h("td", { class: "to" }, fmtVal(c.to)),
                  ),
                ),
              ),
            )
          : h("p", { class: "calm" }, "No versioned field differs."),
        Object.keys(runtime).length
          ? [
              h("div", { class: "panel-subtitle" }, "Runtime fields, shown apart"),
              h("p", { class: "muted" }, note),
              h(
                "table",
                { class: "table compact runtime-table" },
                h(
                  "tbody",
                  null,
                  Object.entries(runtime).map(([k, v]) => h("tr", null, h("td", { class: "mono" }, k), h("td", null, fmtVal(v)))),
                ),
              ),
            ]
          : null,
      );
    } catch (err) {
      mount(diffBox, h("p", { class: "field-error" }, err.message));
    }
  });

  return { render };
}
