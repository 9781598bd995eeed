/**
 * The heartbeat actor (seeds 001 §3.7): every agent's HEARTBEAT.md checked on an interval
 * (`heartbeat.intervalMinutes`, default 30, per-agent overrides), inside its active hours.
 * The cheap gates come first and make no LLM call; a heartbeat that passes them is a run in the
 * target session whose reply this actor classifies and delivers itself (beat.ts).
 * Serves `lurk.heartbeat.status|last|run|enable|disable`. State lives in LMDB under
 * `<dataDir>/heartbeat` (store.ts) and survives restarts: enabled flags, next due times, the last
 * event, tokens spent, alert hashes (24 h dedupe) and a run under way.
 * One instance at a time: a second one would run heartbeats twice (no lease yet).
 */
import { join } from "node:path";
import { LurkError, type HeartbeatEvent } from "../../shared/contract/index.js";
import type { ActorDefinition, ActorRuntime } from "../../shared/runtime/actor.js";
import { defaultAgent, type LurkConfig } from "../../shared/runtime/config.js";
import { LURKBOT_VERSION } from "../../shared/runtime/version.js";
import { HeartbeatRunner } from "./beat.js";
import { systemClock, type Clock } from "./clock.js";
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
}

export function heartbeatActor(opts: HeartbeatActorOptions = {}): ActorDefinition {
  const clock = opts.clock ?? systemClock;
  return {
    name: "heartbeat",
    version: LURKBOT_VERSION,
    description: "periodic HEARTBEAT.md checks per agent (LMDB)",
    start: (rt) => start(rt, clock, opts.tickMs ?? TICK_MS),
  };
}

export const definition: ActorDefinition = heartbeatActor();

async function start(rt: ActorRuntime, clock: Clock, tickMs: number) {
  const store = new HeartbeatStore(heartbeatDir(rt.config));
  const runEnds = new RunEndWatcher(rt.nc, rt.subjects, rt.limits, rt.log);
  const runner = new HeartbeatRunner(rt, store, runEnds, clock);
  const agentIds = rt.config.agents.map((a) => a.id);

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

  /** Due heartbeats start (each agent at most one at a time); the due time moves on first. */
  let ticking = false;
  const tick = async () => {
    if (ticking) return;
    ticking = true;
    try {
      const now = clock.now();
      for (const agentId of agentIds) {
        if (runner.isBusy(agentId)) continue;
        const state = store.get(agentId);
        if (state.pending) {
          void runner.recover(agentId).catch(() => undefined); // a run a previous instance injected
          continue;
        }
        if (!runner.enabled(agentId)) continue;
        const { everyMs } = runner.settings(agentId);
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
  const timer = setInterval(() => void tick(), tickMs);
  const sweeper = setInterval(() => void store.sweepAlerts(clock.now()).catch((err) => rt.log.warn({ err }, "alert sweep failed")), SWEEP_EVERY_MS);
  sweeper.unref();
  void tick();

  rt.serve("heartbeat", "status", (req) => statusReply(req.agentId));
  rt.serve("heartbeat", "last", (req) => ({ event: store.get(agentOf(req.agentId)).last ?? null }));
  rt.serve("heartbeat", "run", async (req): Promise<{ event: HeartbeatEvent }> => ({ event: await runner.beat(agentOf(req.agentId)) }));
  const setEnabled = async (agentId: string | undefined, enabled: boolean) => {
    const ids = agentId ? [agentOf(agentId)] : agentIds;
    for (const id of ids) {
      const every = runner.settings(id).everyMs;
      await store.update(id, (s) => ({ ...s, enabled, nextDueAt: enabled ? clock.now() + every : undefined }));
      rt.emit(enabled ? "enabled" : "disabled", { agentId: id });
    }
    return statusReply(agentId);
  };
  rt.serve("heartbeat", "enable", (req) => setEnabled(req.agentId, true));
  rt.serve("heartbeat", "disable", (req) => setEnabled(req.agentId, false));

  return {
    async stop() {
      clearInterval(timer);
      clearInterval(sweeper);
      runEnds.stop();
      await store.close();
    },
  };
}
