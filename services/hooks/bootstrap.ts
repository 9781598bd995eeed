/**
 * `agent:bootstrap`: serves `lurk.hooks.bootstrap`. An agent-runner sends a run's bootstrap files
 * (the ones its session gets, the absent ones as `missing`); the agent's hooks that want
 * `agent:bootstrap` run in order in their own worker (a pool apart from the other events', so a
 * slow command hook never holds a run), each seeing `event.context.bootstrapFiles` as the
 * previous one left it; the reply is the final list. A hook that throws, runs out of time or
 * leaves a list the contract refuses (names, per-file and total characters) changes nothing
 * and is logged and published as `lurk.evt.hooks.failed`; the next one runs all the same.
 * The request's `budgetMs` (how long the runner waits) bounds the whole: each hook gets the
 * time left (at most `hooks.bootstrapTimeoutMs`), and once it is spent the actor answers with
 * what it has. Messages a handler pushes go to the session's last conversation, after the
 * reply; `ctx.runAgent` is refused (every run would start another).
 */
import {
  bootstrapHookFilesSchema, type BootstrapHookFile, type HooksBootstrapReply, type ParsedRequestOf,
} from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { sendMessages } from "./deliver.js";
import { hooksFor, hookTask } from "./dispatcher.js";
import { bootstrapEvent } from "./hook-event.js";
import { hookOutcomeSchema } from "./outcome.js";
import type { HookPool } from "./pool.js";
import type { HookRegistry } from "./registry.js";

/** kept for the reply's way back: the actor stops starting hooks this long before the runner gives up */
const REPLY_MARGIN_MS = 250;
/** a hook is not started with less time than this left */
const MIN_HOOK_MS = 50;

type Request = ParsedRequestOf<"hooks", "bootstrap">;

export class BootstrapHooks {
  constructor(
    private readonly rt: ActorRuntime,
    /** the bootstrap hooks' own worker (pool.ts) */
    private readonly pool: HookPool,
    private readonly registry: () => HookRegistry,
    private readonly env: Record<string, string>,
  ) {}

  serve(): void {
    this.rt.serve("hooks", "bootstrap", (req) => this.run(req));
  }

  async run(req: Request): Promise<HooksBootstrapReply> {
    const started = Date.now();
    const registry = this.registry();
    const limitMs = this.rt.config.hooks.bootstrapTimeoutMs;
    const deadline = started + Math.min(req.budgetMs ?? limitMs, limitMs) - REPLY_MARGIN_MS;
    const event = bootstrapEvent(req, registry.agents.get(req.agentId)?.workspace ?? this.rt.config.workspace, started);
    let files: BootstrapHookFile[] = req.files;
    const ran: string[] = [];
    const failed: string[] = [];
    for (const hook of hooksFor(registry, event, "agent:bootstrap")) {
      const log = this.rt.log.child({ hook: hook.name, event: "agent:bootstrap", sessionKey: req.sessionKey, runId: req.runId });
      const fail = (reason: string) => {
        failed.push(hook.name);
        log.warn({ reason }, "hook failed");
        this.rt.emit("failed", { hook: hook.name, event: "agent:bootstrap", reason: reason.slice(0, 500) }, "warn");
      };
      const left = deadline - Date.now();
      if (left < MIN_HOOK_MS) {
        fail(`not run: the run's wait for its bootstrap files (hooks.bootstrapTimeoutMs, ${limitMs} ms) was spent by the hooks before it`);
        continue;
      }
      const hookStarted = Date.now();
      const raw = await this.pool.run(hookTask(this.rt, hook, event, registry, this.env, { bootstrapFiles: files }), { ms: Math.min(left, limitMs), name: "hooks.bootstrapTimeoutMs" });
      const checked = hookOutcomeSchema.safeParse(raw);
      if (!checked.success) {
        fail(`its worker answered out of shape: ${checked.error.issues[0]?.message ?? "invalid"}`);
        continue;
      }
      const outcome = checked.data;
      for (const line of outcome.logs) log[line.level]({ fromHook: true }, line.msg);
      if (outcome.messages.length) void sendMessages(this.rt, event, hook.name, outcome.messages).then((p) => p && log.warn({ reason: p }, "hook messages not sent"), (err: unknown) => log.warn({ err }, "hook messages not sent"));
      if (outcome.error) {
        fail(outcome.error.kind === "threw" ? `it threw: ${outcome.error.message}` : outcome.error.message);
        continue;
      }
      const next = bootstrapHookFilesSchema.safeParse(outcome.bootstrapFiles ?? files);
      if (!next.success) {
        fail(`its event.context.bootstrapFiles was refused (the files stay as before it): ${next.error.issues.slice(0, 3).map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
        continue;
      }
      files = next.data.map((f) => ({ name: f.name, content: f.content, missing: f.missing, ...pathOf(req.files, f.name) }));
      ran.push(hook.name);
      log.info({ ms: Date.now() - hookStarted, files: files.length }, "hook ran");
      this.rt.emit("ran", { hook: hook.name, event: "agent:bootstrap", ms: Date.now() - hookStarted, messages: outcome.messages.length, runs: 0 }, "debug");
    }
    return { files, ran, failed };
  }
}

/** the runner's path of a file it sent under that name (a file a hook added has none) */
function pathOf(sent: readonly BootstrapHookFile[], name: string): { path?: string } {
  const path = sent.find((f) => f.name === name)?.path;
  return path ? { path } : {};
}
