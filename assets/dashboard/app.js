// Theus dashboard: a canvas view of the project graph, a database tab and a status tab.
// Plain browser JavaScript, no libraries. Positions come from the server's layout; the page
// only pans, zooms, filters and draws. Every data request carries the per-run token.
"use strict";

const KIND_COLOURS = {
  file: "#60a5fa", symbol: "#c084fc", section: "#fbbf24", table: "#34d399",
  column: "#a3e635", memory: "#f472b6", episode: "#fb923c", entity: "#22d3ee",
};
const EDGE_COLOURS = {
  contains: "148,163,184", defines: "167,139,250", imports: "96,165,250",
  references: "244,114,182", "derived-from": "251,146,60",
};
const EDGE_ALPHA = { contains: 0.16, defines: 0.1, imports: 0.42, references: 0.26, "derived-from": 0.45 };
const PAGE = 5000;
const MAX_LOADED = 20000;
const POLL_MS = 4000;

const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
};
const fmt = (n) => Number(n).toLocaleString("en-US");
const colourOf = (kind) => KIND_COLOURS[kind] || "#94a3b8";

// ---- token and API ----------------------------------------------------------------------------
const TOKEN = (() => {
  const fromUrl = new URLSearchParams(location.search).get("token");
  if (fromUrl) {
    sessionStorage.setItem("theus-token", fromUrl);
    history.replaceState(null, "", location.pathname); // keep the token out of history and screen
    return fromUrl;
  }
  return sessionStorage.getItem("theus-token") || "";
})();

async function api(path, params) {
  const query = params ? "?" + new URLSearchParams(params).toString() : "";
  const response = await fetch(path + query, { headers: { "X-Theus-Token": TOKEN }, cache: "no-store" });
  if (response.status === 401) {
    banner("This page needs the link printed by `theus dashboard` (it carries a one-time token).");
    throw new Error("unauthorised");
  }
  const body = await response.json();
  if (!response.ok) {
    const error = new Error(body.error || response.statusText);
    error.status = response.status;
    throw error;
  }
  return body;
}

function banner(text) {
  const b = $("banner");
  b.textContent = text;
  b.hidden = false;
}

// ---- state ------------------------------------------------------------------------------------
const state = {
  nodes: [], byId: new Map(), byKey: new Map(), edges: [], total: 0, version: -1,
  cursor: null, kinds: new Set(), folder: "", counts: {},
  selected: null, hover: null, focus: null, neighbourIds: new Set(),
  cam: { x: 0, y: 0, scale: 1 }, grid: new Map(), gridCell: 60, loading: false,
};
window.__theus = { state, firstRender: null, ready: false, select: (key) => selectKey(key) };

// ---- loading ----------------------------------------------------------------------------------
function resetData() {
  state.nodes = []; state.byId = new Map(); state.byKey = new Map(); state.edges = [];
  state.total = 0; state.cursor = null;
}

function graphParams(extra) {
  const params = { limit: PAGE, ...extra };
  if (state.kinds.size && state.kinds.size < Object.keys(state.counts).length) params.kind = [...state.kinds].join(",");
  if (state.folder) params.folder = state.folder;
  return params;
}

function addPage(page) {
  for (const n of page.nodes) {
    if (state.byId.has(n.id)) continue;
    state.byId.set(n.id, n);
    state.byKey.set(n.key, n);
    state.nodes.push(n);
  }
  for (const e of page.edges) state.edges.push(e);
}

async function loadGraph({ keepCamera = false } = {}) {
  if (state.loading) return;
  state.loading = true;
  const selectedKey = state.selected ? state.selected.key : null;
  try {
    const first = await api("/api/graph", graphParams({}));
    resetData();
    state.version = first.version;
    state.total = first.total;
    state.cursor = first.next_cursor;
    addPage(first);
    buildGrid();
    if (!keepCamera) fitView();
    render();
    while (state.cursor && state.nodes.length < Math.min(state.total, MAX_LOADED)) {
      const page = await api("/api/graph", { ...graphParams({}), cursor: state.cursor });
      state.cursor = page.next_cursor;
      addPage(page);
      buildGrid();
      render();
    }
    if (selectedKey) await selectKey(selectedKey, { move: false });
  } catch (error) {
    if (error.status === 409) { state.loading = false; return loadGraph({ keepCamera }); }
    console.warn(error);
  } finally {
    state.loading = false;
    updateLoaded();
  }
}

