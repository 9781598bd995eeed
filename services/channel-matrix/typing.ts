/**
 * "typing…" while a run writes (`typingIndicator`): started on the run's first event, renewed
 * every REFRESH_MS (the homeserver drops it after its timeout), ended with the run. Best effort:
 * a failed typing call is logged at debug and never retried. Never into a room that turned
 * encrypted meanwhile (`encrypted`).
 */
import type { Logger } from "../../shared/runtime/logger.js";
import type { MatrixApi } from "./api.js";

const TIMEOUT_MS = 30_000;
const REFRESH_MS = 20_000;
/** a run that never ends stops typing after this long */
const MAX_MS = 30 * 60_000;

export class Typing {
  private readonly runs = new Map<string, { roomId: string; timer: NodeJS.Timeout; started: number }>();

  constructor(private readonly api: MatrixApi, private readonly userId: string, private readonly log: Logger, private readonly encrypted: (roomId: string) => boolean = () => false) {}

  private put(roomId: string, typing: boolean): void {
    if (this.encrypted(roomId)) return;
    this.api.typing(roomId, this.userId, typing, TIMEOUT_MS).catch((err) => this.log.debug({ err: (err as Error).message, roomId }, "typing notification failed"));
  }

  start(runId: string, roomId: string): void {
    if (this.runs.has(runId)) return;
    const started = Date.now();
    const timer = setInterval(() => {
      if (Date.now() - started > MAX_MS) this.stop(runId);
      else this.put(roomId, true);
    }, REFRESH_MS);
    timer.unref();
    this.runs.set(runId, { roomId, timer, started });
    this.put(roomId, true);
  }

  stop(runId: string): void {
    const run = this.runs.get(runId);
    if (!run) return;
    clearInterval(run.timer);
    this.runs.delete(runId);
    this.put(run.roomId, false);
  }

  stopAll(): void {
    for (const runId of [...this.runs.keys()]) this.stop(runId);
  }
}
