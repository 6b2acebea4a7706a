// The workload list's refresh, in a dedicated worker (static/js/list.js starts it): fetching
// GET /api/workloads/ and parsing it off the page's main thread, and telling the page only which
// rows changed since the last answer.
//
// Why: 10,000 rows are 2.8 MB of JSON, and JSON.parse of it took 35-120 ms on a loaded 2-core
// host: one task that long every refresh is a frame gap over 100 ms (issue 27's target, `python
// -m bench list --count 10000`). Posting 50 changed rows to the page costs it well under a
// millisecond.
//
// Messages from the page: {base: <the page's data as JSON text>} first (the rows the page drew,
// so the first answer can be compared with them; lib/workload-rows.js), then {refresh: true} for
// each poll. Messages to the page, one per refresh:
//   {changes: [[index, row], ...]}  the same rows in the same order; these rows' shown values
//                                   changed (a field the list does not show is not compared)
//   {rows: [...]}                   rows came or went: the whole list
//   {error: status}                 the request failed (status 0: no answer)

import { decodeRows, sameShown } from "./lib/workload-rows.js";

let last = []; // the rows of the last answer (or the page's data), in the API's order
const keyOf = (r) => `${r.namespace}/${r.name}#${r.kind}`;

// What the page needs to go from `last` to `rows`.
function difference(rows) {
  if (rows.length !== last.length) return { rows };
  const changes = [];
  for (let i = 0; i < rows.length; i++) {
    if (keyOf(rows[i]) !== keyOf(last[i])) return { rows };
    if (!sameShown(last[i], rows[i])) changes.push([i, rows[i]]);
  }
  return { changes };
}

async function refresh() {
  let resp;
  try {
    resp = await fetch("/api/workloads/", {
      credentials: "same-origin",
      headers: { Accept: "application/json", "X-RolloutUI-Source": "page" },
    });
  } catch {
    postMessage({ error: 0 });
    return;
  }
  if (!resp.ok) {
    postMessage({ error: resp.status });
    return;
  }
  let rows;
  try {
    rows = await resp.json();
  } catch {
    postMessage({ error: 0 });
    return;
  }
  postMessage(difference(rows));
  last = rows;
}

onmessage = (e) => {
  if (typeof e.data.base === "string") last = decodeRows(e.data.base);
  if (e.data.refresh) refresh();
};
