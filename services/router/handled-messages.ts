/**
 * Recent entries the router replicates for the instance that takes over (replica.ts), each
 * forgotten (`onForget`) beyond MAX_ENTRIES (oldest first) and after KEEP_MS: a lost ack comes
 * back after `bus.ackWaitMs` (30 s by default), so an hour leaves room for a failover.
 *
 * Contract: `remember` resolves once the entry is replicated (`onRemember`); the caller acks (or
 * goes on) after that, so a redelivery after a lost ack finds the entry at whichever router
 * instance is active then (a router that took the lease `restore`s the replicated entries).
 *
 * Two ledgers use it:
 * - `HandledMessages`: the inbound messages the router handled without a run of their own (merged
 *   into another message's run, handed to the active run, dropped by a queue policy, answered as
 *   a command): a redelivery is acked at once instead of getting a run (and an answer) of its
 *   own. Keyed `<channel>:<messageId>`.
 * - the hand-offs (term.ts): the run a message's work was handed to, keyed by the work's run id
 *   (queue.ts `handedTo`).
 */
export const MAX_ENTRIES = 20_000;
export const KEEP_MS = 60 * 60 * 1000;

export interface RecentEntriesOptions<V> {
  onRemember?: (key: string, at: number, value: V) => Promise<void>;
  onForget?: (key: string) => void;
  now?: () => number;
}

export class RecentEntries<V> {
  /** key -> when it was remembered and its value (insertion order: about age order, for the count bound) */
  private readonly entries = new Map<string, { at: number; value: V }>();
  private readonly now: () => number;

  constructor(private readonly opts: RecentEntriesOptions<V> = {}) {
    this.now = opts.now ?? Date.now;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  get(key: string): V | undefined {
    return this.entries.get(key)?.value;
  }

  async remember(key: string, value: V): Promise<void> {
    const at = this.now();
    this.entries.delete(key);
    this.entries.set(key, { at, value });
    while (this.entries.size > MAX_ENTRIES) this.forget(this.entries.keys().next().value!);
    await this.opts.onRemember?.(key, at, value);
  }

  /** An entry from the replica (the previous active router wrote it); a stale one is forgotten. */
  restore(key: string, at: number, value: V): void {
    if (at < this.now() - KEEP_MS) this.opts.onForget?.(key);
    else if (!this.entries.has(key)) this.entries.set(key, { at, value });
  }

  /**
   * Forgets the entries older than KEEP_MS; those `open` says are still in use are remembered
   * anew (replicated again) once older than half of it instead, so a copy in the replica never
   * ages out while its entry matters.
   */
  prune(open?: (key: string) => boolean): void {
    const now = this.now();
    for (const [key, { at, value }] of [...this.entries]) {
      if (open?.(key)) {
        if (at < now - KEEP_MS / 2) void this.remember(key, value);
      } else if (at < now - KEEP_MS) this.forget(key);
    }
  }

  private forget(key: string): void {
    this.entries.delete(key);
    this.opts.onForget?.(key);
  }
}

/** The messages handled without a run of their own (see the header); the value says nothing. */
export class HandledMessages extends RecentEntries<true> {
  override remember(key: string, value: true = true): Promise<void> {
    return super.remember(key, value);
  }

  override restore(key: string, at: number, value: true = true): void {
    super.restore(key, at, value);
  }
}
