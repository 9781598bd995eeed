/**
 * A clock tests move by hand, for actors run in-process with an injected clock
 * (`cronActor({ clock })`, `heartbeatActor({ clock })`). `now()` is the test's time; timers fire
 * when `advance()` moves the time past them (in time order), never on their own.
 */
export class ManualClock {
  private timers: Array<{ at: number; fn: () => void; id: number }> = [];
  private nextId = 1;

  constructor(private time: number = Date.now()) {}

  now(): number {
    return this.time;
  }

  setTimer(fn: () => void, ms: number): { cancel(): void } {
    const id = this.nextId++;
    this.timers.push({ at: this.time + Math.max(0, ms), fn, id });
    return { cancel: () => void (this.timers = this.timers.filter((t) => t.id !== id)) };
  }

  /** Moves the time forward by `ms`, running every timer that comes due on the way. */
  advance(ms: number): void {
    const until = this.time + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= until).sort((x, y) => x.at - y.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t.id !== due.id);
      this.time = Math.max(this.time, due.at);
      due.fn();
    }
    this.time = until;
  }

  /** Timers waiting (for assertions and to know the scheduler re-armed). */
  get pending(): number {
    return this.timers.length;
  }
}
