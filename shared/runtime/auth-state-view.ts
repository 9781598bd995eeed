/**
 * The agent-runners' auth-profile state as one view (`lurkbot auth list`, `lurkbot usage
 * --providers`, the router's `/status`): a scatter-gather on `lurk.agent-runner.auth_state`
 * (every runner answers), merged per provider and profile.
 * Merge rules: replies with the same `stateId` share one LMDB store (the runners of one host): its
 * cooldowns, disable, failure counts and pins are counted once; the last use and last success are
 * the latest of all replies; the rate-limit snapshot is the newest response's (the provider counts
 * per key, whichever runner made the call). Cooldowns and disables keep the host they are on.
 * Never throws for a missing runner: no reply is an empty view (the caller says so).
 */
import type { NatsConnection } from "@nats-io/transport-node";
import {
  agentRunnerAuthStateReply, requestType, subjects,
  type AgentRunnerAuthStateReply, type AuthProfileState, type LurkError, type RateLimitSnapshot,
} from "../contract/index.js";
import { gatherReplies } from "./gather.js";

type Reason = NonNullable<AuthProfileState["disabledReason"]>;

export interface MergedProfile {
  provider: string;
  id: string;
  kind: AuthProfileState["kind"];
  /** the hosts whose runners answered for it */
  hosts: string[];
  lastUsed?: number;
  lastSuccess?: number;
  pins: number;
  failureCounts: Partial<Record<Reason, number>>;
  /** every model's cooldown record, on the host that keeps it (ended ones too, until a success) */
  cooldowns: Array<AuthProfileState["cooldowns"][number] & { host: string }>;
  disables: Array<{ host: string; until: number; reason: Reason; count: number }>;
  rateLimits?: RateLimitSnapshot & { host: string };
}

export interface AuthStateView {
  /** replies, one per runner */
  runners: Array<Pick<AgentRunnerAuthStateReply, "host" | "pid" | "stateId" | "at">>;
  /** provider -> its profiles, in the runners' order */
  providers: Array<{ provider: string; profiles: MergedProfile[] }>;
  errors: LurkError[];
  malformed: number;
}

export interface GatherOptions {
  /** how long to wait for the first runner (default 2 s) */
  firstMs?: number;
  /** the gather ends this long after the latest reply (default 300 ms) */
  stallMs?: number;
  provider?: string;
}

export async function gatherAuthState(nc: NatsConnection, prefix: string, opts: GatherOptions = {}): Promise<AuthStateView> {
  const s = subjects(prefix);
  const message = { id: `auth-state-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`, ts: Date.now(), type: requestType("agent-runner", "auth_state"), ...(opts.provider ? { provider: opts.provider } : {}) };
  let gathered;
  try {
    gathered = await gatherReplies(nc, s.op("agent-runner", "auth_state"), message, agentRunnerAuthStateReply, { maxWaitMs: opts.firstMs ?? 2_000, stallMs: opts.stallMs ?? 300 });
  } catch (err) {
    // no responders (no runner is up) ends a request at once
    if (/no responders|503/i.test(String((err as Error)?.message ?? err))) return { runners: [], providers: [], errors: [], malformed: 0 };
    throw err;
  }
  return { ...mergeAuthState(gathered.replies), errors: gathered.errors, malformed: gathered.malformed };
}

