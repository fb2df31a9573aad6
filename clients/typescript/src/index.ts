/**
 * Client for the podium leaderboard server's HTTP/JSON API.
 *
 * Uses only the global `fetch`, `ReadableStream`, `TextEncoder`/`TextDecoder`
 * and `AbortController`: it runs unchanged in Node >= 18 and browsers.
 */
import type { components, paths } from "./openapi.js";

export type { components, paths } from "./openapi.js";

type Schemas = components["schemas"];

// --- scores ---------------------------------------------------------------------

/** A sort key's value as read back: a `bigint` when JSON carried it as a string (beyond 2^53). */
export type KeyValue = number | bigint;
/** Sort key values by key name. */
export type Scores = Record<string, KeyValue>;
/** A score or key value as a string: a number's text (`"42"`, `"1.5e3"`) or an infinity. */
export type ScoreString = `${number}` | "inf" | "+inf" | "-inf";
/**
 * A score or key value on input: a number (`Infinity` allowed), a `bigint` (sent exactly), or a
 * number's text (`"42"`, `"-inf"`); a string that holds no number does not compile.
 */
export type ScoreInput = number | bigint | ScoreString;
/** A `min`/`max` bound: as a score, or the server's syntax (`"(10"` exclusive, `"-inf"`, `"+inf"`); see `exclusive()`. */
export type Bound = number | bigint | string;

const SCORE_KEYS = new Set(["score", "previous", "previous_score"]);
const SCORES_KEYS = new Set(["scores", "previous_scores"]);
const OPAQUE_KEYS = new Set(["data", "config"]);
const INT_RE = /^[+-]?\d+$/;

/** A response with its scores decoded: `"inf"` as `Infinity`, key values beyond 2^53 as `bigint`. */
export type Decoded<T> = T extends readonly (infer U)[]
  ? Decoded<U>[]
  : T extends object
    ? {
        [K in keyof T]: K extends "scores" | "previous_scores"
          ? Scores
          : K extends "score" | "previous" | "previous_score"
            ? null extends T[K] ? number | null : number
            : K extends "data"
              ? Record<string, unknown>
              : K extends "config"
                ? T[K]
                : Decoded<T[K]>;
      }
    : T;

function decodeScore(v: unknown): unknown {
  if (v === "inf" || v === "+inf") return Infinity;
  if (v === "-inf") return -Infinity;
  if (typeof v === "string") return Number(v);
  return v;
}

function decodeKeyValue(v: unknown): KeyValue {
  if (typeof v === "string") {
    if (INT_RE.test(v)) {
      const b = BigInt(v);
      return b >= BigInt(Number.MIN_SAFE_INTEGER) && b <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(b) : b;
    }
    return decodeScore(v) as number;
  }
  return v as number;
}

/** Decodes a parsed JSON answer in place of its scores (member `data` and board `config` are left as sent). */
export function decode<T>(value: T): Decoded<T> {
  return walk(value) as Decoded<T>;
}

function walk(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(walk);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (OPAQUE_KEYS.has(k)) out[k] = v;
    else if (SCORE_KEYS.has(k)) out[k] = decodeScore(v);
    else if (SCORES_KEYS.has(k) && v !== null && typeof v === "object") {
      const s: Scores = {};
      for (const [kk, vv] of Object.entries(v as Record<string, unknown>)) s[kk] = decodeKeyValue(vv);
      out[k] = s;
    } else out[k] = walk(v);
  }
  return out;
}

/** A score or key value as JSON: `bigint` as a string (exact), infinities as `"inf"`/`"-inf"`. */
export function encodeScore(v: ScoreInput): number | string {
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "number") {
    if (Number.isNaN(v)) throw new TypeError("a score cannot be NaN");
    if (v === Infinity) return "inf";
    if (v === -Infinity) return "-inf";
    return v;
  }
  if (typeof v === "string") return v;
  throw new TypeError(`a score is a number or a bigint, not ${typeof v}`);
}

export function encodeScores(scores: Record<string, ScoreInput>): Record<string, number | string> {
  const out: Record<string, number | string> = {};
  for (const [k, v] of Object.entries(scores)) out[k] = encodeScore(v);
  return out;
}

function encodeBound(v: Bound | undefined | null, dflt: string): string {
  if (v === undefined || v === null) return dflt;
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "number") {
    if (Number.isNaN(v)) throw new TypeError("a bound cannot be NaN");
    if (v === Infinity) return "+inf";
    if (v === -Infinity) return "-inf";
    return String(v);
  }
  return v;
}

/**
 * The places `start`..`stop` (inclusive) as the HTTP API counts them; a stop before the start is 0
 * places, which the server refuses as it refuses such a range.
 */
function places(start: number, stop: number): number {
  return Math.max(stop - start + 1, 0);
}

/** An exclusive score bound, e.g. `rangeByScore(b, { min: exclusive(10) })`. */
export function exclusive(v: ScoreInput): string {
  return "(" + encodeBound(v, "");
}

/** A config or patch as the server takes it: bounds encoded, `confirm_rerank` when asked. */
function configBody(config: BoardConfig | BoardPatch, options: ConfigOptions): Record<string, unknown> {
  const body: Record<string, unknown> = { ...config };
  for (const k of ["min_score", "max_score"] as const) {
    const v = config[k];
    if (v !== undefined && v !== null) body[k] = encodeScore(v);
  }
  if (options.confirmRerank) body.confirm_rerank = true;
  return body;
}