async function loadMore() {
  if (!state.cursor) return;
  const page = await api("/api/graph", { ...graphParams({}), cursor: state.cursor }).catch(() => null);
  if (!page) return loadGraph({ keepCamera: true });
  state.cursor = page.next_cursor;
  addPage(page);
  buildGrid();
  render();
  updateLoaded();
}

function updateLoaded() {
  $("empty").hidden = state.total > 0 || state.loading;
  if (state.total === 0 && (state.kinds.size || state.folder)) $("empty").textContent = "No nodes match these filters.";
  $("loaded-text").textContent = `Showing ${fmt(state.nodes.length)} of ${fmt(state.total)} nodes · ${fmt(state.edges.length)} edges`;
  $("load-more").hidden = !state.cursor;
}

// ---- camera and picking -----------------------------------------------------------------------
const canvas = $("graph");
const ctx = canvas.getContext("2d");
let dpr = window.devicePixelRatio || 1;

function resize() {
  dpr = window.devicePixelRatio || 1;
  const rect = canvas.getBoundingClientRect();
  canvas.width = Math.max(1, Math.round(rect.width * dpr));
  canvas.height = Math.max(1, Math.round(rect.height * dpr));
  render();
}

function fitView(nodes = state.nodes) {
  if (!nodes.length) return;
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (const n of nodes) {
    if (n.x < minX) minX = n.x; if (n.x > maxX) maxX = n.x;
    if (n.y < minY) minY = n.y; if (n.y > maxY) maxY = n.y;
  }
  const w = canvas.width / dpr, h = canvas.height / dpr;
  const span = Math.max(maxX - minX, maxY - minY, 80);
  state.cam.scale = Math.min(w, h) * 0.88 / span;
  state.cam.x = (minX + maxX) / 2;
  state.cam.y = (minY + maxY) / 2;
  render();
}

const toScreen = (x, y) => [
  (x - state.cam.x) * state.cam.scale + canvas.width / dpr / 2,
  (y - state.cam.y) * state.cam.scale + canvas.height / dpr / 2,
];
const toWorld = (sx, sy) => [
  (sx - canvas.width / dpr / 2) / state.cam.scale + state.cam.x,
  (sy - canvas.height / dpr / 2) / state.cam.scale + state.cam.y,
];

function worldRadius(n) {
  return (n.kind === "file" ? 4.5 : n.kind === "table" ? 4 : 2.6) + 7 * n.w;
}
function screenRadius(n) {
  // Zoomed out, important nodes keep a visible size; zoomed in, size follows the world.
  const floor = 0.7 + 2.6 * n.w + (n.kind === "file" || n.kind === "table" ? 0.6 : 0);
  return Math.min(28, Math.max(floor, worldRadius(n) * Math.pow(state.cam.scale, 0.85)));
}

function buildGrid() {
  const grid = new Map(), cell = state.gridCell;
  for (const n of state.nodes) {
    const k = Math.floor(n.x / cell) + ":" + Math.floor(n.y / cell);
    let bucket = grid.get(k);
    if (!bucket) grid.set(k, (bucket = []));
    bucket.push(n);
  }
  state.grid = grid;
}

function pick(sx, sy) {
  const [wx, wy] = toWorld(sx, sy);
  const cell = state.gridCell;
  const reach = Math.max(1, Math.ceil((14 / state.cam.scale) / cell));
  const cx = Math.floor(wx / cell), cy = Math.floor(wy / cell);
  let best = null, bestD = Infinity;
  for (let i = cx - reach; i <= cx + reach; i++) {
    for (let j = cy - reach; j <= cy + reach; j++) {
      const bucket = state.grid.get(i + ":" + j);
      if (!bucket) continue;
      for (const n of bucket) {
        const [px, py] = toScreen(n.x, n.y);
        const d = Math.hypot(px - sx, py - sy);
        if (d < screenRadius(n) + 5 && d < bestD) { best = n; bestD = d; }
      }
    }
  }
  return best;
}

// ---- drawing ----------------------------------------------------------------------------------
const glowSprites = {};
function glow(kind) {
  if (glowSprites[kind]) return glowSprites[kind];
  const c = document.createElement("canvas");
  c.width = c.height = 64;
  const g = c.getContext("2d");
  const grad = g.createRadialGradient(32, 32, 0, 32, 32, 32);
  grad.addColorStop(0, colourOf(kind) + "99");
  grad.addColorStop(0.25, colourOf(kind) + "3a");
  grad.addColorStop(1, colourOf(kind) + "00");
  g.fillStyle = grad;
  g.fillRect(0, 0, 64, 64);
  return (glowSprites[kind] = c);
}