export function mergeAuthState(replies: AgentRunnerAuthStateReply[]): Pick<AuthStateView, "runners" | "providers"> {
  const providers = new Map<string, Map<string, MergedProfile>>();
  const countedStores = new Set<string>();
  const max = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.max(a, b));
  for (const reply of replies) {
    for (const p of reply.providers) {
      let profiles = providers.get(p.provider);
      if (!profiles) providers.set(p.provider, (profiles = new Map()));
      for (const st of p.profiles) {
        let m = profiles.get(st.id);
        if (!m) profiles.set(st.id, (m = { provider: p.provider, id: st.id, kind: st.kind, hosts: [], pins: 0, failureCounts: {}, cooldowns: [], disables: [] }));
        if (!m.hosts.includes(reply.host)) m.hosts.push(reply.host);
        const lastUsed = max(m.lastUsed, st.lastUsed);
        const lastSuccess = max(m.lastSuccess, st.lastSuccess);
        if (lastUsed !== undefined) m.lastUsed = lastUsed;
        if (lastSuccess !== undefined) m.lastSuccess = lastSuccess;
        if (st.rateLimits && (!m.rateLimits || st.rateLimits.at > m.rateLimits.at)) m.rateLimits = { ...st.rateLimits, host: reply.host };
        // the store's part once per store
        const storeKey = `${reply.stateId}\u0000${p.provider}\u0000${st.id}`;
        if (countedStores.has(storeKey)) continue;
        countedStores.add(storeKey);
        m.pins += st.pins;
        for (const [reason, n] of Object.entries(st.failureCounts) as Array<[Reason, number]>) m.failureCounts[reason] = (m.failureCounts[reason] ?? 0) + n;
        for (const c of st.cooldowns) m.cooldowns.push({ ...c, host: reply.host });
        if (st.disabledUntil !== undefined) m.disables.push({ host: reply.host, until: st.disabledUntil, reason: st.disabledReason ?? "auth", count: st.disableCount });
      }
    }
  }
  return {
    runners: replies.map((r) => ({ host: r.host, pid: r.pid, stateId: r.stateId, at: r.at })),
    providers: [...providers].map(([provider, profiles]) => ({ provider, profiles: [...profiles.values()] })),
  };
}

/** What keeps a profile from being used now: its latest-ending disable, else its latest-ending active cooldown. */
export function unavailable(m: MergedProfile, now = Date.now()): { kind: "disabled" | "cooldown"; until: number; reason: Reason; model?: string; host: string } | undefined {
  const disable = m.disables.filter((d) => d.until > now).sort((a, b) => b.until - a.until)[0];
  if (disable) return { kind: "disabled", until: disable.until, reason: disable.reason, host: disable.host };
  const cooldown = m.cooldowns.filter((c) => c.until > now).sort((a, b) => b.until - a.until)[0];
  if (cooldown) return { kind: "cooldown", until: cooldown.until, reason: cooldown.reason, model: cooldown.model, host: cooldown.host };
  return undefined;
}

/** 45 s, 3 min, 1 h 5 min, 2 d 3 h: how long until a time (rounded up to the unit shown). */
export function formatWait(ms: number): string {
  const s = Math.max(1, Math.ceil(ms / 1000));
  if (s < 60) return `${s} s`;
  const min = Math.ceil(s / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 48) return min % 60 ? `${h} h ${min % 60} min` : `${h} h`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

/**
 * One line per provider with a profile cooling down or disabled now, e.g.
 * "anthropic: 1 of 2 profiles cooling down for 3 min (rate_limit)"; none when all are usable.
 */
export function unavailableLines(view: Pick<AuthStateView, "providers">, now = Date.now()): string[] {
  const lines: string[] = [];
  for (const { provider, profiles } of view.providers) {
    const down = profiles.map((p) => unavailable(p, now)).filter((u) => u !== undefined);
    if (down.length === 0) continue;
    const of = `${down.length} of ${profiles.length} profile${profiles.length === 1 ? "" : "s"}`;
    const part = (kind: "disabled" | "cooldown") => {
      const these = down.filter((u) => u.kind === kind);
      if (these.length === 0) return undefined;
      const until = Math.max(...these.map((u) => u.until));
      const reasons = [...new Set(these.map((u) => u.reason))].join(", ");
      return `${kind === "disabled" ? "disabled" : "cooling down"} for ${formatWait(until - now)} (${reasons})`;
    };
    const cooling = part("cooldown");
    const disabled = part("disabled");
    if (cooling && disabled) {
      const n = (kind: string) => down.filter((u) => u.kind === kind).length;
      lines.push(`${provider}: ${of} unavailable: ${n("cooldown")} ${cooling}, ${n("disabled")} ${disabled}`);
    } else {
      lines.push(`${provider}: ${of} ${cooling ?? disabled}`);
    }
  }
  return lines;
}
