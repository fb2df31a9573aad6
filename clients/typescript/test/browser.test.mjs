// The built client in a real browser (headless Chromium): a page served
// beside a real `podium serve` (a small Node server gives the page, the
// built modules, and passes /v1/… through to podium, so the page and the
// API share an origin) runs the five everyday tasks, members named `.` and
// `..`, a bigint sort key, an error, an import and a live event, and posts
// what it saw back to the small server once it is done (the page says when
// it has finished; a dump of the DOM taken on a loaded machine caught it
// half way). Skipped without Chromium unless PODIUM_TEST_BROWSER=require.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, request } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { Server } from "../scripts/server.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const DIST = join(HERE, "..", "dist");

function chromium() {
  for (const p of [process.env.CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser"]) {
    if (p && existsSync(p)) return p;
  }
  return null;
}

const PAGE = `<!doctype html><meta charset="utf-8"><title>running</title>
<script type="module">
import { PodiumClient, PodiumError } from "/dist/index.js";
const seen = {};
try {
  const c = new PodiumClient({ baseUrl: location.origin });
  const b = "browser-" + Math.random().toString(36).slice(2, 10);
  await c.putBoard(b, { reset: "weekly" });
  for (let i = 1; i <= 40; i++) await c.submit(b, "p" + i, i * 10, { name: "Player " + i });
  seen.page2 = (await c.top(b, { page: 2, pageSize: 10 })).entries.map((e) => e.member);
  seen.around = (await c.around(b, "p20", { pageSize: 5 })).entries.map((e) => e.member);
  seen.search = (await c.search(b, "Player 33")).entries.map((e) => e.member);
  // Ids a browser's URL parser drops from a path: the client names them in the query.
  const d = b + "-dots";
  await c.submitMany(d, [{ member: ".", score: 2 }, { member: "..", score: 1 }]);
  seen.dots = [];
  for (const m of [".", ".."]) {
    await c.setData(d, m, { m });
    const e = await c.entry(d, m);
    seen.dots.push([e.member, e.rank, e.data.m, (await c.rank(d, m)).rank,
      (await c.around(d, m)).entries.length, await c.removeMember(d, m)]);
  }
  try { await c.rank(b, "nobody"); seen.error = "none"; } catch (e) { seen.error = e instanceof PodiumError ? e.code : String(e); }
  const k = b + "-int";
  await c.putBoard(k, { sort: [{ key: "pts", type: "int" }] });
  await c.submit(k, "big", undefined, { scores: { pts: 9007199254740993n } });
  const big = (await c.entry(k, "big")).scores.pts;
  seen.bigint = typeof big + ":" + String(big);
  const imp = await c.importData(b + "-imp", '{"member":"x","score":1}\\n{"member":"y","score":2}\\n');
  seen.imported = imp.imported;
  try {
    seen.importedRecords = (await c.importRecords(b + "-rec", [{ member: "r1", score: 1 }, { member: "r2", score: 2 }])).imported;
  } catch (e) { seen.importedRecords = String(e); }
  const live = c.events(b, { top: 3, snapshot: true });
  const it = live[Symbol.asyncIterator]();
  seen.first = (await it.next()).value.type;
  await c.submit(b, "p1", 10000);
  // The place p1 takes: the third best leaves, then p1 enters first.
  seen.next = [];
  for (;;) {
    const ev = (await it.next()).value;
    seen.next.push([ev.type, ev.member, ev.rank ?? ev.previous_rank]);
    if (ev.type === "enter") break;
  }
  live.close();
  document.title = "done";
} catch (e) {
  seen.failure = String(e && e.stack || e);
  document.title = "failed";
}
await fetch("/result", {
  method: "POST",
  body: JSON.stringify(seen, (_, v) => typeof v === "bigint" ? String(v) : v),
});
</script>`;

let podium;
let web;
let origin;
// What the page posts to /result, once.
let posted;
const result = new Promise((resolve) => { posted = resolve; });

before(async () => {
  if (!chromium()) return;
  podium = await new Server().start();
  const api = new URL(podium.url);
  web = createServer((req, res) => {
    if (req.url === "/") {
      res.writeHead(200, { "content-type": "text/html" }).end(PAGE);
      return;
    }
    if (req.url === "/result" && req.method === "POST") {
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (d) => { body += d; });
      req.on("end", () => {
        res.writeHead(204).end();
        posted(body);
      });
      return;
    }
    if (req.url.startsWith("/dist/")) {
      const file = normalize(join(DIST, req.url.slice("/dist/".length).split("?")[0]));
      if (!file.startsWith(DIST) || !existsSync(file)) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { "content-type": "text/javascript" }).end(readFileSync(file));
      return;
    }
    // Everything else is podium's: passed through as it streams.
    const up = request({ host: api.hostname, port: api.port, path: req.url, method: req.method, headers: req.headers },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
    up.on("error", () => res.destroy());
    req.pipe(up);
  });
  await new Promise((resolve) => web.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${web.address().port}`;
});

after(async () => {
  web?.close();
  web?.closeAllConnections?.();
  await podium?.stop();
});

test("the client runs in a real browser (headless Chromium)", async (t) => {
  const exe = chromium();
  if (!exe) {
    if (process.env.PODIUM_TEST_BROWSER === "require") assert.fail("chromium not found (apt-get install chromium)");
    t.skip("chromium not found");
    return;
  }
  // The browser stays open (a debugging port keeps a headless one
  // running) until the page has posted what it saw.
  let stderr = "";
  const profile = mkdtempSync(join(tmpdir(), "podium-chromium-"));
  const browser = spawn(exe, [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
    // Nothing of its own on the network (this machine's is closed).
    "--disable-quic", "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--remote-debugging-port=0", "--user-data-dir=" + profile, origin + "/",
  ], { stdio: ["ignore", "ignore", "pipe"] });
  browser.stderr.on("data", (d) => { stderr = (stderr + d).slice(-4000); });
  const exited = new Promise((resolve) => browser.on("exit", (code) => resolve(code)));
  let timer;
  let body;
  try {
    body = await new Promise((resolve, reject) => {
      result.then(resolve);
      exited.then((code) => reject(new Error(`chromium exited (${code}) before the page posted its result: ${stderr}`)));
      timer = setTimeout(() => reject(new Error(`no result from the page within 120 s: ${stderr}`)), 120_000);
    });
  } finally {
    clearTimeout(timer);
    browser.kill("SIGKILL");
    await exited;
    rmSync(profile, { recursive: true, force: true });
  }
  const seen = JSON.parse(body);
  assert.equal(seen.failure, undefined, seen.failure);
  assert.deepEqual(seen.page2, ["p30", "p29", "p28", "p27", "p26", "p25", "p24", "p23", "p22", "p21"]);
  assert.deepEqual(seen.around, ["p22", "p21", "p20", "p19", "p18"]);
  assert.deepEqual(seen.search, ["p33"]);
  assert.deepEqual(seen.dots, [[".", 1, ".", 1, 2, 1], ["..", 1, "..", 1, 1, 1]]);
  assert.equal(seen.error, "member_not_found");
  assert.equal(seen.bigint, "bigint:9007199254740993");
  assert.equal(seen.imported, 2);
  assert.equal(seen.importedRecords, 2);
  assert.equal(seen.first, "snapshot");
  assert.deepEqual(seen.next, [["leave", "p38", 3], ["enter", "p1", 1]]);
});
