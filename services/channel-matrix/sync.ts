/**
 * The /sync long-poll loop that loses nothing and replays nothing: each batch is handled (its
 * messages stored in LURK_INBOUND), and only then is its `next_batch` written to LMDB (rooms.ts);
 * a restart syncs from the stored token. A batch whose handling fails is asked for again from the
 * same token (its messages keep their event ids, so JetStream's duplicate window stores each once).
 * The first sync of a fresh install (no token) is `initial`: the handler takes rooms, invites and
 * state from it but no messages (history is skipped). A room's timeline holds at most
 * TIMELINE_LIMIT events; a longer gap comes `limited`, and the handler fetches the rest (gap.ts)
 * before the token moves on. With the token the handler's last event id of each room is stored
 * (one transaction), where the next gap's catch-up stops. A failed or malformed /sync answer is
 * logged and retried with backoff (a 429 after the wait it asks for); the loop only ends on stop.
 * The filter asks for what the channel reads: room messages, reactions and redactions, encrypted
 * events, encryption and membership state (members lazy-loaded), invites, `m.direct`; no
 * presence, receipts or typing.
 */
import { sleepUnlessAborted } from "../../shared/runtime/abortable-sleep.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { MatrixError, type MatrixApi } from "./api.js";
import type { MatrixState } from "./rooms.js";
import type { SyncResponse } from "./wire.js";

const BACKOFF_MS = [1_000, 2_000, 5_000, 10_000, 30_000];

/** the event types of a room's timeline the channel reads (the sync's, and a gap's /messages); reactions and their redactions: reactions.ts */
export const TIMELINE_TYPES = ["m.room.message", "m.room.encrypted", "m.room.encryption", "m.room.member", "m.reaction", "m.room.redaction"];
/** events of one room per /sync; more come `limited` and are paged back (gap.ts) */
export const TIMELINE_LIMIT = 50;

export const SYNC_FILTER = {
  presence: { types: [] as string[] },
  account_data: { types: ["m.direct"] },
  room: {
    timeline: { types: TIMELINE_TYPES, limit: TIMELINE_LIMIT },
    state: { types: ["m.room.member", "m.room.encryption"], lazy_load_members: true },
    ephemeral: { types: [] as string[] },
    account_data: { types: [] as string[] },
  },
};

export interface SyncLoopOptions {
  api: MatrixApi;
  state: MatrixState;
  log: Logger;
  timeoutMs: number;
  /** handles one batch asked `since` (undefined: the initial sync); returns each room's last event id; throwing makes the loop ask for it again */
  handle(batch: SyncResponse, since: string | undefined): Promise<ReadonlyMap<string, string>>;
}

export class SyncLoop {
  private readonly abort = new AbortController();
  private loop: Promise<void> | undefined;

  constructor(private readonly opts: SyncLoopOptions) {}

  start(): void {
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }

  private async pause(failures: number, err: unknown): Promise<void> {
    const asked = err instanceof MatrixError && err.status === 429 ? err.retryAfterMs : undefined;
    await sleepUnlessAborted(asked ?? BACKOFF_MS[Math.min(failures, BACKOFF_MS.length) - 1]!, this.abort.signal);
  }

  private async run(): Promise<void> {
    const { api, state, log } = this.opts;
    const signal = this.abort.signal;
    let failures = 0;
    while (!signal.aborted) {
      const since = state.since;
      let batch: SyncResponse;
      try {
        batch = await api.sync({ since, filter: SYNC_FILTER, timeoutMs: since ? this.opts.timeoutMs : 0, signal });
      } catch (err) {
        if (signal.aborted) return;
        failures++;
        const e = err as MatrixError;
        const fields = { err: { message: e.message, status: e.status, errcode: e.errcode }, attempt: failures };
        if (e.errcode === "M_UNKNOWN_TOKEN") log.error(fields, "the homeserver refuses the access token: log in again and set LURKBOT_MATRIX_ACCESS_TOKEN; retrying");
        else log.warn(fields, "/sync failed; retrying");
        await this.pause(failures, err);
        continue;
      }
      try {
        const lastEvents = await this.opts.handle(batch, since);
        await state.commitBatch(batch.next_batch, lastEvents);
        failures = 0;
      } catch (err) {
        if (signal.aborted) return;
        failures++;
        log.warn({ err, attempt: failures }, "could not take a /sync batch; asking for it again");
        await this.pause(failures, err);
      }
    }
  }
}
