/**
 * WhatsApp Cloud API webhook payloads -> what the channel takes (pure). A payload is
 * `{ object: "whatsapp_business_account", entry: [{ id, changes: [{ field: "messages", value }] }] }`;
 * a value carries `metadata.phone_number_id` (the business number it is for), `contacts[]`
 * (`profile.name`, `wa_id`), `messages[]` (users' messages and reactions) and `statuses[]` (what
 * became of the business's own messages). Every chat is a DM with one user: the peer, sender and
 * conversation are the user's WhatsApp id (`from`, their number's digits); a message's platform id
 * is its `wamid.…` id, which Meta keeps across its redeliveries. Media (image, audio and voice
 * notes, video, document, sticker) is mapped without bytes: the actor downloads each by its media
 * id (files.ts). `context.id` (the message a user replied to) becomes `replyToMessageId`.
 * Taken as text too: a button's or list's reply (its title), a location. Not taken: group
 * messages (`group_id`; the channel is DMs only), system messages, other types (logged).
 */
import { decodeToken, encodeToken, type Attachment } from "../../shared/contract/index.js";
import type { InboundInput } from "../../shared/runtime/channel/index.js";

export interface WaMedia { id?: unknown; mime_type?: unknown; caption?: unknown; filename?: unknown; voice?: unknown; animated?: unknown }
export interface WaMessage {
  from?: unknown;
  id?: unknown;
  timestamp?: unknown;
  type?: unknown;
  group_id?: unknown;
  context?: { id?: unknown; from?: unknown } | null;
  text?: { body?: unknown } | null;
  image?: WaMedia | null;
  audio?: WaMedia | null;
  video?: WaMedia | null;
  document?: WaMedia | null;
  sticker?: WaMedia | null;
  reaction?: { message_id?: unknown; emoji?: unknown } | null;
  button?: { text?: unknown } | null;
  interactive?: { button_reply?: { title?: unknown }; list_reply?: { title?: unknown } } | null;
  location?: { latitude?: unknown; longitude?: unknown; name?: unknown; address?: unknown } | null;
}
export interface WaStatus { id?: unknown; status?: unknown; recipient_id?: unknown; errors?: { code?: unknown; title?: unknown; message?: unknown }[] }
export interface WaValue {
  metadata?: { phone_number_id?: unknown; display_phone_number?: unknown };
  contacts?: { wa_id?: unknown; profile?: { name?: unknown } }[];
  messages?: WaMessage[];
  statuses?: WaStatus[];
  errors?: { code?: unknown; title?: unknown; message?: unknown }[];
}
export interface WaPayload { object?: unknown; entry: { id?: unknown; changes?: { field?: unknown; value?: WaValue }[] }[] }

/** A file of a message, to fetch by its media id (the published message carries its ref instead). */
export interface PendingFile { mediaId: string; kind: Attachment["kind"]; mime: string; name?: string }

export type Taken =
  | { kind: "message"; inbound: InboundInput; files: PendingFile[]; from: string }
  | { kind: "reaction"; id: string; from: string; name?: string; messageId: string; emoji: string; ts?: number }
  | { kind: "skipped"; why: string; id?: string };

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** Whether the value is a webhook payload at all (an object with an `entry` list); anything else is a 400. */
export function isPayload(v: unknown): v is WaPayload {
  return typeof v === "object" && v !== null && !Array.isArray(v) && Array.isArray((v as { entry?: unknown }).entry);
}

/** A user's WhatsApp id (their number's digits, `wa_id` / `from`). */
export const isWaId = (v: unknown): v is string => typeof v === "string" && /^\d{5,20}$/.test(v);

export const conversationOf = (waId: string) => encodeToken(waId);

/** Reverses conversationOf; throws on a conversation that is not one of ours. */
export function targetOf(conversation: string): string {
  const id = decodeToken(conversation);
  if (!isWaId(id)) throw new Error(`"${conversation}" is not a WhatsApp conversation`);
  return id;
}

/** A WhatsApp message id as the Cloud API gives them (`wamid.…`). */
export const isWamid = (v: unknown): v is string => typeof v === "string" && /^wamid\.[A-Za-z0-9+/=_-]{4,190}$/.test(v);

/** The values of a payload's `messages` changes (other fields are ignored). */
export function valuesOf(payload: WaPayload): WaValue[] {
  const out: WaValue[] = [];
  for (const entry of payload.entry) {
    if (!entry || typeof entry !== "object" || !Array.isArray(entry.changes)) continue;
    for (const change of entry.changes) {
      if (change && typeof change === "object" && (change.field === undefined || change.field === "messages") && change.value && typeof change.value === "object") out.push(change.value);
    }
  }
  return out;
}