// While the user drags or zooms a big graph, frames skip curves, glows and labels so the
// motion stays fluid; one full frame follows when the motion stops.
let interactingUntil = 0;
function interacting() {
  interactingUntil = performance.now() + 160;
  setTimeout(render, 180);
}
const fastFrame = () => state.nodes.length > 6000 && performance.now() < interactingUntil;

let pending = false;
function render() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => { pending = false; draw(); });
}

function draw() {
  const w = canvas.width / dpr, h = canvas.height / dpr;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  if (!state.nodes.length) return;
  const focus = state.selected;
  const lit = state.neighbourIds;
  const fast = fastFrame();
  const margin = 40;
  const visible = (x, y) => x > -margin && y > -margin && x < w + margin && y < h + margin;

  // Edges, batched by kind and screen length; curved slightly so bundles read as fibres. The
  // more edges on screen, the fainter each one, and long edges fainter than short ones, so a
  // big graph shows its structure instead of a solid wash.
  const buckets = {};
  let onScreen = 0;
  for (const e of state.edges) {
    const a = state.byId.get(e[0]), b = state.byId.get(e[1]);
    if (!a || !b) continue;
    const [ax, ay] = toScreen(a.x, a.y), [bx, by] = toScreen(b.x, b.y);
    if (!visible(ax, ay) && !visible(bx, by)) continue;
    const len = Math.abs(bx - ax) + Math.abs(by - ay);
    const band = len < 60 ? 0 : len < 240 ? 1 : 2;
    const key = e[2] + "|" + band;
    (buckets[key] || (buckets[key] = [])).push(ax, ay, bx, by);
    onScreen++;
  }
  const density = Math.min(1, Math.sqrt(4000 / Math.max(1, onScreen)));
  const bandAlpha = [1, 0.55, 0.22];
  ctx.lineWidth = 1;
  for (const key of Object.keys(buckets)) {
    const [kind, band] = key.split("|");
    const rgb = EDGE_COLOURS[kind] || "148,163,184";
    const alpha = (EDGE_ALPHA[kind] || 0.2) * density * bandAlpha[band] * (focus ? 0.4 : 1);
    ctx.strokeStyle = `rgba(${rgb},${Math.max(0.012, alpha).toFixed(3)})`;
    ctx.beginPath();
    const pts = buckets[key];
    for (let i = 0; i < pts.length; i += 4) {
      const ax = pts[i], ay = pts[i + 1], bx = pts[i + 2], by = pts[i + 3];
      ctx.moveTo(ax, ay);
      if (fast) ctx.lineTo(bx, by);
      else ctx.quadraticCurveTo((ax + bx) / 2 - (by - ay) * 0.12, (ay + by) / 2 + (bx - ax) * 0.12, bx, by);
    }
    ctx.stroke();
  }
  if (focus) {
    ctx.lineWidth = 1.6;
    for (const [s, d, kind] of state.edges) {
      if (s !== focus.id && d !== focus.id) continue;
      const a = state.byId.get(s), b = state.byId.get(d);
      if (!a || !b) continue;
      const [ax, ay] = toScreen(a.x, a.y), [bx, by] = toScreen(b.x, b.y);
      ctx.strokeStyle = `rgba(${EDGE_COLOURS[kind] || "148,163,184"},0.95)`;
      ctx.beginPath();
      ctx.moveTo(ax, ay);
      ctx.quadraticCurveTo((ax + bx) / 2 - (by - ay) * 0.12, (ay + by) / 2 + (bx - ax) * 0.12, bx, by);
      ctx.stroke();
    }
  }

  // Nodes: glow sprites for the visible important ones, then cores batched by kind.
  ctx.globalCompositeOperation = "lighter";
  const cores = {};
  let glows = 0;
  for (const n of state.nodes) {
    const [x, y] = toScreen(n.x, n.y);
    if (!visible(x, y)) continue;
    const r = screenRadius(n);
    const dim = Boolean(focus) && n !== focus && !lit.has(n.id);
    (cores[n.kind] || (cores[n.kind] = [])).push([x, y, r, dim]);
    if (!fast && !dim && r > 3 && glows < 1200) {
      glows++;
      const g = r * 4.2;
      ctx.drawImage(glow(n.kind), x - g / 2, y - g / 2, g, g);
    }
  }
  ctx.globalCompositeOperation = "source-over";
  for (const kind of Object.keys(cores)) {
    for (const dimPass of [true, false]) {
      ctx.fillStyle = colourOf(kind);
      ctx.globalAlpha = dimPass ? 0.22 : 0.9;
      ctx.beginPath();
      for (const [x, y, r, dim] of cores[kind]) {
        if (dim !== dimPass) continue;
        ctx.moveTo(x + r, y);
        ctx.arc(x, y, r, 0, Math.PI * 2);
      }
      ctx.fill();
    }
  }
  ctx.globalAlpha = 1;

  if (focus) {
    const [x, y] = toScreen(focus.x, focus.y);
    const r = screenRadius(focus) + 5;
    ctx.strokeStyle = "#f8fafc";
    ctx.lineWidth = 2;
    ctx.beginPath();
    ctx.arc(x, y, r, 0, Math.PI * 2);
    ctx.stroke();
  }
  if (!fast) drawLabels(w, h, visible);
  if (window.__theus.firstRender === null) {
    window.__theus.firstRender = performance.now();
    window.__theus.ready = true;
  }
}

