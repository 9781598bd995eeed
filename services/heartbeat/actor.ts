/**
 * The heartbeat actor (seeds 001 §3.7): every agent's HEARTBEAT.md checked on an interval
 * (`heartbeat.intervalMinutes`, default 30, per-agent overrides), inside its active hours.
 * The cheap gates come first and make no LLM call; a heartbeat that passes them is a run in the
 * target session whose reply this actor classifies and delivers itself (beat.ts).
 * Serves `lurk.heartbeat.status|last|run|enable|disable`. State lives in LMDB under
 * `<dataDir>/heartbeat` (store.ts) and survives restarts: enabled flags, next due times, the last
 * event, tokens spent, alert hashes (24 h dedupe) and a run under way.
 * Several instances may run (on several hosts); one is active, through the lease `heartbeat` in
 * lurk_leases (`heartbeat.leaseTtlMs`/`leaseRenewMs`). Only the active one beats; every instance
 * takes requests and a standby relays them to the active one (shared/runtime/active-relay.ts).
 * The active one writes its state to the KV bucket lurk_heartbeat (replica.ts); an instance
 * taking the lease loads it first, and finishes the run its predecessor left under way.
 */
import { join } from "node:path";
import { LurkError } from "../../shared/contract/index.js";
import { ActiveInstance } from "../../shared/runtime/active-instance.js";
import type { ActorDefinition, ActorRuntime } from "../../shared/runtime/actor.js";
import { defaultAgent, type LurkConfig } from "../../shared/runtime/config.js";
import { resolveHeartbeatConfig } from "../../shared/runtime/config-heartbeat.js";
import { LURKBOT_VERSION } from "../../shared/runtime/version.js";
import { HeartbeatRunner } from "./beat.js";
import { systemClock, type Clock } from "./clock.js";
import { StateReplica } from "./replica.js";
import { RunEndWatcher } from "./run-ends.js";
import { followingDueAt, nextDueAt } from "./schedule.js";
import { HeartbeatStore } from "./store.js";

export const TICK_MS = 1_000;
const SWEEP_EVERY_MS = 3600_000;

export function heartbeatDir(config: LurkConfig): string {
  return join(config.dataDir, "heartbeat");
}

export interface HeartbeatActorOptions {
  clock?: Clock;
  /** how often due heartbeats are looked for */
  tickMs?: number;
  /**
   * Calls `tick` every `ms` until stopped (default: setInterval). test/bench/heartbeat.ts passes
   * its own to time the actor's real tick directly.
   */
  every?: (tick: () => Promise<void>, ms: number) => { stop(): void };
}

const intervalTimer = (tick: () => Promise<void>, ms: number) => {
  const timer = setInterval(() => void tick(), ms);
  return { stop: () => clearInterval(timer) };
};

export function heartbeatActor(opts: HeartbeatActorOptions = {}): ActorDefinition {
  const clock = opts.clock ?? systemClock;
  return {
    name: "heartbeat",
    version: LURKBOT_VERSION,
    description: "periodic HEARTBEAT.md checks per agent (LMDB)",
    start: (rt) => start(rt, clock, opts.tickMs ?? TICK_MS, opts.every ?? intervalTimer),
  };
}

export const definition: ActorDefinition = heartbeatActor();

