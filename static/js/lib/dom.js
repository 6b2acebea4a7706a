// Building DOM without HTML strings.
//
// Every value the server sends (status, strategy, revision names, reasons, audit text) reaches the
// page as a text node or an element property, never as markup: ModelServing status is untyped in
// the CRD, so a phase of `<img src=x onerror=...>` must show as those characters and run nothing.
// Nothing here parses HTML; `h` is the only way the scripts make elements.
//
//   h("td", { class: "mono", title: rev.hash }, "#", 3, " ", rev.hash)
//   -> <td class="mono" title="...">#3 abc123</td>, each part a text node.

// h(tag, props, ...children): props are `class`, `text`, `style` (an object of CSS properties),
// `dataset`, `on<event>` (a function), and plain attributes (set with setAttribute, so a value is
// never parsed). Children may be strings, numbers, nodes, arrays of those, or null/false (skipped).
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  if (props) {
    for (const [key, value] of Object.entries(props)) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") el.className = value;
      else if (key === "text") el.textContent = String(value);
      else if (key === "style") Object.assign(el.style, value);
      else if (key === "dataset") Object.assign(el.dataset, value);
      else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

// Append children (same rules as h) to a node.
export function append(parent, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else if (child instanceof Node) parent.appendChild(child);
    else parent.appendChild(document.createTextNode(String(child)));
  }
  return parent;
}

// Replace everything inside `el` with `children`.
export function mount(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

export const byId = (id) => document.getElementById(id);

// Data the server put in the page with Django's json_script (never an inline script).
export function readJson(id, fallback = null) {
  const el = document.getElementById(id);
  return el ? JSON.parse(el.textContent) : fallback;
}

// A render step that runs only when its input changed: `const once = memo(); if (once(key)) ...`.
export function memo() {
  let last;
  return (key) => {
    if (key === last) return false;
    last = key;
    return true;
  };
}
