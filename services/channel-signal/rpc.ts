/**
 * signal-cli's JSON-RPC 2.0 over HTTP (`POST <url>/api/v1/rpc`, Content-Type application/json).
 * Every call names the account (`params.account`: required by a multi-account daemon, ignored
 * by one started with `-a`). An answer is read as it streams, up to a byte limit (16 MiB, or the
 * call's own, e.g. getAttachment's), and refused beyond it. A JSON-RPC error becomes a SignalRpcError with signal-cli's code;
 * `toDeliveryError` says what the kit does with it:
 *  - rate limited (code -5, a RATE_LIMIT_FAILURE result, or "rate limit" in the message): retried
 *    (after signal-cli's retry-after when it gives one);
 *  - -1 (user error: recipient not registered, unknown group, not a member, bad params), -4
 *    (untrusted identity), -32600..-32602 (bad request): permanent, with what to do;
 *  - -3 (I/O: Signal's servers unreachable), -32603 (internal), HTTP 5xx, network errors and
 *    timeouts: retried with the kit's backoff.
 */
import { DeliveryError } from "../../shared/runtime/channel/index.js";
import { readBodyCapped, type CappedBody } from "../../shared/runtime/http-capped.js";

export class SignalRpcError extends Error {
  constructor(readonly method: string, readonly code: number, message: string, readonly data?: unknown) {
    super(`signal-cli ${method}: ${message} (JSON-RPC error ${code})`);
    this.name = "SignalRpcError";
  }
}

/** signal-cli could not be reached, or answered something that is not JSON-RPC (or too much: `tooLarge`). */
export class SignalHttpError extends Error {
  constructor(message: string, readonly status?: number, opts?: { cause?: unknown; tooLarge?: boolean }) {
    super(message, opts);
    this.name = "SignalHttpError";
    this.tooLarge = opts?.tooLarge === true;
  }

  readonly tooLarge: boolean;
}

/** One recipient's outcome of a send (signal-cli's SendMessageResult). */
export interface SendResult { recipientAddress?: { uuid?: string | null; number?: string | null }; type?: string; retryAfterSeconds?: number | null }

const RATE_LIMIT_CODE = -5;
/** the most an answer may weigh unless the call says otherwise (read as it streams, dropped beyond) */
export const MAX_ANSWER_BYTES = 16 * 1024 * 1024;
const MAX_ERROR_BYTES = 64 * 1024;
const PERMANENT_CODES = new Set([-1, -4, -32600, -32601, -32602]);

export class SignalRpc {
  private nextId = 1;

  constructor(readonly baseUrl: string, readonly account: string, private readonly timeoutMs: number) {}

  get rpcUrl(): string {
    return new URL("/api/v1/rpc", this.baseUrl).toString();
  }

