/**
 * "typing…" while a run writes, for a platform that shows it only for a while (Matrix, Signal):
 * `watch` follows the run (the kit's `watchRun`), shows typing on its first event and again every
 * `renewMs`, and ends it when the run ends or the watch is stopped (publishWatched's time limit,
 * a duplicate, a failure); `stopAll` ends every one (the channel stops). `show` is best effort:
 * it logs its own failures.
 */
import type { ChannelContext } from "./channel-actor.js";
import type { RunWatch } from "./run-watch.js";

export class RunTyping<T> {
  private readonly active = new Set<() => void>();

  constructor(
    private readonly watchRun: ChannelContext<unknown>["watchRun"],
    private readonly renewMs: number,
    private readonly show: (target: T, typing: boolean) => void,
  ) {}

  /** Follows run `runId`, typing into `target` while it writes. */
  watch(runId: string, target: T): RunWatch {
    let timer: NodeJS.Timeout | undefined;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      this.active.delete(stop);
      if (timer) {
        clearInterval(timer);
        this.show(target, false);
      }
    };
    const watch = this.watchRun(runId, {
      onEvent: () => {
        if (timer || ended) return;
        this.show(target, true);
        timer = setInterval(() => this.show(target, true), this.renewMs);
        timer.unref();
      },
      onEnd: end,
    });
    const stop = () => {
      watch.stop();
      end();
    };
    this.active.add(stop);
    return { ...watch, stop };
  }

  stopAll(): void {
    for (const stop of [...this.active]) stop();
  }
}
