/**
 * `GET /api/canvas/image?chat=<chat>&url=<http(s) URL>` and `GET /api/canvas/media?kind=video|audio
 * &chat=<chat>&url=<http(s) URL>` (bearer token): a canvas Image, Video or AudioPlayer from the web,
 * fetched by this actor when the user clicked "Load image/video/audio from <host>", so the chat
 * page keeps `img-src 'self' data: blob:` and `media-src blob:` (it shows the answer from a blob:
 * URL) and the host never sees the user's browser (its address, cookies, Referer).
 * What may be fetched: only a URL that is on that user's chat's canvas now (as a string in a
 * component or the data model), else 404; only an http(s) URL without credentials whose host
 * resolves to public addresses (shared/runtime/public-address.ts, the rule of web_fetch and the
 * browser; `tools.web.allowPrivateHosts` are the exceptions), checked again on every redirect
 * (at most 3) and the connection pinned to the checked address, else 403. The answer must be of
 * the kind's types (MEDIA_KINDS: PNG, JPEG, GIF or WebP images of at most 5 MiB in 15 s; MP4,
 * WebM or Ogg video of at most 20 MiB in 30 s; MPEG, MP4/AAC, Ogg/Opus, WAV, WebM or FLAC audio of
 * at most 10 MiB in 30 s), else 502. No cookies or auth are sent.
 * Each fetch buffers its file before it answers, so few run at once (canvas-media-slots.ts: 2 per
 * user, 4 in all): one more is answered 429 (LIMIT_EXCEEDED, saying to wait and click again)
 * before anything is fetched.
 */
import http from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import type { ServerResponse } from "node:http";
import { LurkError } from "../../shared/contract/index.js";
import { sendJson } from "../../shared/runtime/channel/index.js";
import { bareHost, pinnedLookup, portOf, resolvePublicTarget } from "../../shared/runtime/public-address.js";
import type { CanvasMediaSlots } from "./canvas-media-slots.js";
import type { CanvasState } from "./canvas-state.js";

const MAX_REDIRECTS = 3;
const STATUS: Record<string, number> = { VALIDATION_FAILED: 400, NOT_FOUND: 404, FORBIDDEN: 403, LIMIT_EXCEEDED: 429 };

type CanvasMediaKind = "image" | "video" | "audio";
interface MediaKind { types: ReadonlySet<string>; maxBytes: number; timeoutMs: number; what: string; noun: string; load: string }
/** What each kind may be: its content types, size and time caps, and how errors name it. */
const MEDIA_KINDS: Readonly<Record<CanvasMediaKind, MediaKind>> = {
  image: {
    types: new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]), maxBytes: 5 * 1024 * 1024, timeoutMs: 15_000,
    what: "a PNG, JPEG, GIF or WebP image", noun: "image", load: "load an image from",
  },
  video: {
    types: new Set(["video/mp4", "video/webm", "video/ogg"]), maxBytes: 20 * 1024 * 1024, timeoutMs: 30_000,
    what: "an MP4, WebM or Ogg video", noun: "video", load: "load a video from",
  },
  audio: {
    types: new Set(["audio/mpeg", "audio/mp3", "audio/mp4", "audio/aac", "audio/ogg", "audio/opus", "audio/wav", "audio/x-wav", "audio/wave", "audio/webm", "audio/flac"]),
    maxBytes: 10 * 1024 * 1024, timeoutMs: 30_000, what: "an MPEG, MP4/AAC, Ogg, Opus, WAV, WebM or FLAC audio file", noun: "audio file", load: "load audio from",
  },
};

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

async function fetchOnce(url: URL, kind: CanvasMediaKind, allow: readonly string[], signal: AbortSignal): Promise<Hop> {
  const { types, maxBytes, what, noun, load } = MEDIA_KINDS[kind];
  const target = await resolvePublicTarget(url, allow, { verb: load });
  const host = bareHost(url);
  return new Promise<Hop>((resolve, reject) => {
    const req = (url.protocol === "https:" ? https : http).request({
      protocol: url.protocol, hostname: host, port: portOf(url), path: `${url.pathname}${url.search}`, method: "GET", agent: false, signal,
      headers: { "user-agent": `LurkBot/1 (canvas ${kind})`, accept: [...types].join(",") },
      lookup: pinnedLookup(target),
      ...(url.protocol === "https:" && !isIP(host) ? { servername: host } : {}),
    }, (res) => {
      const status = res.statusCode ?? 0;
      if ([301, 302, 303, 307, 308].includes(status) && res.headers.location) {
        res.resume();
        return resolve({ redirect: res.headers.location });
      }
      const type = String(res.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
      if (status !== 200 || !types.has(type)) {
        res.resume();
        return reject(new LurkError("UNAVAILABLE", `${url.origin} answered HTTP ${status} ${type || "(no type)"}, not ${what}`));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (c: Buffer) => {
        size += c.length;
        if (size > maxBytes) {
          req.destroy();
          reject(new LurkError("UNAVAILABLE", `the ${noun} is larger than ${maxBytes} bytes`));
        } else chunks.push(c);
      });
      res.on("end", () => resolve({ type, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", (err) => reject(LurkError.is(err) ? err : new LurkError("UNAVAILABLE", `could not load ${url.origin}: ${err.message}`)));
    req.end();
  });
}

/**
 * Answers the request: the file's bytes, or a JSON error (400, 403, 404, 429, 502). `rawKind`:
 * "image", "video" or "audio" (`/api/canvas/image` passes "image"; another value is a 400). The
 * fetch holds one of `slots` for `userId` until it answers.
 */
export async function handleCanvasMedia(res: ServerResponse, rawKind: string | null, query: URLSearchParams, canvasOf: (chat: string) => CanvasState | undefined, allowPrivateHosts: readonly string[], slots: CanvasMediaSlots, userId: string): Promise<void> {
  let kind: CanvasMediaKind = "image";
  let slot: { release: () => void } | undefined;
  try {
    if (rawKind !== "image" && rawKind !== "video" && rawKind !== "audio") throw new LurkError("VALIDATION_FAILED", "kind is image, video or audio");
    kind = rawKind;
    const raw = query.get("url") ?? "";
    if (!canvasMentions(canvasOf(query.get("chat") ?? ""), raw)) throw new LurkError("NOT_FOUND", `this chat's canvas has no such ${MEDIA_KINDS[kind].noun}`);
    let url = webUrl(raw);
    const took = slots.take(userId);
    if ("refused" in took) throw new LurkError("LIMIT_EXCEEDED", took.refused);
    slot = took;
    const signal = AbortSignal.timeout(MEDIA_KINDS[kind].timeoutMs);
    for (let hop = 0; ; hop++) {
      const got = await fetchOnce(url, kind, allowPrivateHosts, signal);
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
    const message = e.code === "ABORTED" || (err as Error).name === "AbortError" || (err as Error).name === "TimeoutError" ? `the ${MEDIA_KINDS[kind].noun} did not load in time` : e.message;
    sendJson(res, STATUS[e.code] ?? 502, { error: { code: STATUS[e.code] ? e.code : "UNAVAILABLE", message } }, e.code === "LIMIT_EXCEEDED" ? { "retry-after": "1" } : {});
  } finally {
    slot?.release();
  }
}
