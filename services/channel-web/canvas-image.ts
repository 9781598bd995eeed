/**
 * `GET /api/canvas/image?chat=<chat>&url=<http(s) URL>` (bearer token): a canvas Image from the
 * web, fetched by this actor when the user clicked "Load image from <host>", so the chat page
 * keeps `img-src 'self' data: blob:` (it shows the answer from a blob: URL) and the image's host
 * never sees the user's browser (its address, cookies, Referer).
 * What may be fetched: only a URL that is on that user's chat's canvas now (as a string in a
 * component or the data model), else 404; only an http(s) URL without credentials whose host
 * resolves to public addresses (shared/runtime/public-address.ts, the rule of web_fetch and the
 * browser; `tools.web.allowPrivateHosts` are the exceptions), checked again on every redirect
 * (at most 3) and the connection pinned to the checked address, else 403. The answer must be a
 * PNG, JPEG, GIF or WebP image of at most 5 MiB, in 15 s, else 502. No cookies or auth are sent.
 */
import http from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import type { ServerResponse } from "node:http";
import { LurkError } from "../../shared/contract/index.js";
import { sendJson } from "../../shared/runtime/channel/index.js";
import { bareHost, pinnedLookup, portOf, resolvePublicTarget } from "../../shared/runtime/public-address.js";
import type { CanvasState } from "./canvas-state.js";

export const CANVAS_IMAGE_MAX_BYTES = 5 * 1024 * 1024;
const TIMEOUT_MS = 15_000;
const MAX_REDIRECTS = 3;
const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const STATUS: Record<string, number> = { VALIDATION_FAILED: 400, NOT_FOUND: 404, FORBIDDEN: 403 };

/** Whether `url` is a string somewhere in the canvas's surfaces (an Image's literal, or data a path binds). */
export function canvasMentions(state: CanvasState | undefined, url: string): boolean {
  const seen = (v: unknown): boolean => (typeof v === "string" ? v === url
    : Array.isArray(v) ? v.some(seen) : !!v && typeof v === "object" && Object.values(v).some(seen));
  return !!state && seen(state.surfaces);
}

function webUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new LurkError("VALIDATION_FAILED", "not a URL");
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.username || url.password) throw new LurkError("VALIDATION_FAILED", "only http(s) URLs without credentials are loaded");
  return url;
}

type Hop = { redirect: string } | { type: string; body: Buffer };

async function fetchOnce(url: URL, allow: readonly string[], signal: AbortSignal): Promise<Hop> {
  const target = await resolvePublicTarget(url, allow, { verb: "load an image from" });
  const host = bareHost(url);
  return new Promise<Hop>((resolve, reject) => {
    const req = (url.protocol === "https:" ? https : http).request({
      protocol: url.protocol, hostname: host, port: portOf(url), path: `${url.pathname}${url.search}`, method: "GET", agent: false, signal,
      headers: { "user-agent": "LurkBot/1 (canvas image)", accept: "image/png,image/jpeg,image/gif,image/webp" },
      lookup: pinnedLookup(target),
      ...(url.protocol === "https:" && !isIP(host) ? { servername: host } : {}),
    }, (res) => {
      const status = res.statusCode ?? 0;
      if ([301, 302, 303, 307, 308].includes(status) && res.headers.location) {
        res.resume();
        return resolve({ redirect: res.headers.location });
      }
      const type = String(res.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
      if (status !== 200 || !IMAGE_TYPES.has(type)) {
        res.resume();
        return reject(new LurkError("UNAVAILABLE", `${url.origin} answered HTTP ${status} ${type || "(no type)"}, not a PNG, JPEG, GIF or WebP image`));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (c: Buffer) => {
        size += c.length;
        if (size > CANVAS_IMAGE_MAX_BYTES) {
          req.destroy();
          reject(new LurkError("UNAVAILABLE", `the image is larger than ${CANVAS_IMAGE_MAX_BYTES} bytes`));
        } else chunks.push(c);
      });
      res.on("end", () => resolve({ type, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", (err) => reject(LurkError.is(err) ? err : new LurkError("UNAVAILABLE", `could not load ${url.origin}: ${err.message}`)));
    req.end();
  });
}

/** Answers the request: the image's bytes, or a JSON error (400, 403, 404, 502). */
export async function handleCanvasImage(res: ServerResponse, query: URLSearchParams, canvasOf: (chat: string) => CanvasState | undefined, allowPrivateHosts: readonly string[]): Promise<void> {
  try {
    const raw = query.get("url") ?? "";
    if (!canvasMentions(canvasOf(query.get("chat") ?? ""), raw)) throw new LurkError("NOT_FOUND", "this chat's canvas has no such image");
    let url = webUrl(raw);
    const signal = AbortSignal.timeout(TIMEOUT_MS);
    for (let hop = 0; ; hop++) {
      const got = await fetchOnce(url, allowPrivateHosts, signal);
      if ("body" in got) {
        res.writeHead(200, {
          "content-type": got.type, "content-length": String(got.body.length), "x-content-type-options": "nosniff",
          "content-security-policy": "sandbox; default-src 'none'", "cache-control": "private, no-store",
        });
        res.end(got.body);
        return;
      }
      if (hop >= MAX_REDIRECTS) throw new LurkError("UNAVAILABLE", "too many redirects");
      url = webUrl(new URL(got.redirect, url).href);
    }
  } catch (err) {
    const e = LurkError.from(err);
    const message = e.code === "ABORTED" || (err as Error).name === "AbortError" || (err as Error).name === "TimeoutError" ? "the image did not load in time" : e.message;
    sendJson(res, STATUS[e.code] ?? 502, { error: { code: STATUS[e.code] ? e.code : "UNAVAILABLE", message } });
  }
}
