// Operator controls: the buttons, whether each applies now (a disabled button says why under the
// bar, e.g. "Partition is 0"), and their dialogs. Every control POSTs to the REST API
// (/api/modelservings/{ns}/{name}/{action}) with a reason, which goes to the audit.
//
// The buttons come from the action registry the page carries (`rollout-actions`, json_script, see
// fromServer below), turned into entries {name, label, granted, fields, path, body, danger, help}:
// `granted` says whether this user holds the action's permission; `path` is the endpoint under the
// ModelServing's API URL; `body` is sent as is with the fields (a preset's values, e.g.
// {"full": true}). A dialog is the action's description, one input per field, and the reason.

import { post } from "../../lib/api.js";
import { byId, h, mount } from "../../lib/dom.js";
import { partitionOf } from "../../lib/format.js";
import { currentImage, revLabel, roleNames } from "../common.js";
import { stepText } from "./canary.js";

const VIEW_ONLY = "View only: your account can watch but not operate (needs the operate permission).";

// Test ids the page has always had for these inputs (the browser tests use them).
const FIELD_TEST_IDS = { "set-image:role": "si-role", "set-image:image": "si-image", "rollback:toRevision": "rollback-to" };
// Fields shown side by side.
const ROWS = { "set-image": [["role", "container"]] };

// Why an action does not apply to this state, or null when it does.
// A canary whose steps are running: promote skips the step it is on (or, fully, every remaining
// step), whatever the partition (controller/core/controls.py, _running_canary).
const canaryRunning = (state) => {
  const c = state.canary;
  return Boolean(c && (c.phase === "Running" || c.phase === "Paused") && c.revision === state.updateRevision);
};

// A canary the analysis stopped (paused, or rolled back from): no step to promote.
const canaryFailed = (state) => Boolean(state.canary && state.canary.phase === "Failed" && state.canary.revision === state.updateRevision);

const UNAVAILABLE = {
  pause: ({ state }) => (state.spec.paused ? "Already paused." : null),
  resume: ({ state }) => (state.spec.paused ? null : "Not paused: nothing to resume."),
  promote: ({ state }, action) =>
    canaryRunning(state)
      ? null
      : canaryFailed(state) && !action.fields.some((f) => f.name === "full")
        ? "The canary analysis stopped this canary: Resume goes on with it, Roll back… returns to the stable revision."
        : action.fields.some((f) => f.name === "full")
      ? UNAVAILABLE["promote-full"]({ state })
      : partitionOf(state) > 0
        ? null
        : "Partition is 0: every group is already eligible for the update.",
  "promote-full": ({ state }) =>
    canaryRunning(state) || partitionOf(state) > 0 || state.spec.paused ? null : "Partition is 0 and the rollout is not paused.",
  rollback: ({ state }) =>
    (state.revisions || []).length > 1 ? null : "Only one revision exists: nothing to roll back to.",
  // The service's rule (controller/core/controls.py, abort): a rollout in progress, whose stable
  // revision is the running canary's, else the current one.
  abort: ({ state }) => (abortTarget(state) ? null : "No rollout in progress: nothing to abort."),
  "autoscale-off": ({ state }) => (state.spec.autoscale ? null : "Autoscale is off: nothing to turn off."),
};

// The revision an abort goes back to, or null when no rollout is in progress.
function abortTarget(state) {
  const stable = canaryRunning(state) ? state.canary.stable : state.currentRevision;
  return stable && state.updateRevision && stable !== state.updateRevision ? stable : null;
}

