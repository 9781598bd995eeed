/**
 * The idempotency keys of `lurk.sessions.usage` requests already counted: one more database in the
 * sessions store's LMDB environment,
 *   usageSeen  [UTC day it arrived, key] -> 1
 * Contract: a key is looked up on the day it arrives and the day before, so a retried request is
 * counted once (its retries come within seconds, at worst over midnight); days before that are
 * pruned with the ledger (store.ts `pruneUsage`). Written in the same transaction as the buckets
 * it guards, and replicated with them (`usageSeen` / `pruneUsageSeen` change-set ops).
 */
import type { Database, RootDatabase } from "lmdb";
import { addDays, type UsageSeenKey } from "../../shared/contract/index.js";

/** days a key is remembered, the day it arrived included */
export const USAGE_SEEN_DAYS = 2;

export class UsageSeen {
  private readonly db: Database<1, UsageSeenKey>;

  constructor(root: RootDatabase) {
    this.db = root.openDB({ name: "usageSeen" });
  }

  /** Whether `key` arrived today or yesterday (`today`: UTC `YYYY-MM-DD`). */
  has(key: string, today: string): boolean {
    for (let back = 0; back < USAGE_SEEN_DAYS; back++) if (this.db.get([addDays(today, -back), key]) !== undefined) return true;
    return false;
  }

  /** Inside a write transaction: remembers a key (also a followed change set's). */
  putInTxn(key: UsageSeenKey): void {
    void this.db.put(key, 1);
  }

  /** The oldest day a key is kept for; null when none is. */
  oldestDay(): string | null {
    for (const { key } of this.db.getRange({ limit: 1 })) return key[0];
    return null;
  }

  /** Inside a write transaction: forgets the keys of days before `before`. */
  pruneInTxn(before: string): void {
    for (const { key } of this.db.getRange({ end: [before] })) void this.db.remove(key);
  }
}
