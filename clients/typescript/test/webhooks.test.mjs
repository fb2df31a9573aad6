// A board's webhook delivers to a local receiver; the client checks its signature and parses it.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import { PodiumClient } from "../dist/index.js";
import { parseDelivery, sign, verifySignature } from "podium-client/webhooks";
import { Server } from "../scripts/server.mjs";

const SECRET = "s3cret-s3cret-s3cret";

test("webhook delivery: signature and events", async () => {
  const srv = await new Server().start();
  const got = [];
  let wake;
  const receiver = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      got.push({ body: Buffer.concat(chunks), headers: req.headers });
      res.writeHead(204).end();
      wake?.();
    });
  });
  await new Promise((r) => receiver.listen(0, "127.0.0.1", r));
  try {
    const c = new PodiumClient({ baseUrl: srv.url });
    const url = `http://127.0.0.1:${receiver.address().port}/hook`;
    await c.putBoard("hooked", { webhooks: [{ name: "h1", url, secret: SECRET, top: 3 }] });
    assert.ok(!("secret" in (await c.boardInfo("hooked")).config.webhooks[0]));
    await c.submit("hooked", "ann", 5);
    const deadline = Date.now() + 15000;
    while (!got.length && Date.now() < deadline) await new Promise((r) => { wake = r; setTimeout(r, 200); });
    assert.ok(got.length, "no delivery within 15 s");
    const { body, headers } = got[0];
    const sig = headers["podium-signature"];
    assert.equal(headers["podium-hook"], "h1");
    assert.equal(await verifySignature(body, SECRET, sig), true);
    assert.equal(await verifySignature(Buffer.concat([body, Buffer.from(" ")]), SECRET, sig), false);
    assert.equal(await verifySignature(body, "another-secret-value", sig), false);
    assert.equal(await sign(body, new TextEncoder().encode(SECRET)), sig);
    const d = await parseDelivery(body, SECRET, sig);
    assert.deepEqual([d.board, d.hook], ["hooked", "h1"]);
    assert.deepEqual(d.events.filter((e) => e.type === "enter").map((e) => [e.type, e.member, e.rank]), [["enter", "ann", 1]]);
    await assert.rejects(parseDelivery(body, SECRET, "sha256=00"), /bad webhook signature/);
  } finally {
    receiver.close();
    await srv.stop();
  }
});
