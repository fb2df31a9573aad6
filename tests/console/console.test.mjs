// The web console driven in Debian's Chromium against the real podium
// binary: keys and scopes, every page, the live view and its metrics chart,
// the admin actions' confirmation dialog, a phone-width viewport and the
// keyboard; then the read pages again on the Redis backend when redis-server
// is installed. Screenshots of each page go to PODIUM_SCREENSHOTS.

import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startPodium, startRedis, startDevServer, api, stopAll, onPath } from "./harness.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../..");
const BIN = process.env.PODIUM_BIN || path.join(repo, "target/release/podium");
const CHROMIUM = process.env.PODIUM_CHROMIUM || "/usr/bin/chromium";
const SHOTS = path.resolve(process.env.PODIUM_SCREENSHOTS || path.join(here, "screenshots"));
const CONSOLE_DIR = process.env.PODIUM_CONSOLE_DIR ? path.resolve(process.env.PODIUM_CONSOLE_DIR) : null;
const ADMIN = "admin-key-0123456789abcdef";
const READ = "read-key-0123456789abcdef";
const KEYS = [`${ADMIN}:admin`, `${READ}:read`];

let skip = false;
if (!fs.existsSync(CHROMIUM)) {
  const msg = `no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set PODIUM_CHROMIUM)`;
  if (process.env.PODIUM_TEST_BROWSER === "require") throw new Error(msg + "; PODIUM_TEST_BROWSER=require");
  skip = "browser test skipped: " + msg;
}

const FIRST = ["Mira", "Jonas", "Aiko", "Bruno", "Chen", "Dalia", "Emil", "Farah", "Goran", "Hana"];
const LAST = ["Stone", "Rivers", "Okafor", "Lind", "Moreau"];
/** 250 members: p001 (score 10) … p250 (score 2500); every tenth is named Mira. */
function seedEntries() {
  return Array.from({ length: 250 }, (_, i) => ({
    member: `p${String(i + 1).padStart(3, "0")}`,
    score: (i + 1) * 10,
    name: `${FIRST[i % FIRST.length]} ${LAST[Math.floor(i / FIRST.length) % LAST.length]}`,
    data: { team: ["red", "blue", "green"][i % 3], level: 1 + (i % 40) },
  }));
}

async function seed(call) {
  await call("PUT", "/v1/boards/arena", {});
  await call("POST", "/v1/boards/arena/scores", seedEntries());
  await call("PUT", "/v1/boards/season", { reset: "weekly" });
  await call("POST", "/v1/boards/season/scores", Array.from({ length: 30 }, (_, i) => ({ member: `s${i}`, score: i, name: `Season ${i}` })));
  await call("POST", "/v1/boards/season/reset");
  await call("POST", "/v1/boards/season/scores", [{ member: "late", score: 5 }]);
  await call("PUT", "/v1/boards/relay", { sort: [{ key: "laps", type: "int" }, { key: "time_ms", order: "asc", type: "int" }] });
  await call("POST", "/v1/boards/relay/scores", [
    { member: "r1", scores: { laps: 12, time_ms: 61234 }, name: "Team One" },
    { member: "r2", scores: { laps: 12, time_ms: 60002 }, name: "Team Two" },
    { member: "r3", scores: { laps: 11, time_ms: 58000 }, name: "Team Three" },
  ]);
  await call("PUT", "/v1/boards/weekly", {});
  await call("POST", "/v1/boards/weekly/scores", Array.from({ length: 20 }, (_, i) => ({ member: `w${i}`, score: 100 - i })));
}

async function shot(page, name) {
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, name + ".png") });
}

/** No value printed as JavaScript's placeholders for a missing one. */
async function assertClean(page, where) {
  const text = await page.innerText("main");
  assert.doesNotMatch(text, /\b(null|undefined|NaN|\[object Object\])\b/, `${where} shows a missing value`);
}

