/**
 * Request ids already persisted (LMDB `<dataDir>/channel-webhook/seen`), kept for twice the
 * timestamp tolerance: a replayed or retried request inside the window is answered "duplicate"
 * without publishing again (JetStream's own duplicate window is only 2 minutes); one outside the
 * window is refused by its timestamp.
 */
import { ExpiringDb } from "../../shared/runtime/channel/index.js";

interface Seen { at: number; runId: string }

export class SeenIds {
  private readonly store: ExpiringDb<Seen>;

  constructor(path: string, keepMs: number) {
    this.store = new ExpiringDb(path, "seen", { keepMs, sweepEveryMs: Math.min(keepMs, 60_000), stampOf: (e) => e.at });
  }

  get(id: string): Seen | undefined {
    const entry = this.store.db.get(id);
    return entry && !this.store.expired(entry) ? entry : undefined;
  }

  async add(id: string, runId: string): Promise<void> {
    await this.store.db.put(id, { at: Date.now(), runId });
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
