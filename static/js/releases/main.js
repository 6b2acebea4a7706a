// Releases page: environments (what runs on each target, live), model versions per model, and the
// history of releases with who and why. Every button runs an action of the action registry through
// the REST API: the page carries the registry's description of the release actions
// (`rollout-actions`: approve, deprecate, deploy, rollback-release, rollback-layer, promote-release, each with its
// label, fields, permission and `urlTemplate`), and builds each row's URL from the row's keys.
//
// Data: json_script "releases-data" ({environments, versions, history}) at load, then the REST API:
// every 10 s, every 2.5 s while a release is Deploying (and then also the target's state, for the
// live "Serving n of m" and the gate it waits on).

import { api, post } from "../lib/api.js";
import { byId, h, mount, readJson } from "../lib/dom.js";
import { actionLabel } from "../lib/format.js";
import { createDialog, toast } from "../detail/dialog.js";
import { deployReason, fmtSeconds, layersView, readyServing, statusBadge, versionBadge } from "./common.js";

const FAST_MS = 2500;
const SLOW_MS = 10000;

const boot = readJson("boot");
const registry = readJson("rollout-actions", { actions: [] });
let data = readJson("releases-data");
const liveStates = new Map(); // "ns/name" -> state of a target whose release is deploying

const actions = new Map((registry.actions || []).map((a) => [a.name, a]));

// An action's endpoint for one object: its urlTemplate with the object's keys filled in.
function urlOf(action, keys) {
  return action.urlTemplate.replace(/\{(\w+)\}/g, (_, k) => encodeURIComponent(String(keys[k])));
}

const releaseKeys = (r) => ({ namespace: r.target.namespace, name: r.target.name, number: r.number });
const releaseRef = (r) => `${r.target.namespace}/${r.target.name}/${r.number}`;
const versionKeys = (v) => ({ model: v.model, version: v.version });
const when = (iso) => (iso ? new Date(iso).toLocaleString() : "—");

// A release's action needs operate in its target's namespace (a namespace grant is enough); the
// server checks it again. `a.allowed` is whether the user holds the permission everywhere.
const OPERATE = "rolloutui.operate_modelserving";
function permittedFor(a, keys) {
  if (a.allowed) return true;
  if (a.permission !== OPERATE || !keys.namespace) return false;
  return boot.operateEverywhere || (boot.operateNamespaces || []).includes(keys.namespace);
}

function actionButton(name, keys, { label, onOpen, testid, disabled, why } = {}) {
  const a = actions.get(name);
  if (!a) return null;
  const permitted = permittedFor(a, keys);
  const allowed = permitted && !disabled;
  const tone = a.tone === "danger" ? " btn-danger" : a.tone === "primary" ? " btn-primary" : "";
  const needs = keys.namespace && a.permission === OPERATE ? `${a.permission} in ${keys.namespace}` : a.permission;
  return h(
    "button",
    {
      class: "btn btn-xs" + tone,
      type: "button",
      disabled: !allowed,
      title: !permitted ? `Needs the permission ${needs}` : why || a.help,
      dataset: { action: name },
      "data-testid": testid || null,
      onclick: () => onOpen(a, keys),
    },
    label || a.label,
  );
}

// -- Dialogs -------------------------------------------------------------------------------------------

const dialog = createDialog({
  onDone: (result) => {
    const a = result && result.audit;
    toast(a ? `${actionLabel(a.action)}: done (audit #${a.id})` : "Done");
    refresh();
  },
});

function field(label, control, help) {
  return h("label", { class: "field" }, h("span", { class: "field-label" }, label), control, help ? h("span", { class: "field-help muted" }, help) : null);
}

function select(testid, options, selected) {
  return h(
    "select",
    { "data-testid": testid },
    options.map(([value, text]) => h("option", { value, selected: value === selected }, text)),
  );
}

const envByName = (name) => data.environments.find((e) => e.name === name);

// Where a release may be promoted: environments ranked at or after its own (the server refuses one
// ranked before), other than its own. The default is the next one by rank, as the server's.
function promotionDestinations(release) {
  const own = envByName(release.environment);
  const rank = own ? own.rank : 0;
  return data.environments.filter((e) => e.name !== release.environment && e.rank >= rank);
}

function defaultDestination(destinations, release) {
  const own = envByName(release.environment);
  const later = destinations.filter((e) => e.rank > (own ? own.rank : 0)).sort((a, b) => a.rank - b.rank || a.name.localeCompare(b.name));
  return later[0] || destinations.find((e) => e.name === "production") || destinations[0] || {};
}
const releaseTargets = (env) => ((env && env.targets) || []).filter((t) => t.kind === "ModelServing");

