/**
 * What the channel already took, by id (LMDB `<dataDir>/channel-whatsapp/seen`, a week: Meta
 * retries an unanswered webhook for days, long after JetStream's duplicate window):
 * - `m:<wamid>` a message stored (with its sender, so the `message` tool's react can refuse a
 *   message of another chat), `r:<wamid>` a reaction taken: a redelivery found here is skipped;
 * - `e:<user>:<wamid>` the emoji a user has on a message: WhatsApp reports a removal with an empty
 *   emoji, and the agent is told which one was taken back.
 */
import { ExpiringDb } from "../../shared/runtime/channel/index.js";

export interface SeenEntry { at: number; from?: string; emoji?: string }

const KEEP_MS = 7 * 24 * 3600_000;

export class SeenStore extends ExpiringDb<SeenEntry> {
  constructor(path: string, now: () => number = Date.now) {
    super(path, "seen", { keepMs: KEEP_MS, sweepEveryMs: 3600_000, stampOf: (e) => e.at, now });
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  /** Durable when the promise resolves. */
  async add(key: string, fields: Omit<SeenEntry, "at"> = {}): Promise<void> {
    await this.db.put(key, { at: this.now(), ...fields });
  }

  async remove(key: string): Promise<void> {
    await this.db.remove(key);
  }
}
