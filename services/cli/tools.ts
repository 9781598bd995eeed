/**
 * `lurkbot tools [--session KEY] [--agent ID] [--explain] [--json]`: the effective tool list of
 * an agent in a session, as the actors serving tools decide it (scatter-gather on
 * `lurk.tools.explain`: the tools actor for the built-in tools, every actor serving tools through
 * serveTools, e.g. the browser, for its own), merged: each tool once, with the actor serving it.
 * With --explain, every known tool, allowed or denied, with the policy layer and rule that
 * decided ("actor": the serving actor's own policy, or none), and for a tool whose calls wait for
 * a human approval: all or some of them, and which rules say so (`approval` in --json).
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
/** the built-in tools actor: its reply gives the header and wins a name several actors serve */
const BUILTIN_ACTOR = "tools";

export type ToolsExplainReply = z.infer<typeof toolsExplainReply>;

export type ReportedTool = ToolDecisionReply & {
  /** the actor that serves it (NATS user) */
  actor: string;
  /** other actors that serve a tool of the same name too (each call of it then runs in every one) */
  alsoServedBy?: string[];
};

export interface ToolsReport {
  agentId: string | null;
  sessionType: string | null;
  profile: string | null;
  model: string | null;
  /** the actors that answered, the tools actor first */
  actors: string[];
  /** one per tool name, sorted by name; the tools actor's, else the first actor's by name */
  tools: ReportedTool[];
  /** error replies and unreadable replies of actors while others answered */
  errors?: string[];
}

/** Replies in the order their decisions count: the built-in tools actor first, then by actor name. */
function byPrecedence(replies: readonly ToolsExplainReply[]): ToolsExplainReply[] {
  return [...replies].sort((a, b) => Number(b.actor === BUILTIN_ACTOR) - Number(a.actor === BUILTIN_ACTOR) || (a.actor < b.actor ? -1 : a.actor > b.actor ? 1 : 0));
}

/** Every tool once, with the actor that serves it (merged from each actor's explain reply). */
export function mergeExplained(replies: readonly ToolsExplainReply[]): Omit<ToolsReport, "errors"> {
  const ordered = byPrecedence(replies);
  const byName = new Map<string, ReportedTool>();
  for (const reply of ordered) {
    for (const d of reply.decisions) {
      const known = byName.get(d.tool);
      if (!known) byName.set(d.tool, { ...d, actor: reply.actor });
      else if (known.actor !== reply.actor) known.alsoServedBy = [...(known.alsoServedBy ?? []), reply.actor];
    }
  }
  const first = ordered[0];
  return {
    agentId: first?.agentId ?? null,
    sessionType: first?.sessionType ?? null,
    profile: first?.profile ?? null,
    model: first?.model ?? null,
    actors: [...new Set(ordered.map((r) => r.actor))],
    tools: [...byName.values()].sort((a, b) => (a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0)),
  };
}

export async function gatherTools(nc: NatsConnection, prefix: string, req: { agentId?: string; sessionKey?: string }, agentIds: readonly string[] = []): Promise<ToolsReport> {
  const subject = subjects(prefix).op("tools", "explain");
  const message = { id: `cli-tools-${Date.now()}`, ts: Date.now(), ...req, type: requestType("tools", "explain") };
  const { replies, errors, malformed } = await gatherReplies(nc, subject, message, toolsExplainReply, { maxWaitMs: GATHER_MS });
  if (replies.length === 0) {
    const last = errors.at(-1);
    if (last?.code === "NOT_FOUND" && req.agentId !== undefined && agentIds.length) {
      throw new LurkError("NOT_FOUND", `${last.message}; the agents in config.json are ${agentIds.join(", ")} (--agent ID)`);
    }
    throw last ?? new LurkError("UNAVAILABLE", `nothing answered ${subject}${malformed ? ` readably (${malformed} replies of another LurkBot version?)` : ""}: is the tools actor running? (npx lurkbot status)`);
  }
  const problems = [
    ...errors.map((e) => `an actor answered with an error: ${e.message}`),
    ...(malformed ? [`${malformed} ${malformed === 1 ? "reply" : "replies"} could not be read (an actor of another LurkBot version? npx lurkbot status shows the versions)`] : []),
  ];
  return { ...mergeExplained(replies), ...(problems.length ? { errors: problems } : {}) };
}

/** A session key the user typed, checked early so a typo is a usage error, not an empty list. */
export function checkSessionKey(key: string): boolean {
  return parseSessionKey(key) !== null;
}

export function formatTools(report: ToolsReport, explain: boolean): string {
  const head = `agent ${report.agentId} · ${report.sessionType} session · profile ${report.profile}${report.model ? ` · model ${report.model}` : ""}`;
  const lines = [head];
  const shown = explain ? report.tools : report.tools.filter((t) => t.allowed);
  const names = shown.map((t) => `${t.tool}${!explain && t.aliases.length ? ` (${t.aliases.join(", ")})` : ""}`);
  const width = Math.max(4, ...names.map((n) => n.length));
  const actorWidth = Math.max(5, ...shown.map((t) => t.actor.length));
  if (!explain) {
    lines.push(shown.length ? shown.map((t, i) => `  ${names[i]!.padEnd(width)}  ${t.actor}`).join("\n") : "  (no tools)");
  } else {
    for (const t of shown) {
      lines.push(`  ${t.tool.padEnd(width)}  ${t.actor.padEnd(actorWidth)}  ${t.allowed ? "allowed" : "DENIED "}  ${t.layer.padEnd(8)}  ${t.rule}`);
      if (t.approval) lines.push(`  ${"".padEnd(width)}  ${"".padEnd(actorWidth)}  ${formatApproval(t.approval)}`);
    }
    const gated = report.tools.filter((t) => t.approval).length;
    lines.push(gated ? `${gated} tool${gated === 1 ? "" : "s"} need${gated === 1 ? "s" : ""} a human approval (lurkbot approvals list|approve|deny)` : "no tool needs a human approval");
  }
  const counts = report.actors.map((a) => `${a} (${shown.filter((t) => t.actor === a).length})`);
  lines.push(`${explain ? "tools" : "allowed tools"} by actor: ${counts.join(", ")}`);
  for (const t of report.tools.filter((x) => x.alsoServedBy)) {
    lines.push(`note: ${t.tool} is served by ${[t.actor, ...t.alsoServedBy!].join(" and ")}: each call of it runs in every one of them; stop or rename the extra one`);
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
    }, cfg.agents.map((a) => a.id));
    const explain = p.options.explain === true;
    if (p.options.json) {
      const allowed = report.tools.filter((t) => t.allowed).map((t) => ({ name: t.tool, actor: t.actor, groups: t.groups, aliases: t.aliases, ...(t.alsoServedBy ? { alsoServedBy: t.alsoServedBy } : {}) }));
      io.out(JSON.stringify(explain ? report : { ...report, tools: allowed }, null, 2));
    } else {
      process.stdout.write(formatTools(report, explain));
      // the list is complete for the actors that answered; say which did not
      for (const problem of report.errors ?? []) process.stderr.write(`note: ${problem}; its tools are not listed\n`);
    }
    return EXIT.ok;
  } finally {
    await nc.close().catch(() => undefined);
  }
}
