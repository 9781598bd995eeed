/**
 * Reload without restart: discovers the hooks again and swaps the registry (registry.ts) when
 * a watched folder or config.json changed (watch.ts, debounced), `hooks.reloadIntervalMs` after
 * the last reload of any kind (fs.watch misses changes on some file systems; a reload the watch
 * or a request just made is not repeated), and on `lurk.hooks.reload`. Watched: each
 * agent's `<workspace>/hooks` and every hook folder in it, `$LURKBOT_HOME/hooks` and its hook
 * folders, config.json (its `hooks` section, shared/runtime/hooks/config-file.ts) and where those
 * folders appear. Bundled hooks do not change. Reloads run one at a time; a config.json that
 * cannot be read or whose `hooks` section is invalid is logged and the previous section stays
 * in force (the folders are still read again). A swap that changed what runs is logged and
 * published as `lurk.evt.hooks.reloaded` with counts; new unusable folders are logged as at start.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { agentWorkspace, configFilePath } from "../../shared/runtime/config.js";
import type { HooksConfig } from "../../shared/runtime/config-hooks.js";
import { readHooksConfig } from "../../shared/runtime/hooks/config-file.js";
import { isSecretEnvName } from "../../shared/runtime/secret-env.js";
import { registerSecret } from "../../shared/runtime/logger.js";
import { buildRegistry, type HookRegistry } from "./registry.js";
import { HookWatch, type WatchFilter } from "./watch.js";

/** changes closer together than this are one reload */
export const RELOAD_DEBOUNCE_MS = 300;

export type ReloadReason = "start" | "watch" | "interval" | "request";

export interface ReloadResult {
  registry: HookRegistry;
  changed: boolean;
  configError?: string;
}

export class HookReloader {
  private current: HookRegistry | undefined;
  private tail: Promise<unknown> = Promise.resolve();
  private debounce: NodeJS.Timeout | undefined;
  private interval: NodeJS.Timeout | undefined;
  private started = false;
  private readonly watch: HookWatch;
  private hooksConfig: HooksConfig;
  private lastConfigError: string | undefined;
  private stopped = false;

  /** `apply` swaps the registry in (dispatcher and subscriptions); it runs before `reload` resolves */
  constructor(private readonly rt: ActorRuntime, private readonly env: Record<string, string>, private readonly apply: (next: HookRegistry, reason: ReloadReason) => void) {
    this.hooksConfig = rt.config.hooks;
    this.watch = new HookWatch((dir, name) => this.schedule(dir, name), rt.log);
  }

  get registry(): HookRegistry | undefined {
    return this.current;
  }

  /** the interval, per the config the actor started with (the watches follow each reload) */
  start(): void {
    this.started = true;
    this.arm();
  }