// --- types ----------------------------------------------------------------------

export type ErrorCode = Schemas["ErrorBody"]["code"] | "transport" | "timeout";
export type BoardConfig = Omit<Schemas["BoardConfig"], "archive_of" | "archive_seq" | "min_score" | "max_score" | "confirm_rerank"> & {
  min_score?: ScoreInput | null;
  max_score?: ScoreInput | null;
};
/** The fields of a board's config to change (`null`: back to the default); see `patchBoard`. */
export type BoardPatch = Omit<Schemas["BoardPatch"], "archive_of" | "archive_seq" | "min_score" | "max_score" | "confirm_rerank"> & {
  min_score?: ScoreInput | null;
  max_score?: ScoreInput | null;
};
/** `confirmRerank`: allow a change that re-ranks the board (order, ranking, tiebreak, sort). */
export interface ConfigOptions {
  confirmRerank?: boolean;
}
export type BoardInfo = Decoded<Schemas["BoardOut"]>;
export type BoardSummary = Schemas["BoardsOut"]["boards"][number];
export type Entry = Decoded<Schemas["EntryOut"]>;
export type EntryInfo = Decoded<Schemas["EntryInfoOut"]>;
export type Page = Decoded<Schemas["TopOut"]>;
export type Around = Decoded<Schemas["AroundOut"]>;
export type Range = Decoded<Schemas["RangeOut"]>;
export type Rank = Decoded<Schemas["RankOut"]>;
export type Ranks = Decoded<Schemas["RanksOut"]>;
export type SearchResult = Decoded<Schemas["SearchOut"]>;
export type SubmitResult = Decoded<Schemas["SubmitOut"]>;
export type ResetResult = Schemas["ResetOut"];
export type ResortStatus = Schemas["ResortOut"];
export type ImportResult = Schemas["ImportOut"];
export type Health = paths["/healthz"]["get"]["responses"][200]["content"]["application/json"];
export type KeyInfo = paths["/v1/key"]["get"]["responses"][200]["content"]["application/json"];

/** One entry of a `submitMany` that the server refused; the others still apply. */
export interface SubmitFailure {
  member: string;
  error: PodiumError;
}

/** Whether a `submitMany` result is a refusal. */
export function isSubmitFailure(r: SubmitResult | SubmitFailure): r is SubmitFailure {
  return (r as SubmitFailure).error instanceof PodiumError;
}

/** What a submission may say besides its member and score. */
export interface SubmitOptions {
  /** On a board with sort keys: each key's value (`bigint` for exact int64). */
  scores?: Record<string, ScoreInput>;
  name?: string;
  data?: Record<string, unknown> | null;
  op?: "set" | "best" | "incr";
  only?: "new" | "existing";
  cond?: "gt" | "lt";
}

/** One record of `submitMany` / `importRecords`. */
export interface Submission extends SubmitOptions {
  member: string;
  score?: ScoreInput;
}

/** A watched member's state in a snapshot: `rank` and `score` null when it is not on the board. */
export interface MemberState {
  member: string;
  rank?: number | null;
  score?: number | null;
  scores?: Scores;
  name?: string;
}

/** A live event (docs/spec.md, Live events); the fields of other types are absent. */
export interface PodiumEvent {
  id: string;
  type: "change" | "enter" | "leave" | "move" | "member" | "reset" | "config" | "created" | "deleted"
    | "snapshot" | "reload" | "lagged" | (string & {});
  board: string;
  member?: string;
  rank?: number | null;
  score?: number | null;
  scores?: Scores;
  name?: string;
  previous_rank?: number | null;
  previous_score?: number | null;
  previous_scores?: Scores;
  by?: string;
  removed?: boolean;
  archive?: string;
  config?: Record<string, unknown>;
  exists?: boolean;
  size?: number;
  top?: Entry[];
  members?: MemberState[];
  after?: string;
  resume?: string;
}

// --- errors ---------------------------------------------------------------------

/** Every error of the server (`code`, `message`, `status`), a connection failure (`transport`) or a timeout. */
export class PodiumError extends Error {
  readonly code: ErrorCode;
  readonly status: number | undefined;
  /** On `rate_limited`: the seconds the server asked to wait. */
  readonly retryAfter: number | undefined;

  constructor(code: ErrorCode, message: string, status?: number, retryAfter?: number, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PodiumError";
    this.code = code;
    this.status = status;
    this.retryAfter = retryAfter;
  }
}

async function errorFromResponse(res: Response): Promise<PodiumError> {
  const text = await res.text().catch(() => "");
  let code: ErrorCode = "internal";
  let message = text || res.statusText;
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string } };
    if (body.error?.code) {
      code = body.error.code as ErrorCode;
      message = body.error.message ?? "";
    }
  } catch {
    // not JSON: a proxy's page
  }
  const ra = res.headers.get("retry-after");
  return new PodiumError(code, message, res.status, ra !== null && ra !== "" ? Number(ra) : undefined);
}

// --- the client -----------------------------------------------------------------

