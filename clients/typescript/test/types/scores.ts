// Compiled (never run) by test/meta.test.mjs: what the types accept and
// refuse. Each `@ts-expect-error` must find an error, or tsc fails.
import { PodiumClient, type ScoreInput } from "../../src/index.js";

declare const c: PodiumClient;

export async function accepted(): Promise<void> {
  await c.submit("b", "m", 10);
  await c.submit("b", "m", 1.5e3);
  await c.submit("b", "m", 9007199254740993n);
  await c.submit("b", "m", "42");
  await c.submit("b", "m", "-1.5");
  await c.submit("b", "m", "inf");
  await c.submit("b", "m", "-inf");
  await c.submitMany("b", [{ member: "m", score: "7" }]);
  await c.patchBoard("b", { keep_archives: 8, min_score: "-inf" }, { confirmRerank: true });
  const s: ScoreInput = Infinity;
  void s;
}

export async function refused(): Promise<void> {
  // @ts-expect-error a string that holds no number is not a score
  await c.submit("b", "m", "abc");
  // @ts-expect-error nor an empty one
  await c.submit("b", "m", "");
  // @ts-expect-error nor in a batch
  await c.submitMany("b", [{ member: "m", score: "ten" }]);
  // @ts-expect-error a patch names config fields only
  await c.patchBoard("b", { colour: "red" });
}
