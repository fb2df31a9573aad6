// The console's only door to the server: same-origin requests with the tab's
// API key, podium's error bodies turned into readable errors, and the live
// events stream read over fetch (EventSource cannot send the Authorization
// header).

const KEY_STORAGE = "podium.key";

export function getKey() {
  return sessionStorage.getItem(KEY_STORAGE) || "";
}

export function setKey(key) {
  if (key) sessionStorage.setItem(KEY_STORAGE, key);
  else sessionStorage.removeItem(KEY_STORAGE);
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function headers(extra = {}) {
  const h = { ...extra };
  const key = getKey();
  if (key) h.Authorization = "Bearer " + key;
  return h;
}

async function errorOf(res) {
  const text = await res.text().catch(() => "");
  try {
    const body = JSON.parse(text);
    if (body && body.error) return new ApiError(res.status, body.error.code, body.error.message || body.error.code);
  } catch {
    // Not podium's JSON (a proxy's page): its text is all there is to show.
  }
  return new ApiError(res.status, "http_" + res.status, text.trim() || `${res.status} ${res.statusText}`);
}

export async function request(method, path, { query, json, signal } = {}) {
  let url = path;
  if (query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
    const s = q.toString();
    if (s) url += (url.includes("?") ? "&" : "?") + s;
  }
  const init = { method, headers: headers(json !== undefined ? { "Content-Type": "application/json" } : {}), signal };
  if (json !== undefined) init.body = JSON.stringify(json);
  let res;
  try {
    res = await fetch(url, init);
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError(0, "transport", "The server could not be reached: " + e.message);
  }
  if (!res.ok) throw await errorOf(res);
  return res;
}

export async function getJson(path, query) {
  return (await request("GET", path, { query })).json();
}

export async function send(method, path, json) {
  const res = await request(method, path, { json });
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

export async function getText(path) {
  return (await request("GET", path)).text();
}

export const enc = encodeURIComponent;
export const boardPath = (board, ...rest) => ["/v1/boards", enc(board), ...rest.map(enc)].join("/");
// A member's route (members, percentile, around): the member as a path segment, or in the query for
// "." and "..", which the browser drops from a path as dot segments, percent-encoded too (the server
// answers both forms alike; the path keeps other URLs readable).
export const memberPath = (board, route, member) => member === "." || member === ".."
  ? boardPath(board, route) + "?member=" + enc(member)
  : boardPath(board, route, member);

// The key's scope decides what the console offers; the server still checks
// every call, so this only spares the user buttons that would be refused.
export async function whoAmI() {
  return getJson("/v1/key");
}

export const SCOPES = ["read", "write", "admin"];
export const allows = (scope, need) => SCOPES.indexOf(scope) >= SCOPES.indexOf(need);

/**
 * Reads a board's live events until `signal` aborts, calling `onEvent` with
 * each parsed event. Reconnects after a drop with the last id seen, so the
 * events in between follow with no gap; a `lagged` event ends the stream by
 * the server's choice, and the reconnect resumes from its `resume` id.
 */
export async function followEvents(board, query, { signal, onEvent, onStatus }) {
  let lastId = null;
  let backoff = 500;
  while (!signal.aborted) {
    try {
      const q = { ...query };
      if (lastId) {
        q.since = lastId;
        delete q.snapshot;
      }
      const res = await request("GET", boardPath(board, "events"), { query: q, signal });
      onStatus("live");
      backoff = 500;
      for await (const ev of sseEvents(res.body, signal)) {
        if (ev.id) lastId = ev.id;
        let data;
        try {
          data = JSON.parse(ev.data);
        } catch {
          continue;
        }
        if (data.type === "lagged" && data.resume) lastId = data.resume;
        onEvent(data);
      }
      if (signal.aborted) return;
      onStatus("reconnecting");
    } catch (e) {
      if (signal.aborted) return;
      onStatus("error", e);
      // A refusal (bad key, missing board) will not fix itself by retrying fast.
      if (e instanceof ApiError && e.status >= 400 && e.status < 500) backoff = Math.max(backoff, 5000);
    }
    await sleep(backoff, signal);
    backoff = Math.min(backoff * 2, 10000);
  }
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
  });
}

async function* sseEvents(body, signal) {
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  let ev = { data: [] };
  const abort = () => reader.cancel().catch(() => {});
  signal.addEventListener("abort", abort, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        let line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.endsWith("\r")) line = line.slice(0, -1);
        if (line === "") {
          if (ev.data.length) yield { id: ev.id, event: ev.event, data: ev.data.join("\n") };
          ev = { data: [] };
          continue;
        }
        if (line.startsWith(":")) continue;
        const c = line.indexOf(":");
        const field = c < 0 ? line : line.slice(0, c);
        let val = c < 0 ? "" : line.slice(c + 1);
        if (val.startsWith(" ")) val = val.slice(1);
        if (field === "data") ev.data.push(val);
        else if (field === "id") ev.id = val;
        else if (field === "event") ev.event = val;
      }
    }
  } finally {
    signal.removeEventListener("abort", abort);
    reader.cancel().catch(() => {});
  }
}
