/**
 * Streaming drafts for channels that can edit a message: while a run writes, one platform
 * message shows the text so far (sent on the first draft, then edited); the final delivery
 * takes that message (`take`) and edits it into the reply's first part instead of sending
 * another; a run that ends without a reply (silent, aborted) deletes it (`discard`). The
 * platform calls are the adapter's (`DraftPlatform`); drafts are plain text. The draft's
 * message id is also written to the channel's RunStreamStore (LMDB) before the draft is edited
 * again, so after a restart of the channel the final reply still edits the draft: the user
 * sees the reply once, never a stale partial plus the full reply. A draft is given to one
 * delivery (its retries and redeliveries get it again: editing is idempotent).
 * With `streaming: "block"` a run's finished paragraphs are sent as their own messages instead
 * (blocks.ts); `publishWithDraft` wires either.
 */
import { streamingMode, type StreamingMode } from "../config-channels.js";
import type { Logger } from "../logger.js";
import { runEndFromRecords } from "../run-ends.js";
import type { ChannelContext } from "./channel-actor.js";
import type { BlockStreams } from "./blocks.js";
import type { OutboundPart } from "./delivery.js";
import type { InboundInput, PublishedInbound } from "./inbound.js";
import type { RunStreamStore } from "./run-streams.js";
import type { RunWatch } from "./run-watch.js";

export interface DraftPlatform<T> {
  /** sends a new message to `target`; returns its platform id */
  send(target: T, text: string): Promise<string>;
  edit(target: T, messageId: string, text: string): Promise<void>;
  remove(target: T, messageId: string): Promise<void>;
  /** the most characters a draft shows (the platform's message limit, minus room) */
  maxChars: number;
}

const FORGET_AFTER_MS = 10 * 60_000;

interface Draft<T> {
  target: T;
  messageId: Promise<string | undefined>;
  lastText: string;
  taken: boolean;
  /** the delivery the draft was given to */
  takenBy?: string;
}

export class DraftMessages<T> {
  private readonly byRun = new Map<string, Draft<T>>();

  constructor(private readonly platform: DraftPlatform<T>, private readonly log: Logger, private readonly store?: RunStreamStore) {}

  /** Shows `text` as the run's draft (errors are logged: a draft is only a preview). */
  async update(runId: string, target: T, text: string, sessionKey?: string): Promise<void> {
    const max = this.platform.maxChars;
    const shown = text.length > max ? `${text.slice(0, max - 1)}…` : text;
    if (!shown.trim()) return;
    const draft = this.byRun.get(runId);
    if (!draft) {
      this.byRun.set(runId, {
        target, lastText: shown, taken: false,
        messageId: this.platform.send(target, shown).then(async (id) => {
          // durable before the first edit (or the final reply) uses it
          await this.store?.setDraft(runId, id, target, sessionKey).catch((err) => this.log.warn({ err, runId }, "could not record the draft"));
          return id;
        }, (err) => {
          this.log.warn({ err, runId }, "could not send a draft");
          return undefined;
        }),
      });
      setTimeout(() => this.byRun.delete(runId), FORGET_AFTER_MS).unref();
      return;
    }
    if (draft.taken || draft.lastText === shown) return;
    draft.lastText = shown;
    const id = await draft.messageId;
    if (id === undefined || draft.taken) return;
    await this.platform.edit(target, id, shown).catch((err) => this.log.debug({ err, runId }, "draft edit failed"));
  }

  /**
   * The run's draft message id for delivery `deliveryId` to replace (edit) with its first part:
   * to the first delivery that asks (from memory, or from the store after a restart), and again
   * to that same delivery on a retry; undefined to anyone else or when there is no draft.
   */
  async take(runId: string, deliveryId: string): Promise<string | undefined> {
    const draft = this.byRun.get(runId);
    if (draft && !draft.taken) {
      draft.taken = true;
      const id = await draft.messageId;
      if (id !== undefined && this.store) await this.store.takeDraft(runId, deliveryId).catch((err) => this.log.warn({ err, runId }, "could not record the draft's use"));
      draft.takenBy = deliveryId;
      return id;
    }
    if (draft && draft.takenBy === deliveryId) return draft.messageId;
    return this.store?.takeDraft(runId, deliveryId);
  }

  /** `take` for an outbound part: only the first part of a run's reply (or error) replaces the draft. */
  takeFor(part: OutboundPart): Promise<string | undefined> {
    const { runId, kind, id } = part.message;
    if (part.index !== 0 || !runId || (kind !== "reply" && kind !== "error")) return Promise.resolve(undefined);
    return this.take(runId, id);
  }

  /**
   * Drafts recorded before this process started (the channel was down when their run ended):
   * a run that ended silent or aborted gets no delivery to take its draft, so the draft is
   * deleted; a run still going, or one whose reply is on its way, is left alone (`sweep` looks
   * again later). `runEnd` reads the run from the sessions actor. Returns how many were deleted.
   */
  async removeOrphans(runEnd: (sessionKey: string, runId: string) => Promise<{ status: string; silent: boolean }>): Promise<number> {
    if (!this.store) return 0;
    let removed = 0;
    for (const orphan of this.store.untakenDrafts()) {
      if (this.byRun.has(orphan.runId)) continue; // this process shows it: its watch handles the end
      try {
        const end = await runEnd(orphan.sessionKey, orphan.runId);
        if (!endedWithoutReply(end)) continue;
        await this.platform.remove(orphan.target as T, orphan.draftId);
        await this.store.dropDraft(orphan.runId);
        removed++;
        this.log.info({ runId: orphan.runId, sessionKey: orphan.sessionKey, status: end.status }, "deleted the draft of a run that ended without a reply while the channel was down");
      } catch (err) {
        this.log.debug({ err, runId: orphan.runId }, "could not check or delete an old draft; the next sweep retries");
      }
    }
    return removed;
  }

