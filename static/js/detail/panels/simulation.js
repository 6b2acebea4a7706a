// Simulation (simulated cluster only): fail a node, add a node, kill a pod (from a topology cell's
// pod list), and preview a set-image on a simulated copy: its duration, the minimum of available
// groups against the budget floor, and a capacity chart. Nothing is applied by a preview.

import { ApiError, api, post } from "../../lib/api.js";
import { byId, h, memo, mount } from "../../lib/dom.js";
import { roleNames } from "../common.js";
import { chartConfig, chartLayout } from "./charts.js";

export function createSimulation({ boot, dialog }) {
  const enabled = boot.backend === "sim";
  const rolesChanged = memo();
  let model = null;

  async function loadNodes() {
    try {
      const nodes = await api("/api/sim/nodes/");
      mount(
        byId("sim-node"),
        nodes.map((n) =>
          h(
            "option",
            { value: n.name, disabled: !!n.failed },
            `${n.name} · ${n.failed ? "failed" : `${n.gpusUsed ?? "?"}/${n.gpus} GPUs, ${n.pods ?? 0} pods`}`,
          ),
        ),
      );
    } catch {
      // shown when an action fails
    }
  }

  function failNode() {
    const node = byId("sim-node").value;
    dialog.open({
      title: "Fail a node (simulation)",
      body: h("p", null, "Node ", h("b", null, node), " stops: its pods are lost and recovery starts."),
      confirm: "Fail node",
      danger: true,
      onConfirm: (reason) => post("/api/sim/fail-node/", { node, reason }),
    });
  }

  function addNode() {
    const gpus = Number(byId("sim-gpus").value) || 8;
    dialog.open({
      title: "Add a node (simulation)",
      body: h("p", null, "Adds a node with ", h("b", null, gpus), " GPUs to the simulated cluster."),
      confirm: "Add node",
      onConfirm: async (reason) => {
        const result = await post("/api/sim/add-node/", { gpus, reason });
        loadNodes();
        return result;
      },
    });
  }

  // From the pod list of a topology cell.
  function killPod(pod) {
    dialog.open({
      title: "Kill a pod (simulation)",
      body: h("p", null, "Deletes pod ", h("b", { class: "mono" }, pod), " as if it crashed; the controller recovers it."),
      confirm: "Kill pod",
      danger: true,
      onConfirm: (reason) => post("/api/sim/kill-pod/", { namespace: boot.namespace, pod, reason }),
    });
  }

  function drawPreviewChart(p) {
    if (!window.Plotly || !p.capacity || !p.capacity.length) return;
    const cap = p.capacity.slice();
    const end = Math.max(p.simulatedSeconds || 0, p.durationSeconds || 0, cap[cap.length - 1][0]);
    cap.push([end, cap[cap.length - 1][1]]);
    const traces = [
      {
        x: cap.map((c) => c[0]),
        y: cap.map((c) => c[1]),
        mode: "lines",
        line: { shape: "hv", color: "#1f883d", width: 2 },
        fill: "tozeroy",
        fillcolor: "rgba(31,136,61,0.08)",
        name: "available groups",
      },
    ];
    if (p.floor != null) {
      traces.push({
        x: [0, end],
        y: [p.floor, p.floor],
        mode: "lines",
        line: { dash: "dash", color: "#cf222e", width: 1.5 },
        name: "budget floor",
      });
    }
    window.Plotly.react(
      "chart-preview",
      traces,
      {
        ...chartLayout("Simulated available capacity", "groups", { rangemode: "tozero" }),
        xaxis: { title: { text: "seconds after apply" }, gridcolor: "#eef0f3" },
        height: 200,
      },
      chartConfig,
    );
  }

  // A preview runs in a worker: POST answers 202 with a job, polled until it is done (its progress
  // shown meanwhile) or failed (its error names the field, like any API error).
  async function runPreview(box, body) {
    let job = await post(boot.api + "preview/", body);
    while (job.status === "queued" || job.status === "running") {
      const pr = job.progress || {};
      const text =
        job.status === "queued"
          ? "Simulating… (queued)"
          : `Simulating… ${pr.phase || ""} ${Math.round(pr.simulatedSeconds || 0)} simulated s` +
            (pr.limitSeconds ? ` (${Math.round(pr.elapsedSeconds || 0)} of at most ${pr.limitSeconds} s)` : "");
      mount(box, h("p", { class: "muted", "data-testid": "preview-progress" }, text));
      await new Promise((resolve) => setTimeout(resolve, 500));
      job = await api(job.url);
    }
    if (job.status === "error") throw new ApiError(400, job.error);
    return job.result;
  }

  async function preview(e) {
    e.preventDefault();
    const box = byId("preview");
    mount(box, h("p", { class: "muted" }, "Simulating…"));
    try {
      const body = { setImage: { role: byId("preview-role").value, image: byId("preview-image").value.trim() } };
      const p = await runPreview(box, body);
      const duration =
        p.durationSeconds != null
          ? Math.round(p.durationSeconds) + " s"
          : `not converged in ${Math.round(p.simulatedSeconds || 0)} s`;
      const reasons = (p.blockedReasons || []).slice(0, 5);
      const fact = (label, value, props) => h("div", null, h("dt", null, label), h("dd", props || { class: "num" }, value));
      mount(
        box,
        h(
          "dl",
          { class: "facts facts-small" },
          fact("Duration", duration, { class: "num", "data-testid": "preview-duration" }),
          fact("Min available", `${p.minAvailable ?? "—"} / ${p.desired ?? model.state.spec.replicas}`),
          fact("Budget floor", p.floor ?? "—"),
          fact("Converges", p.converged ? "yes" : h("span", { class: "warn" }, "no"), {}),
        ),
        h("div", { class: "chart chart-small", id: "chart-preview" }),
        reasons.length
          ? [
              h("div", { class: "panel-subtitle" }, "It would wait for"),
              h(
                "ul",
                { class: "plain-list" },
                reasons.map((r) => h("li", null, r)),
              ),
            ]
          : null,
      );
      drawPreviewChart(p);
    } catch (err) {
      mount(box, h("p", { class: "field-error" }, err.message));
    }
  }

  function start() {
    if (!enabled) return;
    byId("sim-panel").hidden = false;
    const buttons = { "fail-node": failNode, "add-node": addNode };
    for (const b of byId("sim-panel").querySelectorAll("[data-action]")) {
      b.disabled = !boot.canOperate;
      if (!boot.canOperate) b.title = "View only: needs the operate permission.";
      b.addEventListener("click", () => {
        const fn = buttons[b.dataset.action];
        if (fn && !b.disabled) fn();
      });
    }
    // A preview costs the worker seconds of CPU: operators only (the API refuses viewers too).
    const previewButton = byId("preview-form").querySelector("button[type=submit]");
    previewButton.disabled = !boot.canOperate;
    if (!boot.canOperate) previewButton.title = "View only: previews need the operate permission.";
    byId("preview-form").addEventListener("submit", preview);
    loadNodes();
  }

  function render(next) {
    model = next;
    if (!enabled) return;
    const names = roleNames(next.state, next.manifest);
    if (!rolesChanged(JSON.stringify(names))) return;
    const sel = byId("preview-role");
    const keep = sel.value;
    mount(
      sel,
      names.map((n) => h("option", { value: n, selected: n === keep }, n)),
    );
  }

  return { start, render, killPod };
}
