/**
 * Runs the hooks of each event: events one at a time in arrival order (at most
 * `hooks.maxQueue` waiting; more are dropped with a warning), and for one event its agent's
 * hooks that want it, in discovery order, each in the worker (pool.ts). A hook that throws, hangs
 * or asks for something invalid is logged (pino: hook, event, reason) and published as
 * `lurk.evt.hooks.failed`; the next hook runs all the same. A hook that ran is `lurk.evt.hooks.ran`.
 * An event takes the registry in force when its turn comes and keeps it to its end: a reload
 * (reloader.ts) applies from the next event on. Hooks that ask for `previousMessages` get the
 * ended transcript's messages (previous-messages.ts), read once per event; when that fails the
 * field is left out, logged, and the hook runs all the same.
 */
import { statSync } from "node:fs";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import type { HookInfo } from "../../shared/runtime/hooks/discovery.js";
import { hookWants } from "../../shared/runtime/hooks/events.js";
import { sendMessages, startRuns } from "./deliver.js";
import type { HookEvent } from "./hook-event.js";
import { hookOutcomeSchema } from "./outcome.js";
import type { HookPool } from "./pool.js";
import { fetchPreviousMessages, type PreviousMessage } from "./previous-messages.js";
import type { HookRegistry } from "./registry.js";
import type { HookTask } from "./task.js";

/** what one event's hooks share: its registry, and the previous messages once read */
interface EventRun {
  registry: HookRegistry;
  name: string;
  previous?: Promise<PreviousMessage[] | undefined>;
}

export class HookDispatcher {
  private tail: Promise<void> = Promise.resolve();
  private waiting = 0;

  constructor(
    private readonly rt: ActorRuntime,
    private readonly pool: HookPool,
    /** the registry in force (swapped by a reload) */
    private readonly registry: () => HookRegistry,
    private readonly env: Record<string, string>,
  ) {}

  /** Queues the event; resolves when its hooks ran (tests, shutdown). */
  dispatch(event: HookEvent): Promise<void> {
    const name = `${event.type}:${event.action}`;
    if (hooksFor(this.registry(), event, name).length === 0) return Promise.resolve();
    if (this.waiting >= this.registry().config.maxQueue) {
      this.rt.log.warn({ event: name, sessionKey: event.sessionKey, waiting: this.waiting }, "hook event dropped: too many events wait for their hooks (hooks.maxQueue)");
      this.rt.emit("dropped", { event: name, reason: "queue full" }, "warn");
      return Promise.resolve();
    }
    this.waiting++;
    const run = this.tail.then(async () => {
      this.waiting--;
      // the registry at the event's turn, for all of its hooks
      const ev: EventRun = { registry: this.registry(), name };
      for (const hook of hooksFor(ev.registry, event, name)) await this.runOne(hook, event, ev);
    });
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** whether some running hook of the event's agent takes it */
  wants(event: HookEvent): boolean {
    return hooksFor(this.registry(), event, `${event.type}:${event.action}`).length > 0;
  }

  /** the events still queued or running have finished */
  idle(): Promise<void> {
    return this.tail;
  }

  private async runOne(hook: HookInfo, event: HookEvent, ev: EventRun): Promise<void> {
    const name = ev.name;
    const started = Date.now();
    const log = this.rt.log.child({ hook: hook.name, event: name, ...(event.sessionKey ? { sessionKey: event.sessionKey } : {}) });
    const fail = (reason: string) => {
      log.warn({ reason }, "hook failed");
      this.rt.emit("failed", { hook: hook.name, event: name, reason: reason.slice(0, 500) }, "warn");
    };
    try {
      const raw = await this.pool.run(this.task(hook, event, ev, await this.extraContext(hook, event, ev)));
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

  /** the context the hook asked for besides the event's own (HOOK.md `context`) */
  private async extraContext(hook: HookInfo, event: HookEvent, ev: EventRun): Promise<Record<string, unknown>> {
    const previousSessionId = event.context.previousSessionId;
    if (!hook.context.includes("previousMessages") || typeof previousSessionId !== "string" || !event.sessionKey) return {};
    const sessionKey = event.sessionKey;
    ev.previous ??= fetchPreviousMessages(this.rt, sessionKey, previousSessionId).catch((err) => {
      this.rt.log.warn({ event: ev.name, sessionKey, previousSessionId, err: (err as Error).message }, "the ended transcript could not be read: hooks get no context.previousMessages");
      return undefined;
    });
    const previous = await ev.previous;
    return previous ? { previousMessages: previous } : {};
  }

  private task(hook: HookInfo, event: HookEvent, ev: EventRun, extra: Record<string, unknown>): HookTask {
    return hookTask(this.rt, hook, event, ev.registry, this.env, extra);
  }
}

/** One invocation of `hook` for `event` under `registry` (also bootstrap.ts's). */
export function hookTask(rt: ActorRuntime, hook: HookInfo, event: HookEvent, registry: HookRegistry, env: Record<string, string>, extra: Record<string, unknown> = {}): HookTask {
  const entryEnv = registry.config.entries[hook.name]?.env ?? {};
  return {
    handler: hook.handler,
    version: mtime(hook.handler),
    event: { type: event.type, action: event.action, timestamp: event.timestamp, context: { ...event.context, ...extra }, ...(event.sessionKey ? { sessionKey: event.sessionKey } : {}) },
    ctx: {
      hook: { name: hook.name, source: hook.source, dir: hook.dir },
      agentId: event.agentId,
      workspace: registry.agents.get(event.agentId)?.workspace ?? rt.config.workspace,
      home: rt.config.home,
      env: { ...env, ...entryEnv },
    },
  };
}

/** the registry's hooks of the event's agent that want it, in discovery order */
export function hooksFor(registry: HookRegistry, event: HookEvent, name: string): HookInfo[] {
  return registry.agents.get(event.agentId)?.hooks.filter((h) => hookWants(h.events, name)) ?? [];
}

function mtime(path: string): number {
  try {
    return Math.floor(statSync(path).mtimeMs);
  } catch {
    return 0;
  }
}
