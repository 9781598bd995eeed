/**
 * `lurkbot tools [--session KEY] [--agent ID] [--explain] [--json]`: the effective tool list of
 * an agent in a session, as the tools actors decide it (scatter-gather on `lurk.tools.explain`,
 * every tools actor kind answers for the tools it serves). With --explain, every known tool,
 * allowed or denied, with the policy layer and rule that decided, and for a tool whose calls
 * wait for a human approval: all or some of them, and which rules say so (`approval` in --json).
 */
import type { NatsConnection } from "@nats-io/transport-node";
import {
  LurkError, parseSessionKey, requestType, subjects, toolsExplainReply, type ToolApproval, type ToolDecisionReply,
} from "../../shared/contract/index.js";
import { loadConfig, type Env } from "../../shared/runtime/config.js";
import { gatherReplies } from "../../shared/runtime/gather.js";
import { z } from "zod";
import type { ParsedCommand } from "./args.js";
import { connectCli } from "./bus.js";
import { EXIT, UsageError } from "./errors.js";

const GATHER_MS = 1_000;

export type ToolsExplainReply = z.infer<typeof toolsExplainReply>;

export interface ToolsReport {
  agentId: string | null;
  sessionType: string | null;
  profile: string | null;
  model: string | null;
  /** one per tool, sorted by name; the first actor to answer for a name wins */
  tools: (ToolDecisionReply & { actor: string })[];
}

export async function gatherTools(nc: NatsConnection, prefix: string, req: { agentId?: string; sessionKey?: string }): Promise<ToolsReport> {
  const subject = subjects(prefix).op("tools", "explain");
  const message = { id: `cli-tools-${Date.now()}`, ts: Date.now(), ...req, type: requestType("tools", "explain") };
  const { replies, errors } = await gatherReplies(nc, subject, message, toolsExplainReply, { maxWaitMs: GATHER_MS });
  if (replies.length === 0) {
    throw errors.at(-1) ?? new LurkError("UNAVAILABLE", `nothing answered ${subject}: is the tools actor running? (npx lurkbot status)`);
  }
  const byName = new Map<string, ToolDecisionReply & { actor: string }>();
  for (const reply of replies) for (const d of reply.decisions) if (!byName.has(d.tool)) byName.set(d.tool, { ...d, actor: reply.actor });
  const first = replies[0]!;
  return {
    agentId: first.agentId,
    sessionType: first.sessionType,
    profile: first.profile,
    model: first.model ?? null,
    tools: [...byName.values()].sort((a, b) => a.tool.localeCompare(b.tool)),
  };
}

/** A session key the user typed, checked early so a typo is a usage error, not an empty list. */
export function checkSessionKey(key: string): boolean {
  return parseSessionKey(key) !== null;
}

export function formatTools(report: ToolsReport, explain: boolean): string {
  const head = `agent ${report.agentId} · ${report.sessionType} session · profile ${report.profile}${report.model ? ` · model ${report.model}` : ""}`;
  const lines = [head];
  if (!explain) {
    const allowed = report.tools.filter((t) => t.allowed);
    lines.push(allowed.length ? allowed.map((t) => `  ${t.tool}${t.aliases.length ? ` (${t.aliases.join(", ")})` : ""}`).join("\n") : "  (no tools)");
  } else {
    const width = Math.max(4, ...report.tools.map((t) => t.tool.length));
    for (const t of report.tools) {
      lines.push(`  ${t.tool.padEnd(width)}  ${t.allowed ? "allowed" : "DENIED "}  ${t.layer.padEnd(8)}  ${t.rule}`);
      if (t.approval) lines.push(`  ${"".padEnd(width)}  ${formatApproval(t.approval)}`);
    }
    const gated = report.tools.filter((t) => t.approval).length;
    lines.push(gated ? `${gated} tool${gated === 1 ? "" : "s"} need${gated === 1 ? "s" : ""} a human approval (lurkbot approvals list|approve|deny)` : "no tool needs a human approval");
  }
  return lines.join("\n") + "\n";
}

/** e.g. `approval: every call (tools.requireApproval: "write")` */
export function formatApproval(approval: ToolApproval): string {
  return `approval: ${approval.calls === "all" ? "every call" : "some calls"} (${approval.reasons.map((r) => r.rule).join("; ")})`;
}

export async function cmdTools(p: ParsedCommand, env: Env, io: { out: (line: string) => void }): Promise<number> {
  const cfg = loadConfig(env);
  const session = p.options.session as string | undefined;
  const agent = p.options.agent as string | undefined;
  if (session !== undefined && !checkSessionKey(session)) {
    throw new UsageError(`"${session}" is not a session key; write e.g. agent:main:main or agent:main:subagent:child-1 (see \`lurkbot sessions list\`).`, "tools");
  }
  const nc = await connectCli(cfg, env);
  try {
    const report = await gatherTools(nc, cfg.nats.prefix, {
      ...(agent ? { agentId: agent } : session ? { agentId: parseSessionKey(session)!.agentId } : {}),
      ...(session ? { sessionKey: session } : {}),
    });
    const explain = p.options.explain === true;
    if (p.options.json) {
      io.out(JSON.stringify(explain ? report : { ...report, tools: report.tools.filter((t) => t.allowed).map((t) => ({ name: t.tool, actor: t.actor, groups: t.groups, aliases: t.aliases })) }, null, 2));
    } else {
      process.stdout.write(formatTools(report, explain));
    }
    return EXIT.ok;
  } finally {
    await nc.close().catch(() => undefined);
  }
}
