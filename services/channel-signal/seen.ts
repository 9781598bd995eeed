/**
 * The messages already stored, by `<sender>:<timestamp>` (LMDB `<dataDir>/channel-signal/seen`,
 * a week): signal-cli replays up to its last 1000 events to a client it does not recognise (its
 * own restart loses the event ids), long after JetStream's duplicate window; a replayed message
 * found here is skipped, so it never starts a second run.
 */
import { ExpiringDb } from "../../shared/runtime/channel/index.js";

export interface SeenEntry { at: number }

const KEEP_MS = 7 * 24 * 3600_000;

export class SeenMessages extends ExpiringDb<SeenEntry> {
  constructor(path: string, now: () => number = Date.now) {
    super(path, "seen", { keepMs: KEEP_MS, sweepEveryMs: 3600_000, stampOf: (e) => e.at, now });
  }

  has(id: string): boolean {
    return this.get(id) !== undefined;
  }

  /** Durable when the promise resolves. */
  async add(id: string): Promise<void> {
    await this.db.put(id, { at: this.now() });
  }
}
