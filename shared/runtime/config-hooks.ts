/**
 * The `hooks` key of the configuration (services/hooks, seeds 001 §8):
 *   "hooks": { "enabled": true, "entries": { "command-logger": { "enabled": true, "env": { "X": "1" } } },
 *              "timeoutMs": 30000, "workerMemoryMb": 64, "workerIdleMs": 10000, "maxQueue": 100,
 *              "watch": true, "reloadIntervalMs": 30000, "bootstrapTimeoutMs": 5000, "replayMaxAgeMs": 3600000 }
 * `enabled: false` runs no hook at all. The actor re-reads this section and the hook folders while
 * it runs (services/hooks/reloader.ts): `enabled`, `entries` and `maxQueue` apply at once; the
 * worker's limits (`timeoutMs`, `workerMemoryMb`, `workerIdleMs`, `bootstrapTimeoutMs`), `watch`,
 * `reloadIntervalMs` and `replayMaxAgeMs` at the actor's next start (agent-runners read
 * `bootstrapTimeoutMs` at theirs). Each hook's own default: hooks in `$LURKBOT_HOME/hooks`
 * are on, bundled and workspace hooks are off (a workspace is writable by the agent) until
 * `hooks.entries.<name>.enabled` (or `lurkbot hooks enable NAME`) turns them on.
 * `installs.<name>`: where `lurkbot hooks install` got a hook in `$LURKBOT_HOME/hooks` from (for
 * `hooks update`, `uninstall`, `list`); written by the CLI, never read by the actor.
 */
import { z } from "zod";

/** a smaller worker heap aborts the process on Node 22 and 24 (config.ts MIN_WORKER_MEMORY_MB; not imported: config.ts imports this file) */
const MIN_WORKER_MB = 32;

export const HOOK_NAME_RE = /^[A-Za-z0-9][\w.-]{0,63}$/;

export const HOOKS_DEFAULTS = {
  enabled: true,
  entries: {},
  installs: {},
  timeoutMs: 30_000,
  workerMemoryMb: 64,
  workerIdleMs: 10_000,
  maxQueue: 100,
  watch: true,
  reloadIntervalMs: 30_000,
  bootstrapTimeoutMs: 5_000,
  replayMaxAgeMs: 3_600_000,
};

export const hookEntrySchema = z.object({
  /** overrides the hook's default (user hooks on; bundled and workspace hooks off) */
  enabled: z.boolean().optional(),
  /** variables the handler sees in ctx.env (over the actor's environment); also satisfy `requires.env` */
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string().max(8192)).default({}),
});
export type HookEntry = z.infer<typeof hookEntrySchema>;

/** where an installed hook came from (`lurkbot hooks install`, services/cli/hooks-install.ts) */
export const hookInstallSchema = z.object({
  /** npm: `spec` went through `npm pack`; path: a folder; archive: a .tgz/.tar.gz/.tar/.zip file */
  source: z.enum(["npm", "path", "archive"]),
  /** the npm spec as given (`name`, `name@1.2.0`, `@scope/name`, `file:…`) */
  spec: z.string().min(1).max(1024).optional(),
  /** the folder or archive (absolute) */
  path: z.string().min(1).max(4096).optional(),
  /** the package it came in (a hook pack's package.json `name`) */
  pack: z.string().min(1).max(214).optional(),
  version: z.string().min(1).max(256).optional(),
  /** npm's integrity of the fetched tarball: `hooks update` reinstalls only when it changed */
  integrity: z.string().min(1).max(512).optional(),
  /** a symbolic link to the folder (`--link`), not a copy */
  link: z.boolean().optional(),
  installedAt: z.iso.datetime(),
}).refine((i) => (i.source === "npm" ? i.spec !== undefined : i.path !== undefined), { message: "an npm install needs its spec, a path or archive install its path" });
export type HookInstall = z.infer<typeof hookInstallSchema>;

const hookNameKey = z.string().regex(HOOK_NAME_RE, "a hook name: letters, digits, '.', '_', '-'");

export const hooksConfigSchema = z.object({
  /** false: no hook runs (the actor still starts, and subscribes to nothing) */
  enabled: z.boolean().default(HOOKS_DEFAULTS.enabled),
  entries: z.record(hookNameKey, hookEntrySchema).default({}),
  /** hooks installed by `lurkbot hooks install`, by name: where each came from */
  installs: z.record(hookNameKey, hookInstallSchema).default({}),
  /** one handler invocation may run this long; then its worker is terminated */
  timeoutMs: z.number().int().min(100).max(600_000).default(HOOKS_DEFAULTS.timeoutMs),
  /** old-generation heap cap of the hook worker, MB */
  workerMemoryMb: z.number().int().min(MIN_WORKER_MB).max(4096).default(HOOKS_DEFAULTS.workerMemoryMb),
  /** the worker ends after this long without an invocation (the next one starts a fresh worker) */
  workerIdleMs: z.number().int().min(100).max(3_600_000).default(HOOKS_DEFAULTS.workerIdleMs),
  /** events waiting for their hooks at most; more are dropped with a warning */
  maxQueue: z.number().int().min(1).max(10_000).default(HOOKS_DEFAULTS.maxQueue),
  /** watch the hook folders and config.json (fs.watch) and discover again on a change */
  watch: z.boolean().default(HOOKS_DEFAULTS.watch),
  /** discover again this long after the last reload anyway (fs.watch misses changes on some file systems); 0: never */
  reloadIntervalMs: z.union([z.literal(0), z.number().int().min(1000).max(86_400_000)]).default(HOOKS_DEFAULTS.reloadIntervalMs),
  /**
   * agent:bootstrap: a run waits this long at most for its bootstrap files through the hooks
   * (then it uses its own files); the hooks actor gives each bootstrap handler this long at most
   */
  bootstrapTimeoutMs: z.number().int().min(100).max(60_000).default(HOOKS_DEFAULTS.bootstrapTimeoutMs),
  /** a command, reset or new session kept for the hooks actor while it was down fires only if younger than this (ms); older ones are skipped */
  replayMaxAgeMs: z.number().int().min(1000).max(86_400_000).default(HOOKS_DEFAULTS.replayMaxAgeMs),
}).default(HOOKS_DEFAULTS);
export type HooksConfig = z.infer<typeof hooksConfigSchema>;
