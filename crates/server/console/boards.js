// The boards page: every live board with its size, schedule and memory, its
// archives listed under it rather than among the boards.

import { getJson, boardPath } from "./api.js";
import { h, fmtInt, fmtBytes, boardHref, dl } from "./ui.js";
import { actionButton, createBoard } from "./admin.js";

// Board info is one request per board: past this many the list shows counts only.
const INFO_LIMIT = 100;

export async function boardsPage(view, { navigate }) {
  const { boards } = await getJson("/v1/boards");
  const main = boards.filter((b) => !b.archive_of);
  const archivesOf = new Map();
  for (const b of boards) {
    if (!b.archive_of) continue;
    if (!archivesOf.has(b.archive_of)) archivesOf.set(b.archive_of, []);
    archivesOf.get(b.archive_of).push(b);
  }
  const infos = await Promise.all(main.slice(0, INFO_LIMIT).map((b) =>
    getJson(boardPath(b.board)).catch(() => null)));

  const list = h("ul", { class: "board-list" });
  main.forEach((b, i) => list.append(boardCard(b, infos[i], archivesOf.get(b.board) || [])));
  // Archives whose board was deleted have nowhere else to show.
  const orphans = [...archivesOf.entries()].filter(([name]) => !main.some((b) => b.board === name));
  for (const [name, archives] of orphans) list.append(boardCard({ board: name, members: null }, null, archives, true));

  view.replaceChildren(
    h("div", { class: "page-head" },
      h("h2", {}, "Boards"),
      h("div", { class: "actions" }, actionButton("Create board", "admin", () => createBoard((b) => navigate(boardHref(b))), "primary"))),
    main.length || orphans.length ? list : h("p", { class: "empty-note" }, "No boards yet. A board is created by its first submission or by “Create board”."));
}

function boardCard(b, info, archives, gone) {
  const cfg = (info && info.config) || {};
  const facts = dl([
    ["Members", fmtInt(info ? info.members : b.members)],
    info && ["Order", `${cfg.order || "desc"}, ${cfg.ranking || "unique"} ranks`],
    info && ["Reset", cfg.reset && cfg.reset !== "never" ? `${cfg.reset}${info.period ? " (period " + info.period + ")" : ""}` : "never"],
    info && info.next_reset && ["Next reset", String(info.next_reset)],
    info && info.heap_bytes !== undefined && ["Memory", fmtBytes(info.heap_bytes)],
    ["Archives", fmtInt(archives.length)],
  ]);
  return h("li", { class: "board-card" },
    h("h3", {}, gone ? h("span", {}, b.board, " (deleted)") : h("a", { href: boardHref(b.board) }, b.board)),
    facts,
    archives.length ? h("details", { class: "archives" },
      h("summary", {}, `${archives.length} archive${archives.length === 1 ? "" : "s"}`),
      h("ul", {}, archives.map((a) => h("li", {},
        h("a", { href: boardHref(a.board) }, a.board), " ", h("span", { class: "muted" }, `${fmtInt(a.members)} members`))))) : null);
}

/** A board's archives, newest last as the server lists them. */
export async function archivesPage(view, { board }) {
  const { boards } = await getJson("/v1/boards");
  const archives = boards.filter((b) => b.archive_of === board);
  view.replaceChildren(
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "#/boards" }, "Boards"), " / ",
      h("a", { href: boardHref(board) }, board), " / Archives"),
    h("h2", {}, `Archives of ${board}`),
    archives.length
      ? h("div", { class: "table-box" }, h("table", { class: "archives-table" },
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Archive"), h("th", { scope: "col", class: "num" }, "Members"))),
        h("tbody", {}, archives.map((a) => h("tr", {},
          h("td", {}, h("a", { href: boardHref(a.board) }, a.board)), h("td", { class: "num" }, fmtInt(a.members)))))))
      : h("p", { class: "empty-note" }, "No archives yet: a reset (by hand or on the board’s schedule) makes one."));
}
