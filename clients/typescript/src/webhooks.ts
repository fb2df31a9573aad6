/**
 * Receiving a board's webhook deliveries (docs/spec.md, Webhooks).
 *
 * A delivery is `POST` with `Podium-Signature: sha256=HEX`, the HMAC-SHA256
 * of the exact body bytes under the hook's secret, and a JSON body
 * `{"board", "hook", "events": [...]}`. Check the signature on the raw bytes
 * before parsing them; deliveries are at least once, so deduplicate by event id.
 *
 * Uses Web Crypto (`globalThis.crypto.subtle`: browsers, Node 19+); on Node 18
 * pass `{ subtle: (await import("node:crypto")).webcrypto.subtle }`.
 */
import { decode, type PodiumEvent } from "./index.js";

export const SIGNATURE_HEADER = "Podium-Signature";

export interface CryptoOptions {
  subtle?: SubtleCrypto;
}

export interface WebhookDelivery {
  board: string;
  hook: string;
  events: PodiumEvent[];
}

type Bytes = Uint8Array | ArrayBuffer | string;

const enc = new TextEncoder();
const bytes = (b: Bytes): Uint8Array => (typeof b === "string" ? enc.encode(b) : b instanceof Uint8Array ? b : new Uint8Array(b));

function subtleOf(options: CryptoOptions): SubtleCrypto {
  const s = options.subtle ?? globalThis.crypto?.subtle;
  if (!s) throw new TypeError("no Web Crypto here: pass { subtle } (Node 18: webcrypto.subtle of node:crypto)");
  return s;
}

/** The `Podium-Signature` value of a body under a secret. */
export async function sign(body: Bytes, secret: Bytes, options: CryptoOptions = {}): Promise<string> {
  const subtle = subtleOf(options);
  const key = await subtle.importKey("raw", bytes(secret) as BufferSource, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await subtle.sign("HMAC", key, bytes(body) as BufferSource));
  return "sha256=" + Array.from(mac, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Whether `signature` (the header's value) signs `body` under `secret`; compared in constant time. */
export async function verifySignature(body: Bytes, secret: Bytes, signature: string | null | undefined,
  options: CryptoOptions = {}): Promise<boolean> {
  if (!signature) return false;
  const want = await sign(body, secret, options);
  const got = signature.trim();
  let diff = want.length ^ got.length;
  for (let i = 0; i < want.length; i++) diff |= want.charCodeAt(i) ^ (got.charCodeAt(i) || 0);
  return diff === 0;
}

/** A delivery's events; with `secret`, a bad or missing signature throws. */
export async function parseDelivery(body: Bytes, secret?: Bytes, signature?: string | null,
  options: CryptoOptions = {}): Promise<WebhookDelivery> {
  if (secret !== undefined && !(await verifySignature(body, secret, signature, options))) {
    throw new Error("bad webhook signature");
  }
  const d = JSON.parse(new TextDecoder().decode(bytes(body))) as { board: string; hook: string; events: unknown[] };
  return { board: String(d.board), hook: String(d.hook), events: d.events.map((e) => decode(e) as PodiumEvent) };
}
