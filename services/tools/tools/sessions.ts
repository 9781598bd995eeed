/**
 * The session tools (seeds 001 §3.4 group:sessions, without sessions_spawn which the subagents
 * tool provides): they ask the sessions actor over the bus (`lurk.sessions.list|history|get`)
 * and read the configured agents from the config.
 *   sessions_list     sessions of an agent (default: the caller's), newest first
 *   sessions_history  the last messages of a session (text; tool calls summarized)
 *   sessions_send     a message into another session: a system event on `lurk.inject.<agentId>`
 *                     (source "system") that the router queues there and that wakes a run
 *   session_status    the current session: model, usage, tokens, records
 *   agents_list       the configured agents
 * Output is plain text within the tool output cap.
 */
import { z } from "zod";
import {
  agentIdSchema, LurkError, parseSessionKey, sessionKeySchema, sessionTypeSchema,
  type SessionEntry, type TranscriptRecord,
} from "../../../shared/contract/index.js";
import { readHistory } from "../../../shared/runtime/session-history.js";
import { cutUtf8 } from "../content.js";
import { defineTool, type ToolContext, type ToolResult } from "../tool.js";
import { busOf, queueSystemEvent } from "./bus.js";

const NOTE_RESERVE = 300;
const MESSAGE_CHARS = 2_000;

function text(body: string, ctx: ToolContext): ToolResult {
  const budget = Math.max(256, ctx.limits.outputCapBytes - NOTE_RESERVE);
  const cut = cutUtf8(body, budget);
  return { content: [{ type: "text", text: cut.length < body.length ? `${cut}\n[output cut at the ${ctx.limits.outputCapBytes}-byte cap; ask for fewer]` : body }] };
}

const iso = (ms: number) => new Date(ms).toISOString();

function describeEntry(s: SessionEntry): string {
  const tokens = s.usage.input + s.usage.output;
  return [
    s.sessionKey,
    `type ${s.sessionType}`,
    `updated ${iso(s.updatedAt)}`,
    ...(s.label ? [`label "${s.label}"`] : []),
    ...(s.model ? [`model ${s.model}`] : []),
    `${tokens} tokens`,
    `${s.records} records`,
    ...(s.activeRunId ? ["running"] : []),
  ].join("  ");
}

export const sessionsListTool = defineTool({
  name: "sessions_list",
  description: "List chat sessions (newest first): key, type, last update, label, model, tokens used. Default: this agent's sessions.",
  parameters: z.object({
    agentId: agentIdSchema.optional().describe("Whose sessions (default: this agent's; see agents_list)"),
    sessionType: sessionTypeSchema.optional().describe("Only sessions of this type (main, dm, group, topic, thread, subagent, cron)"),
    limit: z.number().int().min(1).max(200).optional().describe("How many at most (default 20)"),
  }),
  sideEffects: false,
  parallelSafe: true,
  groups: ["group:sessions"],
  runsIn: "process",
  async execute(args, ctx) {
    const { rt, call } = busOf(ctx);
    const agentId = args.agentId ?? call.agentId;
    if (!rt.config.agents.some((a) => a.id === agentId)) throw new LurkError("NOT_FOUND", `no agent "${agentId}" is configured (see agents_list)`);
    const { sessions } = await rt.client.call("sessions", "list", { agentId, ...(args.sessionType ? { sessionType: args.sessionType } : {}), limit: args.limit ?? 20 });
    if (sessions.length === 0) return text(`no sessions of agent ${agentId}${args.sessionType ? ` of type ${args.sessionType}` : ""}`, ctx);
    return text(sessions.map((s) => `${s.sessionKey === call.sessionKey ? "* " : "  "}${describeEntry(s)}`).join("\n"), ctx);
  },
});

function renderRecord(r: TranscriptRecord): string | undefined {
  const when = iso(r.ts);
  if (r.kind === "system_event" || r.kind === "context_note") return r.text ? `[${when}] (${r.kind.replace("_", " ")}) ${r.text.slice(0, MESSAGE_CHARS)}` : undefined;
  if (r.kind === "compaction_summary") return r.text ? `[${when}] (summary of earlier messages) ${r.text.slice(0, MESSAGE_CHARS)}` : undefined;
  if (r.kind !== "message" || !r.message) return undefined;
  const m = r.message;
  if (m.role === "user") return `[${when}] user: ${m.content.map((b) => (b.type === "text" ? b.text : "[image]")).join(" ").slice(0, MESSAGE_CHARS)}`;
  if (m.role === "assistant") {
    const parts = m.content.flatMap((b) => (b.type === "text" ? [b.text] : b.type === "tool_call" ? [`[called ${b.name}]`] : []));
    return parts.length > 0 ? `[${when}] assistant: ${parts.join(" ").slice(0, MESSAGE_CHARS)}` : undefined;
  }
  const body = m.content.map((b) => (b.type === "text" ? b.text : "[image]")).join(" ");
  return `[${when}] ${m.toolName} result${m.isError ? " (error)" : ""}: ${body.slice(0, 300)}${body.length > 300 ? " ..." : ""}`;
}