function drawLabels(w, h, visible) {
  // Selected, hovered and neighbours always; otherwise the biggest nodes that fit, never overlapping.
  const wanted = [];
  if (state.selected) wanted.push(state.selected);
  if (state.hover && state.hover !== state.selected) wanted.push(state.hover);
  for (const id of state.neighbourIds) { const n = state.byId.get(id); if (n) wanted.push(n); }
  const budget = 160;
  const ranked = state.nodes.slice().sort((a, b) => b.w - a.w);
  const candidates = [...ranked.slice(0, 14), ...ranked.slice(14, 600).filter((n) => screenRadius(n) > 4.5)];
  ctx.font = "12px ui-sans-serif, system-ui, sans-serif";
  ctx.textBaseline = "middle";
  ctx.lineJoin = "round";
  const taken = [];
  const overlaps = (x, y, tw) => taken.some(([a, b, c]) => x < a + c && a < x + tw && Math.abs(y - b) < 14);
  let count = 0;
  for (const n of [...wanted, ...candidates]) {
    if (count >= budget) break;
    const [x, y] = toScreen(n.x, n.y);
    if (!visible(x, y)) continue;
    const strong = n === state.selected || n === state.hover;
    const text = shortLabel(n);
    const tw = ctx.measureText(text).width;
    const lx = x + screenRadius(n) + 5;
    if (!strong && overlaps(lx, y, tw)) continue;
    taken.push([lx, y, tw]);
    ctx.lineWidth = 4;
    ctx.strokeStyle = "rgba(7,10,16,0.92)";
    ctx.strokeText(text, lx, y);
    ctx.fillStyle = strong ? "#ffffff" : state.neighbourIds.has(n.id) ? "#cbd5e1" : "rgba(203,213,225,0.8)";
    ctx.fillText(text, lx, y);
    count++;
  }
}

function shortLabel(n) {
  const text = n.label || n.key;
  return text.length > 42 ? text.slice(0, 40) + "…" : text;
}

// ---- interaction ------------------------------------------------------------------------------
let drag = null;
canvas.addEventListener("mousedown", (ev) => {
  drag = { x: ev.clientX, y: ev.clientY, cx: state.cam.x, cy: state.cam.y, moved: false };
});
window.addEventListener("mouseup", (ev) => {
  if (drag && !drag.moved && ev.target === canvas) {
    const rect = canvas.getBoundingClientRect();
    const hit = pick(ev.clientX - rect.left, ev.clientY - rect.top);
    if (hit) selectKey(hit.key, { move: false }); else clearSelection();
  }
  drag = null;
  canvas.classList.remove("dragging");
});
window.addEventListener("mousemove", (ev) => {
  const rect = canvas.getBoundingClientRect();
  const sx = ev.clientX - rect.left, sy = ev.clientY - rect.top;
  if (drag) {
    const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) { drag.moved = true; canvas.classList.add("dragging"); }
    state.cam.x = drag.cx - dx / state.cam.scale;
    state.cam.y = drag.cy - dy / state.cam.scale;
    interacting();
    render();
    return;
  }
  if (ev.target !== canvas) return;
  const hit = pick(sx, sy);
  if (hit !== state.hover) {
    state.hover = hit;
    canvas.classList.toggle("pointing", !!hit);
    showTooltip(hit, sx, sy);
    render();
  } else if (hit) {
    showTooltip(hit, sx, sy);
  }
});
canvas.addEventListener("mouseleave", () => { state.hover = null; showTooltip(null); render(); });
canvas.addEventListener("wheel", (ev) => {
  ev.preventDefault();
  const rect = canvas.getBoundingClientRect();
  const sx = ev.clientX - rect.left, sy = ev.clientY - rect.top;
  const [wx, wy] = toWorld(sx, sy);
  state.cam.scale = Math.max(0.005, Math.min(40, state.cam.scale * Math.exp(-ev.deltaY * 0.0015)));
  const [nx, ny] = toWorld(sx, sy);
  state.cam.x += wx - nx;
  state.cam.y += wy - ny;
  interacting();
  render();
}, { passive: false });

