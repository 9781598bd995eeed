/**
 * The HTTP client of the web tools. `guardedFetch` (web_fetch) only talks to public
 * addresses: before every request, the first one and every redirect hop (followed by hand, at
 * most 5), it resolves the host (all addresses) and refuses the URL if any address is not
 * public (shared/runtime/public-address.ts), unless the URL's host is in tools.web.allowPrivateHosts. The connection
 * is then pinned to the checked address (a custom `lookup` on the request), so a DNS answer
 * that changes between the check and the connect (rebinding) cannot reach another address.
 * Bodies are read up to a byte cap (decompressed), under an AbortSignal (deadline).
 *
 * `trustedFetch` (web_search's configured API) skips the address check, because the operator
 * chose that URL (a SearXNG instance is often on the local network), and follows no redirects.
 */
import http from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import type { Readable } from "node:stream";
import zlib from "node:zlib";
import { LurkError } from "../../../shared/contract/index.js";
import { abortable } from "../../../shared/runtime/abortable-sleep.js";
import { bareHost, pinnedLookup, portOf, resolvePublicTarget, type Target } from "../../../shared/runtime/public-address.js";

// the address rules are shared with the browser actor (shared/runtime/public-address.ts); tests import them from here
export { isAllowedPrivateHost } from "../../../shared/runtime/public-address.js";

export const MAX_REDIRECTS = 5;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const USER_AGENT = "LurkBot/1 (web_fetch)";

export interface FetchResult {
  /** the URL that answered (after redirects) */
  url: string;
  status: number;
  contentType: string;
  body: Buffer;
  /** the body was longer than the cap; `body` is its first maxBytes bytes */
  truncated: boolean;
  /** each URL redirected to, in order */
  redirects: string[];
}

export interface GuardedFetchOptions {
  maxBytes: number;
  /** the body cap for a response of this content type, when it is not maxBytes (read when the headers arrive) */
  maxBytesFor?: (contentType: string, url: URL) => number;
  signal: AbortSignal;
  /** hosts ("host" or "host:port") that may resolve to private addresses */
  allowPrivateHosts?: readonly string[];
  maxRedirects?: number;
  headers?: Record<string, string>;
}

/** An http(s) URL or a TOOL_INVALID_ARGS error. */
export function parseWebUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new LurkError("TOOL_INVALID_ARGS", `"${raw.slice(0, 200)}" is not a valid URL; give an absolute http:// or https:// URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new LurkError("TOOL_INVALID_ARGS", `the ${url.protocol.replace(/:$/, "")}: scheme is not supported; only http:// and https:// URLs can be fetched`);
  }
  if (url.username || url.password) throw new LurkError("TOOL_INVALID_ARGS", "URLs with a user name or password are not fetched");
  return url;
}

/** Resolves the host and decides whether it may be reached; the address to connect to. */
export function checkTarget(url: URL, allow: readonly string[], signal: AbortSignal): Promise<Target> {
  return resolvePublicTarget(url, allow, { verb: "fetch", wait: (lookup) => abortable(lookup, signal, abortError) });
}

export function abortError(signal: AbortSignal): LurkError {
  const reason: unknown = signal.reason;
  if (LurkError.is(reason)) return LurkError.from(reason);
  if (reason instanceof Error && reason.name === "TimeoutError") return new LurkError("TIMEOUT", "the web request timed out");
  return new LurkError("ABORTED", "the web request was stopped");
}

export interface OnceResult {
  status: number;
  headers: http.IncomingHttpHeaders;
  location?: string;
  body: Buffer;
  truncated: boolean;
}