export const sessionsHistoryTool = defineTool({
  name: "sessions_history",
  description: "Read the last messages of a chat session (user and assistant text; tool calls summarized), oldest first.",
  parameters: z.object({
    sessionKey: sessionKeySchema.describe("The session (see sessions_list)"),
    limit: z.number().int().min(1).max(200).optional().describe("How many transcript records at most (default 20)"),
  }),
  sideEffects: false,
  parallelSafe: true,
  groups: ["group:sessions"],
  runsIn: "process",
  async execute(args, ctx) {
    const { rt } = busOf(ctx);
    const { session, records } = await readHistory(rt.client, { sessionKey: args.sessionKey, limit: args.limit ?? 20 });
    if (!session) throw new LurkError("NOT_FOUND", `no session ${args.sessionKey} (see sessions_list)`);
    const lines = records.map(renderRecord).filter((l): l is string => l !== undefined);
    return text([`${describeEntry(session)}`, ...(lines.length > 0 ? lines : ["(no messages)"])].join("\n"), ctx);
  },
});

export const sessionsSendTool = defineTool({
  name: "sessions_send",
  description: "Send a message into another chat session (of this or another agent): it arrives there as a system message and starts "
    + "a run in that session, whose answer goes to that session's conversation.",
  parameters: z.object({
    sessionKey: sessionKeySchema.describe("The target session (see sessions_list)"),
    message: z.string().min(1).max(100_000).describe("What to tell that session"),
  }),
  sideEffects: true,
  parallelSafe: true,
  groups: ["group:sessions"],
  runsIn: "process",
  async execute(args, ctx) {
    const { rt, call } = busOf(ctx);
    if (args.sessionKey === call.sessionKey) throw new LurkError("TOOL_INVALID_ARGS", "that is this session; answer here instead");
    const target = parseSessionKey(args.sessionKey);
    if (!target) throw new LurkError("TOOL_INVALID_ARGS", `"${args.sessionKey}" is not a session key (see sessions_list)`);
    if (!rt.config.agents.some((a) => a.id === target.agentId)) throw new LurkError("NOT_FOUND", `no agent "${target.agentId}" is configured`);
    const { session } = await rt.client.call("sessions", "get", { sessionKey: args.sessionKey });
    if (!session) throw new LurkError("NOT_FOUND", `no session ${args.sessionKey} (see sessions_list)`);
    const id = `send-${call.toolCallId}`.slice(0, 200);
    const ack = await queueSystemEvent(rt, call, id, {
      agentId: target.agentId, sessionKey: args.sessionKey, source: "system",
      text: `Message from session ${call.sessionKey}:\n${args.message}`, wake: "now", deliverTo: "last",
    }, "the message");
    return text(`${ack.duplicate ? "already sent" : "sent"} to ${args.sessionKey}; it starts a run there (its answer goes to that session's conversation)`, ctx);
  },
});

export const sessionStatusTool = defineTool({
  name: "session_status",
  description: "This chat session's status: model, token usage, number of records, when it started and was last used.",
  parameters: z.object({}),
  sideEffects: false,
  parallelSafe: true,
  groups: ["group:sessions"],
  runsIn: "process",
  async execute(_args, ctx) {
    const { rt, call } = busOf(ctx);
    const { session: s } = await rt.client.call("sessions", "get", { sessionKey: call.sessionKey });
    if (!s) throw new LurkError("NOT_FOUND", `no session entry for ${call.sessionKey} yet`);
    const agent = rt.config.agents.find((a) => a.id === s.agentId);
    const u = s.usage;
    const lines = [
      `session ${s.sessionKey} (${s.sessionType}), agent ${s.agentId}${s.label ? `, label "${s.label}"` : ""}`,
      `model: ${s.model ?? agent?.model ?? rt.config.model ?? "(default)"}${s.provider ? ` (provider ${s.provider})` : ""}${s.thinking ? `, thinking ${s.thinking}` : ""}`,
      `tokens: ${u.input + u.output} (input ${u.input}, output ${u.output}${usageExtras(u)})`,
      `records: ${s.records}; started ${iso(s.createdAt)}; last used ${iso(s.updatedAt)}`,
      ...(s.channel ? [`channel: ${s.channel}${s.lastOrigin ? ` (${s.lastOrigin.conversation})` : ""}`] : []),
      ...(s.parentSessionKey ? [`parent session: ${s.parentSessionKey}`] : []),
      ...(s.activeRunId ? [`active run: ${s.activeRunId}`] : []),
    ];
    return text(lines.join("\n"), ctx);
  },
});

function usageExtras(u: Record<string, unknown>): string {
  return Object.entries(u).filter(([k, v]) => k !== "input" && k !== "output" && typeof v === "number" && v > 0).map(([k, v]) => `, ${k} ${v as number}`).join("");
}

export const agentsListTool = defineTool({
  name: "agents_list",
  description: "List the configured agents: id, name, model, tool profile, and which one is the default.",
  parameters: z.object({}),
  sideEffects: false,
  parallelSafe: true,
  groups: ["group:sessions"],
  runsIn: "process",
  async execute(_args, ctx) {
    const { rt, call } = busOf(ctx);
    const lines = rt.config.agents.map((a) => [
      `${a.id === call.agentId ? "* " : "  "}${a.id}`,
      ...(a.name ? [`"${a.name}"`] : []),
      `model ${a.model ?? rt.config.model ?? "(not set)"}`,
      `profile ${a.toolProfile}`,
      ...(a.default ? ["default"] : []),
    ].join("  "));
    return text(lines.join("\n"), ctx);
  },
});