function showTooltip(n, sx, sy) {
  const tip = $("tooltip");
  if (!n) { tip.hidden = true; return; }
  tip.replaceChildren();
  const k = el("div", "k", n.kind + (n.sub ? " · " + n.sub : ""));
  k.style.color = colourOf(n.kind);
  tip.append(k, el("div", "", n.label), el("div", "p", n.path ? `${n.path}${n.line ? ":" + n.line : ""}` : n.key));
  tip.style.left = sx + 16 + "px";
  tip.style.top = sy + 12 + "px";
  tip.hidden = false;
}

function animateTo(x, y, scale) {
  const from = { ...state.cam }, start = performance.now(), ms = 420;
  const step = (now) => {
    const t = Math.min(1, (now - start) / ms), e = 1 - Math.pow(1 - t, 3);
    state.cam.x = from.x + (x - from.x) * e;
    state.cam.y = from.y + (y - from.y) * e;
    state.cam.scale = from.scale + (scale - from.scale) * e;
    draw();
    if (t < 1) requestAnimationFrame(step);
  };
  requestAnimationFrame(step);
}

async function selectKey(key, { move = true } = {}) {
  let page;
  try {
    page = await api("/api/graph", { node: key, depth: 1, limit: 400 });
  } catch (error) {
    console.warn(error);
    return;
  }
  if (page.version !== state.version && state.nodes.length) {
    // The graph moved on: ids changed, so reload before merging.
    await loadGraph({ keepCamera: true });
    if (state.version !== page.version) return;
  }
  addPage(page);
  buildGrid();
  const node = state.byKey.get(key);
  state.selected = node || null;
  state.focus = page.focus;
  state.neighbourIds = new Set(page.focus.neighbours.map((nb) => nb.id));
  showDetails(page.focus);
  updateLoaded();
  if (node && move) frameNeighbourhood(node);
  else render();
}

function frameNeighbourhood(node) {
  // Fit the node and its neighbours into the part of the stage the details panel leaves free.
  const around = [node, ...[...state.neighbourIds].map((id) => state.byId.get(id)).filter(Boolean)];
  let minX = node.x, maxX = node.x, minY = node.y, maxY = node.y;
  for (const n of around) {
    minX = Math.min(minX, n.x); maxX = Math.max(maxX, n.x);
    minY = Math.min(minY, n.y); maxY = Math.max(maxY, n.y);
  }
  const panel = $("details").hidden ? 0 : 360;
  const w = canvas.width / dpr - panel, h = canvas.height / dpr;
  const span = Math.max((maxX - minX) / Math.max(w, 200), (maxY - minY) / h, 1e-6);
  const scale = Math.max(0.02, Math.min(2.5, 0.8 / span));
  // Shift the centre right by half the panel so the neighbourhood sits in the free area.
  animateTo((minX + maxX) / 2 + panel / 2 / scale, (minY + maxY) / 2, scale);
}

function clearSelection() {
  state.selected = null; state.focus = null; state.neighbourIds = new Set();
  $("details").hidden = true;
  render();
}

