// A bulk import and export through the client in a process of its own, for
// bulk.test.mjs: imports N generated entries (streamed as NDJSON, never
// held), exports the board back entry by entry (counted, never held), and
// prints one JSON line with the counts, the first and last entries, the
// seconds each took and the process's peak RSS: VmHWM, the kernel's
// high-water mark, the true peak however brief.
// Usage: node test/bulk_rss.mjs URL BOARD N [--sample]
// --sample adds the largest process.memoryUsage() figures of each phase.
import { readFileSync } from "node:fs";
import { PodiumClient } from "../dist/index.js";

const [url, board, nArg] = process.argv.slice(2);
const n = Number(nArg);
const sample = process.argv.includes("--sample");

function statusMb(field) {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync("/proc/self/status", "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
}

let phase = "start";
const peaks = {};
const timer = sample ? setInterval(() => {
  const u = process.memoryUsage();
  const p = (peaks[phase] ??= { rss: 0, heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 });
  for (const k of Object.keys(p)) p[k] = Math.max(p[k], Math.round(u[k] / 1048576));
}, 50) : null;

// Members player-0000000, player-0000001, ... counted on an odometer of
// digits, not with String(i): V8 keeps the last 16K numbers turned into
// strings alive in a cache, and those survivors of every young-generation
// collection make it grow its young generation to 32 MB resident, a cost
// of the caller's code, not of the client's (with String(i) names this
// process peaked at 102-122 MB, against ~91 MB).
function* rows() {
  const digits = [0, 0, 0, 0, 0, 0, 0];
  const d = "0123456789";
  for (let i = 0; i < n; i++) {
    const [a, b, c, e, f, g, h] = digits;
    yield { member: "player-" + d[a] + d[b] + d[c] + d[e] + d[f] + d[g] + d[h], score: i };
    for (let k = digits.length - 1; k >= 0 && ++digits[k] === 10; k--) digits[k] = 0;
  }
}

const c = new PodiumClient({ baseUrl: url, timeoutMs: 600_000 });
phase = "import";
let t = performance.now();
const res = await c.importRecords(board, rows());
const importS = (performance.now() - t) / 1000;
phase = "export";
t = performance.now();
let exported = 0, first = null, last = null;
for await (const e of c.export(board)) {
  if (exported === 0) first = e;
  last = e;
  exported++;
}
const exportS = (performance.now() - t) / 1000;
if (timer) clearInterval(timer);
console.log(JSON.stringify({
  imported: res.imported, failed: res.failed, import_s: importS,
  exported, export_s: exportS, first, last,
  peak_rss_mb: statusMb("VmHWM"), ...(sample ? { peaks } : {}),
}));