// "New release…": plan a release (POST /api/deployment-revisions/) and, unless unticked, deploy it.
function openNewRelease(preset = {}) {
  const versions = data.versions.filter((v) => v.status !== "Deprecated");
  const envSel = select("nr-environment", data.environments.map((e) => [e.name, e.name + (e.requiresApproval ? " (approval required)" : "")]), preset.environment || (data.environments[0] || {}).name);
  const targetSel = h("select", { "data-testid": "nr-target" });
  const versionSel = select("nr-version", versions.map((v) => [v.key, `${v.key} (${v.status})`]), preset.version || (versions[versions.length - 1] || {}).key);
  const profileSel = h("select", { "data-testid": "nr-profile" });
  const config = h("textarea", { class: "json", rows: 2, placeholder: '{"batching": {"maxBatchSize": 16}}', "data-testid": "nr-config" });
  const deployNow = h("input", { type: "checkbox", checked: true, "data-testid": "nr-deploy" });
  const warning = h("p", { class: "field-error", "data-testid": "nr-warning" });

  function sync() {
    const env = envByName(envSel.value);
    mount(targetSel, releaseTargets(env).map((t) => h("option", { value: `${t.namespace}/${t.name}` }, `${t.namespace}/${t.name} (${(t.roles || []).join(", ")})`)));
    const profiles = Object.keys((env && env.resourceProfiles) || {});
    mount(profileSel, h("option", { value: "" }, "none (keep the templates' resources)"), profiles.map((p) => h("option", { value: p, selected: profiles.length === 1 }, p)));
    const version = data.versions.find((v) => v.key === versionSel.value);
    warning.textContent =
      env && env.requiresApproval && version && version.status !== "Approved"
        ? `${env.name} requires an approved version and ${version.key} is ${version.status}: it can be planned, but a deploy will be refused until it is approved.`
        : "";
  }
  envSel.addEventListener("change", sync);
  versionSel.addEventListener("change", sync);
  sync();

  dialog.open({
    title: "New release",
    body: [
      h("p", null, "A release writes the version's image, artifact, checksum, schema versions, config and resources into the target roles' templates together."),
      h("div", { class: "form-row" }, field("Environment", envSel), field("Target", targetSel)),
      h("div", { class: "form-row" }, field("Model version", versionSel), field("Resource profile", profileSel)),
      field("Config overrides (JSON, optional)", config, "Batching and timeouts on top of the version's own."),
      h("label", { class: "field-check" }, deployNow, "Deploy now (otherwise it stays Pending)"),
      warning,
    ],
    confirm: "Create release",
    onConfirm: async (reason) => {
      const body = { environment: envSel.value, modelVersion: versionSel.value, target: targetSel.value, reason };
      if (profileSel.value) body.resourceProfile = profileSel.value;
      if (config.value.trim()) {
        try {
          body.config = JSON.parse(config.value);
        } catch (err) {
          throw new Error(`config: not JSON (${err.message})`);
        }
      }
      // Planned and deployed in one request: a refused deploy leaves no Pending release behind.
      if (deployNow.checked) body.deploy = true;
      return post(boot.api.releases, body);
    },
  });
}

