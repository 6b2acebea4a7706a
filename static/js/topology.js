// Topology: every ServingGroup x role instance as one cell on a single <canvas>.
//
// Why a canvas: 1,000 groups x several role instances is thousands of cells; as DOM nodes with
// listeners the page would crawl on every update (the freeze Argo users report at ~120 rollouts).
// Here an update is one pass of fillRect calls, and one pair of listeners does hover and click by
// arithmetic on the layout.
//
// Encoding: colour = revision, by its hash (static/js/lib/colors.js: the same colour in the legend,
// the revisions table and the canary charts, whatever number a rollback gives it); state = pattern,
// border AND a glyph drawn in the cell (never colour alone; the legend shows the same glyphs):
//   Ready solid ✓ · Creating light fill + · Pending outline only … · Updating diagonal stripes ↻ ·
//   Draining half fill ↓ · Failed red border ✕ · Deleting faded with a strike −.
// Cells wide enough carry the state's word instead of its glyph. Surge instances carry a dark corner
// mark with an "S". Groups below the partition sit on a grey band and a dark line marks where the
// partition starts. Every group column is labelled with its ordinal (every 5th or 10th when the
// cells are small), every row with its role instance. Small workloads get large cells: the grid
// fills the panel's width (up to 160 px a cell).
//
// For assistive technology the canvas's accessible name sums the states up (counts per state,
// surge), and a visually hidden list beside it names each cell that is not plainly Ready.
import { h, mount } from "./lib/dom.js";
import { partitionOf } from "./lib/format.js";
import { alpha, revisionColour } from "./lib/colors.js";

export { alpha, revisionColour };

const FAILED = "#cf222e";
const INK = "#1f2328";
const LABEL = "#5b6470";

// The glyph (small cells) of each instance state; wide cells show the state's word.
export const STATE_GLYPHS = {
  Ready: "✓",
  Creating: "+",
  Pending: "…",
  Updating: "↻",
  Draining: "↓",
  Failed: "✕",
  Deleting: "−",
};

export class Topology {
  constructor(canvas, tip, onSelect) {
    this.canvas = canvas;
    this.ctx = canvas.getContext("2d");
    this.tip = tip;
    this.onSelect = onSelect;
    this.state = null;
    this.layout = null;
    this.selected = null;
    this.patterns = new Map();
    // The cells that are not plainly Ready, as text for assistive technology (visually hidden).
    this.cellList = canvas.parentElement.querySelector(".topo-cells");
    if (!this.cellList) {
      this.cellList = h("ul", { class: "topo-cells sr-only", "aria-label": "Role instances that are not Ready" });
      canvas.after(this.cellList);
    }
    canvas.addEventListener("mousemove", (e) => this.hover(e));
    canvas.addEventListener("mouseleave", () => { this.tip.hidden = true; });
    canvas.addEventListener("click", (e) => {
      const hit = this.hit(e);
      if (!hit) return;
      this.selected = hit.key;
      this.draw();
      this.onSelect(hit);
    });
    new ResizeObserver(() => { if (this.state) this.update(this.state, this.revNumbers, true); }).observe(canvas.parentElement);
  }

  stripes(colour) {
    // One small tile per colour, cached: patterns are cheap to fill but not to create.
    if (this.patterns.has(colour)) return this.patterns.get(colour);
    const t = document.createElement("canvas");
    t.width = t.height = 6;
    const c = t.getContext("2d");
    c.fillStyle = alpha(colour, 0.18);
    c.fillRect(0, 0, 6, 6);
    c.strokeStyle = colour;
    c.lineWidth = 1.6;
    c.beginPath();
    c.moveTo(-1, 7); c.lineTo(7, -1);
    c.moveTo(-4, 4); c.lineTo(4, -4);
    c.moveTo(2, 10); c.lineTo(10, 2);
    c.stroke();
    const p = this.ctx.createPattern(t, "repeat");
    this.patterns.set(colour, p);
    return p;
  }