function showDetails(f) {
  const body = $("details-body");
  body.replaceChildren();
  const kind = el("div", "kind");
  const dot = el("span", "dot"); dot.style.color = colourOf(f.kind);
  kind.append(dot, el("span", "", f.kind + (f.subkind ? " · " + f.subkind : "")));
  kind.style.color = colourOf(f.kind);
  body.append(kind, el("h2", "", f.label));
  body.append(el("div", "where", f.path ? `${f.path}${f.line ? `:${f.line}` : ""}${f.end_line > f.line ? `–${f.end_line}` : ""}` : f.key));
  if (f.signature) body.append(el("pre", "sig", f.signature));
  if (f.summary) body.append(el("p", "summary", f.summary));
  const stats = el("div", "stats");
  const stat = (label, value) => { const s = el("span", "", label + " "); s.append(el("b", "", value)); return s; };
  stats.append(stat("links", fmt(f.neighbour_count)), stat("importance", f.w.toFixed(2)));
  if (f.data && f.data.size) stats.append(stat("bytes", fmt(f.data.size)));
  body.append(stats);
  // What conversations told: current facts and relations, then what corrections replaced.
  const told = [...(f.facts || []).map((r) => [r, r.text]),
    ...((f.data && f.data.relations) || []).map((r) => [r, `${r.type} → ${r.label || r.target}`])];
  if (told.length) {
    body.append(el("h3", "", "Facts"));
    const ul = el("ul", "neighbours");
    told.sort((a, b) => (a[0].valid_to == null ? 0 : 1) - (b[0].valid_to == null ? 0 : 1));
    for (const [record, text] of told) {
      const was = record.valid_to != null;
      ul.append(el("li", was ? "was" : "", was ? `was: ${text}` : text));
    }
    body.append(ul);
  }
  body.append(el("h3", "", `Neighbours (${fmt(f.neighbour_count)})`));
  const list = el("ul", "neighbours");
  // One row per neighbour: a file both contains and defines its symbols.
  const rows = new Map();
  for (const nb of f.neighbours) {
    const row = rows.get(nb.key);
    const edge = (nb.dir === "out" ? "→ " : "← ") + nb.edge;
    if (!row) rows.set(nb.key, { ...nb, edges: [edge] });
    else if (!row.edges.includes(edge)) row.edges.push(edge);
  }
  for (const nb of rows.values()) {
    const li = el("li");
    const d = el("span", "dot"); d.style.color = colourOf(nb.kind);
    li.append(d, el("span", "l", nb.label), el("span", "e", nb.edges.join(", ")));
    li.title = nb.key;
    li.addEventListener("click", () => selectKey(nb.key));
    list.append(li);
  }
  body.append(list);
  $("details").hidden = false;
}

// ---- search -----------------------------------------------------------------------------------
let searchTimer = null, searchSeq = 0, results = [], activeResult = 0;
$("search").addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(runSearch, 140);
});
$("search").addEventListener("keydown", async (ev) => {
  if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
    ev.preventDefault();
    activeResult = Math.max(0, Math.min(results.length - 1, activeResult + (ev.key === "ArrowDown" ? 1 : -1)));
    paintResults();
  } else if (ev.key === "Enter") {
    ev.preventDefault();
    clearTimeout(searchTimer);
    if (!results.length) await runSearch();
    if (results.length) choose(results[activeResult] || results[0]);
  } else if (ev.key === "Escape") {
    $("results").hidden = true;
  }
});

async function runSearch() {
  const q = $("search").value.trim();
  const seq = ++searchSeq;
  if (!q) { results = []; $("results").hidden = true; return; }
  const page = await api("/api/graph", { q, limit: 12, ...(state.folder ? { folder: state.folder } : {}) }).catch(() => null);
  if (!page || seq !== searchSeq) return;
  results = page.nodes;
  activeResult = 0;
  paintResults(page.total);
}

function paintResults(total) {
  const ul = $("results");
  ul.replaceChildren();
  if (!results.length) ul.append(el("li", "empty", "No match"));
  results.forEach((n, i) => {
    const li = el("li", i === activeResult ? "active" : "");
    const d = el("span", "dot"); d.style.color = colourOf(n.kind);
    li.append(d, el("span", "label", n.label), el("span", "path", n.path || n.key));
    li.addEventListener("mousedown", (ev) => { ev.preventDefault(); choose(n); });
    ul.append(li);
  });
  if (total > results.length) ul.append(el("li", "empty", `${fmt(total - results.length)} more…`));
  ul.hidden = false;
}

function choose(n) {
  $("results").hidden = true;
  $("search").value = n.label;
  selectKey(n.key);
}

