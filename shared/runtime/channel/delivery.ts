/**
 * Outbound: the durable consumer `channel-<name>` on LURK_OUTBOUND (filter `lurk.out.<name>.>`)
 * hands each delivery to the adapter's `deliver`, one part (chunk) at a time:
 * - "typing" messages go to `typing` (first delivery only, never retried, never ledgered);
 * - a silent reply (NO_REPLY) is dropped; reply tags become `replyToMessageId`;
 * - the text is chunked to the adapter's `textLimit`; every accepted part is written to the
 *   sent-ledger before the next, so a redelivery resumes after it and never sends it twice;
 * - a failed part is retried by redelivery (the bus backoff: 1 s, 5 s, 15 s, 60 s by default)
 *   up to `maxAttempts` deliveries; a `DeliveryError` with `permanent` (or the last attempt)
 *   ends it. A platform's short retry-after (<= 30 s, e.g. a 429) is waited in process, at
 *   most MAX_INLINE_WAITS times (and MAX_INLINE_WAIT_TOTAL_MS in all) per attempt; then the
 *   attempt counts as failed like any other error, so a platform that keeps answering 429 ends
 *   in `delivery_failed` after `maxAttempts` attempts too. The end of a failed delivery:
 *   ledger "failed", `lurk.evt.channel-<name>.delivery_failed`, an error log, ack.
 *   A channel user cannot reach the user's other channels: the router or an operator surfaces
 *   the event (`lurkbot tail`). A delivery delivered more than `bus.maxDeliver` times (every
 *   earlier attempt interrupted: the channel crashed or stopped while sending it) ends the same
 *   way without another attempt, so a message that kills the channel cannot crash-loop it; a
 *   stop between parts (or in a retry-after wait) on its last delivery ends it so too, not as a
 *   dead letter without a receipt;
 * - success emits `lurk.evt.channel-<name>.delivered`; a delivery found in the ledger as sent
 *   emits `delivered` with status "duplicate" and sends nothing;
 * - markdown tables are converted as the channel's `tables` mode says (tables.ts) before chunking;
 * - kind "action" (the `message` tool's react, edit, delete; actions.ts) goes to the adapter's
 *   `act`, answered by the same receipts (with `action`); a channel without it, or without that
 *   action, answers "<action> is not supported by <channel>".
 */
import {
  CONSUMERS, deliveryReceiptSchema, LurkError, outboundMessageSchema, STREAMS, type OutboundMessage,
} from "../../contract/index.js";
import type { ActorRuntime } from "../actor.js";
import type { DeliveryInfo } from "../consumer.js";
import type { Logger } from "../logger.js";
import { chunkText, type ChunkMode } from "./chunk.js";
import type { SentLedger } from "./ledger.js";
import { isSilentReply, parseReplyTags } from "./reply.js";
import { convertTables, type TableMode } from "./tables.js";
import { handleAction, type ActionRequest } from "./actions.js";
import { sleepUnlessAborted as sleep } from "../abortable-sleep.js";

import type { Attachment } from "../../contract/index.js";
export type { Attachment };

/** One platform message to send. */
export interface OutboundPart {
  message: OutboundMessage;
  /** this part's text (markdown as the model wrote it, tags removed): render it with markdown.ts */
  text: string;
  index: number;
  count: number;
  /** platform message id to reply to / quote (from a reply tag) */
  replyToMessageId?: string;
  /**
   * empty on a text part; an attachment part has exactly one attachment and empty text (the
   * text's chunks come first, then one part per attachment: upload it, e.g. with
   * loadOutboundFile from media.ts, and send attachmentFallbackText when it cannot be loaded)
   */
  attachments: Attachment[];
}

export interface DeliveryContext {
  deliveryId: string;
  /** 1 on the first delivery of the outbound message */
  attempt: number;
  signal: AbortSignal;
  log: Logger;
}

export interface DeliverResult {
  platformMessageId?: string;
}

