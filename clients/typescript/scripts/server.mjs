// Starts a real `podium serve` (Node only; used by the tests and the type generator).
// The binary is $PODIUM_BIN, else target/release/podium under the repository root.
import { spawn } from "node:child_process";
import { closeSync, existsSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const LISTEN = /^podium: http listening on (\S+):(\d+)\s*$/;

export function podiumBin() {
  const p = process.env.PODIUM_BIN || join(REPO_ROOT, "target", "release", "podium");
  if (!existsSync(p)) throw new Error(`podium binary not found at ${p}: build it or set PODIUM_BIN`);
  return p;
}

/**
 * One `podium serve` on a data dir; start() again after kill() restarts it on the same port.
 * `backend` (default $PODIUM_TEST_BACKEND, else the embedded store) is its --backend.
 */
export class Server {
  constructor({ dataDir, port = 0, apiKeys = [], backend = process.env.PODIUM_TEST_BACKEND } = {}) {
    this.backend = backend;
    // A temporary data dir of its own is removed by stop().
    this.ownDir = dataDir ? null : mkdtempSync(join(tmpdir(), "podium-ts-"));
    this.dataDir = dataDir ?? join(this.ownDir, "data");
    this.port = port;
    this.apiKeys = apiKeys;
    this.proc = null;
    this.url = "";
  }

  async start(timeoutMs = 20000) {
    const args = ["serve", "--data-dir", this.dataDir, "--http", `127.0.0.1:${this.port}`,
      "--rpc", "off", "--resp", "off", "--log-level", "warn"];
    if (this.backend) args.push("--backend", this.backend);
    const env = { ...process.env };
    delete env.PODIUM_API_KEYS;
    if (this.apiKeys.length) env.PODIUM_API_KEYS = this.apiKeys.join(","); // kept out of `ps`
    const log = openSync(this.dataDir + ".log", "a");
    const proc = spawn(podiumBin(), args, { stdio: ["ignore", "pipe", log], env });
    closeSync(log);
    this.proc = proc;
    const exited = new Promise((res) => proc.once("exit", (code, sig) => res({ code, sig })));
    this.exited = exited;
    const rl = createInterface({ input: proc.stdout });
    const listening = new Promise((res) => {
      rl.on("line", (line) => {
        const m = LISTEN.exec(line);
        if (m) res({ host: m[1], port: Number(m[2]) });
      });
    });
    let timer;
    const timeout = new Promise((_, rej) => {
      timer = setTimeout(() => rej(new Error("podium serve did not say it was listening")), timeoutMs);
    });
    try {
      const r = await Promise.race([listening, timeout,
        exited.then((e) => { throw new Error(`podium serve exited: ${JSON.stringify(e)}`); })]);
      this.port = r.port;
      this.url = `http://${r.host}:${r.port}`;
      return this;
    } catch (e) {
      await this.kill();
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  /** kill -9, as a crash. */
  async kill() {
    if (this.proc && this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill("SIGKILL");
    }
    if (this.exited) await this.exited;
  }

  async stop() {
    if (this.proc && this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill("SIGTERM");
      const t = setTimeout(() => this.proc.kill("SIGKILL"), 10000);
      await this.exited;
      clearTimeout(t);
    }
    if (this.ownDir) rmSync(this.ownDir, { recursive: true, force: true });
  }
}
