/**
 * The tools actor's vector cache: LMDB at `<dataDir>/tools/embeddings` (shared by the tools
 * processes of a host, kept across restarts). Key `<model>\0<sha256 of the passage>`, value the
 * time it was last used (float64) followed by the unit vector (float32s), little-endian. A
 * second database orders the keys by last use, so over `maxEntries` the least recently used go
 * first (in one write with the new ones). A read refreshes the use time at most once a day, so a
 * search writes nothing for vectors it already found today.
 */
import { mkdirSync } from "node:fs";
import { endianness } from "node:os";
import { open, type Database, type RootDatabase } from "lmdb";

export const TOUCH_AFTER_MS = 24 * 3_600_000;
/** evicting this share below the cap at once, so a full cache does not evict on every write */
const EVICT_SLACK = 0.05;
const LITTLE = endianness() === "LE";

type UseKey = [number, string];

export class VectorCache {
  private readonly root: RootDatabase;
  private readonly vectors: Database<Buffer, string>;
  private readonly used: Database<boolean, UseKey>;

  constructor(readonly path: string, private readonly maxEntries: number, private readonly now: () => number = Date.now) {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    this.root = open({ path, compression: false });
    this.vectors = this.root.openDB({ name: "vectors", encoding: "binary" });
    this.used = this.root.openDB({ name: "used" });
  }

  /** The cached vector, or undefined. */
  get(model: string, hash: string): Float32Array | undefined {
    return this.getMany(model, [hash])[0] ?? undefined;
  }

  /** The cached vectors of `hashes` in order (null: not cached); the use times due a refresh are renewed in one write. */
  getMany(model: string, hashes: readonly string[]): Array<Float32Array | null> {
    const now = this.now();
    const touched: Array<{ key: string; vector: Float32Array; previous: number }> = [];
    const out = hashes.map((hash) => {
      const key = keyOf(model, hash);
      const value = this.vectors.get(key);
      if (!value || value.length < 12 || (value.length - 8) % 4 !== 0) return null;
      const usedAt = value.readDoubleLE(0);
      const vector = toVector(value);
      if (now - usedAt > TOUCH_AFTER_MS) touched.push({ key, vector, previous: usedAt });
      return vector;
    });
    if (touched.length > 0) void this.write(touched).catch(() => undefined);
    return out;
  }

  /** Stores vectors (durable when this resolves), then trims the cache to its cap. */
  async putMany(model: string, entries: Array<{ hash: string; vector: Float32Array }>): Promise<void> {
    if (entries.length === 0) return;
    await this.write(entries.map((e) => ({ key: keyOf(model, e.hash), vector: e.vector })));
  }

  get count(): number {
    return (this.vectors.getStats() as { entryCount?: number }).entryCount ?? 0;
  }

  async close(): Promise<void> {
    await this.root.close();
  }

  private write(entries: Array<{ key: string; vector: Float32Array; previous?: number }>): Promise<void> {
    const now = this.now();
    // encoded now, before the caller may hand the vectors to another thread
    const values = entries.map((e) => ({ key: e.key, value: toValue(now, e.vector), previous: e.previous }));
    // counted outside the write (the database's stats are not read inside one)
    const before = this.count;
    return this.root.transaction(() => {
      let added = 0;
      for (const { key, value, previous } of values) {
        const old = previous ?? this.vectors.get(key)?.readDoubleLE(0);
        if (old === undefined) added++;
        else void this.used.remove([old, key]);
        void this.vectors.put(key, value);
        void this.used.put([now, key], true);
      }
      this.evict(before + added);
    });
  }

  /** Inside a write: drops the least recently used entries over the cap (`count`: entries with this write's). */
  private evict(count: number): void {
    if (count <= this.maxEntries) return;
    const drop = count - Math.floor(this.maxEntries * (1 - EVICT_SLACK));
    for (const key of this.used.getKeys({ limit: drop })) {
      void this.used.remove(key);
      void this.vectors.remove(key[1]);
    }
  }
}

const keyOf = (model: string, hash: string) => `${model}\u0000${hash}`;

function toValue(usedAt: number, vector: Float32Array): Buffer {
  const value = Buffer.alloc(8 + vector.length * 4);
  value.writeDoubleLE(usedAt, 0);
  if (LITTLE) value.set(new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength), 8);
  else for (let i = 0; i < vector.length; i++) value.writeFloatLE(vector[i]!, 8 + i * 4);
  return value;
}

function toVector(value: Buffer): Float32Array {
  if (LITTLE) return new Float32Array(value.buffer.slice(value.byteOffset + 8, value.byteOffset + value.length));
  const out = new Float32Array((value.length - 8) / 4);
  for (let i = 0; i < out.length; i++) out[i] = value.readFloatLE(8 + i * 4);
  return out;
}