export interface ClientOptions {
  /** Default `http://127.0.0.1:7070`. */
  baseUrl?: string;
  /** Sent as `Authorization: Bearer KEY`. */
  apiKey?: string;
  /** Per request, until the answer's headers (and body, except for streams). Default 10,000. */
  timeoutMs?: number;
  /** Retries of a read (GET) on a connection error or 502/503/504. Writes are never retried. Default 2. */
  retries?: number;
  /** First backoff between retries; doubles each time, with jitter. Default 100. */
  backoffMs?: number;
  /** Another `fetch` (tests, instrumentation). */
  fetch?: typeof fetch;
  /**
   * Send streamed imports as a streamed request body. Default: yes, except
   * in a browser, where the body is gathered first (in memory): browsers
   * stream a request body only over HTTP/2 and refuse it on HTTP/1.1
   * ("Failed to fetch"). Set it in a browser talking HTTP/2 to podium.
   */
  streamUploads?: boolean;
}

/** A page or a worker of a browser (where `window` or `importScripts` exists). */
function inBrowser(): boolean {
  const g = globalThis as { window?: unknown; importScripts?: unknown };
  return typeof g.window !== "undefined" || typeof g.importScripts === "function";
}

type Query = Record<string, string | number | boolean | string[] | undefined>;

interface RequestInit2 {
  query?: Query;
  json?: unknown;
  body?: BodyInit | ReadableStream<Uint8Array>;
  contentType?: string;
  headers?: Record<string, string>;
  /** The body is read by the caller: the timeout stops at the headers. */
  stream?: boolean;
  signal?: AbortSignal;
}

const RETRY_STATUS = new Set([502, 503, 504]);

function seg(s: string): string {
  return encodeURIComponent(s);
}

function boardPath(board: string, ...rest: string[]): string {
  return "/v1/boards/" + seg(board) + rest.map((r) => "/" + r).join("");
}

/**
 * A member's route (`members`, `rank`, `percentile`, `around`): the member as
 * a path segment, or in the query for `.` and `..`, dot segments that every
 * URL parser drops from a path, percent-encoded too (the server answers both
 * forms alike; the path keeps other URLs readable).
 */