  // Slots: the (role, ordinal) rows every group column has, in role order then ordinal.
  slotsOf(state) {
    const order = new Map((state.roles || []).map((r, i) => [r.name, i]));
    const seen = new Map();
    for (const inst of state.instances) {
      const k = inst.role + "|" + inst.ordinal;
      if (!seen.has(k)) seen.set(k, { role: inst.role, ordinal: inst.ordinal });
    }
    for (const r of state.roles || []) {
      for (let i = 0; i < (r.desired && state.spec.replicas ? Math.round(r.desired / Math.max(state.spec.replicas, 1)) : 0); i++) {
        const k = r.name + "|" + i;
        if (!seen.has(k)) seen.set(k, { role: r.name, ordinal: i });
      }
    }
    return [...seen.values()].sort((a, b) => (order.get(a.role) ?? 99) - (order.get(b.role) ?? 99) || a.role.localeCompare(b.role) || a.ordinal - b.ordinal);
  }

  update(state, revNumbers, force) {
    this.state = state;
    this.revNumbers = revNumbers;
    const byKey = new Map();
    let maxGroup = (state.spec.replicas || 0) - 1;
    for (const inst of state.instances) {
      byKey.set(inst.group + "|" + inst.role + "|" + inst.ordinal, inst);
      if (inst.group > maxGroup) maxGroup = inst.group;
    }
    this.byKey = byKey;
    const slots = this.slotsOf(state);
    const groups = maxGroup + 1;
    const width = this.canvas.parentElement.clientWidth;
    const sig = [groups, slots.map((s) => s.role + s.ordinal).join(","), width].join(";");
    if (force || sig !== this.sig) {
      this.sig = sig;
      this.layout = this.computeLayout(groups, slots, width);
    }
    this.draw();
  }

  computeLayout(groups, slots, width) {
    // Cell height by the number of groups; small workloads get tall cells and wide ones: the
    // columns share the panel's width (a 4 x 3 grid fills it instead of a tenth of it).
    const cell = groups <= 12 ? 34 : groups <= 24 ? 24 : groups <= 96 ? 14 : groups <= 400 ? 10 : 7;
    const gap = cell >= 14 ? 3 : 1;
    const groupGap = cell >= 24 ? 8 : cell >= 14 ? 4 : 2;
    const longest = Math.max(0, ...slots.map((s) => this.rowLabel(s, slots).length));
    const labelW = cell >= 10 ? Math.min(130, Math.max(74, 12 + longest * 6.5)) : 56;
    const fit = Math.floor((width - labelW - 4) / Math.max(groups, 1)) - groupGap;
    const cellW = groups <= 24 ? Math.max(cell, Math.min(160, fit)) : cell;
    const colW = cellW + groupGap;
    const perBand = Math.max(1, Math.floor((width - labelW - 4) / colW));
    const bandH = 14 + slots.length * (cell + gap) + 8;
    const bands = Math.ceil(groups / perBand);
    const height = bands * bandH + 4;
    const dpr = window.devicePixelRatio || 1;
    this.canvas.width = Math.floor(width * dpr);
    this.canvas.height = Math.floor(height * dpr);
    this.canvas.style.width = width + "px";
    this.canvas.style.height = height + "px";
    this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return { cell, cellW, gap, groupGap, labelW, colW, perBand, bandH, bands, groups, slots, width, height };
  }

  // A row's label: the role, with the instance's ordinal when the role has several.
  rowLabel(s, slots) {
    return slots.filter((x) => x.role === s.role).length > 1 ? `${s.role} ${s.ordinal}` : s.role;
  }

  cellXY(g, s) {
    const L = this.layout;
    const band = Math.floor(g / L.perBand);
    const col = g % L.perBand;
    return [L.labelW + col * L.colW, band * L.bandH + 14 + s * (L.cell + L.gap)];
  }

