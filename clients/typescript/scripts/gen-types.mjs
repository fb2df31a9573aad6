#!/usr/bin/env node
// Regenerates src/openapi.d.ts from a running server's GET /openapi.json.
// `node scripts/gen-types.mjs` writes the file; `--check` fails if it differs.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import openapiTS, { astToString } from "openapi-typescript";
import { Server } from "./server.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
export const TYPES_FILE = join(HERE, "..", "src", "openapi.d.ts");
const HEADER = "// Generated from podium's GET /openapi.json by scripts/gen-types.mjs: do not edit.\n\n";

/** The generated declarations, from the server at `url` (or a server started for it). */
export async function generate(url) {
  let server = null;
  if (!url) {
    server = await new Server().start();
    url = server.url;
  }
  try {
    const res = await fetch(url + "/openapi.json");
    if (!res.ok) throw new Error(`GET /openapi.json: ${res.status}`);
    const spec = await res.json();
    const ast = await openapiTS(spec, { defaultNonNullable: false });
    return HEADER + astToString(ast);
  } finally {
    if (server) await server.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = await generate(process.env.PODIUM_URL);
  if (process.argv.includes("--check")) {
    if (readFileSync(TYPES_FILE, "utf8") !== text) {
      console.error("src/openapi.d.ts is out of date: run `npm run gen-types`");
      process.exit(1);
    }
  } else {
    writeFileSync(TYPES_FILE, text);
    console.log("wrote", TYPES_FILE);
  }
}
