// attncalc's walk page: draws the walk's screens (the JSON above, made by attncalc/learn/walk_page.py) and
// lets you explore them: a cell's arithmetic with its input cells lit, heads, attention lines, the quiz.
"use strict";
let D, S; // the page's data (packed by page.py: gzip, base64) and what the reader is looking at
const NEG_INF = ["-inf", "−inf", "-∞", "−∞", "-infinity"];
const DECIMAL = /^[+-]?(?:\d+(?:\.(\d*))?|\.(\d+))(?:[eE]([+-]?\d+))?$/;

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") e.textContent = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const kid of kids) if (kid) e.append(kid);
  return e;
}
const T = () => D.told[S.lang];
function say(key, values) {
  return T().ui[key].replace(/\{(\w+)\}/g, (m, f) => (values && f in values ? values[f] : m));
}
const screens = () => T().screens;

// ---- the frame: header, the step list, the step, the panel ----------------------------------------------
function frame() {
  document.body.replaceChildren();
  const langs = Object.entries(D.langs).map(([code, name]) =>
    el("button", { "data-lang": code, "aria-pressed": String(code === S.lang), onclick: () => setLang(code), text: name }));
  const quiz = el("input", { type: "checkbox", id: "quiz-on", onchange: (e) => { S.quiz = e.target.checked; show(S.k); } });
  quiz.checked = S.quiz;
  const theme = el("button", { id: "theme", onclick: toggleTheme, text: say("theme") });
  document.body.append(
    el("header", {}, el("h1", { text: T().title }), el("label", {}, quiz, " " + say("quiz_on")),
       el("span", { id: "score" }), theme, ...langs),
    el("nav", { "aria-label": say("steps") }, el("ol", { id: "steps" })),
    el("main", { id: "step", tabindex: "-1" }),
    el("section", { id: "panel", "aria-live": "polite" },
       el("div", { id: "quiz" }, el("div", { id: "quiz-ask" }),
          el("input", { id: "answer", size: "12", onkeydown: (e) => { if (e.key === "Enter") answer(); e.stopPropagation(); } }),
          " ", el("button", { id: "check", onclick: answer, text: say("check") })),
       el("div", { id: "verdict" }), el("pre", { id: "arith" }), el("div", { id: "lit" }),
       el("div", { id: "keys", text: say("click") + " " + say("keys") })));
  const list = document.getElementById("steps");
  screens().forEach((s, k) => list.append(el("li", { "data-k": k, onclick: () => show(k), text: `${k + 1} ${s.title}` })));
}

function setLang(code) { S.lang = code; document.documentElement.lang = code; frame(); show(S.k, true); }
function toggleTheme() {
  const root = document.documentElement, dark = matchMedia("(prefers-color-scheme: dark)").matches;
  const now = root.dataset.theme || (dark ? "dark" : "light");
  root.dataset.theme = now === "dark" ? "light" : "dark";
}

