// A board's pages: its ranking a page at a time, search, the page around a
// member, and one member's detail. Archives open here too, read-only.

import { getJson, boardPath, memberPath } from "./api.js";
import { h, fmtInt, fmtBytes, boardHref, memberHref, entriesTable, scoreText, dl } from "./ui.js";
import { actionButton, reconfigureBoard, resetBoard, deleteBoard, removeMember } from "./admin.js";

const PAGE_SIZES = [10, 25, 50, 100];

function crumbs(board, ...rest) {
  return h("nav", { class: "crumbs", "aria-label": "Breadcrumb" },
    h("a", { href: "#/boards" }, "Boards"), " / ",
    rest.length ? h("a", { href: boardHref(board) }, board) : h("span", { "aria-current": "page" }, board),
    rest.map((r) => [" / ", r]));
}

function boardHeader(info, navigate, refresh) {
  const board = info.board;
  const cfg = info.config || {};
  const archive = info.archive_of || info.read_only;
  const links = [];
  if (!archive) {
    links.push(h("a", { class: "button", href: boardHref(board, "/live") }, "Live view"));
    links.push(h("a", { class: "button", href: boardHref(board, "/archives") }, "Archives"));
  } else if (info.archive_of) {
    links.push(h("a", { class: "button", href: boardHref(info.archive_of) }, `Board ${info.archive_of}`));
  }
  const admin = archive ? [actionButton("Delete", "admin", () => deleteBoard(board, () => navigate("#/boards")), "danger")] : [
    actionButton("Reconfigure", "admin", () => reconfigureBoard(board, cfg, refresh)),
    actionButton("Reset", "admin", () => resetBoard(board, refresh), "danger"),
    actionButton("Delete", "admin", () => deleteBoard(board, () => navigate("#/boards")), "danger"),
  ];
  return h("header", { class: "board-head" },
    crumbs(board),
    h("h2", {}, board, archive ? h("span", { class: "badge" }, "read-only archive") : null),
    dl([
      ["Members", fmtInt(info.members)],
      ["Ranking", `${cfg.order || "desc"}, ${cfg.ranking || "unique"}`],
      !archive && ["Reset", cfg.reset && cfg.reset !== "never" ? `${cfg.reset}${info.period ? " · period " + info.period : ""}` : "never"],
      !archive && info.next_reset && ["Next reset", String(info.next_reset)],
      cfg.sort && ["Sort keys", cfg.sort.map((k) => `${k.key} ${k.order || "desc"}`).join(", ")],
      info.heap_bytes !== undefined && ["Memory", fmtBytes(info.heap_bytes)],
    ]),
    h("div", { class: "actions" }, links, admin));
}

export async function boardPage(view, { board, params, navigate, refresh }) {
  const size = PAGE_SIZES.includes(+params.get("size")) ? +params.get("size") : 25;
  const q = params.get("q") || "";
  const around = params.get("around") || "";
  let page = Math.max(1, parseInt(params.get("page") || "1", 10) || 1);
  const info = await getJson(boardPath(board));

  const link = (p) => boardHref(board, "", new URLSearchParams({ page: String(p), ...(size !== 25 ? { size: String(size) } : {}) }).toString());
  let body;
  let pager = null;
  if (q) {
    const r = await getJson(boardPath(board, "search"), { q, limit: 100 });
    body = [h("p", { class: "result-note", role: "status" },
      `${fmtInt(r.total)} match${r.total === 1 ? "" : "es"} for “${q}”${r.total > r.entries.length ? `, the best ${r.entries.length} shown` : ""}. `,
      h("a", { href: boardHref(board) }, "Clear search")),
    entriesTable(board, r.entries, { caption: `Search results for ${q}` })];
  } else if (around) {
    const r = await getJson(memberPath(board, "around", around), { page_size: size });
    body = [h("p", { class: "result-note", role: "status" }, `${around} is ranked ${fmtInt(r.rank)} of ${fmtInt(r.total)}. `,
      h("a", { href: memberHref(board, around) }, "Member detail")),
    entriesTable(board, r.entries, { highlight: around, caption: `Entries around ${around}` })];
  } else {
    const r = await getJson(boardPath(board, "top"), { page, page_size: size });
    page = r.page;
    body = [entriesTable(board, r.entries, { caption: `Page ${r.page} of ${Math.max(1, r.total_pages)}` })];
    if (!r.entries.length) body.push(h("p", { class: "empty-note" }, r.total ? "This page is past the last one." : "No entries yet."));
    pager = pagerNav(r, link, navigate);
  }

  const forms = h("div", { class: "tools" },
    formOf("search", "Search names", "q", q, "Search", (v) => navigate(v ? boardHref(board, "", "q=" + encodeURIComponent(v)) : boardHref(board))),
    formOf("find", "Find a member (id)", "member", around, "Show page", (v) => v && navigate(boardHref(board, "", "around=" + encodeURIComponent(v)))));
  view.replaceChildren(...[boardHeader(info, navigate, refresh), forms, pager, ...body].filter(Boolean));
}