function memberRoute(board: string, route: string, member: string, query: Query = {}): [string, Query] {
  if (member === "." || member === "..") return [boardPath(board, route), { ...query, member }];
  return [boardPath(board, route, seg(member)), query];
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

function backoff(base: number, attempt: number, max = 5000): number {
  const d = Math.min(max, base * 2 ** attempt);
  return d / 2 + Math.random() * (d / 2);
}

function isAbort(e: unknown): boolean {
  return typeof e === "object" && e !== null && (e as { name?: string }).name === "AbortError";
}

function submissionJson(s: Submission): Record<string, unknown> {
  const out: Record<string, unknown> = { ...s };
  if (s.score !== undefined && s.score !== null) out.score = encodeScore(s.score);
  if (s.scores) out.scores = encodeScores(s.scores);
  return out;
}

/** The iterator of a sync or async iterable. */
function iterate<T>(xs: Iterable<T> | AsyncIterable<T>): AsyncIterator<T> | Iterator<T> {
  return Symbol.asyncIterator in xs
    ? (xs as AsyncIterable<T>)[Symbol.asyncIterator]()
    : (xs as Iterable<T>)[Symbol.iterator]();
}

/** Bytes of NDJSON a streamed import sends at a time (about). */
const CHUNK = 16384;

/**
 * Records as an NDJSON request body, made as it is sent, in bounded memory
 * whatever the number of records (a 1M-entry import and export stay under
 * 100 MB of peak RSS in Node: test/bulk.test.mjs):
 * - the stream is pulled: a chunk is made only when fetch asks for one (one
 *   chunk queued ahead at most), so the records are never drained ahead of
 *   the socket;
 * - lines go in chunks of about 16 KiB: a chunk a record would cost a write
 *   (and a chunk header) per line; 64 KiB peaked ~2 MB higher, no faster;
 * - each line is encoded (`encodeInto`) into one reused scratch buffer,
 *   outside the JavaScript heap, and a chunk is sent as an exact-size copy
 *   of it. Building the chunk as a string keeps it (and its pieces) alive
 *   across the garbage collector's young-generation passes, and what
 *   survives those makes V8 enlarge its young generation (32 MB resident).
 *   A fresh 64 KiB buffer a chunk, freed only when the collector gets to it,
 *   left the C allocator holding ~26 MB it never gave back (measured with
 *   malloc_trim). The scratch buffer itself is never sent: fetch may still
 *   hold a chunk, queued for the socket, when the next one is made;
 * - a sync iterable fills a chunk without an `await` per record.
 */
function ndjsonBody(records: Iterable<Submission> | AsyncIterable<Submission>): ReadableStream<Uint8Array> {
  const isAsync = Symbol.asyncIterator in records;
  const it = iterate(records);
  const enc = new TextEncoder();
  let scratch = new Uint8Array(CHUNK);
  let len = 0;
  const take = (): Uint8Array => {
    const chunk = scratch.slice(0, len);
    len = 0;
    return chunk;
  };
  return new ReadableStream<Uint8Array>({
    async pull(ctl) {
      for (;;) {
        const r = isAsync ? await it.next() : (it as Iterator<Submission>).next();
        if (r.done) {
          if (len) ctl.enqueue(take());
          ctl.close();
          return;
        }
        const line = JSON.stringify(submissionJson(r.value)) + "\n";
        const { read, written } = enc.encodeInto(line, scratch.subarray(len));
        if (read === line.length) {
          len += written;
          if (len < CHUNK - 256) continue;
          ctl.enqueue(take());
          return;
        }
        // The line does not fit: the chunk so far goes, the line starts the
        // next (in a scratch buffer large enough: 3 bytes a UTF-16 unit).
        const full = len ? take() : null;
        if (scratch.length < line.length * 3) scratch = new Uint8Array(line.length * 3);
        len = enc.encodeInto(line, scratch).written;
        if (full) {
          ctl.enqueue(full);
          return;
        }
      }
    },
    async cancel() {
      await it.return?.();
    },
  }, { highWaterMark: 1 });
}

/**
 * Lines of a byte stream (without their line endings). The lines are found
 * in the bytes and each is decoded alone: decoding a whole chunk into one
 * string (and slicing lines out of it, which keeps it alive) puts 64 KiB
 * strings on the heap that outlive the garbage collector's young-generation
 * passes, and what survives those makes V8 enlarge its young generation (to
 * 32 MB of resident memory on a long export). The chunk's bytes stay
 * outside the JavaScript heap.
 */
async function* lines(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  const dec = new TextDecoder();
  // The bytes of an unfinished line, from the chunks before.
  let rest: Uint8Array | null = null;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      let start = 0;
      let i: number;
      while ((i = value.indexOf(10, start)) >= 0) {
        let line = value.subarray(start, i);
        start = i + 1;
        if (rest) {
          line = concat(rest, line);
          rest = null;
        }
        const end = line.length && line[line.length - 1] === 13 ? line.length - 1 : line.length;
        yield dec.decode(line.subarray(0, end));
      }
      if (start < value.length) rest = rest ? concat(rest, value.subarray(start)) : value.slice(start);
    }
    if (rest) yield dec.decode(rest);
  } finally {
    reader.cancel().catch(() => {});
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

export class PodiumClient {
  readonly baseUrl: string;
  readonly apiKey: string | undefined;
  readonly timeoutMs: number;
  readonly retries: number;
  readonly backoffMs: number;
  readonly streamUploads: boolean;
  private readonly fetchFn: typeof fetch;

  constructor(options: ClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? "http://127.0.0.1:7070").replace(/\/+$/, "");
    this.apiKey = options.apiKey;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.retries = options.retries ?? 2;
    this.backoffMs = options.backoffMs ?? 100;
    this.streamUploads = options.streamUploads ?? !inBrowser();
    this.fetchFn = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  private url(path: string, query?: Query): string {
    let u = this.baseUrl + path;
    if (query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) {
        if (v === undefined) continue;
        if (Array.isArray(v)) for (const x of v) q.append(k, x);
        else q.append(k, String(v));
      }
      const s = q.toString();
      if (s) u += "?" + s;
    }
    return u;
  }

  /** One request; its answer when its status is a success, else a `PodiumError`. */
  private async send(method: string, path: string, init: RequestInit2 = {}): Promise<Response> {
    const headers: Record<string, string> = { ...init.headers };
    if (this.apiKey) headers["Authorization"] = `Bearer ${this.apiKey}`;
    let body: unknown = init.body;
    if (body instanceof ReadableStream && !this.streamUploads) body = await new Response(body).blob();
    if (init.json !== undefined) {
      body = JSON.stringify(init.json);
      headers["Content-Type"] = "application/json";
    } else if (init.contentType) headers["Content-Type"] = init.contentType;
    const retryable = method === "GET" && !(body instanceof ReadableStream);
    for (let attempt = 0; ; attempt++) {
      const ctl = new AbortController();
      const onAbort = () => ctl.abort();
      init.signal?.addEventListener("abort", onAbort, { once: true });
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        ctl.abort();
      }, this.timeoutMs);
      let res: Response;
      try {
        const req: RequestInit & { duplex?: string } = { method, headers, signal: ctl.signal, body: body as BodyInit };
        if (body instanceof ReadableStream) {
          req.duplex = "half";
          // No redirects for a streamed body. To be able to follow one, fetch
          // clones the request, and the clone tees the body's stream: the
          // branch kept for the redirect is never read, so it holds every
          // chunk sent, the whole upload (Node's fetch: a 1M-entry import
          // held its 40 MB body; undici issue 4058). A stream body cannot be
          // sent again anyway, so a redirect could only fail (or, on 303,
          // drop the upload): "error" says so and skips the clone.
          req.redirect = "error";
        }
        res = await this.fetchFn(this.url(path, init.query), req);
      } catch (e) {
        clearTimeout(timer);
        init.signal?.removeEventListener("abort", onAbort);
        if (init.signal?.aborted) throw e;
        const err = timedOut
          ? new PodiumError("timeout", `${method} ${path}: no answer in ${this.timeoutMs} ms`, undefined, undefined, { cause: e })
          : new PodiumError("transport", `${method} ${path}: ${(e as Error).message}`, undefined, undefined, { cause: e });
        if (retryable && attempt < this.retries) {
          await sleep(backoff(this.backoffMs, attempt), init.signal);
          continue;
        }
        throw err;
      }
      if (!res.ok) {
        const err = await errorFromResponse(res);
        clearTimeout(timer);
        init.signal?.removeEventListener("abort", onAbort);
        if (retryable && RETRY_STATUS.has(res.status) && attempt < this.retries) {
          await sleep(backoff(this.backoffMs, attempt), init.signal);
          continue;
        }
        throw err;
      }
      if (init.stream) {
        clearTimeout(timer);
        return res;
      }
      // Read the body under the same timer, then hand it back whole.
      try {
        const text = await res.text();
        return new Response(text, { status: res.status, headers: res.headers });
      } catch (e) {
        throw new PodiumError(timedOut ? "timeout" : "transport", `${method} ${path}: ${(e as Error).message}`,
          undefined, undefined, { cause: e });
      } finally {
        clearTimeout(timer);
        init.signal?.removeEventListener("abort", onAbort);
      }
    }
  }

  private async json<T>(method: string, path: string, init: RequestInit2 = {}): Promise<T> {
    const res = await this.send(method, path, init);
    return (await res.json()) as T;
  }

  // --- server -------------------------------------------------------------------

  /** `GET /healthz`. */
  healthz(): Promise<Health> {
    return this.json("GET", "/healthz");
  }

  /** `GET /readyz`: `{status: "ready"}` while the server serves; a 503 `not_ready` while it recovers or stops. */
  readyz(): Promise<{ status: "ready" }> {
    return this.json("GET", "/readyz");
  }

  /**
   * `GET /v1/backup` (an admin key): a consistent copy of the server's data directory as a tar
   * stream — the files, then `MANIFEST.json` with their sizes and SHA-256 — in chunks, for a file
   * or an upload. `podium restore` checks and restores it (unpacked into a directory).
   */
  async *backup(options: { signal?: AbortSignal } = {}): AsyncGenerator<Uint8Array> {
    const res = await this.send("GET", "/v1/backup", { stream: true, signal: options.signal });
    if (!res.body) return;
    const reader = res.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        yield value;
      }
    } finally {
      reader.releaseLock();
    }
  }

  /** `GET /v1/key`: whether keys are configured and this client's key's scope
   * (`admin` on a server without keys). */
  keyInfo(): Promise<KeyInfo> {
    return this.json("GET", "/v1/key");
  }

  /** The server's OpenAPI document. */
  openapi(): Promise<Record<string, unknown>> {
    return this.json("GET", "/openapi.json");
  }

  /** The Prometheus metrics text. */
  async metrics(): Promise<string> {
    return (await this.send("GET", "/metrics")).text();
  }

  // --- boards -------------------------------------------------------------------

  async boards(): Promise<BoardSummary[]> {
    return (await this.json<Schemas["BoardsOut"]>("GET", "/v1/boards")).boards;
  }

  /** The archives of a board (made by `reset` or its schedule), oldest first as listed. */
  async archives(board: string): Promise<BoardSummary[]> {
    return (await this.boards()).filter((b) => b.archive_of === board);
  }

  async boardInfo(board: string): Promise<BoardInfo> {
    return decode(await this.json<Schemas["BoardOut"]>("GET", boardPath(board)));
  }

  /**
   * Creates a board, or replaces its whole config (`created` says which): a field left out takes
   * its default, on an existing board too (`patchBoard` keeps the fields it does not name). A change
   * that re-ranks an existing board fails with `confirm_rerank_required` unless `confirmRerank`.
   */
  async putBoard(board: string, config: BoardConfig = {}, options: ConfigOptions = {}): Promise<BoardInfo> {
    return decode(await this.json<Schemas["BoardOut"]>("PUT", boardPath(board), { json: configBody(config, options) }));
  }

  /**
   * Changes the config fields named and keeps the others (HTTP PATCH, a JSON merge patch; `null`
   * puts a field back to its default). A change that re-ranks the board fails with
   * `confirm_rerank_required` unless `confirmRerank`; a missing board is `board_not_found`.
   */
  async patchBoard(board: string, patch: BoardPatch, options: ConfigOptions = {}): Promise<BoardInfo> {
    if (Object.keys(patch).length === 0) throw new TypeError("patchBoard: nothing to change (name the config fields to change)");
    return decode(await this.json<Schemas["BoardOut"]>("PATCH", boardPath(board), { json: configBody(patch, options) }));
  }

  async deleteBoard(board: string): Promise<boolean> {
    return (await this.json<Schemas["DeletedOut"]>("DELETE", boardPath(board))).deleted;
  }

  /** Archives the board now and empties it. */
  reset(board: string): Promise<ResetResult> {
    return this.json("POST", boardPath(board, "reset"));
  }

  /** Replaces `board` with the union of `sources`; answers its member count. */
  merge(board: string, sources: string[], options: { weights?: number[]; aggregate?: "sum" | "min" | "max" } = {}): Promise<number> {
    return this.combine("merge", board, sources, options);
  }

  /** Replaces `board` with the intersection of `sources`; answers its member count. */
  intersect(board: string, sources: string[], options: { weights?: number[]; aggregate?: "sum" | "min" | "max" } = {}): Promise<number> {
    return this.combine("intersect", board, sources, options);
  }

  private async combine(kind: string, board: string, sources: string[],
    options: { weights?: number[]; aggregate?: "sum" | "min" | "max" }): Promise<number> {
    const body: Schemas["CombineIn"] = { sources: [...sources] };
    if (options.weights) body.weights = [...options.weights];
    if (options.aggregate) body.aggregate = options.aggregate;
    return (await this.json<Schemas["CombineOut"]>("POST", boardPath(board, kind), { json: body })).members;
  }

  resortStatus(board: string): Promise<ResortStatus> {
    return this.json("GET", boardPath(board, "resort"));
  }

  // --- writes -------------------------------------------------------------------

  /** Submits one member's score (or, with `options.scores`, its sort keys' values). */
  async submit(board: string, member: string, score?: ScoreInput | null, options: SubmitOptions = {}): Promise<SubmitResult> {
    const s: Submission = { member, ...options };
    if (score !== undefined && score !== null) s.score = score;
    if (s.score === undefined && s.scores === undefined) throw new TypeError("submit needs a score or scores");
    return decode(await this.json<Schemas["SubmitOut"]>("POST", boardPath(board, "scores"), { json: submissionJson(s) }));
  }

  /**
   * Submits many entries in one request. `options` (op, only, cond) apply to
   * every entry that does not say its own. Each result is a `SubmitResult`
   * or, for an entry the server refused, a `SubmitFailure`.
   */
  async submitMany(board: string, entries: Iterable<Submission>,
    options: Pick<SubmitOptions, "op" | "only" | "cond"> = {}): Promise<(SubmitResult | SubmitFailure)[]> {
    const body = Array.from(entries, (e) => submissionJson({ ...options, ...e }));
    const out = await this.json<Schemas["SubmitBatchOut"]>("POST", boardPath(board, "scores"), { json: body });
    return out.results.map((r) => {
      if ("error" in r && r.error) {
        return { member: r.member, error: new PodiumError(r.error.code, r.error.message) } as SubmitFailure;
      }
      return decode(r as Schemas["SubmitOut"]);
    });
  }

  /** Removes members; answers how many were there. */
  async remove(board: string, members: string[]): Promise<number> {
    if (typeof members === "string") throw new TypeError("remove takes an array of members; use removeMember for one");
    return (await this.json<Schemas["RemovedOut"]>("POST", boardPath(board, "remove"), { json: { members: [...members] } })).removed;
  }

  async removeMember(board: string, member: string): Promise<number> {
    const [path, query] = memberRoute(board, "members", member);
    return (await this.json<Schemas["RemovedOut"]>("DELETE", path, { query })).removed;
  }

  /** Removes the places `start`..`stop` (1-based, inclusive). */
  async removeRangeByRank(board: string, start: number, stop: number): Promise<number> {
    return (await this.json<Schemas["RemovedOut"]>("DELETE", boardPath(board, "range", "rank"),
      { query: { start, count: places(start, stop) } })).removed;
  }

  async removeRangeByScore(board: string, min?: Bound | null, max?: Bound | null): Promise<number> {
    return (await this.json<Schemas["RemovedOut"]>("DELETE", boardPath(board, "range", "score"),
      { query: { min: encodeBound(min, "-inf"), max: encodeBound(max, "+inf") } })).removed;
  }

  /** Sets a member's data (null clears it) and, optionally, its name; answers whether it was found. */
  async setData(board: string, member: string, data: Record<string, unknown> | null | undefined,
    options: { name?: string } = {}): Promise<boolean> {
    const body: Schemas["SetDataIn"] = {};
    if (data !== undefined) body.data = data as Schemas["SetDataIn"]["data"];
    if (options.name !== undefined) body.name = options.name;
    const [path, query] = memberRoute(board, "members", member);
    return (await this.json<Schemas["SetDataOut"]>("PATCH", path, { query, json: body })).found;
  }

  /** Sets a member's display name ("" clears it); answers whether it was found. */
  setName(board: string, member: string, name: string): Promise<boolean> {
    return this.setData(board, member, undefined, { name });
  }

  // --- reads --------------------------------------------------------------------

  async top(board: string, options: { page?: number; pageSize?: number; withData?: boolean } = {}): Promise<Page> {
    return decode(await this.json<Schemas["TopOut"]>("GET", boardPath(board, "top"), {
      query: { page: options.page ?? 1, page_size: options.pageSize, with_data: options.withData ? "true" : undefined },
    }));
  }

  async rank(board: string, member: string): Promise<Rank> {
    const [path, query] = memberRoute(board, "rank", member);
    return decode(await this.json<Schemas["RankOut"]>("GET", path, { query }));
  }

  /** A member's score. */
  async score(board: string, member: string): Promise<number> {
    return (await this.rank(board, member)).score;
  }

  /** A member's rank, score, name, data, percentile and page. */
  async entry(board: string, member: string, options: { pageSize?: number } = {}): Promise<EntryInfo> {
    const [path, query] = memberRoute(board, "members", member, { page_size: options.pageSize });
    return decode(await this.json<Schemas["EntryInfoOut"]>("GET", path, { query }));
  }

  async around(board: string, member: string, options: { pageSize?: number; withData?: boolean } = {}): Promise<Around> {
    const [path, query] = memberRoute(board, "around", member,
      { page_size: options.pageSize, with_data: options.withData ? "true" : undefined });
    return decode(await this.json<Schemas["AroundOut"]>("GET", path, { query }));
  }

  async ranks(board: string, members: string[], options: { withData?: boolean } = {}): Promise<Ranks> {
    if (typeof members === "string") throw new TypeError("ranks takes an array of members");
    const body: Schemas["RanksIn"] = { members: [...members] };
    if (options.withData) body.with_data = true;
    return decode(await this.json<Schemas["RanksOut"]>("POST", boardPath(board, "ranks"), { json: body }));
  }

  /** Members with a score in [min, max] (all of them by default). */
  async count(board: string, options: { min?: Bound; max?: Bound } = {}): Promise<number> {
    return (await this.json<Schemas["CountOut"]>("GET", boardPath(board, "count"), {
      query: {
        min: options.min === undefined ? undefined : encodeBound(options.min, "-inf"),
        max: options.max === undefined ? undefined : encodeBound(options.max, "+inf"),
      },
    })).count;
  }

  /** The places `start`..`stop` (1-based, inclusive). */
  async rangeByRank(board: string, start: number, stop: number,
    options: { fromWorst?: boolean; withData?: boolean } = {}): Promise<Range> {
    return decode(await this.json<Schemas["RangeOut"]>("GET", boardPath(board, "range", "rank"), {
      query: {
        start, count: places(start, stop), from: options.fromWorst ? "worst" : undefined,
        with_data: options.withData ? "true" : undefined,
      },
    }));
  }

  async rangeByScore(board: string, options: {
    min?: Bound; max?: Bound; offset?: number; limit?: number; fromWorst?: boolean; withData?: boolean;
  } = {}): Promise<Range> {
    return decode(await this.json<Schemas["RangeOut"]>("GET", boardPath(board, "range", "score"), {
      query: {
        min: options.min === undefined ? undefined : encodeBound(options.min, "-inf"),
        max: options.max === undefined ? undefined : encodeBound(options.max, "+inf"),
        offset: options.offset, limit: options.limit,
        from: options.fromWorst ? "worst" : undefined,
        with_data: options.withData ? "true" : undefined,
      },
    }));
  }

  async percentile(board: string, member: string): Promise<number> {
    const [path, query] = memberRoute(board, "percentile", member);
    return (await this.json<Schemas["PercentileOut"]>("GET", path, { query })).percentile;
  }

  /** The entry at percentile `p` (0–100), or null on an empty board. */
  async scoreAtPercentile(board: string, p: number): Promise<Entry | null> {
    const out = await this.json<Schemas["ScoreAtOut"]>("GET", boardPath(board, "score_at_percentile"), { query: { p } });
    return out.entry ? decode(out.entry) : null;
  }

  /** Members whose id or name matches `q`. */
  async search(board: string, q: string, options: { limit?: number; offset?: number; withData?: boolean } = {}): Promise<SearchResult> {
    return decode(await this.json<Schemas["SearchOut"]>("GET", boardPath(board, "search"), {
      query: { q, limit: options.limit, offset: options.offset, with_data: options.withData ? "true" : undefined },
    }));
  }

  // --- import, export -------------------------------------------------------------

  /**
   * Imports records (`Submission`s) from an array, an iterable or an async
   * iterable, streamed to the server as NDJSON.
   */
  importRecords(board: string, records: Iterable<Submission> | AsyncIterable<Submission>): Promise<ImportResult> {
    return this.importData(board, ndjsonBody(records), { format: "ndjson" });
  }

  /**
   * Imports a file's content (`format`: ndjson, the default, or csv): a
   * string, bytes, a `Blob`, a `ReadableStream` or an (async) iterable of
   * chunks. Streams and iterables are sent as a streamed request body
   * (Node, and browsers with request streaming).
   */
  async importData(board: string,
    data: string | Uint8Array | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string>,
    options: { format?: "ndjson" | "csv" } = {}): Promise<ImportResult> {
    const format = options.format ?? "ndjson";
    let body: BodyInit | ReadableStream<Uint8Array>;
    if (typeof data === "string" || data instanceof Uint8Array || (typeof Blob !== "undefined" && data instanceof Blob)
      || data instanceof ReadableStream) {
      body = data as BodyInit;
    } else {
      const it = iterate(data as Iterable<Uint8Array | string> | AsyncIterable<Uint8Array | string>);
      const enc = new TextEncoder();
      body = new ReadableStream<Uint8Array>({
        async pull(ctl) {
          try {
            const { done, value } = await it.next();
            if (done) ctl.close();
            else ctl.enqueue(typeof value === "string" ? enc.encode(value) : value);
          } catch (e) {
            ctl.error(e);
          }
        },
        async cancel() {
          await it.return?.();
        },
      });
    }
    return this.json("POST", boardPath(board, "import"), {
      query: { format }, body, contentType: format === "csv" ? "text/csv" : "application/x-ndjson",
    });
  }

  /** Every entry of a board, best first, streamed (NDJSON). */
  async *export(board: string, options: { signal?: AbortSignal } = {}): AsyncGenerator<Entry> {
    const res = await this.send("GET", boardPath(board, "export"), { stream: true, signal: options.signal });
    if (!res.body) return;
    for await (const line of lines(res.body)) {
      if (!line.trim()) continue;
      yield decode(JSON.parse(line) as Schemas["ExportLine"]);
    }
  }

  // --- live events ----------------------------------------------------------------

  /**
   * Subscribes to a board's live events (Server-Sent Events), as an async
   * iterator. It reconnects by itself when the connection drops or the
   * server restarts and resumes after the last event received
   * (`Last-Event-ID`): the events in between follow with no gap while the
   * server keeps them, else a `reload` event says to read the state again.
   */
  events(board: string, options: EventsOptions = {}): EventStream {
    return new EventStream(this, board, options);
  }

  /** @internal used by EventStream */
  _open(board: string, query: Query, lastEventId: string | undefined, signal: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = { Accept: "text/event-stream" };
    if (lastEventId !== undefined) headers["Last-Event-ID"] = lastEventId;
    return this.send("GET", boardPath(board, "events"), { query, headers, stream: true, signal });
  }
}

