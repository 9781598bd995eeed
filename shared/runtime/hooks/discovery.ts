/**
 * Hook discovery (seeds 001 §8.5), shared by the hooks actor and `lurkbot hooks`. Hook folders
 * `<dir>/<name>/` holding a HOOK.md (hook-md.ts) and a handler module (`handler.mjs` or
 * `handler.js`) are found in three places; for one name the earlier place wins:
 *   1. `<agent workspace>/hooks/`   "workspace"  off by default (the agent can write its workspace)
 *   2. `$LURKBOT_HOME/hooks/`       "user"       on by default (installed by the user)
 *   3. `services/hooks/bundled/`    "bundled"    off by default, as OpenClaw ships them
 * `hooks.entries.<name>.enabled` overrides the default. A hook runs when hooks are on, it is
 * enabled and its requirements are met (bins on PATH, env set, os). A folder that cannot be used
 * (no or malformed HOOK.md, no handler) is a problem in the result, never an exception; it does
 * not take its name from a lower place. Order: by place, then by name (code units). In
 * `$LURKBOT_HOME/hooks/` a symbolic link to a folder counts as a hook folder (`lurkbot hooks
 * install --link`); in a workspace it does not (the agent can write its workspace).
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../../scripts/paths.js";
import { agentWorkspace, defaultAgent, type LurkConfig } from "../config.js";
import { unmetRequirements } from "../host-requirements.js";
import { isSecretEnvName } from "../secret-env.js";
import { compareCodeUnits } from "../order.js";
import { parseHookMd, type HookMeta } from "./hook-md.js";

export type HookSource = "workspace" | "user" | "bundled";

export const BUNDLED_HOOKS_DIR = join(REPO_ROOT, "services", "hooks", "bundled");
export const HANDLER_FILES = ["handler.mjs", "handler.js"] as const;

const MAX_HOOK_MD_BYTES = 64 * 1024;
const MAX_HOOKS_PER_DIR = 100;
const DEFAULT_ENABLED: Record<HookSource, boolean> = { workspace: false, user: true, bundled: false };

export interface HookInfo extends HookMeta {
  source: HookSource;
  /** the hook's folder, HOOK.md and handler module (absolute) */
  dir: string;
  hookMd: string;
  handler: string;
  enabled: boolean;
  /** where `enabled` came from */
  enabledBy: "default" | "config";
  /** unmet requirements, each a sentence; empty: eligible */
  missing: string[];
  /** hooks are on, this one is enabled and eligible */
  runs: boolean;
  /** the same name in lower places, hidden by this one */
  shadows: HookSource[];
}

export interface HookProblem {
  source: HookSource;
  dir: string;
  reason: string;
}

export interface HookDiscovery {
  agentId: string;
  /** the searched folders, in precedence order */
  dirs: Array<{ source: HookSource; dir: string }>;
  hooks: HookInfo[];
  problems: HookProblem[];
}

export interface DiscoverOptions {
  /** default: the default agent */
  agentId?: string;
  env?: Record<string, string | undefined>;
  platform?: string;
  /** default BUNDLED_HOOKS_DIR; null: none (tests) */
  bundledDir?: string | null;
}

/** The environment a handler sees (ctx.env before its entry's env): `env` without secrets (the launcher's rule, secret-env.ts). */
export function hookEnv(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === "string" && !isSecretEnvName(e[0])));
}