/** One GET, connected to `target` when given (whatever DNS says); a redirect is returned (not followed) with its Location. */
export function requestOnce(url: URL, target: Target | undefined, opts: { maxBytes: number; maxBytesFor?: GuardedFetchOptions["maxBytesFor"]; signal: AbortSignal; headers?: Record<string, string> }): Promise<OnceResult> {
  const host = bareHost(url);
  const mod = url.protocol === "https:" ? https : http;
  return new Promise<OnceResult>((resolve, reject) => {
    if (opts.signal.aborted) return reject(abortError(opts.signal));
    let settled = false;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      req.destroy();
      if (opts.signal.aborted) return reject(abortError(opts.signal));
      reject(LurkError.is(err) ? err : new LurkError("TOOL_FAILED", `could not fetch ${url.origin}: ${(err as Error).message ?? String(err)}`));
    };
    const req = mod.request({
      protocol: url.protocol,
      hostname: host,
      port: portOf(url),
      path: `${url.pathname}${url.search}`,
      method: "GET",
      agent: false,
      headers: { "user-agent": USER_AGENT, accept: "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5", "accept-encoding": "gzip, deflate, br", ...opts.headers },
      ...(target ? { lookup: pinnedLookup(target) } : {}),
      ...(url.protocol === "https:" && !isIP(host) ? { servername: host } : {}),
    });
    const onAbort = () => fail(abortError(opts.signal));
    opts.signal.addEventListener("abort", onAbort, { once: true });
    req.on("error", fail);
    req.on("close", () => opts.signal.removeEventListener("abort", onAbort));
    req.on("response", (res) => {
      const status = res.statusCode ?? 0;
      const location = res.headers.location;
      if (REDIRECT_STATUSES.has(status) && location) {
        settled = true;
        res.resume();
        req.destroy();
        return resolve({ status, headers: res.headers, location, body: Buffer.alloc(0), truncated: false });
      }
      let stream: Readable = res;
      const encoding = String(res.headers["content-encoding"] ?? "").trim().toLowerCase();
      if (encoding === "gzip" || encoding === "x-gzip") stream = res.pipe(zlib.createGunzip());
      else if (encoding === "deflate") stream = res.pipe(zlib.createInflate());
      else if (encoding === "br") stream = res.pipe(zlib.createBrotliDecompress());
      const type = res.headers["content-type"];
      const maxBytes = opts.maxBytesFor?.((Array.isArray(type) ? type[0] : type) ?? "", url) ?? opts.maxBytes;
      const chunks: Buffer[] = [];
      let size = 0;
      const finish = (truncated: boolean) => {
        if (settled) return;
        settled = true;
        resolve({ status, headers: res.headers, body: Buffer.concat(chunks, Math.min(size, maxBytes)), truncated });
        if (truncated) req.destroy();
      };
      stream.on("data", (chunk: Buffer) => {
        if (settled) return;
        chunks.push(chunk);
        size += chunk.length;
        if (size > maxBytes) {
          stream.pause();
          finish(true);
        }
      });
      stream.on("end", () => finish(false));
      stream.on("error", fail);
      res.on("error", fail);
    });
    req.end();
  });
}

/** GET with the address guard on every hop (see the module comment). */
export async function guardedFetch(raw: string, opts: GuardedFetchOptions): Promise<FetchResult> {
  const allow = opts.allowPrivateHosts ?? [];
  const maxRedirects = opts.maxRedirects ?? MAX_REDIRECTS;
  let url = parseWebUrl(raw);
  const redirects: string[] = [];
  for (let hop = 0; ; hop++) {
    const target = await checkTarget(url, allow, opts.signal);
    const res = await requestOnce(url, target, opts);
    if (res.location === undefined) return toResult(url, res, redirects);
    if (hop >= maxRedirects) throw new LurkError("LIMIT_EXCEEDED", `too many redirects (more than ${maxRedirects}) starting at ${raw.slice(0, 500)}`);
    let next: URL;
    try {
      next = new URL(res.location, url);
    } catch {
      throw new LurkError("TOOL_FAILED", `${url.href} redirected to an invalid URL`);
    }
    try {
      url = parseWebUrl(next.href);
    } catch (err) {
      throw new LurkError("FORBIDDEN", `${url.href} redirected to ${next.href.slice(0, 500)}, which is not fetched: ${LurkError.from(err).message}`);
    }
    redirects.push(url.href);
  }
}

/** GET of an operator-configured API URL: no address guard, no redirects. */
export async function trustedFetch(url: URL, opts: { maxBytes: number; signal: AbortSignal; headers?: Record<string, string> }): Promise<FetchResult> {
  const res = await requestOnce(url, undefined, opts);
  if (res.location !== undefined) throw new LurkError("TOOL_FAILED", `the search API answered with a redirect (HTTP ${res.status}); check tools.web.search.baseUrl`);
  return toResult(url, res, []);
}

function toResult(url: URL, res: OnceResult, redirects: string[]): FetchResult {
  const type = res.headers["content-type"];
  return { url: url.href, status: res.status, contentType: (Array.isArray(type) ? type[0] : type) ?? "", body: res.body, truncated: res.truncated, redirects };
}
