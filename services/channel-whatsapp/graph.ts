/**
 * The Cloud API calls of the channel (Graph API, `Authorization: Bearer <accessToken>`):
 * - `send(body)`: POST `<base>/<version>/<phoneNumberId>/messages` (`messaging_product:
 *   "whatsapp"` added), resolving to the new message's `wamid` (`messages[0].id`);
 * - `typing(messageId)`: the same endpoint with `status: "read"` and `typing_indicator` (marks the
 *   user's message read and shows "typing…" until the reply or 25 s);
 * - `upload(file)`: POST `<phoneNumberId>/media` (multipart: messaging_product, type, file), the media id;
 * - `mediaInfo(id)` / `download(url)`: GET `/<media id>` (its short-lived `url`, `mime_type`,
 *   `file_size`), then that url with the token; the token (and the request) goes only to Meta's
 *   own hosts over https (`lookaside.fbsbx.com` and the like, `mayCarryToken`) or to `apiBaseUrl`'s
 *   origin, each redirect checked the same way (no request to any other host).
 * Errors (`{ error: { message, code, error_subcode, error_data: { details } } }`) become
 * GraphErrors, and `toDeliveryError` maps them: 429, 5xx and Graph's throttling codes are retried
 * (after `Retry-After` when given), the others are permanent with a message naming the cause and
 * what to do (131047: outside the 24-hour window; 131026: undeliverable; 190: the token).
 * The token is only ever in the Authorization header: no error or log carries it.
 */
import { DeliveryError, cappedDownload, type OutboundFile } from "../../shared/runtime/channel/index.js";
import { LurkError } from "../../shared/contract/index.js";
import { formatBytes } from "../../shared/runtime/media.js";

export interface GraphOptions {
  baseUrl: string;
  version: string;
  phoneNumberId: string;
  token: string;
  timeoutMs: number;
}

export class GraphError extends Error {
  constructor(message: string, readonly status: number, readonly code?: number, readonly details?: string, readonly retryAfterMs?: number) {
    super(message);
    this.name = "GraphError";
  }
}

/** Graph codes of throttling: retried like a 429 (4 app calls, 80007 WABA, 130429 throughput, 131056 pair rate, 613 calls) */
const THROTTLED = new Set([4, 17, 613, 80007, 130429, 131056]);
/** Graph codes of a passing fault: retried (1 unknown, 2 service, 131000 something went wrong, 131016 unavailable, 133004 server down) */
const TRANSIENT = new Set([1, 2, 131000, 131016, 133004]);

/** What each permanent code means for the person reading the delivery_failed event, and what to do. */
const EXPLAINED: Record<number, string> = {
  131047: "more than 24 hours have passed since the user's last message: the Cloud API lets a business answer freely only within 24 hours of it (outside it only with approved template messages, which LurkBot does not send); the reply can go once the user writes again",
  131026: "WhatsApp could not deliver the message to this number (131026): it may not be on WhatsApp, use an outdated app, or not have accepted WhatsApp's latest terms",
  190: "the access token is invalid or expired (190): create a permanent System User token with whatsapp_business_messaging in Meta Business Settings and set WHATSAPP_ACCESS_TOKEN (or channels.whatsapp.accessToken), then restart the channel",
  131030: "the recipient is not on the app's allowed list (131030): a test number may only message numbers added under WhatsApp > API Setup; add it there or use a verified business number",
  131031: "the WhatsApp Business account is locked (131031): see WhatsApp Manager",
  131042: "a payment problem on the WhatsApp Business account (131042): fix the payment method in WhatsApp Manager",
  131051: "WhatsApp does not support this message type (131051)",
  131053: "WhatsApp could not take the uploaded file (131053): an unsupported type or size",
  368: "the account is temporarily blocked for policy violations (368): see WhatsApp Manager",
};

const codeText = (code: number | undefined) => (code === undefined ? "" : ` ${code}`);

