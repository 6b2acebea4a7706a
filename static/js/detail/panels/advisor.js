// Strategy advisor (simulated cluster only): for a set-image, previews of candidate rollout
// strategies on a copy of this ModelServing; the fastest that keeps the floor is recommended, beside
// the current strategy. "Apply" sends the change with the recommended strategy in one audited action
// (apply-advice); "Apply the change only" keeps the current strategy. Nothing is applied by advising.
//
// The advice runs on the preview worker: POST .../advise/ answers 202 with a job, polled at
// /api/previews/<id>/ (progress: candidates done of total) until its result is there.

import { ApiError, api, post } from "../../lib/api.js";
import { byId, h, memo, mount } from "../../lib/dom.js";
import { roleNames } from "../common.js";

const POLL_MS = 500;

function strategyText(s) {
  if (!s) return "—";
  if (!s.roles) return `maxUnavailable ${s.maxUnavailable}, maxSurge ${s.maxSurge}`;
  const roles = Object.entries(s.roles)
    .map(([name, b]) => `${name} ${b.maxUnavailable}/${b.maxSurge}`)
    .join(", ");
  return `${roles} (unavailable/surge)` + (s.maxSkew ? `, maxSkew ${s.maxSkew}` : "");
}

const seconds = (s) => (s == null ? "—" : s < 90 ? `${Math.round(s)} s` : `${Math.round(s / 60)} min`);

export function createAdvisor({ boot, dialog }) {
  const enabled = boot.backend === "sim";
  const rolesChanged = memo();
  let advice = null;

  async function runJob(box, body) {
    let job = await post(boot.api + "advise/", body);
    while (job.status === "queued" || job.status === "running") {
      const pr = job.progress || {};
      const text =
        job.status === "queued" || pr.total == null
          ? "Advising… (queued)"
          : `Advising… ${pr.done || 0} of ${pr.total} candidates simulated` +
            (pr.limitSeconds ? ` (${Math.round(pr.elapsedSeconds || 0)} of at most ${pr.limitSeconds} s)` : "");
      mount(box, h("p", { class: "muted", "data-testid": "advisor-progress" }, text));
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      job = await api(job.url);
    }
    if (job.status === "error") throw new ApiError(400, job.error);
    return job.result;
  }

  function applyDialog(keepStrategy) {
    if (!advice) return;
    const rec = advice.recommended != null ? advice.candidates[advice.recommended] : null;
    const what = keepStrategy
      ? h("p", null, "Applies the change alone; the current strategy stays.")
      : h(
          "p",
          null,
          "Applies the change with ",
          h("b", null, strategyText(rec && rec.strategy)),
          " in one action: ",
          advice.summary,
        );
    dialog.open({
      title: keepStrategy ? "Apply the change only" : "Apply the advice",
      body: what,
      confirm: keepStrategy ? "Apply change" : "Apply advice",
      onConfirm: (reason) =>
        post(boot.api + "apply-advice", keepStrategy ? { advice: advice.id, keepStrategy: true, reason } : { advice: advice.id, reason }),
    });
  }

  function show(box, a) {
    advice = a;
    const rows = a.candidates.map((c, i) =>
      h(
        "tr",
        {
          "data-testid": "advisor-row",
          class: i === a.recommended ? "advisor-recommended" : c.current ? "advisor-current" : null,
        },
        h("td", null, i === a.recommended ? "recommended" : c.current ? "current" : ""),
        h("td", { class: "mono" }, strategyText(c.strategy)),
        h("td", { class: "num" }, seconds(c.durationSeconds)),
        h("td", { class: "num" }, c.minAvailable == null ? "—" : String(c.minAvailable)),
        h("td", { class: "num" }, String(c.gpusBorrowed)),
        h("td", null, c.feasible ? "yes" : h("span", { class: "warn" }, "no")),
        h("td", null, c.why),
      ),
    );
    const canApply = boot.canOperate;
    mount(
      box,
      h("p", { "data-testid": "advisor-floor" }, h("b", null, `Floor: ${a.floor.groups} groups. `), a.floor.why),
      h("p", { "data-testid": "advisor-summary" }, h("b", null, "Advice: "), a.summary),
      h(
        "table",
        { class: "table table-compact" },
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            ["", "Strategy", "Duration", "Min available", "GPUs borrowed", "Keeps the floor", "Why"].map((t) => h("th", null, t)),
          ),
        ),
        h("tbody", null, rows),
      ),
      h(
        "div",
        { class: "controls-buttons" },
        h(
          "button",
          {
            class: "btn btn-primary",
            type: "button",
            "data-testid": "advisor-apply",
            disabled: !canApply || a.recommended == null,
            onclick: () => applyDialog(false),
          },
          "Apply advice…",
        ),
        h(
          "button",
          { class: "btn", type: "button", "data-testid": "advisor-apply-change-only", disabled: !canApply, onclick: () => applyDialog(true) },
          "Apply the change only…",
        ),
      ),
    );
  }

  async function advise(e) {
    e.preventDefault();
    const box = byId("advisor");
    mount(box, h("p", { class: "muted" }, "Advising…"));
    try {
      const body = { setImage: { role: byId("advisor-role").value, image: byId("advisor-image").value.trim() } };
      const floor = byId("advisor-floor").value.trim();
      if (floor !== "") body.floor = Number(floor);
      show(box, await runJob(box, body));
    } catch (err) {
      advice = null;
      mount(box, h("p", { class: "field-error" }, err.message));
    }
  }

  function start() {
    if (!enabled) return;
    byId("advisor-panel").hidden = false;
    const button = byId("advisor-form").querySelector("button[type=submit]");
    button.disabled = !boot.canOperate;
    if (!boot.canOperate) button.title = "View only: the advisor needs the operate permission.";
    byId("advisor-form").addEventListener("submit", advise);
  }

  function render(model) {
    if (!enabled) return;
    const names = roleNames(model.state, model.manifest);
    if (!rolesChanged(JSON.stringify(names))) return;
    const sel = byId("advisor-role");
    const keep = sel.value;
    mount(
      sel,
      names.map((n) => h("option", { value: n, selected: n === keep }, n)),
    );
  }

  return { start, render };
}
