/**
 * The tool policy of the browser tools: the built-in layered policy (shared/runtime/tool-policy.ts,
 * the same profiles, groups, provider/model rules, tools.allow/deny, agent rules, session and
 * subagent layers the tools actor applies; `browser` is in group:ui and in the group-session deny
 * list), for the catalog and again on every call. `browser_evaluate` is offered only where
 * `browser` itself is allowed too, so every rule that keeps the browser out keeps it out.
 */
import type { LurkConfig } from "../../shared/runtime/config.js";
import type { ServedToolPolicy } from "../../shared/runtime/tool-serve.js";
import { deniedMessage } from "../../shared/runtime/tool-policy.js";
import { decideForRequest, policyAgent } from "../../shared/runtime/tool-policy-config.js";

export function browserPolicy(config: LurkConfig): ServedToolPolicy {
  return (definition, req) => {
    const agent = policyAgent(config, req.agentId);
    if (!agent) return `The tool "${definition.name}" is not available: no agent "${req.agentId}" is configured.`;
    for (const name of new Set([definition.name, "browser"])) {
      const decision = decideForRequest(config, agent, req, { name, groups: definition.groups });
      if (!decision.allowed) return deniedMessage(decision, definition.name);
    }
    return null;
  };
}