// What the dialog says before its fields.
const DESCRIBE = {
  pause: ({ boot }) =>
    h(
      "p",
      null,
      "Stops rollout progress on ",
      h("b", null, `${boot.namespace}/${boot.name}`),
      ": no update creates, deletes or drains start. Recovery of failed pods continues; work already started finishes.",
    ),
  resume: () => h("p", null, "The rollout continues from where it stopped."),
  promote: (model) => {
    const { state, revNumbers } = model;
    if (canaryRunning(state)) {
      const step = (state.canary.steps || [])[state.canary.stepIndex];
      return h(
        "p",
        null,
        "Skips canary step ",
        h("b", null, state.canary.stepIndex + 1),
        step ? ` (${stepText(step)})` : "",
        ": the next step of revision ",
        revLabel(state.updateRevision, revNumbers),
        " starts.",
      );
    }
    const p = partitionOf(state);
    // A registry's promote also promotes fully: at partition 0 that is all it can do.
    if (p <= 0) return DESCRIBE["promote-full"](model);
    return h(
      "p",
      null,
      "Lowers the partition from ",
      h("b", null, p),
      " to ",
      h("b", null, p - 1),
      `: group ${p - 1} becomes eligible for revision `,
      revLabel(state.updateRevision, revNumbers),
      ".",
    );
  },
  "promote-full": ({ state, revNumbers }) =>
    canaryRunning(state)
      ? h("p", null, "Skips every remaining canary step", state.spec.paused ? [" and ", h("b", null, "resumes"), " the paused rollout"] : null, ": every group moves to revision ", revLabel(state.updateRevision, revNumbers), ", within the unavailability budget.")
      : h(
      "p",
      null,
      "Sets the partition to ",
      h("b", null, "0"),
      state.spec.paused ? [" and ", h("b", null, "resumes"), " the paused rollout"] : null,
      ": every group moves to revision ",
      revLabel(state.updateRevision, revNumbers),
      ", within the unavailability budget.",
    ),
  abort: ({ state, revNumbers }) =>
    h(
      "p",
      null,
      "Stops the rollout of revision ",
      revLabel(state.updateRevision, revNumbers),
      canaryRunning(state) ? ` at canary step ${state.canary.stepIndex + 1}` : "",
      " and goes back to the stable revision ",
      revLabel(abortTarget(state), revNumbers),
      ": every group returns to it and the rollout stays ",
      h("b", null, "paused"),
      ". Resume retries.",
    ),
  rollback: () =>
    h(
      "p",
      null,
      "Writes the chosen revision's versioned fields (templates, images) into the spec and keeps runtime fields " +
        "(replicas, budgets, partition). It then rolls out like any change, as a new revision number.",
    ),
  "set-image": () =>
    h(
      "p",
      null,
      "Changes the container image in the role's entry and worker templates. This makes a new revision and starts a rollout.",
    ),
  scale: ({ state }) =>
    h(
      "p",
      null,
      "Sets the number of ServingGroups (now ",
      h("b", null, String(state.spec.replicas)),
      "). New groups start like any missing group; groups beyond the count drain (no new requests, those in flight finish) and are then deleted. 0 needs Allow zero.",
    ),
  autoscale: () =>
    h(
      "p",
      null,
      "Lets the autoscaler apply the Capacity panel's recommendation within the bounds (min 1 unless given, never 0), " +
        "at most once per cooldown and never during a rollout. Every change is in the audit trail (source autoscaler).",
    ),
  "autoscale-off": () => h("p", null, "Turns autoscale off; the number of ServingGroups stays where it is."),
  delete: ({ boot }) =>
    h(
      "p",
      null,
      "Deletes ",
      h("b", null, `${boot.namespace}/${boot.name}`),
      " with its pods and revisions. Requests still in flight on its pods are cut off.",
    ),
};

const TITLES = {
  pause: "Pause the rollout",
  resume: "Resume the rollout",
  rollback: "Roll back",
  abort: "Abort the rollout",
  "set-image": "Set the image of a role",
  scale: "Scale the ModelServing",
  autoscale: "Turn autoscale on",
  "autoscale-off": "Turn autoscale off",
  delete: "Delete the ModelServing",
};

// Controls that cannot be undone: their dialog asks for the ModelServing's name first.
const TYPE_NAME = new Set(["delete"]);

// The confirm button's word where it differs from the button's label.
const CONFIRMS = { promote: "Promote" };

const slug = (name) => String(name).replace(/_/g, "-");

// The registry as the server renders it (rolloutui.services.actions.page_description):
// {"actions": [{name, label, help, url, allowed, tone, fields: [{name, type, label, help, required,
// choicesFrom}], presets: [{key, label, values}]}]}, turned into the entries below. A preset
// (e.g. "promote-full" = promote with {"full": true}) is a button of its own; the fields it sets
// are not asked for in the plain action's dialog.
function fromServer(registry) {
  const out = [];
  for (const a of (registry && Array.isArray(registry.actions) ? registry.actions : [])) {
    if (!a || typeof a.name !== "string") continue;
    if (a.panel) continue; // driven by a panel of its own (apply-advice: the advisor), not a bar button
    const presets = Array.isArray(a.presets) ? a.presets : [];
    const preset = new Set(presets.flatMap((p) => Object.keys((p && p.values) || {})));
    const path = typeof a.url === "string" ? a.url.split("/").filter(Boolean).pop() : a.name;
    const fields = (Array.isArray(a.fields) ? a.fields : [])
      .filter((f) => f && !preset.has(f.name))
      .map((f) => ({
        ...f,
        type: f.choicesFrom === "roles" ? "role" : f.choicesFrom === "revisions" ? "revision" : f.type,
      }));
    const common = { granted: !!a.allowed, danger: a.tone === "danger", help: a.help || "" };
    out.push({ ...common, name: a.name, label: a.label, path, fields });
    for (const p of presets) {
      if (p && typeof p.key === "string") {
        out.push({ ...common, name: p.key, label: p.label || p.key, path, body: p.values || {}, fields: [] });
      }
    }
  }
  return out;
}

