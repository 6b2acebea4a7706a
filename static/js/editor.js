// The YAML editor page: a manifest as text (a new one, or the stored one of a ModelServing with
// its resourceVersion), checked as the operator types and applied through the action registry's
// `apply` action (json_script "manifest-actions": its URL, label and whether this user may run it).
//
// The editor is a plain <textarea> beside a line-number gutter (no editor bundle to vendor): each
// error the server reports ({document, path, line, message}, from POST /api/manifests/validate or
// from the apply itself) marks its line in the gutter and is listed below with its field path;
// clicking an error selects that line in the text. Warnings (the probe advice of validate) are
// marked and listed the same way, in the warning colour, and never keep the manifest from applying.
//
// Read-only (boot.readOnly): the stored manifest of a namespace this user may view but not operate
// in, with secret-looking values masked by the server. It is only shown: no check, no apply, no
// file loading (the page renders none of those controls).

import { post } from "./lib/api.js";
import { byId, h, mount, readJson } from "./lib/dom.js";
import { createDialog, toast } from "./detail/dialog.js";

const boot = readJson("editor-boot");
const readOnly = Boolean(boot.readOnly);
const registry = readJson("manifest-actions", { actions: [] });
const apply = (registry.actions || []).find((a) => a.name === "apply");

const text = byId("editor-text");
const gutter = byId("editor-gutter");
const errorsEl = byId("editor-errors");
const summary = byId("editor-summary");
const applyButton = byId("editor-apply");
const result = byId("editor-result");

let errors = [];
let warnings = [];
let documents = [];
let checking = 0;
let timer = 0;

// Line numbers, each error's line marked (class "bad", its messages as the title).
function drawGutter() {
  const count = text.value.split("\n").length;
  const bad = new Map();
  const warned = new Map();
  for (const e of errors) if (e.line) bad.set(e.line, [...(bad.get(e.line) || []), messageOf(e)]);
  for (const w of warnings) if (w.line) warned.set(w.line, [...(warned.get(w.line) || []), messageOf(w)]);
  const lines = [];
  for (let i = 1; i <= count; i++) {
    // An error outranks a warning on the same line.
    const marks = bad.get(i) || warned.get(i);
    const attrs = marks ? { class: bad.has(i) ? "bad" : "warn", title: marks.join("\n"), "data-line": i } : { "data-line": i };
    lines.push(h("span", attrs, String(i)), "\n");
  }
  mount(gutter, lines);
  gutter.scrollTop = text.scrollTop;
}

const messageOf = (e) => (e.path ? e.path + ": " : "") + e.message;
const action = (d, before, after) => (d.exists == null ? "" : `${before}${d.exists ? "update" : "create"}${after}`);

function selectLine(line) {
  const starts = [0];
  for (let i = 0; i < text.value.length; i++) if (text.value[i] === "\n") starts.push(i + 1);
  const from = starts[line - 1] ?? 0;
  const to = line < starts.length ? starts[line] - 1 : text.value.length;
  text.focus();
  text.setSelectionRange(from, to);
}

function drawErrors() {
  const item = (e, kind) =>
    h(
      "li",
      { class: `editor-${kind}`, "data-testid": `editor-${kind}`, "data-line": e.line || "", "data-path": e.path || "" },
      h(
        "button",
        { type: "button", class: "link", onclick: () => e.line && selectLine(e.line) },
        e.line ? `line ${e.line}` : "manifest",
      ),
      documents.length > 1 || (e.document || 0) > 0 ? ` (document ${(e.document || 0) + 1})` : "",
      " ",
      e.path ? h("code", null, e.path) : null,
      e.path ? ": " : "",
      e.message,
    );
  mount(errorsEl, errors.map((e) => item(e, "error")), warnings.map((w) => item(w, "warning")));
  drawGutter();
  // exists is null where this user may not view the namespace: the server does not say.
  const names = documents.filter((d) => d.name).map((d) => `${d.namespace}/${d.name}${action(d, " (", ")")}`);
  const skipped = documents.filter((d) => d.skipped).length;
  summary.textContent = errors.length
    ? `${errors.length} error${errors.length > 1 ? "s" : ""}`
    : `valid: ${names.join(", ")}${skipped ? `; ${skipped} other document${skipped > 1 ? "s" : ""} skipped` : ""}` +
      (warnings.length ? `; ${warnings.length} warning${warnings.length > 1 ? "s" : ""}` : "");
  summary.className = errors.length ? "error" : "ok";
  applyButton.disabled = !apply || !apply.allowed || errors.length > 0 || !names.length;
  applyButton.title = !apply || !apply.allowed ? "View only: your account may not apply manifests." : "";
}

