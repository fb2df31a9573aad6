// The live view: a board's top places kept current by its events stream,
// beside the server's write rate and latency. Every part has a fixed size so
// an update changes text, never the layout.

import { followEvents, getJson, boardPath } from "./api.js";
import { h, boardHref, entryRow, entriesTable, fmtInt } from "./ui.js";
import { metricsPanel } from "./metrics.js";

const TOPS = [5, 10, 25];
const LOG_LINES = 8;

export async function livePage(view, { board, params, signal }) {
  const top = TOPS.includes(+params.get("top")) ? +params.get("top") : 10;
  await getJson(boardPath(board)); // a missing board is said at once, not as a retrying stream

  const status = h("span", { class: "live-status", role: "status" }, "connecting");
  const table = entriesTable(board, [], { rows: top, caption: `Top ${top}, live` });
  const tbody = table.querySelector("tbody");
  const log = h("ol", { class: "event-log", "aria-label": "Latest events" });
  for (let i = 0; i < LOG_LINES; i++) log.append(h("li", {}, "\u00a0"));

  const picker = h("nav", { class: "top-picker", "aria-label": "Places shown" }, "Show top ",
    TOPS.map((n) => (n === top ? h("strong", { "aria-current": "true" }, String(n))
      : h("a", { href: boardHref(board, "/live", "top=" + n) }, String(n)))));

  view.replaceChildren(
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "#/boards" }, "Boards"), " / ",
      h("a", { href: boardHref(board) }, board), " / Live"),
    h("header", { class: "live-head" }, h("h2", {}, `${board}, live`), status, picker),
    h("div", { class: "live-grid" },
      h("section", { class: "live-top", "aria-label": "Top places" }, table),
      h("div", { class: "live-side" }, metricsPanel(signal),
        h("section", { class: "events", "aria-labelledby": "events-title" }, h("h3", { id: "events-title" }, "Events"), log))));

  // The top places by member; events of one write arrive together, leaves first.
  let entries = new Map();
  const render = (changed) => {
    const rows = [...entries.values()].sort((a, b) => a.rank - b.rank || (a.member < b.member ? -1 : 1)).slice(0, top);
    const out = rows.map((e) => {
      const tr = entryRow(board, e);
      if (changed.has(e.member)) tr.classList.add("changed");
      return tr;
    });
    for (let i = rows.length; i < top; i++) out.push(h("tr", { class: "empty" }, h("td", { colspan: 4 }, "\u00a0")));
    tbody.replaceChildren(...out);
  };
  const note = (text) => {
    log.prepend(h("li", {}, text));
    while (log.children.length > LOG_LINES) log.lastElementChild.remove();
  };

  followEvents(board, { top, snapshot: "true" }, {
    signal,
    onStatus: (s, err) => { status.textContent = s === "error" ? "disconnected: " + err.message : s; status.dataset.state = s; },
    onEvent: (ev) => {
      const changed = new Set();
      switch (ev.type) {
        case "snapshot":
          entries = new Map((ev.top || []).map((e) => [e.member, e]));
          note(`snapshot: ${ev.exists === false ? "no board yet" : fmtInt(ev.size) + " members"}`);
          break;
        case "enter":
        case "move":
          entries.set(ev.member, { member: ev.member, rank: ev.rank, score: ev.score, scores: ev.scores, name: ev.name });
          changed.add(ev.member);
          note(ev.type === "enter" ? `${ev.name || ev.member} entered at ${ev.rank}`
            : `${ev.name || ev.member} ${ev.previous_rank} → ${ev.rank}`);
          break;
        case "leave":
          entries.delete(ev.member);
          note(`${ev.member} left the top ${top}`);
          break;
        case "reset":
          entries.clear();
          note(`reset; archived as ${ev.archive}`);
          break;
        case "deleted":
          entries.clear();
          note("board deleted");
          break;
        case "lagged":
          note("fell behind; resuming");
          break;
        default:
          note(ev.type);
      }
      render(changed);
    },
  });
}
