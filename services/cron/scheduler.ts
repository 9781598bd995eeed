/**
 * The next-due heap: (time, jobId) pairs in a binary min-heap with lazy deletion (a job's
 * current time lives in `due`; heap entries that disagree are skipped when they surface), and
 * one timer armed for the earliest time. The timer never waits longer than MAX_SLEEP_MS, so a
 * wall-clock jump (suspend, NTP step) is noticed within that.
 *
 * The clock is injected: production uses Date.now and real timers; pure tests call `popDue(now)`.
 */

export interface Clock {
  now(): number;
  setTimer(fn: () => void, ms: number): { cancel(): void };
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
};

const MAX_SLEEP_MS = 30_000;

interface Entry {
  at: number;
  jobId: string;
}

export class DueHeap {
  private heap: Entry[] = [];
  private readonly due = new Map<string, number>();

  get size(): number {
    return this.due.size;
  }

  /** Sets (or with undefined removes) a job's next time. */
  set(jobId: string, at: number | undefined): void {
    if (at === undefined) {
      this.due.delete(jobId);
      return;
    }
    if (this.due.get(jobId) === at) return;
    this.due.set(jobId, at);
    this.push({ at, jobId });
    // lazy deletion leaves garbage: compact when it outgrows the live entries
    if (this.heap.length > 2 * this.due.size + 1024) this.rebuild([...this.due]);
  }

  get(jobId: string): number | undefined {
    return this.due.get(jobId);
  }

  /** Replaces everything (heapify, O(n)). */
  rebuild(entries: Iterable<[string, number | undefined]>): void {
    this.due.clear();
    const heap: Entry[] = [];
    for (const [jobId, at] of entries) {
      if (at === undefined) continue;
      this.due.set(jobId, at);
      heap.push({ at, jobId });
    }
    this.heap = heap;
    for (let i = (heap.length >> 1) - 1; i >= 0; i--) this.down(i);
  }

  /** The earliest live time, or undefined. */
  peek(): number | undefined {
    this.dropStale();
    return this.heap[0]?.at;
  }

  /** Removes and returns every job due at `now` (earliest first). */
  popDue(now: number): string[] {
    const out: string[] = [];
    for (;;) {
      this.dropStale();
      const top = this.heap[0];
      if (!top || top.at > now) return out;
      this.pop();
      this.due.delete(top.jobId);
      out.push(top.jobId);
    }
  }

  private dropStale(): void {
    while (this.heap.length > 0 && this.due.get(this.heap[0]!.jobId) !== this.heap[0]!.at) this.pop();
  }

  private push(e: Entry): void {
    const h = this.heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (h[parent]!.at <= e.at) break;
      h[i] = h[parent]!;
      i = parent;
    }
    h[i] = e;
  }

  private pop(): void {
    const h = this.heap;
    const last = h.pop()!;
    if (h.length === 0) return;
    h[0] = last;
    this.down(0);
  }

  private down(i: number): void {
    const h = this.heap;
    const e = h[i]!;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= h.length) break;
      if (child + 1 < h.length && h[child + 1]!.at < h[child]!.at) child++;
      if (h[child]!.at >= e.at) break;
      h[i] = h[child]!;
      i = child;
    }
    h[i] = e;
  }
}

/**
 * Calls `onDue(jobIds)` when jobs come due, one batch at a time (the next batch waits for the
 * previous one), while started.
 */
export class Scheduler {
  readonly heap = new DueHeap();
  private timer: { cancel(): void } | undefined;
  private running = false;
  private busy: Promise<void> = Promise.resolve();

  constructor(private readonly clock: Clock, private readonly onDue: (jobIds: string[]) => Promise<void>) {}

  set(jobId: string, at: number | undefined): void {
    this.heap.set(jobId, at);
    this.arm();
  }

  rebuild(entries: Iterable<[string, number | undefined]>): void {
    this.heap.rebuild(entries);
    this.arm();
  }

  start(): void {
    this.running = true;
    this.arm();
  }

  stop(): Promise<void> {
    this.running = false;
    this.timer?.cancel();
    this.timer = undefined;
    return this.busy;
  }

  get nextAt(): number | undefined {
    return this.heap.peek();
  }

  private arm(): void {
    this.timer?.cancel();
    this.timer = undefined;
    if (!this.running) return;
    const next = this.heap.peek();
    if (next === undefined) return;
    const wait = Math.max(0, Math.min(next - this.clock.now(), MAX_SLEEP_MS));
    this.timer = this.clock.setTimer(() => this.fireDue(), wait);
  }

  private fireDue(): void {
    this.timer = undefined;
    this.busy = this.busy.then(async () => {
      if (!this.running) return;
      const due = this.heap.popDue(this.clock.now());
      if (due.length > 0) await this.onDue(due).catch(() => undefined);
    }).finally(() => this.arm());
  }
}
