/**
 * The tool catalog and tool execution over the bus.
 * Catalog: scatter-gather on `lurk.tools.list` (every tools actor kind answers with its own
 * tools; replies within ~250 ms are merged, each validated; cached for a few seconds).
 * Calls: `lurk.tools.call.<tool>` with the contract's request/reply; bus failures and error
 * replies come back as error tool results, so the model sees them and the run goes on.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import {
  LurkError, parseSessionKey, safeParseJson, toolCallReply, toolsListReply, type Origin, type Subjects, type ToolDefinition, type ToolResultMessage,
} from "../../shared/contract/index.js";
import type { BusClient } from "../../shared/runtime/client.js";
import type { Logger } from "../../shared/runtime/logger.js";

const GATHER_MS = 250;
/** how long a gathered catalog is reused: a tools actor that joins is in the catalog of runs that start this much later */
export const CACHE_MS = 5_000;
const EMPTY_CACHE_MS = 1_000;

export interface ToolCallContext {
  runId: string;
  sessionKey: string;
  agentId: string;
  sessionType: string;
  /** "provider/model" of the run, for the tool policy's provider and model layers */
  model?: string;
  /** where the run's trigger came from (the `message` tool answers there) */
  origin?: Origin;
}

export class ToolsClient {
  private readonly cache = new Map<string, { at: number; tools: ToolDefinition[] }>();
  private readonly pending = new Map<string, Promise<ToolDefinition[]>>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly client: BusClient,
    private readonly subjects: Subjects,
    private readonly log: Logger,
    private readonly callTimeoutMs: number,
  ) {}

  /**
   * The merged catalog for an agent in a session (cached per agent, session type and model,
   * since the tool policy depends on them; concurrent callers share one gather).
   */
  async list(agentId: string, sessionKey?: string, model?: string): Promise<ToolDefinition[]> {
    const sessionType = sessionKey ? parseSessionKey(sessionKey)?.type ?? sessionKey : "";
    const key = `${agentId}\u0000${sessionType}\u0000${model ?? ""}`;
    const cached = this.cache.get(key);
    if (cached && Date.now() - cached.at < (cached.tools.length > 0 ? CACHE_MS : EMPTY_CACHE_MS)) return cached.tools;
    let pending = this.pending.get(key);
    if (!pending) {
      pending = this.gather(agentId, sessionKey, model).then((tools) => {
        this.cache.set(key, { at: Date.now(), tools });
        return tools;
      }).finally(() => this.pending.delete(key));
      this.pending.set(key, pending);
    }
    return pending;
  }

  private async gather(agentId: string, sessionKey?: string, model?: string): Promise<ToolDefinition[]> {
    const request = {
      type: "lurk.tools.list.v1", id: `tools-list-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`, ts: Date.now(), agentId,
      ...(sessionKey ? { sessionKey } : {}), ...(model ? { model } : {}),
    };
    const byName = new Map<string, ToolDefinition>();
    try {
      const replies = await this.nc.requestMany(this.subjects.op("tools", "list"), JSON.stringify(request), { strategy: "timer", maxWait: GATHER_MS });
      for await (const msg of replies) {
        const parsed = toolsListReply.safeParse(msg.data.length > 0 ? safeParseJson(msg.data) : undefined);
        if (!parsed.success) {
          this.log.warn({ subject: msg.subject }, "ignoring a tools.list reply that does not match the contract");
          continue;
        }
        for (const tool of parsed.data.tools) {
          const existing = byName.get(tool.name);
          if (existing && existing.actor !== tool.actor) this.log.warn({ tool: tool.name, kept: existing.actor, dropped: tool.actor }, "two actors serve the same tool");
          if (!existing) byName.set(tool.name, tool);
        }
      }
    } catch (err) {
      this.log.warn({ err }, "tool catalog unavailable; running without tools");
    }
    return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Executes one call; never throws (failures are error results). */
  async call(ctx: ToolCallContext, toolCallId: string, name: string, args: Record<string, unknown>): Promise<ToolResultMessage> {
    const result = (text: string, isError: boolean): ToolResultMessage => ({ role: "tool_result", toolCallId, toolName: name, content: [{ type: "text", text }], isError });
    try {
      const reply = await this.client.callSubject(this.subjects.toolCall(name), "lurk.tools.call.v1", {
        toolCallId, runId: ctx.runId, sessionKey: ctx.sessionKey, agentId: ctx.agentId, sessionType: ctx.sessionType, tool: name, args,
        ...(ctx.model ? { model: ctx.model } : {}),
        ...(ctx.origin ? { origin: ctx.origin } : {}),
      }, toolCallReply, { timeoutMs: this.callTimeoutMs, runId: ctx.runId }, "tools");
      const content = reply.content.length > 0 ? reply.content : [{ type: "text" as const, text: reply.isError ? "Error: the tool failed without output" : "(no output)" }];
      // a truncated reply already says so in its text (the tools actor writes the paging note)
      return { role: "tool_result", toolCallId, toolName: name, content, isError: reply.isError };
    } catch (err) {
      const e = LurkError.from(err);
      if (e.code === "UNAVAILABLE") return result(`Error: the tool ${name} is unavailable right now (${e.message}).`, true);
      if (e.code === "TIMEOUT") return result(`Error: the tool ${name} did not answer within ${this.callTimeoutMs} ms.`, true);
      return result(`Error (${e.code}): ${e.message}`, true);
    }
  }
}
