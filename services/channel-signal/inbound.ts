/**
 * signal-cli receive events -> inbound messages (pure). An event's data is the `receive`
 * notification's params, `{ envelope, account }`; only envelopes with a `dataMessage` that says
 * something (text or attachments) are taken: receipts, typing, sync messages (what the account's
 * other devices sent), calls, stories, edits, reactions, deletions and group updates are not.
 * A DM's peer is the sender (their ACI uuid when signal-cli gives one, else their number); a
 * group's is the group id (base64, as signal-cli gives it). The platform message id is
 * `<sender>:<timestamp>`: a message's timestamp is its id in Signal, and quoting it needs both.
 * The bot is mentioned by a mention of its number or uuid, by quoting one of its messages, or
 * in a DM; its own mention (U+FFFC in the text) is cut, others read `@<number>`.
 * A quote becomes `replyToMessageId` and one context line before the text (not before a /command).
 */
import { decodeToken, encodeToken } from "../../shared/contract/index.js";
import type { InboundInput } from "../../shared/runtime/channel/index.js";
import { attachmentKind } from "../../shared/runtime/media.js";

export interface SignalAttachment { id?: string | null; contentType?: string | null; filename?: string | null; size?: number | null; caption?: string | null }
export interface SignalMention { number?: string | null; uuid?: string | null; name?: string | null; start: number; length: number }
export interface SignalQuote { id: number; author?: string | null; authorNumber?: string | null; authorUuid?: string | null; text?: string | null }
export interface SignalDataMessage {
  timestamp?: number;
  message?: string | null;
  groupInfo?: { groupId?: string | null; groupName?: string | null; type?: string | null } | null;
  attachments?: SignalAttachment[] | null;
  mentions?: SignalMention[] | null;
  quote?: SignalQuote | null;
  reaction?: unknown;
  remoteDelete?: unknown;
  sticker?: unknown;
}
export interface SignalEnvelope {
  source?: string | null;
  sourceNumber?: string | null;
  sourceUuid?: string | null;
  sourceName?: string | null;
  timestamp?: number;
  dataMessage?: SignalDataMessage | null;
  syncMessage?: unknown;
  receiptMessage?: unknown;
  typingMessage?: unknown;
  editMessage?: unknown;
}
/** What one SSE `receive` event carries. */
export interface SignalReceive { envelope?: SignalEnvelope; account?: string }

/** The account the channel runs as: its number, and its uuid when signal-cli told it. */
export interface BotIdentity { number: string; uuid?: string }

/** Where a reply goes: a person (uuid or number) or a group (base64 id). */
export type SignalTarget = { kind: "dm"; recipient: string } | { kind: "group"; groupId: string };

/** A file of the message, to fetch with getAttachment (the published message carries its ref instead). */
export interface PendingFile { id: string; mime: string; name?: string; size?: number }

export interface MappedMessage {
  inbound: InboundInput;
  files: PendingFile[];
  /** the sender to acknowledge (read receipt) and the message's timestamp */
  sender: string;
  timestamp: number;
}

const OBJECT_REPLACEMENT = "\uFFFC";
const QUOTE_CONTEXT_MAX = 300;

export function conversationOf(target: SignalTarget): string {
  return encodeToken(target.kind === "dm" ? `dm:${target.recipient}` : `group:${target.groupId}`);
}

/** Reverses conversationOf; throws on a conversation that is not one of ours. */
export function targetOf(conversation: string): SignalTarget {
  const raw = decodeToken(conversation);
  const dm = /^dm:(\S{1,100})$/.exec(raw);
  if (dm) return { kind: "dm", recipient: dm[1]! };
  const group = /^group:([A-Za-z0-9+/=_-]{8,200})$/.exec(raw);
  if (group) return { kind: "group", groupId: group[1]! };
  throw new Error(`"${conversation}" is not a Signal conversation`);
}

export const platformMessageId = (author: string, timestamp: number) => `${author}:${timestamp}`;

/** Reverses platformMessageId: the author (number or uuid) and timestamp a quote needs; undefined for another id. */
export function quoteOf(messageId: string | undefined): { author: string; timestamp: number } | undefined {
  const m = messageId ? /^(\+[1-9]\d{6,14}|[0-9a-fA-F-]{36}):(\d{1,16})$/.exec(messageId) : null;
  return m ? { author: m[1]!, timestamp: Number(m[2]) } : undefined;
}

