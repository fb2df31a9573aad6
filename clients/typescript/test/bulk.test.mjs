// A 1M-entry import and its export through the client with bounded memory:
// the client streams both ways, so its peak RSS (measured in a process of
// its own, test/bulk_rss.mjs) stays under 100 MB whatever the board's size.
// Node's own share of that: ~57 MB once fetch has made a request, and a
// one-off ~28 MB while V8 recompiles fetch's HTTP parser (WebAssembly) once
// it is hot.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { Server } from "../scripts/server.mjs";

const N = 1_000_000;
const PEAK_MB = 100;
let server;

before(async () => { server = await new Server().start(); });
after(async () => { await server?.stop(); });

test("a million entries in and out in bounded memory", { skip: !existsSync("/proc/self/status") && "needs Linux's /proc" }, async () => {
  const script = fileURLToPath(new URL("./bulk_rss.mjs", import.meta.url));
  const board = "bulk-" + randomUUID().slice(0, 8);
  const { stdout } = await promisify(execFile)(process.execPath, [script, server.url, board, String(N)],
    { timeout: 600_000 });
  const r = JSON.parse(stdout.trim().split("\n").at(-1));
  assert.deepEqual([r.imported, r.failed, r.exported], [N, 0, N], JSON.stringify(r));
  // Best first: the highest score is N-1, and the lowest is 0.
  assert.deepEqual([r.first.member, r.first.score, r.first.rank], ["player-0999999", N - 1, 1]);
  assert.deepEqual([r.last.member, r.last.score, r.last.rank], ["player-0000000", 0, N]);
  console.log(`1M import ${r.import_s.toFixed(1)} s, export ${r.export_s.toFixed(1)} s, `
    + `client peak RSS ${r.peak_rss_mb.toFixed(0)} MB (bound ${PEAK_MB})`);
  assert.ok(r.peak_rss_mb < PEAK_MB, `client peak RSS ${r.peak_rss_mb.toFixed(1)} MB, not under ${PEAK_MB} MB`);
});