async function check() {
  const mine = ++checking;
  summary.textContent = "checking…";
  try {
    const answer = await post(boot.validate, { manifest: text.value });
    if (mine !== checking) return; // a newer check is on its way
    errors = answer.errors || [];
    warnings = answer.warnings || [];
    documents = answer.documents || [];
  } catch (err) {
    if (mine !== checking) return;
    errors = (err.data && err.data.errors) || [{ line: null, path: "", message: err.message }];
    warnings = [];
    documents = [];
  }
  drawErrors();
}

function changed() {
  drawGutter();
  clearTimeout(timer);
  timer = setTimeout(check, 300);
}

const dialog = readOnly ? null : createDialog({
  onDone: (answer) => {
    const records = (answer && answer.audit) || [];
    mount(
      result,
      h(
        "ul",
        { class: "applied" },
        records.map((r) =>
          h(
            "li",
            { "data-testid": "applied" },
            h("a", { href: `/modelservings/${encodeURIComponent(r.namespace)}/${encodeURIComponent(r.name)}/` }, `${r.namespace}/${r.name}`),
            `: ${(r.details && r.details.outcome) || r.result}`,
          ),
        ),
      ),
    );
    toast(records.map((r) => `${r.namespace}/${r.name} ${(r.details && r.details.outcome) || ""}`).join(", "));
    // One ModelServing: go and watch it come up (or roll out).
    if (records.length === 1) location.href = `/modelservings/${encodeURIComponent(records[0].namespace)}/${encodeURIComponent(records[0].name)}/`;
  },
});

applyButton?.addEventListener("click", () => {
  if (applyButton.disabled) return;
  const names = documents.filter((d) => d.name);
  dialog.open({
    title: apply.label,
    body: [
      h("p", null, apply.help),
      h(
        "ul",
        null,
        names.map((d) => h("li", null, h("b", null, `${d.namespace}/${d.name}`), action(d, " — ", ""))),
      ),
    ],
    confirm: "Apply",
    onConfirm: async (reason) => {
      try {
        return await post(apply.url, { manifest: text.value, reason });
      } catch (err) {
        if (err.data && err.data.errors) {
          errors = err.data.errors;
          drawErrors();
        }
        throw err;
      }
    },
  });
});

byId("editor-file")?.addEventListener("change", async (e) => {
  const file = e.target.files && e.target.files[0];
  if (!file) return;
  text.value = await file.text();
  changed();
});

if (!readOnly) text.addEventListener("input", changed);
text.addEventListener("scroll", () => {
  gutter.scrollTop = text.scrollTop;
});
// A tab in YAML is an error: insert two spaces instead of leaving the field.
text.addEventListener("keydown", (e) => {
  if (readOnly || e.key !== "Tab" || e.shiftKey) return;
  e.preventDefault();
  text.setRangeText("  ", text.selectionStart, text.selectionEnd, "end");
  changed();
});

text.value = boot.text || "";
drawGutter();
if (!readOnly) check();
// Test hook: the errors and documents as last reported.
window.__editor = {
  get errors() {
    return errors;
  },
  get documents() {
    return documents;
  },
};