// One release action's dialog: its description, what it changes (per layer) where that applies, and
// its fields from the registry.
async function openReleaseAction(action, keys) {
  const release = data.history.find((r) => r.target.namespace === keys.namespace && r.target.name === keys.name && r.number === keys.number);
  const body = [];
  const controls = new Map();
  let afterOpen = null; // what fills the dialog's own title and button once it is open
  if (action.name === "rollback-release" || action.name === "deploy") {
    const live = liveRelease(release);
    body.push(
      h(
        "p",
        null,
        action.name === "deploy" ? "Deploy " : "Restore ",
        h("b", null, release.label),
        ` (${release.modelVersion.key}, ${release.environment}) on ${release.target.namespace}/${release.target.name}`,
        action.name === "rollback-release" ? " as a new release" : "",
        live ? [". The live ", h("b", null, live.label), ` (${live.status}) becomes ${action.name === "deploy" ? "Superseded" : "RolledBack"}.`] : ".",
      ),
    );
    const changes = h("div", null, h("p", { class: "muted" }, "Reading what changes…"));
    body.push(h("div", { class: "panel-subtitle" }, "What changes, per layer"), changes);
    api(urlOf(action, keys).replace(/[^/]+\/?$/, "change"))
      .then((change) => mount(changes, layersView(change)))
      .catch((err) => mount(changes, h("p", { class: "field-error" }, err.message)));
  } else if (action.name === "promote-release") {
    body.push(h("p", null, "Creates and deploys the release of ", h("b", null, release.modelVersion.key), ` (now ${release.label} in ${release.environment}) in another environment, with the same config.`));
    const later = promotionDestinations(release);
    const envSel = select("pr-environment", later.map((e) => [e.name, e.name]), defaultDestination(later, release).name);
    const targetSel = h("select", { "data-testid": "pr-target" });
    const profileSel = h("select", { "data-testid": "pr-profile" });
    const sync = () => {
      const env = envByName(envSel.value);
      // The title and the button name the environment the confirmation deploys to.
      const named = `Promote to ${envSel.value}`;
      byId("dialog-title").textContent = named;
      byId("dialog-confirm").textContent = named;
      mount(targetSel, releaseTargets(env).map((t) => h("option", { value: `${t.namespace}/${t.name}` }, `${t.namespace}/${t.name}`)));
      const profiles = Object.keys((env && env.resourceProfiles) || {});
      mount(profileSel, h("option", { value: "" }, "same name as now, if it has it"), profiles.map((p) => h("option", { value: p }, p)));
    };
    envSel.addEventListener("change", sync);
    afterOpen = sync;
    controls.set("environment", envSel).set("target", targetSel).set("resourceProfile", profileSel);
    body.push(h("div", { class: "form-row" }, field("Environment", envSel), field("Target", targetSel)), field("Resource profile", profileSel));
  }
  dialog.open({
    title: action.label,
    body,
    confirm: action.label,
    danger: action.tone === "danger",
    onConfirm: (reason) => {
      const values = { reason };
      for (const f of action.fields || []) {
        const el = controls.get(f.name);
        if (el && String(el.value).trim()) values[f.name] = String(el.value).trim();
      }
      return post(urlOf(action, keys), values);
    },
  });
  if (afterOpen) afterOpen();
}

// Rollback by layer: the live release's layers side by side with what taking each back to the
// previous release's value would change; a button per layer picks it, the reason confirms.
function openLayerRollback(action, keys) {
  const release = data.history.find((r) => r.target.namespace === keys.namespace && r.target.name === keys.name && r.number === keys.number);
  let chosen = null;
  const list = h("div", { class: "layer-list", "data-testid": "layer-rollback" }, h("p", { class: "muted" }, "Reading the layers…"));
  const picked = h("p", { class: "muted", "data-testid": "layer-picked" }, "Pick the layer to roll back.");
  const pick = (layer, buttons) => {
    chosen = layer;
    for (const [name, b] of buttons) b.classList.toggle("btn-danger-solid", name === layer);
    picked.textContent = `The ${layer} goes back to the previous release's; every other layer stays as ${release.label} has it.`;
    byId("dialog-confirm").textContent = `Roll back the ${layer}`;
  };
  api(urlOf(action, keys).replace(/[^/]+\/?$/, "change"))
    .then((change) => {
      const options = change.layerRollback || { previous: null, layers: [] };
      if (!options.previous) {
        mount(list, h("p", { class: "muted" }, `${release.label} is the first release on its target: there is no earlier layer to go back to.`));
        return;
      }
      const buttons = new Map();
      mount(
        list,
        h("p", null, "Previous release: ", h("b", null, options.previous.label || `r${options.previous.number}`)),
        options.layers.map((entry) => {
          const changes = entry.changes || [];
          const button = h(
            "button",
            {
              class: "btn btn-xs btn-danger",
              type: "button",
              disabled: !changes.length,
              title: changes.length ? `Roll back only the ${entry.layer}` : `the ${entry.layer} is the previous release's already`,
              "data-testid": `rollback-layer-${entry.layer}`,
              onclick: () => pick(entry.layer, buttons),
            },
            `Roll back ${entry.layer}`,
          );
          buttons.set(entry.layer, button);
          return h(
            "div",
            { class: "layer", dataset: { layer: entry.layer, changed: changes.length ? "yes" : "no" } },
            h("h4", null, entry.layer, " ", button, " ", changes.length ? null : h("span", { class: "unchanged" }, "same as the previous release")),
            changes.length
              ? h(
                  "table",
                  { class: "table compact" },
                  h("thead", null, h("tr", null, h("th", null, "Role"), h("th", null, "Field"), h("th", null, "Now"), h("th", null, "After"))),
                  h(
                    "tbody",
                    null,
                    changes.map((c) => h("tr", null, h("td", null, c.role), h("td", { class: "mono" }, c.field), h("td", null, String(c.from ?? "—")), h("td", null, String(c.to ?? "—")))),
                  ),
                )
              : null,
          );
        }),
      );
    })
    .catch((err) => mount(list, h("p", { class: "field-error" }, err.message)));
  dialog.open({
    title: `${action.label}: ${release.label}`,
    body: [h("p", null, action.help), list, picked],
    confirm: "Roll back the layer",
    danger: true,
    onConfirm: (reason) => {
      if (!chosen) return Promise.reject(new Error("Pick a layer first."));
      return post(urlOf(action, keys), { layer: chosen, reason });
    },
  });
}

