/**
 * Inbound debounce: items under one key (session + sender) that arrive within `windowMs` of
 * each other are flushed together, once the key was quiet for `windowMs` (or at the latest
 * `MAX_WINDOWS` windows after the first item). Every `add` resolves with the flush's result.
 */
const MAX_WINDOWS = 5;

interface Bucket<T, R> {
  items: T[];
  firstAt: number;
  timer: NodeJS.Timeout;
  flush: (items: T[]) => Promise<R>;
  promise: Promise<R>;
  resolve: (r: R) => void;
  reject: (e: unknown) => void;
}

export class Debouncer<T, R> {
  private readonly buckets = new Map<string, Bucket<T, R>>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Adds an item; `flush` of the bucket's first item is the one called. */
  add(key: string, item: T, windowMs: number, flush: (items: T[]) => Promise<R>): Promise<R> {
    let bucket = this.buckets.get(key);
    if (!bucket) {
      let resolve!: (r: R) => void;
      let reject!: (e: unknown) => void;
      const promise = new Promise<R>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      bucket = { items: [], firstAt: this.now(), timer: undefined as unknown as NodeJS.Timeout, flush, promise, resolve, reject };
      this.buckets.set(key, bucket);
    }
    bucket.items.push(item);
    clearTimeout(bucket.timer);
    const latest = bucket.firstAt + windowMs * MAX_WINDOWS - this.now();
    const b = bucket;
    bucket.timer = setTimeout(() => this.fire(key, b), Math.max(0, Math.min(windowMs, latest)));
    return bucket.promise;
  }

  /** Keys starting with `prefix` (a session): their items are dropped; returns them, the adds resolve with `result`. */
  cancel(prefix: string, result: R): T[] {
    const out: T[] = [];
    for (const [key, bucket] of this.buckets) {
      if (!key.startsWith(prefix)) continue;
      clearTimeout(bucket.timer);
      this.buckets.delete(key);
      out.push(...bucket.items);
      bucket.resolve(result);
    }
    return out;
  }

  private fire(key: string, bucket: Bucket<T, R>): void {
    if (this.buckets.get(key) === bucket) this.buckets.delete(key);
    bucket.flush(bucket.items).then(bucket.resolve, bucket.reject);
  }
}
