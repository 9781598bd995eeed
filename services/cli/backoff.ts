/**
 * Restart backoff of a supervised process: 0.5 s doubling to 30 s, back to 0.5 s once the
 * process has stayed up for 60 s.
 */
export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  /** uptime after which the next failure counts as the first again */
  healthyMs: number;
}

export const RESTART_BACKOFF: BackoffOptions = { initialMs: 500, maxMs: 30_000, healthyMs: 60_000 };

export class Backoff {
  private failures = 0;

  constructor(private readonly opts: BackoffOptions = RESTART_BACKOFF) {}

  /** The delay before the next restart, given how long the process was up. */
  next(uptimeMs: number): number {
    if (uptimeMs >= this.opts.healthyMs) this.failures = 0;
    const delay = Math.min(this.opts.maxMs, this.opts.initialMs * 2 ** this.failures);
    this.failures++;
    return delay;
  }
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms % 1000 === 0 ? 0 : 1)} s`;
  const min = Math.floor(ms / 60_000);
  return `${min} min ${Math.round((ms % 60_000) / 1000)} s`;
}
