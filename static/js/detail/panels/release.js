// Release panel of the ModelServing page: which release runs here (environment, "r31 · v12", its
// status and why), the serving-gate funnel from the state (`gateFunnel`: instances per highest gate,
// the slowest per gate), and "Ready / Serving" side by side in the header facts, because a Ready pod
// is not yet a serving one.
//
// The releases come from the page (json_script "releases") and from GET boot.releasesApi, re-read
// when the spec's revision or the rollout's outcome changes, and every few seconds while the
// release is Deploying (the controller moves it to Serving or Failed). `releasesOf()` gives the
// latest answer to other panels (the Revisions panel shows "r31 · v12" beside each hash).

import { api } from "../../lib/api.js";
import { byId, h, memo, mount } from "../../lib/dom.js";
import { deployReason, fmtSeconds, GATES, readyServing, statusBadge } from "../../releases/common.js";

export { GATES };

const POLL_DEPLOYING_MS = 3000;

export function createRelease({ boot, initial, onReleases }) {
  let releases = initial || { environment: null, active: null, byRevision: {}, history: [] };
  const summaryChanged = memo();
  const funnelChanged = memo();
  let lastSignature = null;
  let timer = 0;
  let loading = false;

  async function load() {
    if (loading) return;
    loading = true;
    try {
      releases = await api(boot.releasesApi);
      onReleases(releases);
    } catch {
      // keep the last answer; the next state change or poll tries again
    } finally {
      loading = false;
    }
  }

  function schedule() {
    clearTimeout(timer);
    const active = releases.active;
    if (active && (active.status === "Deploying" || active.status === "Pending")) {
      timer = setTimeout(async () => {
        await load();
        schedule();
      }, POLL_DEPLOYING_MS);
    }
  }

  function renderSummary() {
    const env = releases.environment;
    byId("release-env").textContent = env ? `environment ${env}${releases.requiresApproval ? " · approval required" : ""}` : "";
    const a = releases.active;
    mount(
      byId("fact-release"),
      a ? [h("span", { class: "rel-label" }, a.label), " ", statusBadge(a.status)] : h("span", { class: "muted" }, "—"),
    );
    if (!env) {
      mount(
        byId("release-summary"),
        h("p", { class: "calm" }, "No environment targets this ModelServing: its changes are not releases. "),
        h("a", { href: boot.releasesPage }, "Releases"),
      );
      return;
    }
    if (!a) {
      // Releases were made here but none is live (a change no release wrote superseded the last
      // one): say so and show that release, which the Revisions panel still names beside its hash.
      const last = (releases.history || []).find((r) => r.status !== "Pending");
      mount(
        byId("release-summary"),
        last
          ? [
              h("p", { class: "calm" }, `No release is live here: the ModelServing runs a change no release wrote. The last release to ${env}:`),
              h("p", { class: "release-line" }, h("span", { class: "rel-label" }, last.label), " ", statusBadge(last.status), " ", h("span", { class: "mono" }, `${last.model}:${last.version}`)),
              last.statusReason ? h("p", { class: "release-why" }, last.statusReason) : null,
            ]
          : h("p", { class: "calm" }, `Nothing released to ${env} here yet.`),
      );
      return;
    }
    const mv = a.modelVersion || {};
    const rev = a.controllerRevision;
    mount(
      byId("release-summary"),
      h(
        "p",
        { class: "release-line" },
        h("span", { class: "rel-label" }, a.label),
        " ",
        statusBadge(a.status),
        " ",
        h("span", { class: "mono" }, mv.key || ""),
        // As the audit names revisions: the number it got, the hash, and its number now if a rollback re-numbered it.
        rev
          ? [
              " → ",
              h(
                "span",
                { class: "mono", "data-testid": "release-revision" },
                `revision ${rev.number ? `#${rev.number} ` : ""}(hash ${rev.hash})`,
                rev.now && rev.number && rev.now !== rev.number ? `, now #${rev.now}` : "",
              ),
            ]
          : null,
      ),
      a.statusReason && a.status !== "Deploying" ? h("p", { class: a.status === "Failed" ? "field-error" : "release-why" }, a.statusReason) : null,
      h(
        "p",
        { class: "release-why" },
        a.restores ? `Rollback to r${a.restores}. ` : "",
        a.promotedFrom ? `Promoted from ${a.promotedFrom.environment} r${a.promotedFrom.number}. ` : "",
        `By ${a.deployedBy || a.createdBy || "?"}: `,
        deployReason(a),
      ),
    );
  }

  function renderFunnel(state) {
    const funnel = Array.isArray(state.gateFunnel) ? state.gateFunnel : null;
    const rs = readyServing(state);
    byId("fact-serving").textContent = `${rs.ready} / ${rs.gates ? rs.serving : "—"} of ${rs.total}`;
    byId("gate-sub").textContent = rs.gates ? `Ready ${rs.ready} · Serving ${rs.serving} of ${rs.total}` : "";
    if (!funnel) {
      mount(byId("gate-funnel"), h("p", { class: "calm" }, "The controller reports no serving gates for this ModelServing."));
      return;
    }
    // The denominator is the set the controller counts the funnel over (gateFunnelTotal: the
    // instances the spec asks for), not the instances present now: those come and go while a
    // rollout runs (surge groups, old ones draining), and the bars jumped with them.
    const specTotal = Number.isInteger(state.gateFunnelTotal) ? state.gateFunnelTotal : null;
    const total = Math.max(1, specTotal ?? rs.total);
    const counted = funnel.reduce((n, f) => n + (Number(f.count) || 0), 0);
    const failed = new Map();
    for (const i of state.instances || []) if (i.gateFailed) failed.set(i.gateFailed, (failed.get(i.gateFailed) || 0) + 1);
    const rows = funnel.map((f) => {
      const slow = f.slowest;
      const waitingOn = GATES[GATES.indexOf(f.gate) + 1];
      return h(
        "div",
        { class: "gate-row" + (failed.has(f.gate) ? " gate-failed" : ""), dataset: { gate: f.gate, count: f.count } },
        h("span", { class: "gate-name" }, f.gate),
        h("span", { class: "gate-bar" }, h("i", { style: { width: `${(100 * f.count) / total}%` } })),
        h("span", { class: "num gate-count" }, f.count),
        h(
          "span",
          { class: "gate-slowest", title: slow ? "the instance at this gate that has waited longest for the next" : "" },
          slow
            ? `slowest: group ${slow.group} ${slow.role}-${slow.ordinal}, ${fmtSeconds((state.time ?? slow.since) - slow.since)} waiting for ${waitingOn || "—"}`
            : "",
          failed.has(f.gate) ? h("span", { class: "warn" }, ` · ${failed.get(f.gate)} failed here`) : null,
          f.fromLoaded
            ? h(
                "span",
                {
                  class: "gate-from-loaded",
                  title: "time from Ready (every pod Ready) to Routed (the router sends it requests), over the routed instances",
                },
                ` · Ready → Routed: median ${fmtSeconds(f.fromLoaded.medianSeconds)}, max ${fmtSeconds(f.fromLoaded.maxSeconds)}`,
              )
            : null,
        ),
      );
    });
    const what =
      specTotal === null
        ? "Instances at their highest gate."
        : `Of the ${specTotal} instances the spec asks for (replicas × each role's replicas), each at its highest gate; ` +
          "instances leaving (draining, terminating) and surge groups are not counted" +
          (specTotal > counted ? `, and ${specTotal - counted} not created yet.` : ".");
    mount(
      byId("gate-funnel"),
      rows,
      h("p", { class: "muted gate-note" }, what, " Ready (Kubernetes) is Loaded; Routed is when the router has the pod as a target; Serving also needs the verification."),
    );
  }

  function render(model) {
    const state = model.state;
    // What, when it changes, may have moved the release: the revision rolled out, convergence, phase.
    const signature = JSON.stringify([state.updateRevision, state.currentRevision, state.converged, state.phase]);
    if (signature !== lastSignature) {
      const first = lastSignature === null;
      lastSignature = signature;
      if (!first) load().then(schedule);
      else schedule();
    }
    if (summaryChanged(releases)) renderSummary();
    const funnelKey = JSON.stringify([Math.floor(state.time || 0), state.gateFunnel, state.gateFunnelTotal, (state.instances || []).map((i) => [i.state, i.gate, i.gateFailed])]);
    if (funnelChanged(funnelKey)) renderFunnel(state);
  }

  return { render, load, releasesOf: () => releases };
}
