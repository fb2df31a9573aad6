// Every method of PodiumClient against a real `podium serve`.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, test } from "node:test";
import { PodiumClient, PodiumError, exclusive, isSubmitFailure } from "../dist/index.js";
import { Server } from "../scripts/server.mjs";

let server;
let c;
const newBoard = () => "t-" + randomUUID().slice(0, 12);
const members = (r) => r.entries.map((e) => e.member);

async function rejects(p, code, status) {
  const err = await p.then(() => null, (e) => e);
  assert.ok(err instanceof PodiumError, `expected a PodiumError, got ${err}`);
  assert.equal(err.code, code);
  if (status !== undefined) assert.equal(err.status, status);
  return err;
}

before(async () => {
  server = await new Server().start();
  c = new PodiumClient({ baseUrl: server.url });
});
after(async () => { await server?.stop(); });

test("server routes", async () => {
  assert.equal((await c.healthz()).status, "ok");
  assert.ok("/v1/boards/{board}/top" in (await c.openapi()).paths);
  assert.match(await c.metrics(), /podium_boards/);
});

test("readiness and a backup stream that ends in its manifest", async () => {
  assert.deepEqual(await c.readyz(), { status: "ready" });
  await c.submit("backup-board", "ann", 5);
  if ((await c.healthz()).backend === "redis") {
    // The data is Redis's: the node has nothing to copy, and says so.
    await assert.rejects(c.backup().next(), (e) => e.code === "unsupported" && e.status === 501);
    return;
  }
  const chunks = [];
  for await (const chunk of c.backup()) chunks.push(Buffer.from(chunk));
  const tar = Buffer.concat(chunks);
  // ustar: 512-byte headers, the name first; the manifest is the last entry.
  const text = tar.toString("latin1");
  const at = text.lastIndexOf("MANIFEST.json");
  assert.ok(at > 0 && at % 512 === 0, "the manifest's header starts a block");
  const manifest = JSON.parse(text.slice(at + 512, text.indexOf("\n}\n", at) + 2));
  assert.equal(manifest.format, "podium-backup");
  assert.ok(manifest.files.length >= 1);
});

test("boards", async () => {
  const board = newBoard();
  const info = await c.putBoard(board, { order: "asc", ranking: "dense", search_fields: ["name"] });
  assert.equal(info.created, true);
  assert.equal(info.config.order, "asc");
  assert.equal(info.config.ranking, "dense");
  await rejects(c.putBoard(board, { order: "asc", ranking: "competition" }), "confirm_rerank_required", 409);
  const again = await c.putBoard(board, { order: "asc", ranking: "competition" }, { confirmRerank: true });
  assert.equal(again.created, false);
  const patched = await c.patchBoard(board, { keep_archives: 8 });
  assert.equal(patched.config.keep_archives, 8);
  assert.equal(patched.config.ranking, "competition");
  assert.equal(patched.config.order, "asc");
  assert.equal((await c.patchBoard(board, { keep_archives: null })).config.keep_archives, null);
  await rejects(c.patchBoard(board, { order: "desc" }), "confirm_rerank_required", 409);
  assert.equal((await c.patchBoard(board, { order: "desc" }, { confirmRerank: true })).config.order, "desc");
  await assert.rejects(c.patchBoard(board, {}), TypeError);
  const got = await c.boardInfo(board);
  assert.equal(got.board, board);
  assert.equal(got.members, 0);
  assert.equal(got.read_only, false);
  assert.equal(got.config.ranking, "competition");
  assert.ok((await c.boards()).some((b) => b.board === board));
  assert.equal((await c.resortStatus(board)).running, false);
  assert.equal(await c.deleteBoard(board), true);
  await rejects(c.boardInfo(board), "board_not_found", 404);
});

