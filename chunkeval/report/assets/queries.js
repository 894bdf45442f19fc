(function () {
"use strict";
var D = JSON.parse(document.getElementById("data").textContent);
var $ = function (id) { return document.getElementById(id); };
var SPACE = /\s/u;
var state = { pair: null, set: "", doc: "", search: "", change: "",
              sort: null, dir: 1, open: new Set() };

function el(tag, cls, text) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// A document of a set as an array of characters (code points, as the offsets count them).
var docCache = new Map();
function docChars(si, d) {
  var key = si + ":" + d, chars = docCache.get(key);
  if (!chars) {
    chars = [];
    (D.sets[si].text[d] || []).forEach(function (part) {
      if (part >= 0) { for (var ch of D.strings[part]) chars.push(ch); }
      else { for (var i = 0; i < -part; i++) chars.push(""); }
    });
    docCache.set(key, chars);
  }
  return chars;
}

// The gold as the shingle rule sees it: whitespace-free shingles, short golds whole.
function goldShingles(q) {
  if (q.shingles) return q.shingles;
  var n = D.shingle, set = new Set(), shorts = [];
  q[3].forEach(function (g) {
    var bare = Array.from(D.strings[g]).filter(function (c) { return !SPACE.test(c); });
    if (bare.length < n) { if (bare.length) shorts.push(bare); return; }
    for (var i = 0; i + n <= bare.length; i++) set.add(bare.slice(i, i + n).join(""));
  });
  q.shingles = { set: set, shorts: shorts };
  return q.shingles;
}

// Which characters of a chunk are gold: by position for positional gold in a chunk that is
// its slice, else the characters of the gold shingles the chunk's text holds.
function goldMarks(q, chars, placed, start) {
  var marks = new Array(chars.length).fill(false);
  if (q[4].length && placed) {
    q[4].forEach(function (s) {
      for (var p = Math.max(s[0], start); p < Math.min(s[1], start + chars.length); p++)
        marks[p - start] = true;
    });
    return marks;
  }
  var g = goldShingles(q), n = D.shingle, bare = [], at = [];
  chars.forEach(function (c, i) { if (c && !SPACE.test(c)) { bare.push(c); at.push(i); } });
  for (var i = 0; i + n <= bare.length; i++) {
    if (g.set.has(bare.slice(i, i + n).join("")))
      for (var j = i; j < i + n; j++) marks[at[j]] = true;
  }
  g.shorts.forEach(function (s) {
    for (var i = 0; i + s.length <= bare.length; i++) {
      var hit = true;
      for (var j = 0; j < s.length && hit; j++) hit = bare[i + j] === s[j];
      if (hit) for (var j2 = 0; j2 < s.length; j2++) marks[at[i + j2]] = true;
    }
  });
  // whitespace between two marked characters is inside the gold's run: marked too
  for (var m = 1; m < at.length; m++) {
    if (marks[at[m - 1]] && marks[at[m]]) for (var p = at[m - 1] + 1; p < at[m]; p++) marks[p] = true;
  }
  return marks;
}

function markedText(chars, marks) {
  var out = el("div", "chunk"), run = "", marked = false;
  function flush() {
    if (!run) return;
    out.appendChild(marked ? el("mark", null, run) : document.createTextNode(run));
    run = "";
  }
  chars.forEach(function (c, i) {
    if (marks[i] !== marked) { flush(); marked = marks[i]; }
    run += c;
  });
  flush();
  return out;
}

function pageText(pages) {
  return (pages.length > 1 ? "pages " : "page ") + (pages.length > 2 && pages[pages.length - 1]
      - pages[0] === pages.length - 1 ? pages[0] + "–" + pages[pages.length - 1]
      : pages.join(", "));
}

function chunkItem(si, q, number, rank) {
  var c = D.sets[si].chunks[number], doc = D.sets[si].docs[c[0]];
  var li = el("li");
  var slice = docChars(si, c[0]).slice(c[1], c[2]);
  var rewritten = c.length > 3, placed = !rewritten;
  var chars = c.length === 5 ? Array.from(c[3]).concat(slice, Array.from(c[4])) : slice;
  var same = c[0] === q[2];
  var marks = same ? goldMarks(q, chars, placed, c[1]) : [];
  var held = marks.filter(Boolean).length;
  var pages = D.sets[si].pages ? D.sets[si].pages[number] : [];
  var meta = el("div", "meta", "#" + rank + " " + doc + ":" + c[1] + ":" + c[2] + " · " +
                (pages.length ? pageText(pages) + " · " : "") + (c[2] - c[1]) + " chars · " +
                (same ? held + " gold characters" : "another document"));
  if (c.length === 4) meta.appendChild(el("span", "flag",
      " · its handed text is rewritten; shown as its slice"));
  else if (rewritten) meta.appendChild(el("span", "flag", " · slice with the text it adds"));
  li.appendChild(meta);
  var text = markedText(chars, marks);
  if (!same) text.classList.add("other");
  li.appendChild(text);
  return li;
}

function side(title, si, q, numbers, note) {
  var box = el("div");
  box.appendChild(el("h4", null, title));
  if (note) box.appendChild(el("p", "note", note));
  var list = el("ol", "chunks");
  numbers.forEach(function (n, i) { list.appendChild(chunkItem(si, q, n, i + 1)); });
  if (!numbers.length) box.appendChild(el("p", "note", "no chunk"));
  box.appendChild(list);
  return box;
}

function beforeOf(c) {
  if (c.before) return c.before;
  if (c.ref !== undefined) return D.cases[c.ref].now;
  return null;
}

function beforeTitle(c) {
  if (c.ref !== undefined) { var r = D.cases[c.ref]; return "before: " + r.s + " · " + r.r; }
  return "before: " + (D.compared || "");
}

function detail(row) {
  var c = D.cases[row.ci], si = c.set, q = D.sets[si].queries[row.qi];
  var td = el("td");
  td.colSpan = 7;
  var asked = el("p");
  asked.appendChild(el("strong", null, "query: "));
  asked.appendChild(document.createTextNode(q[1] + "  (" + q[0] + ")"));
  td.appendChild(asked);
  var where = q[4].length ? " (positions " + q[4].map(function (s) {
      return s[0] + "–" + s[1]; }).join(", ") + ")" : "";
  if (q.length > 5) where += " on " + pageText(q[5]);
  td.appendChild(el("p")).appendChild(el("strong", null, "gold in " +
      (D.sets[si].docs[q[2]] || "?") + where + ":"));
  td.appendChild(el("div", "gold", q[3].map(function (g) { return D.strings[g]; })
                                      .join("\n…\n")));
  var sides = el("div", "sides");
  sides.appendChild(side("now: " + c.s + " · " + c.r + " (top " + D.k + ")", si, q,
                         c.now.top[row.qi]));
  var b = beforeOf(c);
  if (b) sides.appendChild(side(beforeTitle(c), si, q, b.top[row.qi],
      b.firstOnly ? "a baseline keeps only the chunk that held the most gold" : null));
  td.appendChild(sides);
  var tr = el("tr", "detail");
  tr.appendChild(td);
  return tr;
}

var pairs = [];
var rowCache = new Map();
function rowsOf(pair) {
  if (rowCache.has(pair)) return rowCache.get(pair);
  var rows = [];
  D.cases.forEach(function (c, ci) {
    if (c.s + " · " + c.r !== pair) return;
    var s = D.sets[c.set], b = beforeOf(c);
    s.queries.forEach(function (q, qi) {
      var now = c.now.cov[qi], before = b ? b.cov[qi] : null;
      rows.push({ ci: ci, qi: qi, key: ci + "/" + qi, id: q[0], text: q[1],
                  set: s.name, doc: s.docs[q[2]] || "", now: now, before: before,
                  change: before === null ? null : now - before, order: rows.length });
    });
  });
  rowCache.set(pair, rows);
  return rows;
}

function pct(v) { return v === null ? "–" : (v / 100).toFixed(1); }

function shown() {
  var needle = state.search.toLowerCase();
  var rows = rowsOf(state.pair).filter(function (r) {
    if (state.set && r.set !== state.set) return false;
    if (state.doc && r.doc !== state.doc) return false;
    if (needle && r.text.toLowerCase().indexOf(needle) < 0 &&
        r.id.toLowerCase().indexOf(needle) < 0) return false;
    if (state.change === "worse") return r.change !== null && r.change < 0;
    if (state.change === "better") return r.change !== null && r.change > 0;
    if (state.change === "same") return r.change === 0;
    return true;
  });
  var key = state.sort, dir = state.dir;
  if (key) {
    var value = { id: function (r) { return r.id; }, doc: function (r) { return r.doc; },
                  coverage: function (r) { return r.now; },
                  before: function (r) { return r.before; },
                  change: function (r) { return r.change; } }[key];
    rows = rows.slice().sort(function (x, y) {
      var a = value(x), b = value(y);
      if (a === b) return x.order - y.order;
      if (a === null) return 1;
      if (b === null) return -1;
      return (a < b ? -1 : 1) * dir;
    });
  }
  return rows;
}

function render() {
  var body = document.querySelector("#queries tbody");
  var rows = shown(), all = rowsOf(state.pair).length;
  body.textContent = "";
  var fragment = document.createDocumentFragment();
  rows.forEach(function (r) {
    var tr = el("tr", "q");
    tr.dataset.key = r.key;
    var cls = r.change === null || r.change === 0 ? "n" : r.change < 0 ? "n worse" : "n better";
    [[r.id, ""], [r.set, ""], [r.doc, ""], [r.text, ""], [pct(r.before), "n"],
     [pct(r.now), "n"], [r.change === null ? "–" : (r.change > 0 ? "+" : "") + pct(r.change),
                        cls]]
      .forEach(function (cell) { tr.appendChild(el("td", cell[1], cell[0])); });
    tr.addEventListener("click", function () {
      if (state.open.has(r.key)) state.open.delete(r.key); else state.open.add(r.key);
      render();
    });
    fragment.appendChild(tr);
    if (state.open.has(r.key)) { tr.classList.add("open"); fragment.appendChild(detail(r)); }
  });
  body.appendChild(fragment);
  $("count").textContent = rows.length + " of " + all + " queries";
  document.querySelectorAll("#queries th[data-sort]").forEach(function (th) {
    if (th.dataset.sort === state.sort)
      th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
    else th.removeAttribute("aria-sort");
  });
}

function option(select, value, text) {
  var o = el("option", null, text === undefined ? value : text);
  o.value = value;
  select.appendChild(o);
}

function start() {
  var facts = $("facts");
  facts.appendChild(el("p", null, D.cases.length + " cases (strategy · retriever · query " +
      "set) · coverage of the gold by the top " + D.k + " chunks, in points · before: " +
      (D.compared || "none") + (D.compared === "baseline" ? "" :
      ", same retriever and query set")));
  facts.appendChild(el("p", null, "A row opens to its chunks with the gold's characters " +
      "marked: those of the gold's " + D.shingle + "-character shingles the chunk holds, " +
      "or for positional gold the gold positions inside the chunk's range. Only chunks of " +
      "the gold document count."));
  D.notes.forEach(function (n) { facts.appendChild(el("p", "note", n)); });
  D.cases.forEach(function (c) {
    var pair = c.s + " · " + c.r;
    if (pairs.indexOf(pair) < 0) { pairs.push(pair); option($("case"), pair); }
  });
  D.sets.forEach(function (s) { option($("set"), s.name); });
  var docs = new Set();
  D.sets.forEach(function (s) { s.queries.forEach(function (q) { docs.add(s.docs[q[2]]); }); });
  Array.from(docs).sort().forEach(function (d) { if (d) option($("doc"), d); });
  $("before-head").textContent = D.compared ? "before" : "–";
  var compared = D.cases.filter(function (c) { return beforeOf(c); })[0] || D.cases[0];
  state.pair = compared ? compared.s + " · " + compared.r : null;
  if (compared) $("case").value = state.pair;
  // a link may name the case, the set, a search and a query to open: #case=...&q=...
  var wanted = new URLSearchParams(location.hash.slice(1));
  if (pairs.indexOf(wanted.get("case")) >= 0) state.pair = $("case").value = wanted.get("case");
  ["set", "search"].forEach(function (name) {
    if (wanted.get(name)) state[name] = $(name).value = wanted.get(name);
  });
  if (D.compared === "baseline") { state.sort = "change"; state.dir = 1; }
  $("case").addEventListener("change", function (e) { state.pair = e.target.value; render(); });
  [["set", "change"], ["doc", "change"], ["change", "change"], ["search", "input"]]
    .forEach(function (x) {
      $(x[0]).addEventListener(x[1], function (e) { state[x[0]] = e.target.value; render(); });
    });
  document.querySelectorAll("#queries th[data-sort]").forEach(function (th) {
    th.addEventListener("click", function () {
      if (state.sort === th.dataset.sort) state.dir = -state.dir;
      else { state.sort = th.dataset.sort; state.dir = 1; }
      render();
    });
  });
  if (state.pair && wanted.get("q")) rowsOf(state.pair).forEach(function (r) {
    if (r.id === wanted.get("q")) state.open.add(r.key);
  });
  if (state.pair) render();
  var opened = document.querySelector("#queries tr.open");
  if (opened && opened.getBoundingClientRect().top > innerHeight / 2) opened.scrollIntoView();
}

start();
})();