  draw() {
    const L = this.layout, ctx = this.ctx, st = this.state;
    if (!L || !st) return;
    ctx.clearRect(0, 0, L.width, L.height);
    const partition = partitionOf(st);
    const groupLevel = (st.strategyType || "ServingGroupRollingUpdate") === "ServingGroupRollingUpdate";
    const replicas = st.spec.replicas || 0;
    const font = (px, weight = "") => `${weight} ${px}px system-ui, sans-serif`;
    ctx.textBaseline = "middle";
    for (let b = 0; b < L.bands; b++) {
      const y0 = b * L.bandH;
      // Role instance labels at the left of every band.
      ctx.font = font(Math.min(11, L.cell + 2));
      ctx.fillStyle = LABEL;
      ctx.textAlign = "left";
      L.slots.forEach((s, i) => {
        const y = y0 + 14 + i * (L.cell + L.gap) + L.cell / 2;
        const label = this.rowLabel(s, L.slots);
        const max = Math.floor((L.labelW - 6) / 6);
        ctx.fillText(label.length > max ? label.slice(0, max - 1) + "…" : label, 2, y, L.labelW - 6);
      });
      // Group ordinals above the columns: every column when they fit, else every 5th or 10th.
      const first = b * L.perBand;
      const step = L.colW >= 22 ? 1 : L.cell >= 14 ? 5 : 10;
      ctx.font = font(10);
      for (let g = first; g < Math.min(first + L.perBand, L.groups); g++) {
        if (g % step === 0) {
          const [x] = this.cellXY(g, 0);
          const text = L.cellW >= 60 ? `group ${g}` : String(g);
          ctx.textAlign = step === 1 ? "center" : "left";
          ctx.fillText(text, step === 1 ? x + L.cellW / 2 : x, y0 + 6);
        }
      }
      ctx.textAlign = "left";
    }
    // Partition: protected groups (below it) on a grey band; a dark line where it starts.
    if (groupLevel && partition > 0) {
      for (let g = 0; g < Math.min(partition, L.groups); g++) {
        const [x, y] = this.cellXY(g, 0);
        ctx.fillStyle = "#eceef1";
        ctx.fillRect(x - L.groupGap / 2, y - 3, L.colW, L.slots.length * (L.cell + L.gap) + 4);
      }
      if (partition < L.groups) {
        const [x, y] = this.cellXY(partition, 0);
        ctx.fillStyle = INK;
        ctx.fillRect(x - L.groupGap / 2 - 1.5, y - 5, 2.5, L.slots.length * (L.cell + L.gap) + 8);
        ctx.font = font(10);
        ctx.fillText("partition " + partition, Math.min(x + 3, L.width - 70), y - 8);
      }
    }
    const c = L.cell, w = L.cellW;
    for (let g = 0; g < L.groups; g++) {
      L.slots.forEach((s, i) => {
        const [x, y] = this.cellXY(g, i);
        const inst = this.byKey.get(g + "|" + s.role + "|" + s.ordinal);
        if (!inst) {
          // A slot with no instance yet (or a surge group without this role): faint outline.
          if (g < replicas) {
            ctx.strokeStyle = "#c4cad3";
            ctx.setLineDash([2, 2]);
            ctx.strokeRect(x + 0.5, y + 0.5, w - 1, c - 1);
            ctx.setLineDash([]);
          }
          return;
        }
        this.drawCell(inst, x, y, w, c);
      });
    }
    if (this.selected) {
      const [g, role, ord] = this.selected.split("|");
      const si = L.slots.findIndex((s) => s.role === role && String(s.ordinal) === ord);
      if (si >= 0 && Number(g) < L.groups) {
        const [x, y] = this.cellXY(Number(g), si);
        ctx.strokeStyle = INK;
        ctx.lineWidth = 2;
        ctx.strokeRect(x - 2, y - 2, w + 4, c + 4);
        ctx.lineWidth = 1;
      }
    }
    this.describe();
  }

