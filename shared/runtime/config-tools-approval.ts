/**
 * Tools marked as needing a human approval by configuration (issue: "any tool can be marked"):
 * `tools.requireApproval` (every agent) and `agents[].requireApproval` (that agent's calls).
 * Entries are tool names (aliases count), groups ("group:fs"), "*" or globs ("my_*"); they apply
 * to the built-in tools (the tools actor's gate) and to tools of other actors
 * (shared/runtime/tool-serve.ts). A tool whose own definition says `needsApproval` needs one
 * whatever the config says; exec and process start also follow tools.exec.ask.
 */
import { z } from "zod";

export const requireApprovalSchema = z.array(z.string().min(1).max(200)).max(500).default([]);

/** What the approval rules need to know about a tool. */
export interface ApprovalRuleTool {
  name: string;
  aliases?: readonly string[];
  /** "fs" and "group:fs" are the same group */
  groups?: readonly string[];
}

interface ApprovalRuleConfig {
  tools: { requireApproval: readonly string[] };
  agents: readonly { id: string; requireApproval?: readonly string[] | undefined }[];
}

/** The configured entries for calls of one agent: the global ones and the agent's own. */
function requireApprovalEntries(config: ApprovalRuleConfig, agentId: string | undefined): string[] {
  const agent = agentId === undefined ? undefined : config.agents.find((a) => a.id === agentId);
  return [...config.tools.requireApproval, ...(agent?.requireApproval ?? [])];
}

/** `*` matches any run of characters; everything else is literal. */
export function glob(pattern: string, value: string): boolean {
  if (!pattern.includes("*")) return pattern === value;
  const re = new RegExp(`^${pattern.split("*").map((s) => s.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`);
  return re.test(value);
}

/**
 * Whether an entry names this tool: its name or an alias (exact or glob), or one of the groups
 * its definition declares. `groupMembers` adds the members of built-in groups (the tools actor
 * passes its policy table, so "group:runtime" also names "bash"). The tool policy's allow and
 * deny entries (shared/runtime/tool-policy.ts) match the same way.
 */
export function toolEntryMatches(entry: string, tool: ApprovalRuleTool, groupMembers: Readonly<Record<string, readonly string[]>> = {}): boolean {
  const names = [tool.name, ...(tool.aliases ?? [])];
  if (entry.startsWith("group:")) {
    if ((tool.groups ?? []).some((g) => (g.startsWith("group:") ? g : `group:${g}`) === entry)) return true;
    return names.some((n) => (groupMembers[entry] ?? []).includes(n));
  }
  return names.some((n) => glob(entry, n));
}

/** Whether configuration marks this tool as needing approval for this agent's calls. */
export function configRequiresApproval(config: ApprovalRuleConfig, agentId: string | undefined, tool: ApprovalRuleTool, groupMembers?: Readonly<Record<string, readonly string[]>>): boolean {
  return requireApprovalEntries(config, agentId).some((entry) => toolEntryMatches(entry, tool, groupMembers));
}
