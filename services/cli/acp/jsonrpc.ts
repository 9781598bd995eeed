/**
 * JSON-RPC 2.0 over newline-delimited JSON (ACP's stdio transport): one message per line on
 * `input`, one per line written to `output`. Both directions carry requests: the peer answers
 * the other side's requests through `handler.request`, takes its notifications through
 * `handler.notify`, and sends its own requests with `request()` (their responses are matched
 * by id). Malformed input never stops the loop: a line that is not JSON gets a -32700 error, a
 * message that is not JSON-RPC a -32600 one (id null when none can be read), a line longer than
 * `maxLineBytes` is skipped with a -32600 error. Nothing but protocol messages is written.
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
              parts = [];
              size = 0;
              this.log.warn({ maxLineBytes: this.maxLineBytes }, "an input line is too long; skipped");
              this.send({ jsonrpc: "2.0", id: null, error: { code: RPC.invalidRequest, message: `the message is longer than ${this.maxLineBytes} bytes` } });
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