export function toDeliveryError(err: unknown): DeliveryError {
  if (err instanceof DeliveryError) return err;
  if (err instanceof GraphError) {
    const code = err.code;
    const retry = err.status === 429 || err.status >= 500 || (code !== undefined && (THROTTLED.has(code) || TRANSIENT.has(code)));
    if (retry) {
      const what = err.status === 429 || (code !== undefined && THROTTLED.has(code)) ? "WhatsApp rate limit" : "WhatsApp is unavailable";
      return new DeliveryError(`${what} (HTTP ${err.status}${codeText(code)}): ${err.message}`, { ...(err.retryAfterMs !== undefined ? { retryAfterMs: err.retryAfterMs } : {}), cause: err });
    }
    const known = code !== undefined ? EXPLAINED[code] : undefined;
    const auth = err.status === 401 || code === 0 || code === 10 || (code !== undefined && code >= 200 && code <= 299);
    const why = known ?? (auth
      ? `the access token lacks the permission (${err.status}${codeText(code)}: ${err.message}): give the System User whatsapp_business_messaging on this WhatsApp account and set a new WHATSAPP_ACCESS_TOKEN`
      : `WhatsApp refused the message (HTTP ${err.status}${codeText(code)}): ${err.message}${err.details ? ` (${err.details})` : ""}`);
    return new DeliveryError(why, { permanent: true, cause: err });
  }
  const e = err as Error;
  if (e?.name === "TimeoutError" || e?.name === "AbortError") return new DeliveryError("the WhatsApp Cloud API did not answer in time", { cause: err });
  return new DeliveryError(`cannot reach the WhatsApp Cloud API: ${e?.message ?? String(err)}`, { cause: err });
}

function retryAfter(res: Response): number | undefined {
  const s = Number(res.headers.get("retry-after"));
  return Number.isFinite(s) && s >= 0 ? Math.min(s, 3600) * 1000 : undefined;
}

async function graphError(res: Response): Promise<GraphError> {
  let body: { error?: { message?: unknown; code?: unknown; error_data?: { details?: unknown } } } | undefined;
  try {
    body = await res.json() as typeof body;
  } catch {
    body = undefined;
  }
  const e = body?.error;
  const message = typeof e?.message === "string" ? e.message.slice(0, 500) : `HTTP ${res.status}`;
  const details = typeof e?.error_data?.details === "string" ? e.error_data.details.slice(0, 500) : undefined;
  return new GraphError(message, res.status, typeof e?.code === "number" ? e.code : undefined, details, retryAfter(res));
}

export class GraphApi {
  private readonly root: string;
  private readonly origin: string;

  constructor(private readonly opts: GraphOptions) {
    this.root = `${opts.baseUrl.replace(/\/+$/, "")}/${opts.version}`;
    this.origin = new URL(opts.baseUrl).origin;
  }

  private async call(method: "GET" | "POST", path: string, body: unknown, signal?: AbortSignal): Promise<unknown> {
    const timeout = AbortSignal.timeout(this.opts.timeoutMs);
    const headers: Record<string, string> = { authorization: `Bearer ${this.opts.token}` };
    let payload: string | FormData | undefined;
    if (body instanceof FormData) payload = body;
    else if (body !== undefined) {
      payload = JSON.stringify(body);
      headers["content-type"] = "application/json";
    }
    const res = await fetch(`${this.root}/${path}`, { method, headers, ...(payload !== undefined ? { body: payload } : {}), signal: signal ? AbortSignal.any([signal, timeout]) : timeout });
    if (!res.ok) throw await graphError(res);
    return res.json();
  }

  /** Sends one message to `to`; returns its wamid. */
  async send(to: string, message: Record<string, unknown>, signal?: AbortSignal): Promise<string> {
    const got = await this.call("POST", `${this.opts.phoneNumberId}/messages`, { messaging_product: "whatsapp", recipient_type: "individual", to, ...message }, signal) as { messages?: { id?: unknown }[] };
    const id = got?.messages?.[0]?.id;
    if (typeof id !== "string" || !id) throw new GraphError("the Cloud API answered without a message id", 502);
    return id;
  }

