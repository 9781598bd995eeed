/**
 * Which calls of the built-in tools need a human approval, and the gate that holds them
 * (shared/runtime/approval-gate.ts: request, wait, token check and redeem). Needs approval:
 * - a tool whose definition says `needsApproval`;
 * - a tool named by `tools.requireApproval` or the calling agent's `agents[].requireApproval`
 *   (names, aliases, "group:x" with this actor's group table, globs);
 * - exec, and `process` start, by `tools.exec.ask` ("off"; "on-miss": a command that is not one
 *   simple command named in `tools.exec.allowlist`; "always").
 */
import type { ToolCallRequest } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { approvalGateFor } from "../../shared/runtime/approval-gate.js";
import type { LurkConfig } from "../../shared/runtime/config.js";
import { configRequiresApproval } from "../../shared/runtime/config-tools-approval.js";
import { errorResult } from "./content.js";
import { TOOL_GROUPS } from "../../shared/runtime/tool-policy.js";
import type { Tool, ToolResult } from "./tool.js";

/** Characters that make a command more than one simple command (lists, pipes, redirections, substitutions, globs of other commands). */
const SHELL_SYNTAX = /[;&|`$<>(){}\n\r\\!*?[\]~'"#=]/;

export function execCommandAllowlisted(command: string, allowlist: readonly string[]): boolean {
  const trimmed = command.trim();
  if (!trimmed || SHELL_SYNTAX.test(trimmed)) return false;
  const name = trimmed.split(/\s+/)[0]!;
  return allowlist.includes(name);
}

/** Whether this call (by `agentId`, when known) must be approved by a human first. */
export function callNeedsApproval(config: LurkConfig, tool: Tool, args: Record<string, unknown>, agentId?: string): boolean {
  if (tool.needsApproval) return true;
  if (configRequiresApproval(config, agentId, tool, TOOL_GROUPS)) return true;
  // a background job (`process` start) runs a command like exec does, under the same rule
  const runsCommand = tool.name === "exec" || (tool.name === "process" && args.action === "start");
  if (!runsCommand) return false;
  const ask = config.tools.exec.ask;
  if (ask === "always") return true;
  if (ask === "off") return false;
  return !execCommandAllowlisted(typeof args.command === "string" ? args.command : "", config.tools.exec.allowlist);
}

/**
 * A built-in tool call at the gate: null when it may run (no approval needed, or approved),
 * otherwise the result to answer with (denied, expired, a bad token, or cancelled by `signal`).
 */
export async function gateToolCall(rt: ActorRuntime, tool: Tool, req: ToolCallRequest, signal: AbortSignal): Promise<ToolResult | null> {
  if (!callNeedsApproval(rt.config, tool, req.args, req.agentId)) return null;
  const denial = await approvalGateFor(rt).check(tool.name, req, signal);
  return denial ? errorResult(denial.code, denial.text) : null;
}
