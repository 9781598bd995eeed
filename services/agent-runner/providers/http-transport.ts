/**
 * A lean `fetch` for the OpenAI and Anthropic SDKs (their `fetch` option), over node:http and
 * node:https with keep-alive connections. The SDKs' default, Node's built-in fetch (undici),
 * cost the agent-runner about 0.6 ms of CPU more per streamed call under load on this machine
 * (Request and Response objects, WebIDL conversions, web streams); here the body the SDK reads
 * is the Node response itself, which both SDKs read through its async iterator.
 *
 * Contract: the subset of fetch the SDKs use. The response has `ok`, `status`, `statusText`,
 * `url`, `redirected`, `headers` (a real Headers), `body` (an async iterable of bytes, gzip,
 * deflate and br decoded; null for HEAD, 204 and 304), `bodyUsed`, `text()`, `json()`,
 * `arrayBuffer()`. The signal aborts the request and its body with an AbortError, as fetch
 * does. A failure to connect rejects with fetch's `TypeError("fetch failed")` and the cause. A
 * request sent on a kept-alive connection that the server had just closed is sent again on a
 * new one. What this does not handle goes to the global fetch unchanged: a Request object, a
 * streamed or form body, a URL that is not http(s), a redirect mode other than "follow", and a
 * redirect response (the request is made again by fetch, which follows it per the spec). With
 * NODE_USE_ENV_PROXY=1 (Node 24's proxy support for its fetch) every request goes to the global
 * fetch, so proxy settings are honoured. `onResponse` is shown every response's headers and status
 * (either path) before the SDK gets it: the rate-limit headers (rate-limits.ts).
 */
import http from "node:http";
import https from "node:https";
import { pipeline, type Readable } from "node:stream";
import zlib from "node:zlib";

type FetchInput = string | URL | Request;

export interface HttpTransportOptions {
  /** agents for the connections; default: module-wide keep-alive agents */
  httpAgent?: http.Agent;
  httpsAgent?: https.Agent;
  /** what handles the cases listed in the file comment; default: the global fetch */
  fallback?: typeof fetch;
  /** default: process.env (read for NODE_USE_ENV_PROXY) */
  env?: Record<string, string | undefined>;
  /** sees every response's headers and status before the SDK reads it (the rate-limit headers: rate-limits.ts); must not throw */
  onResponse?: (headers: Headers, status: number) => void;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** a request sent on a reused connection fails this way when the server closed it meanwhile */
const STALE_CONNECTION = new Set(["ECONNRESET", "EPIPE"]);
const MAX_STALE_RETRIES = 2;

let sharedAgents: { http: http.Agent; https: https.Agent } | undefined;
const agents = () => (sharedAgents ??= { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) });

/** Makes the `fetch` to pass to an SDK's constructor. */
export function httpTransport(opts: HttpTransportOptions = {}): typeof fetch {
  const base = opts.fallback ?? ((input: FetchInput, init?: RequestInit) => fetch(input, init));
  const observe = opts.onResponse;
  const fallback = !observe ? base : (input: FetchInput, init?: RequestInit) => base(input, init).then((r) => {
    observe(r.headers, r.status);
    return r;
  });
  if ((opts.env ?? process.env).NODE_USE_ENV_PROXY === "1") return fallback as typeof fetch;
  return ((input: FetchInput, init: RequestInit = {}) => {
    const url = typeof input === "string" ? safeUrl(input) : input instanceof URL ? input : undefined;
    const body = sendableBody(init.body);
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || body === false || (init.redirect && init.redirect !== "follow")) {
      return fallback(input, init);
    }
    const agent = url.protocol === "https:" ? (opts.httpsAgent ?? agents().https) : (opts.httpAgent ?? agents().http);
    return send(url, init, body, agent, 0).then((sent) => {
      if (sent.redirected) return fallback(input, init);
      observe?.(sent.response.headers, sent.response.status);
      return sent.response;
    });
  }) as typeof fetch;
}

function safeUrl(s: string): URL | undefined {
  try {
    return new URL(s);
  } catch {
    return undefined;
  }
}