/** Whether a number or uuid is the bot's account. */
export const isBot = (bot: BotIdentity, number?: string | null, uuid?: string | null) =>
  (!!number && number === bot.number) || (!!uuid && !!bot.uuid && uuid.toLowerCase() === bot.uuid.toLowerCase());

/** The text with mentions resolved: the bot's cut, another person's as `@<number or uuid>`. */
function resolveMentions(text: string, mentions: SignalMention[], bot: BotIdentity): { text: string; mentioned: boolean } {
  let out = text;
  let mentioned = false;
  for (const m of [...mentions].sort((a, b) => b.start - a.start)) {
    if (!Number.isInteger(m.start) || !Number.isInteger(m.length) || m.start < 0 || m.length < 1 || m.start + m.length > out.length) continue;
    const own = isBot(bot, m.number, m.uuid);
    if (own) mentioned = true;
    const label = own ? "" : `@${m.number ?? m.name ?? m.uuid ?? "someone"}`;
    out = out.slice(0, m.start) + label + out.slice(m.start + m.length);
  }
  return { text: out.split(OBJECT_REPLACEMENT).join("").replace(/[ \t]{2,}/g, " ").trim(), mentioned };
}

/** The inbound message of a receive event; undefined for what LurkBot does not take. */
export function receiveToInbound(ev: SignalReceive, bot: BotIdentity): MappedMessage | undefined {
  const env = ev.envelope;
  const data = env?.dataMessage;
  if (!env || !data || env.syncMessage) return undefined;
  if (data.reaction || data.remoteDelete) return undefined;
  const sender = env.sourceUuid || env.sourceNumber || env.source;
  const timestamp = data.timestamp ?? env.timestamp;
  if (!sender || typeof timestamp !== "number" || !Number.isSafeInteger(timestamp) || timestamp <= 0) return undefined;
  if (isBot(bot, env.sourceNumber ?? env.source, env.sourceUuid)) return undefined;
  const resolved = resolveMentions(data.message ?? "", data.mentions ?? [], bot);
  const files: PendingFile[] = (data.attachments ?? []).flatMap((a) => (a.id ? [{
    id: a.id, mime: a.contentType || "application/octet-stream",
    ...(a.filename ? { name: a.filename } : {}), ...(typeof a.size === "number" ? { size: a.size } : {}),
  }] : []));
  if (!resolved.text && files.length === 0) return undefined;
  const groupId = data.groupInfo?.groupId || undefined;
  const target: SignalTarget = groupId ? { kind: "group", groupId } : { kind: "dm", recipient: sender };
  const quote = data.quote ?? undefined;
  const quotedBot = quote ? isBot(bot, quote.authorNumber ?? quote.author, quote.authorUuid) : false;
  const quoteAuthor = quote ? quote.authorUuid || quote.authorNumber || quote.author : undefined;
  let text = resolved.text;
  if (quote && quote.text && !text.startsWith("/")) {
    const who = quotedBot ? "you" : (quote.authorNumber ?? quote.author ?? "someone");
    const said = quote.text.length > QUOTE_CONTEXT_MAX ? `${quote.text.slice(0, QUOTE_CONTEXT_MAX - 1)}…` : quote.text;
    text = `[replying to ${who}: "${said.replace(/\s+/g, " ")}"]\n${text}`;
  }
  const name = env.sourceName || undefined;
  return {
    sender,
    timestamp,
    files,
    inbound: {
      id: platformMessageId(sender, timestamp),
      conversation: conversationOf(target),
      peer: groupId ? { kind: "group", id: groupId } : { kind: "dm", id: sender },
      sender: { id: sender, ...(name ? { name: name.slice(0, 200) } : {}) },
      text,
      attachments: files.map((f) => ({ kind: attachmentKind(f.mime), mime: f.mime, ...(f.name ? { name: f.name } : {}), ...(f.size !== undefined ? { size: f.size } : {}) })),
      mentioned: !groupId || resolved.mentioned || quotedBot,
      ts: timestamp,
      ...(quote && quoteAuthor && Number.isSafeInteger(quote.id) ? { replyToMessageId: platformMessageId(quoteAuthor, quote.id) } : {}),
    },
  };
}
