/**
 * One named LMDB database in its own environment at `path` (created 0700) whose entries expire
 * `keepMs` after their time stamp (`stampOf`): swept when opened and every `sweepEveryMs`, all
 * expired entries in one write transaction. The channel stores extend it (the sent-ledger,
 * the run streams, the webhook's seen request ids).
 */
import { mkdirSync } from "node:fs";
import { open, type Database, type RootDatabase } from "lmdb";

export interface ExpiringDbOptions<V> {
  keepMs: number;
  sweepEveryMs: number;
  /** the entry's time stamp (ms) its age is measured from */
  stampOf(value: V): number;
  now?: () => number;
}

export class ExpiringDb<V> {
  readonly db: Database<V, string>;
  private readonly root: RootDatabase;
  private readonly sweeper: NodeJS.Timeout;
  protected readonly now: () => number;

  constructor(path: string, name: string, private readonly opts: ExpiringDbOptions<V>) {
    this.now = opts.now ?? Date.now;
    mkdirSync(path, { recursive: true, mode: 0o700 });
    this.root = open({ path });
    this.db = this.root.openDB({ name });
    this.sweeper = setInterval(() => void this.sweep(), opts.sweepEveryMs);
    this.sweeper.unref();
    void this.sweep();
  }

  get(key: string): V | undefined {
    return this.db.get(key);
  }

  /** Whether an entry is older than `keepMs`. */
  expired(value: V): boolean {
    return this.opts.stampOf(value) < this.now() - this.opts.keepMs;
  }

  /** Removes the expired entries; resolves with how many (durable then). */
  async sweep(): Promise<number> {
    let removed = 0;
    await this.root.transaction(() => {
      const cutoff = this.now() - this.opts.keepMs;
      const keys: string[] = [];
      for (const { key, value } of this.db.getRange()) if (this.opts.stampOf(value) < cutoff) keys.push(key);
      for (const key of keys) void this.db.remove(key);
      removed = keys.length;
    });
    return removed;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await this.root.close();
  }
}
