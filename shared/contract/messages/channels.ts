/** Channel <-> router/agent-runner messages: what comes in from a platform, what goes out. */
import { z } from "zod";
import { attachmentSchema, channelNameSchema, conversationSchema, peerSchema, senderSchema } from "../common.js";
import { defineMessage, idSchema } from "../envelope.js";

/**
 * A user's reaction to a message, as a channel reports it (the channel kit's reactions.ts fills it:
 * the adapter maps the platform event, the kit filters by `reactionNotifications` and asks its
 * sent-ledger whether the message is the assistant's own).
 */
export const inboundReactionSchema = z.object({
  action: z.enum(["added", "removed"]),
  /** one emoji, or the platform's name of a custom one (Slack `:name:`, Discord `<:name:id>`) */
  emoji: z.string().min(1).max(64),
  /** the platform message id reacted to (as inbound messages and receipts carry them) */
  messageId: z.string().min(1).max(400),
  /** the message is one the assistant sent */
  ownMessage: z.boolean(),
  /** a short excerpt of that message, when known (untrusted text) */
  excerpt: z.string().max(200).optional(),
});
export type InboundReaction = z.infer<typeof inboundReactionSchema>;

/**
 * `lurk.in.<channel>`, stream INBOUND, published with `Nats-Msg-Id: <channel>:<messageId>`.
 * `id` is the platform message id (stable across redeliveries), so duplicates collapse.
 */
export const inboundMessageSchema = defineMessage("lurk.inbound.message.v1", {
  channel: channelNameSchema,
  accountId: z.string().max(200).optional(),
  /** where replies go: `lurk.out.<channel>.<conversation>` */
  conversation: conversationSchema,
  peer: peerSchema,
  sender: senderSchema,
  text: z.string().max(100_000),
  attachments: z.array(attachmentSchema).max(32).default([]),
  replyToMessageId: idSchema.optional(),
  /** the bot was mentioned (group gating) */
  mentioned: z.boolean().default(false),
  /** explicit agent binding chosen by the channel (e.g. a CLI flag); the router may refuse it */
  agentId: z.string().max(64).optional(),
  /** session name chosen by the user (the terminal channel's --session) */
  sessionName: z.string().max(128).optional(),
  /**
   * the platform shows the sender a pending state (Discord's deferred "thinking…") that only an
   * outbound message answering this one (`replyTo`) clears: a refusal must answer it too
   */
  awaitsAnswer: z.boolean().optional(),
  /**
   * a user's reaction, not a message (`text` is empty): the router never starts a run for it
   * and never answers it; it becomes a pending system event of the session the conversation maps
   * to (after the same access policy as a message). `sender` is the reacting user.
   */
  reaction: inboundReactionSchema.optional(),
});
export type InboundMessage = z.infer<typeof inboundMessageSchema>;

/**
 * What an outbound message of kind "action" asks of the channel (the `message` tool's react, edit
 * and delete). `messageId` names the message: a platform message id (as inbound messages and
 * receipts carry them), or, for edit and delete, the delivery id of a message the assistant sent.
 * The channel answers with its receipt (`lurk.evt.channel-<name>.delivered` on success,
 * `.delivery_failed` with the reason, e.g. "edit is not supported by webhook").
 * Edit and delete act only on messages the channel's sent-ledger holds for that conversation.
 */
export const messageActionSchema = z.discriminatedUnion("op", [
  z.object({
    op: z.literal("react"),
    messageId: z.string().min(1).max(400),
    /** one emoji, e.g. "👍" */
    emoji: z.string().min(1).max(64),
    /** take the reaction back */
    remove: z.boolean().optional(),
  }),
  z.object({ op: z.literal("edit"), messageId: z.string().min(1).max(400), text: z.string().min(1).max(100_000) }),
  z.object({ op: z.literal("delete"), messageId: z.string().min(1).max(400) }),
]);
export type MessageAction = z.infer<typeof messageActionSchema>;
export const MESSAGE_ACTIONS = ["react", "edit", "delete"] as const;

/**
 * `lurk.out.<channel>.<conversation>`, stream OUTBOUND, `Nats-Msg-Id` = `id` (the delivery id,
 * derived from the run id), so a redelivered run never produces a second delivery.
 */
export const outboundMessageSchema = defineMessage("lurk.outbound.message.v1", {
  channel: channelNameSchema,
  conversation: conversationSchema,
  accountId: z.string().max(200).optional(),
  peer: peerSchema.optional(),
  kind: z.enum(["reply", "notice", "error", "approval", "typing", "action"]),
  /** the inbound message ids this answers */
  replyTo: z.array(idSchema).max(1000).default([]),
  text: z.string().max(1_000_000),
  attachments: z.array(attachmentSchema).max(32).default([]),
  chunk: z.object({ index: z.number().int().nonnegative(), count: z.number().int().positive() }).optional(),
  /**
   * for kind "approval": what to show with approve/deny; `command` is the approvals actor's
   * summary of the call (exec's command, an upload's site and files), `toolCallId` the run's
   * tool call it is for (absent from older approvals actors)
   */
  approval: z.object({ approvalId: idSchema, tool: z.string(), command: z.string().optional(), expiresAt: z.number().int(), toolCallId: idSchema.optional() }).optional(),
  /** for kind "error": the contract error code */
  errorCode: z.string().optional(),
  /**
   * a progress note of a run (kind "notice", empty `replyTo`): "tool" (/verbose: a tool call or
   * its result) or "reasoning" (/reasoning: the model's thinking). Never the run's answer.
   */
  note: z.enum(["tool", "reasoning"]).optional(),
  /** for kind "action" (empty `text`): what to do to a message already in the conversation */
  action: messageActionSchema.optional(),
}).refine((m) => (m.kind === "action") === (m.action !== undefined), { message: "kind \"action\" carries `action`, and only it does", path: ["action"] });
export type OutboundMessage = z.infer<typeof outboundMessageSchema>;

/** `lurk.evt.<channel actor>.delivered` / `.delivery_failed`: what happened to a delivery. */
export const deliveryReceiptSchema = defineMessage("lurk.outbound.receipt.v1", {
  channel: channelNameSchema,
  deliveryId: idSchema,
  status: z.enum(["delivered", "failed", "duplicate"]),
  platformMessageId: z.string().optional(),
  attempts: z.number().int().nonnegative(),
  error: z.string().optional(),
  /** the receipt of an action (kind "action"): which one */
  action: z.enum(MESSAGE_ACTIONS).optional(),
});