function openVersionAction(action, keys) {
  const v = data.versions.find((x) => x.model === keys.model && x.version === keys.version);
  dialog.open({
    title: `${action.label} ${v.key}`,
    body: [
      h("p", null, action.help),
      h(
        "table",
        { class: "table compact" },
        h(
          "tbody",
          null,
          [
            ["Runtime image", v.runtimeImage],
            ["Artifact", `${v.artifactUri} (${v.artifactChecksum})`],
            ["Schema", `in ${v.inputSchemaVersion} · out ${v.outputSchemaVersion}`],
            ["Evaluation", v.evaluationId || "—"],
          ].map(([k, val]) => h("tr", null, h("td", null, k), h("td", { class: "mono" }, val))),
        ),
      ),
    ],
    confirm: action.label,
    danger: action.tone === "danger",
    onConfirm: (reason) => post(urlOf(action, keys), { reason }),
  });
}

// -- Rendering ------------------------------------------------------------------------------------------

// The release live on a release's target (Deploying, Serving or Failed), from the history.
function liveRelease(release) {
  const env = data.environments.find((e) => e.name === release.environment);
  const t = ((env && env.targets) || []).find((x) => x.namespace === release.target.namespace && x.name === release.target.name);
  return t ? t.active : null;
}

function progressOf(ref) {
  const state = liveStates.get(ref);
  if (!state) return null;
  const rs = readyServing(state);
  const waiting = (state.gateFunnel || []).filter((f) => f.gate !== "Serving" && f.count);
  const slow = (state.gateFunnel || []).map((f) => f.slowest && { ...f.slowest, gate: f.gate }).filter(Boolean).sort((a, b) => a.since - b.since)[0];
  return h(
    "div",
    { class: "rel-progress", "data-testid": "rel-progress" },
    `Ready ${rs.ready} · Serving ${rs.serving} of ${rs.total}`,
    waiting.length ? ` · at ${waiting.map((f) => `${f.gate} ${f.count}`).join(", ")}` : "",
    slow ? ` · slowest: group ${slow.group} ${slow.role}-${slow.ordinal} at ${slow.gate} for ${fmtSeconds((state.time ?? slow.since) - slow.since)}` : "",
  );
}

// A target with no live release: never released to, or its last release no longer runs (a change no
// release wrote replaced it); the history then says which, rather than "nothing released yet".
function notLive(t) {
  const last = data.history.find((r) => r.target.namespace === t.namespace && r.target.name === t.name);
  if (!last) return h("span", { class: "muted" }, "nothing released yet");
  return h("span", { class: "muted" }, `no release live: the last, ${last.label}, is ${String(last.status || "").toLowerCase()}`, last.statusReason ? ` (${last.statusReason})` : "");
}

function renderEnvs() {
  mount(
    byId("rel-envs"),
    data.environments.length
      ? data.environments.map((env) =>
          h(
            "section",
            { class: "panel rel-env", "data-testid": `env-${env.name}` },
            h("h3", null, env.name, " ", env.requiresApproval ? h("span", { class: "badge badge-warn" }, "approval required") : h("span", { class: "badge" }, "no approval needed")),
            env.description ? h("p", { class: "calm" }, env.description) : null,
            env.targets.length
              ? env.targets.map((t) => {
                  const ref = `${t.namespace}/${t.name}`;
                  const a = t.active;
                  return h(
                    "div",
                    { class: "rel-target", dataset: { target: ref } },
                    t.kind === "ModelServing" ? h("a", { href: `/modelservings/${encodeURIComponent(t.namespace)}/${encodeURIComponent(t.name)}/` }, ref) : h("span", null, `${t.kind} ${ref}`),
                    h("span", { class: "muted" }, t.roles ? ` · roles ${t.roles.join(", ")}` : ` · ${t.component}`),
                    h(
                      "div",
                      { class: "rel-live", "data-testid": "rel-live" },
                      a ? [h("span", { class: "rel-label" }, a.label), " ", statusBadge(a.status, a.statusReason), " ", h("span", { class: "mono muted" }, `${a.model}:${a.version}`)] : notLive(t),
                      a && a.status === "Failed" && a.statusReason ? h("div", { class: "field-error" }, a.statusReason) : null,
                    ),
                    a && a.status === "Deploying" ? progressOf(ref) : null,
                  );
                })
              : h("p", { class: "calm" }, "No targets."),
          ),
        )
      : h("p", { class: "calm" }, "No environments yet: create one with POST /api/environments/ or manage.py release create-environment."),
  );
}

