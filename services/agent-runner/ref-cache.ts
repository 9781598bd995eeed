/**
 * What was loaded for a media ref, kept for the next LLM calls of a run: entries count the length
 * of their base64 bytes (a note counts 0) up to `maxBytes` in all, the oldest dropped first; one
 * larger than the cap is not kept. `clear()` drops everything (the actor idles).
 */
export type LoadedMedia = { dataBase64: string; mime: string } | { note: string };

export class RefCache {
  private readonly entries = new Map<string, LoadedMedia>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  get(key: string): LoadedMedia | undefined {
    return this.entries.get(key);
  }

  set(key: string, value: LoadedMedia): void {
    const size = sizeOf(value);
    if (size > this.maxBytes) return;
    while (this.bytes + size > this.maxBytes && this.entries.size > 0) {
      const [oldest, old] = this.entries.entries().next().value as [string, LoadedMedia];
      this.entries.delete(oldest);
      this.bytes -= sizeOf(old);
    }
    this.entries.set(key, value);
    this.bytes += size;
  }

  clear(): number {
    const n = this.entries.size;
    this.entries.clear();
    this.bytes = 0;
    return n;
  }
}

const sizeOf = (v: LoadedMedia) => ("dataBase64" in v ? v.dataBase64.length : 0);
