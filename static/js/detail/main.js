// Detail page of one ModelServing: live state over the websocket, controls through the REST API.
//
// Flow, one way: the websocket (stream.js) and the answers to controls put states into the store;
// on the next animation frame every panel renders from the model it is given
// ({state, revNumbers, manifest, conn, boot, releases}); panels never change the state themselves. Several
// messages within one frame render once.
//
// The server renders the first state into the page ("initial-state", in the compact form that
// compact.js expands: no blank screen while the socket opens); on a lost connection the page says
// so (indicator, banner, content dimmed) and reconnects by itself.

import { api } from "../lib/api.js";
import { readJson } from "../lib/dom.js";
import { actionLabel } from "../lib/format.js";
import { revisionNumbers } from "./common.js";
import { expandState } from "./compact.js";
import { createDialog, toast } from "./dialog.js";
import { createAdvisor } from "./panels/advisor.js";
import { createAudit } from "./panels/audit.js";
import { createCanary } from "./panels/canary.js";
import { createCapacity } from "./panels/capacity.js";
import { createCharts } from "./panels/charts.js";
import { createControls } from "./panels/controls.js";
import { createDrain } from "./panels/drain.js";
import { createHeader } from "./panels/header.js";
import { createPaths } from "./panels/paths.js";
import { createRelease } from "./panels/release.js";
import { createRevisions } from "./panels/revisions.js";
import { createRoles } from "./panels/roles.js";
import { createSimulation } from "./panels/simulation.js";
import { createStrategy } from "./panels/strategy.js";
import { createTopologyPanel } from "./panels/topology.js";
import { createWaits } from "./panels/waits.js";
import { connectStream, createStore } from "./stream.js";

const AUDIT_REFRESH_MS = 15000;

const boot = readJson("boot");
const phases = readJson("phases", []);
const registry = readJson("rollout-actions");
const plotlySrc = readJson("plotly-src");

// The state the server rendered the page with: the socket starts from it (stream.js).
const pageState = expandState(readJson("initial-state"));
const store = createStore({
  state: pageState,
  releases: readJson("releases"),
  manifest: null,
  conn: { kind: "connecting", text: "connecting", lastMessageAt: null },
});

// A control's answer carries the state after it; it replaces the shown state unless the socket
// already brought a newer one.
function controlDone(result) {
  // A deleted ModelServing has no page any more: back to the list.
  if (result && result.audit && result.audit.action === "delete" && result.audit.result === "ok") {
    location.href = "/";
    return;
  }
  const current = store.get().state;
  if (result && result.state && !(current && result.state.time <= current.time)) store.set({ state: result.state });
  audit.load();
  const a = result && result.audit;
  const warnings = (a && a.details && a.details.warnings) || [];
  const done = a ? `${actionLabel(a.action)}: done (${a.fromRevision || "—"} → ${a.toRevision || "—"})` : "Done";
  // Advice the server gave with the change (it refused nothing): said with the result, longer.
  toast(warnings.length ? `${done}. Warning: ${warnings.join(" ")}` : done, warnings.length ? 12000 : undefined);
}

const dialog = createDialog({ onDone: controlDone });
const audit = createAudit({ boot });
const charts = createCharts({ boot, plotlySrc });
const capacity = createCapacity({ boot, plotlySrc });
const simulation = createSimulation({ boot, dialog });
const advisor = createAdvisor({ boot, dialog });
const controls = createControls({ boot, dialog, registry, onDone: controlDone });
const topology = createTopologyPanel({ boot, onKillPod: (pod) => simulation.killPod(pod) });
const release = createRelease({ boot, initial: store.get().releases, onReleases: (releases) => store.set({ releases }) });
const panels = [
  createHeader({ boot, phases }),
  release,
  createCanary({ boot, plotlySrc }),
  createPaths({ boot, plotlySrc }),
  controls,
  topology,
  createWaits(),
  createDrain({ boot }),
  createRoles(),
  charts,
  // The capacity table's instance columns follow the same state message as the topology.
  capacity,
  createRevisions({
    boot: { ...boot, canOperate: boot.canOperate && controls.granted("rollback") },
    onRollback: (number) => controls.open("rollback", { toRevision: number }),
  }),
  createStrategy(),
  simulation,
  advisor,
];