document.addEventListener("keydown", (ev) => {
  if (ev.key === "/" && document.activeElement !== $("search") && document.activeElement !== $("folder")) {
    ev.preventDefault();
    $("search").focus();
  } else if (ev.key === "Escape" && document.activeElement !== $("search")) {
    clearSelection();
  }
});
$("search").addEventListener("blur", () => setTimeout(() => { $("results").hidden = true; }, 150));

// ---- filters ----------------------------------------------------------------------------------
function paintKinds() {
  const box = $("kinds");
  box.replaceChildren();
  for (const [kind, count] of Object.entries(state.counts)) {
    const chip = el("button", "chip" + (state.kinds.size && !state.kinds.has(kind) ? " off" : ""));
    const d = el("span", "dot"); d.style.color = colourOf(kind);
    chip.append(d, el("span", "", kind), el("span", "n", fmt(count)));
    chip.addEventListener("click", () => {
      if (!state.kinds.size) state.kinds = new Set(Object.keys(state.counts));
      if (state.kinds.has(kind)) state.kinds.delete(kind); else state.kinds.add(kind);
      if (!state.kinds.size || state.kinds.size === Object.keys(state.counts).length) state.kinds = new Set();
      paintKinds();
      clearSelection();
      loadGraph();
    });
    box.append(chip);
  }
}

function paintEdgeLegend(edgeCounts) {
  const box = $("edge-legend");
  box.replaceChildren();
  for (const [kind, count] of Object.entries(edgeCounts)) {
    const row = el("div");
    const line = el("i"); line.style.background = `rgb(${EDGE_COLOURS[kind] || "148,163,184"})`;
    row.append(line, el("span", "", `${kind} · ${fmt(count)}`));
    box.append(row);
  }
}

$("folder").addEventListener("change", () => {
  state.folder = $("folder").value.trim().replace(/^\/+|\/+$/g, "");
  clearSelection();
  loadGraph();
});
$("load-more").addEventListener("click", loadMore);
$("fit").addEventListener("click", () => fitView());
$("details-close").addEventListener("click", clearSelection);

// ---- tabs: database and status ----------------------------------------------------------------
let dbVersion = -1, statusVersion = -1;
for (const button of document.querySelectorAll(".tabs button")) {
  button.addEventListener("click", () => showTab(button.dataset.tab));
}

function showTab(name) {
  for (const b of document.querySelectorAll(".tabs button")) b.classList.toggle("active", b.dataset.tab === name);
  for (const s of document.querySelectorAll(".tab")) s.classList.toggle("active", s.id === "tab-" + name);
  if (name === "graph") resize();
  if (name === "database" && dbVersion !== state.version) loadDatabase();
  if (name === "status" && statusVersion !== state.version) loadStatus();
}

async function loadDatabase() {
  const db = await api("/api/database").catch(() => null);
  if (!db) return;
  dbVersion = db.version;
  const box = $("tables");
  box.replaceChildren();
  $("db-summary").textContent = db.tables.length
    ? `${fmt(db.tables.length)} tables · ${fmt(db.tables.reduce((s, t) => s + t.columns.length, 0))} columns · ${fmt(db.foreign_keys.length)} foreign keys`
    : "";
  if (!db.tables.length) {
    box.append(el("div", "empty-state", "No tables found. Theus discovers them in Prisma schemas and SQL files."));
    return;
  }
  for (const t of db.tables) {
    const card = el("div", "card");
    card.id = "table-" + t.name;
    const h = el("h3");
    const d = el("span", "dot"); d.style.color = colourOf("table");
    h.append(d, el("span", "", t.name));
    card.append(h, el("div", "src", `${t.path}:${t.line}${t.source ? " · " + t.source : ""}`));
    const table = el("table");
    for (const c of t.columns) {
      const tr = el("tr");
      const name = el("td", "", c.name);
      if (c.references) {
        const fk = el("span", "fk" + (c.references.resolved ? "" : " unresolved"), `→ ${c.references.table}.${c.references.column}`);
        fk.title = c.references.resolved ? "foreign key" : "foreign key to a table Theus has not found";
        fk.addEventListener("click", () => flashTable(c.references.table));
        name.append(fk);
      }
      tr.append(name, el("td", "t", c.type));
      table.append(tr);
    }
    card.append(table);
    if (t.referenced_by.length) card.append(el("div", "src", "referenced by " + t.referenced_by.join(", ")));
    box.append(card);
  }
}

