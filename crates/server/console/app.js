// The console's shell: the API key field, the key's scope, and hash routing
// to the pages. Each page gets an AbortSignal that ends its streams and
// timers when the user leaves it.

import { getKey, setKey, whoAmI, ApiError } from "./api.js";
import { state } from "./state.js";
import { h, showError, clearMessage } from "./ui.js";
import { boardsPage, archivesPage } from "./boards.js";
import { boardPage, memberPage } from "./board.js";
import { livePage } from "./live.js";

const view = document.getElementById("view");
const keyForm = document.getElementById("key-form");
const keyInput = document.getElementById("key");
const scopeEl = document.getElementById("scope");
let pageAbort = null;

function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function parseRoute() {
  const raw = location.hash.replace(/^#/, "") || "/boards";
  const [path, query = ""] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { parts, params: new URLSearchParams(query) };
}

async function route() {
  if (pageAbort) pageAbort.abort();
  pageAbort = new AbortController();
  const signal = pageAbort.signal;
  const { parts, params } = parseRoute();
  clearMessage();
  if (!state.scope) {
    view.replaceChildren(h("section", { class: "locked" }, h("h2", {}, "API key needed"),
      h("p", {}, "This server has API keys. Enter a key above to use the console; it is kept for this tab only.")));
    return;
  }
  const ctx = { params, navigate, signal, refresh: route };
  view.setAttribute("aria-busy", "true");
  try {
    if (parts[0] === "board" && parts[1]) {
      const board = parts[1];
      if (parts[2] === "member" && parts[3]) await memberPage(view, { ...ctx, board, member: parts[3] });
      else if (parts[2] === "archives") await archivesPage(view, { ...ctx, board });
      else if (parts[2] === "live") await livePage(view, { ...ctx, board });
      else await boardPage(view, { ...ctx, board });
      document.title = `${board} · podium console`;
    } else {
      await boardsPage(view, ctx);
      document.title = "Boards · podium console";
    }
  } catch (e) {
    if (signal.aborted) return;
    showError(e);
    view.replaceChildren(h("p", { class: "empty-note" }, h("a", { href: "#/boards" }, "Back to the boards")));
  } finally {
    view.removeAttribute("aria-busy");
  }
  // Focus follows the page change so keyboard and screen-reader users start at its heading.
  const heading = view.querySelector("h2");
  if (heading && document.activeElement === document.body) {
    heading.tabIndex = -1;
    heading.focus({ preventScroll: true });
  }
}

async function checkKey() {
  try {
    const r = await whoAmI();
    state.keys = !!r.keys;
    state.scope = r.scope;
    scopeEl.textContent = r.keys ? `scope: ${r.scope}` : "no keys on this server";
    scopeEl.dataset.scope = r.scope;
  } catch (e) {
    state.scope = null;
    state.keys = true;
    scopeEl.textContent = getKey() ? "key refused" : "no key";
    scopeEl.dataset.scope = "none";
    if (!(e instanceof ApiError && e.status === 401 && !getKey())) {
      await route();
      showError(e);
      return;
    }
  }
  document.body.dataset.scope = state.scope || "none";
  await route();
}

keyForm.addEventListener("submit", (e) => {
  e.preventDefault();
  setKey(keyInput.value.trim());
  checkKey();
});
document.getElementById("forget-key").addEventListener("click", () => {
  setKey("");
  keyInput.value = "";
  checkKey();
});
window.addEventListener("hashchange", route);
// The address's hash is the router's, so the skip link moves focus instead of following its href.
document.querySelector(".skip").addEventListener("click", (e) => {
  e.preventDefault();
  view.focus();
});

keyInput.value = getKey();
checkKey();
