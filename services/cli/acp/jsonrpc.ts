/**
 * JSON-RPC 2.0 over newline-delimited JSON (ACP's stdio transport): one message per line on
 * `input`, one per line written to `output`. Both directions carry requests: the peer answers
 * the other side's requests through `handler.request`, takes its notifications through
 * `handler.notify`, and sends its own requests with `request()` (their responses are matched
 * by id). Malformed input never stops the loop: a line that is not JSON gets a -32700 error, a
 * message that is not JSON-RPC a -32600 one (id null when none can be read), a line longer than
 * `maxLineBytes` is skipped with a -32600 error saying the limit (and `tooLongHint`). That error
 * answers the line's own id when its first bytes show one (`leadingId`: a bounded scan of the
 * top-level keys for `"id"` with a number or a short string), so the editor's request does not
 * wait forever; a too-long response of the client fails our request of that id instead. Nothing
 * but protocol messages is written.
 */
import { LurkError, safeParseJson } from "../../../shared/contract/index.js";

export const RPC = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  /** ACP: the request needs authentication first */
  authRequired: -32000,
  /** ACP: the named resource (a session) does not exist */
  resourceNotFound: -32002,
} as const;

export type RpcId = string | number;

export class RpcError extends Error {
  constructor(readonly code: number, message: string, readonly data?: unknown) {
    super(message);
    this.name = "RpcError";
  }
}

export interface RpcHandler {
  /** answers a request of the other side; throw an RpcError for an error response */
  request(method: string, params: unknown): Promise<unknown>;
  /** takes a notification of the other side (never answered) */
  notify(method: string, params: unknown): void;
}