function flashTable(name) {
  const card = document.getElementById("table-" + name);
  if (!card) return;
  card.scrollIntoView({ behavior: "smooth", block: "center" });
  card.classList.add("flash");
  setTimeout(() => card.classList.remove("flash"), 1400);
}

async function loadStatus() {
  const st = await api("/api/status").catch(() => null);
  if (!st) return;
  statusVersion = st.version;
  const box = $("status");
  box.replaceChildren();
  $("status-summary").textContent = `graph version ${st.version} · snapshot built in ${st.snapshot_ms} ms`;
  const tiles = el("div", "tiles");
  const tile = (label, value, colour) => {
    const t = el("div", "tile");
    const k = el("div", "k");
    if (colour) { const d = el("span", "dot"); d.style.color = colour; k.append(d); }
    k.append(el("span", "", label));
    t.append(el("div", "v", fmt(value)), k);
    return t;
  };
  tiles.append(tile("nodes", st.nodes), tile("edges", st.edges));
  for (const [kind, n] of Object.entries(st.counts)) tiles.append(tile(kind, n, colourOf(kind)));
  box.append(tiles);
  const edgeTiles = el("div", "tiles");
  for (const [kind, n] of Object.entries(st.edge_counts)) {
    edgeTiles.append(tile(kind, n, `rgb(${EDGE_COLOURS[kind] || "148,163,184"})`));
  }
  box.append(edgeTiles);
  const sections = el("div", "sections");
  for (const [name, values] of Object.entries(st.sections || {})) {
    const card = el("div", "card");
    card.append(el("h3", "", name));
    card.append(kvTable(values));
    sections.append(card);
  }
  box.append(sections);
}

function kvTable(values) {
  const table = el("table", "kv");
  if (values === null || typeof values !== "object") values = { value: values };
  for (const [k, v] of Object.entries(values)) {
    const tr = el("tr");
    const cell = el("td");
    if (v === null || v === undefined || v === "") cell.textContent = "—";
    else if (Array.isArray(v)) cell.textContent = v.length ? v.join(", ") : "none";
    else if (typeof v === "object") {
      const entries = Object.entries(v);
      cell.textContent = entries.length ? entries.map(([a, b]) => `${a}: ${typeof b === "object" ? JSON.stringify(b) : b}`).join(" · ") : "none";
    } else cell.textContent = typeof v === "number" ? fmt(v) : String(v);
    if (k === "error") cell.className = "err";
    tr.append(el("td", "", k.replace(/_/g, " ")), cell);
    table.append(tr);
  }
  return table;
}

// ---- start and live updates -------------------------------------------------------------------
async function refreshStatus() {
  const st = await api("/api/status", { sections: 0 });
  state.counts = st.counts;
  if (st.title) { $("project").textContent = st.title; document.title = `Theus · ${st.title}`; }
  $("meta").replaceChildren(el("span", "live", "● "), document.createTextNode(`${fmt(st.nodes)} nodes · ${fmt(st.edges)} edges`));
  paintKinds();
  paintEdgeLegend(st.edge_counts);
  const list = $("folders");
  list.replaceChildren();
  for (const [folder] of st.folders) { const o = el("option"); o.value = folder; list.append(o); }
  return st;
}

// A graph that changes continuously (a branch switch re-indexing) reloads at most this often.
const RELOAD_EVERY_MS = 10000;
let lastReload = 0;

async function poll() {
  try {
    const st = await api("/api/status", { sections: 0 });
    const quiet = performance.now() - lastReload > RELOAD_EVERY_MS;
    if (st.version !== state.version && !state.loading && !drag && quiet) {
      lastReload = performance.now();
      await refreshStatus();
      await loadGraph({ keepCamera: true });
      const active = document.querySelector(".tab.active");
      if (active && active.id === "tab-database") loadDatabase();
      if (active && active.id === "tab-status") loadStatus();
    }
  } catch (error) {
    console.warn(error);
  }
  setTimeout(poll, POLL_MS);
}

async function start() {
  window.addEventListener("resize", resize);
  resize();
  if (!TOKEN) {
    banner("This page needs the link printed by `theus dashboard` (it carries a one-time token).");
    return;
  }
  try {
    await refreshStatus();
    await loadGraph();
  } catch (error) {
    console.warn(error);
  }
  setTimeout(poll, POLL_MS);
}

start();
