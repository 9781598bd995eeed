/**
 * Long polling that loses nothing: updates are fetched with getUpdates and handled one by one;
 * the offset (which confirms updates to Telegram) moves past an update only after its handler
 * succeeded, i.e. after the message is stored in LURK_INBOUND. A failing handler is retried
 * with backoff; a restart re-reads the unconfirmed updates and JetStream's duplicate window
 * (the platform message id is the Nats-Msg-Id) keeps them from running twice.
 */
import type { Api } from "grammy";
import type { Update } from "grammy/types";
import type { Logger } from "../../shared/runtime/logger.js";
import { tgSignal } from "./send.js";
import { sleepUnlessAborted } from "../../shared/runtime/abortable-sleep.js";

const BACKOFF_MS = [500, 1_000, 2_000, 5_000, 10_000];
/** the update kinds the channel asks Telegram for (polling and webhook alike; reactions need `message_reaction` listed) */
export const ALLOWED_UPDATES = ["message", "callback_query", "message_reaction"] as const;

export interface PollerOptions {
  api: Api;
  log: Logger;
  timeoutSec: number;
  handle(update: Update): Promise<void>;
}

export class Poller {
  private readonly abort = new AbortController();
  private offset = 0;
  private loop: Promise<void> | undefined;

  constructor(private readonly opts: PollerOptions) {}

  start(): void {
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    const { api, log } = this.opts;
    let failures = 0;
    while (!this.abort.signal.aborted) {
      let updates: Update[];
      try {
        updates = await api.getUpdates({ offset: this.offset, timeout: this.opts.timeoutSec, allowed_updates: [...ALLOWED_UPDATES] }, tgSignal(this.abort.signal));
        failures = 0;
      } catch (err) {
        if (this.abort.signal.aborted) return;
        log.warn({ err, attempt: ++failures }, "getUpdates failed; retrying");
        await sleepUnlessAborted(BACKOFF_MS[Math.min(failures, BACKOFF_MS.length) - 1]!, this.abort.signal);
        continue;
      }
      for (const update of updates) {
        if (!(await this.handleWithRetry(update))) return;
        this.offset = update.update_id + 1;
      }
    }
  }

  /** true once handled; false when stopping first (the update stays unconfirmed). */
  private async handleWithRetry(update: Update): Promise<boolean> {
    for (let attempt = 1; !this.abort.signal.aborted; attempt++) {
      try {
        await this.opts.handle(update);
        return true;
      } catch (err) {
        this.opts.log.warn({ err, updateId: update.update_id, attempt }, "could not take a Telegram update; retrying");
        await sleepUnlessAborted(BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length) - 1]!, this.abort.signal);
      }
    }
    return false;
  }
}
