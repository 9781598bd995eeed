/**
 * What the chat commands do (commands.ts parses them). Each returns the notice text; the
 * router publishes it. Owner-only: /approve, /deny, /pair, /usage and /sessions, and in groups every command that
 * changes state. Sessions are changed through the sessions actor (reset, patch), runs through
 * `run.ctl` (abort), approvals through approvals.decide, children through the subagents actor.
 */
import { addDays, LurkError, usageTokens, utcDay, type InboundMessage, type UsageSums } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { defaultAgent } from "../../shared/runtime/config.js";
import { isOwner } from "../../shared/runtime/access-policy.js";
import { formatUsd } from "../../shared/runtime/format-usd.js";
import { COMMAND_HELP } from "../../shared/contract/index.js";
import type { Command, Directives } from "./commands.js";
import type { Lanes } from "./lanes.js";
import type { SessionQueues, WorkOutcome } from "./queue.js";
import { authStatusLines } from "./auth-status.js";
import { ensureSession, queueConsolidation } from "./ended-sessions.js";
import type { PairingStore } from "./pairing.js";
import { decidePairing } from "./pairing-owners.js";
import type { Route } from "./resolve.js";
import { queueSettingsFor, type SessionSettings, type SettingsCache, type SettingsPatch } from "./settings.js";

export interface CommandContext {
  rt: ActorRuntime;
  /** DM pairing (/pair) */
  pairing: PairingStore;
  lanes: Lanes;
  queues: SessionQueues;
  settings: SettingsCache;
  /** drops the session's debounced messages; returns how many */
  cancelDebounced(sessionKey: string): number;
  /** queues a compaction run for the session */
  submitCompact(route: Route, instructions: string): Promise<WorkOutcome>;
}

export interface CommandResult {
  text: string;
  kind?: "notice" | "error";
  /** /new TEXT: the text to run in the fresh session */
  continueWith?: string;
  /** work the command queued (the message is acked once it settles) */
  ticket?: Promise<unknown>;
  /** /new, /reset: the transcripts (for `lurk.evt.router.command`) */
  sessions?: { previousSessionId: string; sessionId: string };
}

const STATE_CHANGING = new Set<Command["name"]>(["new", "reset", "stop", "compact", "settings", "subagents"]);

