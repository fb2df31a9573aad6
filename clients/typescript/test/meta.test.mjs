// The client against the server's own description: every route has a method,
// the committed types are current, and the typed example compiles and runs.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, test } from "node:test";
import { PodiumClient } from "../dist/index.js";
import { Server } from "../scripts/server.mjs";
import { TYPES_FILE, generate } from "../scripts/gen-types.mjs";

const run = promisify(execFile);
const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

// Each operation of /openapi.json and the methods that call it.
const OPERATIONS = {
  healthz: ["healthz"],
  readyz: ["readyz"],
  backup: ["backup"],
  key_info: ["keyInfo"],
  metrics: ["metrics"],
  openapi: ["openapi"],
  boards: ["boards", "archives"],
  board_info: ["boardInfo"],
  board_put: ["putBoard"],
  board_patch: ["patchBoard"],
  board_delete: ["deleteBoard"],
  around: ["around"],
  count: ["count"],
  subscribe: ["events"],
  export: ["export"],
  import: ["importData", "importRecords"],
  intersect: ["intersect"],
  merge: ["merge"],
  remove_member: ["removeMember"],
  entry: ["entry"],
  set_data: ["setData", "setName"],
  percentile: ["percentile"],
  remove_range_by_rank: ["removeRangeByRank"],
  remove_range_by_score: ["removeRangeByScore"],
  range_by_rank: ["rangeByRank"],
  range_by_score: ["rangeByScore"],
  rank: ["rank", "score"],
  ranks: ["ranks"],
  remove: ["remove"],
  reset: ["reset"],
  resort_status: ["resortStatus"],
  score_at_percentile: ["scoreAtPercentile"],
  submit: ["submit", "submitMany"],
  search: ["search"],
  top: ["top"],
  // The member in the query: what these methods send for `.` and `..`.
  entry_by_query: ["entry"],
  set_data_by_query: ["setData", "setName"],
  remove_member_by_query: ["removeMember"],
  rank_by_query: ["rank", "score"],
  percentile_by_query: ["percentile"],
  around_by_query: ["around"],
};

let server;
let c;
before(async () => {
  server = await new Server().start();
  c = new PodiumClient({ baseUrl: server.url });
});
after(async () => { await server?.stop(); });

test("every route of /openapi.json has a method", async () => {
  const spec = await c.openapi();
  const ops = new Set();
  for (const item of Object.values(spec.paths)) {
    for (const op of Object.values(item)) if (op && typeof op === "object" && op.operationId) ops.add(op.operationId);
  }
  assert.deepEqual([...ops].sort(), Object.keys(OPERATIONS).sort(),
    "routes of /openapi.json the client does not know (or that no longer exist)");
  for (const names of Object.values(OPERATIONS)) {
    for (const n of names) assert.equal(typeof PodiumClient.prototype[n], "function", `PodiumClient.${n}`);
  }
});

test("src/openapi.d.ts is what the current server generates", async () => {
  const text = await generate(server.url);
  assert.ok(readFileSync(TYPES_FILE, "utf8") === text, "src/openapi.d.ts is out of date: run `npm run gen-types`");
});

test("examples/quickstart.ts compiles (strict) and runs", async () => {
  const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
  await run(process.execPath, [tsc, "-p", join(ROOT, "examples", "tsconfig.json")], { cwd: ROOT });
  const { stdout } = await run(process.execPath, [join(ROOT, "build", "examples", "quickstart.js")], {
    cwd: ROOT, env: { ...process.env, PODIUM_URL: server.url, PODIUM_BOARD: "example", PODIUM_API_KEY: "" },
    timeout: 30000,
  });
  assert.match(stdout, /^1 bea 150$/m);
  assert.match(stdout, /member_not_found 404/);
  assert.match(stdout, /laps: 1152921504606846976n/);
  assert.match(stdout, /event: snapshot bea,ann,cy/);
  assert.match(stdout, /exported 3/);
});

test("the types refuse what the server refuses (test/types compiles, each @ts-expect-error used)", async () => {
  const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
  await run(process.execPath, [tsc, "-p", join(ROOT, "test", "types", "tsconfig.json")], { cwd: ROOT });
});

test("the library uses no Node-only module (it runs in browsers)", async () => {
  const { readdirSync } = await import("node:fs");
  for (const f of readdirSync(join(ROOT, "src"))) {
    const text = readFileSync(join(ROOT, "src", f), "utf8");
    assert.doesNotMatch(text, /from\s+["'](node:|fs|path|http|https|stream|buffer|crypto|os|child_process)["'/]/, f);
    assert.doesNotMatch(text, /\b(require\(|process\.|Buffer\.)/, f);
  }
  // and it compiles with no Node types at all ("types": [] in tsconfig.json)
  assert.deepEqual(JSON.parse(readFileSync(join(ROOT, "tsconfig.json"), "utf8")).compilerOptions.types, []);
});

test("npm pack makes a tarball that installs and imports, with its types", async () => {
  const { mkdtempSync, rmSync, writeFileSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const dir = mkdtempSync(join(tmpdir(), "podium-pack-"));
  try {
    const npm = process.platform === "win32" ? "npm.cmd" : "npm";
    const { stdout } = await run(npm, ["pack", "--silent", "--pack-destination", dir], { cwd: ROOT });
    const tarball = join(dir, stdout.trim().split("\n").pop());
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "app", version: "1.0.0", type: "module" }));
    // No runtime dependencies: installing the tarball needs no registry.
    await run(npm, ["install", "--offline", "--no-audit", "--no-fund", "--silent", tarball], { cwd: dir });
    writeFileSync(join(dir, "main.mjs"),
      `import { PodiumClient } from "podium-client";\nimport { verifySignature } from "podium-client/webhooks";\n` +
      `const c = new PodiumClient({ baseUrl: process.argv[2] });\n` +
      `console.log(typeof verifySignature, (await c.healthz()).status);\n`);
    const out = await run(process.execPath, [join(dir, "main.mjs"), server.url], { cwd: dir });
    assert.equal(out.stdout.trim(), "function ok");
    const installed = join(dir, "node_modules", "podium-client", "dist");
    for (const f of ["index.js", "index.d.ts", "openapi.d.ts", "webhooks.js", "webhooks.d.ts"]) {
      assert.ok(existsSync(join(installed, f)), f);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
