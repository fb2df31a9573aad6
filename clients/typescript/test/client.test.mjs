// The client's own behaviour, with a stand-in fetch: retries, timeouts, encodings.
import assert from "node:assert/strict";
import { test } from "node:test";
import { PodiumClient, PodiumError, decode, encodeScore, exclusive } from "../dist/index.js";

const json = (status, body) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

test("reads are retried on 503, writes are not", async () => {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push(init.method);
    if (calls.length < 3) return json(503, { error: { code: "storage_unavailable", message: "down" } });
    return json(200, { board: "b", count: 7 });
  };
  const c = new PodiumClient({ baseUrl: "http://podium.test", retries: 3, backoffMs: 1, fetch });
  assert.equal(await c.count("b"), 7);
  assert.deepEqual(calls, ["GET", "GET", "GET"]);
  calls.length = 0;
  const err = await c.submit("b", "m", 1).then(() => null, (e) => e);
  assert.deepEqual(calls, ["POST"]);
  assert.ok(err instanceof PodiumError);
  assert.deepEqual([err.code, err.status, err.message], ["storage_unavailable", 503, "down"]);
});

test("connection errors are retried, then a transport error", async () => {
  let attempts = 0;
  const fetch = async () => { attempts++; throw new TypeError("fetch failed"); };
  const c = new PodiumClient({ baseUrl: "http://podium.test", retries: 2, backoffMs: 1, fetch });
  const err = await c.top("b").then(() => null, (e) => e);
  assert.equal(attempts, 3);
  assert.ok(err instanceof PodiumError);
  assert.equal(err.code, "transport");
});

test("a request with no answer in timeoutMs is a timeout error", async () => {
  const fetch = (url, init) => new Promise((_, reject) => {
    init.signal.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
  });
  const c = new PodiumClient({ baseUrl: "http://podium.test", retries: 0, timeoutMs: 50, fetch });
  await assert.rejects(c.healthz(), (e) => e instanceof PodiumError && e.code === "timeout");
});

test("rate_limited carries Retry-After; the key goes as a bearer token; URLs are encoded", async () => {
  let seen;
  const fetch = async (url, init) => {
    seen = { url, auth: init.headers.Authorization };
    return new Response(JSON.stringify({ error: { code: "rate_limited", message: "slow down" } }),
      { status: 429, headers: { "retry-after": "3" } });
  };
  const c = new PodiumClient({ baseUrl: "http://podium.test/", apiKey: "k".repeat(20), fetch });
  const err = await c.rangeByScore("a b/c", { min: exclusive(1), max: Infinity }).then(() => null, (e) => e);
  assert.deepEqual([err.code, err.status, err.retryAfter], ["rate_limited", 429, 3]);
  assert.equal(seen.auth, "Bearer " + "k".repeat(20));
  assert.equal(seen.url, "http://podium.test/v1/boards/a%20b%2Fc/range/score?min=%281&max=%2Binf");
});

test("score encoding and decoding", () => {
  assert.equal(encodeScore(2n ** 63n - 1n), "9223372036854775807");
  assert.equal(encodeScore(Infinity), "inf");
  assert.equal(encodeScore(-Infinity), "-inf");
  assert.equal(encodeScore(1.5), 1.5);
  assert.throws(() => encodeScore(NaN), TypeError);
  const d = decode({ score: "-inf", scores: { a: "9007199254740993", b: 3, c: "inf", d: "12" }, data: { score: "inf" } });
  assert.deepEqual(d, { score: -Infinity, scores: { a: 9007199254740993n, b: 3, c: Infinity, d: 12 }, data: { score: "inf" } });
});

test("imports stream their body, or gather it first where uploads cannot stream (browsers)", async () => {
  const bodies = [];
  const fetch = async (url, init) => {
    bodies.push(init.body);
    const text = await new Response(init.body).text();
    return json(200, { board: "b", imported: text.split("\n").filter(Boolean).length, failed: 0, errors: [] });
  };
  const records = [{ member: "a", score: 1 }, { member: "b", score: 2 }];
  const streaming = new PodiumClient({ baseUrl: "http://podium.test", fetch });
  assert.equal(streaming.streamUploads, true); // Node
  assert.equal((await streaming.importRecords("b", records)).imported, 2);
  assert.ok(bodies[0] instanceof ReadableStream);
  const gathering = new PodiumClient({ baseUrl: "http://podium.test", fetch, streamUploads: false });
  assert.equal((await gathering.importRecords("b", records)).imported, 2);
  assert.ok(bodies[1] instanceof Blob);
});
