/**
 * What runs, per agent: the result of one discovery (shared/runtime/hooks/discovery.ts) under one
 * `hooks` config section. A registry is never changed once built: a reload builds a new one and
 * the actor swaps it in whole (reloader.ts), so an event that started with one finishes with it.
 */
import { agentWorkspace, type LurkConfig } from "../../shared/runtime/config.js";
import type { HooksConfig } from "../../shared/runtime/config-hooks.js";
import { discoverHooks, type HookInfo, type HookProblem } from "../../shared/runtime/hooks/discovery.js";

export interface AgentHooks {
  workspace: string;
  /** the hooks that run (enabled and eligible), in discovery order */
  hooks: HookInfo[];
}

export interface HookRegistry {
  /** the `hooks` section in force (entries' env, maxQueue) */
  config: HooksConfig;
  agents: ReadonlyMap<string, AgentHooks>;
  /** the event patterns some running hook wants (sources.ts subscribes to those only) */
  patterns: string[];
  running: Array<{ agentId: string; hook: string; source: string; events: string[] }>;
  problems: Array<HookProblem & { agentId: string }>;
  /** enabled hooks whose requirements are not met */
  unmet: Array<{ agentId: string; hook: string; missing: string[] }>;
  /** equal for two registries that run the same hooks the same way */
  signature: string;
}

/** Discovers every configured agent's hooks under `hooks` (the rest of `base` as the actor started). */
export async function buildRegistry(base: LurkConfig, hooks: HooksConfig, env: Record<string, string>): Promise<HookRegistry> {
  const config = { ...base, hooks };
  const agents = new Map<string, AgentHooks>();
  const problems: HookRegistry["problems"] = [];
  const unmet: HookRegistry["unmet"] = [];
  for (const agent of base.agents) {
    const found = await discoverHooks(config, { agentId: agent.id, env });
    problems.push(...found.problems.map((p) => ({ agentId: agent.id, ...p })));
    for (const h of found.hooks) if (h.enabled && hooks.enabled && h.missing.length > 0) unmet.push({ agentId: agent.id, hook: h.name, missing: h.missing });
    agents.set(agent.id, { workspace: agentWorkspace(base, agent), hooks: found.hooks.filter((h) => h.runs) });
  }
  const running = [...agents.entries()].flatMap(([agentId, a]) => a.hooks.map((h) => ({ agentId, hook: h.name, source: h.source, events: h.events })));
  const patterns = [...new Set(running.flatMap((r) => r.events))];
  const signature = JSON.stringify({
    hooks,
    run: [...agents.entries()].map(([agentId, a]) => [agentId, a.hooks.map((h) => [h.name, h.source, h.handler, h.events, h.context])]),
    problems: problems.map((p) => [p.agentId, p.dir, p.reason]),
    unmet,
  });
  return { config: hooks, agents, patterns, running, problems, unmet, signature };
}

/** An empty registry (nothing runs), before the first discovery. */
export function emptyRegistry(hooks: HooksConfig): HookRegistry {
  return { config: hooks, agents: new Map(), patterns: [], running: [], problems: [], unmet: [], signature: "" };
}