// ---- a step ----------------------------------------------------------------------------------------------
function show(k, keep) {
  const old = keep && S.cur ? { g: S.cur.g, key: S.cur.key } : null;
  S.k = k;
  const s = screens()[k], main = document.getElementById("step");
  document.querySelectorAll("#steps li").forEach((li) => {
    const here = Number(li.dataset.k) === k;
    li.classList.toggle("current", here);
    li.textContent = `${here ? "▶ " : ""}${Number(li.dataset.k) + 1} ${screens()[li.dataset.k].title}`;
    if (here) li.setAttribute("aria-current", "step"); else li.removeAttribute("aria-current");
  });
  document.querySelector("#steps li.current").scrollIntoView({ block: "nearest" });
  main.replaceChildren(
    el("div", { class: "where", text: `${say("step", { k: k + 1, n: screens().length })} · ${s.stage}` }),
    el("h2", { text: s.title }), el("pre", { class: "formulas", text: s.formulas.join("\n") }),
    ...s.why.map((w) => el("p", { text: w })));
  S.grids = [];
  const names = s.inputs.concat(s.weights, s.tensors);
  const heads = Math.max(1, ...names.map((n) => D.tensors[n].nheads));
  if (S.head === null || S.head >= heads) S.head = 0;
  if (heads > 1) main.append(headPicker(names));
  for (const [section, list, role] of [["inputs", s.inputs, "input"], ["weights", s.weights, "weight"], ["", s.tensors, "tensor"]]) {
    if (list.length && section) main.append(el("div", { class: "section", text: say(section) }));
    for (const name of list) main.append(matrix(name, role, heads));
  }
  s.ready.forEach((v, n) => main.append(readyMatrix(v, n)));
  for (const name of s.tensors) if (D.tensors[name].attention) main.append(lines(name, heads));
  s.lines.forEach((line) => main.append(el("p", { text: line })));
  if (k === screens().length - 1 && T().notes.length) main.append(el("div", { class: "notes" }, ...T().notes.map((n) => el("p", { text: n }))));
  const quiz = D.quizzes[k];
  document.getElementById("verdict").textContent = "";
  if (S.quiz && quiz && !(k in S.answered)) return askQuiz(quiz);
  document.getElementById("quiz").classList.remove("open");
  if (S.answered[k]) document.getElementById("verdict").textContent = S.answered[k];
  const grid = old && S.grids[old.g] ? old.g : Math.max(0, S.grids.findIndex((g) => g.name === s.main));
  if (S.grids.length) place(grid, old ? old.key : s.main === S.grids[grid].name ? onHead(S.grids[grid], s.example) : null);
  else { document.getElementById("arith").textContent = s.lines.join("\n"); document.getElementById("lit").textContent = ""; }
  updateScore();
}

function onHead(g, key) {
  // the worked cell of a [h, n, m] tensor is on head 0: on another head, the same row and column
  if (key === null || D.tensors[g.name].ndim !== 3) return key;
  return [g.v.head].concat(key.split(",").slice(1)).join(",");
}

function headPicker(names) {
  const t = names.map((n) => D.tensors[n]).reduce((a, b) => (b.views.length > a.views.length ? b : a));
  const a = names.map((n) => D.tensors[n]).find((x) => x.attention && x.views[0].w); // the step's A, [h, n, m]
  const w = a && S.from !== null && S.to !== null ? (h) => weightOf(a, h) : null;
  // sorted by the weight from one token to another (as `attncalc heads` ranks them), ties in head order
  const views = w ? [...t.views].sort((x, y) => w(y.head) - w(x.head) || x.head - y.head) : t.views;
  return el("div", { class: "heads" }, say("head") + " ",
    ...views.map((v) => el("button", { "data-head": v.head, "aria-pressed": String(v.head === S.head),
      onclick: () => { S.head = v.head; show(S.k); }, text: w ? `${v.head} (${w(v.head).toFixed(3)})` : String(v.head) }), " "),
    a ? sortBy(a) : null);
}

function weightOf(a, head) { // A[head, from, to], or −∞ for a head or a token the page does not show
  const v = a.views.find((x) => x.head === head), i = v ? v.rows.indexOf(S.from) : -1, j = v ? v.cols.indexOf(S.to) : -1;
  return i < 0 || j < 0 || v.w[i][j] === null ? -Infinity : v.w[i][j];
}

function sortBy(a) { // the query token (a row of A) and the key token (a column) whose weight sorts the heads
  const v = a.views[0];
  const choose = (id, list, labels, now, set) => el("select", { id, onchange: (e) => { set(e.target.value === "" ? null : Number(e.target.value)); show(S.k); } },
    el("option", { value: "", text: "—" }),
    ...list.map((x, k) => (x === null ? null : el("option", Object.assign({ value: String(x), text: labels[k] }, x === now ? { selected: "" } : {})))));
  return el("span", { class: "sort" }, say("head_sort") + " ",
    choose("sort-from", v.rows, v.rl, S.from, (x) => { S.from = x; }), " → ", choose("sort-to", v.cols, v.cl, S.to, (x) => { S.to = x; }));
}

