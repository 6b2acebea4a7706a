// The page's half of the compact first state (rolloutui/compactstate.py, where the format is
// described; `expand_state` there is the reference): the server writes the state's long lists of
// objects (instances, groups) as tables, a key once and then one array per key, so the HTML the
// browser downloads and parses is a third of the plain JSON at 1,000 groups. `expandState` turns
// it back into the very state the REST GET returns: same keys in the same order, same values.
// A value that is not a compact state (a plain state) is returned as it is.
//
// Nothing here touches the DOM: the module loads on its own (a browser test imports it into an
// empty page and expands states written by the Python side).

const VERSION = 1;

export function expandState(payload) {
  if (!payload || typeof payload !== "object" || payload.compactState !== VERSION) return payload;
  const state = payload.state;
  // Own keys of the parsed JSON, so assigning keeps each key's place (and a key named
  // "__proto__" stays data: it is an own property already).
  for (const key of payload.tabled) state[key] = rows(state[key]);
  return state;
}

function rows(table) {
  const columns = table.columns.map(values);
  const shapes = table.shapes.map((shape) => ({ indices: shape, keys: shape.map((i) => table.keys[i]), template: template(table.keys, shape) }));
  const shapeOf = table.shape;
  const taken = new Array(table.keys.length).fill(0);
  const out = new Array(table.rows);
  for (let r = 0; r < table.rows; r++) {
    const { indices, keys, template } = shapes[shapeOf ? shapeOf[r] : 0];
    // A copy of the shape's template has its keys already, in order, as own data properties:
    // each value below replaces one (a key named "__proto__" included), and the row keeps the
    // template's fast layout instead of growing one property at a time.
    const row = { ...template };
    for (let j = 0; j < indices.length; j++) {
      const i = indices[j];
      row[keys[j]] = columns[i][taken[i]++];
    }
    out[r] = row;
  }
  return out;
}

// An object with a shape's keys in order, all null, made by JSON.parse as the plain state's objects
// are (JSON.stringify writes each key as a JSON string: the keys are data, never code).
function template(keys, shape) {
  return JSON.parse("{" + shape.map((i) => JSON.stringify(keys[i]) + ":null").join(",") + "}");
}

// A column's values, one per row that has its key: as written, shared strings by index, or the
// rows of a nested table (split into lists by `lengths`).
function values(column) {
  if (Array.isArray(column)) return column;
  if (column.index) return column.index.map((i) => column.values[i]);
  const items = rows(column.table);
  if (!column.lengths) return items;
  const out = new Array(column.lengths.length);
  let start = 0;
  for (let i = 0; i < column.lengths.length; i++) {
    out[i] = items.slice(start, start + column.lengths[i]);
    start += column.lengths[i];
  }
  return out;
}
