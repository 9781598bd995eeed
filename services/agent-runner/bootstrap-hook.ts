/**
 * `agent:bootstrap` from the runner's side: before a run's system prompt is built, its bootstrap
 * files (after the session's filter: a subagent's AGENTS.md and TOOLS.md, no MEMORY.md in shared
 * chats; the ones the session would get but the workspace lacks go as `missing`) are sent to the
 * hooks actor (`lurk.hooks.bootstrap`), whose hooks may change, add or drop files; the reply is
 * what the Project Context shows. Asked only for agents the `lurk_hooks` bucket lists
 * (`bootstrap.<agentId>`, watched here; a value older than BOOTSTRAP_HOOKS_TTL_MS counts as
 * absent), so a run of an agent without such hooks costs nothing. The wait is
 * `hooks.bootstrapTimeoutMs`; no answer in time, no hooks actor, an error or a reply out of the
 * contract (names, per-file and total characters) leaves the files as they were, with a
 * warning: a run never fails because of a hook. A file whose content the hooks left unchanged
 * keeps its path and trim flag; a blank one is left out, as on disk. Asked once per run (a
 * model switch reuses the answer).
 */
import { join } from "node:path";
import { Kvm, type KvEntry } from "@nats-io/kv";
import { BOOTSTRAP_HOOKS_TTL_MS, bootstrapHooksEntrySchema, HOOKS_BUCKET, LurkError, safeParseJson, type BootstrapHookFile, type SessionType } from "../../shared/contract/index.js";
import { sleepUnlessAborted } from "../../shared/runtime/abortable-sleep.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { bootstrapNamesFor, type BootstrapFile } from "./bootstrap.js";

/** how long a failed watch waits before it tries again */
const WATCH_RETRY_MS = 30_000;
/** answers kept for a model switch in the same run */
const RECENT_RUNS = 32;

export interface BootstrapRun {
  agentId: string;
  sessionKey: string;
  runId: string;
  /** after the subagent mapping (prompt-inputs.ts) */
  sessionType: SessionType;
  workspace: string;
}

export class BootstrapHookClient {
  /** agentId -> when its entry was written (server time, ms) */
  private readonly agents = new Map<string, number>();
  private readonly recent = new Map<string, Promise<BootstrapFile[]>>();

  constructor(private readonly rt: ActorRuntime, private readonly timeoutMs: number) {}

  /** Follows the bucket until `signal` fires (a failure is logged and retried). */
  async watch(signal: AbortSignal): Promise<void> {
    let warned = false;
    while (!signal.aborted) {
      try {
        const kv = await new Kvm(this.rt.nc).open(HOOKS_BUCKET);
        const updates = await kv.watch({ key: "bootstrap.>" });
        const stop = () => updates.stop();
        signal.addEventListener("abort", stop, { once: true });
        try {
          for await (const entry of updates) this.apply(entry);
        } finally {
          signal.removeEventListener("abort", stop);
        }
      } catch (err) {
        if (!warned) this.rt.log.warn({ err }, "cannot watch the lurk_hooks bucket: agent:bootstrap hooks are not asked until it can be read (run `npx lurkbot setup` or restart the launcher to create it)");
        warned = true;
      }
      this.agents.clear();
      await sleepUnlessAborted(WATCH_RETRY_MS, signal);
    }
  }

  /** some running agent:bootstrap hook of the agent was announced recently */
  wants(agentId: string): boolean {
    const at = this.agents.get(agentId);
    return at !== undefined && Date.now() - at < BOOTSTRAP_HOOKS_TTL_MS;
  }

  /** The files the run's prompt takes: `loaded` through the agent's hooks, or `loaded` itself. Never throws. */
  filesFor(run: BootstrapRun, loaded: BootstrapFile[], log: Logger): Promise<BootstrapFile[]> {
    if (!this.wants(run.agentId)) return Promise.resolve(loaded);
    const key = `${run.runId}\0${run.sessionType}`;
    const have = this.recent.get(key);
    if (have) return have;
    const asked = this.ask(run, loaded, log);
    this.recent.set(key, asked);
    if (this.recent.size > RECENT_RUNS) this.recent.delete(this.recent.keys().next().value!);
    return asked;
  }

  private async ask(run: BootstrapRun, loaded: BootstrapFile[], actorLog: Logger): Promise<BootstrapFile[]> {
    const log = actorLog.child({ runId: run.runId, sessionKey: run.sessionKey });
    const started = Date.now();
    const files: BootstrapHookFile[] = bootstrapNamesFor(run.sessionType).map((name) => {
      const f = loaded.find((x) => x.name === name);
      return f ? { name, content: f.content, missing: false, path: f.path, ...(f.trimmed ? { trimmed: true } : {}) } : { name, content: "", missing: true, path: join(run.workspace, name) };
    });
    try {
      const reply = await this.rt.client.call("hooks", "bootstrap", {
        agentId: run.agentId, sessionKey: run.sessionKey, runId: run.runId, sessionType: run.sessionType, workspace: run.workspace, files, budgetMs: this.timeoutMs,
      }, { timeoutMs: this.timeoutMs, runId: run.runId });
      const out = reply.files.filter((f) => f.content.trim() !== "").map((f): BootstrapFile => {
        const same = loaded.find((x) => x.name === f.name && x.content === f.content);
        return same ?? { name: f.name, path: join(run.workspace, f.name), content: f.content, trimmed: false };
      });
      log.info({ ms: Date.now() - started, ran: reply.ran, failed: reply.failed, files: out.map((f) => f.name) }, "bootstrap files through agent:bootstrap hooks");
      return out;
    } catch (err) {
      const e = LurkError.from(err);
      log.warn({ code: e.code, reason: e.message.slice(0, 500), ms: Date.now() - started }, "agent:bootstrap hooks gave no usable answer: the run uses its bootstrap files unchanged");
      return loaded;
    }
  }

  private apply(entry: KvEntry): void {
    const agentId = entry.key.slice("bootstrap.".length);
    if (entry.operation !== "PUT") {
      this.agents.delete(agentId);
      return;
    }
    let ok = false;
    try {
      ok = bootstrapHooksEntrySchema.safeParse(safeParseJson(entry.value)).success;
    } catch {
      ok = false;
    }
    if (ok) this.agents.set(agentId, entry.created.getTime());
    else this.agents.delete(agentId);
  }
}