test("submit and reads", async () => {
  const board = newBoard();
  let r = await c.submit(board, "ann", 10, { name: "Ann Lee", data: { country: "fr" } });
  assert.equal(r.created, true);
  assert.equal(r.rank, 1);
  assert.equal(r.score, 10);
  await c.submit(board, "bob", 20);
  await c.submit(board, "cy", 5);
  r = await c.submit(board, "cy", 3, { op: "best" });
  assert.equal(r.applied, false);
  assert.equal(r.score, 5);
  r = await c.submit(board, "cy", 2, { op: "incr" });
  assert.equal(r.score, 7);
  assert.equal(r.previous, 5);
  assert.equal((await c.submit(board, "dee", 1, { only: "existing" })).applied, false);
  assert.equal((await c.submit(board, "bob", 15, { cond: "gt" })).applied, false);
  assert.equal((await c.submit(board, "bob", 25, { cond: "gt" })).score, 25);
  r = await c.submit(board, "inf", Infinity);
  assert.equal(r.score, Infinity);
  assert.equal(r.rank, 1);

  const page = await c.top(board, { pageSize: 2, withData: true });
  assert.equal(page.total, 4);
  assert.equal(page.total_pages, 2);
  assert.equal(page.page, 1);
  assert.equal(page.ranking, "unique");
  assert.deepEqual(members(page), ["inf", "bob"]);
  const p2 = await c.top(board, { page: 2, pageSize: 2, withData: true });
  assert.deepEqual(members(p2), ["ann", "cy"]);
  assert.deepEqual(p2.entries[0].data, { country: "fr" });

  assert.equal((await c.rank(board, "ann")).rank, 3);
  assert.equal(await c.score(board, "bob"), 25);
  const info = await c.entry(board, "ann", { pageSize: 2 });
  assert.deepEqual([info.rank, info.page, info.name, info.data], [3, 2, "Ann Lee", { country: "fr" }]);
  assert.equal((await c.around(board, "ann", { pageSize: 3 })).entries[1].member, "ann");
  const ranks = await c.ranks(board, ["cy", "ann", "nobody"], { withData: true });
  assert.deepEqual(members(ranks), ["ann", "cy"]);
  assert.deepEqual(ranks.missing, ["nobody"]);
  assert.equal(await c.count(board), 4);
  assert.equal(await c.count(board, { min: 7, max: 25 }), 3);
  assert.equal(await c.count(board, { min: exclusive(7) }), 3);
  assert.deepEqual(members(await c.rangeByRank(board, 2, 3)), ["bob", "ann"]);
  assert.deepEqual(members(await c.rangeByRank(board, 1, 2, { fromWorst: true })), ["cy", "ann"]);
  assert.deepEqual(members(await c.rangeByScore(board, { min: 5, max: 30, limit: 1, offset: 1 })), ["ann"]);
  assert.deepEqual(members(await c.rangeByScore(board, { fromWorst: true, withData: true })), ["cy", "ann", "bob", "inf"]);
  assert.equal(await c.percentile(board, "inf"), 100);
  assert.equal((await c.scoreAtPercentile(board, 100)).member, "inf");
  const found = await c.search(board, "ann", { limit: 5, offset: 0, withData: true });
  assert.deepEqual(members(found), ["ann"]);
  assert.equal(found.total, 1);
});

test("member ids are percent-encoded", async () => {
  const board = newBoard();
  const member = "a/b c?d#e%f@ü";
  await c.submit(board, member, 1);
  assert.equal((await c.rank(board, member)).member, member);
  assert.equal((await c.entry(board, member)).member, member);
  assert.equal(await c.removeMember(board, member), 1);
});

test("members named . and .., which no URL path keeps, go in the query", async () => {
  const board = newBoard();
  const urls = [];
  const spy = new PodiumClient({
    baseUrl: server.url,
    fetch: (url, init) => { urls.push(new URL(url)); return fetch(url, init); },
  });
  await spy.submitMany(board, [{ member: ".", score: 3 }, { member: "..", score: 2 }, { member: "x", score: 1 }]);
  for (const [member, rank] of [[".", 1], ["..", 2]]) {
    urls.length = 0;
    assert.equal(await spy.setData(board, member, { dots: member.length }, { name: "Dot" }), true);
    const info = await spy.entry(board, member);
    assert.deepEqual([info.member, info.rank, info.name, info.data], [member, rank, "Dot", { dots: member.length }]);
    assert.deepEqual([(await spy.rank(board, member)).rank, await spy.score(board, member)], [rank, 4 - rank]);
    assert.equal(typeof await spy.percentile(board, member), "number");
    const around = await spy.around(board, member, { pageSize: 3, withData: true });
    assert.equal(around.rank, rank);
    assert.deepEqual(members(around), [".", "..", "x"]);
    for (const u of urls) assert.equal(u.searchParams.get("member"), member, u.href);
  }
  assert.equal(await spy.percentile(board, "."), 100);
  for (const member of [".", ".."]) {
    assert.equal(await spy.removeMember(board, member), 1);
    await rejects(spy.rank(board, member), "member_not_found", 404);
    await rejects(spy.removeMember(board, member), "member_not_found", 404);
  }
  // Any other id keeps the readable path form.
  urls.length = 0;
  assert.equal((await spy.rank(board, "x")).member, "x");
  assert.equal(await spy.removeMember(board, "x"), 1);
  assert.deepEqual(urls.map((u) => [u.pathname, u.search]),
    [[`/v1/boards/${board}/rank/x`, ""], [`/v1/boards/${board}/members/x`, ""]]);
});