  /** Marks the user's message read and shows "typing…" (until the reply, or 25 s). */
  async typing(messageId: string): Promise<void> {
    await this.call("POST", `${this.opts.phoneNumberId}/messages`, { messaging_product: "whatsapp", status: "read", message_id: messageId, typing_indicator: { type: "text" } });
  }

  /** Uploads a file for a message; returns its media id. */
  async upload(file: OutboundFile, mime: string, signal?: AbortSignal): Promise<string> {
    const form = new FormData();
    form.set("messaging_product", "whatsapp");
    form.set("type", mime);
    form.set("file", new Blob([file.bytes], { type: mime }), file.name.replace(/[\r\n"]+/g, " ").trim() || "file");
    const got = await this.call("POST", `${this.opts.phoneNumberId}/media`, form, signal) as { id?: unknown };
    if (typeof got?.id !== "string" || !got.id) throw new GraphError("the Cloud API answered the upload without a media id", 502);
    return got.id;
  }

  /** A user's file: its download url (valid minutes), type and size. */
  async mediaInfo(mediaId: string, signal?: AbortSignal): Promise<{ url: string; mime?: string; size?: number }> {
    if (!/^\d{1,40}$/.test(mediaId)) throw new GraphError(`"${mediaId.slice(0, 60)}" is not a media id`, 400);
    const got = await this.call("GET", mediaId, undefined, signal) as { url?: unknown; mime_type?: unknown; file_size?: unknown };
    if (typeof got?.url !== "string") throw new GraphError("the Cloud API gave no download url for the file", 502);
    const size = Number(got.file_size);
    return { url: got.url, ...(typeof got.mime_type === "string" ? { mime: got.mime_type } : {}), ...(Number.isSafeInteger(size) && size >= 0 ? { size } : {}) };
  }

  /** Downloads a media url with the token, at most `maxBytes` (media.maxFileMb); every hop on Meta's hosts or apiBaseUrl's origin. */
  async download(url: string, maxBytes: number, signal: AbortSignal): Promise<{ bytes: Uint8Array; mime?: string }> {
    let target = url;
    for (let hop = 0; ; hop++) {
      if (!mayCarryToken(target, this.origin)) throw new Error(`the media url is not on a Meta host (${hostOf(target)}): not fetched with the token`);
      const res = await fetch(target, { headers: { authorization: `Bearer ${this.opts.token}` }, signal, redirect: "manual" });
      const location = res.status >= 300 && res.status < 400 ? res.headers.get("location") : null;
      if (location === null) return cappedDownload(res, maxBytes);
      await res.body?.cancel().catch(() => undefined);
      if (hop >= MAX_REDIRECTS) throw new Error("too many redirects for a media url");
      target = new URL(location, target).href;
    }
  }
}

const MAX_REDIRECTS = 3;
/** Meta's domains a media url (and its redirects) may be on */
const META_DOMAINS = ["fbsbx.com", "facebook.com", "fbcdn.net", "whatsapp.net"];

const hostOf = (url: string) => {
  try {
    return new URL(url).hostname.slice(0, 100);
  } catch {
    return "not a url";
  }
};

/** Whether the access token may go to `url`: https on Meta's domains (or a subdomain), or `apiOrigin` (the configured apiBaseUrl's). */
export function mayCarryToken(url: string, apiOrigin: string): boolean {
  try {
    const u = new URL(url);
    if (u.origin === apiOrigin) return true;
    return u.protocol === "https:" && !u.username && !u.password && META_DOMAINS.some((d) => u.hostname === d || u.hostname.endsWith(`.${d}`));
  } catch {
    return false;
  }
}

/** The cap check before a download: a file the Cloud API says is larger is not fetched. */
export function checkAnnouncedSize(size: number | undefined, maxBytes: number): void {
  if (size !== undefined && size > maxBytes) throw new LurkError("LIMIT_EXCEEDED", `not downloaded: ${formatBytes(size)} is above the ${formatBytes(maxBytes)} cap (media.maxFileMb)`);
}
