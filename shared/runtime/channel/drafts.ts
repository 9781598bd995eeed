/**
 * Streaming drafts for channels that can edit a message: while a run writes, one platform
 * message shows the text so far (sent on the first draft, then edited); the final delivery
 * takes that message (`take`) and edits it into the reply's first part instead of sending
 * another; a run that ends without a reply (silent, aborted) deletes it (`discard`). The
 * platform calls are the adapter's (`DraftPlatform`); drafts are plain text. Kept in memory:
 * after a restart the final reply is simply sent as a new message.
 */
import type { Logger } from "../logger.js";
import type { ChannelContext } from "./channel-actor.js";
import type { InboundInput, PublishedInbound } from "./inbound.js";

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
}

export class DraftMessages<T> {
  private readonly byRun = new Map<string, Draft<T>>();

  constructor(private readonly platform: DraftPlatform<T>, private readonly log: Logger) {}

  /** Shows `text` as the run's draft (errors are logged: a draft is only a preview). */
  async update(runId: string, target: T, text: string): Promise<void> {
    const max = this.platform.maxChars;
    const shown = text.length > max ? `${text.slice(0, max - 1)}…` : text;
    if (!shown.trim()) return;
    const draft = this.byRun.get(runId);
    if (!draft) {
      this.byRun.set(runId, {
        target, lastText: shown, taken: false,
        messageId: this.platform.send(target, shown).catch((err) => {
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

  /** The run's draft message id, once, for the final reply to replace. */
  async take(runId: string): Promise<string | undefined> {
    const draft = this.byRun.get(runId);
    if (!draft || draft.taken) return undefined;
    draft.taken = true;
    return draft.messageId;
  }

  /** Deletes the draft of a run that ends without a reply. */
  async discard(runId: string): Promise<void> {
    const draft = this.byRun.get(runId);
    const id = await this.take(runId);
    if (id === undefined || !draft) return;
    await this.platform.remove(draft.target, id).catch((err) => this.log.debug({ err, runId }, "draft delete failed"));
  }
}

/** How long a draft watch waits for its run to end before giving up. */
const WATCH_MAX_MS = 30 * 60_000;

export interface DraftedPublish<T> {
  /** the kit's channel context parts used here */
  ctx: {
    rt: { nc: { flush(): Promise<void> } };
    runIdFor(platformMessageId: string): string;
    watchRun: ChannelContext<unknown>["watchRun"];
    publishInbound: ChannelContext<unknown>["publishInbound"];
  };
  /** the channel's drafts, or undefined when drafting is off */
  drafts: DraftMessages<T> | undefined;
  /** where the draft goes */
  target: T;
  draftIntervalMs: number;
}

/**
 * Stores an inbound message in LURK_INBOUND (await it before acknowledging the platform) and,
 * for a message the bot answers (`mentioned`), shows its run's text as a draft while it is
 * written: the watch is subscribed before the message is published, stopped on a duplicate or
 * a failure, and a silent or aborted run's draft is deleted.
 */
export async function publishWithDraft<T>(p: DraftedPublish<T>, inbound: InboundInput): Promise<PublishedInbound> {
  const { ctx, drafts } = p;
  const runId = ctx.runIdFor(inbound.id);
  const watch = drafts && inbound.mentioned
    ? ctx.watchRun(runId, {
      draftIntervalMs: p.draftIntervalMs,
      onDraft: (text) => drafts.update(runId, p.target, text),
      onEnd: (end) => {
        if ((end.status === "done" && end.silent) || (end.status === "error" && end.code === "ABORTED")) void drafts.discard(runId);
      },
    })
    : undefined;
  if (watch) {
    setTimeout(() => watch.stop(), WATCH_MAX_MS).unref();
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
