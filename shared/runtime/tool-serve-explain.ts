/**
 * `lurk.tools.explain` for the tools an actor serves with serveTools (tool-serve.ts): the reply
 * the tools actor gives for its own (tool-policy-config.ts explainTools), so `lurkbot tools
 * --explain` lists them alike: per tool allowed or denied, the deciding layer and rule with the
 * trace, its groups, and whether and why its calls wait for a human approval.
 * The decision is the actor's policy's: a layered one (tool-serve-policy.ts) explains itself
 * (layer, rule, trace); a policy function of the actor's own says only yes or no (layer "actor",
 * its refusal text as the rule); without a policy every request gets the tool (layer "actor").
 * Approval: the rules serveTools' gate applies (servedApproval): the definition's
 * needsApproval, tools.requireApproval, agents[].requireApproval; tools.exec.ask is the
 * built-in exec's and process's only.
 */
import { LurkError, type ReplyOf, type ToolApproval } from "../contract/index.js";
import type { LurkConfig } from "./config.js";
import { approvalExplanation } from "./tool-approval-explain.js";
import { explainReply, type PolicyRequest } from "./tool-policy-config.js";
import type { ServedTool, ServedToolPolicy } from "./tool-serve.js";

type ExplainReply = ReplyOf<"tools", "explain">;
type Decision = ExplainReply["decisions"][number];

/** The longest refusal text of an actor's own policy kept as the rule. */
const MAX_RULE_CHARS = 500;

function decide(actor: string, definition: ServedTool["definition"], policy: ServedToolPolicy | undefined, req: PolicyRequest): Omit<Decision, "groups" | "aliases"> {
  if (policy?.explain) return policy.explain(definition, req);
  if (!policy) {
    return { tool: definition.name, allowed: true, layer: "actor", rule: `${actor} applies no tool policy: every agent and session gets it (profiles and tools.allow/deny do not apply)`, trace: [] };
  }
  const refused = policy(definition, req);
  return refused === null
    ? { tool: definition.name, allowed: true, layer: "actor", rule: `allowed by ${actor}'s own tool policy`, trace: [] }
    : { tool: definition.name, allowed: false, layer: "actor", rule: `${actor}'s own tool policy: ${refused.slice(0, MAX_RULE_CHARS)}`, trace: [] };
}

/** Why calls of a served tool wait for a human (the gate's rules; tools.exec.ask is not one of them). */
export function servedApproval(config: LurkConfig, agentId: string, definition: ServedTool["definition"]): ToolApproval | undefined {
  const reasons = (approvalExplanation(config, agentId, { name: definition.name, groups: definition.groups, needsApproval: definition.needsApproval })?.reasons ?? [])
    .filter((r) => r.source !== "exec-ask");
  return reasons.length ? { calls: "all", reasons } : undefined;
}

/** The `lurk.tools.explain` reply of `actor` for `tools`; NOT_FOUND for an unknown agent (as the tools actor). */
export function explainServedTools(config: LurkConfig, actor: string, tools: readonly ServedTool[], policy: ServedToolPolicy | undefined, req: PolicyRequest): ExplainReply {
  return explainReply(config, actor, req, (agentId) => tools.map(({ definition }) => {
    const approval = servedApproval(config, agentId, definition);
    return { ...decide(actor, definition, policy, req), groups: [...definition.groups], aliases: [], ...(approval ? { approval } : {}) };
  }));
}
