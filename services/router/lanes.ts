/**
 * Per-session lanes: at most one active run per session key; work for a busy session waits in
 * FIFO order. `acquire` resolves when it is the caller's turn; `release(runId)` frees the lane
 * when the run ends (its terminal event, or reconciliation). A run that already holds the lane
 * (a redelivered message) is let through at once. A waiter can be withdrawn (queue drop
 * policies, /stop, interrupt): its `acquire` then resolves false.
 * A run the router did not dispatch (another actor stored it in RUNS: a child run, a cron
 * agentTurn) is held from its start (`hold`) until its end like a dispatched one; one that started
 * while another run holds the lane already runs beside it, so it waits at the head of the queue
 * (ahead of the router's own waiters, never withdrawn nor counted as queued) and its end, even
 * before it got the lane, removes it.
 * A work handed to the active run (steer, followup: the run accepted its input) waits beside that
 * run (`acquireAfter`: parked, not queued nor counted) and, at the run's end, heads the queue
 * (behind external runs already going), in the order handed: it is checked first, before the
 * later arrivals run. `withdraw` (/stop, interrupt) removes a parked one too.
 */
export interface LaneSnapshot {
  sessionKey: string;
  activeRunId?: string;
  activeSince?: number;
  lastActivity?: number;
  queued: number;
}

interface Lane {
  /** `storedAt`: since when its request is in RUNS at the latest (dispatched, or held as stored or started elsewhere) */
  active?: { runId: string; since: number; lastActivity: number; dispatched: boolean; storedAt?: number };
  /** `external`: a run that is already going (held, not granted): the lane is its next */
  waiting: Waiter[];
  /** works handed to the active run: the head of `waiting` once it ends */
  parked: Waiter[];
}

interface Waiter {
  runId: string;
  grant: (granted: boolean) => void;
  external?: boolean;
}

const noGrant = () => undefined;

export class Lanes {
  private readonly lanes = new Map<string, Lane>();
  private readonly byRun = new Map<string, string>();
  /** external runs waiting at the head of a lane: run id -> session key */
  private readonly queuedExternal = new Map<string, string>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Resolves true when the run holds the lane, false when it was withdrawn while waiting. */
  acquire(sessionKey: string, runId: string): Promise<boolean> {
    return this.grantOrWait(sessionKey, runId, (lane, waiter) => lane.waiting.push(waiter));
  }

  /**
   * As `acquire`, for a work handed to the run `after`: it waits beside that run and heads the
   * queue at its end. When `after` no longer holds the lane (it ended meanwhile), the work goes to
   * the head of the queue at once (or gets the idle lane).
   */
  acquireAfter(sessionKey: string, runId: string, after: string): Promise<boolean> {
    return this.grantOrWait(sessionKey, runId, (lane, waiter) => {
      if (lane.active?.runId === after) lane.parked.push(waiter);
      else this.toHead(lane, [waiter]);
    });
  }

  /** The session has an active run or waiters. */
  busy(sessionKey: string): boolean {
    const lane = this.lanes.get(sessionKey);
    return !!lane && (lane.active !== undefined || lane.waiting.length > 0);
  }

  activeRun(sessionKey: string): string | undefined {
    return this.lanes.get(sessionKey)?.active?.runId;
  }

  /** Run ids waiting for the session, oldest first (the router's own: external runs already going are not listed). */
  waitingRuns(sessionKey: string): string[] {
    return this.lanes.get(sessionKey)?.waiting.filter((w) => !w.external).map((w) => w.runId) ?? [];
  }

  /** Run ids of the works handed to the session's active run and waiting beside it, in the order handed. */
  parkedRuns(sessionKey: string): string[] {
    return this.lanes.get(sessionKey)?.parked.map((w) => w.runId) ?? [];
  }

  /** Removes a waiter (queued or parked); its acquire resolves false. */
  withdraw(sessionKey: string, runId: string): boolean {
    const lane = this.lanes.get(sessionKey);
    if (!lane) return false;
    const parked = lane.parked.findIndex((w) => w.runId === runId);
    const list = parked >= 0 ? lane.parked : lane.waiting;
    const index = parked >= 0 ? parked : lane.waiting.findIndex((w) => w.runId === runId && !w.external);
    if (index < 0) return false;
    const [waiter] = list.splice(index, 1);
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
    const queuedKey = this.queuedExternal.get(runId);
    if (queuedKey !== undefined) {
      // an external run that ended before it got the lane
      this.queuedExternal.delete(runId);
      const lane = this.lanes.get(queuedKey);
      const index = lane?.waiting.findIndex((w) => w.runId === runId && w.external) ?? -1;
      if (lane && index >= 0) lane.waiting.splice(index, 1);
      return true;
    }
    const key = this.byRun.get(runId);
    if (!key) return false;
    this.byRun.delete(runId);
    const lane = this.lanes.get(key);
    if (!lane || lane.active?.runId !== runId) return false;
    lane.active = undefined;
    this.toHead(lane, lane.parked.splice(0));
    const next = lane.waiting.shift();
    if (next) {
      this.activate(key, lane, next.runId, next.external === true);
      if (next.external) this.queuedExternal.delete(next.runId);
      next.grant(true);
    } else {
      this.lanes.delete(key);
    }
    return true;
  }

