/**
 * The hooks actor (seeds 001 §8): small user scripts that run when something happens. At start
 * it discovers each agent's hooks (shared/runtime/hooks/discovery.ts: workspace, $LURKBOT_HOME,
 * bundled), logs the folders it cannot use, subscribes to the bus events its running hooks want
 * (sources.ts: commands, resets and new sessions from the LURK_HOOK_EVENTS stream, so what
 * happened while it was down still fires; run ends by core subscription while wanted) and fires
 * `gateway:startup` once per agent. Handlers run in a worker with a time limit and a heap cap
 * (pool.ts), one at a time, in discovery order (dispatcher.ts); what they push goes back to the
 * session's conversation, what they ask the agent goes in as a system event (deliver.ts).
 * `agent:bootstrap` hooks run in a worker of their own when an agent-runner asks
 * (`lurk.hooks.bootstrap`, bootstrap.ts); the `lurk_hooks` bucket tells runners which agents have
 * any (bootstrap-announce.ts). While it runs it discovers again when the hook folders or
 * config.json's `hooks` section change, on an interval and on `lurk.hooks.reload` (reloader.ts),
 * and swaps the registry between events; the subscriptions and the announcements follow.
 * `lurkbot hooks` reads the same discovery code locally.
 */
import type { ActorDefinition, ActorRuntime } from "../../shared/runtime/actor.js";
import { hookEnv } from "../../shared/runtime/hooks/discovery.js";
import { LURKBOT_VERSION } from "../../shared/runtime/version.js";
import { BootstrapHooks } from "./bootstrap.js";
import { BootstrapAnnouncer } from "./bootstrap-announce.js";
import { HookDispatcher } from "./dispatcher.js";
import { startupEvent } from "./hook-event.js";
import { HookPool } from "./pool.js";
import { emptyRegistry, type HookRegistry } from "./registry.js";
import { HookReloader } from "./reloader.js";
import { HookSources } from "./sources.js";

/** how long stopping waits for the hooks under way */
const STOP_WAIT_MS = 5_000;

export const definition: ActorDefinition = {
  name: "hooks",
  version: LURKBOT_VERSION,
  description: "event hooks: user scripts run in a worker on commands, new and reset sessions, bootstrap files, run ends and start-up",
  start,
};

async function start(rt: ActorRuntime) {
  // handlers never see secrets (NATS passwords, API keys, tokens), also where one process hosts every actor (--single-process)
  const env = hookEnv(process.env);
  let registry: HookRegistry = emptyRegistry(rt.config.hooks);
  const pool = new HookPool(rt.config.hooks, env, rt.log);
  // agent:bootstrap hooks in a worker of their own: a run never waits behind a slow command hook
  const bootstrapPool = new HookPool({ ...rt.config.hooks, timeoutMs: rt.config.hooks.bootstrapTimeoutMs }, env, rt.log);
  const dispatcher = new HookDispatcher(rt, pool, () => registry, env);
  const dispatch = (event: Parameters<HookDispatcher["dispatch"]>[0]) => dispatcher.dispatch(event).catch((err) => rt.log.warn({ err }, "hook dispatch failed"));
  const sources = new HookSources(rt, { dispatch, wants: (event) => dispatcher.wants(event) });
  const announcer = new BootstrapAnnouncer(rt);
  let announced: Promise<void> = Promise.resolve();
  let subjects: string[] = [];
  // the swap: events already under way keep the registry they started with (dispatcher.ts)
  const reloader = new HookReloader(rt, env, (next) => {
    registry = next;
    subjects = sources.update(next.patterns);
    announced = announcer.update(next);
  });

  const first = await reloader.reload("start");
  // the durable events only once the registry is known: an event no running hook wants is acked unused
  sources.startStream();
  subjects = sources.subjects;
  new BootstrapHooks(rt, bootstrapPool, () => registry, env).serve();
  await announced;
  announcer.start();
  if (!registry.config.enabled) rt.log.info("hooks are off (hooks.enabled is false): no hook runs until config.json turns them on");
  else rt.log.info({ hooks: registry.running, subjects }, registry.running.length ? "hooks loaded" : "no hook runs (none enabled and eligible; see `npx lurkbot hooks list`)");
  reloader.start();

  rt.serve("hooks", "reload", async () => {
    const { registry: r, changed, configError } = await reloader.reload("request");
    return {
      changed, running: r.running.length, problems: r.problems.length, hooksEnabled: r.config.enabled, subjects,
      agents: [...r.agents.entries()].map(([agentId, a]) => ({ agentId, running: a.hooks.map((h) => h.name), problems: r.problems.filter((p) => p.agentId === agentId).length })),
      ...(configError ? { configError: configError.slice(0, 2000) } : {}),
    };
  });

  // gateway:startup once the actor is up (start resolves first, so `ready` is not delayed)
  const startedAt = Date.now();
  const startup = setImmediate(() => {
    for (const [agentId, a] of first.registry.agents) void dispatch(startupEvent(agentId, a.workspace, startedAt));
  });

  return {
    async stop() {
      clearImmediate(startup);
      reloader.stop();
      announcer.stop();
      // the stream event under way gets the consumer's grace, then goes back for redelivery
      await sources.stop();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([dispatcher.idle(), new Promise((resolve) => (timer = setTimeout(resolve, STOP_WAIT_MS)))]);
      clearTimeout(timer);
      await pool.close();
      await bootstrapPool.close();
    },
  };
}