function renderVersions() {
  const byModel = new Map();
  for (const v of data.versions) {
    if (!byModel.has(v.model)) byModel.set(v.model, []);
    byModel.get(v.model).push(v);
  }
  // Where each version runs now: environment -> live release of it.
  const runs = new Map();
  for (const env of data.environments) {
    for (const t of env.targets) {
      if (t.active) {
        const key = `${t.active.model}:${t.active.version}`;
        if (!runs.has(key)) runs.set(key, []);
        runs.get(key).push(`${env.name} ${t.active.label.split(" · ")[0]} ${t.active.status}`);
      }
    }
  }
  mount(
    byId("rel-versions"),
    byModel.size
      ? [...byModel.entries()].map(([model, versions]) =>
          h(
            "div",
            { class: "rel-model" },
            h("h3", null, model),
            h(
              "table",
              { class: "table compact" },
              h("thead", null, h("tr", null, ["Version", "State", "Runtime image", "Schema", "Runs in", "Approval", ""].map((t) => h("th", null, t)))),
              h(
                "tbody",
                null,
                versions.map((v) =>
                  h(
                    "tr",
                    { dataset: { version: v.key } },
                    h("td", null, h("b", null, v.version)),
                    h("td", null, versionBadge(v.status)),
                    h("td", { class: "mono", title: v.runtimeImage }, v.runtimeImage.replace(/@sha256:([0-9a-f]{12})[0-9a-f]+$/, "@sha256:$1…")),
                    h("td", { class: "mono" }, `${v.inputSchemaVersion} / ${v.outputSchemaVersion}`),
                    h("td", null, (runs.get(v.key) || []).join(", ") || h("span", { class: "muted" }, "—")),
                    h("td", { title: v.approval ? v.approval.reason : "" }, v.approval ? `${v.approval.by}, ${when(v.approval.at)}` : h("span", { class: "muted" }, "—")),
                    h(
                      "td",
                      { class: "rel-actions" },
                      v.status === "Registered" ? actionButton("approve", versionKeys(v), { onOpen: openVersionAction, label: "Approve…" }) : null,
                      v.status !== "Deprecated" ? actionButton("deprecate", versionKeys(v), { onOpen: openVersionAction, label: "Deprecate…" }) : null,
                      v.status !== "Deprecated" && boot.canOperate
                        ? h("button", { class: "btn btn-xs", type: "button", dataset: { action: "new-release" }, onclick: () => openNewRelease({ version: v.key }) }, "Release…")
                        : null,
                    ),
                  ),
                ),
              ),
            ),
          ),
        )
      : h("p", { class: "calm" }, "No model versions yet: register one with POST /api/model-versions/ or manage.py release register."),
  );
}

// A Pending release its environment would refuse now (an unapproved or deprecated version): its
// Deploy button is disabled with the reason the server would give.
function deployRefusal(release) {
  const env = envByName(release.environment);
  const v = data.versions.find((x) => x.key === release.modelVersion.key);
  const status = v ? v.status : release.modelVersion.status;
  if (status === "Deprecated") return { disabled: true, why: `${release.modelVersion.key} is deprecated; it takes no new release` };
  if (env && env.requiresApproval && status !== "Approved") {
    return { disabled: true, why: `${env.name} requires an approved version and ${release.modelVersion.key} is ${status}: approve it first` };
  }
  return {};
}

