/**
 * The heartbeat actor's LMDB store (`<dataDir>/heartbeat`), surviving restarts:
 *   agents: agentId -> AgentState (enabled override, next due time, last event, tokens spent,
 *           the run under way)
 *   alerts: `<agentId>\0<hash>` -> when that alert text was last delivered (24 h dedupe)
 * Every change the actor makes is also handed to `onChange` (replica.ts writes it to the KV
 * bucket for the instance that takes over); `replace`/`setAlert` apply the bucket's content and
 * report nothing.
 */
import { mkdirSync } from "node:fs";
import { open, type Database, type RootDatabase } from "lmdb";
import { z } from "zod";
import { heartbeatEventSchema, idSchema, originSchema, sessionKeySchema } from "../../shared/contract/index.js";

export const ALERT_DEDUPE_MS = 24 * 3600_000;

/** A heartbeat run that was injected and whose end was not handled yet. */
export const pendingRunSchema = z.object({
  runId: idSchema,
  injectId: idSchema,
  sessionKey: sessionKeySchema,
  origin: originSchema.optional(),
  startedAt: z.number(),
});
export type PendingRun = z.infer<typeof pendingRunSchema>;

export const agentStateSchema = z.object({
  /** set by `heartbeat enable|disable`; absent = the config's `enabled` */
  enabled: z.boolean().optional(),
  nextDueAt: z.number().optional(),
  lastRunAt: z.number().optional(),
  last: heartbeatEventSchema.optional(),
  tokensSpent: z.number().nonnegative(),
  pending: pendingRunSchema.optional(),
});
export type AgentState = z.infer<typeof agentStateSchema>;

/** A change of the store, as the replica writes it. */
export type StoreChange =
  | { kind: "agent"; agentId: string; state: AgentState }
  | { kind: "alert"; agentId: string; hash: string; at: number }
  | { kind: "alert-gone"; agentId: string; hash: string };

/** an alert's LMDB key, `<agentId>\0<hash>`, and back */
const alertKey = (agentId: string, hash: string) => `${agentId}\u0000${hash}`;
const splitAlertKey = (key: string) => key.split("\u0000") as [agentId: string, hash: string];

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

  /** the store's content, kept in memory: this instance is the only writer while it holds the lease */
  private readonly cache = new Map<string, AgentState>();

  /** called for every change the actor makes; a durable change waits for what it returns */
  onChange: (change: StoreChange) => Promise<void> = () => Promise.resolve();

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
    const written = Promise.all([this.agents.put(agentId, result), this.onChange({ kind: "agent", agentId, state: result })]);
    if (opts.durable !== false) await written;
    else written.catch(() => undefined);
    return result;
  }

  /** Sets an agent's state from the replica (no onChange). */
  async replace(agentId: string, state: AgentState): Promise<void> {
    this.cache.set(agentId, state);
    await this.agents.put(agentId, state);
  }

  /** Every agent's state and every remembered alert, as stored here. */
  *entries(): Iterable<StoreChange> {
    for (const { key, value } of this.agents.getRange()) yield { kind: "agent", agentId: key, state: this.cache.get(key) ?? value };
    for (const { key, value } of this.alerts.getRange()) {
      const [agentId, hash] = splitAlertKey(key);
      yield { kind: "alert", agentId, hash, at: value };
    }
  }

  /** Sets when an alert was last delivered, from the replica (no onChange). */
  async setAlert(agentId: string, hash: string, at: number): Promise<void> {
    await this.alerts.put(alertKey(agentId, hash), at);
  }

  /** Whether the same alert text went out for this agent within the dedupe window. */
  isRecentAlert(agentId: string, hash: string, now: number): boolean {
    const at = this.alerts.get(alertKey(agentId, hash));
    return at !== undefined && now - at < ALERT_DEDUPE_MS;
  }

  async rememberAlert(agentId: string, hash: string, now: number): Promise<void> {
    await Promise.all([this.alerts.put(alertKey(agentId, hash), now), this.onChange({ kind: "alert", agentId, hash, at: now })]);
  }

  /** Drops alert hashes older than the dedupe window. */
  async sweepAlerts(now: number): Promise<number> {
    const old: string[] = [];
    for (const { key, value } of this.alerts.getRange()) if (now - value >= ALERT_DEDUPE_MS) old.push(key);
    for (const key of old) {
      const [agentId, hash] = splitAlertKey(key);
      await Promise.all([this.alerts.remove(key), this.onChange({ kind: "alert-gone", agentId, hash })]);
    }
    return old.length;
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