  /** Deletes the draft of a run that ends without a reply. */
  async discard(runId: string): Promise<void> {
    const draft = this.byRun.get(runId);
    const id = await this.take(runId, `discard:${runId}`);
    if (id === undefined || !draft) return;
    await this.platform.remove(draft.target, id).catch((err) => this.log.debug({ err, runId }, "draft delete failed"));
    await this.store?.dropDraft(runId).catch(() => undefined);
  }
}

/** How a run ended, as the sessions actor recorded it (for a channel that was down when it ended). */
export async function storedRunEnd(rt: Pick<ChannelContext<unknown>["rt"], "client">, sessionKey: string, runId: string): Promise<{ status: string; silent: boolean }> {
  const { status, records } = await rt.client.call("sessions", "run", { sessionKey, runId });
  return { status, silent: runEndFromRecords(records)?.silent === true };
}

/** Whether a run ended without a reply to deliver: silent (NO_REPLY) or aborted. */
export function endedWithoutReply(end: { status: string; silent?: boolean; code?: string }): boolean {
  return (end.status === "done" && end.silent === true) || end.status === "aborted" || (end.status === "error" && end.code === "ABORTED");
}

/** how often a channel looks for drafts of runs that ended without a reply while it was down */
const ORPHAN_SWEEP_MS = 60_000;

/**
 * The channel's drafts, with the sweep of orphaned ones (`removeOrphans`) at start and every
 * ORPHAN_SWEEP_MS, reading runs from the sessions actor; stopped with the actor.
 */
export function channelDrafts<T>(ctx: Pick<ChannelContext<unknown>, "rt" | "log" | "streams">, platform: DraftPlatform<T>): DraftMessages<T> {
  const drafts = new DraftMessages(platform, ctx.log, ctx.streams);
  const sweep = () => void drafts.removeOrphans((sessionKey, runId) => storedRunEnd(ctx.rt, sessionKey, runId)).catch((err) => ctx.log.debug({ err }, "draft sweep failed"));
  const timer = setInterval(sweep, ORPHAN_SWEEP_MS);
  timer.unref();
  ctx.rt.onStop({ stop: async () => clearInterval(timer) });
  sweep();
  return drafts;
}

/** How long a draft watch waits for its run to end before giving up. */
const WATCH_MAX_MS = 30 * 60_000;

export interface DraftedPublish<T> {
  /** the kit's channel context parts used here (`settings`: a chat channel's streaming settings) */
  ctx: {
    rt: { nc: { flush(): Promise<void> } };
    settings: { streaming?: StreamingMode | undefined; streamDrafts?: boolean | undefined; draftIntervalMs: number };
    blocks: BlockStreams;
    runIdFor(platformMessageId: string): string;
    watchRun: ChannelContext<unknown>["watchRun"];
    publishInbound: ChannelContext<unknown>["publishInbound"];
  };
  /** the channel's drafts (used with `streaming: "draft"`; undefined: no drafts) */
  drafts: DraftMessages<T> | undefined;
  /** where the draft goes */
  target: T;
}

/**
 * Stores an inbound message in LURK_INBOUND (await it before acknowledging the platform) and,
 * for a message the bot answers (`mentioned`), streams its run as the channel's settings ask
 * (streamingMode): shows its text as a draft while it is written, or sends its finished
 * paragraphs (`ctx.blocks`). The watch is subscribed before the message is published, stopped
 * on a duplicate or a failure, and a silent or aborted run's draft is deleted.
 */
export async function publishWithDraft<T>(p: DraftedPublish<T>, inbound: InboundInput): Promise<PublishedInbound> {
  const { ctx, drafts } = p;
  const runId = ctx.runIdFor(inbound.id);
  const mode = inbound.mentioned ? streamingMode(ctx.settings) : "off";
  /** the run's session, from its first event (a draft records it) */
  let sessionKey: string | undefined;
  const watch = mode === "draft" && drafts
    ? ctx.watchRun(runId, {
      draftIntervalMs: ctx.settings.draftIntervalMs,
      onEvent: (event) => { sessionKey ??= event.sessionKey; },
      onDraft: (text) => drafts.update(runId, p.target, text, sessionKey),
      onEnd: (end) => {
        if (endedWithoutReply(end)) void drafts.discard(runId);
      },
    })
    : mode === "block"
      ? ctx.watchRun(runId, { onBlock: (text) => ctx.blocks.add(runId, inbound.conversation, text) })
      : undefined;
  return publishWatched(ctx, inbound, watch, WATCH_MAX_MS);
}

/**
 * Publishes an inbound message whose run `watch` follows (subscribed before the message is out):
 * the watch stops after `maxMs`, on a duplicate (an earlier delivery's run is followed there) and
 * on a failure.
 */
export async function publishWatched(
  ctx: { rt: { nc: { flush(): Promise<void> } }; publishInbound: ChannelContext<unknown>["publishInbound"] },
  inbound: InboundInput, watch: RunWatch | undefined, maxMs: number,
): Promise<PublishedInbound> {
  if (watch) {
    setTimeout(() => watch.stop(), maxMs).unref();
    await ctx.rt.nc.flush();
  }
  try {
    const published = await ctx.publishInbound(inbound);
    if (published.duplicate) watch?.stop();
    return published;
  } catch (err) {
    watch?.stop();
    throw err;
  }
}