const bareMime = (v: unknown, fallback: string) => (str(v)?.split(";")[0]?.trim().toLowerCase() || fallback);

function fileOf(m: WaMedia | null | undefined, kind: Attachment["kind"], fallbackMime: string, name?: string): PendingFile | undefined {
  const mediaId = str(m?.id);
  if (!m || !mediaId) return undefined;
  const given = str(m.filename) ?? name;
  return { mediaId, kind, mime: bareMime(m.mime_type, fallbackMime), ...(given ? { name: given.slice(0, 500) } : {}) };
}

/** The text and files of a message by its type; undefined for a type the channel does not take. */
function contentOf(m: WaMessage): { text: string; files: PendingFile[] } | undefined {
  const caption = (x: WaMedia | null | undefined) => str(x?.caption) ?? "";
  const one = (f: PendingFile | undefined, text: string) => (f ? { text, files: [f] } : undefined);
  switch (m.type) {
    case "text": { const body = str(m.text?.body); return body ? { text: body, files: [] } : undefined; }
    case "image": return one(fileOf(m.image, "image", "image/jpeg"), caption(m.image));
    case "audio": return one(fileOf(m.audio, "audio", "audio/ogg"), "");
    case "video": return one(fileOf(m.video, "video", "video/mp4"), caption(m.video));
    case "document": return one(fileOf(m.document, "file", "application/octet-stream"), caption(m.document));
    case "sticker": return one(fileOf(m.sticker, "image", "image/webp", "sticker.webp"), "");
    case "button": { const t = str(m.button?.text); return t ? { text: t, files: [] } : undefined; }
    case "interactive": { const t = str(m.interactive?.button_reply?.title) ?? str(m.interactive?.list_reply?.title); return t ? { text: t, files: [] } : undefined; }
    case "location": {
      const l = m.location;
      if (typeof l?.latitude !== "number" || typeof l?.longitude !== "number") return undefined;
      const label = [str(l.name), str(l.address)].filter(Boolean).join(", ");
      return { text: `[location: ${l.latitude}, ${l.longitude}${label ? ` (${label})` : ""}]`, files: [] };
    }
    default: return undefined;
  }
}

/** One entry of `messages[]`, as the channel takes it. */
export function takeMessage(m: WaMessage, value: WaValue): Taken {
  const id = isWamid(m?.id) ? m.id : undefined;
  if (!m || typeof m !== "object" || !id) return { kind: "skipped", why: "no message id" };
  if (m.group_id !== undefined) return { kind: "skipped", why: "a group message (the channel takes DMs only)", id };
  const from = m.from;
  if (!isWaId(from)) return { kind: "skipped", why: "no sender number (a username-only sender is not supported)", id };
  // the sender's profile; a lone contact of another id is the sender too (Meta may give `from` and `wa_id` in other forms)
  const contacts = Array.isArray(value.contacts) ? value.contacts : [];
  const contact = contacts.find((c) => c?.wa_id === from) ?? (contacts.length === 1 ? contacts[0] : undefined);
  const name = str(contact?.profile?.name)?.slice(0, 200);
  const seconds = Number(m.timestamp);
  const ts = Number.isSafeInteger(seconds) && seconds > 0 ? seconds * 1000 : undefined;
  if (m.type === "reaction") {
    const target = m.reaction?.message_id;
    if (!isWamid(target)) return { kind: "skipped", why: "a reaction without the message it is on", id };
    const emoji = typeof m.reaction?.emoji === "string" ? m.reaction.emoji : "";
    return { kind: "reaction", id, from, ...(name ? { name } : {}), messageId: target, emoji, ...(ts ? { ts } : {}) };
  }
  const content = contentOf(m);
  if (!content) return { kind: "skipped", why: `a ${typeof m.type === "string" ? m.type.slice(0, 40) : "typeless"} message the channel does not take`, id };
  const replyTo = m.context?.id;
  return {
    kind: "message",
    from,
    files: content.files,
    inbound: {
      id,
      conversation: conversationOf(from),
      peer: { kind: "dm", id: from },
      sender: { id: from, ...(name ? { name } : {}) },
      text: content.text,
      attachments: content.files.map((f) => ({ kind: f.kind, mime: f.mime, ...(f.name ? { name: f.name } : {}) })),
      mentioned: true,
      ...(isWamid(replyTo) ? { replyToMessageId: replyTo } : {}),
      ...(ts ? { ts } : {}),
    },
  };
}