function renderHistory() {
  const tbody = byId("rel-history").querySelector("tbody");
  mount(
    tbody,
    data.history.length
      ? data.history.map((r) => {
          const live = liveRelease(r);
          const isLive = live && live.number === r.number;
          const keys = releaseKeys(r);
          const rev = r.controllerRevision;
          const notes = [
            r.restores ? `rollback to r${r.restores}` : null,
            r.promotedFrom ? `promoted from ${r.promotedFrom.environment} r${r.promotedFrom.number}` : null,
            // Layers rolled back on this release (rollback-layer), latest last.
            ...(r.events || []).filter((e) => e.layerRollback).map((e) => `${e.layerRollback.layer} back to r${e.layerRollback.to}'s`),
          ].filter(Boolean);
          return h(
            "tr",
            { dataset: { release: releaseRef(r), status: r.status } },
            h("td", null, h("a", { href: `/modelservings/${encodeURIComponent(r.target.namespace)}/${encodeURIComponent(r.target.name)}/` }, `${r.target.namespace}/${r.target.name}`)),
            h("td", null, h("span", { class: "rel-label" }, r.label)),
            h("td", { class: "mono" }, r.modelVersion.key),
            h("td", null, r.environment),
            h("td", null, statusBadge(r.status, r.statusReason), r.statusReason && ["Failed", "RolledBack", "Superseded"].includes(r.status) ? h("div", { class: "muted why" }, r.statusReason) : null),
            h("td", { class: "mono" }, rev ? `${rev.number ? "#" + rev.number + " " : ""}${rev.hash}` : "—"),
            h("td", null, r.deployedBy || r.createdBy || "—"),
            h("td", null, when(r.deployedAt || r.createdAt)),
            h(
              "td",
              { class: "why" },
              notes.length ? [h("span", { class: "badge badge-info" }, notes.join(", ")), " "] : null,
              deployReason(r),
              r.reason && r.reason !== deployReason(r) ? h("div", { class: "muted" }, `planned: ${r.reason}`) : null,
            ),
            h(
              "td",
              { class: "rel-actions" },
              r.status === "Pending" ? actionButton("deploy", keys, { onOpen: openReleaseAction, label: "Deploy…", ...deployRefusal(r) }) : null,
              r.status !== "Pending" && !isLive ? actionButton("rollback-release", keys, { onOpen: openReleaseAction, label: "Roll back to this…" }) : null,
              isLive && r.status !== "Pending" ? actionButton("rollback-layer", keys, { onOpen: openLayerRollback, label: "Roll back a layer…", testid: "open-layer-rollback" }) : null,
              r.status === "Serving" && promotionDestinations(r).length > 0
                ? actionButton("promote-release", keys, { onOpen: openReleaseAction, label: "Promote…" })
                : null,
            ),
          );
        })
      : h("tr", null, h("td", { colspan: 10, class: "muted" }, "No releases yet.")),
  );
}

function render() {
  renderEnvs();
  renderVersions();
  renderHistory();
  byId("btn-new-release").disabled = !boot.canOperate || !data.environments.length || !data.versions.length;
  byId("btn-new-release").title = boot.canOperate ? "" : "View only: needs the operate permission";
  document.body.dataset.releases = String(data.history.length);
}

// -- Refresh --------------------------------------------------------------------------------------------

async function all(url) {
  const page = await api(url + (url.includes("?") ? "&" : "?") + "page_size=500");
  return page.results || [];
}

let timer = 0;

async function refresh() {
  clearTimeout(timer);
  try {
    const [environments, versions, history] = await Promise.all([
      all(boot.api.environments),
      all(boot.api.versions),
      api(`${boot.api.releases}?page_size=${boot.historyLimit}`).then((p) => p.results || []),
    ]);
    data = { environments, versions, history };
    const deploying = environments.flatMap((e) => e.targets.filter((t) => t.active && t.active.status === "Deploying" && t.kind === "ModelServing"));
    liveStates.clear();
    await Promise.all(
      deploying.map((t) =>
        api(`/api/modelservings/${encodeURIComponent(t.namespace)}/${encodeURIComponent(t.name)}/`)
          .then((s) => liveStates.set(`${t.namespace}/${t.name}`, s))
          .catch(() => {}),
      ),
    );
    render();
    byId("rel-refresh").textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (err) {
    byId("rel-refresh").textContent = `refresh failed: ${err.message}`;
  }
  const busy = data.environments.some((e) => e.targets.some((t) => t.active && t.active.status === "Deploying"));
  timer = setTimeout(refresh, busy ? FAST_MS : SLOW_MS);
}

byId("btn-new-release").addEventListener("click", () => openNewRelease());
render();
refresh();

// Test hooks (read-only).
window.__releases = {
  get data() {
    return data;
  },
};
