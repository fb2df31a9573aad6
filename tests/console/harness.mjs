// What the console test runs besides the browser: the podium binary (and a
// redis-server for the Redis backend) on free ports, an HTTP client with a
// key, and the development server that serves a console directory with the
// production CSP in front of podium. Every process started here is ended by
// stopAll(), which the test calls even when a step fails.

import { spawn, spawnSync } from "node:child_process";
import { createServer as netServer } from "node:net";
import http from "node:http";
import fs from "node:fs";
import path from "node:path";

export const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const children = new Set();
const servers = new Set();

export function onPath(cmd) {
  return spawnSync("sh", ["-c", `command -v ${cmd}`], { encoding: "utf8" }).status === 0;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = netServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function track(child, name) {
  children.add(child);
  let stderr = "";
  child.stderr.on("data", (d) => { stderr = (stderr + d).slice(-4000); });
  child.once("exit", () => children.delete(child));
  child.lastStderr = () => `${name} stderr (last lines):\n${stderr}`;
  return child;
}

/** Starts podium; resolves with its HTTP address once it says it listens. */
export async function startPodium(bin, { dataDir, keys, backend, port }) {
  port = port || (await freePort());
  const args = ["serve", "--data-dir", dataDir, "--http", `127.0.0.1:${port}`, "--rpc", "off", "--resp", "off",
    "--log-level", "warn"];
  for (const k of keys) args.push("--api-key", k);
  if (backend) args.push("--backend", backend);
  const child = track(spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] }), "podium");
  const addr = await new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error("podium did not start in 30 s\n" + child.lastStderr())), 30000);
    child.stdout.on("data", (d) => {
      out += d;
      const m = /podium: http listening on (\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`podium exited with ${code} before listening\n` + child.lastStderr()));
    });
  });
  return { addr, child, stop: (signal) => stop(child, signal) };
}

function stop(c, signal = "SIGTERM") {
  return new Promise((resolve) => {
    if (c.exitCode !== null || c.signalCode !== null) return resolve();
    const hard = setTimeout(() => c.kill("SIGKILL"), 5000);
    c.once("exit", () => {
      clearTimeout(hard);
      resolve();
    });
    c.kill(signal);
  });
}

export async function startRedis(dir) {
  const port = await freePort();
  const child = track(spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir],
    { stdio: ["ignore", "pipe", "pipe"] }), "redis-server");
  await new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error("redis-server did not start in 15 s")), 15000);
    child.stdout.on("data", (d) => {
      out += d;
      if (/Ready to accept connections/.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once("exit", (code) => reject(new Error(`redis-server exited with ${code}\n${out}`)));
  });
  return { url: `redis://127.0.0.1:${port}`, child };
}

const TYPES = { ".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8",
  ".png": "image/png", ".svg": "image/svg+xml" };

/**
 * The development server: the console directory at /console/ with the CSP
 * header, everything else proxied to podium (streams included), so the
 * console's files can change without a new binary.
 */
export async function startDevServer(dir, upstream) {
  const [uhost, uport] = upstream.split(":");
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    if (url.pathname === "/console") {
      res.writeHead(308, { Location: "/console/" });
      return res.end();
    }
    if (url.pathname.startsWith("/console/")) {
      const name = url.pathname.slice("/console/".length) || "index.html";
      const file = path.join(dir, name);
      if (name.includes("/") || name.startsWith(".") || !fs.existsSync(file)) {
        res.writeHead(404, { "Content-Type": "application/json" });
        return res.end(JSON.stringify({ error: { code: "not_found", message: `no console file ${name}` } }));
      }
      res.writeHead(200, { "Content-Type": TYPES[path.extname(name)] || "application/octet-stream",
        "Content-Security-Policy": CSP, "Cache-Control": "no-store" });
      return res.end(fs.readFileSync(file));
    }
    const up = http.request({ host: uhost, port: +uport, method: req.method, path: req.url, headers: req.headers }, (ur) => {
      res.writeHead(ur.statusCode, ur.headers);
      ur.pipe(res);
      // An upstream that dies mid-stream must drop the browser's stream too, as podium's own would.
      ur.on("aborted", () => res.destroy());
      ur.on("error", () => res.destroy());
    });
    up.on("error", (e) => {
      res.writeHead(502);
      res.end(String(e));
    });
    req.pipe(up);
    res.on("close", () => up.destroy());
  });
  servers.add(server);
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `127.0.0.1:${server.address().port}`;
}

/** A JSON client for seeding and checking, with one key. */
export function api(addr, key) {
  return async function call(method, p, body) {
    const res = await fetch(`http://${addr}${p}`, {
      method,
      headers: { Authorization: `Bearer ${key}`, ...(body !== undefined ? { "Content-Type": "application/json" } : {}) },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    const json = text ? JSON.parse(text) : null;
    if (!res.ok) {
      const err = new Error(`${method} ${p}: ${res.status} ${text}`);
      err.status = res.status;
      err.body = json;
      throw err;
    }
    return json;
  };
}

export async function stopAll() {
  for (const s of servers) {
    s.closeAllConnections?.();
    s.close();
  }
  servers.clear();
  await Promise.all([...children].map((c) => stop(c)));
}

// A test runner that dies before its after() hook must not leave servers behind.
process.once("exit", () => {
  for (const c of children) c.kill("SIGKILL");
});