// A registry entry in the shape this module works with; anything malformed is dropped.
function normalise(entry, boot) {
  if (!entry || typeof entry !== "object" || typeof entry.name !== "string") return null;
  const name = slug(entry.name);
  const granted = typeof entry.granted === "boolean" ? entry.granted : boot.canOperate;
  const fields = (Array.isArray(entry.fields) ? entry.fields : []).filter(
    (f) => f && typeof f.name === "string" && f.name !== "reason",
  );
  return {
    name,
    label: String(entry.label || entry.name),
    granted,
    path: typeof entry.path === "string" ? entry.path : name,
    body: entry.body && typeof entry.body === "object" ? entry.body : {},
    fields,
    danger: typeof entry.danger === "boolean" ? entry.danger : name === "rollback",
    help: entry.help || entry.description || "",
  };
}

export function createControls({ boot, dialog, registry, onDone }) {
  const bar = byId("controls").querySelector(".controls-buttons");
  const why = byId("controls-why");
  let model = null;

  const actions = fromServer(registry)
    .map((entry) => normalise(entry, boot))
    .filter(Boolean);
  mount(
    bar,
    actions.map((a) =>
      h(
        "button",
        {
          class: "btn" + (a.name === "promote" ? " btn-primary" : a.danger ? " btn-danger" : ""),
          type: "button",
          dataset: { action: a.name },
          "data-testid": "btn-" + a.name,
        },
        a.label,
      ),
    ),
  );
  const byName = new Map(actions.map((a) => [a.name, a]));
  const buttonOf = (a) => bar.querySelector(`[data-action="${a.name}"]`);

  bar.addEventListener("click", (e) => {
    const b = e.target.closest("[data-action]");
    if (b && !b.disabled) open(b.dataset.action);
  });

  // Whether this user may run `name` at all (the revisions table asks before offering rollback).
  const granted = (name) => !!(byName.get(name) && byName.get(name).granted);

  function unavailable(a) {
    if (!a.granted) return VIEW_ONLY;
    const rule = UNAVAILABLE[a.name];
    return rule ? rule(model, a) : null;
  }

  function render(next) {
    model = next;
    const reasons = [];
    for (const a of actions) {
      const b = buttonOf(a);
      if (!b) continue;
      const reason = unavailable(a);
      b.disabled = !!reason;
      b.title = reason || "";
      if (reason && a.granted) reasons.push(h("span", null, h("b", null, a.label.replace("…", "")), ": ", reason));
      if (a.name === "promote") {
        const p = partitionOf(model.state);
        b.textContent = p > 0 ? `${a.label} (${p} → ${p - 1})` : a.label;
      }
    }
    const anyGranted = actions.some((a) => a.granted);
    if (anyGranted) mount(why, reasons);
    else mount(why, h("span", { class: "viewonly" }, VIEW_ONLY));
  }

  function input(a, f, preset) {
    const testId = FIELD_TEST_IDS[`${a.name}:${f.name}`] || `field-${a.name}-${f.name}`;
    const common = { name: f.name, "data-testid": testId };
    const { state, manifest } = model;
    if (f.type === "role" || f.name === "role") {
      return h(
        "select",
        common,
        roleNames(state, manifest).map((r) => h("option", { value: r, selected: preset === r }, r)),
      );
    }
    if (f.type === "revision" || f.name === "toRevision") {
      const revs = (state.revisions || []).filter((r) => r.readable !== false).reverse();
      return h(
        "select",
        common,
        revs.map((r) => {
          const target = r.hash === state.updateRevision;
          const text = `#${r.number} ${r.hash}${target ? " (current target)" : ""}${r.changeCause ? " — " + r.changeCause : ""}`;
          return h("option", { value: r.number, disabled: target, selected: preset === r.number }, text);
        }),
      );
    }
    if (Array.isArray(f.choices) && f.choices.length) {
      return h(
        "select",
        common,
        f.choices.map((c) => {
          const value = c && typeof c === "object" ? c.value : c;
          const label = c && typeof c === "object" ? (c.label ?? c.value) : c;
          return h("option", { value, selected: preset === value }, label);
        }),
      );
    }
    if (f.type === "boolean") return h("input", { ...common, type: "checkbox", checked: preset === true });
    if (f.type === "integer" || f.type === "number") {
      const p = partitionOf(state);
      const partition = a.name === "promote" && f.name === "partition";
      const below = partition && p > 0;
      return h("input", {
        ...common,
        type: "number",
        min: partition ? 0 : null,
        max: below ? p - 1 : null,
        placeholder: below ? p - 1 : null,
        value: preset,
      });
    }
    const placeholder =
      f.name === "image"
        ? currentImage(manifest, roleNames(state, manifest)[0]) || "registry/engine:tag"
        : f.name === "container"
          ? "first container"
          : null;
    return h("input", { ...common, type: "text", placeholder, value: preset });
  }

  function field(a, f, control) {
    const help = f.help ? h("span", { class: "field-help muted" }, f.help) : null;
    if (control.type === "checkbox") {
      return h("div", { class: "field" }, h("label", { class: "field-check" }, control, f.label || f.name), help);
    }
    return h("label", { class: "field" }, h("span", { class: "field-label" }, f.label || f.name), control, help);
  }

  // The request body from the dialog's inputs: numbers as numbers, empty optional fields left out.
  function bodyOf(a, controls, reason) {
    const body = { ...a.body, reason };
    for (const f of a.fields) {
      const el = controls.get(f.name);
      if (f.type === "boolean") {
        if (el.checked) body[f.name] = true;
        continue;
      }
      const raw = String(el.value).trim();
      if (raw === "" && !f.required) continue;
      const numeric = f.type === "integer" || f.type === "number" || f.type === "revision" || f.name === "toRevision";
      body[f.name] = numeric && raw !== "" ? Number(raw) : raw;
    }
    return body;
  }

  // Open the dialog of action `name`, with `preset` values ({toRevision: 2}) or one value for its
  // only field (the revisions table passes a revision number).
  function open(name, preset) {
    const a = byName.get(name);
    if (!a || unavailable(a) === VIEW_ONLY) return;
    const presets = preset !== null && typeof preset === "object" ? preset : preset === undefined ? {} : { [a.fields[0].name]: preset };
    const controls = new Map(a.fields.map((f) => [f.name, input(a, f, presets[f.name])]));
    const laidOut = new Set();
    const body = [DESCRIBE[a.name] ? DESCRIBE[a.name](model) : a.help ? h("p", null, a.help) : null];
    for (const row of ROWS[a.name] || []) {
      if (!row.every((n) => controls.has(n))) continue;
      body.push(h("div", { class: "form-row" }, row.map((n) => field(a, a.fields.find((f) => f.name === n), controls.get(n)))));
      row.forEach((n) => laidOut.add(n));
    }
    for (const f of a.fields) if (!laidOut.has(f.name)) body.push(field(a, f, controls.get(f.name)));
    // Set image: say what the chosen role runs now.
    const current = controls.has("image") && controls.has("role") ? h("p", { class: "muted" }) : null;
    body.push(current);
    dialog.open({
      title: TITLES[a.name] || a.label.replace("…", ""),
      body,
      confirm: CONFIRMS[a.name] || a.label.replace("…", ""),
      danger: a.danger,
      typeName: TYPE_NAME.has(a.name) ? boot.name : null,
      onConfirm: (reason) => post(pathOf(a), bodyOf(a, controls, reason)),
    });
    if (current) {
      const role = controls.get("role");
      const show = () => {
        const image = currentImage(model.manifest, role.value);
        current.textContent = image ? "Now: " + image : "";
      };
      role.addEventListener("change", show);
      show();
    }
  }

  // The endpoint: a registry path under /api/ as given, anything else relative to this
  // ModelServing's API URL ("pause" -> /api/modelservings/default/chat/pause).
  function pathOf(a) {
    return a.path.startsWith("/api/") ? a.path : boot.api + a.path.replace(/^\/+/, "");
  }

  return { render, open, granted };
}
