// Formatting shared by the pages: ages, ordinal ranges, the partition, phase badges.

// 42 -> "42s", 600 -> "10m", 7200 -> "2h", 200000 -> "2d".
export function fmtAge(seconds) {
  if (seconds == null || Number.isNaN(seconds)) return "—";
  const s = Math.max(0, seconds);
  if (s < 90) return Math.round(s) + "s";
  if (s < 5400) return Math.round(s / 60) + "m";
  if (s < 129600) return Math.round(s / 3600) + "h";
  return Math.round(s / 86400) + "d";
}

// [0, 1, 2, 5, 7, 8] -> "0–2, 5, 7–8"
export function ranges(nums) {
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

// The partition as one number: the view gives a number, or per-role partitions ({prefill: 2,
// decode: 1}) when they differ; the highest one is what still holds groups back.
export function partitionOf(state) {
  const p = state.spec ? state.spec.partition : 0;
  if (typeof p === "number") return p;
  if (p && typeof p === "object") return Math.max(0, ...Object.values(p).map(Number).filter((n) => !Number.isNaN(n)));
  return Number(p) || 0;
}

// The badge classes of a phase. Only the phases the server declares (controller.core.phases,
// passed with json_script) get a colour class; anything else (status is untyped) is a plain badge.
export function phaseClass(phase, phases) {
  return (phases || []).includes(phase) ? "phase phase-" + String(phase).toLowerCase() : "phase";
}

// Cluster time is epoch seconds on a live cluster (and the wall-clock simulation), virtual seconds
// in a scenario: the former are shown as clock times, the latter as seconds.
export const isEpoch = (t) => t > 1e9;
// "sha256:9f2c4e1a77b0…": enough of a digest to tell two apart; the full one is in the title.
export function shortDigest(digest) {
  const text = String(digest || "");
  return text.length > 19 ? `${text.slice(0, 19)}…` : text;
}

// An audit action as people read it: "promote_release" -> "Promote release", "isvc_set_image" ->
// "Set image" (the InferenceService's page and its history say which kind it is). The stored name
// stays the API's and the filters' word; the pages show this.
export function actionLabel(action) {
  const words = String(action ?? "").replace(/^isvc_/, "").replace(/_/g, " ").trim();
  return words ? words[0].toUpperCase() + words.slice(1) : "—";
}

// A refusal's message as people read it: the audit keeps the exception's class in front for API
// clients ("ControlError: image: must not be empty"); the pages drop the names of the refusals
// (a control's rule, a permission, an approval) and keep the rest: words such as "Forbidden:" and
// the class of anything unexpected, which is then the clue.
const REFUSALS = /^(ControlError|ControlDenied|ManifestError|ImmutableRecord|ApprovalRequired|FourEyes): /;
export function readableError(text) {
  return String(text ?? "").replace(REFUSALS, "");
}
