/**
 * Per-session lanes: at most one active run per session key; work for a busy session waits in
 * FIFO order. `acquire` resolves when it is the caller's turn; `release(runId)` frees the lane
 * when the run ends (its terminal event, or reconciliation). A run that already holds the lane
 * (a redelivered message) is let through at once. A waiter can be withdrawn (queue drop
 * policies, /stop, interrupt): its `acquire` then resolves false.
 */
export interface LaneSnapshot {
  sessionKey: string;
  activeRunId?: string;
  activeSince?: number;
  lastActivity?: number;
  queued: number;
}

interface Lane {
  active?: { runId: string; since: number; lastActivity: number; dispatched: boolean };
  waiting: Array<{ runId: string; grant: (granted: boolean) => void }>;
}

export class Lanes {
  private readonly lanes = new Map<string, Lane>();
  private readonly byRun = new Map<string, string>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Resolves true when the run holds the lane, false when it was withdrawn while waiting. */
  acquire(sessionKey: string, runId: string): Promise<boolean> {
    const lane = this.lane(sessionKey);
    if (lane.active?.runId === runId) return Promise.resolve(true);
    if (!lane.active && lane.waiting.length === 0) {
      this.activate(sessionKey, lane, runId);
      return Promise.resolve(true);
    }
    return new Promise((resolve) => lane.waiting.push({ runId, grant: resolve }));
  }

  /** The session has an active run or waiters. */
  busy(sessionKey: string): boolean {
    const lane = this.lanes.get(sessionKey);
    return !!lane && (lane.active !== undefined || lane.waiting.length > 0);
  }

  activeRun(sessionKey: string): string | undefined {
    return this.lanes.get(sessionKey)?.active?.runId;
  }

  /** Run ids waiting for the session, oldest first. */
  waitingRuns(sessionKey: string): string[] {
    return this.lanes.get(sessionKey)?.waiting.map((w) => w.runId) ?? [];
  }

  /** Removes a waiter; its acquire resolves false. */
  withdraw(sessionKey: string, runId: string): boolean {
    const lane = this.lanes.get(sessionKey);
    const index = lane?.waiting.findIndex((w) => w.runId === runId) ?? -1;
    if (!lane || index < 0) return false;
    const [waiter] = lane.waiting.splice(index, 1);
    waiter!.grant(false);
    if (!lane.active && lane.waiting.length === 0) this.lanes.delete(sessionKey);
    return true;
  }

  /** Marks the run as alive (any event of it), for reconciliation. */
  touch(runId: string): void {
    const key = this.byRun.get(runId);
    const active = key ? this.lanes.get(key)?.active : undefined;
    if (active?.runId === runId) active.lastActivity = this.now();
  }

  /** Frees the lane the run holds and grants it to the next waiter. Unknown runs are ignored. */
  release(runId: string): boolean {
    const key = this.byRun.get(runId);
    if (!key) return false;
    this.byRun.delete(runId);
    const lane = this.lanes.get(key);
    if (!lane || lane.active?.runId !== runId) return false;
    lane.active = undefined;
    const next = lane.waiting.shift();
    if (next) {
      this.activate(key, lane, next.runId);
      next.grant(true);
    } else {
      this.lanes.delete(key);
    }
    return true;
  }

  isActive(runId: string): boolean {
    return this.byRun.has(runId);
  }

  /** The run holds its lane and its request is stored in RUNS. */
  isDispatched(runId: string): boolean {
    const key = this.byRun.get(runId);
    return key !== undefined && this.lanes.get(key)?.active?.dispatched === true;
  }

  /**
   * A run that held its lane under the previous router instance (replica.ts): it holds the lane
   * here too, dispatched, until its end (event, or the status check) releases it.
   */
  restore(sessionKey: string, runId: string, since: number): void {
    const lane = this.lane(sessionKey);
    if (lane.active) return;
    lane.active = { runId, since, lastActivity: this.now(), dispatched: true };
    this.byRun.set(runId, sessionKey);
  }

  markDispatched(runId: string): void {
    const key = this.byRun.get(runId);
    const active = key ? this.lanes.get(key)?.active : undefined;
    if (active?.runId === runId) active.dispatched = true;
  }

  /** Active runs with no activity for `idleMs`: candidates for a status check. */
  idleRuns(idleMs: number): Array<{ runId: string; sessionKey: string }> {
    const cutoff = this.now() - idleMs;
    const out: Array<{ runId: string; sessionKey: string }> = [];
    for (const [sessionKey, lane] of this.lanes) if (lane.active && lane.active.lastActivity < cutoff) out.push({ runId: lane.active.runId, sessionKey });
    return out;
  }

  snapshot(sessionKey?: string): LaneSnapshot[] {
    const out: LaneSnapshot[] = [];
    for (const [key, lane] of this.lanes) {
      if (sessionKey && key !== sessionKey) continue;
      out.push({
        sessionKey: key,
        queued: lane.waiting.length,
        ...(lane.active ? { activeRunId: lane.active.runId, activeSince: lane.active.since, lastActivity: lane.active.lastActivity } : {}),
      });
    }
    return out;
  }

  counts(): { active: number; queued: number } {
    let active = 0;
    let queued = 0;
    for (const lane of this.lanes.values()) {
      if (lane.active) active++;
      queued += lane.waiting.length;
    }
    return { active, queued };
  }

  private lane(key: string): Lane {
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { waiting: [] };
      this.lanes.set(key, lane);
    }
    return lane;
  }

  private activate(key: string, lane: Lane, runId: string): void {
    const now = this.now();
    lane.active = { runId, since: now, lastActivity: now, dispatched: false };
    this.byRun.set(runId, key);
  }
}