export interface EventsOptions {
  /** Events of the best N places. */
  top?: number;
  /** Events of these members (each sent as its own `member=`). */
  members?: string[];
  /** Send the current state first (once: a resume that cannot continue sends its own). */
  snapshot?: boolean;
  /** Resume after this event id. */
  since?: string;
  /** Reconnect when the stream ends or fails (default true). */
  reconnect?: boolean;
  /** Longest wait between reconnections (default 5,000 ms). */
  maxReconnectDelayMs?: number;
  /** Consecutive failed reconnections before giving up (default: no bound). */
  maxAttempts?: number;
  /** No byte (events or the 15 s keep-alive) for this long: reconnect. Default 45,000 ms. */
  idleTimeoutMs?: number;
  /** Ends the stream. */
  signal?: AbortSignal;
}

/** An async iterator of a board's live events; `lastEventId` is the id to resume after. */
export class EventStream implements AsyncIterable<PodiumEvent> {
  lastEventId: string | undefined;
  /** How many times it reconnected. */
  reconnects = 0;
  private closed = false;
  private readonly ctl = new AbortController();
  private conn: AbortController | null = null;
  private readonly gen: AsyncGenerator<PodiumEvent>;

  constructor(private readonly client: PodiumClient, readonly board: string, private readonly options: EventsOptions) {
    this.lastEventId = options.since;
    if (options.members !== undefined && typeof options.members === "string") {
      throw new TypeError("members is an array of member ids");
    }
    options.signal?.addEventListener("abort", () => this.close(), { once: true });
    this.gen = this.run();
  }

