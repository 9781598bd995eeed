/**
 * Request ids already persisted (LMDB `<dataDir>/channel-webhook/seen`), kept for twice the
 * timestamp tolerance: a replayed or retried request inside the window is answered "duplicate"
 * without publishing again (JetStream's own duplicate window is only 2 minutes); one outside the
 * window is refused by its timestamp.
 */
import { ExpiringDb } from "../../shared/runtime/channel/index.js";

interface Seen { at: number; runId: string }

export class SeenIds extends ExpiringDb<Seen> {
  constructor(path: string, keepMs: number) {
    super(path, "seen", { keepMs, sweepEveryMs: Math.min(keepMs, 60_000), stampOf: (e) => e.at });
  }

  /** The id's entry while it is inside the window (an expired one not yet swept counts as unseen). */
  override get(id: string): Seen | undefined {
    const entry = super.get(id);
    return entry && !this.expired(entry) ? entry : undefined;
  }

  async add(id: string, runId: string): Promise<void> {
    await this.db.put(id, { at: this.now(), runId });
  }
}