/** the body as bytes or a string; undefined for none; false for kinds left to the fallback */
function sendableBody(body: RequestInit["body"]): string | Uint8Array | undefined | false {
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string" || body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  return false;
}

const abortError = (signal: AbortSignal): unknown => signal.reason ?? new DOMException("This operation was aborted", "AbortError");

type Sent = { redirected: true } | { redirected: false; response: Response };

function send(url: URL, init: RequestInit, body: string | Uint8Array | undefined, agent: http.Agent, staleRetries: number): Promise<Sent> {
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(abortError(signal));
  const method = (init.method ?? "GET").toUpperCase();
  const headers = requestHeaders(init.headers);
  if (body !== undefined && headers["content-length"] === undefined) headers["content-length"] = String(typeof body === "string" ? Buffer.byteLength(body) : body.byteLength);
  const request = url.protocol === "https:" ? https.request : http.request;
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, agent });
    let responded = false;
    /** the body handed out: an abort after the response errors it with the AbortError */
    let reading: Readable | null = null;
    const onAbort = () => {
      const err = abortError(signal!) as Error;
      reading?.destroy(err);
      req.destroy(err);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    const unlisten = () => signal?.removeEventListener("abort", onAbort);
    req.on("error", (err: NodeJS.ErrnoException) => {
      if (responded) return; // the body reports it
      unlisten();
      if (signal?.aborted) reject(abortError(signal));
      else if (req.reusedSocket && STALE_CONNECTION.has(err.code ?? "") && staleRetries < MAX_STALE_RETRIES) resolve(send(url, init, body, agent, staleRetries + 1));
      else reject(new TypeError("fetch failed", { cause: err }));
    });
    req.on("response", (res) => {
      responded = true;
      res.once("close", unlisten);
      const status = res.statusCode ?? 0;
      if (REDIRECTS.has(status) && res.headers.location) {
        res.resume();
        resolve({ redirected: true });
        return;
      }
      const response = leanResponse(url, method, res);
      reading = response.body as unknown as Readable | null;
      resolve({ redirected: false, response });
    });
    req.end(body);
  });
}

function requestHeaders(init: RequestInit["headers"]): Record<string, string> {
  const out: Record<string, string> = {};
  // any HeadersInit (the SDKs pass a Headers): names lower-cased, repeated ones joined by ", "
  (init instanceof Headers ? init : new Headers(init)).forEach((value, name) => { out[name] = value; });
  return out;
}

function decoded(res: http.IncomingMessage): Readable {
  const encoding = (res.headers["content-encoding"] ?? "").trim().toLowerCase();
  const decoder = encoding === "gzip" || encoding === "x-gzip" ? zlib.createGunzip()
    : encoding === "deflate" ? zlib.createInflate()
    : encoding === "br" ? zlib.createBrotliDecompress()
    : undefined;
  if (!decoder) return res;
  return pipeline(res, decoder, () => undefined);
}

function leanResponse(url: URL, method: string, res: http.IncomingMessage): Response {
  const status = res.statusCode ?? 0;
  const headers = new Headers();
  const raw = res.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  const empty = method === "HEAD" || status === 204 || status === 304;
  if (empty) res.resume();
  const body = empty ? null : decoded(res);
  let used = false;
  const bytes = async (): Promise<Buffer> => {
    if (used) throw new TypeError("Body is unusable: Body has already been read");
    used = true;
    if (!body) return Buffer.alloc(0);
    const parts: Buffer[] = [];
    for await (const chunk of body) parts.push(chunk as Buffer);
    return Buffer.concat(parts);
  };
  const text = async () => (await bytes()).toString("utf8");
  const response = {
    ok: status >= 200 && status < 300,
    status,
    statusText: res.statusMessage ?? "",
    url: url.href,
    redirected: false,
    type: "basic",
    headers,
    body,
    get bodyUsed() { return used; },
    text,
    json: async () => JSON.parse(await text()) as unknown,
    arrayBuffer: async () => {
      const b = await bytes();
      return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
    },
  };
  return response as unknown as Response;
}
