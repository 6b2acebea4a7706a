// Revision colours: a revision's colour follows its HASH, never its number. Rollbacks renumber
// revisions (the restored one gets the next number), and a colour by number would repaint the
// same pods blue, then teal, then pink as it moved; by hash, the same template keeps one colour
// on every page and panel: the topology, its legend and the revisions table, the InferenceService's
// pods and traffic split, and the canary charts' series.
//
// The palette: ten hues far enough apart to tell apart side by side, each at least 4.5:1 against
// white (white text on them reads, WCAG 1.4.3; graphics need 3:1), none the red the pages keep for failures. Two hashes may share a
// colour (1 in 10): the "#N" labels and the legend tell them apart; state never rests on colour
// (the topology's cells carry a glyph, see topology.js).

export const REVISION_PALETTE = [
  "#3b6fd4", // blue
  "#b05f00", // orange
  "#12806b", // teal
  "#8c5bd6", // violet
  "#c2417a", // pink
  "#4e7a12", // green
  "#4b6584", // slate
  "#9a5a2a", // brown
  "#1a7aa3", // sky
  "#806800", // ochre
];

// FNV-1a (32 bit) of the text: stable across page loads, browsers and renumbering.
export function hashText(text) {
  let h = 0x811c9dc5;
  const s = String(text);
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

// The colour of a revision, from its hash (any text: a ControllerRevision hash, a ReplicaSet's
// pod-template-hash, an image). No hash: a neutral grey.
export function revisionColour(hash) {
  if (hash == null || hash === "") return "#8a929c";
  return REVISION_PALETTE[hashText(hash) % REVISION_PALETTE.length];
}

// "#rrggbb" at an opacity, for fills.
export function alpha(hex, a) {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255},${(n >> 8) & 255},${n & 255},${a})`;
}
