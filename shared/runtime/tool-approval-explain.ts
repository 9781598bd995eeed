/**
 * `lurkbot tools --explain`: why calls of a tool need a human approval (the same rules as
 * approval-gate.ts callNeedsApproval, stated per tool instead of per call): the tool's own
 * `needsApproval`, each matching entry of tools.requireApproval and of the agent's
 * requireApproval, and tools.exec.ask for exec and process start. Undefined: never.
 */
import type { ToolApproval } from "../contract/index.js";
import type { LurkConfig } from "./config.js";
import { toolEntryMatches } from "./config-tools-approval.js";
import { TOOL_GROUPS, type PolicyTool } from "./tool-policy.js";

export type ExplainedTool = PolicyTool & { needsApproval?: boolean | undefined };

type Reason = ToolApproval["reasons"][number] & { calls: ToolApproval["calls"] };

function execAskReason(config: LurkConfig, tool: ExplainedTool): Reason | undefined {
  const { ask, allowlist } = config.tools.exec;
  if (ask === "off" || (tool.name !== "exec" && tool.name !== "process")) return undefined;
  const startOnly = tool.name === "process";
  const scope = startOnly ? " (its start action)" : "";
  if (ask === "always" || allowlist.length === 0) {
    const rule = ask === "always" ? `tools.exec.ask: "always"${scope}` : `tools.exec.ask: "on-miss" with an empty tools.exec.allowlist${scope}`;
    return { source: "exec-ask", rule, calls: startOnly ? "some" : "all" };
  }
  return { source: "exec-ask", rule: `tools.exec.ask: "on-miss": commands that are not one simple command of tools.exec.allowlist (${allowlist.join(", ")})${scope}`, calls: "some" };
}

export function approvalExplanation(config: LurkConfig, agentId: string, tool: ExplainedTool): ToolApproval | undefined {
  const reasons: Reason[] = [];
  if (tool.needsApproval) reasons.push({ source: "tool", rule: "the tool's own definition (needsApproval)", calls: "all" });
  for (const entry of config.tools.requireApproval) {
    if (toolEntryMatches(entry, tool, TOOL_GROUPS)) reasons.push({ source: "global", rule: `tools.requireApproval: "${entry}"`, calls: "all" });
  }
  const agent = config.agents.find((a) => a.id === agentId);
  for (const entry of agent?.requireApproval ?? []) {
    if (toolEntryMatches(entry, tool, TOOL_GROUPS)) reasons.push({ source: "agent", rule: `agents[${agentId}].requireApproval: "${entry}"`, calls: "all" });
  }
  const exec = execAskReason(config, tool);
  if (exec) reasons.push(exec);
  if (reasons.length === 0) return undefined;
  return {
    calls: reasons.some((r) => r.calls === "all") ? "all" : "some",
    reasons: reasons.map(({ source, rule }) => ({ source, rule })),
  };
}
