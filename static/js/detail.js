// Detail page of one ModelServing: live state over the websocket, controls through the REST API.
//
// The server renders the first state into the page (no blank screen while the socket opens);
// the websocket then sends a full snapshot on connect and coalesced updates (at most ~4/s). On a
// lost connection the page says so (banner + indicator, content dimmed) and reconnects with a
// growing back-off; the snapshot on reconnect makes it current again.
(function () {
  "use strict";

  const boot = JSON.parse(document.getElementById("boot").textContent);
  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  const { Topology, colourFor } = window.RolloutTopology;

  let state = JSON.parse($("initial-state").textContent);
  let manifest = null;
  let lastSpecSig = null;
  let revNumbers = new Map();

  // --- API ------------------------------------------------------------------------------------
  function csrf() {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  async function api(path, { method = "GET", body } = {}) {
    const resp = await fetch(path, {
      method,
      credentials: "same-origin",
      headers: { Accept: "application/json", ...(body !== undefined ? { "Content-Type": "application/json", "X-CSRFToken": csrf() } : {}) },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    let data = null;
    try { data = await resp.json(); } catch (e) { /* empty body */ }
    if (!resp.ok) {
      const err = new Error(errorText(resp.status, data));
      err.status = resp.status;
      err.data = data;
      throw err;
    }
    return data;
  }

  function errorText(status, data) {
    if (status === 403) return (data && data.detail) || "Permission denied: your account may not do this.";
    if (status === 401) return "You are signed out. Sign in again.";
    if (data && typeof data === "object") {
      return Object.entries(data).map(([k, v]) => (k === "detail" || k === "non_field_errors" ? "" : k + ": ") + (Array.isArray(v) ? v.join(" ") : typeof v === "object" ? JSON.stringify(v) : v)).join("\n");
    }
    return "Request failed (HTTP " + status + ")";
  }

  // --- Helpers --------------------------------------------------------------------------------
  function partitionOf(st) {
    const p = st.spec.partition;
    if (typeof p === "number") return p;
    if (p && typeof p === "object") return Math.max(0, ...Object.values(p).map(Number).filter((n) => !isNaN(n)));
    return Number(p) || 0;
  }

  function revLabel(hash) {
    if (!hash) return "—";
    const n = revNumbers.get(hash);
    return (n ? `<span class="rev-dot" style="background:${colourFor(n)}"></span>#${n} ` : "") + `<span class="mono">${esc(hash)}</span>`;
  }

  function fmtAge(seconds) {
    if (seconds == null || isNaN(seconds)) return "—";
    seconds = Math.max(0, seconds);
    if (seconds < 90) return Math.round(seconds) + "s";
    if (seconds < 5400) return Math.round(seconds / 60) + "m";
    if (seconds < 129600) return Math.round(seconds / 3600) + "h";
    return Math.round(seconds / 86400) + "d";
  }

  function ranges(nums) {
    // [0,1,2,5,7,8] -> "0–2, 5, 7–8"
    const s = [...new Set(nums)].sort((a, b) => a - b);
    const out = [];
    for (let i = 0; i < s.length; i++) {
      let j = i;
      while (j + 1 < s.length && s[j + 1] === s[j] + 1) j++;
      out.push(j > i ? `${s[i]}–${s[j]}` : String(s[i]));
      i = j;
    }
    return out.join(", ");
  }

  // --- Header and controls --------------------------------------------------------------------
  function renderHeader() {
    const phase = $("phase");
    phase.textContent = state.phase;
    phase.className = "phase phase-" + String(state.phase).toLowerCase();
    $("paused-banner").hidden = !state.spec.paused;
    const cur = state.currentRevision, upd = state.updateRevision;
    $("fact-rev").innerHTML = cur && upd && cur !== upd ? `${revLabel(cur)} <span class="arrow">→</span> ${revLabel(upd)}` : revLabel(upd || cur);
    const c = state.counts || {};
    $("fact-updated").textContent = `${c.updatedReplicas ?? "—"} / ${state.spec.replicas}`;
    $("fact-available").textContent = `${c.availableReplicas ?? "—"} / ${state.spec.replicas}`;
    $("fact-partition").textContent = typeof state.spec.partition === "object" ? JSON.stringify(state.spec.partition) : state.spec.partition;
    $("fact-strategy").textContent = state.strategyType;
    $("fact-time").textContent = state.time == null ? "—" : state.time > 1e9 ? new Date(state.time * 1000).toLocaleTimeString() : Math.round(state.time) + " s";
    document.title = `${state.phase} · ${boot.namespace}/${boot.name} · RolloutUI`;
  }

  // Whether each control applies now, and if not, why (shown next to the disabled button).
  function controlStatus() {
    const p = partitionOf(state);
    const paused = !!state.spec.paused;
    const revs = state.revisions || [];
    const view = "View only: your account can watch but not operate (needs the operate permission).";
    const s = {
      pause: paused ? "Already paused." : null,
      resume: paused ? null : "Not paused: nothing to resume.",
      promote: p > 0 ? null : "Partition is 0: every group is already eligible for the update.",
      "promote-full": p > 0 || paused ? null : "Partition is 0 and the rollout is not paused.",
      rollback: revs.length > 1 ? null : "Only one revision exists: nothing to roll back to.",
      "set-image": null,
    };
    if (!boot.canOperate) for (const k of Object.keys(s)) s[k] = view;
    return s;
  }

  function renderControls() {
    const s = controlStatus();
    const why = [];
    document.querySelectorAll("#controls [data-action]").forEach((b) => {
      const reason = s[b.dataset.action];
      b.disabled = !!reason;
      b.title = reason || "";
      if (reason && boot.canOperate) why.push(`<span><b>${esc(b.textContent.replace("…", ""))}</b>: ${esc(reason)}</span>`);
    });
    $("controls-why").innerHTML = boot.canOperate ? why.join("") : `<span class="viewonly">${esc(s.pause)}</span>`;
    const p = partitionOf(state);
    document.querySelector('[data-action="promote"]').textContent = p > 0 ? `Promote one step (${p} → ${p - 1})` : "Promote one step";
  }

  // --- Dialog ---------------------------------------------------------------------------------
  const dialog = $("dialog");
  let onConfirm = null;

  function openDialog(title, bodyHtml, confirmLabel, handler, { danger = false } = {}) {
    $("dialog-title").textContent = title;
    $("dialog-body").innerHTML = bodyHtml;
    $("dialog-reason").value = "";
    $("dialog-error").textContent = "";
    const btn = $("dialog-confirm");
    btn.textContent = confirmLabel;
    btn.className = "btn " + (danger ? "btn-danger-solid" : "btn-primary");
    btn.disabled = true;
    onConfirm = handler;
    dialog.showModal();
    $("dialog-reason").focus();
  }

  $("dialog-reason").addEventListener("input", () => { $("dialog-confirm").disabled = !$("dialog-reason").value.trim(); });
  $("dialog-cancel").addEventListener("click", () => dialog.close());
  $("dialog-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const reason = $("dialog-reason").value.trim();
    if (!reason) { $("dialog-error").textContent = "A reason is required."; return; }
    $("dialog-confirm").disabled = true;
    try {
      const result = await onConfirm(reason);
      dialog.close();
      if (result && result.state && !(state && result.state.time <= state.time)) applyState(result.state);
      loadAudit();
      toast(result && result.audit ? `${result.audit.action} recorded (${result.audit.fromRevision || "—"} → ${result.audit.toRevision || "—"})` : "Done");
    } catch (err) {
      $("dialog-error").textContent = err.message;
      $("dialog-confirm").disabled = false;
    }
  });

  function toast(text) {
    let t = document.querySelector(".toast");
    if (!t) { t = document.createElement("div"); t.className = "toast"; t.setAttribute("role", "status"); document.body.appendChild(t); }
    t.textContent = text;
    t.classList.add("show");
    clearTimeout(toast.timer);
    toast.timer = setTimeout(() => t.classList.remove("show"), 3500);
  }

  const ms = boot.api;
  const actions = {
    pause: () => openDialog("Pause the rollout", `<p>Stops rollout progress on <b>${esc(boot.namespace)}/${esc(boot.name)}</b>: no update creates, deletes or drains start. Recovery of failed pods continues; work already started finishes.</p>`, "Pause", (reason) => api(ms + "pause", { method: "POST", body: { reason } })),
    resume: () => openDialog("Resume the rollout", `<p>The rollout continues from where it stopped.</p>`, "Resume", (reason) => api(ms + "resume", { method: "POST", body: { reason } })),
    promote: () => {
      const p = partitionOf(state);
      openDialog("Promote one step", `<p>Lowers the partition from <b>${p}</b> to <b>${p - 1}</b>: group ${p - 1} becomes eligible for revision ${revLabel(state.updateRevision)}.</p>
        <label class="field"><span class="field-label">Or lower it straight to</span><input type="number" id="promote-to" min="0" max="${p - 1}" placeholder="${p - 1}"></label>`,
        "Promote", (reason) => {
          const v = $("promote-to").value.trim();
          return api(ms + "promote", { method: "POST", body: v === "" ? { reason } : { reason, partition: Number(v) } });
        });
    },
    "promote-full": () => openDialog("Promote fully", `<p>Sets the partition to <b>0</b>${state.spec.paused ? " and <b>resumes</b> the paused rollout" : ""}: every group moves to revision ${revLabel(state.updateRevision)}, within the unavailability budget.</p>`, "Promote fully", (reason) => api(ms + "promote", { method: "POST", body: { reason, full: true } })),
    rollback: (preset) => {
      const revs = (state.revisions || []).filter((r) => r.readable !== false);
      const opts = revs.slice().reverse().map((r) => `<option value="${r.number}" ${r.hash === state.updateRevision ? "disabled" : ""} ${preset === r.number ? "selected" : ""}>#${r.number} ${esc(r.hash)}${r.hash === state.updateRevision ? " (current target)" : ""}${r.changeCause ? " — " + esc(r.changeCause) : ""}</option>`).join("");
      openDialog("Roll back", `<p>Writes the chosen revision's versioned fields (templates, images) into the spec and keeps runtime fields (replicas, budgets, partition). It then rolls out like any change, as a new revision number.</p>
        <label class="field"><span class="field-label">To revision</span><select id="rollback-to" data-testid="rollback-to">${opts}</select></label>`,
        "Roll back", (reason) => api(ms + "rollback", { method: "POST", body: { reason, toRevision: Number($("rollback-to").value) } }), { danger: true });
    },
    "set-image": () => {
      const roles = roleNames();
      openDialog("Set the image of a role", `<p>Changes the container image in the role's entry and worker templates. This makes a new revision and starts a rollout.</p>
        <div class="form-row"><label class="field"><span class="field-label">Role</span><select id="si-role" data-testid="si-role">${roles.map((r) => `<option>${esc(r)}</option>`).join("")}</select></label>
        <label class="field"><span class="field-label">Container (optional)</span><input type="text" id="si-container" placeholder="first container"></label></div>
        <label class="field"><span class="field-label">Image</span><input type="text" id="si-image" data-testid="si-image" placeholder="${esc(currentImage(roles[0]) || "registry/engine:tag")}"></label>
        <p class="muted" id="si-current"></p>`,
        "Set image", (reason) => {
          const body = { reason, role: $("si-role").value, image: $("si-image").value.trim() };
          if ($("si-container").value.trim()) body.container = $("si-container").value.trim();
          return api(ms + "set-image", { method: "POST", body });
        });
      const showCurrent = () => { const img = currentImage($("si-role").value); $("si-current").textContent = img ? "Now: " + img : ""; };
      $("si-role").addEventListener("change", showCurrent);
      showCurrent();
    },
    "fail-node": () => {
      const node = $("sim-node").value;
      openDialog("Fail a node (simulation)", `<p>Node <b>${esc(node)}</b> stops: its pods are lost and recovery starts.</p>`, "Fail node", (reason) => api("/api/sim/fail-node/", { method: "POST", body: { node, reason } }), { danger: true });
    },
    "add-node": () => {
      const gpus = Number($("sim-gpus").value) || 8;
      openDialog("Add a node (simulation)", `<p>Adds a node with <b>${gpus}</b> GPUs to the simulated cluster.</p>`, "Add node", (reason) => api("/api/sim/add-node/", { method: "POST", body: { gpus, reason } }).then((r) => { loadNodes(); return r; }));
    },
  };

  function currentImage(role) {
    const roles = manifest && manifest.spec && manifest.spec.template ? manifest.spec.template.roles || [] : [];
    const r = roles.find((x) => x.name === role);
    const c = r && r.entryTemplate && r.entryTemplate.spec && (r.entryTemplate.spec.containers || [])[0];
    return c ? c.image : null;
  }

  document.addEventListener("click", (e) => {
    const b = e.target.closest("[data-action]");
    if (!b || b.disabled) return;
    const fn = actions[b.dataset.action];
    if (fn) fn(b.dataset.revision ? Number(b.dataset.revision) : undefined);
  });

  // --- Topology -------------------------------------------------------------------------------
  const topo = new Topology($("topology"), $("tip"), (hit) => loadPods(hit));
  let selectedCell = null;

  function renderLegend() {
    const used = new Map();
    for (const inst of state.instances) used.set(inst.revision, (used.get(inst.revision) || 0) + 1);
    const revs = (state.revisions || []).filter((r) => used.has(r.hash) || r.hash === state.updateRevision);
    const revHtml = revs.map((r) => `<span class="lg"><i class="sw" style="background:${colourFor(r.number)}"></i>#${r.number}${r.hash === state.updateRevision ? " update" : r.hash === state.currentRevision ? " current" : ""} <span class="muted">${used.get(r.hash) || 0}</span></span>`).join("");
    const states = [["Ready", "st-ready"], ["Creating", "st-creating"], ["Pending", "st-pending"], ["Updating", "st-updating"], ["Draining", "st-draining"], ["Failed", "st-failed"], ["Deleting", "st-deleting"]];
    const counts = {};
    for (const inst of state.instances) counts[inst.state] = (counts[inst.state] || 0) + 1;
    const stHtml = states.map(([n, cls]) => `<span class="lg ${counts[n] ? "" : "lg-zero"}"><i class="sw ${cls}"></i>${n} <span class="muted">${counts[n] || 0}</span></span>`).join("");
    const surge = state.instances.filter((i) => i.surge).length;
    $("legend").innerHTML = `<div class="lg-row">${revHtml}</div><div class="lg-row">${stHtml}<span class="lg ${surge ? "" : "lg-zero"}"><i class="sw st-surge"></i>Surge <span class="muted">${surge}</span></span></div>`;
    $("topo-sub").textContent = `${state.spec.replicas} groups · ${state.instances.length} role instances`;
  }

  async function loadPods(hit) {
    selectedCell = hit;
    const box = $("cell-detail");
    const inst = hit.instance;
    box.innerHTML = `<div class="cell-head"><b>group ${hit.group} · ${esc(hit.role)} ${hit.ordinal}</b> ${inst ? `<span class="badge">${esc(inst.state)}</span> ${revLabel(inst.revision)}${inst.surge ? ' <span class="badge badge-info">surge</span>' : ""}` : '<span class="muted">no instance</span>'}</div><p class="muted">Loading pods…</p>`;
    try {
      const pods = await api(`${ms}pods/?group=${hit.group}&role=${encodeURIComponent(hit.role)}&ordinal=${hit.ordinal}`);
      if (selectedCell !== hit) return;
      const canKill = boot.backend === "sim" && boot.canOperate;
      const rows = pods.map((p) => `<tr>
        <td class="mono">${esc(p.name)}${p.entry ? ' <span class="badge">entry</span>' : ""}</td>
        <td class="mono">${esc(p.node || "—")}</td>
        <td>${esc(p.phase || "—")}${p.deleting ? ' <span class="badge badge-error">deleting</span>' : ""}${p.draining ? ' <span class="badge badge-warn">draining</span>' : ""}</td>
        <td>${p.ready ? '<span class="ok">Ready</span>' : '<span class="warn">not ready</span>'}</td>
        <td>${p.readinessGates.length ? p.readinessGates.map((g) => `${esc(g.type)}=${esc(g.status || "unset")}`).join("<br>") : '<span class="muted">none</span>'}</td>
        <td class="mono">${p.containers.map((c) => esc(c.image)).join("<br>")}</td>
        <td class="num">${p.restarts}</td>
        <td class="num">${p.inFlight}</td>
        ${canKill ? `<td><button class="btn btn-quiet btn-xs" data-kill="${esc(p.name)}">Kill…</button></td>` : ""}
      </tr>`).join("");
      box.querySelector("p.muted").outerHTML = pods.length
        ? `<table class="table compact"><thead><tr><th>Pod</th><th>Node</th><th>Phase</th><th>Ready</th><th>Readiness gates</th><th>Image</th><th class="num">Restarts</th><th class="num">In flight</th>${canKill ? "<th></th>" : ""}</tr></thead><tbody>${rows}</tbody></table>`
        : '<p class="muted">No pods.</p>';
    } catch (err) {
      box.querySelector("p.muted").textContent = err.message;
    }
  }

  $("cell-detail").addEventListener("click", (e) => {
    const b = e.target.closest("[data-kill]");
    if (!b) return;
    const pod = b.dataset.kill;
    openDialog("Kill a pod (simulation)", `<p>Deletes pod <b class="mono">${esc(pod)}</b> as if it crashed; the controller recovers it.</p>`, "Kill pod",
      (reason) => api("/api/sim/kill-pod/", { method: "POST", body: { namespace: boot.namespace, pod, reason } }), { danger: true });
  });

  // --- Why it waits, drain, roles ---------------------------------------------------------------
  const KINDS = {
    paused: ["Paused", "The rollout is paused; no update step starts until it is resumed.", "info"],
    partition: ["Held by the partition", "Groups below the partition stay on the old revision until promoted.", "info"],
    budget: ["Waiting for the unavailability budget", "maxUnavailable instances are already down or updating; the next step starts when one becomes Ready.", "neutral"],
    drain: ["Draining requests", "Pods finish their in-flight requests before they are deleted.", "neutral"],
    skew: ["Held back by maxSkew", "A role is ahead of the slowest role by the allowed skew; it waits for the others to catch up.", "neutral"],
    dependency: ["Waiting for a dependency", "New capacity of a role it depends on must be Ready first.", "neutral"],
    unschedulable: ["Cannot schedule", "No node has room for the new pods; add capacity or allow more unavailability.", "stuck"],
    failing: ["Instances failing", "New instances fail to become Ready; the rollout does not continue past them.", "stuck"],
    revision: ["Revision unreadable", "A referenced revision cannot be parsed; work that depends on it is paused.", "stuck"],
    refused: ["Refused", "The requested change cannot be applied with this strategy.", "stuck"],
    deadlock: ["Deadlock", "The constraints cannot all be met; an operator must change a budget or surge.", "stuck"],
  };

  function renderWaits() {
    const blocked = state.blocked || [];
    if (!blocked.length) {
      $("waits").innerHTML = state.converged
        ? '<p class="calm">Nothing waits: every group runs the update revision and is Ready.</p>'
        : '<p class="calm">Nothing blocks the planner right now; the rollout is moving.</p>';
      return;
    }
    const byKind = new Map();
    for (const b of blocked) {
      const k = b.kind || "other";
      if (!byKind.has(k)) byKind.set(k, new Map());
      const reasons = byKind.get(k);
      if (!reasons.has(b.reason)) reasons.set(b.reason, { groups: [], roles: new Set() });
      const r = reasons.get(b.reason);
      if (b.group != null) r.groups.push(b.group);
      if (b.role) r.roles.add(b.role);
    }
    const order = ["unschedulable", "failing", "revision", "refused", "deadlock", "paused", "skew", "dependency", "budget", "drain", "partition"];
    const kinds = [...byKind.keys()].sort((a, b) => (order.indexOf(a) + 99) % 99 - (order.indexOf(b) + 99) % 99);
    $("waits").innerHTML = kinds.map((k) => {
      const [title, help, tone] = KINDS[k] || [k, "", "neutral"];
      const items = [...byKind.get(k).entries()].slice(0, 6).map(([reason, r]) => `<li>${esc(reason)}${r.groups.length ? ` <span class="muted">· group${r.groups.length > 1 ? "s" : ""} ${ranges(r.groups)}</span>` : ""}${r.roles.size ? ` <span class="muted">· ${[...r.roles].map(esc).join(", ")}</span>` : ""}</li>`).join("");
      const more = byKind.get(k).size > 6 ? `<li class="muted">and ${byKind.get(k).size - 6} more reasons</li>` : "";
      return `<div class="wait wait-${tone}"><div class="wait-title">${esc(title)}</div><div class="wait-help muted">${esc(help)}</div><ul>${items}${more}</ul></div>`;
    }).join("");
  }

  function renderDrain() {
    const d = state.drain || [];
    $("drain-sub").textContent = d.length ? `${d.length} pod${d.length > 1 ? "s" : ""}` : "";
    if (!d.length) { $("drain").innerHTML = '<p class="calm">No pod is draining.</p>'; return; }
    const rows = d.slice(0, 50).map((p) => {
      const total = p.secondsLeft + Math.max(0, state.time - p.since);
      const pct = total > 0 ? Math.round((100 * p.secondsLeft) / total) : 0;
      return `<tr><td class="mono">${esc(p.pod)}</td><td class="num">${p.inFlight}</td><td><div class="timeleft"><i style="width:${pct}%"></i></div> <span class="num">${p.secondsLeft.toFixed(0)}s</span></td></tr>`;
    }).join("");
    $("drain").innerHTML = `<table class="table compact"><thead><tr><th>Pod</th><th class="num">In flight</th><th>Time left</th></tr></thead><tbody>${rows}</tbody></table>${d.length > 50 ? `<p class="muted">and ${d.length - 50} more</p>` : ""}`;
  }

  function renderRoles() {
    const roles = state.roles || [];
    $("roles").innerHTML = `<table class="table compact"><thead><tr><th>Role</th><th class="num">Desired</th><th class="num">Ready</th><th class="num">Updated</th><th title="updated and Ready, over desired">Progress</th></tr></thead><tbody>${roles.map((r) => `<tr><td>${esc(r.name)}</td><td class="num">${r.desired}</td><td class="num">${r.ready}</td><td class="num">${r.updated}</td><td class="nowrap"><div class="bar bar-sm"><i class="bar-upd" style="width:${Math.round(100 * (r.progress || 0))}%"></i></div> <span class="num">${Math.round(100 * (r.progress || 0))}%</span></td></tr>`).join("")}</tbody></table>`;
  }

  // --- Charts -------------------------------------------------------------------------------
  // History since the page opened (no stored samples are served yet), extended with every state.
  const samples = [];
  let chartsDirty = true;
  const chartLayout = (title, ytitle, extra = {}) => ({
    title: { text: title, font: { size: 12, color: "#1f2328" }, x: 0.01, xanchor: "left" },
    margin: { l: 42, r: 10, t: 28, b: 30 }, height: 220,
    font: { family: "system-ui, sans-serif", size: 11, color: "#5b6470" },
    paper_bgcolor: "#fff", plot_bgcolor: "#fff",
    xaxis: { title: { text: isEpoch(state.time) ? "" : "cluster time (s)", standoff: 4 }, gridcolor: "#eef0f3", zeroline: false, ...(isEpoch(state.time) ? { type: "date", tickformat: "%H:%M:%S" } : {}) },
    yaxis: { title: { text: ytitle }, gridcolor: "#eef0f3", zeroline: false, ...extra },
    legend: { orientation: "h", y: -0.28, font: { size: 10 } }, showlegend: true,
  });
  const chartConfig = { displayModeBar: false, responsive: true, staticPlot: false };

  function maxSkew() {
    const coord = manifest && manifest.spec && manifest.spec.rolloutStrategy && manifest.spec.rolloutStrategy.roleRollingUpdateConfiguration && manifest.spec.rolloutStrategy.roleRollingUpdateConfiguration.coordination;
    if (!coord || coord.maxSkew == null) return null;
    const v = String(coord.maxSkew);
    return v.endsWith("%") ? parseFloat(v) / 100 : Number(v) > 1 ? Number(v) / 100 : Number(v);
  }

  function sample() {
    const t = state.time;
    if (samples.length && samples[samples.length - 1].t >= t) return;
    const progress = {};
    for (const r of state.roles || []) progress[r.name] = r.progress || 0;
    const vals = Object.values(progress);
    const g = (state.strategy && state.strategy.group) || {};
    const floor = Math.max(0, (g.total ?? state.spec.replicas ?? 0) - ((g.maxUnavailable && g.maxUnavailable.count) || 0));
    samples.push({ t, progress, available: (state.counts || {}).availableReplicas || 0, floor, skew: vals.length > 1 ? Math.max(...vals) - Math.min(...vals) : 0 });
    if (samples.length > 4000) samples.splice(0, samples.length - 4000);
    chartsDirty = true;
  }

  // Stored history (sampled by the controller after its passes), loaded once; the stream extends it.
  async function loadHistory() {
    try {
      const points = await api(ms + "history/");
      if (!points.length) return;
      const older = points.filter((p) => !samples.length || p.t < samples[0].t).map((p) => ({
        t: p.t, progress: p.roles || {}, available: p.available, floor: p.floor, skew: (p.skew || 0) / 100,
      }));
      samples.unshift(...older);
      $("charts-note").textContent = "stored history, extended live";
      chartsDirty = true;
    } catch (err) {
      $("charts-note").textContent = "no stored history: since this page opened, extended live";
    }
  }

  // Cluster time is epoch seconds on a live cluster (and on the wall-clock simulation), virtual
  // seconds in a scenario: show the former as clock times, the latter as seconds.
  const isEpoch = (t) => t > 1e9;
  const xOf = (t) => (isEpoch(t) ? new Date(t * 1000) : t);

  function drawCharts() {
    if (!chartsDirty || !window.Plotly || !samples.length) return;
    chartsDirty = false;
    const xs = samples.map((s) => xOf(s.t));
    const roleNames = (state.roles || []).map((r) => r.name);
    const lineColours = ["#3b6fd4", "#d98a1c", "#17a38b", "#8c5bd6", "#d2477f", "#6f9a22"];
    Plotly.react("chart-progress", roleNames.map((n, i) => ({ x: xs, y: samples.map((s) => s.progress[n] ?? null), name: n, mode: "lines", line: { width: 2, color: lineColours[i % lineColours.length], shape: "hv" } })),
      chartLayout("Updated and Ready, per role", "fraction", { range: [0, 1.05], tickformat: ".0%" }), chartConfig);
    const replicas = state.spec.replicas || 0;
    Plotly.react("chart-capacity", [
      { x: xs, y: samples.map((s) => s.available), name: "available groups", mode: "lines", fill: "tozeroy", fillcolor: "rgba(31,136,61,0.08)", line: { width: 2, color: "#1f883d", shape: "hv" } },
      { x: xs, y: samples.map((s) => s.floor), name: "budget floor (replicas − maxUnavailable)", mode: "lines", line: { width: 1.5, dash: "dash", color: "#cf222e", shape: "hv" } },
    ], chartLayout("Available capacity vs budget floor", "groups", { range: [0, replicas * 1.1 + 0.5], rangemode: "tozero" }), chartConfig);
    const ms = maxSkew();
    const skewTraces = [{ x: xs, y: samples.map((s) => s.skew), name: "skew (max − min role progress)", mode: "lines", line: { width: 2, color: "#8c5bd6", shape: "hv" } }];
    if (ms != null) skewTraces.push({ x: [xs[0], xs[xs.length - 1]], y: [ms, ms], name: "maxSkew", mode: "lines", line: { width: 1.5, dash: "dash", color: "#cf222e" } });
    const layout = chartLayout(ms != null ? "Skew between roles vs maxSkew" : "Skew between roles (no maxSkew set)", "fraction", { range: [0, 1.05], tickformat: ".0%" });
    Plotly.react("chart-skew", skewTraces, layout, chartConfig);
  }
  function loadPlotly() {
    if (window.Plotly || document.getElementById("plotly-js")) return;
    const script = document.createElement("script");
    script.id = "plotly-js";
    script.src = JSON.parse($("plotly-src").textContent);
    script.onload = () => { chartsDirty = true; drawCharts(); };
    document.head.appendChild(script);
  }

  // Charts redraw at most once a second: Plotly is the most expensive thing on the page.
  setInterval(drawCharts, 1000);

  // --- Revisions and diff ---------------------------------------------------------------------
  let diffSel = { a: null, b: null };

  function renderRevisions() {
    const revs = (state.revisions || []).slice().reverse();
    const tbody = $("revisions").querySelector("tbody");
    if (diffSel.a == null && revs.length > 1) { diffSel.a = revs[1].number; diffSel.b = revs[0].number; }
    tbody.innerHTML = revs.map((r) => {
      const created = r.created ? Date.parse(r.created) / 1000 : null;
      const tags = (r.hash === state.updateRevision ? '<span class="badge badge-info">update</span> ' : "") + (r.hash === state.currentRevision ? '<span class="badge">current</span> ' : "") + (r.readable === false ? `<span class="badge badge-error" title="${esc(r.error)}">unreadable</span>` : "");
      const canRb = boot.canOperate && r.hash !== state.updateRevision && r.readable !== false;
      return `<tr data-rev="${r.number}">
        <td><input type="radio" name="diff-a" value="${r.number}" ${diffSel.a === r.number ? "checked" : ""} aria-label="compare from #${r.number}"></td>
        <td><input type="radio" name="diff-b" value="${r.number}" ${diffSel.b === r.number ? "checked" : ""} aria-label="compare to #${r.number}"></td>
        <td><span class="rev-dot" style="background:${colourFor(r.number)}"></span>${r.number}</td>
        <td class="mono">${esc(r.hash)}</td>
        <td class="num">${fmtAge(created != null ? state.time - created : null)}</td>
        <td>${tags}${esc(r.changeCause || "")}</td>
        <td>${canRb ? `<button class="btn btn-quiet btn-xs" data-action="rollback" data-revision="${r.number}">Roll back to #${r.number}</button>` : ""}</td>
      </tr>`;
    }).join("");
    $("diff-btn").disabled = !(diffSel.a && diffSel.b && diffSel.a !== diffSel.b);
  }

  $("revisions").addEventListener("change", (e) => {
    if (e.target.name === "diff-a") diffSel.a = Number(e.target.value);
    if (e.target.name === "diff-b") diffSel.b = Number(e.target.value);
    $("diff-btn").disabled = !(diffSel.a && diffSel.b && diffSel.a !== diffSel.b);
  });

  function fmtVal(v) {
    if (v === null || v === undefined) return '<span class="muted">—</span>';
    if (typeof v === "object") return `<pre>${esc(JSON.stringify(v, null, 2))}</pre>`;
    return `<code>${esc(v)}</code>`;
  }

  $("diff-btn").addEventListener("click", async () => {
    const box = $("diff");
    box.innerHTML = '<p class="muted">Loading diff…</p>';
    try {
      const d = await api(`${ms}revisions/diff?from=${diffSel.a}&to=${diffSel.b}`);
      const changes = d.changes || [];
      const rows = changes.map((c) => `<tr class="chg-${esc(c.change)}"><td class="mono path">${esc(c.path)}</td><td class="from">${fmtVal(c.from)}</td><td class="to">${fmtVal(c.to)}</td></tr>`).join("");
      const rt = { ...(d.runtime || {}) };
      const note = rt.note || "Runtime fields are not versioned: a rollback keeps them; these are the current values.";
      delete rt.note;
      const runtime = Object.keys(rt).length
        ? `<div class="panel-subtitle">Runtime fields, shown apart</div><p class="muted">${esc(note)}</p><table class="table compact runtime-table"><tbody>${Object.entries(rt).map(([k, v]) => `<tr><td class="mono">${esc(k)}</td><td>${fmtVal(v)}</td></tr>`).join("")}</tbody></table>`
        : "";
      box.innerHTML = `<div class="panel-subtitle">Versioned fields: #${diffSel.a} → #${diffSel.b} · ${changes.length} change${changes.length === 1 ? "" : "s"}</div>
        ${changes.length ? `<table class="table compact diff-table"><thead><tr><th>Field</th><th>#${diffSel.a}</th><th>#${diffSel.b}</th></tr></thead><tbody>${rows}</tbody></table>` : '<p class="calm">No versioned field differs.</p>'}${runtime}`;
    } catch (err) {
      box.innerHTML = `<p class="field-error">${esc(err.message)}</p>`;
    }
  });

  // --- Strategy -------------------------------------------------------------------------------
  const SOURCES = { object: "this object", cluster: "cluster default", builtin: "built-in default", override: "multi-node override" };

  function renderStrategy() {
    const s = state.strategy || {};
    const scopes = [];
    if (s.group) scopes.push(["ServingGroups", s.group]);
    for (const [name, b] of Object.entries(s.roles || {})) scopes.push(["role " + name, b]);
    const rows = [];
    for (const [scope, b] of scopes) {
      const fields = Object.entries(b).filter(([, v]) => v && typeof v === "object" && "source" in v);
      fields.forEach(([field, v], i) => {
        rows.push(`<tr>${i === 0 ? `<td rowspan="${fields.length}">${esc(scope)}<div class="muted">total ${b.total}</div></td>` : ""}<td class="mono">${esc(field)}</td><td class="mono">${esc(v.value)}</td><td class="num">${esc(v.count)}</td><td><span class="src src-${esc(v.source)}">${esc(SOURCES[v.source] || v.source)}</span></td></tr>`);
      });
    }
    $("strategy").innerHTML = `<p><b>${esc(s.type || state.strategyType)}</b> <span class="muted">${(s.type || state.strategyType) === "ServingGroupRollingUpdate" ? "— the group-level values apply; role values are shown for reference" : "— each role's values apply inside every group"}</span></p>
      <table class="table compact"><thead><tr><th>Scope</th><th>Field</th><th>Value</th><th class="num">Resolves to</th><th>Source</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
  }

  // --- Audit ----------------------------------------------------------------------------------
  async function loadAudit() {
    try {
      const data = await api(`/api/audit/?namespace=${encodeURIComponent(boot.namespace)}&name=${encodeURIComponent(boot.name)}&page_size=30`);
      const items = data.results || [];
      $("audit").innerHTML = items.length ? items.map((a) => `<li class="tl tl-${esc(a.result)}">
        <div class="tl-head"><b>${esc(a.action.replace("_", " "))}</b> <span class="muted">by</span> ${esc(a.who || "unknown")} <span class="badge">${esc(a.source)}</span>${a.result !== "ok" ? ' <span class="badge badge-error">failed</span>' : ""}<time class="muted" datetime="${esc(a.when)}" title="${esc(a.when)}">${new Date(a.when).toLocaleString()}</time></div>
        <div class="tl-body">${a.fromRevision || a.toRevision ? `<span class="mono">${esc(a.fromRevision || "—")} → ${esc(a.toRevision || "—")}</span> · ` : ""}<span class="reason">“${esc(a.reason)}”</span>${a.error ? ` <span class="field-error">${esc(a.error)}</span>` : ""}</div></li>`).join("")
        : '<li class="muted">No action recorded yet.</li>';
    } catch (err) {
      $("audit").innerHTML = `<li class="field-error">${esc(err.message)}</li>`;
    }
  }

  // --- Simulation -----------------------------------------------------------------------------
  async function loadNodes() {
    try {
      const nodes = await api("/api/sim/nodes/");
      $("sim-node").innerHTML = nodes.map((n) => `<option value="${esc(n.name)}" ${n.failed ? "disabled" : ""}>${esc(n.name)} · ${n.failed ? "failed" : `${n.gpusUsed ?? "?"}/${n.gpus} GPUs, ${n.pods ?? 0} pods`}</option>`).join("");
    } catch (err) { /* shown when an action fails */ }
  }

  function roleNames() {
    const fromState = (state.roles || []).map((r) => r.name);
    if (fromState.length) return fromState;
    const fromSpec = manifest && manifest.spec && manifest.spec.template ? (manifest.spec.template.roles || []).map((r) => r.name) : [];
    return fromSpec.length ? fromSpec : [...new Set(state.instances.map((i) => i.role))];
  }

  function renderSimRoles() {
    const sel = $("preview-role");
    const names = roleNames();
    if (sel.dataset.roles === names.join(",")) return;
    const keep = sel.value;
    sel.innerHTML = names.map((n) => `<option ${n === keep ? "selected" : ""}>${esc(n)}</option>`).join("");
    sel.dataset.roles = names.join(",");
  }

  function setupSim() {
    if (boot.backend !== "sim") return;
    $("sim-panel").hidden = false;
    document.querySelectorAll("#sim-panel [data-action]").forEach((b) => {
      b.disabled = !boot.canOperate;
      if (!boot.canOperate) b.title = "View only: needs the operate permission.";
    });
    renderSimRoles();
    loadNodes();
    $("preview-form").addEventListener("submit", async (e) => {
      e.preventDefault();
      const box = $("preview");
      box.innerHTML = '<p class="muted">Simulating…</p>';
      try {
        const p = await api(ms + "preview/", { method: "POST", body: { setImage: { role: $("preview-role").value, image: $("preview-image").value.trim() } } });
        const dur = p.durationSeconds != null ? Math.round(p.durationSeconds) + " s" : `not converged in ${Math.round(p.simulatedSeconds || 0)} s`;
        const reasons = (p.blockedReasons || []).slice(0, 5).map((r) => `<li>${esc(r)}</li>`).join("");
        box.innerHTML = `<dl class="facts facts-small"><div><dt>Duration</dt><dd class="num" data-testid="preview-duration">${dur}</dd></div><div><dt>Min available</dt><dd class="num">${p.minAvailable ?? "—"} / ${p.desired ?? state.spec.replicas}</dd></div><div><dt>Budget floor</dt><dd class="num">${p.floor ?? "—"}</dd></div><div><dt>Converges</dt><dd>${p.converged ? "yes" : '<span class="warn">no</span>'}</dd></div></dl><div class="chart chart-small" id="chart-preview"></div>${reasons ? `<div class="panel-subtitle">It would wait for</div><ul class="plain-list">${reasons}</ul>` : ""}`;
        if (window.Plotly && p.capacity && p.capacity.length) {
          const cap = p.capacity.slice();
          const end = Math.max(p.simulatedSeconds || 0, p.durationSeconds || 0, cap[cap.length - 1][0]);
          cap.push([end, cap[cap.length - 1][1]]);
          const traces = [{ x: cap.map((c) => c[0]), y: cap.map((c) => c[1]), mode: "lines", line: { shape: "hv", color: "#1f883d", width: 2 }, fill: "tozeroy", fillcolor: "rgba(31,136,61,0.08)", name: "available groups" }];
          if (p.floor != null) traces.push({ x: [0, end], y: [p.floor, p.floor], mode: "lines", line: { dash: "dash", color: "#cf222e", width: 1.5 }, name: "budget floor" });
          Plotly.react("chart-preview", traces,
            { ...chartLayout("Simulated available capacity", "groups", { rangemode: "tozero" }), xaxis: { title: { text: "seconds after apply" }, gridcolor: "#eef0f3" }, height: 200 }, chartConfig);
        }
      } catch (err) {
        box.innerHTML = `<p class="field-error">${esc(err.message)}</p>`;
      }
    });
  }

  // --- State application ----------------------------------------------------------------------
  async function loadManifest() {
    try { manifest = await api(ms + "manifest/"); chartsDirty = true; } catch (err) { /* charts show no maxSkew */ }
  }

  let frame = 0;
  function applyState(next) {
    state = next;
    revNumbers = new Map((state.revisions || []).map((r) => [r.hash, r.number]));
    sample();
    // Rendering waits for the next animation frame: several messages in one frame render once.
    if (!frame) frame = requestAnimationFrame(render);
    const sig = JSON.stringify([state.spec, state.updateRevision, (state.revisions || []).length, state.generation]);
    if (sig !== lastSpecSig) {
      if (lastSpecSig !== null) { loadAudit(); loadManifest(); }
      lastSpecSig = sig;
    }
  }

  function render() {
    frame = 0;
    const t0 = performance.now();
    renderHeader();
    renderControls();
    topo.update(state, revNumbers);
    renderLegend();
    renderWaits();
    renderDrain();
    renderRoles();
    renderRevisions();
    renderStrategy();
    if (boot.backend === "sim") renderSimRoles();
    window.__lastRenderMs = performance.now() - t0;
    // Time from navigation start to the first complete render (the fan-out bench reads it).
    if (window.__firstRenderMs === undefined) {
      window.__firstRenderMs = performance.now();
      loadPlotly();
    }
    window.__renders = (window.__renders || 0) + 1;
    document.body.dataset.stateTime = String(state.time);
  }

  // --- Websocket ------------------------------------------------------------------------------
  // The socket sends the full state (the REST GET payload) on connect, then deltas of it: changed
  // top-level values, and per-item upserts/removals of instances (by group, role, ordinal) and
  // groups (by ordinal). wireState is the state the deltas apply to.
  let socket = null, attempts = 0, lastMessageAt = null, wireState = null;

  // How each list is keyed and (for instances and groups) sorted: the same as build_view and
  // rolloutui/consumers.py KEYED_LISTS.
  const LISTS = {
    instances: { key: (i) => [i.group, i.role, i.ordinal], sorted: true },
    groups: { key: (g) => [g.ordinal], sorted: true },
    blocked: { key: (b) => [b.group, b.role, b.kind], sorted: false },
    drain: { key: (d) => [d.pod], sorted: false },
  };
  const keyText = (k) => JSON.stringify(Array.isArray(k) ? k : [k]);
  function cmpKeys(a, b) {
    for (let i = 0; i < a.length; i++) {
      if (a[i] === b[i]) continue;
      if (a[i] === null || a[i] === undefined) return -1;
      if (b[i] === null || b[i] === undefined) return 1;
      return a[i] < b[i] ? -1 : 1;
    }
    return 0;
  }

  function mergeList(list, change, spec) {
    const byKey = new Map(list.map((x) => [keyText(spec.key(x)), x]));
    const order = list.map((x) => keyText(spec.key(x)));
    for (const r of change.remove) byKey.delete(keyText(r));
    for (const [k, fields, gone] of change.patch) {
      const prev = byKey.get(keyText(k));
      if (!prev) continue;
      const item = Object.assign({}, prev, fields);
      for (const f of gone) delete item[f];
      byKey.set(keyText(k), item);
    }
    for (const u of change.upsert) { const k = keyText(spec.key(u)); if (!byKey.has(k)) order.push(k); byKey.set(k, u); }
    if (change.order) return change.order.map((k) => byKey.get(keyText(k)));
    if (spec.sorted) return [...byKey.values()].sort((a, b) => cmpKeys(spec.key(a), spec.key(b)));
    return order.filter((k) => byKey.has(k)).map((k) => byKey.get(k));
  }

  function applyDelta(base, d) {
    const next = Object.assign({}, base, d.set || {});
    for (const k of d.unset || []) delete next[k];
    for (const [name, change] of Object.entries(d.lists || {})) next[name] = mergeList(base[name] || [], change, LISTS[name]);
    next.time = d.time;
    return next;
  }

  function setConn(kind, text) {
    const el = $("conn");
    el.className = "conn conn-" + kind;
    el.textContent = text;
    document.body.classList.toggle("is-stale", kind !== "live");
    $("stale-banner").hidden = kind === "live" || kind === "connecting";
    $("stale-since").textContent = lastMessageAt ? lastMessageAt.toLocaleTimeString() : "page load";
  }

  function connect() {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(proto + "//" + location.host + boot.ws);
    socket = ws;
    ws.onopen = () => { attempts = 0; };
    ws.onmessage = (e) => {
      // A socket on its way out (closing, or replaced by a reconnect) may still deliver what was
      // in flight; it must not mark the page live again.
      if (ws !== socket || ws.readyState !== WebSocket.OPEN) return;
      lastMessageAt = new Date();
      setConn("live", "live");
      const msg = JSON.parse(e.data);
      if (msg.type === "state.delta") {
        // A delta applies to the exact state it was computed from; anything else asks for the
        // full state rather than guessing.
        if (!wireState || msg.base !== wireState.time) { socket.send(JSON.stringify({ type: "resync" })); return; }
        wireState = applyDelta(wireState, msg);
      } else {
        wireState = msg;
      }
      if (wireState.deleted) { setConn("down", "ModelServing deleted"); return; }
      applyState(wireState);
    };
    ws.onclose = (e) => {
      if (ws !== socket) return;
      if (e.code === 4401) { setConn("down", "signed out"); location.href = "/accounts/login/?next=" + encodeURIComponent(location.pathname); return; }
      if (e.code === 4403) { setConn("down", "no permission"); return; }
      if (e.code === 4404) { setConn("down", "ModelServing deleted"); return; }
      attempts++;
      const delay = Math.min(10000, 500 * 2 ** Math.min(attempts, 5)) * (0.8 + Math.random() * 0.4);
      setConn("stale", `reconnecting (${attempts})…`);
      setTimeout(connect, delay);
    };
  }

  // Start: render the server-provided state at once, then go live.
  applyState(state);
  lastSpecSig = JSON.stringify([state.spec, state.updateRevision, (state.revisions || []).length, state.generation]);
  setupSim();
  loadManifest();
  loadHistory();
  loadAudit();
  setInterval(loadAudit, 15000);
  setConn("connecting", "connecting");
  connect();
  // Test and debugging hooks (read-only views, plus a way to simulate a dropped connection).
  window.__rollout = { get state() { return state; }, get wireState() { return wireState; }, samples, topo, dropSocket: () => {
    if (!socket) return;
    // Closing is a handshake that a busy server may answer late: say "reconnecting" at once.
    setConn("stale", "reconnecting…");
    socket.close();
  } };
})();
