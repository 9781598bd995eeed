/**
 * What the channel sends, as Matrix event content, and how a failed call maps for the kit:
 * - text: `m.text` (a run's progress note: `m.notice`) with a plain `body` and, when the
 *   markdown has any markup, `format: org.matrix.custom.html` + `formatted_body` (markdown.ts
 *   toMatrixHtml, an allowlist of tags); `m.mentions: {}` (a reply pings nobody by its text);
 *   a reply quotes the inbound event with `m.relates_to.m.in_reply_to` (no fallback: spec v1.13);
 * - in a thread, every message carries the thread relation (`rel_type: m.thread`, `event_id` the
 *   root) with `m.in_reply_to` the message answered (else the root): `is_falling_back: true` (for
 *   clients without threads) unless a reply tag asked for a real reply;
 * - actions: a reaction is `m.reaction` with an `m.annotation` relation (`key`: the emoji); an edit
 *   is an m.room.message with `m.new_content` and `m.relates_to: { rel_type: m.replace }`, its
 *   fallback `body` (and `formatted_body`) the new text after "* " (spec 11.37.3);
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

/** How a message relates to others: the message it answers, and the thread it is in. */
export interface Relation {
  /** the event answered (quoted) */
  replyTo?: string | undefined;
  /** the root of the thread the message goes into */
  thread?: string | undefined;
  /** in a thread: `replyTo` is a real reply (a reply tag), not only the fallback */
  realReply?: boolean;
}

function relatesTo(r: Relation): Record<string, unknown> {
  if (r.thread) {
    return { "m.relates_to": { rel_type: "m.thread", event_id: r.thread, is_falling_back: !(r.realReply && r.replyTo), "m.in_reply_to": { event_id: r.replyTo ?? r.thread } } };
  }
  return r.replyTo ? { "m.relates_to": { "m.in_reply_to": { event_id: r.replyTo } } } : {};
}

/** `msgtype`, `body` and (when the markdown has markup) `format` + `formatted_body` of model markdown. */
function rendered(markdown: string, notice: boolean | undefined): { plain: Record<string, unknown>; html?: string } {
  const body = toPlainText(markdown);
  const html = toMatrixHtml(markdown);
  const plainHtml = escapeHtml(body).replace(/\n/g, "<br>\n");
  return { plain: { msgtype: notice ? "m.notice" : "m.text", body }, ...(html !== plainHtml ? { html } : {}) };
}

const fits = (content: unknown) => Buffer.byteLength(JSON.stringify(content)) <= MAX_EVENT_BYTES;

/** A text message from model markdown (`opts.replyTo`/`thread`: its relation, Relation). */
export function textContent(markdown: string, opts: Relation & { notice?: boolean } = {}): Record<string, unknown> {
  const { plain, html } = rendered(markdown, opts.notice);
  const content: Record<string, unknown> = { ...plain, "m.mentions": {}, ...relatesTo(opts) };
  if (html !== undefined) {
    const formatted = { ...content, format: "org.matrix.custom.html", formatted_body: html };
    if (fits(formatted)) return formatted;
  }
  return content;
}

/** The edit of `eventId` (a message of `msgtype` m.text or m.notice) to new model markdown. */
export function editContent(eventId: string, markdown: string, notice: boolean): Record<string, unknown> {
  const { plain, html } = rendered(markdown, notice);
  const relation = { "m.relates_to": { rel_type: "m.replace", event_id: eventId } };
  const star = (c: Record<string, unknown>) => ({ ...c, body: `* ${String(c.body)}`, ...(c.formatted_body !== undefined ? { formatted_body: `* ${String(c.formatted_body)}` } : {}) });
  const newPlain = { ...plain, "m.mentions": {} };
  if (html !== undefined) {
    const newHtml = { ...newPlain, format: "org.matrix.custom.html", formatted_body: html };
    const edit = { ...star(newHtml), "m.new_content": newHtml, "m.mentions": {}, ...relation };
    if (fits(edit)) return edit;
  }
  return { ...star(newPlain), "m.new_content": newPlain, "m.mentions": {}, ...relation };
}

/** A reaction (`key`: the emoji) to `eventId`. */
export const reactionContent = (eventId: string, key: string): Record<string, unknown> => ({ "m.relates_to": { rel_type: "m.annotation", event_id: eventId, key } });

/** The message of an uploaded file. */
export function fileContent(file: OutboundFile, mxc: string, relation: Relation = {}): Record<string, unknown> {
  const info = { mimetype: file.mime, size: file.bytes.byteLength };
  const base = { body: file.name, filename: file.name, url: mxc, info, "m.mentions": {}, ...relatesTo(relation) };
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
