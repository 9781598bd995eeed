/**
 * Small models: the ones a prompt injection (a group member's message, a stranger's DM, a page
 * the agent fetched) talks into misusing tools most easily. A model counts as small when its
 * name states a parameter count up to 300B (e.g. `ollama/llama3.1:8b`, `mixtral:8x7b`), names a
 * vendor's small tier (mini, nano, haiku, lite, gpt-3.5), or is a local Ollama model without a
 * size (those are usually small). Aliases are resolved by the agent-runner's own table.
 * `modelChecks` (run with --deep) reports agents that take group or open-DM messages with tools
 * on such a model.
 */
import type { LurkConfig } from "../../../shared/runtime/config.js";
import { resolveModelRef } from "../../../shared/runtime/models.js";
import { TOOL_GROUPS, decideTool } from "../../../shared/runtime/tool-policy.js";
import { policyContext } from "../../../shared/runtime/tool-policy-config.js";
import { finding, type AuditFinding } from "./finding.js";
import { exposures } from "./reach.js";

const MAX_SMALL_PARAMS_B = 300;

/** The parameter count (billions) a model name states, e.g. "qwen2.5:72b" -> 72, "mixtral-8x7b" -> 56. */
export function statedParamsB(model: string): number | undefined {
  const m = /(?:^|[^a-z0-9.])(?:(\d+)x)?(\d+(?:\.\d+)?)b(?![a-z0-9])/i.exec(model);
  if (!m) return undefined;
  return Number(m[2]) * (m[1] ? Number(m[1]) : 1);
}

/** Why a `provider/model` is a small model, or undefined. */
export function smallModelReason(ref: string): string | undefined {
  const slash = ref.indexOf("/");
  const provider = slash > 0 ? ref.slice(0, slash) : "";
  const model = (slash > 0 ? ref.slice(slash + 1) : ref).toLowerCase();
  const size = statedParamsB(model);
  if (size !== undefined) return size <= MAX_SMALL_PARAMS_B ? `${size}B parameters` : undefined;
  if (/gpt-3\.5/.test(model)) return "an older small model";
  if (/(^|[-_.:])(mini|nano|tiny|small|lite)($|[-_.:])/.test(model)) return "a vendor's small tier";
  if (/haiku/.test(model)) return "Anthropic's small tier";
  if (provider === "ollama") return "a local model without a stated size (usually small)";
  return undefined;
}

/** The models an agent's runs use: its model (or the global one) and its fallbacks, resolved. */
export function agentModels(config: LurkConfig, agent: { model?: string | undefined; fallbacks: readonly string[] }): string[] {
  const refs = [agent.model ?? config.model, ...agent.fallbacks].filter((r): r is string => !!r);
  return [...new Set(refs.map((r) => resolveModelRef(r, config)))];
}

/** Agents that take group or open-DM messages with tools, on a small model (info: prompt injection). */
export function modelChecks(config: LurkConfig): AuditFinding[] {
  const names = [...new Set(Object.values(TOOL_GROUPS).flat())];
  /** "agent model (why)" -> where strangers reach it */
  const hits = new Map<string, Set<string>>();
  for (const e of exposures(config).filter((x) => x.kind === "group" || x.open)) {
    for (const agent of e.agents) {
      const tools = e.sessionTypes.some((t) => names.some((name) => decideTool({ name }, policyContext(config, agent, { sessionType: t })).allowed));
      if (!tools) continue;
      for (const model of agentModels(config, agent)) {
        const why = smallModelReason(model);
        if (!why) continue;
        const key = `agent ${agent.id}: ${model} (${why})`;
        hits.set(key, (hits.get(key) ?? new Set()).add(`${e.channel} ${e.kind === "dm" ? "DMs" : "groups"}`));
      }
    }
  }
  if (hits.size === 0) return [];
  return [finding({
    id: "deep.model.small-for-untrusted", level: "info",
    title: "small models answer strangers with tools",
    detail: `${[...hits].map(([what, where]) => `${what} on ${[...where].join(", ")}`).join("; ")}. Small models follow instructions hidden in a message, a group's chatter or a fetched page more readily (prompt injection), and these agents can act through tools.`,
    fix: "give agents that face groups or open DMs a large current model (agents[].model), or narrow their tools (agents[].toolProfile \"messaging\" or tools.bySessionType.group.deny)",
  })];
}