/** The hooks of one agent, with their state under `config`. Throws only for an unknown agent id. */
export async function discoverHooks(config: LurkConfig, opts: DiscoverOptions = {}): Promise<HookDiscovery> {
  const agent = opts.agentId ? config.agents.find((a) => a.id === opts.agentId) : defaultAgent(config);
  if (!agent) throw new Error(`no agent "${opts.agentId}"; configured agents: ${config.agents.map((a) => a.id).join(", ")}`);
  const dirs: HookDiscovery["dirs"] = [
    { source: "workspace", dir: join(agentWorkspace(config, agent), "hooks") },
    { source: "user", dir: join(config.home, "hooks") },
    ...(opts.bundledDir === null ? [] : [{ source: "bundled" as const, dir: opts.bundledDir ?? BUNDLED_HOOKS_DIR }]),
  ];
  const env = opts.env ?? process.env;
  const platform = opts.platform ?? process.platform;
  const byName = new Map<string, HookInfo>();
  const problems: HookProblem[] = [];
  // the agent can write its workspace: a workspace hook never takes the name (and so the
  // `hooks.entries` enable) of a user or bundled hook, so those places are read first
  const protectedNames = new Set<string>();
  const order = [...dirs.filter((d) => d.source !== "workspace"), ...dirs.filter((d) => d.source === "workspace")];
  for (const { source, dir } of order) {
    for (const name of hookFolders(dir, source === "user")) {
      const folder = join(dir, name);
      const found = readHook(folder, name);
      if (!found.ok) {
        problems.push({ source, dir: folder, reason: found.reason });
        continue;
      }
      if (source === "workspace" && protectedNames.has(found.meta.name)) {
        const other = byName.get(found.meta.name)!;
        problems.push({ source, dir: folder, reason: `it has the name of the ${other.source} hook "${found.meta.name}", which a workspace hook cannot replace (the agent can write its workspace): rename the folder and the name in its HOOK.md` });
        continue;
      }
      const winner = byName.get(found.meta.name);
      if (winner) {
        winner.shadows.push(source);
        continue;
      }
      if (source !== "workspace") protectedNames.add(found.meta.name);
      const entry = config.hooks.entries[found.meta.name];
      const enabled = entry?.enabled ?? DEFAULT_ENABLED[source];
      const missing = await unmet(found.meta, { ...hookEnv(env), ...entry?.env }, platform);
      byName.set(found.meta.name, {
        ...found.meta, source, dir: folder, hookMd: join(folder, "HOOK.md"), handler: found.handler,
        enabled, enabledBy: entry?.enabled === undefined ? "default" : "config", missing,
        runs: config.hooks.enabled && enabled && missing.length === 0, shadows: [],
      });
    }
  }
  const rank = (h: HookInfo) => dirs.findIndex((d) => d.source === h.source);
  const hooks = [...byName.values()].sort((a, b) => rank(a) - rank(b) || compareCodeUnits(a.name, b.name));
  return { agentId: agent.id, dirs, hooks, problems };
}

/** the sub-folders of `dir` (sorted, at most MAX_HOOKS_PER_DIR), or none when it does not exist; `links`: also symbolic links to folders */
function hookFolders(dir: string, links: boolean): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((e) => !e.name.startsWith(".") && (e.isDirectory() || (links && e.isSymbolicLink() && isFolder(join(dir, e.name)))))
      .map((e) => e.name)
      .sort(compareCodeUnits)
      .slice(0, MAX_HOOKS_PER_DIR);
  } catch {
    return [];
  }
}

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * One hook folder as discovery reads it: HOOK.md (a file, at most 64 KiB, parsed by hook-md.ts,
 * its name equal to `name`) and a handler module; else why it cannot be used. Also what
 * `lurkbot hooks install` checks before it writes anything.
 */
export function readHook(folder: string, name: string): { ok: true; meta: HookMeta; handler: string } | { ok: false; reason: string } {
  const hookMd = join(folder, "HOOK.md");
  let text: string;
  try {
    const st = statSync(hookMd);
    if (!st.isFile()) return { ok: false, reason: "HOOK.md is not a file" };
    if (st.size > MAX_HOOK_MD_BYTES) return { ok: false, reason: `HOOK.md is larger than ${MAX_HOOK_MD_BYTES / 1024} KiB` };
    text = readFileSync(hookMd, "utf8");
  } catch {
    return { ok: false, reason: "no HOOK.md in this folder (add one with name, description and events)" };
  }
  const parsed = parseHookMd(text, name);
  if (!parsed.ok) return parsed;
  const handler = HANDLER_FILES.map((f) => join(folder, f)).find((f) => existsSync(f));
  if (!handler) return { ok: false, reason: `no handler module (${HANDLER_FILES.join(" or ")}) exporting a default async function (event, ctx)` };
  return { ok: true, meta: parsed.meta, handler };
}

/** The requirements `meta` misses here, each as a sentence that says what to do. */
/** what keeps the hook from running on this host (host-requirements.ts) */
function unmet(meta: HookMeta, env: Record<string, string | undefined>, platform: string): Promise<string[]> {
  return unmetRequirements(meta.requires, env, platform, { envHint: (name) => `set it, or hooks.entries.${meta.name}.env.${name}` });
}