  /** Discovers again now (after the reloads already under way). Never rejects for a bad folder or config. */
  reload(reason: ReloadReason): Promise<ReloadResult> {
    const run = this.tail.then(() => this.reloadNow(reason));
    this.tail = run.catch((err) => this.rt.log.warn({ err, reason }, "hooks reload failed")).finally(() => this.arm());
    return run;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.debounce);
    clearTimeout(this.interval);
    this.watch.close();
  }

  /** the interval reload, `reloadIntervalMs` after the last reload (of any reason) ended */
  private arm(): void {
    const { reloadIntervalMs } = this.rt.config.hooks;
    clearTimeout(this.interval);
    if (!this.started || this.stopped || reloadIntervalMs <= 0) return;
    this.interval = setTimeout(() => void this.reload("interval").catch(() => undefined), reloadIntervalMs);
    this.interval.unref();
  }

  private schedule(dir: string, name: string | null): void {
    if (this.stopped) return;
    this.rt.log.debug({ dir, name }, "hook files changed");
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => void this.reload("watch").catch(() => undefined), RELOAD_DEBOUNCE_MS);
  }

  private async reloadNow(reason: ReloadReason): Promise<ReloadResult> {
    if (this.stopped && this.current) return { registry: this.current, changed: false };
    let configError: string | undefined;
    if (reason !== "start") {
      const read = readHooksConfig(this.rt.config.home);
      if (read.ok) this.hooksConfig = read.config;
      else configError = read.reason;
      if (configError !== this.lastConfigError && configError) this.rt.log.warn({ reason: configError }, "config.json's hooks section cannot be used; the previous one stays in force");
      this.lastConfigError = configError;
    }
    // a secret given to a hook through its entry's env is redacted from logs and events like the others
    for (const entry of Object.values(this.hooksConfig.entries)) {
      for (const [name, value] of Object.entries(entry.env ?? {})) if (isSecretEnvName(name)) registerSecret(value);
    }
    // watches first: a file written while the folders are read wakes another reload
    if (this.rt.config.hooks.watch && !this.stopped) this.watch.sync(this.watchTargets());
    const next = await buildRegistry(this.rt.config, this.hooksConfig, this.env);
    const previous = this.current;
    const changed = previous?.signature !== next.signature;
    if (changed) this.report(previous, next, reason);
    this.current = next;
    if (changed || !previous) this.apply(next, reason);
    return { registry: next, changed, ...(configError ? { configError } : {}) };
  }

  private report(previous: HookRegistry | undefined, next: HookRegistry, reason: ReloadReason): void {
    const log = this.rt.log;
    const seen = new Set(previous?.problems.map((p) => `${p.agentId}\0${p.dir}\0${p.reason}`) ?? []);
    for (const p of next.problems) {
      if (!seen.has(`${p.agentId}\0${p.dir}\0${p.reason}`)) log.warn({ agentId: p.agentId, source: p.source, dir: p.dir, reason: p.reason }, "hook folder skipped");
    }
    const unmetBefore = new Set(previous?.unmet.map((u) => `${u.agentId}\0${u.hook}\0${u.missing.join("\0")}`) ?? []);
    for (const u of next.unmet) {
      if (!unmetBefore.has(`${u.agentId}\0${u.hook}\0${u.missing.join("\0")}`)) log.warn({ agentId: u.agentId, hook: u.hook, missing: u.missing }, "hook enabled but its requirements are not met; it does not run");
    }
    if (reason === "start") return;
    const counts = { reason, running: next.running.length, problems: next.problems.length, hooksEnabled: next.config.enabled, agents: next.agents.size };
    log.info({ ...counts, hooks: next.running.map((r) => `${r.agentId}/${r.hook}`) }, "hooks reloaded");
    this.rt.emit("reloaded", { ...counts, hooks: next.running.map((r) => ({ agentId: r.agentId, hook: r.hook, source: r.source })).slice(0, 200) });
  }

  /** $LURKBOT_HOME (config.json, hooks), each workspace (hooks), both hooks roots and their hook folders */
  private watchTargets(): Map<string, WatchFilter> {
    const targets = new Map<string, WatchFilter>();
    const add = (dir: string, filter: WatchFilter) => {
      const have = targets.get(dir);
      if (have === "any" || filter === "any") targets.set(dir, "any");
      else targets.set(dir, new Set([...(have ?? []), ...filter]));
    };
    const home = this.rt.config.home;
    add(home, new Set([configFilePath(home).slice(home.length + 1), "hooks"]));
    const roots = [join(home, "hooks")];
    for (const agent of this.rt.config.agents) {
      const workspace = agentWorkspace(this.rt.config, agent);
      add(workspace, new Set(["hooks"]));
      roots.push(join(workspace, "hooks"));
    }
    for (const root of new Set(roots)) {
      add(root, "any");
      for (const sub of subfolders(root, root === roots[0])) add(join(root, sub), "any");
    }
    return targets;
  }
}

/** hook folders, and in $LURKBOT_HOME/hooks links (`hooks install --link`: fs.watch watches the folder it points to); a workspace's links are no hooks (discovery.ts), so not watched */
function subfolders(dir: string, links: boolean): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).filter((e) => (e.isDirectory() || (links && e.isSymbolicLink())) && !e.name.startsWith(".")).map((e) => e.name).slice(0, 100);
  } catch {
    return [];
  }
}
