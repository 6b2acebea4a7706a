// The live state of one ModelServing: the store the panels render from, the websocket that feeds
// it, and `applyDelta`, the page's half of the delta format (rolloutui/consumers.py `make_delta` is
// the other half; tests/dashboard/fixtures/deltas/ holds pairs written by make_delta that a
// browser test applies with this very function).
//
// Nothing here touches the DOM: the module loads on its own (the fixture test imports it into an
// empty page).
//
// Wire format. On connect the socket sends the full state (exactly the REST GET payload), or to a
// page that named the state it was rendered with, the delta from that state; then deltas; each message also carries `ack: {n, token}`, which the page echoes back as
// {type: "ack", n, token} and removes before using the message:
//   {type: "state.delta", base: <time of the state it applies to>,
//    set: {key: value},          top-level values that changed, whole
//    unset: [key],               top-level keys that are gone
//    lists: {name: {upsert: [item], patch: [[key, {field: value}, [removed field]]],
//                   remove: [key], patchSame?: [[[key, ...], {field: value}, [removed field]]],
//                   order?: [key]}},              patchSame: one change made alike to several items
//    time: <time of the new state>}
// A page whose state is not at `base` asks for the full state ({type: "resync"}) instead of
// guessing.

// How each keyed list identifies its items, and whether both ends keep it sorted by that identity
// (instances and groups are, in build_view; blocked and drain keep the planner's order, which a
// delta carries in `order` whenever appending new items would not reproduce it). The same table
// as KEYED_LISTS in rolloutui/consumers.py.
export const LISTS = {
  instances: { key: (i) => [i.group, i.role, i.ordinal], sorted: true },
  groups: { key: (g) => [g.ordinal], sorted: true },
  blocked: { key: (b) => [b.group, b.role, b.kind], sorted: false },
  drain: { key: (d) => [d.pod], sorted: false },
};

// A key on the wire is a list (instances, blocked) or a scalar (groups, drain): both become the
// same text, so [3] and 3 name the same group.
const keyText = (k) => JSON.stringify(Array.isArray(k) ? k : [k]);

// Python's tuple order, with null first (the planner sorts group-less reasons ahead).
function cmpKeys(a, b) {
  for (let i = 0; i < a.length; i++) {
    if (a[i] === b[i]) continue;
    if (a[i] === null || a[i] === undefined) return -1;
    if (b[i] === null || b[i] === undefined) return 1;
    return a[i] < b[i] ? -1 : 1;
  }
  return 0;
}

function mergeList(list, change, spec) {
  const byKey = new Map(list.map((x) => [keyText(spec.key(x)), x]));
  const order = list.map((x) => keyText(spec.key(x)));
  for (const k of change.remove || []) byKey.delete(keyText(k));
  const patches = [...(change.patch || [])];
  for (const [keys, fields, gone] of change.patchSame || []) for (const k of keys) patches.push([k, fields, gone]);
  for (const [k, fields, gone] of patches) {
    const prev = byKey.get(keyText(k));
    if (!prev) continue;
    // Spread, not Object.assign: it defines own properties, so even a key named "__proto__"
    // stays data.
    const item = { ...prev, ...fields };
    for (const f of gone) delete item[f];
    byKey.set(keyText(k), item);
  }
  for (const u of change.upsert || []) {
    const k = keyText(spec.key(u));
    if (!byKey.has(k)) order.push(k);
    byKey.set(k, u);
  }
  if (change.order) return change.order.map((k) => byKey.get(keyText(k)));
  if (spec.sorted) return [...byKey.values()].sort((a, b) => cmpKeys(spec.key(a), spec.key(b)));
  return order.filter((k) => byKey.has(k)).map((k) => byKey.get(k));
}

// The state `delta` turns `base` into. Pure: base is not modified.
export function applyDelta(base, delta) {
  const next = { ...base, ...(delta.set || {}) };
  for (const k of delta.unset || []) delete next[k];
  for (const [name, change] of Object.entries(delta.lists || {})) {
    const spec = LISTS[name];
    if (!spec) throw new Error(`delta names an unknown list ${JSON.stringify(name)}`);
    next[name] = mergeList(base[name] || [], change, spec);
  }
  next.time = delta.time;
  return next;
}

