/**
 * The inbound messages the router handled without a run of their own (merged into another
 * message's run, handed to the active run, dropped by a queue policy, answered as a command):
 * if such a message's ack is lost, its redelivery is acked at once instead of getting a run (and
 * an answer) of its own. Keyed `<channel>:<messageId>`.
 *
 * Contract: `remember` resolves once the entry is replicated (`onRemember`, replica.ts); the
 * caller acks after that, so a redelivery after a lost ack finds the entry at whichever router
 * instance is active then (a router that took the lease `restore`s the replicated entries).
 * Entries are forgotten (`onForget`) beyond MAX_ENTRIES (oldest first) and after KEEP_MS: a lost
 * ack comes back after `bus.ackWaitMs` (30 s by default), so an hour leaves room for a failover.
 */
export const MAX_ENTRIES = 20_000;
export const KEEP_MS = 60 * 60 * 1000;

export interface HandledMessagesOptions {
  onRemember?: (key: string, at: number) => Promise<void>;
  onForget?: (key: string) => void;
  now?: () => number;
}

export class HandledMessages {
  /** key -> when it was handled (insertion order: about age order, for the count bound) */
  private readonly entries = new Map<string, number>();
  private readonly now: () => number;

  constructor(private readonly opts: HandledMessagesOptions = {}) {
    this.now = opts.now ?? Date.now;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  async remember(key: string): Promise<void> {
    const at = this.now();
    this.entries.delete(key);
    this.entries.set(key, at);
    while (this.entries.size > MAX_ENTRIES) this.forget(this.entries.keys().next().value!);
    await this.opts.onRemember?.(key, at);
  }

  /** An entry from the replica (the previous active router handled the message); a stale one is forgotten. */
  restore(key: string, at: number): void {
    if (at < this.now() - KEEP_MS) this.opts.onForget?.(key);
    else if (!this.entries.has(key)) this.entries.set(key, at);
  }

  /** Forgets the entries older than KEEP_MS. */
  prune(): void {
    const since = this.now() - KEEP_MS;
    for (const [key, at] of this.entries) if (at < since) this.forget(key);
  }

  private forget(key: string): void {
    this.entries.delete(key);
    this.opts.onForget?.(key);
  }
}