export async function executeCommand(ctx: CommandContext, command: Command, msg: InboundMessage, route: Route): Promise<CommandResult> {
  const owner = isOwner(msg, ctx.rt.config);
  if (command.name === "pair" && !owner) {
    return { kind: "error", text: `/pair is for the owner only. Ask the owner to add "${msg.channel}:${msg.sender.id}" to routing.commands.owners, or use \`npx lurkbot pairing\`.` };
  }
  if (command.name === "sessions" && !owner) {
    return { kind: "error", text: `/sessions lists this agent's conversations: it is for the owner only (routing.commands.owners), or run \`npx lurkbot sessions list\`.` };
  }
  if (command.name === "usage" && !owner) {
    return { kind: "error", text: `/usage shows what the assistant spent: it is for the owner only (routing.commands.owners), or run \`npx lurkbot usage\`.` };
  }
  if ((command.name === "approve" || command.name === "deny") && !owner) {
    return { kind: "error", text: `/${command.name} is for the owner only. Ask the owner to add "${msg.channel}:${msg.sender.id}" to routing.commands.owners, or decide with \`npx lurkbot approvals ${command.name} ${command.id}\`.` };
  }
  if (msg.peer.kind !== "dm" && !owner && STATE_CHANGING.has(command.name) && !(command.name === "settings" && command.directives && Object.keys(command.directives).length === 0)) {
    return { kind: "error", text: `/${command.name === "settings" ? command.show[0] : command.name} changes this group's session: only owners (routing.commands.owners) may use it here.` };
  }
  switch (command.name) {
    case "help":
      return { text: ["Commands:", ...COMMAND_HELP.map(([c, d]) => `  ${c} — ${d}`)].join("\n") };
    case "status":
      return { text: await statusText(ctx, route, msg.channel) };
    case "stop": {
      const debounced = ctx.cancelDebounced(route.sessionKey);
      const { activeRunId, dropped } = ctx.queues.stop(route.sessionKey, `/stop by ${msg.sender.id}`);
      const parts = [activeRunId ? `Stopped the active run (${activeRunId}).` : "No run was active."];
      if (dropped + debounced > 0) parts.push(`Dropped ${dropped + debounced} queued message${dropped + debounced === 1 ? "" : "s"}.`);
      return { text: parts.join(" ") };
    }
    case "new":
    case "reset": {
      ctx.cancelDebounced(route.sessionKey);
      const { activeRunId } = ctx.queues.stop(route.sessionKey, `/${command.name}`);
      await ensureSession(ctx.rt, route);
      const { previousSessionId, session } = await ctx.rt.client.call("sessions", "reset", { sessionKey: route.sessionKey, reason: command.name });
      const text = `Fresh session started (${route.sessionKey}; the previous transcript ${previousSessionId} is kept on disk).${activeRunId ? ` The active run ${activeRunId} was stopped.` : ""}`;
      ctx.rt.log.info({ sessionKey: route.sessionKey, sessionId: session.sessionId, previousSessionId }, "session reset by chat command");
      // the ended transcript into MEMORY.md/HISTORY.md (the agent-runner skips shared sessions)
      await queueConsolidation(ctx.rt, route, previousSessionId);
      return { text, sessions: { previousSessionId, sessionId: session.sessionId }, ...(command.rest ? { continueWith: command.rest } : {}) };
    }
    case "compact": {
      const ticket = ctx.submitCompact(route, command.instructions);
      return { text: `Compaction of ${route.sessionKey} queued${ctx.lanes.busy(route.sessionKey) ? " (after the active run)" : ""}.`, ticket };
    }
    case "approve":
    case "deny":
      try {
        const { approval } = await ctx.rt.client.call("approvals", "decide", { approvalId: command.id, decision: command.name, decidedBy: `${msg.channel}:${msg.sender.id}` });
        return { text: `${approval.approvalId}: ${approval.status} (${approval.tool}${approval.command ? `: ${approval.command.slice(0, 80)}` : ""}).` };
      } catch (err) {
        const e = LurkError.from(err);
        return { kind: "error", text: `Could not ${command.name} ${command.id}: ${e.message}` };
      }
    case "subagents":
      return subagents(ctx, command, route);
    case "pair":
      return pairCommand(ctx, command, msg);
    case "usage":
      return usageCommand(ctx, command.days, route);
    case "sessions":
      return sessionsCommand(ctx, route);
    case "settings":
      return settingsCommand(ctx, command.directives, command.show, route, msg.channel);
  }
}

/** how many sessions /sessions lists */
export const SESSIONS_LISTED = 20;

