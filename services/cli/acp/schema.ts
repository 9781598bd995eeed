/**
 * The Agent Client Protocol (agentclientprotocol.com, protocol version 1) messages `lurkbot acp`
 * accepts, as zod schemas (unknown fields and `_meta` are allowed, as the protocol asks), and
 * the shapes of what it sends. Only what LurkBot serves is here: initialize, session/new,
 * session/load, session/prompt, session/cancel, and the client's answer to
 * session/request_permission.
 */
import { isAbsolute } from "node:path";
import { z } from "zod";

export const ACP_PROTOCOL_VERSION = 1;

export const initializeParams = z.looseObject({
  protocolVersion: z.number().int().nonnegative(),
  clientCapabilities: z.record(z.string(), z.unknown()).optional(),
  clientInfo: z.looseObject({ name: z.string().max(200), version: z.string().max(100).optional() }).optional(),
});

/** stdio, http and sse MCP servers: accepted and ignored (LurkBot's tools come from its own actors) */
const mcpServer = z.looseObject({ name: z.string().max(200) });

const cwd = z.string().min(1).max(4096).refine((p) => isAbsolute(p), "cwd must be an absolute path");
const sessionId = z.string().min(1).max(128);

export const sessionNewParams = z.looseObject({
  cwd,
  mcpServers: z.array(mcpServer).max(100).default([]),
});

export const sessionLoadParams = z.looseObject({
  sessionId,
  cwd,
  mcpServers: z.array(mcpServer).max(100).default([]),
});

const textResource = z.looseObject({ uri: z.string().max(4096), text: z.string(), mimeType: z.string().max(200).nullish() });
const blobResource = z.looseObject({ uri: z.string().max(4096), blob: z.string(), mimeType: z.string().max(200).nullish() });

/**
 * The image types a prompt may carry: those every model provider takes (the agent-runner's
 * MODEL_IMAGE_TYPES, Telegram's photo types); another type is refused (-32602), not sent as a file.
 */
export const PROMPT_IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"] as const;
const imageMime = z.string().max(200)
  .transform((m) => { const bare = m.split(";")[0]!.trim().toLowerCase(); return bare === "image/jpg" ? "image/jpeg" : bare; })
  .pipe(z.enum(PROMPT_IMAGE_TYPES, { error: `an image's mimeType must be one of ${PROMPT_IMAGE_TYPES.join(", ")}` }));

export const contentBlock = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("text"), text: z.string() }),
  // data: base64, decoded and capped later (prompt-files.ts), against media.maxFileMb
  z.looseObject({ type: z.literal("image"), data: z.string(), mimeType: imageMime, uri: z.string().max(4096).nullish() }),
  z.looseObject({ type: z.literal("audio"), data: z.string(), mimeType: z.string().max(200) }),
  z.looseObject({
    type: z.literal("resource_link"), uri: z.string().max(4096), name: z.string().max(1000),
    title: z.string().max(1000).nullish(), description: z.string().max(10_000).nullish(), mimeType: z.string().max(200).nullish(), size: z.number().nullish(),
  }),
  z.looseObject({ type: z.literal("resource"), resource: z.union([textResource, blobResource]) }),
]);
export type ContentBlock = z.infer<typeof contentBlock>;

export const sessionPromptParams = z.looseObject({
  sessionId,
  prompt: z.array(contentBlock).min(1).max(1000),
});

export const sessionCancelParams = z.looseObject({ sessionId });

/** The client's answer to session/request_permission. */
export const permissionResponse = z.looseObject({
  outcome: z.discriminatedUnion("outcome", [
    z.looseObject({ outcome: z.literal("cancelled") }),
    z.looseObject({ outcome: z.literal("selected"), optionId: z.string().max(200) }),
  ]),
});

export type StopReason = "end_turn" | "max_tokens" | "max_turn_requests" | "refusal" | "cancelled";
export type ToolKind = "read" | "edit" | "delete" | "move" | "search" | "execute" | "think" | "fetch" | "other";
export type ToolCallStatus = "pending" | "in_progress" | "completed" | "failed";
export type PermissionOptionKind = "allow_once" | "allow_always" | "reject_once" | "reject_always";

export interface TextContent {
  type: "text";
  text: string;
}

/** A file the client can open (ACP's resource_link block): what LurkBot sends for a file the agent sent. */
export interface ResourceLinkContent {
  type: "resource_link";
  uri: string;
  name: string;
  mimeType?: string;
  size?: number;
}

/** Content of a tool call: a content block (ACP also has diffs and terminals; LurkBot sends text). */
export interface ToolCallContent {
  type: "content";
  content: TextContent;
}

export interface ToolCallFields {
  toolCallId: string;
  title?: string;
  kind?: ToolKind;
  status?: ToolCallStatus;
  content?: ToolCallContent[];
  rawInput?: unknown;
  rawOutput?: unknown;
}

/** The `update` of a session/update notification. */
export type SessionUpdate =
  | { sessionUpdate: "agent_message_chunk"; content: TextContent | ResourceLinkContent }
  | { sessionUpdate: "agent_thought_chunk" | "user_message_chunk"; content: TextContent }
  | ({ sessionUpdate: "tool_call" } & ToolCallFields & { title: string })
  | ({ sessionUpdate: "tool_call_update" } & ToolCallFields);

export interface PermissionOption {
  optionId: string;
  name: string;
  kind: PermissionOptionKind;
}

/** A zod error as the data of an invalid-params error: where and what, a few issues. */
export function issuesOf(error: z.ZodError): { path: string; message: string }[] {
  return error.issues.slice(0, 5).map((i) => ({ path: i.path.join("."), message: i.message }));
}