async function loadManifest() {
  try {
    store.set({ manifest: await api(boot.api + "manifest/") });
  } catch {
    // the charts show no maxSkew, set-image no current image
  }
}

// What, when it changes, makes the audit and the manifest worth reading again.
const specSignature = (s) => JSON.stringify([s.spec, s.updateRevision, (s.revisions || []).length, s.generation]);

let frame = 0;
let model = null;
let lastState = null;
let lastSignature = specSignature(store.get().state);

function render() {
  frame = 0;
  const started = performance.now();
  const { state, manifest, conn, releases } = store.get();
  if (!model || model.state !== state) model = { ...model, state, revNumbers: revisionNumbers(state) };
  model = { ...model, manifest, conn, boot, releases };
  for (const panel of panels) panel.render(model);
  // Test and benchmark hooks: render time, time to the first complete render, render count.
  window.__lastRenderMs = performance.now() - started;
  if (window.__firstRenderMs === undefined) window.__firstRenderMs = performance.now();
  window.__renders = (window.__renders || 0) + 1;
  document.body.dataset.stateTime = String(state.time);
}

store.subscribe(({ state }) => {
  if (state !== lastState) {
    lastState = state;
    charts.observe(state);
    const signature = specSignature(state);
    if (signature !== lastSignature) {
      lastSignature = signature;
      audit.load();
      loadManifest();
      release.load();
    }
  }
  if (!frame) frame = requestAnimationFrame(render);
});

// After the first paint: the first render needs nothing but the state in the page, so what it does
// not need waits one frame: Plotly, the panels' API reads (simulation, advisor, capacity, the manifest,
// the charts' history, the audit) and the websocket (whose first message is the delta from the
// page's state, or the whole state when the server no longer holds it). Issued from the module's
// own task they held the first paint back, and on the server (one thread runs every view) they
// went ahead of whatever came next. A page hidden from the start gets no animation frames: the timer starts them then.
function afterFirstPaint(fn) {
  let started = false;
  const start = () => {
    if (started) return;
    started = true;
    fn();
  };
  requestAnimationFrame(() => setTimeout(start, 0));
  setTimeout(start, 250);
}

let stream = null;

function goLive() {
  // Plotly (4.6 MB of script to compile and run) too: loaded from the cache, it ran before the
  // first paint.
  charts.start();
  simulation.start();
  advisor.start();
  capacity.start();
  loadManifest();
  charts.loadHistory();
  audit.load();
  setInterval(audit.load, AUDIT_REFRESH_MS);
  stream = connectStream(boot.ws, {
    page: { state: pageState, token: boot.pageState },
    onState: (state) => store.set({ state }),
    onStatus: (kind, text) => {
      const previous = store.get().conn;
      store.set({ conn: { kind, text, lastMessageAt: kind === "live" ? new Date() : previous.lastMessageAt } });
    },
    onSignedOut: () => {
      location.href = "/accounts/login/?next=" + encodeURIComponent(location.pathname);
    },
  });
}

// Start: render the server-provided state at once, then go live.
lastState = store.get().state;
charts.observe(lastState);
render();
afterFirstPaint(goLive);

// Test and debugging hooks (read-only views, plus a way to simulate a dropped connection).
window.__rollout = {
  get state() {
    return store.get().state;
  },
  get wireState() {
    return stream ? stream.wireState : null;
  },
  samples: charts.samples,
  topo: topology.topo,
  dropSocket: () => stream && stream.drop(),
};
window.__rolloutCapacity = { points: capacity.points };
