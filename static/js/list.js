// ModelServing list: instant client-side filtering, and a refresh of the rows every 5 s from
// GET /api/modelservings/ (one request, rows rebuilt as one HTML string: fast with 1,000 rows).
(function () {
  "use strict";
  const REFRESH_MS = 5000;
  const form = document.getElementById("filters");
  const tbody = document.getElementById("ms-rows");
  const countEl = document.getElementById("ms-count");
  const statusEl = document.getElementById("refresh-status");
  let rows = null; // null until the first refresh: the server-rendered rows are shown meanwhile

  const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  const pct = (a, b) => (b > 0 ? Math.min(100, Math.round((100 * a) / b)) : 0);

  function filters() {
    const data = new FormData(form);
    return { q: (data.get("q") || "").toLowerCase().trim(), ns: (data.get("namespace") || "").trim(), phase: data.get("phase") || "" };
  }

  function rowHtml(r) {
    const upd = r.updateRevision && r.updateRevision !== r.currentRevision ? ` <span class="arrow">→</span> <b>${esc(r.updateRevision)}</b>` : "";
    const href = `/modelservings/${encodeURIComponent(r.namespace)}/${encodeURIComponent(r.name)}/`;
    return `<tr data-key="${esc(r.namespace)}/${esc(r.name)}" data-phase="${esc(r.phase)}">` +
      `<td><a class="ms-link" href="${href}"><span class="muted">${esc(r.namespace)}/</span>${esc(r.name)}</a></td>` +
      `<td><span class="phase phase-${esc(String(r.phase).toLowerCase())}">${esc(r.phase)}</span></td>` +
      `<td class="bars-col"><div class="bars" title="updated ${r.updated}, ready ${r.ready}, desired ${r.desired}">` +
      `<div class="bar"><i class="bar-upd" style="width:${pct(r.updated, r.desired)}%"></i></div>` +
      `<div class="bar"><i class="bar-ready" style="width:${pct(r.ready, r.desired)}%"></i></div></div>` +
      `<span class="bars-text num">${r.updated} / ${r.ready} / ${r.desired}</span></td>` +
      `<td class="mono">${esc(r.currentRevision || "—")}${upd}</td><td class="muted">${esc(r.strategyType)}</td></tr>`;
  }

  function render() {
    const f = filters();
    const counts = {};
    if (rows) {
      const shown = [];
      for (const r of rows) {
        if (f.ns && r.namespace !== f.ns) continue;
        if (f.q && !(r.namespace + "/" + r.name).toLowerCase().includes(f.q)) continue;
        counts[r.phase] = (counts[r.phase] || 0) + 1;
        if (f.phase && r.phase !== f.phase) continue;
        shown.push(rowHtml(r));
      }
      tbody.innerHTML = shown.length ? shown.join("") : '<tr class="empty"><td colspan="5">No ModelServing matches.</td></tr>';
      countEl.textContent = shown.length;
      document.querySelectorAll("[data-phase-count]").forEach((el) => { el.textContent = counts[el.dataset.phaseCount] || ""; });
    } else {
      // Before the first refresh: filter the server-rendered rows in place.
      let n = 0;
      tbody.querySelectorAll("tr[data-key]").forEach((tr) => {
        const ok = (!f.q || tr.dataset.key.toLowerCase().includes(f.q)) && (!f.phase || tr.dataset.phase === f.phase) && (!f.ns || tr.dataset.key.startsWith(f.ns + "/"));
        tr.hidden = !ok;
        if (ok) n++;
      });
      countEl.textContent = n;
    }
    form.querySelectorAll(".seg-item").forEach((l) => l.classList.toggle("on", l.querySelector("input").checked));
    const params = new URLSearchParams();
    if (f.q) params.set("q", f.q);
    if (f.ns) params.set("namespace", f.ns);
    if (f.phase) params.set("phase", f.phase);
    history.replaceState(null, "", params.toString() ? "?" + params : location.pathname);
  }

  async function refresh() {
    if (document.hidden) return; // no polling in background tabs
    try {
      const resp = await fetch("/api/modelservings/", { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (resp.status === 401 || resp.status === 403) { location.reload(); return; }
      if (!resp.ok) throw new Error(resp.status);
      rows = await resp.json();
      rows.sort((a, b) => (a.namespace + "/" + a.name).localeCompare(b.namespace + "/" + b.name));
      render();
      statusEl.textContent = "updated " + new Date().toLocaleTimeString();
      statusEl.classList.remove("stale");
    } catch (e) {
      statusEl.textContent = "refresh failed; retrying";
      statusEl.classList.add("stale");
    }
  }

  form.addEventListener("input", render);
  form.addEventListener("submit", (e) => { e.preventDefault(); render(); });
  document.addEventListener("visibilitychange", () => { if (!document.hidden) refresh(); });
  setInterval(refresh, REFRESH_MS);
  refresh();
})();
