// Building blocks shared by every page: element creation without innerHTML
// (member names and data are user strings), number formatting, the entries
// table and the message line that shows the server's errors.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

const intFmt = new Intl.NumberFormat("en-US");

export function fmtInt(n) {
  return n === undefined || n === null ? "–" : intFmt.format(n);
}

export function fmtScore(v) {
  if (v === undefined || v === null) return "–";
  if (typeof v === "string") return v;
  return Number.isInteger(v) ? intFmt.format(v) : String(+v.toPrecision(12));
}

export function fmtBytes(n) {
  if (typeof n !== "number") return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return (i ? n.toFixed(1) : String(n)) + " " + units[i];
}

/** A score cell: one value, or each sort key's value on a board with several. */
export function scoreText(e) {
  if (e.scores && typeof e.scores === "object") {
    return Object.entries(e.scores).map(([k, v]) => `${k} ${fmtScore(v)}`).join(" · ");
  }
  return fmtScore(e.score);
}

export function boardHref(board, rest = "", query = "") {
  return "#/board/" + encodeURIComponent(board) + rest + (query ? "?" + query : "");
}

export function memberHref(board, member) {
  return boardHref(board, "/member/" + encodeURIComponent(member));
}

/**
 * The entries table: rank, member (linked to its detail), name, score. Rows
 * have a fixed height in the CSS so a live update never moves what follows.
 */
export function entriesTable(board, entries, { highlight, caption, rows } = {}) {
  const body = h("tbody");
  for (const e of entries) body.append(entryRow(board, e, highlight));
  // Empty rows keep a live table's height while it has fewer entries than places.
  for (let i = entries.length; i < (rows || 0); i++) body.append(h("tr", { class: "empty" }, h("td", { colspan: 4 }, "\u00a0")));
  return h("div", { class: "table-box" },
    h("table", { class: "entries" },
      caption ? h("caption", {}, caption) : null,
      h("thead", {}, h("tr", {}, h("th", { scope: "col", class: "num" }, "Rank"), h("th", { scope: "col" }, "Member"),
        h("th", { scope: "col" }, "Name"), h("th", { scope: "col", class: "num" }, "Score"))),
      body));
}

export function entryRow(board, e, highlight) {
  return h("tr", { class: e.member === highlight ? "hit" : null, "data-member": e.member },
    h("td", { class: "num" }, fmtInt(e.rank)),
    h("td", { class: "member" }, h("a", { href: memberHref(board, e.member) }, e.member)),
    h("td", { class: "name" }, e.name || ""),
    h("td", { class: "num" }, scoreText(e)));
}

const messageEl = () => document.getElementById("message");

export function showError(err) {
  noteIsFresh = false;
  const el = messageEl();
  el.textContent = err && err.message ? err.message : String(err);
  el.className = "message error";
  el.hidden = false;
}

// An action's note is set just before the page it leads to is drawn: that
// one page change keeps it.
let noteIsFresh = false;

export function showNote(text) {
  noteIsFresh = true;
  const el = messageEl();
  el.textContent = text;
  el.className = "message note";
  el.hidden = false;
}

export function clearMessage() {
  if (noteIsFresh) {
    noteIsFresh = false;
    return;
  }
  const el = messageEl();
  el.hidden = true;
  el.textContent = "";
}

export function dl(pairs) {
  return h("dl", { class: "facts" }, pairs.filter(Boolean).map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, v))));
}