async function useKey(page, key, scopeText) {
  await page.fill("#key", key);
  await page.click("#key-form button[type=submit]");
  await page.waitForFunction((t) => document.getElementById("scope").textContent === t, scopeText);
}

const firstRank = (page) => page.locator("table.entries tbody tr").first().locator("td").first().textContent();
const ranks = (page) => page.$$eval("table.entries tbody tr[data-member]", (rows) => rows.map((r) => Number(r.cells[0].textContent.replace(/,/g, ""))));

/** The pages every backend must show: boards, a board, paging, search, a member, the page around it, live updates. */
async function readFlow(page, { origin, call, restart }, label) {
  await page.goto(`http://${origin}/console/#/boards`);
  await page.waitForSelector(".board-card");
  const titles = await page.$$eval(".board-card h3", (hs) => hs.map((x) => x.textContent));
  assert.deepEqual(titles.sort(), ["arena", "relay", "season", "weekly"].filter((b) => label !== "redis" || b !== "weekly").sort(),
    "boards listed, archives not among them");
  const archiveLinks = await page.$$eval(".board-card .archives a", (as) => as.map((a) => a.textContent));
  assert.equal(archiveLinks.length, 1);
  assert.match(archiveLinks[0], /^season@/, "the archive shows under its board");

  await page.click(".board-card h3 a >> text=arena");
  await page.waitForSelector("table.entries tbody tr[data-member]");
  assert.equal(await firstRank(page), "1");
  assert.equal(await page.locator("table.entries tbody tr[data-member]").count(), 25);
  assert.equal(await page.locator("table.entries tbody tr").first().getAttribute("data-member"), "p250");
  await assertClean(page, "board");

  await page.click(".pager a[rel=next]");
  await page.waitForFunction(() => location.hash.includes("page=2"));
  await page.waitForFunction(() => document.querySelector("table.entries tbody tr td")?.textContent === "26");
  await page.fill("#f-page", "5");
  await page.click(".page-jump button");
  await page.waitForFunction(() => document.querySelector("table.entries tbody tr td")?.textContent === "101");

  await page.fill("#f-search", "mira");
  await page.click("form[role=search] button");
  await page.waitForSelector(".result-note");
  const found = await ranks(page);
  assert.equal(found.length, 25, "every Mira found");
  assert.deepEqual(found, [...found].sort((a, b) => a - b), "search results in rank order");
  const expected = await call("GET", "/v1/boards/arena/search?q=mira&limit=100");
  assert.deepEqual(found, expected.entries.map((e) => e.rank));
  await assertClean(page, "search");
  if (label === "embedded") await shot(page, "search");

  const member = await page.locator("table.entries tbody tr[data-member]").nth(2).getAttribute("data-member");
  await page.click(`table.entries tbody tr[data-member="${member}"] td.member a`);
  await page.waitForSelector("pre.data");
  const data = JSON.parse(await page.textContent("pre.data"));
  const truth = await call("GET", `/v1/boards/arena/members/${member}`);
  assert.deepEqual(data, truth.data, "member data shown");
  const pct = await call("GET", `/v1/boards/arena/percentile/${member}`);
  assert.ok((await page.textContent(".facts")).includes(`${pct.percentile.toFixed(2)} %`), "percentile shown");
  await assertClean(page, "member");
  if (label === "embedded") await shot(page, "member");

  await page.click("a >> text=Show on its page");
  await page.waitForSelector("tr.hit");
  await assertClean(page, "around");
  assert.equal(await page.locator("tr.hit").getAttribute("data-member"), member, "the member's row is marked");
  assert.ok((await ranks(page)).includes(truth.rank));

  await page.fill("#f-find", "p100");
  await page.click("form.inline-form:not([role]) button");
  await page.waitForFunction(() => document.querySelector("tr.hit")?.dataset.member === "p100");

  // Members named `.` and `..`, which the browser drops from a URL path (the console names them in the
  // query): their page, their place on the board, and their removal.
  await call("POST", "/v1/boards/dots/scores", [
    { member: ".", score: 3, data: { dots: 1 } }, { member: "..", score: 2, data: { dots: 2 } }, { member: "x", score: 1 }]);
  for (const [m, dots] of [[".", 1], ["..", 2]]) {
    await page.goto(`http://${origin}/console/#/board/dots/member/${encodeURIComponent(m)}`);
    await page.waitForSelector("pre.data");
    assert.deepEqual(JSON.parse(await page.textContent("pre.data")), { dots }, `member ${m} shown`);
    assert.match(await page.textContent(".facts"), new RegExp(`^Rank${dots} of 3`), `rank of ${m}`);
    await page.click("a >> text=Show on its page");
    await page.waitForSelector("tr.hit");
    assert.equal(await page.locator("tr.hit").getAttribute("data-member"), m, `${m}'s row is marked`);
  }
  for (const m of [".", ".."]) {
    await page.goto(`http://${origin}/console/#/board/dots/member/${encodeURIComponent(m)}`);
    await page.waitForSelector("pre.data");
    await page.click("button[data-action=remove-member]");
    await page.click("dialog button.danger");
    await page.waitForFunction(() => location.hash === "#/board/dots");
    await page.waitForSelector(`.message.note >> text=“${m}” removed`);
  }
  assert.deepEqual((await call("GET", "/v1/boards/dots/top")).entries.map((e) => e.member), ["x"], ". and .. removed");
  await call("DELETE", "/v1/boards/dots");

  await page.goto(`http://${origin}/console/#/board/relay`);
  await page.waitForSelector('table.entries tbody tr[data-member="r2"]');
  assert.deepEqual(await page.$$eval("table.entries tbody tr[data-member]", (rows) => rows.map((r) => [r.dataset.member, r.cells[3].textContent])),
    [["r2", "laps 12 · time_ms 60,002"], ["r1", "laps 12 · time_ms 61,234"], ["r3", "laps 11 · time_ms 58,000"]], "each sort key shown");

  await page.goto(`http://${origin}/console/#/board/no-such-board`);
  await page.waitForSelector(".message.error");
  const missing = await call("GET", "/v1/boards/no-such-board").catch((e) => e.body.error.message);
  assert.equal(await page.textContent(".message.error"), missing, "the server's error is shown");

  await liveFlow(page, { origin, call, restart }, label);
}

