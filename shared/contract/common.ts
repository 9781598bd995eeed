/** Schemas shared by several actors: identifiers, peers, usage, and the one LLM message model. */
import { z } from "zod";
import { idSchema, timestampSchema } from "./envelope.js";

/** Agent ids are subject tokens: lower-case letters, digits, `-` and `_`. */
export const agentIdSchema = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, "agent id: lower-case letters, digits, '-' or '_'");
export const channelNameSchema = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/, "channel name: lower-case letters, digits, '-' or '_'");
/** A conversation token: where a channel delivers replies (a subject token). */
export const conversationSchema = z.string().min(1).max(128).regex(/^[^.*>\s]+$/, "conversation must be a subject token");

export const sessionTypeSchema = z.enum(["main", "dm", "group", "topic", "thread", "subagent", "cron"]);
export type SessionType = z.infer<typeof sessionTypeSchema>;
/** Session keys in the seeds' format, e.g. `agent:main:main`, `agent:main:telegram:group:-100123`. */
export const sessionKeySchema = z.string().min(1).max(512).regex(/^(global|agent:[a-z0-9][a-z0-9_-]*:\S+)$/, "session key: agent:<agentId>:<rest> or global");

export const peerSchema = z.object({
  kind: z.enum(["dm", "group", "channel", "thread", "topic"]),
  id: z.string().min(1).max(200),
  threadId: z.string().max(200).optional(),
  topicId: z.string().max(200).optional(),
  guildId: z.string().max(200).optional(),
  teamId: z.string().max(200).optional(),
});
export type Peer = z.infer<typeof peerSchema>;

export const senderSchema = z.object({
  id: z.string().min(1).max(200),
  name: z.string().max(200).optional(),
  isBot: z.boolean().optional(),
});

/**
 * A file in the media store (JetStream object store `lurk_media`, shared/runtime/media.ts): the
 * SHA-256 of its bytes in lowercase hex, so the same file is stored once. Bus messages carry the
 * ref, never the bytes.
 */
export const mediaRefSchema = z.string().regex(/^[0-9a-f]{64}$/, "a media ref is the file's SHA-256 in lowercase hex");

export const attachmentSchema = z.object({
  kind: z.enum(["image", "audio", "video", "file"]),
  mime: z.string().max(200),
  name: z.string().max(500).optional(),
  url: z.string().max(4096).optional(),
  dataBase64: z.string().optional(),
  size: z.number().int().nonnegative().optional(),
  /** the file's bytes in the media store */
  ref: mediaRefSchema.optional(),
  /** why the channel could not store the file (too large, download failed): the agent is told */
  error: z.string().max(500).optional(),
  /** an audio file's text (the agent-runner's `media.transcription`, or a platform's own) */
  transcript: z.string().max(200_000).optional(),
  /** put in the model's note by the agent-runner: a small text file's content (UTF-8, media.inlineTextKb) or an office document's or PDF's extracted text (media.documentTextKb; "" when it has none) */
  text: z.string().max(1_000_000).optional(),
  /**
   * why the agent-runner could not read the file's text (a document that is damaged, password-protected
   * or too slow to read; an audio file not transcribed): a short phrase shown to the model in the
   * file's note. An attachment with one is not tried again.
   */
  textError: z.string().max(500).optional(),
  /** a document's page count (slides, sheets) as the agent-runner's reader found it */
  pages: z.number().int().nonnegative().optional(),
  /**
   * a scanned PDF's or an image's text as OCR read it (the agent-runner's media.ocr; for a PDF also
   * that OCR found none): what a model without PDF input (without vision) gets in the file's
   * note; one with it gets the PDF (the image)
   */
  ocrText: z.string().max(1_000_000).optional(),
});
export type Attachment = z.infer<typeof attachmentSchema>;

/** Where a run came from, so its reply can go back there. */
export const originSchema = z.object({
  channel: channelNameSchema,
  conversation: conversationSchema,
  accountId: z.string().max(200).optional(),
  peer: peerSchema.optional(),
  sender: senderSchema.optional(),
  messageIds: z.array(idSchema).max(1000).default([]),
});
export type Origin = z.infer<typeof originSchema>;

export const usageSchema = z.object({
  input: z.number().int().nonnegative().default(0),
  output: z.number().int().nonnegative().default(0),
  cacheRead: z.number().int().nonnegative().default(0),
  cacheWrite: z.number().int().nonnegative().default(0),
  total: z.number().int().nonnegative().default(0),
  costUsd: z.number().nonnegative().optional(),
});
export type Usage = z.infer<typeof usageSchema>;

export const emptyUsage = (): Usage => ({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 });

/** The sum of two usages (cost only when either has one). */
export function addUsage(a: Usage, b: Usage): Usage {
  const out: Usage = {
    input: a.input + b.input,
    output: a.output + b.output,
    cacheRead: a.cacheRead + b.cacheRead,
    cacheWrite: a.cacheWrite + b.cacheWrite,
    total: a.total + b.total,
  };
  if (a.costUsd !== undefined || b.costUsd !== undefined) out.costUsd = (a.costUsd ?? 0) + (b.costUsd ?? 0);
  return out;
}

