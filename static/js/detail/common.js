// Small views shared by several panels of the detail page.

import { h } from "../lib/dom.js";
import { revisionColour } from "../lib/colors.js";

// Revision numbers by hash, from the state's history: the "#N" labels come from them (colours
// follow the hash itself: lib/colors.js).
export function revisionNumbers(state) {
  return new Map((state.revisions || []).map((r) => [r.hash, r.number]));
}

// "#3 abc123" with the revision's colour dot; "—" without a hash.
export function revLabel(hash, revNumbers) {
  if (!hash) return "—";
  const n = revNumbers.get(hash);
  return [
    n ? [h("span", { class: "rev-dot", style: { background: revisionColour(hash) } }), `#${n} `] : null,
    h("span", { class: "mono" }, hash),
  ];
}

// Role names in the order the status gives them, else the manifest's, else the instances'.
export function roleNames(state, manifest) {
  const fromState = (state.roles || []).map((r) => r.name);
  if (fromState.length) return fromState;
  const fromSpec = manifestRoles(manifest).map((r) => r.name);
  return fromSpec.length ? fromSpec : [...new Set((state.instances || []).map((i) => i.role))];
}

function manifestRoles(manifest) {
  const template = manifest && manifest.spec && manifest.spec.template;
  return (template && template.roles) || [];
}

// The image of a role's entry template (its first container), from the manifest.
export function currentImage(manifest, role) {
  const r = manifestRoles(manifest).find((x) => x.name === role);
  const spec = r && r.entryTemplate && r.entryTemplate.spec;
  const c = spec && (spec.containers || [])[0];
  return c ? c.image : null;
}