  [Symbol.asyncIterator](): AsyncGenerator<PodiumEvent> {
    return this.gen;
  }

  next(): Promise<IteratorResult<PodiumEvent>> {
    return this.gen.next();
  }

  /** Ends the subscription and its connection. */
  close(): void {
    this.closed = true;
    this.ctl.abort();
    this.conn?.abort();
  }

  private async *run(): AsyncGenerator<PodiumEvent> {
    const o = this.options;
    const reconnect = o.reconnect ?? true;
    const maxDelay = o.maxReconnectDelayMs ?? 5000;
    const idleMs = o.idleTimeoutMs ?? 45_000;
    let failures = 0;
    let first = true;
    try {
      while (!this.closed) {
        const query: Query = {
          top: o.top,
          member: o.members ? [...o.members] : undefined,
          snapshot: o.snapshot && first ? "true" : undefined,
        };
        let error: unknown = undefined;
        const conn = new AbortController();
        this.conn = conn;
        let idle: ReturnType<typeof setTimeout> | undefined;
        const arm = () => {
          clearTimeout(idle);
          idle = setTimeout(() => conn.abort(), idleMs);
        };
        try {
          const res = await this.client._open(this.board, query, this.lastEventId, conn.signal);
          first = false;
          arm();
          let data: string[] = [];
          let event = "";
          let id: string | undefined;
          for await (const line of lines(res.body!)) {
            arm();
            if (line === "") {
              if (data.length) {
                if (id) this.lastEventId = id;
                failures = 0; // backoff starts over once a stream delivers
                const ev = decode(JSON.parse(data.join("\n"))) as PodiumEvent;
                if (!ev.type && event) ev.type = event;
                clearTimeout(idle);
                yield ev;
                arm();
              }
              data = [];
              event = "";
              id = undefined;
              continue;
            }
            if (line.startsWith(":")) continue; // the keep-alive
            const c = line.indexOf(":");
            const name = c < 0 ? line : line.slice(0, c);
            let value = c < 0 ? "" : line.slice(c + 1);
            if (value.startsWith(" ")) value = value.slice(1);
            if (name === "data") data.push(value);
            else if (name === "event") event = value;
            else if (name === "id" && !value.includes("\0")) id = value;
          }
        } catch (e) {
          if (this.closed) return;
          if (e instanceof PodiumError && e.status !== undefined && !RETRY_STATUS.has(e.status)) throw e;
          if (!(e instanceof PodiumError) && !isAbort(e) && !(e instanceof TypeError)) throw e;
          error = e;
        } finally {
          clearTimeout(idle);
          this.conn = null;
        }
        if (this.closed) return;
        if (!reconnect) {
          if (error instanceof PodiumError) throw error;
          if (error !== undefined) throw new PodiumError("transport", String((error as Error).message ?? error), undefined, undefined, { cause: error });
          return;
        }
        failures++;
        if (o.maxAttempts !== undefined && failures > o.maxAttempts) {
          if (error instanceof PodiumError) throw error;
          throw new PodiumError("transport", error ? String((error as Error).message) : "the event stream ended",
            undefined, undefined, { cause: error });
        }
        this.reconnects++;
        await sleep(Math.min(maxDelay, backoff(50, failures - 1, maxDelay)), this.ctl.signal);
      }
    } finally {
      this.closed = true;
      this.conn?.abort();
    }
  }
}

export { SIGNATURE_HEADER, parseDelivery, sign, verifySignature, type WebhookDelivery } from "./webhooks.js";