export const thinkLevelSchema = z.enum(["off", "low", "medium", "high"]);
export const verboseLevelSchema = z.enum(["off", "low", "high"]);
export const reasoningLevelSchema = z.enum(["off", "on", "stream"]);
export const queueModeSchema = z.enum(["steer", "followup", "collect", "steer-backlog", "interrupt", "queue"]);
export const queueDropPolicySchema = z.enum(["old", "new", "summarize"]);
export const promptModeSchema = z.enum(["full", "minimal", "none"]);
/** when replies are also sent as speech (tts.auto, `/tts`): never, every reply, replies to a voice note, replies with a [[tts]] directive */
export const ttsAutoSchema = z.enum(["off", "always", "inbound", "tagged"]);

// --- the LLM message model (provider-neutral) ----------------------------------------------

export const textBlockSchema = z.object({ type: z.literal("text"), text: z.string() });
export const thinkingBlockSchema = z.object({
  type: z.literal("thinking"),
  text: z.string(),
  /** provider signature or encrypted payload, sent back verbatim on later turns */
  signature: z.string().optional(),
  redacted: z.boolean().optional(),
});
/** An image: inline bytes, a URL, or a media-store ref (transcripts keep the ref; the bytes are loaded for each LLM call). */
export const imageBlockSchema = z.object({
  type: z.literal("image"),
  mime: z.string(),
  dataBase64: z.string().optional(),
  url: z.string().optional(),
  ref: mediaRefSchema.optional(),
  /** its text as OCR read it (Attachment.ocrText): shown to a model without vision in the image's place */
  ocrText: z.string().max(1_000_000).optional(),
});
/**
 * A PDF the model reads as the PDF itself (one without a text layer, for models with the `pdf`
 * capability). Transcripts keep the ref; the agent-runner loads the bytes for each LLM call and
 * makes it a text note for a model that cannot take PDFs.
 */
export const documentBlockSchema = z.object({
  type: z.literal("document"),
  mime: z.literal("application/pdf"),
  ref: mediaRefSchema,
  name: z.string().max(500).optional(),
  size: z.number().int().nonnegative().optional(),
  pages: z.number().int().nonnegative().optional(),
  /** its text as OCR read it (Attachment.ocrText): the note's text for a model without PDF input */
  ocrText: z.string().max(1_000_000).optional(),
  dataBase64: z.string().optional(),
});
export const toolCallBlockSchema = z.object({
  type: z.literal("tool_call"),
  id: z.string().min(1).max(200),
  name: z.string().min(1).max(200),
  args: z.record(z.string(), z.unknown()),
  /** set when the provider's argument JSON could not be parsed even after repair */
  argsError: z.string().optional(),
});
export const contentBlockSchema = z.discriminatedUnion("type", [textBlockSchema, thinkingBlockSchema, imageBlockSchema, toolCallBlockSchema]);
export type ContentBlock = z.infer<typeof contentBlockSchema>;

export const stopReasonSchema = z.enum(["end_turn", "tool_use", "max_tokens", "stop_sequence", "aborted", "error"]);

export const userMessageSchema = z.object({
  role: z.literal("user"),
  content: z.array(z.discriminatedUnion("type", [textBlockSchema, imageBlockSchema, documentBlockSchema])),
});
export const assistantMessageSchema = z.object({
  role: z.literal("assistant"),
  content: z.array(contentBlockSchema),
  provider: z.string(),
  model: z.string(),
  stopReason: stopReasonSchema,
  usage: usageSchema.optional(),
});
export const toolResultMessageSchema = z.object({
  role: z.literal("tool_result"),
  toolCallId: z.string(),
  toolName: z.string(),
  content: z.array(z.discriminatedUnion("type", [textBlockSchema, imageBlockSchema])),
  isError: z.boolean(),
});
export const llmMessageSchema = z.discriminatedUnion("role", [userMessageSchema, assistantMessageSchema, toolResultMessageSchema]);
export type LlmMessage = z.infer<typeof llmMessageSchema>;
export type AssistantMessage = z.infer<typeof assistantMessageSchema>;
export type ToolResultMessage = z.infer<typeof toolResultMessageSchema>;
export type UserMessage = z.infer<typeof userMessageSchema>;

/** The text blocks of an assistant message, joined (its answer without thinking and tool calls). */
export function assistantText(message: AssistantMessage): string {
  return message.content.filter((b) => b.type === "text").map((b) => (b as { text: string }).text).join("");
}

export const toolDefinitionSchema = z.object({
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/),
  description: z.string().max(4000),
  /** JSON Schema of the arguments (generated from the tool's zod schema) */
  parameters: z.record(z.string(), z.unknown()),
  /** the actor (service name) that executes it */
  actor: z.string(),
  /** whether a call changes something outside the transcript (never repeated on resume) */
  sideEffects: z.boolean(),
  /** whether it may run in parallel with other calls of the same turn */
  parallelSafe: z.boolean(),
  groups: z.array(z.string()).default([]),
  needsApproval: z.boolean().default(false),
});
export type ToolDefinition = z.infer<typeof toolDefinitionSchema>;

export const listLimitSchema = z.number().int().min(1).max(10_000);
export const msSchema = timestampSchema;
