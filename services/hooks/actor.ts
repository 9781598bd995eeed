/**
 * The hooks actor (seeds 001 §8): small user scripts that run when something happens. At start
 * it discovers each agent's hooks (shared/runtime/hooks/discovery.ts: workspace, $LURKBOT_HOME,
 * bundled), logs the folders it cannot use, subscribes to the bus events its running hooks want
 * (sources.ts) and fires `gateway:startup` once per agent. Handlers run in a worker with a time
 * limit and a heap cap (pool.ts), one at a time, in discovery order (dispatcher.ts); what they
 * push goes back to the session's conversation, what they ask the agent goes in as a system
 * event (deliver.ts). Hooks are read at start: restart the actor after adding or enabling one.
 * It serves no operation; `lurkbot hooks` reads the same discovery code locally.
 */
import { agentWorkspace } from "../../shared/runtime/config.js";
import type { ActorDefinition, ActorRuntime } from "../../shared/runtime/actor.js";
import { discoverHooks, hookEnv, isSecretEnvName } from "../../shared/runtime/hooks/discovery.js";
import { registerSecret } from "../../shared/runtime/logger.js";
import { LURKBOT_VERSION } from "../../shared/runtime/version.js";
import { HookDispatcher, type AgentHooks } from "./dispatcher.js";
import { startupEvent } from "./hook-event.js";
import { HookPool } from "./pool.js";
import { subscribeSources } from "./sources.js";

/** how long stopping waits for the hooks under way */
const STOP_WAIT_MS = 5_000;

export const definition: ActorDefinition = {
  name: "hooks",
  version: LURKBOT_VERSION,
  description: "event hooks: user scripts run in a worker on commands, session resets, run ends and start-up",
  start,
};

async function start(rt: ActorRuntime) {
  const cfg = rt.config.hooks;
  if (!cfg.enabled) {
    rt.log.info("hooks are off (hooks.enabled is false): no hook runs");
    return;
  }
  // handlers never see secrets (NATS passwords, API keys, tokens), also where one process hosts every actor (--single-process)
  const env = hookEnv(process.env);
  // a secret given to a hook through its entry's env is redacted from logs and events like the others
  for (const entry of Object.values(cfg.entries)) {
    for (const [name, value] of Object.entries(entry.env ?? {})) if (isSecretEnvName(name)) registerSecret(value);
  }
  const agents = new Map<string, AgentHooks>();
  for (const agent of rt.config.agents) {
    const found = await discoverHooks(rt.config, { agentId: agent.id, env });
    for (const p of found.problems) rt.log.warn({ agentId: agent.id, source: p.source, dir: p.dir, reason: p.reason }, "hook folder skipped");
    for (const h of found.hooks.filter((x) => x.enabled && x.missing.length > 0)) {
      rt.log.warn({ agentId: agent.id, hook: h.name, missing: h.missing }, "hook enabled but its requirements are not met; it does not run");
    }
    agents.set(agent.id, { workspace: agentWorkspace(rt.config, agent), hooks: found.hooks.filter((h) => h.runs) });
  }
  const running = [...agents.entries()].flatMap(([agentId, a]) => a.hooks.map((h) => ({ agentId, hook: h.name, source: h.source, events: h.events })));
  const patterns = [...new Set(running.flatMap((r) => r.events))];

  const pool = new HookPool(cfg, env, rt.log);
  const dispatcher = new HookDispatcher(rt, pool, agents, env);
  const dispatch = (event: Parameters<HookDispatcher["dispatch"]>[0]) => void dispatcher.dispatch(event).catch((err) => rt.log.warn({ err }, "hook dispatch failed"));
  const sources = subscribeSources(rt, patterns, dispatch);
  rt.log.info({ hooks: running, subjects: sources.subjects }, running.length ? "hooks loaded" : "no hook runs (none enabled and eligible; see `npx lurkbot hooks list`)");

  // gateway:startup once the actor is up (start resolves first, so `ready` is not delayed)
  const startedAt = Date.now();
  const startup = setImmediate(() => {
    for (const [agentId, a] of agents) dispatch(startupEvent(agentId, a.workspace, startedAt));
  });

  return {
    async stop() {
      clearImmediate(startup);
      sources.stop();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([dispatcher.idle(), new Promise((resolve) => (timer = setTimeout(resolve, STOP_WAIT_MS)))]);
      clearTimeout(timer);
      await pool.close();
    },
  };
}