function viewFor(t, heads) {
  if (t.ndim !== 3) return t.views[0];
  const want = t.nheads === heads ? S.head : Math.floor((S.head * t.nheads) / heads); // GQA: the shared K/V head
  return t.views.find((v) => v.head === want) || t.views[0];
}

// ---- matrices --------------------------------------------------------------------------------------------
function index(t, v, i, j) { return [[], [j], [i, j], [v.head, i, j]][t.ndim]; }

function table(v, cellOf) {
  const head = el("tr", {}, el("th"), ...v.cl.map((c) => el("th", { text: c === null ? "…" : c })));
  const rows = v.rows.map((i, r) => el("tr", {}, el("th", { text: i === null ? "⋮" : v.rl[r] }),
    ...v.cols.map((j, c) => cellOf(i, j, v.cells[r][c]))));
  return el("table", { class: "heat" }, head, ...rows);
}

function td(g, i, j, c) {
  if (c === null) return el("td", { class: "gap", text: i === null && j === null ? "⋱" : i === null ? "⋮" : "…" });
  const key = g.key(i, j), attrs = { "data-key": key, "data-g": g.n };
  const cell = el("td", attrs);
  cell.textContent = c[0];
  if (c[1] !== null) { const [bg, fg] = D.palette[c[1]]; cell.style.background = bg; cell.style.color = fg; }
  cell.addEventListener("click", () => { if (!quizOpen()) place(g.n, key); });
  g.tds[key] = cell;
  return cell;
}

function grid(name, role, v) {
  const g = { n: S.grids.length, name, role, v, tds: {} };
  g.key = (i, j) => (role === "ready" ? `${i},${j}` : index(D.tensors[name], v, i, j).join(","));
  g.cell = (key) => key !== null && key in g.tds;
  g.order = () => Object.keys(g.tds);
  S.grids.push(g);
  return g;
}

function matrix(name, role, heads) {
  const t = D.tensors[name], v = viewFor(t, heads), g = grid(name, role, v);
  const title = t.titles[S.lang][t.views.indexOf(v)];
  return el("div", { class: "matrix", "data-name": name }, el("div", { class: "title", text: title }),
    table(v, (i, j, c) => td(g, i, j, c)));
}

function readyMatrix(v, n) {
  const g = grid(`ready${n}`, "ready", v);
  return el("div", { class: "matrix" }, el("div", { class: "title", text: v.title }), table(v, (i, j, c) => td(g, i, j, c)));
}

// ---- the cursor: a cell's arithmetic, its input cells lit -------------------------------------------------
function covers(spec, idx) {
  return spec.length === idx.length && spec.every((p, a) => (Array.isArray(p) ? p[0] <= idx[a] && (p[1] === null || idx[a] < p[1]) : p === idx[a]));
}

function place(n, key) {
  const g = S.grids[n];
  if (!g.cell(key)) key = g.order()[0];
  document.querySelectorAll("td.cursor, td.lit").forEach((c) => c.classList.remove("cursor", "lit"));
  S.cur = { g: n, key };
  g.tds[key].classList.add("cursor");
  g.tds[key].scrollIntoView({ block: "nearest", inline: "nearest" });
  const arith = document.getElementById("arith"), lit = document.getElementById("lit");
  if (g.role === "ready") {
    const [i, j] = key.split(",").map(Number), r = g.v.rows.indexOf(i), c = g.v.cols.indexOf(j);
    arith.textContent = say("given", { label: `${g.v.name}[${g.v.rl[r]}, ${g.v.cl[c]}]`, value: g.v.cells[r][c][0] });
    lit.textContent = "";
    return;
  }
  const cell = D.tensors[g.name].cells[key];
  const lines = cell.a === undefined ? [say("long", { label: label(g, key), value: cell.v, terms: cell.n })]
    : (Array.isArray(cell.a) ? cell.a : cell.a[S.lang]).slice();
  const made = screens().findIndex((s) => s.tensors.includes(g.name));
  if (g.role === "input" && made >= 0) lines.push(say("made_here", { k: made + 1 }));
  arith.textContent = lines.join("\n");
  const names = [];
  for (const other of S.grids) {
    if (other.role === "ready") continue;
    for (const [op, spec] of cell.o) {
      if (op !== other.name) continue;
      for (const [k2, c2] of Object.entries(other.tds)) {
        if (covers(spec, k2 === "" ? [] : k2.split(",").map(Number))) { c2.classList.add("lit"); names.push(label(other, k2)); }
      }
    }
  }
  lit.textContent = names.length ? say("lit", { cells: names.join(", ") }) : "";
}