  /** Calls `method`; resolves with its result, throws SignalRpcError / SignalHttpError (an answer above `maxBytes`: `tooLarge`). */
  async call<T = unknown>(method: string, params: Record<string, unknown> = {}, signal?: AbortSignal, maxBytes = MAX_ANSWER_BYTES): Promise<T> {
    const id = this.nextId++;
    const timeout = AbortSignal.timeout(this.timeoutMs);
    let res: Response;
    try {
      res = await fetch(this.rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id, method, params: { account: this.account, ...params } }),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (err) {
      const why = timeout.aborted ? `no answer within ${this.timeoutMs} ms` : ((err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message);
      throw new SignalHttpError(`cannot reach signal-cli at ${this.baseUrl} (${method}: ${why}); is \`signal-cli daemon --http\` running?`, undefined, { cause: err });
    }
    let got: CappedBody;
    try {
      got = await readBodyCapped(res, res.status === 200 ? maxBytes : MAX_ERROR_BYTES);
    } catch (err) {
      throw new SignalHttpError(`signal-cli ${method}: the answer broke off (${timeout.aborted ? `no answer within ${this.timeoutMs} ms` : (err as Error).message})`, undefined, { cause: err });
    }
    const text = "bytes" in got ? got.bytes.toString("utf8") : "";
    if (res.status !== 200) throw new SignalHttpError(`signal-cli ${method}: HTTP ${res.status}${text ? ` ${text.slice(0, 200)}` : ""}`, res.status);
    if ("tooLarge" in got) throw new SignalHttpError(`signal-cli ${method}: the answer is above ${maxBytes} bytes; refused without reading it whole`, res.status, { tooLarge: true });
    let body: { result?: T; error?: { code?: number; message?: string; data?: unknown } };
    try {
      body = JSON.parse(text);
    } catch {
      throw new SignalHttpError(`signal-cli ${method}: the answer is not JSON`, res.status);
    }
    if (body.error) throw new SignalRpcError(method, Number(body.error.code ?? 0), String(body.error.message ?? "error"), body.error.data);
    return body.result as T;
  }

  /** `GET /api/v1/check`: whether the daemon answers. */
  async check(): Promise<boolean> {
    try {
      const res = await fetch(new URL("/api/v1/check", this.baseUrl), { signal: AbortSignal.timeout(Math.min(this.timeoutMs, 10_000)) });
      await res.body?.cancel().catch(() => undefined);
      return res.ok;
    } catch {
      return false;
    }
  }
}

/** The results a failed call carried (signal-cli puts the send results in `data.response`). */
function resultsOf(data: unknown): SendResult[] {
  const results = (data as { response?: { results?: unknown } } | undefined)?.response?.results;
  return Array.isArray(results) ? results as SendResult[] : [];
}

function retryAfterMs(results: SendResult[]): number | undefined {
  const s = Math.max(0, ...results.map((r) => Number(r.retryAfterSeconds ?? 0)).filter(Number.isFinite));
  return s > 0 ? s * 1000 : undefined;
}

/** A failed call as the kit's DeliveryError (permanent or retried, see the header). */
export function toDeliveryError(err: unknown): DeliveryError {
  if (err instanceof DeliveryError) return err;
  if (err instanceof SignalRpcError) {
    const results = resultsOf(err.data);
    const rateLimited = err.code === RATE_LIMIT_CODE || results.some((r) => r.type === "RATE_LIMIT_FAILURE") || /rate.?limit/i.test(err.message);
    if (rateLimited) {
      const wait = retryAfterMs(results);
      return new DeliveryError(`Signal rate limit: ${err.message}; retrying later`, { ...(wait !== undefined ? { retryAfterMs: wait } : {}), cause: err });
    }
    if (/not registered|UNREGISTERED/i.test(err.message) || results.some((r) => r.type === "UNREGISTERED_FAILURE")) {
      return new DeliveryError(`the recipient is not a registered Signal user (${err.message})`, { permanent: true, cause: err });
    }
    if (err.code === -4 || results.some((r) => r.type === "IDENTITY_FAILURE")) {
      return new DeliveryError(`the recipient's safety number changed: ${err.message}; check it and run \`signal-cli -a <account> trust -a <recipient>\``, { permanent: true, cause: err });
    }
    return new DeliveryError(err.message, { permanent: PERMANENT_CODES.has(err.code), cause: err });
  }
  if (err instanceof SignalHttpError) {
    const status = err.status ?? 0;
    return new DeliveryError(err.message, { permanent: status >= 400 && status < 500 && status !== 408 && status !== 429, cause: err });
  }
  return new DeliveryError(`signal-cli: ${(err as Error)?.message ?? String(err)}`, { cause: err });
}

/**
 * A send's per-recipient results: an error when none reached its recipient (a group whose only
 * member is the bot has no results: that is a success). Rate limits and network failures are
 * retried; unregistered recipients and changed safety numbers are not.
 */
export function checkSendResults(results: SendResult[] | undefined): void {
  if (!results || results.length === 0 || results.some((r) => r.type === "SUCCESS")) return;
  const types = [...new Set(results.map((r) => r.type ?? "UNKNOWN"))];
  const who = results.map((r) => r.recipientAddress?.number ?? r.recipientAddress?.uuid ?? "?").join(", ");
  throw toDeliveryError(new SignalRpcError("send", types.includes("RATE_LIMIT_FAILURE") ? RATE_LIMIT_CODE : types.every((t) => t === "UNREGISTERED_FAILURE" || t === "IDENTITY_FAILURE") ? -1 : -3, `not delivered to ${who}: ${types.join(", ")}`, { response: { results } }));
}
