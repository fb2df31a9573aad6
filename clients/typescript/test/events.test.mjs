// Live events: typed events, resume after an id, and a subscription that survives a server restart.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import { after, before, test } from "node:test";
import { PodiumClient } from "../dist/index.js";
import { Server } from "../scripts/server.mjs";

let server;
let c;
const newBoard = () => "t-" + randomUUID().slice(0, 12);

before(async () => {
  server = await new Server().start();
  c = new PodiumClient({ baseUrl: server.url });
});
after(async () => { await server?.stop(); });

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Reads an event stream in the background so a test can wait for events with a timeout. */
class Collector {
  constructor(stream) {
    this.stream = stream;
    this.queue = [];
    this.waiters = [];
    this.error = null;
    this.done = (async () => {
      try {
        for await (const e of stream) {
          this.queue.push(e);
          this.waiters.splice(0).forEach((w) => w());
        }
      } catch (err) {
        this.error = err;
        this.waiters.splice(0).forEach((w) => w());
      }
    })();
  }

  async next(timeoutMs = 10000) {
    const deadline = Date.now() + timeoutMs;
    while (this.queue.length === 0) {
      if (this.error) throw this.error;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no event within ${timeoutMs} ms (stream error: ${this.error})`);
      await new Promise((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => { clearTimeout(t); resolve(); });
      });
    }
    return this.queue.shift();
  }

  /** Events up to and including the first of that type. */
  async until(type, timeoutMs = 15000) {
    const got = [];
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const e = await this.next(Math.max(100, deadline - Date.now()));
      got.push(e);
      if (e.type === type) return got;
    }
  }

  /** Events until every "type:member" wanted has come. */
  async untilAll(wanted, timeoutMs = 15000) {
    const got = [];
    const left = new Set(wanted);
    const deadline = Date.now() + timeoutMs;
    while (left.size) {
      const e = await this.next(Math.max(100, deadline - Date.now()));
      got.push(e);
      left.delete(`${e.type}:${e.member ?? ""}`);
    }
    return got;
  }

  async close() {
    this.stream.close();
    await this.done;
  }
}

const idKey = (id) => id.split("-").map(Number);
const idLess = (a, b) => { const [x, y] = [idKey(a), idKey(b)]; return x[0] < y[0] || (x[0] === y[0] && (x[1] ?? -1) < (y[1] ?? -1)); };

test("every change, and a resume after an id", async () => {
  const board = newBoard();
  await c.putBoard(board);
  const col = new Collector(c.events(board, { snapshot: true }));
  const first = await col.next();
  assert.ok(first.type);
  await c.submit(board, "a", 1, { name: "Ann" });
  const e = (await col.until("change")).at(-1);
  assert.deepEqual([e.type, e.board, e.member, e.rank, e.score, e.name], ["change", board, "a", 1, 1, "Ann"]);
  const last = e.id;
  assert.equal(col.stream.lastEventId, last);
  await col.close();

  await c.submit(board, "b", 2);
  await c.removeMember(board, "a");
  const resumed = c.events(board, { since: last });
  const got = [(await resumed.next()).value, (await resumed.next()).value];
  resumed.close();
  assert.deepEqual(got.map((g) => [g.type, g.member]), [["change", "b"], ["change", "a"]]);
  assert.equal(got[1].removed, true);
  assert.ok(idLess(got[0].id, got[1].id));
  // a closed stream ends its iteration
  assert.equal((await resumed.next()).done, true);
});

test("top and members filters, with snapshots", async () => {
  const board = newBoard();
  await c.submitMany(board, [{ member: "a", score: 3 }, { member: "b", score: 2 }]);
  const col = new Collector(c.events(board, { top: 2, snapshot: true }));
  const snap = await col.next();
  assert.equal(snap.type, "snapshot");
  assert.equal(snap.exists, true);
  assert.equal(snap.size, 2);
  assert.deepEqual(snap.top.map((x) => x.member), ["a", "b"]);
  const mcol = new Collector(c.events(board, { members: ["b", "ghost,with,commas"], snapshot: true }));
  const msnap = await mcol.next();
  assert.equal(msnap.type, "snapshot");
  assert.deepEqual(msnap.members.map((m) => [m.member, m.rank ?? null, m.score ?? null]),
    [["b", 2, 2], ["ghost,with,commas", null, null]]);
  await c.submit(board, "c", 5);
  const evs = await col.untilAll(["enter:c", "leave:b", "move:a"]);
  assert.equal(evs[0].type, "leave"); // each write's leaves come first
  const m = (await mcol.until("member")).at(-1);
  assert.deepEqual([m.member, m.rank, m.previous_rank, m.by], ["b", 3, 2, "c"]);
  await col.close();
  await mcol.close();
});

test("a bad filter is refused before the stream starts", async () => {
  const board = newBoard();
  await c.submit(board, "a", 1);
  const s = c.events(board, { top: 0 });
  await assert.rejects(s.next(), (e) => e.code === "invalid_argument" && e.status === 400);
});

function apply(state, e) {
  if (e.type === "snapshot") {
    state.clear();
    for (const x of e.top ?? []) state.set(x.member, x.rank);
  } else if (e.type === "enter" || e.type === "move") state.set(e.member, e.rank);
  else if (e.type === "leave") state.delete(e.member);
}

const topState = async (board) => new Map((await c2.top(board)).entries.map((e) => [e.member, e.rank]));
let c2;

test("a subscription survives kill -9 and a restart on the same port and data dir, with no gap", async () => {
  const srv = await new Server({ port: await freePort() }).start();
  try {
    c2 = new PodiumClient({ baseUrl: srv.url, retries: 5 });
    const board = "restart";
    await c2.submit(board, "a", 1);
    const stream = c2.events(board, { top: 10, snapshot: true, maxReconnectDelayMs: 200 });
    const col = new Collector(stream);
    const state = new Map();
    apply(state, await col.next());
    assert.deepEqual([...state], [["a", 1]]);
    await c2.submit(board, "b", 2);
    for (const e of await col.until("move")) apply(state, e);
    assert.deepEqual(Object.fromEntries(state), { b: 1, a: 2 });
    const before = stream.lastEventId;
    assert.ok(before);

    await srv.kill(); // no goodbye to the subscriber
    await srv.start(); // the same data dir and port
    assert.equal(stream.lastEventId, before);

    // A write right after the restart, maybe before the stream is back: the
    // subscriber sees it as its own events (the resume continues with no gap)
    // or as a reload and a snapshot holding it; never a state without it.
    await c2.submit(board, "c", 3);
    const expected = { c: 1, b: 2, a: 3 };
    const deadline = Date.now() + 20000;
    while (JSON.stringify(Object.fromEntries([...state].sort())) !== JSON.stringify(Object.fromEntries(Object.entries(expected).sort()))) {
      const e = await col.next(Math.max(100, deadline - Date.now()));
      if (e.type === "reload") assert.equal(e.after, before);
      apply(state, e);
    }
    assert.ok(stream.reconnects >= 1);
    assert.deepEqual(state, await topState(board));

    await c2.submit(board, "d", 4);
    for (const e of await col.untilAll(["enter:d", "move:a"])) apply(state, e);
    assert.deepEqual(Object.fromEntries(state), { d: 1, c: 2, b: 3, a: 4 });
    assert.deepEqual(state, await topState(board));
    assert.ok(idLess(before, stream.lastEventId)); // ids keep growing across the restart
    await col.close();
  } finally {
    await srv.stop();
  }
});