test("submitMany, with per-entry failures and shared options", async () => {
  const board = newBoard();
  await c.putBoard(board, { max_submits_per_member: { count: 1, per: "1m" } });
  const results = await c.submitMany(board, [
    { member: "a", score: 1, name: "A" },
    { member: "b", score: 2 },
    { member: "a", score: 3 },
    { member: "d", score: -Infinity },
  ]);
  assert.equal(results[0].created, true);
  assert.deepEqual(results.map(isSubmitFailure), [false, false, true, false]);
  assert.ok(results[2].error instanceof PodiumError);
  assert.equal(results[2].member, "a");
  assert.equal(results[2].error.code, "rate_limited");
  assert.equal(results[3].score, -Infinity);
  assert.equal(await c.count(board), 3);

  const b2 = newBoard();
  await c.submitMany(b2, [{ member: "x", score: 5 }, { member: "y", score: 5 }]);
  const res = await c.submitMany(b2, [{ member: "x", score: 1 }, { member: "z", score: 1, only: "new" }], { only: "existing" });
  assert.equal(res[0].applied, true);
  assert.equal(res[1].applied, true);
  assert.equal((await c.submitMany(b2, [{ member: "w", score: 1 }], { only: "existing" }))[0].applied, false);
});

test("removals and data", async () => {
  const board = newBoard();
  await c.submitMany(board, [..."abcdefg"].map((m, i) => ({ member: m, score: i + 1 })));
  assert.equal(await c.remove(board, ["a", "zz"]), 1);
  assert.equal(await c.removeMember(board, "b"), 1);
  assert.equal(await c.removeRangeByRank(board, 1, 1), 1); // g
  assert.equal(await c.removeRangeByScore(board, 3, exclusive(5)), 2); // c, d
  assert.deepEqual(members(await c.top(board)), ["f", "e"]);
  assert.equal(await c.setData(board, "e", { x: 1 }, { name: "Eve" }), true);
  assert.deepEqual((await c.entry(board, "e")).data, { x: 1 });
  assert.equal(await c.setName(board, "e", "Eva"), true);
  const info = await c.entry(board, "e");
  assert.equal(info.name, "Eva");
  assert.deepEqual(info.data, { x: 1 });
  assert.equal(await c.setData(board, "e", {}), true);
  assert.deepEqual((await c.entry(board, "e")).data, {});
  await rejects(c.setName(board, "nobody", "x"), "member_not_found", 404);
});

test("reset and archives", async () => {
  const board = newBoard();
  await c.submit(board, "a", 1);
  const res = await c.reset(board);
  assert.equal(res.archived, 1);
  assert.ok(res.archive.startsWith(board + "@"));
  assert.equal(await c.count(board), 0);
  assert.deepEqual((await c.archives(board)).map((a) => a.board), [res.archive]);
  assert.equal((await c.boardInfo(res.archive)).read_only, true);
  assert.equal((await c.top(res.archive)).entries[0].member, "a");
  await rejects(c.submit(res.archive, "b", 1), "read_only", 409);
});

test("merge and intersect", async () => {
  const board = newBoard();
  const s1 = board + "-1";
  const s2 = board + "-2";
  await c.submitMany(s1, [{ member: "a", score: 1 }, { member: "b", score: 2 }]);
  await c.submitMany(s2, [{ member: "b", score: 10 }, { member: "c", score: 3 }]);
  assert.equal(await c.merge(board + "-u", [s1, s2]), 3);
  assert.equal(await c.score(board + "-u", "b"), 12);
  assert.equal(await c.intersect(board + "-i", [s1, s2], { weights: [1, 2], aggregate: "max" }), 1);
  assert.equal(await c.score(board + "-i", "b"), 20);
});

test("int64 sort keys round trip as bigint", async () => {
  const board = newBoard();
  await c.putBoard(board, { sort: [{ key: "pts", type: "int" }, { key: "t", order: "asc" }] });
  const big = 2n ** 63n - 1n;
  const beyond = 2n ** 53n + 1n;
  const low = -(2n ** 63n);
  let r = await c.submit(board, "a", undefined, { scores: { pts: beyond, t: 1.5 } });
  assert.deepEqual(r.scores, { pts: beyond, t: 1.5 });
  await c.submit(board, "b", null, { scores: { pts: big, t: 2 } });
  await c.submit(board, "c", null, { scores: { pts: low, t: 0 } });
  await c.submit(board, "d", null, { scores: { pts: 7n, t: 0 } });
  const top = await c.top(board);
  assert.deepEqual(top.entries.map((e) => [e.member, e.scores]), [
    ["b", { pts: big, t: 2 }], ["a", { pts: beyond, t: 1.5 }], ["d", { pts: 7, t: 0 }], ["c", { pts: low, t: 0 }]]);
  assert.equal(typeof top.entries[0].scores.pts, "bigint");
  assert.equal(await c.count(board, { min: beyond }), 2);
  assert.equal(await c.count(board, { min: beyond + 1n }), 1);
  assert.deepEqual(members(await c.rangeByScore(board, { min: beyond, max: beyond })), ["a"]);
  r = await c.submit(board, "a", null, { scores: { pts: 1 }, op: "incr" });
  assert.equal(r.scores.pts, beyond + 1n);
  const exported = [];
  for await (const e of c.export(board)) exported.push(e);
  assert.deepEqual(exported[1].scores, { pts: beyond + 1n, t: 1.5 });
  await c.importRecords(board, [{ member: "e", scores: { pts: big - 1n, t: 9 } }]);
  assert.equal((await c.entry(board, "e")).scores.pts, big - 1n);
});

