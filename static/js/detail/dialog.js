// The confirmation dialog every control goes through (one <dialog> in the page), and the toast.
//
// A dialog has a title, a body (DOM nodes: descriptions and the control's fields), a required
// reason (it goes to the audit) and a confirm button that stays disabled until a reason is typed.
// A destructive control may also ask for its object's name (`typeName`), as Argo CD's delete
// does: the button stays disabled until the name is typed exactly, so a stray click on the wrong
// page deletes nothing.
// `onConfirm(reason)` returns a promise; its rejection's message is shown in the dialog, which
// stays open so the operator can correct the input.

import { byId, h, mount } from "../lib/dom.js";

export function createDialog({ onDone }) {
  const dialog = byId("dialog");
  const reasonInput = byId("dialog-reason");
  const confirmButton = byId("dialog-confirm");
  const errorBox = byId("dialog-error");
  let onConfirm = null;
  let nameInput = null;
  let nameToType = null;

  const nameTyped = () => nameToType === null || (nameInput !== null && nameInput.value === nameToType);
  const refresh = () => {
    confirmButton.disabled = !reasonInput.value.trim() || !nameTyped();
  };
  reasonInput.addEventListener("input", refresh);
  byId("dialog-cancel").addEventListener("click", () => dialog.close());
  byId("dialog-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const reason = reasonInput.value.trim();
    if (!reason) {
      errorBox.textContent = "A reason is required.";
      return;
    }
    if (!nameTyped()) {
      errorBox.textContent = `Type ${nameToType} to confirm.`;
      return;
    }
    confirmButton.disabled = true;
    try {
      const result = await onConfirm(reason);
      dialog.close();
      onDone(result);
    } catch (err) {
      errorBox.textContent = err.message;
      confirmButton.disabled = false;
    }
  });

  // open({title, body: [nodes], confirm: "Pause", danger, typeName, onConfirm}) -> the dialog's
  // body element (for fields that react to each other, such as set-image's current image).
  function open({ title, body, confirm, danger = false, typeName = null, onConfirm: handler }) {
    byId("dialog-title").textContent = title;
    nameToType = typeName === null || typeName === undefined ? null : String(typeName);
    nameInput = null;
    const typeField = [];
    if (nameToType !== null) {
      nameInput = h("input", {
        type: "text",
        name: "confirm-name",
        autocomplete: "off",
        spellcheck: "false",
        "data-testid": "dialog-type-name",
      });
      nameInput.addEventListener("input", refresh);
      typeField.push(
        h("label", { class: "field" }, h("span", { class: "field-label" }, "Type ", h("b", { class: "mono" }, nameToType), " to confirm"), nameInput),
      );
    }
    const bodyEl = mount(byId("dialog-body"), [...(Array.isArray(body) ? body : [body]), ...typeField]);
    reasonInput.value = "";
    errorBox.textContent = "";
    confirmButton.textContent = confirm;
    confirmButton.className = "btn " + (danger ? "btn-danger-solid" : "btn-primary");
    confirmButton.disabled = true;
    onConfirm = handler;
    dialog.showModal();
    reasonInput.focus();
    return bodyEl;
  }

  return { open };
}

let toastTimer = 0;

export function toast(text, ms = 3500) {
  let t = document.querySelector(".toast");
  if (!t) {
    t = h("div", { class: "toast", role: "status" });
    document.body.appendChild(t);
  }
  t.textContent = text;
  t.classList.add("show");
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => t.classList.remove("show"), ms);
}