export interface RpcLog {
  debug(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

interface Waiting {
  resolve: (result: unknown) => void;
  reject: (err: RpcError) => void;
}

export const DEFAULT_MAX_LINE_BYTES = 4 * 1024 * 1024;
/** how much of an over-long line is read for its id */
export const ID_SCAN_BYTES = 4096;
const MAX_ID_CHARS = 256;

/**
 * The `"id"` of a JSON-RPC message from its first bytes, and whether it is a response (`result`
 * or `error` seen): reads the top-level object's keys in order, skipping their values, until
 * `head` ends. Only a number or a string of at most 256 characters is an id. Never throws.
 */
export function leadingId(head: string): { id?: RpcId; response: boolean } {
  let i = 0;
  let id: RpcId | undefined;
  let response = false;
  const n = head.length;
  const ws = () => {
    while (i < n && (head[i] === " " || head[i] === "\t" || head[i] === "\n" || head[i] === "\r")) i++;
  };
  /** at a quote: the raw string with its quotes, or undefined when it does not end in `head` */
  const rawString = (): string | undefined => {
    const start = i;
    for (i++; i < n; i++) {
      if (head[i] === "\\") i++;
      else if (head[i] === "\"") return head.slice(start, ++i);
    }
    return undefined;
  };
  /** skips one value; false when it does not end in `head` */
  const skipValue = (): boolean => {
    if (head[i] === "\"") return rawString() !== undefined;
    if (head[i] === "{" || head[i] === "[") {
      let depth = 0;
      for (; i < n; i++) {
        const c = head[i];
        if (c === "\"") {
          if (rawString() === undefined) return false;
          i--;
        } else if (c === "{" || c === "[") depth++;
        else if (c === "}" || c === "]") {
          if (--depth === 0) {
            i++;
            return true;
          }
        }
      }
      return false;
    }
    const m = /^[-+.\w]+/.exec(head.slice(i, i + 64));
    if (!m) return false;
    i += m[0].length;
    return i < n;
  };
  try {
    ws();
    if (head[i] !== "{") return { response };
    i++;
    for (;;) {
      ws();
      if (head[i] !== "\"") break;
      const rawKey = rawString();
      if (rawKey === undefined) break;
      const key = JSON.parse(rawKey) as string;
      ws();
      if (head[i] !== ":") break;
      i++;
      ws();
      if (key === "result" || key === "error") response = true;
      if (key === "id") {
        const num = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(head.slice(i, i + 40));
        if (num && i + num[0].length < n) id = JSON.parse(num[0]) as number;
        else if (head[i] === "\"") {
          const start = i;
          const raw = rawString();
          if (raw !== undefined && raw.length <= MAX_ID_CHARS + 2) id = JSON.parse(raw) as string;
          i = start;
        }
      }
      if (!skipValue()) break;
      ws();
      if (head[i] !== ",") break;
      i++;
    }
  } catch {
    // a key or string JSON does not take: what was read so far
  }
  return id === undefined ? { response } : { id, response };
}

/** The first `max` bytes of `parts` then `last`. */
function firstBytes(parts: readonly Buffer[], last: Buffer, max: number): Buffer {
  const out: Buffer[] = [];
  let size = 0;
  for (const p of [...parts, last]) {
    if (size >= max) break;
    const take = p.subarray(0, max - size);
    out.push(take);
    size += take.length;
  }
  return Buffer.concat(out);
}

export class JsonRpcPeer {
  private nextId = 1;
  private readonly waiting = new Map<RpcId, Waiting>();
  private closed = false;

  constructor(
    private readonly input: NodeJS.ReadableStream,
    private readonly output: NodeJS.WritableStream,
    private readonly handler: RpcHandler,
    private readonly log: RpcLog,
    private readonly maxLineBytes = DEFAULT_MAX_LINE_BYTES,
    /** added to the too-long error: what the limit is made of (e.g. the config key that raises it) */
    private readonly tooLongHint = "",
  ) {
    // the client went away (EPIPE): nothing more can be said to it; the input's end follows
    output.on("error", (err) => this.log.warn({ err }, "the client's side of the output is closed"));
  }

  /** Reads until the input ends (the client closed its side); then pending requests fail. */
  run(): Promise<void> {
    return new Promise((resolve) => {
      let parts: Buffer[] = [];
      let size = 0;
      /** inside a line that is already too long: drop bytes until its end */
      let skipping = false;
      const onLine = (line: Buffer) => {
        const text = line.toString("utf8").replace(/\r$/, "");
        if (text.trim()) this.receive(text);
      };
      this.input.on("data", (chunk: Buffer | string) => {
        let buf = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
        for (let nl = buf.indexOf(10); ; nl = buf.indexOf(10)) {
          const piece = nl === -1 ? buf : buf.subarray(0, nl);
          if (!skipping) {
            if (size + piece.length > this.maxLineBytes) {
              skipping = true;
              this.tooLong(firstBytes(parts, piece, ID_SCAN_BYTES).toString("utf8"));
              parts = [];
              size = 0;
            } else {
              parts.push(piece);
              size += piece.length;
            }
          }
          if (nl === -1) break;
          if (!skipping) onLine(Buffer.concat(parts));
          skipping = false;
          parts = [];
          size = 0;
          buf = buf.subarray(nl + 1);
        }
      });
      const end = () => {
        if (this.closed) return;
        if (!skipping && size > 0) onLine(Buffer.concat(parts));
        this.close();
        resolve();
      };
      this.input.once("end", end);
      this.input.once("close", end);
      this.input.once("error", end);
    });
  }

  /** An over-long line, by its first bytes: its request answered with the error, or our request it answers failed. */
  private tooLong(head: string): void {
    const { id, response } = leadingId(head);
    const message = `the message is longer than ${this.maxLineBytes} bytes, the most one line may carry${this.tooLongHint ? ` (${this.tooLongHint})` : ""}`;
    this.log.warn({ maxLineBytes: this.maxLineBytes, id }, "an input line is too long; skipped");
    if (response) {
      const w = id === undefined ? undefined : this.waiting.get(id);
      if (id !== undefined && w) {
        this.waiting.delete(id);
        w.reject(new RpcError(RPC.invalidRequest, `the client's answer: ${message}`));
      }
      return;
    }
    this.send({ jsonrpc: "2.0", id: id ?? null, error: { code: RPC.invalidRequest, message, data: { maxBytes: this.maxLineBytes } } });
  }

  /** Fails the requests still waiting for the client's answer. */
  close(): void {
    this.closed = true;
    for (const [id, w] of this.waiting) {
      this.waiting.delete(id);
      w.reject(new RpcError(RPC.internalError, "the connection closed before the client answered"));
    }
  }

  notify(method: string, params: unknown): void {
    this.send({ jsonrpc: "2.0", method, params });
  }

  /** Sends a request to the client; resolves with its result, rejects with its error. */
  request(method: string, params: unknown): { id: RpcId; result: Promise<unknown> } {
    const id = this.nextId++;
    const result = new Promise<unknown>((resolve, reject) => {
      if (this.closed) return reject(new RpcError(RPC.internalError, "the connection is closed"));
      this.waiting.set(id, { resolve, reject });
      this.send({ jsonrpc: "2.0", id, method, params });
    });
    return { id, result };
  }

  private send(message: object): void {
    try {
      this.output.write(JSON.stringify(message) + "\n");
    } catch (err) {
      this.log.warn({ err }, "could not write to the client");
    }
  }

  private receive(text: string): void {
    let message: unknown;
    try {
      message = safeParseJson(text, { maxBytes: this.maxLineBytes });
    } catch (err) {
      const unsafe = LurkError.is(err) && err.code === "UNSAFE_PAYLOAD";
      this.send({ jsonrpc: "2.0", id: null, error: { code: unsafe ? RPC.invalidRequest : RPC.parseError, message: unsafe ? err.message : "parse error: the line is not valid JSON" } });
      return;
    }
    if (message === null || typeof message !== "object" || Array.isArray(message)) {
      this.send({ jsonrpc: "2.0", id: null, error: { code: RPC.invalidRequest, message: Array.isArray(message) ? "batches are not supported: send one message per line" : "a JSON-RPC message is an object" } });
      return;
    }
    const m = message as Record<string, unknown>;
    const id = typeof m.id === "string" || typeof m.id === "number" ? m.id : undefined;
    const hasId = "id" in m && m.id !== null;
    if (m.jsonrpc !== "2.0" || (hasId && id === undefined)) {
      this.send({ jsonrpc: "2.0", id: id ?? null, error: { code: RPC.invalidRequest, message: m.jsonrpc !== "2.0" ? "\"jsonrpc\" must be \"2.0\"" : "\"id\" must be a string or a number" } });
      return;
    }
    if (typeof m.method === "string") {
      if (id === undefined) this.onNotification(m.method, m.params);
      else void this.onRequest(id, m.method, m.params);
      return;
    }
    if (id !== undefined && ("result" in m || "error" in m)) {
      this.onResponse(id, m);
      return;
    }
    this.send({ jsonrpc: "2.0", id: id ?? null, error: { code: RPC.invalidRequest, message: "neither a request, a notification nor a response" } });
  }

  private async onRequest(id: RpcId, method: string, params: unknown): Promise<void> {
    try {
      const result = await this.handler.request(method, params);
      this.send({ jsonrpc: "2.0", id, result: result ?? null });
    } catch (err) {
      const e = err instanceof RpcError ? err : new RpcError(RPC.internalError, err instanceof Error ? err.message : String(err));
      if (!(err instanceof RpcError)) this.log.warn({ err, method }, "a request failed");
      this.send({ jsonrpc: "2.0", id, error: { code: e.code, message: e.message, ...(e.data !== undefined ? { data: e.data } : {}) } });
    }
  }

  private onNotification(method: string, params: unknown): void {
    try {
      this.handler.notify(method, params);
    } catch (err) {
      this.log.warn({ err, method }, "a notification could not be handled");
    }
  }

  private onResponse(id: RpcId, m: Record<string, unknown>): void {
    const w = this.waiting.get(id);
    if (!w) {
      this.log.debug({ id }, "a response to no request of ours; ignored");
      return;
    }
    this.waiting.delete(id);
    if ("error" in m && m.error) {
      const e = m.error as { code?: unknown; message?: unknown; data?: unknown };
      w.reject(new RpcError(typeof e.code === "number" ? e.code : RPC.internalError, typeof e.message === "string" ? e.message : "the client answered with an error", e.data));
    } else {
      w.resolve(m.result);
    }
  }
}
