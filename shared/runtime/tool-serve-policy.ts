/**
 * The built-in layered tool policy (tool-policy.ts, the one the tools actor applies) for tools
 * another actor serves: pass `layeredToolPolicy(rt.config)` as serveTools' `policy`. Each served
 * tool is decided by its name and the groups its definition declares, through the same profiles,
 * provider/model, global, agent, session, sandbox and subagent layers as a built-in tool, for the
 * catalog, again on every call, and for `lurk.tools.explain` (`explain`: the one decision the
 * other two come from, so `lurkbot tools --explain` cannot disagree with what the actor does).
 * Options:
 *  - `requires`: tools a served tool is offered with only (the browser's browser_evaluate only
 *    where `browser` is allowed): the first of them the policy denies denies the served tool
 *    too, by that layer and rule;
 *  - `extra`: a rule of the actor's own, asked only when the layers allow the tool (e.g. the
 *    canvas only in sessions a web chat shows): its refusal text denies it, layer "actor".
 * An unknown agent is refused (explain: NOT_FOUND).
 */
import { LurkError } from "../contract/index.js";
import type { LurkConfig } from "./config.js";
import { decideTool, type ToolDecision } from "./tool-policy.js";
import { policyAgent, policyContext } from "./tool-policy-config.js";
import type { ServedTool, ServedToolDecision, ServedToolPolicy, ServedToolPolicyRequest } from "./tool-serve.js";

export interface LayeredToolPolicyOptions {
  /** tool names every served tool is offered with only (decided with the served tool's groups) */
  requires?: readonly string[];
  /** null: allowed; otherwise the model-readable reason the actor refuses the tool for this request */
  extra?(definition: ServedTool["definition"], req: ServedToolPolicyRequest): string | null;
}

/** The model-readable text of a refused call (tool-policy.ts deniedMessage, "actor" included). */
export function servedDeniedMessage(decision: ServedToolDecision, calledAs: string): string {
  if (decision.layer === "actor") return decision.rule;
  return `The tool "${calledAs}" is not available in this session: denied by the ${decision.layer} layer of the tool policy (${decision.rule}). Do not call it again; use another tool or tell the user.`;
}

export function layeredToolPolicy(config: LurkConfig, opts: LayeredToolPolicyOptions = {}): ServedToolPolicy & { explain: NonNullable<ServedToolPolicy["explain"]> } {
  const explain = (definition: ServedTool["definition"], req: ServedToolPolicyRequest): ServedToolDecision => {
    const agent = policyAgent(config, req.agentId);
    if (!agent) throw new LurkError("NOT_FOUND", `no agent "${req.agentId}" is configured`);
    const ctx = policyContext(config, agent, req);
    const own: ToolDecision = decideTool({ name: definition.name, groups: definition.groups }, ctx);
    if (!own.allowed) return own;
    for (const name of opts.requires ?? []) {
      if (name === definition.name) continue;
      const needed = decideTool({ name, groups: definition.groups }, ctx);
      if (needed.allowed) continue;
      const denials = needed.trace.filter((v) => v.effect === "deny").map((v) => ({ ...v, rule: `${name}: ${v.rule}` }));
      return { ...needed, tool: definition.name, rule: `${needed.rule}; offered only where ${name} is`, trace: [...own.trace, ...denials] };
    }
    const refused = opts.extra?.(definition, req) ?? null;
    if (refused !== null) return { tool: definition.name, allowed: false, layer: "actor", rule: refused, trace: own.trace };
    return own;
  };
  const policy = (definition: ServedTool["definition"], req: ServedToolPolicyRequest): string | null => {
    if (!policyAgent(config, req.agentId)) return `The tool "${definition.name}" is not available: no agent "${req.agentId}" is configured.`;
    const decision = explain(definition, req);
    return decision.allowed ? null : servedDeniedMessage(decision, definition.name);
  };
  return Object.assign(policy, { explain });
}
