/**
 * What the channel sends, as Matrix event content, and how a failed call maps for the kit:
 * - text: `m.text` (a run's progress note: `m.notice`) with a plain `body` and, when the
 *   markdown has any markup, `format: org.matrix.custom.html` + `formatted_body` (markdown.ts
 *   toMatrixHtml, an allowlist of tags); `m.mentions: {}` (a reply pings nobody by its text);
 *   a reply quotes the inbound event with `m.relates_to.m.in_reply_to` (no fallback: spec v1.13);
 * - files: `m.image` / `m.audio` / `m.video` / `m.file` with the uploaded mxc:// URI and `info`
 *   (mimetype, size); OGG/Opus audio is a voice message (`org.matrix.msc3245.voice`);
 * - the transaction id of a part is derived from the delivery id and the part's index, so a
 *   retried delivery PUTs the same txnId and the homeserver answers with the event it already
 *   has instead of posting it twice;
 * - errors: 429 (M_LIMIT_EXCEEDED) waits `retry_after_ms`; 5xx, timeouts and network errors are
 *   retried; other 4xx (M_FORBIDDEN: not in the room, M_UNKNOWN_TOKEN...) fail for good.
 */
import { createHash } from "node:crypto";
import { DeliveryError, escapeHtml, toMatrixHtml, toPlainText, type OutboundFile } from "../../shared/runtime/channel/index.js";
import { MatrixError } from "./api.js";

/** the homeserver refuses events above 65536 bytes: the HTML is dropped before that */
const MAX_EVENT_BYTES = 60_000;
const VOICE_MIMES = new Set(["audio/ogg", "audio/opus"]);

/** The transaction id of part `index` of delivery `deliveryId` (stable across retries and restarts). */
export function txnIdFor(deliveryId: string, index: number): string {
  return `lb${createHash("sha256").update(`${deliveryId}\u0000${index}`).digest("hex").slice(0, 40)}`;
}

const replyRelation = (replyTo: string | undefined) => (replyTo ? { "m.relates_to": { "m.in_reply_to": { event_id: replyTo } } } : {});

/** A text message from model markdown. */
export function textContent(markdown: string, opts: { replyTo?: string | undefined; notice?: boolean } = {}): Record<string, unknown> {
  const body = toPlainText(markdown);
  const html = toMatrixHtml(markdown);
  const plainHtml = escapeHtml(body).replace(/\n/g, "<br>\n");
  const content: Record<string, unknown> = { msgtype: opts.notice ? "m.notice" : "m.text", body, "m.mentions": {}, ...replyRelation(opts.replyTo) };
  if (html !== plainHtml) {
    const formatted = { ...content, format: "org.matrix.custom.html", formatted_body: html };
    if (Buffer.byteLength(JSON.stringify(formatted)) <= MAX_EVENT_BYTES) return formatted;
  }
  return content;
}

/** The message of an uploaded file. */
export function fileContent(file: OutboundFile, mxc: string, replyTo?: string): Record<string, unknown> {
  const info = { mimetype: file.mime, size: file.bytes.byteLength };
  const base = { body: file.name, filename: file.name, url: mxc, info, "m.mentions": {}, ...replyRelation(replyTo) };
  if (file.kind === "image") return { msgtype: "m.image", ...base };
  if (file.kind === "video") return { msgtype: "m.video", ...base };
  if (file.kind === "audio") {
    return VOICE_MIMES.has(file.mime)
      ? { msgtype: "m.audio", ...base, "org.matrix.msc1767.audio": {}, "org.matrix.msc3245.voice": {} }
      : { msgtype: "m.audio", ...base };
  }
  return { msgtype: "m.file", ...base };
}

export function toDeliveryError(err: unknown): DeliveryError {
  if (err instanceof DeliveryError) return err;
  if (err instanceof MatrixError) {
    if (err.status === 429) return new DeliveryError("the homeserver rate-limits the bot (M_LIMIT_EXCEEDED)", { retryAfterMs: err.retryAfterMs ?? 1_000, cause: err });
    const permanent = err.status >= 400 && err.status < 500 && err.status !== 408;
    return new DeliveryError(err.message, { permanent, cause: err });
  }
  return new DeliveryError(`cannot reach the homeserver: ${(err as Error)?.message ?? String(err)}`, { cause: err });
}