/** Thrown by an adapter: `permanent` = retrying cannot help (chat gone, bot blocked, 4xx). */
export class DeliveryError extends Error {
  constructor(message: string, readonly opts: { permanent?: boolean; retryAfterMs?: number; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "DeliveryError";
  }
}

/**
 * The platform target an outbound conversation names, parsed by the channel's `parse`; a
 * conversation that does not parse ends the delivery (or action) for good: a permanent
 * DeliveryError with the parser's message, since retrying cannot help.
 */
export function deliveryTarget<T>(parse: (conversation: string) => T, conversation: string): T {
  try {
    return parse(conversation);
  } catch (err) {
    throw new DeliveryError((err as Error).message, { permanent: true });
  }
}

export interface DeliveryAdapter {
  /** the platform's message length limit; Infinity sends each delivery whole */
  textLimit: number;
  chunkMode?: ChunkMode;
  deliver(part: OutboundPart, ctx: DeliveryContext): Promise<DeliverResult | void>;
  /** kind "typing": show a typing indicator (best effort) */
  typing?(message: OutboundMessage): Promise<void>;
  /** how markdown tables are shown (tables.ts; `markdown.tables` in the channel's config overrides it); default "off" */
  tables?: TableMode;
  /** the actions `act` can do (actions.ts); absent: none */
  actions?: readonly ActionRequest["op"][];
  /** does one action (react, edit, delete) on platform messages the kit resolved; throws a DeliveryError when it cannot */
  act?(request: ActionRequest, ctx: DeliveryContext): Promise<void>;
}

export interface DeliveryOptions {
  channel: string;
  ledger: SentLedger;
  adapter: DeliveryAdapter;
  maxAttempts: number;
  concurrency: number;
}

/** a retry-after the platform asked for is waited in-process when at most this long */
const MAX_INLINE_WAIT_MS = 30_000;
/** in-process waits per delivery attempt, and their total, before the attempt counts as failed */
const MAX_INLINE_WAITS = 3;
const MAX_INLINE_WAIT_TOTAL_MS = 60_000;
const TYPING_FRESH_MS = 30_000;

export function startDelivery(rt: ActorRuntime, opts: DeliveryOptions) {
  const { channel, ledger, adapter } = opts;
  // the consumer dead-letters at bus.maxDeliver: the last attempt is ours to report
  const maxAttempts = Math.max(1, Math.min(opts.maxAttempts, rt.config.bus.maxDeliver));

  const receipt = (event: "delivered" | "delivery_failed", msg: OutboundMessage, status: "delivered" | "failed" | "duplicate", attempts: number, extra: { platformMessageId?: string; error?: string } = {}) => {
    const body = deliveryReceiptSchema.parse({
      type: "lurk.outbound.receipt.v1", id: `${msg.id}:${status}`, ts: Date.now(), ...(msg.runId ? { runId: msg.runId } : {}), ...(msg.sessionKey ? { sessionKey: msg.sessionKey } : {}),
      causationId: msg.id, channel, deliveryId: msg.id, status, attempts, ...extra, ...(msg.action ? { action: msg.action.op } : {}),
    });
    rt.emit(event, body, event === "delivered" ? "info" : "error");
  };

  const fail = async (msg: OutboundMessage, attempts: number, error: string, log: Logger) => {
    await ledger.finish(msg.id, "failed", attempts, error, { conversation: msg.conversation, ...(msg.kind === "action" ? { action: true } : {}) });
    log.error({ deliveryId: msg.id, attempts, error }, "delivery failed for good");
    receipt("delivery_failed", msg, "failed", attempts, { error });
  };

  const handle = async (msg: OutboundMessage, info: DeliveryInfo) => {
    if (msg.channel !== channel) return;
    const log = rt.log.child({ deliveryId: msg.id, ...(msg.runId ? { runId: msg.runId } : {}), ...(msg.sessionKey ? { sessionKey: msg.sessionKey } : {}) });
    if (msg.kind === "typing") {
      if (!info.redelivered && Date.now() - msg.ts < TYPING_FRESH_MS) await adapter.typing?.(msg).catch((err) => log.debug({ err }, "typing failed"));
      return;
    }
    // every earlier delivery was interrupted (the channel crashed or stopped while sending it, say
    // a message that kills the process): given up, not tried again, so a crash loop ends
    if (info.deliveryCount > rt.config.bus.maxDeliver) {
      const status = ledger.get(msg.id)?.status;
      if (status !== "sent" && status !== "failed") {
        const tries = info.deliveryCount - 1;
        await fail(msg, tries, `the channel stopped while sending it, on each of its ${tries} attempts (a crash or a restart); given up`, log);
        return;
      }
    }
    if (msg.kind === "action") {
      await handleAction({ channel, ledger, adapter, maxAttempts, receipt, fail, signal: rt.signal }, msg, info, log);
      return;
    }
    if (msg.kind === "reply" && isSilentReply(msg.text) && msg.attachments.length === 0) {
      log.debug("silent reply: not delivered");
      return;
    }
    const known = ledger.get(msg.id);
    if (known?.status === "sent") {
      receipt("delivered", msg, "duplicate", known.attempts, known.parts.at(-1) ? { platformMessageId: known.parts.at(-1)! } : {});
      return;
    }
    if (known?.status === "failed") return;
    const tags = parseReplyTags(msg.text, msg.replyTo);
    // the text's chunks, then one part per attachment: each is its own ledger entry, so a retry
    // goes on at the file that failed
    const texts = chunkText(convertTables(tags.text, adapter.tables ?? "off"), adapter.textLimit, adapter.chunkMode ?? "paragraph");
    const pieces = [...texts.map((text) => ({ text, attachments: [] as Attachment[] })), ...msg.attachments.map((a) => ({ text: "", attachments: [a] }))];
    if (pieces.length === 0) return;
    const attempt = info.deliveryCount;
    let index = known?.parts.length ?? 0;
    let inlineWaits = 0;
    let inlineWaited = 0;
    while (index < pieces.length) {
      if (rt.signal.aborted) {
        // on its last delivery the consumer would dead-letter it without a receipt: given up here
        if (attempt >= rt.config.bus.maxDeliver) return fail(msg, attempt, `the channel stopped while sending it, on its last attempt (${attempt}); given up`, log);
        throw new LurkError("UNAVAILABLE", "the channel is stopping");
      }
      const part: OutboundPart = {
        message: msg, text: pieces[index]!.text, index, count: pieces.length,
        ...(tags.replyToMessageId && index === 0 ? { replyToMessageId: tags.replyToMessageId } : {}),
        attachments: pieces[index]!.attachments,
      };
      let result: DeliverResult | void;
      try {
        result = await adapter.deliver(part, { deliveryId: msg.id, attempt, signal: rt.signal, log });
      } catch (err) {
        const e = err instanceof DeliveryError ? err : new DeliveryError((err as Error)?.message ?? String(err));
        const waitMs = e.opts.retryAfterMs;
        if (!e.opts.permanent && waitMs !== undefined && waitMs <= MAX_INLINE_WAIT_MS && inlineWaits < MAX_INLINE_WAITS
          && inlineWaited + waitMs <= MAX_INLINE_WAIT_TOTAL_MS && !rt.signal.aborted) {
          inlineWaits++;
          inlineWaited += waitMs;
          log.warn({ waitMs, part: index, inlineWaits, attempt }, "platform asked to wait; retrying the part");
          await sleep(waitMs, rt.signal);
          continue;
        }
        if (e.opts.permanent || attempt >= maxAttempts) {
          await fail(msg, attempt, e.message, log);
          return;
        }
        throw new LurkError("UNAVAILABLE", `delivery attempt ${attempt} failed: ${e.message}`, { retryable: true });
      }
      await ledger.partSent(msg.id, result?.platformMessageId, pieces.length, attempt, msg.conversation, pieces[index]!.text);
      index++;
    }
    const entry = await ledger.finish(msg.id, "sent", attempt);
    const last = entry.parts.at(-1);
    log.info({ parts: pieces.length, attempt }, "delivered");
    receipt("delivered", msg, "delivered", attempt, last ? { platformMessageId: last } : {});
  };

  return rt.consume({
    stream: STREAMS.outbound,
    consumer: CONSUMERS.channel(channel),
    filterSubject: rt.subjects.outboundChannel(channel),
    schema: outboundMessageSchema,
    concurrency: opts.concurrency,
    handler: handle,
  });
}
