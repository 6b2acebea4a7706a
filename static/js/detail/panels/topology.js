// Topology panel: the canvas of groups x role instances (static/js/topology.js), its legend, and
// the clicked cell: its Kubernetes state beside its serving gate (each gate reached, failed or
// awaited) and its pods (node, phase, readiness gates, image, restarts, in-flight requests), with a
// "Kill…" button per pod on the simulated cluster.

import { api } from "../../lib/api.js";
import { byId, h, memo, mount } from "../../lib/dom.js";
import { STATE_GLYPHS, Topology } from "../../topology.js";
import { revisionColour } from "../../lib/colors.js";
import { shortDigest } from "../../lib/format.js";
import { revLabel } from "../common.js";
import { GATES } from "./release.js";

// The instance states of build_view, in legend order, with their swatch class.
const STATES = [
  ["Ready", "st-ready"],
  ["Creating", "st-creating"],
  ["Pending", "st-pending"],
  ["Updating", "st-updating"],
  ["Draining", "st-draining"],
  ["Failed", "st-failed"],
  ["Deleting", "st-deleting"],
];

export function createTopologyPanel({ boot, onKillPod }) {
  const box = byId("cell-detail");
  const topo = new Topology(byId("topology"), byId("tip"), (hit) => loadPods(hit));
  const legendChanged = memo();
  let selected = null;
  let shown = null; // what the cell panel shows of the selected instance (shownAs)
  let revNumbers = new Map();

  // What the panel shows of an instance: when a later state changes any of it (its group was
  // replaced: new pods on a new revision; its state or gate moved), the panel is shown again for
  // the instance now in that cell and its pods are read again, instead of keeping the old ones.
  const shownAs = (inst) =>
    inst
      ? JSON.stringify([inst.revision, inst.state, inst.podUids, inst.gate, inst.gateFailed, inst.readyPods, inst.draining, inst.digest])
      : "no instance";

  function renderLegend(state) {
    const used = new Map();
    const counts = {};
    for (const inst of state.instances) {
      used.set(inst.revision, (used.get(inst.revision) || 0) + 1);
      counts[inst.state] = (counts[inst.state] || 0) + 1;
    }
    const revs = (state.revisions || []).filter((r) => used.has(r.hash) || r.hash === state.updateRevision);
    const surge = state.instances.filter((i) => i.surge).length;
    const tag = (r) => (r.hash === state.updateRevision ? " update" : r.hash === state.currentRevision ? " current" : "");
    mount(
      byId("legend"),
      h(
        "div",
        { class: "lg-row" },
        revs.map((r) =>
          h(
            "span",
            { class: "lg" },
            h("i", { class: "sw", style: { background: revisionColour(r.hash) } }),
            `#${r.number}${tag(r)} `,
            h("span", { class: "muted" }, used.get(r.hash) || 0),
          ),
        ),
      ),
      h(
        "div",
        { class: "lg-row" },
        STATES.map(([name, cls]) =>
          h(
            "span",
            { class: counts[name] ? "lg" : "lg lg-zero" },
            h("i", { class: "sw " + cls }, h("b", { "aria-hidden": "true" }, STATE_GLYPHS[name])),
            name + " ",
            h("span", { class: "muted" }, counts[name] || 0),
          ),
        ),
        h(
          "span",
          { class: surge ? "lg" : "lg lg-zero" },
          h("i", { class: "sw st-surge" }, h("b", { "aria-hidden": "true" }, "S")),
          "Surge ",
          h("span", { class: "muted" }, surge),
        ),
      ),
    );
    byId("topo-sub").textContent = `${state.spec.replicas} groups · ${state.instances.length} role instances`;
  }

  // The instance's serving gates in order: reached (with the cluster time), failed, or not yet.
  function gateTimes(inst) {
    if (!inst || !inst.gate) return null;
    const times = inst.gateTimes || {};
    const waiting = inst.gateWaiting;
    return h(
      "div",
      { class: "gate-times", "data-testid": "cell-gates" },
      GATES.map((g) => {
        if (inst.gateFailed === g) {
          const why = waiting && waiting.reason ? `: ${waiting.reason}` : "";
          return h("span", { class: "failed", dataset: { gate: g } }, `✗ ${g}${why}`);
        }
        if (times[g] != null) {
          const at = times[g] > 1e9 ? new Date(times[g] * 1000).toLocaleTimeString() : `${Math.round(times[g])} s`;
          return h("span", { class: "done", dataset: { gate: g }, title: `reached at ${at}` }, `✓ ${g}`);
        }
        const since = waiting && waiting.gate === g && waiting.since != null ? ` (waiting since ${new Date(waiting.since * 1000).toLocaleTimeString()})` : "";
        return h("span", { class: "muted", dataset: { gate: g } }, `· ${g}${since}`);
      }),
    );
  }

  function cellHead(hit) {
    const inst = hit.instance;
    return [
      h(
        "div",
        { class: "cell-head" },
        h("b", null, `group ${hit.group} · ${hit.role} ${hit.ordinal}`),
        " ",
        inst
          ? [
              h("span", { class: "badge", title: "Kubernetes state" }, inst.state),
              " ",
              inst.gate
                ? [
                    h(
                      "span",
                      {
                        class: "badge " + (inst.gateFailed ? "badge-error" : inst.gate === "Serving" ? "badge-ok" : "badge-info"),
                        title: "Highest serving gate reached",
                        "data-testid": "cell-gate",
                      },
                      inst.gateFailed ? `failed at ${inst.gateFailed}` : `gate ${inst.gate}`,
                    ),
                    " ",
                  ]
                : null,
              revLabel(inst.revision, revNumbers),
              inst.surge ? [" ", h("span", { class: "badge badge-info" }, "surge")] : null,
            ]
          : h("span", { class: "muted" }, "no instance"),
      ),
      inst && inst.address
        ? h("div", { class: "muted", title: "Entry address: what the instance's workers get as ENTRY_ADDRESS", "data-testid": "cell-address" }, inst.address)
        : null,
      inst && inst.digest
        ? h(
            "div",
            { class: "muted mono", title: `Image digest the entry pod runs (status imageID): ${inst.digest}`, "data-testid": "cell-digest" },
            shortDigest(inst.digest),
          )
        : null,
      gateTimes(inst),
    ];
  }

  function podRow(p, canKill) {
    const gates = p.readinessGates || [];
    const images = (p.containers || []).map((c) => c.image);
    const lines = (values) => values.flatMap((v, i) => (i ? [h("br"), v] : [v]));
    return h(
      "tr",
      null,
      h("td", { class: "mono" }, p.name, p.entry ? [" ", h("span", { class: "badge" }, "entry")] : null),
      h("td", { class: "mono" }, p.node || "—"),
      h(
        "td",
        null,
        p.phase || "—",
        p.deleting ? [" ", h("span", { class: "badge badge-error" }, "deleting")] : null,
        p.draining ? [" ", h("span", { class: "badge badge-warn" }, "draining")] : null,
      ),
      h("td", null, p.ready ? h("span", { class: "ok" }, "Ready") : h("span", { class: "warn" }, "not ready")),
      h(
        "td",
        null,
        gates.length ? lines(gates.map((g) => `${g.type}=${g.status || "unset"}`)) : h("span", { class: "muted" }, "none"),
      ),
      h(
        "td",
        { class: "mono" },
        lines(images.map((image) => h("span", { class: "long-value", title: image }, image))),
      ),
      h("td", { class: "num" }, p.restarts),
      h("td", { class: "num" }, p.inFlight),
      h(
        "td",
        null,
        h(
          "button",
          {
            class: "btn btn-quiet btn-xs",
            type: "button",
            "data-testid": "pod-open",
            "aria-label": `Events and log of ${p.name}`,
            onclick: () => showPod(p.name),
          },
          "Events & log",
        ),
      ),
      canKill
        ? h(
            "td",
            null,
            h("button", { class: "btn btn-quiet btn-xs", type: "button", onclick: () => onKillPod(p.name) }, "Kill…"),
          )
        : null,
    );
  }

  // The pod's events (scheduled, pulled, started, probe failures, back-off, kills) and the last
  // lines of its log, under the pod table (GET /api/pods/{ns}/{pod}/events/ and .../log/). While
  // "Follow" is on, both are read again every FOLLOW_MS and updated in place (the buttons, the
  // focus and a log scrolled up by the reader stay where they are).
  const FOLLOW_MS = 5000;
  let podShown = null;
  let follow = true;
  let followTimer = null;

  const when = (e) => (e.lastTimestamp ? new Date(e.lastTimestamp).toLocaleTimeString() : "");
  const logText = (log) => log.lines.map((l) => `${l.time ? l.time + " " : ""}${l.line}\n`).join("");

  function eventsView(events) {
    return events.length
      ? h(
          "div",
          { class: "table-scroll" },
          h(
            "table",
            { class: "table compact", "data-testid": "pod-events" },
            h("thead", null, h("tr", null, ["Last seen", "Type", "Reason", "Message", "Count", "From"].map((t) => h("th", { scope: "col" }, t)))),
            h(
              "tbody",
              null,
              events.map((e) =>
                h(
                  "tr",
                  { class: e.type === "Warning" ? "event-warning" : null },
                  h("td", null, when(e)),
                  h("td", null, e.type === "Warning" ? h("span", { class: "badge badge-error" }, "Warning") : e.type),
                  h("td", { class: "mono" }, e.reason),
                  h("td", null, e.message),
                  h("td", { class: "num" }, e.count),
                  h("td", { class: "muted" }, e.source),
                ),
              ),
            ),
          ),
        )
      : h("p", { class: "muted" }, "No events.");
  }

  function logHead(log) {
    return [
      `Log (last ${log.lines.length} lines)`,
      log.masked ? h("span", { class: "muted" }, " · secret-looking values masked (you may not operate here)") : null,
    ];
  }

  function logView(log, name) {
    return log.lines.length
      ? h(
          "pre",
          {
            class: "pod-log",
            tabindex: "0",
            "data-testid": "pod-log",
            "aria-label": `Log of ${name}`,
            // Bounded in the panel: long lines wrap, the log scrolls (no element past the panel's edge).
            style: { maxHeight: "22rem", overflow: "auto", whiteSpace: "pre-wrap", overflowWrap: "anywhere", margin: "0" },
          },
          logText(log),
        )
      : h("p", { class: "muted" }, "No log lines.");
  }

  const podBase = (name) => `/api/pods/${encodeURIComponent(boot.namespace)}/${encodeURIComponent(name)}/`;

  function schedule(name) {
    clearTimeout(followTimer);
    if (follow && podShown === name) followTimer = setTimeout(() => refreshPod(name), FOLLOW_MS);
  }

  // Read both again and update what is shown, in place.
  async function refreshPod(name) {
    if (podShown !== name || document.hidden) return schedule(name);
    try {
      const base = podBase(name);
      const [events, log] = await Promise.all([api(base + "events/"), api(base + "log/?tail=200")]);
      if (podShown !== name) return;
      mount(byId("pod-events-box"), eventsView(events));
      mount(byId("pod-log-head"), ...logHead(log));
      const pre = byId("pod-log-box").querySelector("pre");
      if (pre && log.lines.length) {
        const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
        pre.textContent = logText(log);
        if (atEnd) pre.scrollTop = pre.scrollHeight;
      } else {
        mount(byId("pod-log-box"), logView(log, name));
      }
    } catch {
      // The pod is gone (replaced) or the server did not answer: the next read says.
    }
    schedule(name);
  }

  async function showPod(name) {
    podShown = name;
    clearTimeout(followTimer);
    const where = byId("pod-detail");
    if (!where) return;
    const base = podBase(name);
    mount(where, h("p", { class: "muted" }, `Loading the events and log of ${name}…`));
    try {
      const [events, log] = await Promise.all([api(base + "events/"), api(base + "log/?tail=200")]);
      if (podShown !== name) return;
      mount(
        where,
        h(
          "div",
          { class: "pod-detail-head" },
          h("h3", { class: "panel-sub" }, `Pod ${name}`),
          " ",
          h("button", { class: "btn btn-quiet btn-xs", type: "button", onclick: () => refreshPod(name) }, "Refresh"),
          " ",
          h(
            "label",
            { class: "muted" },
            h("input", {
              type: "checkbox",
              checked: follow,
              "data-testid": "pod-follow",
              onchange: (e) => {
                follow = e.target.checked;
                schedule(name);
              },
            }),
            " Follow",
          ),
          " ",
          h(
            "button",
            {
              class: "btn btn-quiet btn-xs",
              type: "button",
              onclick: () => {
                podShown = null;
                clearTimeout(followTimer);
                mount(where);
              },
            },
            "Close",
          ),
        ),
        h("h4", { class: "panel-sub" }, "Events"),
        h("div", { id: "pod-events-box" }, eventsView(events)),
        h("h4", { class: "panel-sub", id: "pod-log-head" }, ...logHead(log)),
        h("div", { id: "pod-log-box" }, logView(log, name)),
      );
      const pre = where.querySelector("pre");
      if (pre) pre.scrollTop = pre.scrollHeight; // the newest lines, as `kubectl logs` ends
      schedule(name);
    } catch (err) {
      if (podShown === name) mount(where, h("p", { class: "muted" }, err.message));
    }
  }

  async function loadPods(hit) {
    selected = hit;
    shown = shownAs(hit.instance);
    const status = h("p", { class: "muted" }, "Loading pods…");
    mount(box, cellHead(hit), status);
    try {
      const query = `group=${hit.group}&role=${encodeURIComponent(hit.role)}&ordinal=${hit.ordinal}`;
      const pods = await api(`${boot.api}pods/?${query}`);
      if (selected !== hit) return;
      const canKill = boot.backend === "sim" && boot.canOperate;
      const heads = ["Pod", "Node", "Phase", "Ready", "Readiness gates", "Image", "Restarts", "In flight"];
      status.replaceWith(
        pods.length
          ? h(
              "div",
              { class: "table-scroll" },
              h(
              "table",
              { class: "table compact" },
              h(
                "thead",
                null,
                h(
                  "tr",
                  null,
                  heads.map((t) => h("th", { class: t === "Restarts" || t === "In flight" ? "num" : null }, t)),
                  h("th", null, "Events"),
                  canKill ? h("th") : null,
                ),
              ),
              h(
                "tbody",
                null,
                pods.map((p) => podRow(p, canKill)),
              ),
              ),
            )
          : h("p", { class: "muted" }, "No pods."),
      );
      box.appendChild(h("div", { id: "pod-detail", class: "pod-detail", "data-testid": "pod-detail" }));
      if (podShown && pods.some((p) => p.name === podShown)) showPod(podShown);
    } catch (err) {
      status.textContent = err.message;
    }
  }

  function render(model) {
    revNumbers = model.revNumbers;
    topo.update(model.state, model.revNumbers);
    if (legendChanged(model.state)) renderLegend(model.state);
    if (selected) {
      const now = topo.byKey.get(selected.key) || null;
      if (shownAs(now) !== shown) loadPods({ ...selected, instance: now });
    }
  }

  return { render, topo };
}
