/**
 * Runs the hooks of each event: events one at a time in arrival order (at most
 * `hooks.maxQueue` waiting; more are dropped with a warning), and for one event its agent's
 * hooks that want it, in discovery order, each in the worker (pool.ts). A hook that throws, hangs
 * or asks for something invalid is logged (pino: hook, event, reason) and published as
 * `lurk.evt.hooks.failed`; the next hook runs all the same. A hook that ran is `lurk.evt.hooks.ran`.
 */
import { statSync } from "node:fs";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import type { HookInfo } from "../../shared/runtime/hooks/discovery.js";
import { hookWants } from "../../shared/runtime/hooks/events.js";
import { sendMessages, startRuns } from "./deliver.js";
import type { HookEvent } from "./hook-event.js";
import { hookOutcomeSchema } from "./outcome.js";
import type { HookPool } from "./pool.js";
import type { HookTask } from "./task.js";

export interface AgentHooks {
  workspace: string;
  /** the hooks that run (enabled and eligible), in discovery order */
  hooks: HookInfo[];
}

export class HookDispatcher {
  private tail: Promise<void> = Promise.resolve();
  private waiting = 0;

  constructor(
    private readonly rt: ActorRuntime,
    private readonly pool: HookPool,
    private readonly agents: ReadonlyMap<string, AgentHooks>,
    private readonly env: Record<string, string>,
  ) {}

  /** Queues the event; resolves when its hooks ran (tests, shutdown). */
  dispatch(event: HookEvent): Promise<void> {
    const name = `${event.type}:${event.action}`;
    const hooks = this.agents.get(event.agentId)?.hooks.filter((h) => hookWants(h.events, name)) ?? [];
    if (hooks.length === 0) return Promise.resolve();
    if (this.waiting >= this.rt.config.hooks.maxQueue) {
      this.rt.log.warn({ event: name, sessionKey: event.sessionKey, waiting: this.waiting }, "hook event dropped: too many events wait for their hooks (hooks.maxQueue)");
      this.rt.emit("dropped", { event: name, reason: "queue full" }, "warn");
      return Promise.resolve();
    }
    this.waiting++;
    const run = this.tail.then(async () => {
      this.waiting--;
      for (const hook of hooks) await this.runOne(hook, event, name);
    });
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** the events still queued or running have finished */
  idle(): Promise<void> {
    return this.tail;
  }

  private async runOne(hook: HookInfo, event: HookEvent, name: string): Promise<void> {
    const started = Date.now();
    const log = this.rt.log.child({ hook: hook.name, event: name, ...(event.sessionKey ? { sessionKey: event.sessionKey } : {}) });
    const fail = (reason: string) => {
      log.warn({ reason }, "hook failed");
      this.rt.emit("failed", { hook: hook.name, event: name, reason: reason.slice(0, 500) }, "warn");
    };
    try {
      const raw = await this.pool.run(this.task(hook, event));
      const checked = hookOutcomeSchema.safeParse(raw);
      if (!checked.success) return fail(`its worker answered out of shape: ${checked.error.issues[0]?.message ?? "invalid"}`);
      const outcome = checked.data;
      for (const line of outcome.logs) log[line.level]({ fromHook: true }, line.msg);
      if (outcome.dropped > 0) log.warn({ dropped: outcome.dropped }, "hook output over the caps was dropped");
      // what it pushed before it threw still goes out
      const problems = [
        await sendMessages(this.rt, event, hook.name, outcome.messages),
        await startRuns(this.rt, event, hook.name, outcome.runs),
      ].filter((p): p is string => p !== undefined);
      if (outcome.error) return fail(outcome.error.kind === "threw" ? `it threw: ${outcome.error.message}` : outcome.error.message);
      if (problems.length) return fail(problems.join("; "));
      log.info({ ms: Date.now() - started, messages: outcome.messages.length, runs: outcome.runs.length }, "hook ran");
      this.rt.emit("ran", { hook: hook.name, event: name, ms: Date.now() - started, messages: outcome.messages.length, runs: outcome.runs.length }, "debug");
    } catch (err) {
      fail(`what it asked for could not be sent: ${(err as Error).message}`);
    }
  }

  private task(hook: HookInfo, event: HookEvent): HookTask {
    const entryEnv = this.rt.config.hooks.entries[hook.name]?.env ?? {};
    return {
      handler: hook.handler,
      version: mtime(hook.handler),
      event: { type: event.type, action: event.action, timestamp: event.timestamp, context: event.context, ...(event.sessionKey ? { sessionKey: event.sessionKey } : {}) },
      ctx: {
        hook: { name: hook.name, source: hook.source, dir: hook.dir },
        agentId: event.agentId,
        workspace: this.agents.get(event.agentId)?.workspace ?? this.rt.config.workspace,
        home: this.rt.config.home,
        env: { ...this.env, ...entryEnv },
      },
    };
  }
}

function mtime(path: string): number {
  try {
    return Math.floor(statSync(path).mtimeMs);
  } catch {
    return 0;
  }
}
