/** The body of a signed webhook request (`POST /v1/messages`). */
import { z } from "zod";
import { attachmentSchema, mediaRefSchema } from "../../shared/contract/index.js";

/**
 * A file in a request: its bytes as `dataBase64` (stored in the media store by files.ts; the bus
 * carries the ref), or a `url` / a media `ref` (from a callback) passed on as they are.
 */
export const requestAttachmentSchema = z.object({
  kind: attachmentSchema.shape.kind.optional(),
  /** default: from the name's extension */
  mime: z.string().max(200).optional(),
  name: z.string().max(500).optional(),
  dataBase64: z.string().optional(),
  url: z.string().max(4096).optional(),
  ref: mediaRefSchema.optional(),
  size: z.number().int().nonnegative().optional(),
}).refine((a) => a.dataBase64 !== undefined || a.url !== undefined || a.ref !== undefined, "an attachment needs dataBase64, url or ref");
export type RequestAttachment = z.infer<typeof requestAttachmentSchema>;

export const webhookRequestSchema = z.object({
  /** the sender's message id: the same id is processed once */
  id: z.string().min(1).max(200),
  text: z.string().max(100_000),
  /** where replies belong (echoed in callbacks); also the session name unless `session` is given */
  conversation: z.string().min(1).max(100).default("default"),
  session: z.string().min(1).max(128).optional(),
  sender: z.object({ id: z.string().min(1).max(200), name: z.string().max(200).optional() }).default({ id: "webhook" }),
  agentId: z.string().max(64).optional(),
  replyToMessageId: z.string().min(1).max(200).optional(),
  attachments: z.array(requestAttachmentSchema).max(32).default([]),
});
export type WebhookRequest = z.infer<typeof webhookRequestSchema>;

/** What a callback POST carries (one per part of a delivery). */
export interface WebhookCallback {
  type: "lurkbot.webhook.delivery.v1";
  deliveryId: string;
  part: { index: number; count: number };
  conversation: string;
  kind: string;
  text: string;
  /** the request ids this answers */
  replyTo: string[];
  replyToMessageId?: string;
  runId?: string;
  sessionKey?: string;
  errorCode?: string;
  approval?: unknown;
  /** a run's progress note (kind "notice"): "tool" (/verbose) or "reasoning" (/reasoning) */
  note?: "tool" | "reasoning";
  /** an attachment part's one file (its text is empty), with its bytes */
  attachments: CallbackAttachment[];
}

export interface CallbackAttachment {
  kind: string;
  mime: string;
  name?: string;
  size?: number;
  ref?: string;
  url?: string;
  dataBase64?: string;
}