  drawCell(inst, x, y, w, c) {
    const ctx = this.ctx;
    const col = revisionColour(inst.revision);
    // Text on the cell: white on a solid fill, ink on a light one.
    let ink = INK;
    ctx.lineWidth = 1;
    switch (inst.state) {
      case "Ready":
        ctx.fillStyle = col; ctx.fillRect(x, y, w, c);
        ink = "#fff";
        break;
      case "Creating":
        ctx.fillStyle = alpha(col, 0.3); ctx.fillRect(x, y, w, c);
        ctx.strokeStyle = col; ctx.strokeRect(x + 0.5, y + 0.5, w - 1, c - 1);
        break;
      case "Pending":
        ctx.fillStyle = "#fff"; ctx.fillRect(x, y, w, c);
        ctx.strokeStyle = col; ctx.setLineDash([2, 2]); ctx.strokeRect(x + 0.5, y + 0.5, w - 1, c - 1); ctx.setLineDash([]);
        break;
      case "Updating":
        ctx.fillStyle = this.stripes(col); ctx.fillRect(x, y, w, c);
        ctx.strokeStyle = col; ctx.strokeRect(x + 0.5, y + 0.5, w - 1, c - 1);
        break;
      case "Draining":
        ctx.fillStyle = alpha(col, 0.25); ctx.fillRect(x, y, w, c);
        ctx.fillStyle = col; ctx.fillRect(x, y + c / 2, w, c / 2);
        ctx.strokeStyle = col; ctx.strokeRect(x + 0.5, y + 0.5, w - 1, c - 1);
        break;
      case "Failed":
        ctx.fillStyle = alpha(col, 0.35); ctx.fillRect(x, y, w, c);
        ctx.strokeStyle = FAILED; ctx.lineWidth = c >= 10 ? 2 : 1.5;
        ctx.strokeRect(x + 1, y + 1, w - 2, c - 2);
        if (c < 14) {
          ctx.beginPath(); ctx.moveTo(x + 2, y + 2); ctx.lineTo(x + w - 2, y + c - 2); ctx.moveTo(x + w - 2, y + 2); ctx.lineTo(x + 2, y + c - 2); ctx.stroke();
        }
        ctx.lineWidth = 1;
        ink = FAILED;
        break;
      case "Deleting":
      default:
        ctx.fillStyle = alpha(col, 0.15); ctx.fillRect(x, y, w, c);
        ctx.strokeStyle = alpha(col, 0.7);
        ctx.beginPath(); ctx.moveTo(x, y + c); ctx.lineTo(x + w, y); ctx.stroke();
        break;
    }
    if (c >= 14) {
      // The state in words (wide cells) or as its glyph, so that it never rests on colour.
      const word = w >= 64 ? String(inst.state) : STATE_GLYPHS[inst.state] || "?";
      ctx.font = `600 ${Math.min(12, c - 4)}px system-ui, sans-serif`;
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      if (inst.state === "Draining") {
        // Half filled: the text sits on a white chip so that it reads on both halves.
        const tw = Math.min(w - 4, ctx.measureText(word).width + 6);
        ctx.fillStyle = "rgba(255,255,255,0.9)";
        ctx.fillRect(x + w / 2 - tw / 2, y + c / 2 - 7, tw, 14);
      }
      ctx.fillStyle = ink;
      ctx.fillText(word, x + w / 2, y + c / 2 + 0.5, w - 4);
      ctx.textAlign = "left";
    }
    if (inst.surge) {
      // Surge: a dark triangle in the top-right corner, with an "S" when it has room.
      const m = Math.max(3, Math.round(c * 0.45));
      ctx.fillStyle = INK;
      ctx.beginPath(); ctx.moveTo(x + w - m, y); ctx.lineTo(x + w, y); ctx.lineTo(x + w, y + m); ctx.closePath(); ctx.fill();
      if (m >= 12) {
        ctx.fillStyle = "#fff";
        ctx.font = `700 ${Math.round(m / 2)}px system-ui, sans-serif`;
        ctx.textAlign = "right";
        ctx.textBaseline = "top";
        ctx.fillText("S", x + w - 1, y + 1);
        ctx.textAlign = "left";
        ctx.textBaseline = "middle";
      }
    }
  }