function label(g, key) {
  const idx = key === "" ? [] : key.split(",").map(Number), v = g.v;
  if (!idx.length) return g.name;
  const j = idx[idx.length - 1], col = v.cl[v.cols.indexOf(j)];
  if (idx.length === 1) return `${g.name}[${col}]`;
  const row = v.rl[v.rows.indexOf(idx[idx.length - 2])];
  return `${g.name}[${idx.length === 3 ? `${say("head_index", { h: idx[0] })}, ` : ""}${row}, ${col}]`;
}

function move(dr, dc) {
  if (!S.cur || quizOpen()) return;
  const g = S.grids[S.cur.g], v = g.v, idx = S.cur.key.split(",").map(Number);
  const rows = v.rows.filter((i) => i !== null), cols = v.cols.filter((j) => j !== null);
  const i = g.v.rows.length > 1 || idx.length > 1 ? idx[idx.length - 2] : rows[0], j = idx[idx.length - 1];
  const r = Math.min(Math.max(rows.indexOf(i) + dr, 0), rows.length - 1);
  const c = Math.min(Math.max(cols.indexOf(j) + dc, 0), cols.length - 1);
  place(S.cur.g, g.key(rows[r], cols[c]));
}

// ---- attention lines (BertViz's head view): each query to each key, as strong as its weight ----------------
function lines(name, heads) {
  const t = D.tensors[name], v = viewFor(t, heads);
  const rows = v.rows.map((i, r) => [i, r]).filter(([i]) => i !== null), cols = v.cols.map((j, c) => [j, c]).filter(([j]) => j !== null);
  const h = 24, height = Math.max(rows.length, cols.length) * h + 10, ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "lines"); svg.setAttribute("width", 420); svg.setAttribute("height", height);
  svg.setAttribute("role", "img"); svg.setAttribute("aria-label", say("lines"));
  const mk = (tag, attrs, text) => { const e = document.createElementNS(ns, tag); for (const [a, b] of Object.entries(attrs)) e.setAttribute(a, b); if (text) e.textContent = text; svg.append(e); return e; };
  const all = [];
  rows.forEach(([, r], a) => cols.forEach(([, c], b) => {
    const w = parseFloat(v.cells[r][c][0]) || 0;
    all.push([a, mk("line", { x1: 130, y1: a * h + 17, x2: 290, y2: b * h + 17, "stroke-width": 0.5 + 5 * w, "stroke-opacity": Math.max(0.04, w), "data-w": w })]);
  }));
  const focus = (a) => all.forEach(([q, line]) => { line.style.display = a === null || q === a ? "" : "none"; });
  rows.forEach(([, r], a) => { const e = mk("text", { x: 122, y: a * h + 21, "text-anchor": "end" }, v.rl[r]); e.addEventListener("mouseenter", () => focus(a)); e.addEventListener("mouseleave", () => focus(null)); });
  cols.forEach(([, c], b) => mk("text", { x: 298, y: b * h + 21 }, v.cl[c]));
  return el("div", { class: "matrix" }, el("div", { class: "title", text: `${say("lines")}: ${t.titles[S.lang][t.views.indexOf(v)]}` }),
    el("p", { class: "where", text: say("lines_why") }), svg);
}

// ---- the quiz: the hidden cell, your answer judged with tolerance.py's rule (the table page.py made) -------
const quizOpen = () => document.getElementById("quiz").classList.contains("open");