function formOf(id, label, name, value, button, submit) {
  const input = h("input", { id: "f-" + id, name, type: "search", autocomplete: "off", spellcheck: "false" });
  input.value = value;
  return h("form", { class: "inline-form", role: id === "search" ? "search" : null, onsubmit: (e) => { e.preventDefault(); submit(input.value.trim()); } },
    h("label", { for: "f-" + id }, label), h("div", { class: "row" }, input, h("button", { type: "submit" }, button)));
}

function pagerNav(r, link, navigate) {
  const last = Math.max(1, r.total_pages);
  const input = h("input", { id: "f-page", type: "number", min: 1, max: last, inputmode: "numeric", class: "page-input" });
  input.value = String(r.page);
  const go = (e) => {
    e.preventDefault();
    const p = Math.min(last, Math.max(1, parseInt(input.value, 10) || 1));
    navigate(link(p));
  };
  const nav = (p, text, rel) => (p >= 1 && p <= last && p !== r.page
    ? h("a", { class: "button", href: link(p), rel }, text)
    : h("span", { class: "button disabled", "aria-disabled": "true" }, text));
  return h("nav", { class: "pager", "aria-label": "Pages" },
    nav(1, "First"), nav(r.page - 1, "Previous", "prev"),
    h("form", { class: "page-jump", onsubmit: go },
      h("label", { for: "f-page" }, "Page"), input, h("span", {}, `of ${fmtInt(last)}`), h("button", { type: "submit" }, "Go")),
    nav(r.page + 1, "Next", "next"), nav(last, "Last"),
    h("span", { class: "muted total" }, `${fmtInt(r.total)} entries`));
}

export async function memberPage(view, { board, member, navigate }) {
  const [entry, pct, info] = await Promise.all([
    getJson(memberPath(board, "members", member)),
    getJson(memberPath(board, "percentile", member)),
    getJson(boardPath(board)),
  ]);
  const archive = info.archive_of || info.read_only;
  view.replaceChildren(
    crumbs(board, h("span", { "aria-current": "page" }, member)),
    h("h2", {}, entry.name ? `${entry.name}` : member, entry.name ? h("span", { class: "muted id" }, member) : null),
    dl([
      ["Rank", `${fmtInt(entry.rank)} of ${fmtInt(entry.total)}`],
      ["Score", scoreText(entry)],
      ["Percentile", `${(+pct.percentile).toFixed(2)} %`],
      ["Page", fmtInt(entry.page)],
    ]),
    h("div", { class: "actions" }, h("a", { class: "button", href: boardHref(board, "", "around=" + encodeURIComponent(member)) }, "Show on its page")),
    h("h3", {}, "Data"),
    entry.data && Object.keys(entry.data).length
      ? h("pre", { class: "data" }, JSON.stringify(entry.data, null, 2))
      : h("p", { class: "empty-note" }, "No data stored for this member."),
    archive ? null : h("div", { class: "actions" },
      actionButton("Remove member", "write", () => removeMember(board, member, () => navigate(boardHref(board))), "danger")));
}