  // The canvas's accessible name (state counts) and the hidden list of the cells that are not
  // plainly Ready (at most 60), redone only when they change.
  describe() {
    const st = this.state;
    const counts = {};
    const notable = [];
    for (const inst of st.instances) {
      counts[inst.state] = (counts[inst.state] || 0) + 1;
      if (inst.state !== "Ready" || inst.surge) {
        const num = this.revNumbers && this.revNumbers.get(inst.revision);
        notable.push(
          `group ${inst.group} · ${inst.role} ${inst.ordinal}: ${inst.state}${inst.surge ? ", surge" : ""}` +
            (num ? `, revision #${num}` : ""),
        );
      }
    }
    const surge = st.instances.filter((i) => i.surge).length;
    const summary =
      `Topology: ${st.instances.length} role instances in ${this.layout.groups} ServingGroups. ` +
      Object.entries(counts).map(([k, v]) => `${v} ${k}`).join(", ") +
      (surge ? `, ${surge} surge` : "") + ".";
    const key = summary + "|" + notable.join(";");
    if (key === this.described) return;
    this.described = key;
    this.canvas.setAttribute("aria-label", summary);
    const list = this.cellList;
    if (list) {
      mount(
        list,
        notable.slice(0, 60).map((t) => h("li", null, t)),
        notable.length > 60 ? h("li", null, `and ${notable.length - 60} more`) : null,
      );
    }
  }

  hit(e) {
    const L = this.layout;
    if (!L) return null;
    const r = this.canvas.getBoundingClientRect();
    const px = e.clientX - r.left, py = e.clientY - r.top;
    const band = Math.floor(py / L.bandH);
    const col = Math.floor((px - L.labelW + L.groupGap / 2) / L.colW);
    const slot = Math.floor((py - band * L.bandH - 14) / (L.cell + L.gap));
    if (col < 0 || col >= L.perBand || slot < 0 || slot >= L.slots.length) return null;
    const g = band * L.perBand + col;
    if (g >= L.groups) return null;
    const s = L.slots[slot];
    const key = g + "|" + s.role + "|" + s.ordinal;
    return { key, group: g, role: s.role, ordinal: s.ordinal, instance: this.byKey.get(key) || null };
  }

  hover(e) {
    const hit = this.hit(e);
    if (!hit) { this.tip.hidden = true; this.canvas.style.cursor = "default"; return; }
    this.canvas.style.cursor = "pointer";
    const i = hit.instance;
    const num = i ? this.revNumbers.get(i.revision) : null;
    // Role names, states and revisions come from the server: text nodes only.
    const title = h("b", null, `group ${hit.group} · ${hit.role} ${hit.ordinal}`);
    if (i) {
      const pods = [`pods ${i.readyPods}/${i.pods} ready`];
      if (i.inFlight) pods.push(`${i.inFlight} in flight`);
      if (i.draining) pods.push(`${i.draining} draining`);
      // Serving gates (Ready is not Serving): the highest reached, a failed one, what it waits on.
      const waiting = i.gateWaiting;
      const gate = i.gate
        ? [
            h("br"),
            `gate ${i.gate}`,
            i.gateFailed ? h("b", { class: "tip-failed" }, ` · failed at ${i.gateFailed}`) : null,
            waiting && !i.gateFailed ? ` · waiting for ${waiting.gate}` : null,
          ]
        : null;
      mount(
        this.tip,
        title,
        h("br"),
        i.surge ? `${i.state} · surge` : String(i.state),
        gate,
        h("br"),
        `revision ${num ? "#" + num + " " : ""}`,
        h("span", { class: "mono" }, i.revision),
        h("br"),
        pods.join(" · "),
      );
    } else {
      mount(this.tip, title, h("br"), "no instance");
    }
    const r = this.canvas.getBoundingClientRect();
    const wrap = this.canvas.parentElement.getBoundingClientRect();
    let left = e.clientX - wrap.left + 14;
    if (left > wrap.width - 200) left -= 220;
    this.tip.style.left = left + "px";
    this.tip.style.top = (e.clientY - r.top + 12) + "px";
    this.tip.hidden = false;
  }
}
