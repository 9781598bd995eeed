/**
 * What a channel already showed of a run while it was written, kept in LMDB
 * (`<dataDir>/channel-<name>/streams/`) so it survives a restart of the channel:
 * - `draftId`: the platform message that shows the run's draft (drafts.ts); the run's final
 *   reply edits it, also after a restart, instead of leaving it behind and sending another;
 *   with its target and the run's session key, so a restarted channel deletes the draft of a run
 *   that ended silent or aborted while it was down (no delivery would ever take it);
 * - `blocks`: the finished paragraphs already sent as their own messages (block streaming,
 *   blocks.ts), each with its platform message id; the final reply sends only the rest;
 * - `rest`: the platform ids of the final reply's remaining parts sent so far (a kill in the
 *   middle resumes after them).
 * Every write is durable when its promise resolves. Entries are swept a day after their last
 * write (a run's final delivery is long done by then).
 */
import { ExpiringDb } from "./expiring-db.js";

export interface SentBlock {
  /** the block's text as sent (markdown, tags removed) */
  text: string;
  platformMessageId: string;
}

export interface RunStreamEntry {
  draftId?: string;
  /** where the draft is (the adapter's target: chat id, channel and thread...), as JSON */
  draftTarget?: unknown;
  /** the run's session, from its events */
  sessionKey?: string;
  /** the delivery (outbound message id) that turned the draft into its reply */
  draftTakenBy?: string;
  blocks: SentBlock[];
  rest: string[];
  updatedAt: number;
}

const KEEP_MS = 24 * 3600_000;
const SWEEP_EVERY_MS = 3600_000;

export class RunStreamStore extends ExpiringDb<RunStreamEntry> {
  constructor(path: string, now: () => number = Date.now) {
    super(path, "runs", { keepMs: KEEP_MS, sweepEveryMs: SWEEP_EVERY_MS, stampOf: (e) => e.updatedAt, now });
  }

  private async update(runId: string, change: (e: RunStreamEntry) => RunStreamEntry): Promise<RunStreamEntry> {
    const current = this.get(runId) ?? { blocks: [], rest: [], updatedAt: 0 };
    const next = { ...change(current), updatedAt: this.now() };
    await this.db.put(runId, next);
    return next;
  }

  setDraft(runId: string, draftId: string, target?: unknown, sessionKey?: string): Promise<RunStreamEntry> {
    return this.update(runId, (e) => ({ ...e, draftId, ...(target !== undefined ? { draftTarget: target } : {}), ...(sessionKey ? { sessionKey } : {}) }));
  }

  /** Drafts no delivery took yet whose target and session are known, oldest first. */
  untakenDrafts(): Array<{ runId: string; draftId: string; target: unknown; sessionKey: string; updatedAt: number }> {
    const out = [];
    for (const { key, value } of this.db.getRange()) {
      if (value.draftId && !value.draftTakenBy && value.sessionKey && value.draftTarget !== undefined) {
        out.push({ runId: key, draftId: value.draftId, target: value.draftTarget, sessionKey: value.sessionKey, updatedAt: value.updatedAt });
      }
    }
    return out.sort((a, b) => a.updatedAt - b.updatedAt);
  }

  /**
   * The run's draft id for delivery `deliveryId`: given to the first delivery that asks, and
   * again to that same delivery (a redelivery edits the draft again: editing is idempotent).
   */
  async takeDraft(runId: string, deliveryId: string): Promise<string | undefined> {
    const e = this.get(runId);
    if (!e?.draftId) return undefined;
    if (e.draftTakenBy === deliveryId) return e.draftId;
    if (e.draftTakenBy !== undefined) return undefined;
    await this.update(runId, (cur) => ({ ...cur, draftTakenBy: deliveryId }));
    return e.draftId;
  }

  /** Forgets the draft (deleted). */
  dropDraft(runId: string): Promise<RunStreamEntry> {
    return this.update(runId, ({ draftId: _d, draftTakenBy: _t, ...rest }) => rest);
  }

  addBlock(runId: string, block: SentBlock): Promise<RunStreamEntry> {
    return this.update(runId, (e) => ({ ...e, blocks: [...e.blocks, block] }));
  }

  addRest(runId: string, platformMessageId: string): Promise<RunStreamEntry> {
    return this.update(runId, (e) => ({ ...e, rest: [...e.rest, platformMessageId] }));
  }
}