  isActive(runId: string): boolean {
    return this.byRun.has(runId);
  }

  /** The run holds its lane, or (external) waits at its head: its end is to be seen. */
  isHeld(runId: string): boolean {
    return this.byRun.has(runId) || this.queuedExternal.has(runId);
  }

  /** The run holds its lane and its request is stored in RUNS. */
  isDispatched(runId: string): boolean {
    const key = this.byRun.get(runId);
    return key !== undefined && this.lanes.get(key)?.active?.dispatched === true;
  }

  /**
   * A run already stored in RUNS that this router did not dispatch here: one that held its lane
   * under the previous router instance (replica.ts), or one another actor stored and that started
   * (its `run_start`). It holds the lane, dispatched, until its end (event, or the status check)
   * releases it; if another run holds the lane, it waits at the head of the queue (`queued`).
   * `known`: the run is held already.
   */
  hold(sessionKey: string, runId: string, since: number): "held" | "queued" | "known" {
    if (this.isHeld(runId)) return "known";
    const lane = this.lane(sessionKey);
    if (!lane.active) {
      this.activate(sessionKey, lane, runId, true, since);
      return "held";
    }
    this.toHead(lane, [{ runId, grant: noGrant, external: true }]);
    this.queuedExternal.set(runId, sessionKey);
    return "queued";
  }

  markDispatched(runId: string): void {
    const key = this.byRun.get(runId);
    const active = key ? this.lanes.get(key)?.active : undefined;
    if (active?.runId === runId) {
      active.dispatched = true;
      active.storedAt = this.now();
    }
  }

  /** Active runs with no activity for `idleMs`: candidates for a status check. */
  idleRuns(idleMs: number): Array<{ runId: string; sessionKey: string; since: number; storedAt?: number }> {
    const cutoff = this.now() - idleMs;
    const out: Array<{ runId: string; sessionKey: string; since: number; storedAt?: number }> = [];
    for (const [sessionKey, lane] of this.lanes) {
      const active = lane.active;
      if (active && active.lastActivity < cutoff) out.push({ runId: active.runId, sessionKey, since: active.since, ...(active.storedAt !== undefined ? { storedAt: active.storedAt } : {}) });
    }
    return out;
  }

  snapshot(sessionKey?: string): LaneSnapshot[] {
    const out: LaneSnapshot[] = [];
    for (const [key, lane] of this.lanes) {
      if (sessionKey && key !== sessionKey) continue;
      out.push({
        sessionKey: key,
        queued: lane.waiting.filter((w) => !w.external).length,
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
      queued += lane.waiting.filter((w) => !w.external).length;
    }
    return { active, queued };
  }

  private lane(key: string): Lane {
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { waiting: [], parked: [] };
      this.lanes.set(key, lane);
    }
    return lane;
  }

  /** The run holds the lane (it has it already, or the lane is idle), else it waits where `wait` puts it. */
  private grantOrWait(sessionKey: string, runId: string, wait: (lane: Lane, waiter: Waiter) => void): Promise<boolean> {
    const lane = this.lane(sessionKey);
    if (lane.active?.runId === runId) return Promise.resolve(true);
    if (!lane.active && lane.waiting.length === 0) {
      this.activate(sessionKey, lane, runId);
      return Promise.resolve(true);
    }
    return new Promise((resolve) => wait(lane, { runId, grant: resolve }));
  }

  /** Puts waiters at the head of the queue, behind the external runs already going. */
  private toHead(lane: Lane, waiters: Waiter[]): void {
    if (waiters.length === 0) return;
    const at = lane.waiting.findIndex((w) => !w.external);
    lane.waiting.splice(at < 0 ? lane.waiting.length : at, 0, ...waiters);
  }

  private activate(key: string, lane: Lane, runId: string, dispatched = false, since?: number): void {
    const now = this.now();
    lane.active = { runId, since: since ?? now, lastActivity: now, dispatched, ...(dispatched ? { storedAt: since ?? now } : {}) };
    this.byRun.set(runId, key);
  }
}
