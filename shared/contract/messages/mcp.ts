/**
 * `lurk.mcp.status`: the mcp actor's MCP servers (services/mcp): each one's state, its tools as
 * served (prefixed names) and the last error; never a secret (no env, headers or command line
 * arguments). `lurkbot mcp list` shows it. Every mcp instance answers in its queue group; with
 * several, one of them does.
 */
import { z } from "zod";
import { defineMessage } from "../envelope.js";

export const mcpStatusRequest = defineMessage("lurk.mcp.status.v1", {});

export const mcpServerStateSchema = z.enum(["disabled", "connecting", "connected", "failed"]);

export const mcpServerStatusSchema = z.object({
  name: z.string(),
  transport: z.enum(["stdio", "streamable-http", "sse"]),
  state: mcpServerStateSchema,
  /** the tools served, by their catalog names */
  tools: z.array(z.object({ name: z.string(), serverName: z.string(), sideEffects: z.boolean() })),
  /** tools of the server left out (allowTools/denyTools, a bad or oversize schema, too many) */
  skipped: z.number().int().nonnegative(),
  /** the last connection or list failure (cleared once connected) */
  lastError: z.string().max(2000).optional(),
  connectedAt: z.number().optional(),
  /** connections made since the actor started (1 + reconnects) */
  connects: z.number().int().nonnegative(),
  /** the server's own name and version from its initialize answer */
  serverInfo: z.object({ name: z.string(), version: z.string() }).optional(),
});
export type McpServerStatus = z.infer<typeof mcpServerStatusSchema>;

export const mcpStatusReply = z.object({
  host: z.string(),
  pid: z.number().int(),
  servers: z.array(mcpServerStatusSchema),
});
export type McpStatusReply = z.infer<typeof mcpStatusReply>;
