// API keys: scopes, 401 and 403 as PodiumErrors with their codes.
import assert from "node:assert/strict";
import { test } from "node:test";
import { PodiumClient, PodiumError } from "../dist/index.js";
import { Server } from "../scripts/server.mjs";

const is = (code, status) => (e) => e instanceof PodiumError && e.code === code && e.status === status;

test("api keys: read, write and admin scopes", async () => {
  const [read, write, admin] = ["r".repeat(20), "w".repeat(20), "a".repeat(20)];
  const srv = await new Server({ apiKeys: [`${read}:read`, `${write}:write`, `${admin}:admin`] }).start();
  try {
    const a = new PodiumClient({ baseUrl: srv.url, apiKey: admin });
    const w = new PodiumClient({ baseUrl: srv.url, apiKey: write });
    const r = new PodiumClient({ baseUrl: srv.url, apiKey: read });
    const anon = new PodiumClient({ baseUrl: srv.url });
    assert.equal((await anon.healthz()).status, "ok"); // open
    await assert.rejects(anon.boards(), is("unauthorized", 401));
    await assert.rejects(new PodiumClient({ baseUrl: srv.url, apiKey: "x".repeat(20) }).boards(), is("unauthorized", 401));
    assert.deepEqual(
      await Promise.all([r, w, a].map(async (c) => (await c.keyInfo()).scope)),
      ["read", "write", "admin"],
    );
    await assert.rejects(anon.keyInfo(), is("unauthorized", 401));
    await a.putBoard("b");
    await w.submit("b", "ann", 1);
    assert.equal((await r.top("b")).entries[0].member, "ann");
    const err = await r.submit("b", "bob", 2).then(() => null, (e) => e);
    assert.ok(is("forbidden", 403)(err), `expected forbidden, got ${err}`);
    assert.ok(err.message.length > 0);
    await assert.rejects(w.reset("b"), is("forbidden", 403));
    await assert.rejects(r.importRecords("b", [{ member: "x", score: 1 }]), is("forbidden", 403));
    const s = r.events("b", { snapshot: true });
    assert.equal((await s.next()).value.type, "snapshot");
    s.close();
    await assert.rejects(anon.events("b").next(), is("unauthorized", 401));
    assert.equal(await r.count("b"), 1);
  } finally {
    await srv.stop();
  }
});
