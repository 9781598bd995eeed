/**
 * Built-in tools that need a setting besides the tool policy: `image` needs an image model for
 * the agent (agents[].imageModel, else tools.image.model). Without it the catalog leaves the tool
 * out and `lurk.tools.explain` shows it DENIED (layer "actor", the rule naming the setting); a
 * call still made gets NO_MODEL from the tool itself.
 */
import { imageModelFor } from "../../shared/runtime/config-tools-image.js";
import type { LurkConfig } from "../../shared/runtime/config.js";
import { policyAgent, type PolicyRequest } from "../../shared/runtime/tool-policy-config.js";

export const NO_IMAGE_MODEL = "no image model is configured for this agent (set tools.image.model or agents[].imageModel to a vision model)";

/** Why `tool` is not offered to the request's agent, or undefined when nothing is missing. */
export function unavailableReason(config: LurkConfig, tool: string, req: Pick<PolicyRequest, "agentId">): string | undefined {
  if (tool !== "image") return undefined;
  const agent = policyAgent(config, req.agentId);
  return agent && imageModelFor(config, agent.id) ? undefined : NO_IMAGE_MODEL;
}

/** The catalog entries without the tools the request's agent lacks a setting for. */
export function availableOnly<D extends { name: string }>(config: LurkConfig, defs: D[], req: Pick<PolicyRequest, "agentId">): D[] {
  return defs.filter((d) => unavailableReason(config, d.name, req) === undefined);
}

/** An explain reply with the allowed tools that lack a setting turned into denials by this actor. */
export function explainAvailability<R extends { decisions: Array<{ tool: string; allowed: boolean; layer: string; rule: string }> }>(config: LurkConfig, reply: R, req: Pick<PolicyRequest, "agentId">): R {
  const decisions = reply.decisions.map((d) => {
    const missing = d.allowed ? unavailableReason(config, d.tool, req) : undefined;
    return missing ? { ...d, allowed: false, layer: "actor" as const, rule: missing } : d;
  });
  return { ...reply, decisions };
}