/** "5 min ago", "3 h ago", "2 d ago" */
function ago(ms: number, now: number): string {
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

/** /sessions: the agent's most recent sessions from the sessions actor, newest first; this one marked "*". */
async function sessionsCommand(ctx: CommandContext, route: Route): Promise<CommandResult> {
  try {
    const { sessions } = await ctx.rt.client.call("sessions", "list", { agentId: route.agentId, limit: SESSIONS_LISTED });
    if (sessions.length === 0) return { text: `Agent ${route.agentId} has no sessions yet.` };
    const now = Date.now();
    const lines = [`Recent sessions of agent ${route.agentId} (newest first${sessions.length === SESSIONS_LISTED ? `, the ${SESSIONS_LISTED} latest` : ""}; * this one):`];
    for (const s of sessions) {
      const when = `${new Date(s.updatedAt).toISOString().slice(0, 16).replace("T", " ")} UTC (${ago(s.updatedAt, now)})`;
      lines.push(`${s.sessionKey === route.sessionKey ? "*" : " "} ${s.sessionKey} — ${when}, ${s.records} record${s.records === 1 ? "" : "s"}${s.label ? `, "${s.label}"` : ""}`);
    }
    if (!sessions.some((s) => s.sessionKey === route.sessionKey)) lines.push(`(this session, ${route.sessionKey}, is not among them)`);
    return { text: lines.join("\n") };
  } catch (err) {
    return { kind: "error", text: `Could not list the sessions: ${LurkError.from(err).message}` };
  }
}

/** 42.5 s, 3 min 7 s: seconds of audio in a chat line. */
function formatAudioSeconds(seconds: number): string {
  if (seconds < 60) return `${Math.round(seconds * 10) / 10} s`;
  const whole = Math.round(seconds);
  return `${Math.floor(whole / 60)} min ${whole % 60} s`;
}

/** /usage [days]: the agent's tokens, speech characters, audio seconds and USD from the sessions actor's usage ledger, by model. */
async function usageCommand(ctx: CommandContext, days: number, route: Route): Promise<CommandResult> {
  const today = utcDay(Date.now());
  try {
    const report = await ctx.rt.client.call("sessions", "usage_report", { from: addDays(today, -(days - 1)), to: today, groupBy: ["model"], agentId: route.agentId });
    // a model used only for housekeeping (embeddings, a compaction model) has tokens but no runs;
    // a speech model characters, a transcription model seconds of audio (not tokens)
    const line = (s: UsageSums) => {
      const amounts = [
        ...(usageTokens(s) > 0 || (s.chars === 0 && s.audioSeconds === 0 && s.unknownDurations === 0) ? [`${usageTokens(s)} tokens`] : []),
        ...(s.chars > 0 ? [`${s.chars} characters of speech`] : []),
        ...(s.audioSeconds > 0 || s.unknownDurations > 0 ? [`${formatAudioSeconds(s.audioSeconds)} of audio transcribed${s.unknownDurations > 0 ? ` (+${s.unknownDurations} of unknown duration)` : ""}`] : []),
      ];
      return `${formatUsd(s.costUsd)}, ${amounts.join(", ")}${s.runs > 0 ? ` in ${s.runs} run${s.runs === 1 ? "" : "s"}` : ""}`;
    };
    const span = days === 1 ? `today (${report.to}, UTC)` : `${report.from} to ${report.to} (UTC)`;
    if (report.rows.length === 0) return { text: `Usage of agent ${route.agentId}, ${span}: none recorded.` };
    const lines = [`Usage of agent ${route.agentId}, ${span}: ${line(report.totals)}.`];
    for (const row of [...report.rows].sort((a, b) => b.costUsd - a.costUsd || usageTokens(b) - usageTokens(a))) lines.push(`  ${row.model ?? "?"}: ${line(row)}`);
    if (report.totals.unpricedTokens > 0) lines.push(`${report.totals.unpricedTokens} tokens were of models without a known price (not in the cost; set models.entries.<model>.cost).`);
    const t = report.totals;
    if (t.unpricedChars > 0 || t.unpricedAudioSeconds > 0) {
      lines.push(`${[t.unpricedChars > 0 ? `${t.unpricedChars} characters of speech` : "", t.unpricedAudioSeconds > 0 ? `${formatAudioSeconds(t.unpricedAudioSeconds)} of audio` : ""].filter(Boolean).join(" and ")} had no known price (not in the cost; set models.entries.<model>.cost.perMChars / perAudioMinute).`);
    }
    return { text: lines.join("\n") };
  } catch (err) {
    return { kind: "error", text: `Could not read the usage: ${LurkError.from(err).message}` };
  }
}

async function pairCommand(ctx: CommandContext, command: Extract<Command, { name: "pair" }>, msg: InboundMessage): Promise<CommandResult> {
  if (command.action === "list") {
    const { pending } = await ctx.pairing.list();
    if (pending.length === 0) return { text: "No pending pairing requests." };
    return { text: ["Pending pairing requests:", ...pending.map((p) => `  ${p.code} — ${p.senderName ? `${p.senderName} ` : ""}(${p.channel}:${p.senderId}), until ${new Date(p.expiresAt).toISOString().slice(11, 16)} UTC`)].join("\n") };
  }
  try {
    const decided = await decidePairing(ctx.rt, ctx.pairing, command.action, command.code!, `${msg.channel}:${msg.sender.id}`);
    return { text: `${decided.code}: ${command.action === "approve" ? "approved" : "denied"} ${decided.channel}:${decided.senderId}${decided.senderName ? ` (${decided.senderName})` : ""}.` };
  } catch (err) {
    return { kind: "error", text: `Could not ${command.action} ${command.code}: ${LurkError.from(err).message}` };
  }
}

async function subagents(ctx: CommandContext, command: Extract<Command, { name: "subagents" }>, route: Route): Promise<CommandResult> {
  try {
    const { children } = await ctx.rt.client.call("subagents", "list", { requesterSessionKey: route.sessionKey }, { timeoutMs: 3000 });
    if (command.action === "list") {
      if (children.length === 0) return { text: "No subagents for this session." };
      return { text: ["Subagents:", ...children.map((c) => `  ${c.label ?? c.childSessionKey} — ${c.status}${c.outcome ? ` (${c.outcome})` : ""}, run ${c.runId}: ${c.task.slice(0, 60)}`)].join("\n") };
    }
    const target = command.target!;
    const chosen = target === "all" ? children.filter((c) => c.status === "running") : children.filter((c) => c.childSessionKey === target || c.runId === target || c.label === target);
    if (chosen.length === 0) return { kind: "error", text: target === "all" ? "No running subagents to stop." : `No subagent "${target}" in this session (see /subagents list).` };
    let stopped = 0;
    for (const c of chosen) stopped += (await ctx.rt.client.call("subagents", "stop", { childSessionKey: c.childSessionKey }, { timeoutMs: 3000 })).stopped;
    return { text: `Stopped ${stopped} subagent${stopped === 1 ? "" : "s"}.` };
  } catch (err) {
    const e = LurkError.from(err);
    if (e.code === "UNAVAILABLE" || e.code === "TIMEOUT" || e.code === "FORBIDDEN") {
      return { kind: "error", text: "Subagents are not available: no subagents actor answers on the bus (check `npx lurkbot status`)." };
    }
    return { kind: "error", text: `/subagents failed: ${e.message}` };
  }
}

async function settingsCommand(ctx: CommandContext, d: Directives, show: Array<keyof Directives>, route: Route, channel: string): Promise<CommandResult> {
  const patch: SettingsPatch = {};
  if (d.thinking) patch.thinking = d.thinking;
  if (d.verbose) patch.verbose = d.verbose;
  if (d.reasoning) patch.reasoning = d.reasoning;
  if (d.tts) patch.tts = d.tts;
  if (d.model !== undefined) patch.modelOverride = d.model;
  if (d.queue) {
    if (d.queue.reset) patch.queue = null;
    else {
      const current = (await ctx.settings.get(route.sessionKey)).queue ?? {};
      const { reset: _r, ...rest } = d.queue;
      patch.queue = { ...current, ...rest };
    }
  }
  if (Object.keys(patch).length > 0) await ctx.settings.patch(route, patch);
  const settings = await ctx.settings.get(route.sessionKey);
  const lines = show.map((key) => describe(ctx, key, settings, route, channel));
  return { text: `${Object.keys(patch).length > 0 ? "Session settings updated" : "Session settings"} (${route.sessionKey}):\n${lines.join("\n")}` };
}

function describe(ctx: CommandContext, key: keyof Directives, s: SessionSettings, route: Route, channel: string): string {
  const config = ctx.rt.config;
  switch (key) {
    case "model": {
      const agent = config.agents.find((a) => a.id === route.agentId) ?? defaultAgent(config);
      return `  model: ${s.modelOverride ?? `${agent.model ?? config.model ?? "(none configured)"} (default)`}`;
    }
    case "thinking": return `  thinking: ${s.thinking ?? "default"}`;
    case "verbose": return `  verbose: ${s.verbose ?? "off"}`;
    case "reasoning": return `  reasoning: ${s.reasoning ?? "off"}`;
    case "tts": return `  tts: ${s.tts ?? `${config.tts.auto} (default)`}`;
    case "queue": {
      const q = queueSettingsFor(config.routing, s, undefined, channel);
      return `  queue: ${q.mode} (debounce ${q.debounceMs} ms, cap ${q.cap}, drop ${q.drop})${s.queue ? "" : " (default)"}`;
    }
  }
}

async function statusText(ctx: CommandContext, route: Route, channel: string): Promise<string> {
  const { session } = await ctx.rt.client.call("sessions", "get", { sessionKey: route.sessionKey });
  const settings = await ctx.settings.get(route.sessionKey);
  const lane = ctx.lanes.snapshot(route.sessionKey)[0];
  const lines = [
    `Session ${route.sessionKey} (${route.sessionType}), agent ${route.agentId}`,
    ...(["model", "thinking", "verbose", "reasoning", "tts", "queue"] as const).map((k) => describe(ctx, k, settings, route, channel)),
    lane?.activeRunId
      ? `  run: ${lane.activeRunId} active for ${Math.round((Date.now() - (lane.activeSince ?? Date.now())) / 1000)} s, ${lane.queued} waiting`
      : "  run: idle",
    session
      ? `  transcript: ${session.records} records, ${session.usage.total} tokens (in ${session.usage.input}, out ${session.usage.output})${session.model ? `, last model ${session.model}` : ""}`
      : "  transcript: none yet",
    // providers whose auth profiles are cooling down or disabled (auth-status.ts)
    ...(await authStatusLines(ctx.rt)).map((l) => `  ${l}`),
  ];
  return lines.join("\n");
}