async function start(rt: ActorRuntime, clock: Clock, tickMs: number, every: NonNullable<HeartbeatActorOptions["every"]>) {
  const store = new HeartbeatStore(heartbeatDir(rt.config));
  const replica = await StateReplica.open(rt.nc, store, rt.log);
  store.onChange = (change) => replica.write(change);
  const runEnds = new RunEndWatcher(rt.nc, rt.subjects, rt.limits, rt.log);
  const runner = new HeartbeatRunner(rt, store, runEnds, clock);
  const agentIds = rt.config.agents.map((a) => a.id);

  // one active instance (lease "heartbeat"): it loads the replicated state first, then beats
  const instance = await ActiveInstance.open(rt, "heartbeat", {
    ttlMs: rt.config.heartbeat.leaseTtlMs,
    renewMs: rt.config.heartbeat.leaseRenewMs,
    takeOver: async () => rt.log.info(await replica.load(), "heartbeat state loaded from the replica bucket"),
    activated: () => void tick(),
    standBy: () => undefined, // a beat under way finishes; the next holder recovers its run if it does not
  });
  const isActive = () => instance.isActive();
  const relay = instance.relay;

  const agentOf = (agentId: string | undefined): string => {
    const id = agentId ?? defaultAgent(rt.config).id;
    if (!agentIds.includes(id)) throw new LurkError("NOT_FOUND", `no agent "${id}"; configured agents: ${agentIds.join(", ")}`);
    return id;
  };
  const statusOf = (agentId: string) => {
    const state = store.get(agentId);
    const enabled = runner.enabled(agentId);
    return {
      agentId, enabled, everyMs: runner.settings(agentId).everyMs, tokensSpent: state.tokensSpent,
      ...(enabled && state.nextDueAt !== undefined ? { nextDueAt: state.nextDueAt } : {}),
      ...(state.last ? { last: state.last } : {}),
    };
  };
  const statusReply = (agentId: string | undefined) => ({ agents: (agentId ? [agentOf(agentId)] : agentIds).map(statusOf) });

  /** each agent's interval, in `agentIds` order (the config does not change while the actor runs) */
  const everyMsOf = agentIds.map((id) => runner.settings(id).everyMs);

  /** Due heartbeats start (each agent at most one at a time); the due time moves on first. */
  let ticking = false;
  const tick = async () => {
    if (ticking || !isActive()) return;
    ticking = true;
    try {
      const now = clock.now();
      for (let i = 0; i < agentIds.length; i++) {
        const agentId = agentIds[i]!;
        if (runner.isBusy(agentId)) continue;
        const state = store.get(agentId);
        // the idle case, decided on the state alone: planned, not yet due, within one interval
        // (nextDueAt would keep it), no run left over; enabled or not, nothing to do
        const planned = state.nextDueAt;
        if (planned !== undefined && now < planned && planned <= now + everyMsOf[i]! && !state.pending) continue;
        if (state.pending) {
          void runner.recover(agentId).catch(() => undefined); // a run a previous instance injected
          continue;
        }
        if (!runner.enabled(agentId)) continue;
        const everyMs = everyMsOf[i]!;
        const due = nextDueAt(state.nextDueAt, now, everyMs);
        if (now < due) {
          if (due !== state.nextDueAt) await store.update(agentId, (s) => ({ ...s, nextDueAt: due }));
          continue;
        }
        await store.update(agentId, (s) => ({ ...s, nextDueAt: followingDueAt(due, now, everyMs) }));
        void runner.beat(agentId).catch(() => undefined); // only while stopping: beat records its own failures
      }
    } catch (err) {
      rt.log.warn({ err }, "heartbeat tick failed");
    } finally {
      ticking = false;
    }
  };
  const timer = every(tick, tickMs);
  const sweeper = setInterval(() => {
    if (isActive()) void store.sweepAlerts(clock.now()).catch((err) => rt.log.warn({ err }, "alert sweep failed"));
  }, SWEEP_EVERY_MS);
  sweeper.unref();

  relay.serve("status", (req) => statusReply(req.agentId));
  relay.serve("last", (req) => ({ event: store.get(agentOf(req.agentId)).last ?? null }));
  // a standby waits for the active instance's heartbeat run as the caller does
  relay.serve("run", async (req) => ({ event: await runner.beat(agentOf(req.agentId)) }), {
    relayTimeoutMs: (req) => resolveHeartbeatConfig(rt.config.heartbeat, req.agentId ?? defaultAgent(rt.config).id).runTimeoutMs + 10_000,
  });
  const setEnabled = async (agentId: string | undefined, enabled: boolean) => {
    const ids = agentId ? [agentOf(agentId)] : agentIds;
    for (const id of ids) {
      const every = runner.settings(id).everyMs;
      await store.update(id, (s) => ({ ...s, enabled, nextDueAt: enabled ? clock.now() + every : undefined }));
      rt.emit(enabled ? "enabled" : "disabled", { agentId: id });
    }
    return statusReply(agentId);
  };
  relay.serve("enable", (req) => setEnabled(req.agentId, true));
  relay.serve("disable", (req) => setEnabled(req.agentId, false));

  // the first try decides before the actor reports started: active (state loaded) or standby
  await instance.start();

  return {
    async stop() {
      timer.stop();
      clearInterval(sweeper);
      runEnds.stop(); // a run under way stays pending, for the next active instance
      await replica.drain();
      await instance.stop(); // released: a standby takes over at once
      await store.close();
    },
  };
}
