/**
 * The heartbeat actor's LMDB store (`<dataDir>/heartbeat`), surviving restarts:
 *   agents: agentId -> AgentState (enabled override, next due time, last event, tokens spent,
 *           the run under way)
 *   alerts: `<agentId>\0<hash>` -> when that alert text was last delivered (24 h dedupe)
 */
import { mkdirSync } from "node:fs";
import { open, type Database, type RootDatabase } from "lmdb";
import type { HeartbeatEvent, Origin } from "../../shared/contract/index.js";

export const ALERT_DEDUPE_MS = 24 * 3600_000;

/** A heartbeat run that was injected and whose end was not handled yet. */
export interface PendingRun {
  runId: string;
  injectId: string;
  sessionKey: string;
  origin?: Origin;
  startedAt: number;
}

export interface AgentState {
  /** set by `heartbeat enable|disable`; absent = the config's `enabled` */
  enabled?: boolean;
  nextDueAt?: number;
  lastRunAt?: number;
  last?: HeartbeatEvent;
  tokensSpent: number;
  pending?: PendingRun;
}

export class HeartbeatStore {
  private readonly root: RootDatabase;
  private readonly agents: Database<AgentState, string>;
  private readonly alerts: Database<number, string>;

  constructor(path: string) {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    this.root = open({ path, compression: true });
    this.agents = this.root.openDB({ name: "agents" });
    this.alerts = this.root.openDB({ name: "alerts" });
  }

  /** the store's content, kept in memory: this actor is the only writer (one instance) */
  private readonly cache = new Map<string, AgentState>();

  get(agentId: string): AgentState {
    let state = this.cache.get(agentId);
    if (!state) {
      state = this.agents.get(agentId) ?? { tokensSpent: 0 };
      this.cache.set(agentId, state);
    }
    return state;
  }

  /**
   * Changes one agent's state. Writes go to LMDB in order; `durable` (the default) waits for the
   * commit. A skipped beat's "last" event is written without waiting (losing it in a crash
   * costs nothing), which keeps an idle heartbeat tick free of disk syncs.
   */
  async update(agentId: string, change: (state: AgentState) => AgentState, opts: { durable?: boolean } = {}): Promise<AgentState> {
    const result = change(this.get(agentId));
    this.cache.set(agentId, result);
    const written = this.agents.put(agentId, result);
    if (opts.durable !== false) await written;
    else written.catch(() => undefined);
    return result;
  }

  /** Whether the same alert text went out for this agent within the dedupe window. */
  isRecentAlert(agentId: string, hash: string, now: number): boolean {
    const at = this.alerts.get(`${agentId}\u0000${hash}`);
    return at !== undefined && now - at < ALERT_DEDUPE_MS;
  }

  async rememberAlert(agentId: string, hash: string, now: number): Promise<void> {
    await this.alerts.put(`${agentId}\u0000${hash}`, now);
  }

  /** Drops alert hashes older than the dedupe window. */
  async sweepAlerts(now: number): Promise<number> {
    const old: string[] = [];
    for (const { key, value } of this.alerts.getRange()) if (now - value >= ALERT_DEDUPE_MS) old.push(key);
    for (const key of old) await this.alerts.remove(key);
    return old.length;
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