async function liveFlow(page, { origin, call, restart }, label) {
  await page.goto(`http://${origin}/console/#/board/arena/live?top=10`);
  await page.waitForFunction(() => document.querySelector(".live-status")?.dataset.state === "live");
  await page.waitForFunction(() => document.querySelectorAll(".live-top tbody tr[data-member]").length === 10);
  const box = () => page.evaluate(() => Object.fromEntries([".live-head", ".metrics", ".events", ".live-top table", "header.top"]
    .map((s) => [s, JSON.stringify(document.querySelector(s).getBoundingClientRect())])));
  const before = await box();
  const rocket = `rocket-${label}`;
  await call("POST", "/v1/boards/arena/scores", { member: rocket, score: 99999, name: "Rocket" });
  await page.waitForSelector(`.live-top tbody tr[data-member="${rocket}"]`, { timeout: 10000 });
  assert.equal(await page.locator(".live-top tbody tr").first().getAttribute("data-member"), rocket, "the new leader is first");
  assert.equal(await page.locator(".live-top tbody tr[data-member]").count(), 10, "one left as one entered");
  // Writes spread over a few of the chart's 2 s samples; the layout must not move while they arrive.
  // (Longer on the first backend, so the screenshot's chart has a shape.)
  const writes = label === "embedded" ? 90 : 40;
  for (let i = 0; i < writes; i++) {
    await call("POST", "/v1/boards/arena/scores", { member: `p${100 + (i % 40)}`, score: 3000 + i * (i % 3) });
    await new Promise((r) => setTimeout(r, 60 + 120 * (Math.floor(i / 15) % 3)));
  }
  const metrics = await fetch(`http://${origin}/metrics`, { headers: { Authorization: `Bearer ${ADMIN}` } }).then((r) => r.text());
  if (/^podium_operations_total\{/m.test(metrics)) {
    await page.waitForFunction(() => Number(document.querySelector("[data-stat=rate]").textContent) > 0, null, { timeout: 10000 });
    await page.waitForFunction(() => document.querySelector("[data-stat=p99]").textContent !== "–", null, { timeout: 10000 });
  } else {
    await page.waitForFunction(() => /no operation metrics/.test(document.querySelector(".chart-note").textContent));
  }
  await page.waitForTimeout(300);
  assert.deepEqual(await box(), before, "live updates moved nothing");
  await assertClean(page, "live view");
  if (label === "embedded") await shot(page, "live");

  // A dropped stream comes back by itself: the server restarts and a write made after it arrives.
  if (!restart) return;
  await restart();
  const comet = `comet-${label}`;
  await call("POST", "/v1/boards/arena/scores", { member: comet, score: 88888, name: "Comet" });
  await page.waitForSelector(`.live-top tbody tr[data-member="${comet}"]`, { timeout: 20000 });
  assert.equal(await page.locator(".live-top tbody tr").nth(1).getAttribute("data-member"), comet);
  assert.deepEqual(await box(), before, "reconnecting moved nothing");
}

describe("web console", { skip, timeout: 300000 }, () => {
  let browser;
  const tmp = [];
  const mkTmp = () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), "podium-console-"));
    tmp.push(d);
    return d;
  };
  let srv;
  let origin;
  let call;
  let pageErrors = [];

  const newPage = async (viewport = { width: 1280, height: 800 }) => {
    const ctx = await browser.newContext({ viewport });
    const page = await ctx.newPage();
    page.setDefaultTimeout(10000);
    // CSP violations and script errors surface here. Failed requests do too: the refusals the test
    // asks for and the reconnects while the server restarts, which are checked on the page instead.
    page.on("console", (m) => { if (m.type() === "error" && !/^Failed to load resource/.test(m.text())) pageErrors.push(m.text()); });
    page.on("pageerror", (e) => pageErrors.push(String(e)));
    return page;
  };

  async function serve(backend) {
    assert.ok(fs.existsSync(BIN), `no podium binary at ${BIN} (cargo build --release, or set PODIUM_BIN)`);
    const dataDir = mkTmp();
    let server = await startPodium(BIN, { dataDir, keys: KEYS, backend });
    const { addr } = server;
    const c = api(addr, ADMIN);
    await seed(c);
    // Killed, not stopped: podium's orderly shutdown waits for open event streams to end, and
    // the live view's stream is what this restart is meant to cut.
    const restart = async () => {
      await server.stop("SIGKILL");
      server = await startPodium(BIN, { dataDir, keys: KEYS, backend, port: Number(addr.split(":")[1]) });
    };
    if (!CONSOLE_DIR) {
      const res = await fetch(`http://${addr}/console/app.js`);
      assert.equal(res.status, 200, `${BIN} serves no console app.js: rebuild it with crates/server/console, or set PODIUM_CONSOLE_DIR`);
      assert.match(res.headers.get("content-security-policy") || "", /script-src 'self'/, "the console is served with its CSP");
    }
    return { origin: CONSOLE_DIR ? await startDevServer(CONSOLE_DIR, addr) : addr, call: c, restart };
  }

  before(async () => {
    const { chromium } = await import("playwright-core");
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    srv = await serve();
    ({ origin, call } = srv);
  });

  after(async () => {
    await browser?.close().catch(() => {});
    await stopAll();
    for (const d of tmp) fs.rmSync(d, { recursive: true, force: true });
  });

  it("asks for a key, refuses a wrong one, and accepts the admin key", async () => {
    const page = await newPage();
    await page.goto(`http://${origin}/console/`);
    await page.waitForSelector("text=API key needed");
    await useKey(page, "not-a-key-0123456789", "key refused");
    assert.ok(await page.isVisible(".message.error"), "the server's 401 message is shown");
    await useKey(page, ADMIN, "scope: admin");
    await page.waitForSelector(".board-card");
    await assertClean(page, "boards");
    await shot(page, "boards");
    await page.context().close();
  });

  it("shows boards, pages, search, a member and the live view (admin key)", async () => {
    const page = await newPage();
    await page.goto(`http://${origin}/console/`);
    await useKey(page, ADMIN, "scope: admin");
    await page.goto(`http://${origin}/console/#/board/arena?page=2`);
    await page.waitForFunction(() => document.querySelector("table.entries tbody tr td")?.textContent === "26");
    await shot(page, "board");
    await readFlow(page, srv, "embedded");
    await page.context().close();
  });

  it("resets a board through the confirmation dialog and lists its archive", async () => {
    const page = await newPage();
    await page.goto(`http://${origin}/console/#/board/weekly/member/w19`);
    await useKey(page, ADMIN, "scope: admin");
    await page.click("button[data-action=remove-member]");
    await page.click("dialog button.danger");
    await page.waitForFunction(() => location.hash === "#/board/weekly");
    await page.waitForSelector(".message.note >> text=removed");
    assert.equal((await call("GET", "/v1/boards/weekly")).members, 19, "the member was removed");
    await page.waitForSelector("table.entries tbody tr[data-member]");
    const reset = page.locator("button[data-action=reset]");
    await reset.click();
    await page.waitForSelector("dialog[open]");
    await page.keyboard.press("Escape");
    await page.waitForFunction(() => !document.querySelector("dialog").open);
    assert.equal(await page.evaluate(() => document.activeElement.dataset.action), "reset", "focus returns to the button");
    assert.equal((await call("GET", "/v1/boards/weekly")).members, 19, "Escape changed nothing");

    await reset.click();
    const confirm = page.locator("dialog button.danger");
    assert.ok(await confirm.isDisabled(), "confirm waits for the board's name");
    await page.fill("#dlg-confirm-name", "weekly");
    await confirm.click();
    // The note of the removal above may still be up: wait for the reset's.
    await page.waitForSelector(".message.note >> text=archive");
    assert.match(await page.textContent(".message"), /archive “weekly@/);
    assert.equal((await call("GET", "/v1/boards/weekly")).members, 0);

    await page.click("a >> text=Archives");
    await page.waitForSelector(".archives-table a");
    const archive = await page.textContent(".archives-table a");
    assert.match(archive, /^weekly@/);
    await assertClean(page, "archives");
    await shot(page, "archives");
    await page.click(".archives-table a");
    await page.waitForSelector(".badge >> text=read-only archive");
    assert.equal(await page.locator("table.entries tbody tr[data-member]").count(), 19);
    assert.equal(await page.locator("button[data-action=reset]").count(), 0, "an archive cannot be reset");

    await page.goto(`http://${origin}/console/#/boards`);
    await page.click("button[data-action=create-board]");
    await page.fill("#dlg-board", "sprint");
    await page.fill("#dlg-config", JSON.stringify({ order: "asc", ranking: "competition" }));
    await page.focus("#dlg-board");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => location.hash === "#/board/sprint");
    await page.waitForSelector(".facts >> text=asc, competition");

    await page.click("button[data-action=reconfigure]");
    assert.equal(JSON.parse(await page.inputValue("#dlg-config")).order, "asc", "the current config to edit");
    // A field left as shown is kept; a change of order is a re-rank, asked
    // for before it is done.
    await page.fill("#dlg-config", JSON.stringify({ ...JSON.parse(await page.inputValue("#dlg-config")), order: "desc", ranking: "dense" }));
    await page.click("dialog button.primary");
    await page.waitForSelector("dialog >> text=Re-rank");
    await page.click("dialog button.danger");
    await page.waitForSelector(".facts >> text=desc, dense");
    await page.click("button[data-action=reconfigure]");
    const shown = JSON.parse(await page.inputValue("#dlg-config"));
    await page.fill("#dlg-config", JSON.stringify({ ...shown, keep_archives: 8 }));
    await page.click("dialog button.primary");
    await page.waitForSelector(".message >> text=reconfigured");
    const kept = await call("GET", "/v1/boards/sprint");
    assert.deepEqual([kept.config.order, kept.config.ranking, kept.config.keep_archives], ["desc", "dense", 8]);
    await page.click("button[data-action=reconfigure]");
    await page.fill("#dlg-config", "{ not json");
    await page.click("dialog button.primary");
    await page.waitForSelector(".message.error");

    await page.click("button[data-action=delete]");
    await page.fill("#dlg-confirm-name", "sprint");
    await page.click("dialog button.danger");
    await page.waitForFunction(() => location.hash === "#/boards");
    await page.waitForSelector(".board-card");
    assert.ok(!(await page.$$eval(".board-card h3", (hs) => hs.map((x) => x.textContent))).includes("sprint"), "deleted");
    await page.context().close();
  });

  it("with a read key: admin actions disabled, and a forced one shows the refusal", async () => {
    const page = await newPage();
    await page.goto(`http://${origin}/console/#/boards`);
    await useKey(page, READ, "scope: read");
    await page.waitForSelector(".board-card");
    assert.ok(await page.locator("button[data-action=create-board]").isDisabled());
    await page.goto(`http://${origin}/console/#/board/arena/member/p010`);
    await page.waitForSelector("pre.data");
    assert.ok(await page.locator("button[data-action=remove-member]").isDisabled(), "removal needs write");
    await page.goto(`http://${origin}/console/#/board/arena`);
    await page.waitForSelector("table.entries tbody tr[data-member]");
    for (const a of ["reconfigure", "reset", "delete"]) assert.ok(await page.locator(`button[data-action=${a}]`).isDisabled(), a);

    await page.evaluate(() => document.querySelector("button[data-action=reset]").removeAttribute("disabled"));
    await page.click("button[data-action=reset]");
    await page.fill("#dlg-confirm-name", "arena");
    await page.click("dialog button.danger");
    await page.waitForSelector(".message.error");
    const refusal = await api(origin, READ)("POST", "/v1/boards/arena/reset").catch((e) => e.body.error.message);
    assert.equal(await page.textContent(".message.error"), refusal, "the server's message is shown");
    assert.ok((await call("GET", "/v1/boards/arena")).members > 200, "nothing was reset");
    await page.context().close();
  });

  it("fits a 375 px screen on every page", async () => {
    const page = await newPage({ width: 375, height: 740 });
    await page.goto(`http://${origin}/console/`);
    await useKey(page, ADMIN, "scope: admin");
    for (const [hash, ready] of [["#/boards", ".board-card"], ["#/board/arena", "table.entries tr[data-member]"],
      ["#/board/arena?q=mira", ".result-note"], ["#/board/arena/member/p250", "pre.data"],
      ["#/board/season/archives", ".archives-table"], ["#/board/arena/live", ".live-top tr[data-member]"]]) {
      await page.goto(`http://${origin}/console/${hash}`);
      await page.waitForSelector(ready);
      const { scroll, width } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, width: window.innerWidth }));
      assert.ok(scroll <= width, `${hash}: page is ${scroll} px wide in a ${width} px window`);
      if (hash === "#/board/arena") await shot(page, "phone-board");
    }
    await page.context().close();
  });

  it("is usable from the keyboard", async () => {
    const page = await newPage();
    await page.goto(`http://${origin}/console/#/boards`);
    await useKey(page, ADMIN, "scope: admin");
    await page.waitForSelector(".board-card");
    await page.evaluate(() => document.activeElement?.blur());
    const reached = [];
    for (let i = 0; i < 14; i++) {
      await page.keyboard.press("Tab");
      reached.push(await page.evaluate(() => {
        const el = document.activeElement;
        return el.id || el.dataset.action || el.textContent.trim();
      }));
    }
    for (const want of ["key", "create-board", "arena"]) assert.ok(reached.includes(want), `Tab reaches ${want}: ${reached.join(", ")}`);
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
    assert.notEqual(outline, "none", "the focused element shows it");
    // Enter on a focused board link opens it.
    while (await page.evaluate(() => document.activeElement.textContent.trim()) !== "arena") await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => location.hash === "#/board/arena");
    await page.context().close();
  });

  it("needs no key on a server without keys", async () => {
    const { addr } = await startPodium(BIN, { dataDir: mkTmp(), keys: [] });
    const open = CONSOLE_DIR ? await startDevServer(CONSOLE_DIR, addr) : addr;
    const page = await newPage();
    await page.goto(`http://${open}/console/`);
    await page.waitForFunction(() => document.getElementById("scope").textContent === "no keys on this server");
    await page.waitForSelector("text=No boards yet");
    assert.ok(await page.locator("button[data-action=create-board]").isEnabled(), "everything is allowed");
    await page.context().close();
  });

  it("shows no script or content-security-policy errors", () => {
    assert.deepEqual(pageErrors, []);
  });

  it("shows the same pages on the Redis backend", { skip: !onPath("redis-server") && "redis-server is not on PATH" }, async () => {
    const redis = await startRedis(mkTmp());
    const r = await serve(redis.url);
    await r.call("DELETE", "/v1/boards/weekly");
    const page = await newPage();
    await page.goto(`http://${r.origin}/console/`);
    await useKey(page, ADMIN, "scope: admin");
    await readFlow(page, { ...r, restart: null }, "redis");
    await page.context().close();
    assert.deepEqual(pageErrors, []);
  });
});

