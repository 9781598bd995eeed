/**
 * Block streaming (`streaming: "block"`): while a run writes, each finished paragraph (run-watch
 * `onBlock`) is sent as its own platform message through the adapter's `deliver`, one run at a
 * time in order, and recorded in the RunStreamStore (durable) right after the platform took it.
 * The run's final reply (the outbound delivery) then sends only what the blocks did not show:
 * `deliverFinal` waits for the run's blocks in flight, stops further blocks, matches the sent
 * blocks against the start of the reply (a block that is not there, e.g. a tool-call turn's
 * "let me look", stays as it was) and delivers the remainder, chunked, recording each part, so
 * a restart in the middle resumes after the last part the platform took: exactly once.
 * A block the platform refuses stops block streaming for that run (the final reply sends it).
 * Between the platform accepting a message and the store write there is a window of a few ms in
 * which a kill makes that one message appear twice (as with every platform without idempotency keys).
 */
import type { ChannelName, OutboundMessage } from "../../contract/index.js";
import type { Logger } from "../logger.js";
import { chunkText, type ChunkMode } from "./chunk.js";
import type { DeliverResult, DeliveryAdapter, DeliveryContext, OutboundPart } from "./delivery.js";
import { parseReplyTags } from "./reply.js";
import { convertTables, type TableMode } from "./tables.js";
import type { RunStreamStore } from "./run-streams.js";

const FORGET_AFTER_MS = 30 * 60_000;

/** The reply's text after the blocks found at its start, in order (blocks not found are skipped). */
export function textAfterBlocks(full: string, blocks: readonly string[]): string {
  let pos = 0;
  for (const block of blocks) {
    const at = pos + (/^\s*/.exec(full.slice(pos))?.[0].length ?? 0);
    if (block && full.startsWith(block, at)) pos = at + block.length;
  }
  return full.slice(pos).trim();
}

interface RunBlocks {
  chain: Promise<void>;
  /** the final delivery began: no more blocks */
  closed: boolean;
  failed: boolean;
  sent: number;
}

export class BlockStreams {
  private readonly runs = new Map<string, RunBlocks>();
  private adapter: DeliveryAdapter | undefined;
  private limit = Infinity;
  private mode: ChunkMode = "paragraph";
  private tables: TableMode = "off";

  constructor(private readonly store: RunStreamStore, private readonly channel: ChannelName, private readonly signal: AbortSignal, private readonly log: Logger) {}

  /** The adapter that sends blocks, with the limit and chunk mode in force (set once the adapter started). */
  attach(adapter: DeliveryAdapter): void {
    this.adapter = adapter;
    this.limit = adapter.textLimit;
    this.mode = adapter.chunkMode ?? "paragraph";
    this.tables = adapter.tables ?? "off";
  }

  private state(runId: string): RunBlocks {
    let s = this.runs.get(runId);
    if (!s) {
      s = { chain: Promise.resolve(), closed: false, failed: false, sent: 0 };
      this.runs.set(runId, s);
      setTimeout(() => this.runs.delete(runId), FORGET_AFTER_MS).unref();
    }
    return s;
  }

  /** Queues a finished block of run `runId` to `conversation` (markdown as the model wrote it). */
  add(runId: string, conversation: string, block: string): void {
    const s = this.state(runId);
    const text = convertTables(parseReplyTags(block).text, this.tables).trim();
    if (s.closed || s.failed || !text) return;
    s.chain = s.chain.then(async () => {
      const adapter = this.adapter;
      if (s.closed || s.failed || !adapter) return;
      for (const piece of chunkText(text, this.limit, this.mode)) {
        const n = s.sent++;
        const message: OutboundMessage = {
          type: "lurk.outbound.message.v1", id: `${runId}:block:${n}`, ts: Date.now(), channel: this.channel, conversation,
          kind: "reply", replyTo: [], text: piece, attachments: [],
        };
        try {
          const result = await adapter.deliver({ message, text: piece, index: 0, count: 1, attachments: [] }, { deliveryId: message.id, attempt: 1, signal: this.signal, log: this.log });
          await this.store.addBlock(runId, { text: piece, platformMessageId: result?.platformMessageId ?? "" });
        } catch (err) {
          s.failed = true;
          this.log.warn({ err, runId }, "could not send a block; the final reply will carry it");
          return;
        }
      }
    });
  }

  /**
   * The adapter's deliver for one part of an outbound message: a run's reply whose blocks were
   * sent delivers only the rest (all of it on part 0; the later parts of the whole text are
   * already covered); everything else goes to `deliver` unchanged.
   */
  async deliverFinal(part: OutboundPart, dctx: DeliveryContext, deliver: (p: OutboundPart, c: DeliveryContext) => Promise<DeliverResult | void>): Promise<DeliverResult | void> {
    const msg = part.message;
    const runId = msg.runId;
    // attachment parts (after the text's) are never block-streamed
    if (!runId || msg.kind !== "reply" || part.attachments.length > 0) return deliver(part, dctx);
    const s = this.runs.get(runId);
    if (s) {
      s.closed = true;
      await s.chain;
    }
    const entry = this.store.get(runId);
    if (!entry || entry.blocks.length === 0) return deliver(part, dctx);
    const lastId = () => {
      const e = this.store.get(runId)!;
      return { platformMessageId: e.rest.at(-1) ?? e.blocks.at(-1)!.platformMessageId };
    };
    if (part.index > 0) return lastId();
    const rest = textAfterBlocks(convertTables(parseReplyTags(msg.text, msg.replyTo).text, this.tables), entry.blocks.map((b) => b.text));
    const pieces = chunkText(rest, this.limit, this.mode);
    for (let j = entry.rest.length; j < pieces.length; j++) {
      const result = await deliver({ message: msg, text: pieces[j]!, index: j, count: pieces.length, attachments: [] }, dctx);
      await this.store.addRest(runId, result?.platformMessageId ?? "");
    }
    dctx.log.info({ blocks: entry.blocks.length, rest: pieces.length }, "block-streamed reply completed");
    return lastId();
  }
}
