// The workload list's data in the page (pages.modelserving_list, `<script id="workload-rows">`):
// {"fields": ["namespace", "name", ...], "rows": [["team-0", "ms-0000", ...], ...]}, each row the
// values of the fields in that order. Read by static/js/list.js and its refresh worker
// (list-refresh.js).
//
// Why arrays: 10,000 rows as the API's objects are 2.8 MB of JSON, and JSON.parse of them took
// 60-90 ms on a loaded 2-core host before the list was live; as arrays of the shown fields they
// are 0.9 MB, parsed and made into objects in 5-23 ms.

// The fields a row shows (or filters by): a row whose shown fields are all the same needs no
// write. A value the page's data gives as null and the API leaves out counts as the same.
export const SHOWN = [
  ...["namespace", "name", "kind", "phase", "updated", "ready", "desired"],
  ...["currentRevision", "updateRevision", "strategyType"], // a ModelServing's
  ...["canary", "deploymentMode"], // an InferenceService's
];

export const sameShown = (a, b) => SHOWN.every((f) => (a[f] ?? null) === (b[f] ?? null));

// The rows of the page's data as objects (the shape GET /api/workloads/ gives a row).
export function decodeRows(text) {
  const { fields, rows } = JSON.parse(text);
  const out = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const values = rows[i];
    const row = {};
    for (let j = 0; j < fields.length; j++) row[fields[j]] = values[j];
    out[i] = row;
  }
  return out;
}