test("import and export", async () => {
  const board = newBoard();
  let res = await c.importData(board, "member,score,name\nann,3,Ann\nbob,zz\ncy,1\n", { format: "csv" });
  assert.deepEqual([res.imported, res.failed], [2, 1]);
  assert.equal(res.errors[0].line, 3);
  assert.equal(res.errors[0].error.code, "invalid_score");
  res = await c.importData(board, new TextEncoder().encode('{"member":"dee","score":2}\n'));
  assert.equal(res.imported, 1);
  async function* gen() {
    for (let i = 100; i < 1100; i++) yield { member: `m${i}`, score: i };
  }
  res = await c.importRecords(board, gen());
  assert.equal(res.imported, 1000);
  res = await c.importRecords(board, [{ member: "eve", score: 2.5, name: "Eve" }]);
  assert.equal(res.imported, 1);
  assert.equal((await c.entry(board, "eve")).name, "Eve");
  // chunks of a file, split anywhere, as an async iterable
  res = await c.importData(board, (async function* () { yield '{"member":"f1","sco'; yield 're":4}\n'; })());
  assert.equal(res.imported, 1);
  res = await c.importData(board, new Blob(['{"member":"f2","score":4}\n']));
  assert.equal(res.imported, 1);

  const entries = [];
  for await (const e of c.export(board)) entries.push(e);
  assert.equal(entries.length, 1006);
  assert.equal(entries[0].member, "m1099");
  assert.equal(entries.at(-1).member, "cy");
  // an export imports back as it was
  const copy = board + "-copy";
  const lines = entries.map((e) => JSON.stringify({ member: e.member, score: e.score, name: e.name }) + "\n");
  assert.equal((await c.importData(copy, lines)).imported, 1006);
  const again = [];
  for await (const e of c.export(copy)) again.push(e.member);
  assert.deepEqual(again, entries.map((e) => e.member));
  // breaking out of an export ends its request
  for await (const e of c.export(board)) { assert.equal(e.member, "m1099"); break; }
});

test("errors", async () => {
  const board = newBoard();
  await rejects(c.top(board), "board_not_found", 404);
  await c.submit(board, "a", 1);
  const e = await rejects(c.rank(board, "nobody"), "member_not_found", 404);
  assert.match(e.message, /nobody/);
  assert.ok(e instanceof Error);
  await rejects(c.removeMember(board, "nobody"), "member_not_found", 404);
  await rejects(c.submit(board, "a", "not-a-number"), "invalid_score", 400);
  await assert.rejects(c.submit(board, "a", NaN), TypeError);
  await rejects(c.putBoard(board, { order: "sideways" }), "invalid_config", 400);
});

test("a server that is not there: transport error after the retries", async () => {
  const dead = new PodiumClient({ baseUrl: "http://127.0.0.1:1", retries: 1, backoffMs: 1, timeoutMs: 2000 });
  const err = await dead.healthz().then(() => null, (e) => e);
  assert.ok(err instanceof PodiumError);
  assert.equal(err.code, "transport");
  assert.equal(err.status, undefined);
});

test("import from a Node file stream, export to a file", async () => {
  const { createReadStream, createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const { pipeline } = await import("node:stream/promises");
  const { Readable } = await import("node:stream");
  const dir = mkdtempSync(join(tmpdir(), "podium-ts-io-"));
  const board = newBoard();
  const csv = join(dir, "in.csv");
  writeFileSync(csv, "member,score\n" + Array.from({ length: 5000 }, (_, i) => `m${i},${i}`).join("\n") + "\n");
  const res = await c.importData(board, createReadStream(csv, { highWaterMark: 1024 }), { format: "csv" });
  assert.deepEqual([res.imported, res.failed], [5000, 0]);
  const out = join(dir, "out.ndjson");
  await pipeline(Readable.from((async function* () {
    for await (const e of c.export(board)) yield JSON.stringify({ member: e.member, score: e.score }) + "\n";
  })()), createWriteStream(out));
  const lines = readFileSync(out, "utf8").trim().split("\n");
  assert.equal(lines.length, 5000);
  assert.equal(JSON.parse(lines[0]).member, "m4999");
  const copy = board + "-copy";
  assert.equal((await c.importData(copy, createReadStream(out))).imported, 5000);
  assert.equal(await c.count(copy), 5000);
  rmSync(dir, { recursive: true, force: true });
});