// The page's store: one value ({state, manifest, conn, ...}) replaced by `set` with a shallow
// merge; subscribers are told after every change and read what they need.
export function createStore(initial) {
  let value = initial;
  const subscribers = new Set();
  return {
    get: () => value,
    set(patch) {
      value = { ...value, ...patch };
      for (const fn of subscribers) fn(value);
    },
    subscribe(fn) {
      subscribers.add(fn);
      return () => subscribers.delete(fn);
    },
  };
}

// Close codes the server uses (rolloutui/consumers.py): no point reconnecting after these.
const CLOSE_UNAUTHENTICATED = 4401;
const CLOSE_FORBIDDEN = 4403;
const CLOSE_NOT_FOUND = 4404;

// A delta that changes nothing: the server's first message to a page that holds the newest state.
const unchanged = (msg) =>
  msg.time === msg.base &&
  !Object.keys(msg.set || {}).length &&
  !(msg.unset || []).length &&
  !Object.keys(msg.lists || {}).length;

// The websocket with reconnect (growing back-off with jitter, at most 10 s). `onState(state)`
// gets every state rebuilt from the wire; `onStatus(kind, text)` says how the connection is:
// kind is "connecting", "live", "stale" (reconnecting) or "down" (given up, text says why).
// `page`: {state, token}, the state the page was rendered with and the server's token for it
// (boot.pageState): the first connection names it, and the server, which still holds that state
// for a moment (rolloutui/pagestates.py), sends the delta from it instead of the whole state again.
export function connectStream(path, { onState, onStatus, onSignedOut, page = null }) {
  let socket = null;
  let attempts = 0;
  let wireState = null;
  let pageState = page && page.state && page.token ? page : null;

  function open() {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    let url = path;
    if (pageState) {
      url += (url.includes("?") ? "&" : "?") + "page=" + encodeURIComponent(pageState.token);
      wireState = pageState.state;
      pageState = null; // a token is good once: a reconnect is sent the whole state
    }
    const ws = new WebSocket(proto + "//" + location.host + url);
    socket = ws;
    ws.onopen = () => {
      attempts = 0;
    };
    ws.onmessage = (e) => {
      // A socket on its way out (closing, or replaced by a reconnect) may still deliver what was
      // in flight; it must not mark the page live again.
      if (ws !== socket || ws.readyState !== WebSocket.OPEN) return;
      const msg = JSON.parse(e.data);
      // Acknowledge every message by echoing its sequence number and token (a field the server
      // adds to each message, not part of the state or the delta): the server drops a client
      // whose unacknowledged output grows past its bound (one that does not read), so it never
      // buffers without limit, and only a client that read a message has its token.
      const ack = msg.ack;
      delete msg.ack;
      if (ack) ws.send(JSON.stringify({ type: "ack", n: ack.n, token: ack.token }));
      onStatus("live", "live");
      if (msg.type === "state.delta") {
        // A delta applies to the exact state it was computed from; anything else asks for the
        // full state rather than guessing.
        if (!wireState || msg.base !== wireState.time) {
          ws.send(JSON.stringify({ type: "resync" }));
          return;
        }
        // Nothing newer than what the page shows: no state to hand on, no render.
        if (unchanged(msg)) return;
        wireState = applyDelta(wireState, msg);
      } else {
        wireState = msg;
      }
      if (wireState.deleted) {
        onStatus("down", "ModelServing deleted");
        return;
      }
      onState(wireState);
    };
    ws.onclose = (e) => {
      if (ws !== socket) return;
      if (e.code === CLOSE_UNAUTHENTICATED) {
        onStatus("down", "signed out");
        if (onSignedOut) onSignedOut();
        return;
      }
      if (e.code === CLOSE_FORBIDDEN) return onStatus("down", "no permission");
      if (e.code === CLOSE_NOT_FOUND) return onStatus("down", "ModelServing deleted");
      attempts++;
      const delay = Math.min(10000, 500 * 2 ** Math.min(attempts, 5)) * (0.8 + Math.random() * 0.4);
      onStatus("stale", `reconnecting (${attempts})…`);
      setTimeout(open, delay);
    };
  }

  onStatus("connecting", "connecting");
  open();
  return {
    get wireState() {
      return wireState;
    },
    // Drop the connection as a network blip would (tests and debugging); it reconnects by itself.
    drop() {
      if (!socket) return;
      // Closing is a handshake that a busy server may answer late: say "reconnecting" at once.
      onStatus("stale", "reconnecting…");
      socket.close();
    },
  };
}
