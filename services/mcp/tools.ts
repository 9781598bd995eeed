/**
 * The served tools of every connected MCP server, as serveToolSet takes them: one ServedTool per
 * MCP tool, whose handler calls the server (server.ts) with the call's timeout (the shorter of
 * the run's and the server's) and signal, and maps the result (results.ts). Failures the model
 * should see are error results (isError, errorCode); nothing here throws to the bus except a
 * cancellation, which serveToolSet answers ABORTED.
 */
import { LurkError, type ToolCallReply, type ToolCallRequest } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import type { ServedTool, ServedToolContext } from "../../shared/runtime/tool-serve.js";
import type { McpToolEntry } from "./definitions.js";
import { mapResult } from "./results.js";
import type { McpServerConnection } from "./server.js";

/** bytes kept free in a reply for the envelope and JSON escaping (as the tools actor) */
const REPLY_OVERHEAD = 8 * 1024;

export function mcpTools(rt: ActorRuntime, servers: readonly McpServerConnection[]): ServedTool[] {
  const room = rt.config.bus.maxPayloadBytes - REPLY_OVERHEAD;
  const limits = { textCapBytes: Math.min(rt.config.tools.outputCapBytes, room), imageCapBase64: room };
  const handler = (server: McpServerConnection, entry: McpToolEntry) => async (req: ToolCallRequest, ctx: ServedToolContext): Promise<ToolCallReply> => {
    const started = Date.now();
    const timeoutMs = Math.min(req.timeoutMs ?? Number.POSITIVE_INFINITY, server.timeoutMs);
    const log = { server: server.name, tool: entry.serverName, runId: req.runId, sessionKey: req.sessionKey };
    try {
      const result = await server.call(entry.serverName, req.args, timeoutMs, ctx.signal);
      // text capped at outputCapBytes, images at the payload room; fit() drops images until both fit
      const mapped = mapResult(result, limits);
      rt.log.info({ ...log, isError: mapped.isError, durationMs: Date.now() - started }, "MCP tool call done");
      return { toolCallId: req.toolCallId, content: fit(mapped.content, room), isError: mapped.isError, ...(mapped.isError ? { errorCode: "TOOL_FAILED" as const } : {}), durationMs: Date.now() - started };
    } catch (thrown) {
      if (ctx.signal.aborted) throw thrown;
      const err = LurkError.from(thrown);
      rt.log.info({ ...log, code: err.code, err: err.message }, "MCP tool call failed");
      return { toolCallId: req.toolCallId, content: [{ type: "text", text: err.message }], isError: true, errorCode: err.code, durationMs: Date.now() - started };
    }
  };
  // two servers may map to one name (server "a_b" tool "c", server "a" tool "b_c", or a toolPrefix): the first server keeps it
  const owner = new Map<string, string>();
  return servers.flatMap((server) => server.served().flatMap((entry): ServedTool[] => {
    const taken = owner.get(entry.name);
    if (taken !== undefined) {
      rt.log.warn({ server: server.name, tool: entry.serverName.slice(0, 200), name: entry.name, servedBy: taken }, "MCP tool skipped: its name is taken by another server's tool (set a toolPrefix)");
      return [];
    }
    owner.set(entry.name, server.name);
    return [{
      definition: entry.definition,
      approvalSummary: (req) => `MCP server "${server.name}", tool ${entry.serverName.slice(0, 200)}: ${JSON.stringify(req.args).slice(0, 500)}`,
      handler: handler(server, entry),
    }];
  }));
}

/** Drops images (last first) until the blocks fit the payload room; one note at the end says how many were left out. Linear in the blocks. */
export function fit(content: ToolCallReply["content"], room: number): ToolCallReply["content"] {
  const bytes = (b: unknown) => Buffer.byteLength(JSON.stringify(b));
  let size = bytes(content) + 100;
  const dropped = new Set<number>();
  for (let i = content.length - 1; i >= 0 && size > room; i--) {
    if (content[i]!.type !== "image") continue;
    size -= bytes(content[i]) + 1;
    dropped.add(i);
  }
  if (dropped.size === 0) return content;
  const note = { type: "text" as const, text: `[${dropped.size === 1 ? "an image" : `${dropped.size} images`} left out: the reply was over the bus payload cap]` };
  return [...content.filter((_, i) => !dropped.has(i)), note];
}