function askQuiz(q) {
  const n = S.grids.findIndex((g) => g.name === q.tensor && g.cell(q.key));
  if (n < 0) { S.answered[S.k] = ""; return show(S.k); }
  place(n, q.key);
  S.grids[n].tds[q.key].textContent = "?";
  document.getElementById("arith").textContent = "";
  document.getElementById("lit").textContent = "";
  document.getElementById("quiz").classList.add("open");
  document.getElementById("quiz-ask").textContent = say("quiz_prompt", { label: q.label[S.lang] });
  const box = document.getElementById("answer");
  box.value = "";
  box.focus();
}

function way(q, text) {
  // the range of right answers at the decimals typed (page.py's table, from tolerance.py's judge)
  const m = DECIMAL.exec(text);
  if (!m) return null;
  if (m[1] === undefined && m[2] === undefined && m[4] === undefined) return q.whole;
  const d = (m[1] !== undefined ? m[1] : m[2] || "").length - Number(m[4] || 0);
  return q.ways[String(Math.min(8, Math.max(-2, d)))];
}

function answer() {
  const q = D.quizzes[S.k], text = document.getElementById("answer").value.trim(), plain = text.replace(/−/g, "-");
  let said;
  if (!text) said = say("skipped");
  else {
    const neg = NEG_INF.includes(plain.toLowerCase()), w = neg ? { lo: null, hi: null, accepted: {} } : way(q, plain);
    if (!w) { document.getElementById("verdict").textContent = say("quiz_nan"); return; }
    const y = Number(plain), slack = (v) => 1e-9 * Math.max(1, Math.abs(v));
    const ok = neg ? q.true === "-inf" : w.lo !== null && y >= w.lo - slack(w.lo) && y <= w.hi + slack(w.hi);
    S.asked[S.k] = ok;
    const shown = neg ? "−∞" : w.accepted[S.lang];
    said = say(ok ? "right" : "wrong", { label: q.label[S.lang], value: q.value, answer: text, accepted: shown });
  }
  S.answered[S.k] = said;
  document.getElementById("quiz").classList.remove("open");
  show(S.k, true);
  document.getElementById("verdict").textContent = said;
}

function updateScore() {
  const answers = Object.values(S.asked);
  document.getElementById("score").textContent = answers.length ? say("score", { right: answers.filter(Boolean).length, asked: answers.length }) : "";
}

// ---- keys --------------------------------------------------------------------------------------------------
document.addEventListener("keydown", (e) => {
  if (e.target.tagName === "INPUT" || e.ctrlKey || e.metaKey || e.altKey) return;
  const keys = {
    ArrowLeft: () => move(0, -1), ArrowRight: () => move(0, 1), ArrowUp: () => move(-1, 0), ArrowDown: () => move(1, 0),
    n: () => S.k + 1 < screens().length && show(S.k + 1), PageDown: () => S.k + 1 < screens().length && show(S.k + 1),
    b: () => S.k > 0 && show(S.k - 1), PageUp: () => S.k > 0 && show(S.k - 1),
    l: () => { const codes = Object.keys(D.langs); setLang(codes[(codes.indexOf(S.lang) + 1) % codes.length]); },
    Tab: () => S.grids.length && !quizOpen() && place((S.cur.g + (e.shiftKey ? S.grids.length - 1 : 1)) % S.grids.length, null),
    Enter: () => { const g = S.cur && S.grids[S.cur.g]; const made = g && g.role === "input" ? screens().findIndex((s) => s.tensors.includes(g.name)) : -1; if (made >= 0) show(made); },
  };
  if (keys[e.key]) { e.preventDefault(); keys[e.key](); }
});

async function unpack(text) {
  const bytes = Uint8Array.from(atob(text.trim()), (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
}

unpack(document.getElementById("data").textContent).then((data) => {
  D = data;
  S = { lang: D.lang, k: 0, head: null, from: null, to: null, cur: null, grids: [], quiz: D.quiz, asked: {}, answered: {} };
  frame();
  show(0);
  document.body.dataset.ready = "1";
});