// The chart's arithmetic, without a browser: the module imports nothing that needs one until it draws.
describe("metrics arithmetic", () => {
  it("parses Prometheus text, sums the write operations and interpolates p99", async () => {
    const { parsePrometheus, writeTotals, quantile } = await import("../../crates/server/console/metrics.js");
    const text = [
      "# HELP podium_operations_total Operations",
      "# TYPE podium_operations_total counter",
      'podium_operations_total{op="submit",protocol="http",status="ok"} 90',
      'podium_operations_total{op="submit",protocol="resp",status="error"} 10',
      'podium_operations_total{op="top",protocol="http",status="ok"} 500',
      'podium_operation_seconds_bucket{op="submit",protocol="http",le="0.001"} 50',
      'podium_operation_seconds_bucket{op="submit",protocol="http",le="0.01"} 90',
      'podium_operation_seconds_bucket{op="submit",protocol="http",le="+Inf"} 100',
      'podium_operation_seconds_bucket{op="top",protocol="http",le="+Inf"} 500',
      'podium_board_members{board="a \\"quoted\\" name"} 3',
    ].join("\n");
    const samples = parsePrometheus(text);
    assert.equal(samples.length, 8, "comments skipped");
    assert.equal(samples[7].labels.board, 'a "quoted" name');
    const t = writeTotals(samples);
    assert.equal(t.ops, 100, "reads are not writes; errors are");
    assert.deepEqual([...t.buckets.entries()], [[0.001, 50], [0.01, 90], [Infinity, 100]]);
    assert.equal(quantile(0.5, t.buckets), 0.001);
    assert.ok(Math.abs(quantile(0.7, t.buckets) - 0.0055) < 1e-12, "linear inside the bucket");
    assert.equal(quantile(0.99, t.buckets), 0.01, "the open bucket answers its lower bound");
    assert.equal(quantile(0.99, new Map([[0.1, 0], [Infinity, 0]])), null, "no writes, no latency");
    assert.equal(writeTotals(parsePrometheus("podium_connections 1\n")), null);
  });
});
