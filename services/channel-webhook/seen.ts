/**
 * Request ids already persisted (LMDB `<dataDir>/channel-webhook/seen`), kept for twice the
 * timestamp tolerance: a replayed or retried request inside the window is answered "duplicate"
 * without publishing again (JetStream's own duplicate window is only 2 minutes); one outside the
 * window is refused by its timestamp.
 */
import { mkdirSync } from "node:fs";
import { open, type RootDatabase, type Database } from "lmdb";

export class SeenIds {
  private readonly root: RootDatabase;
  private readonly ids: Database<{ at: number; runId: string }, string>;
  private readonly timer: NodeJS.Timeout;

  constructor(path: string, private readonly keepMs: number) {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    this.root = open({ path });
    this.ids = this.root.openDB({ name: "seen" });
    this.timer = setInterval(() => void this.sweep(), Math.min(keepMs, 60_000));
    this.timer.unref();
  }

  get(id: string): { at: number; runId: string } | undefined {
    const entry = this.ids.get(id);
    return entry && Date.now() - entry.at < this.keepMs ? entry : undefined;
  }

  async add(id: string, runId: string): Promise<void> {
    await this.ids.put(id, { at: Date.now(), runId });
  }

  async sweep(): Promise<void> {
    const cutoff = Date.now() - this.keepMs;
    for (const { key, value } of this.ids.getRange()) if (value.at < cutoff) await this.ids.remove(key);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.root.close();
  }
}
