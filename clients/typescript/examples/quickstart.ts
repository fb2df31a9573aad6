// A typed tour of podium-client: `npm run example` (PODIUM_URL, default http://127.0.0.1:7070).
import { PodiumClient, PodiumError, type Entry, type PodiumEvent } from "podium-client";

declare const process: { env: Record<string, string | undefined> };

const c = new PodiumClient({ baseUrl: process.env.PODIUM_URL, apiKey: process.env.PODIUM_API_KEY });
const board = process.env.PODIUM_BOARD ?? "weekly";

await c.putBoard(board, { order: "desc", update: "best", reset: "weekly" });
await c.submit(board, "ann", 120, { name: "Ann", data: { country: "fr" } });
await c.submitMany(board, [{ member: "bea", score: 150 }, { member: "cy", score: 90 }]);

const page = await c.top(board, { page: 1, pageSize: 10 });
for (const e of page.entries) console.log(e.rank, e.name ?? e.member, e.score);

const me = await c.entry(board, "ann");
console.log("ann:", me.rank, me.percentile, me.page);

try {
  await c.rank(board, "nobody");
} catch (err) {
  if (err instanceof PodiumError) console.log(err.code, err.status); // member_not_found 404
  else throw err;
}

// Exact 64-bit integer sort keys come back as bigint.
await c.putBoard(board + "-race", { sort: [{ key: "laps", type: "int" }, { key: "time_ms", order: "asc", type: "int" }] });
await c.submit(board + "-race", "ann", null, { scores: { laps: 2n ** 60n, time_ms: 61234 } });
const first: Entry | undefined = (await c.top(board + "-race")).entries[0];
console.log("laps:", first?.scores?.laps);

// Live events: an async iterator that reconnects and resumes by itself.
const live = c.events(board, { top: 3, snapshot: true });
for await (const ev of live as AsyncIterable<PodiumEvent>) {
  console.log("event:", ev.type, ev.top?.map((x) => x.member).join(","));
  break;
}
live.close();

let n = 0;
for await (const _ of c.export(board)) n++;
console.log("exported", n);
