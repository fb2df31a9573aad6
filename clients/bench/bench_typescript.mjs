// The TypeScript client's rates against a running podium
// (clients/bench/run.sh): submit one at a time, 64 in flight, submitMany
// batches of 1,000, and a bulk import of N entries. Prints one JSON object.
import { PodiumClient } from "../typescript/dist/index.js";

const [url, n] = [process.argv[2], Number(process.argv[3])];
const SECONDS = 5;
const c = new PodiumClient({ baseUrl: url, timeoutMs: 600_000 });
const name = (i) => `player-${String(i).padStart(7, "0")}`;
const now = () => performance.now() / 1000;

async function sequential() {
  let k = 0;
  const t = now(), end = t + SECONDS;
  while (now() < end) await c.submit("ts-seq", name(k % 100_000), k++);
  return k / (now() - t);
}

async function concurrent(inFlight = 64) {
  let done = 0;
  const t = now(), end = t + SECONDS;
  await Promise.all(Array.from({ length: inFlight }, async (_, w) => {
    for (let i = w; now() < end; i += inFlight) {
      await c.submit("ts-64", name(i % 100_000), i);
      done++;
    }
  }));
  return done / (now() - t);
}

async function batches(size = 1000) {
  let k = 0;
  const t = now(), end = t + SECONDS;
  while (now() < end) {
    await c.submitMany("ts-batch", Array.from({ length: size }, (_, j) => ({ member: name((k + j) % 100_000), score: k + j })));
    k += size;
  }
  return k / (now() - t);
}

async function bulkImport() {
  async function* rows() {
    for (let i = 0; i < n; i++) yield { member: name(i), score: (i * 7919) % 1_000_003 };
  }
  const t = now();
  const r = await c.importRecords("ts-import", rows());
  if (r.imported !== n) throw new Error(`imported ${r.imported} of ${n}`);
  return n / (now() - t);
}

console.log(JSON.stringify({
  submit_sequential: await sequential(),
  submit_64: await concurrent(),
  submit_many_1000: await batches(),
  import: await bulkImport(),
}));
