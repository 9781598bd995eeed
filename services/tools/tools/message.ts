/**
 * `message`: acts on a channel conversation through the bus (`lurk.out.<channel>.<conversation>`,
 * stream OUTBOUND). Default target: the run's origin (the tool call's `origin`), else the
 * session's last origin (sessions actor); `channel` + `conversation` name another one.
 * - `send` (default): a message, kind "notice" (default) or "reply"; `files` are workspace files,
 *   put in the media store (tools/media.ts) and sent as attachments. The result names the
 *   delivery id, which `edit` and `delete` take.
 * - `react`, `edit`, `delete`: an outbound message of kind "action" (message-action.ts), answered
 *   by the channel's receipt; the result is the channel's answer (or its refusal, e.g. "edit is not
 *   supported by webhook", or a message that is not the assistant's own).
 * `Nats-Msg-Id` is derived from the tool call id, so a repeated call (a resumed run) acts once.
 */
import { z } from "zod";
import { channelNameSchema, conversationSchema, LurkError } from "../../../shared/contract/index.js";
import { defineTool } from "../tool.js";
import { busOf, defaultTarget, queueMessage, type MessageTarget } from "./bus.js";
import { MAX_FILES_PER_MESSAGE, workspaceFilesToAttachments } from "./media.js";
import { runAction } from "./message-action.js";

const MAX_TEXT = 100_000;

const parameters = z.object({
  action: z.enum(["send", "react", "edit", "delete"]).optional()
    .describe("send (default): a new message; react: an emoji on a message; edit / delete: a message you sent (by the delivery id a send returned, or its platform message id)"),
  text: z.string().max(MAX_TEXT).default("").describe("send: the message text (may be empty when files are sent); edit: the new text"),
  files: z.array(z.string().min(1).max(4096)).max(MAX_FILES_PER_MESSAGE).optional()
    .describe("send: workspace files to send with it (paths relative to the workspace root), e.g. a chart or a report"),
  messageId: z.string().min(1).max(400).optional()
    .describe("react, edit, delete: the message; for react any message_id shown in the conversation ([message_id: …] after a user's message, or in a reaction event), \"current\" (default) being the one you are answering"),
  emoji: z.string().min(1).max(64).optional().describe("react: one emoji, e.g. 👍"),
  remove: z.boolean().optional().describe("react: take your reaction back"),
  channel: channelNameSchema.optional().describe("The channel (e.g. telegram, slack); default: where this conversation came from"),
  conversation: conversationSchema.optional().describe("The conversation id on that channel (required with channel)"),
  kind: z.enum(["notice", "reply"]).optional().describe("send: notice (default) or reply"),
});

export const messageTool = defineTool({
  name: "message",
  description: "Send a message to a chat, or react to, edit or delete one. By default it acts on the conversation this run came from (use send to tell the user something "
    + "before your final answer, e.g. progress on a long task, or to send files from the workspace); channel and conversation act elsewhere. "
    + "react puts an emoji on a message (messageId: a [message_id: …] shown in the conversation, or \"current\", the one you are answering); edit and delete work only on messages you sent (the delivery id a send returned).",
  parameters,
  sideEffects: true,
  parallelSafe: true,
  groups: ["group:messaging"],
  runsIn: "process",
  async execute(args, ctx) {
    const { rt, call } = busOf(ctx);
    const action = args.action ?? "send";
    if (action === "send" && args.text === "" && !args.files?.length) throw new LurkError("TOOL_INVALID_ARGS", "give the message text, files to send, or both");
    let target: MessageTarget;
    if (args.channel || args.conversation) {
      if (!args.channel || !args.conversation) throw new LurkError("TOOL_INVALID_ARGS", "give both channel and conversation, or neither (to answer where the run came from)");
      target = { channel: args.channel, conversation: args.conversation };
    } else {
      target = await defaultTarget(rt, call);
    }
    if (action !== "send") return runAction(rt, call, target, { ...args, action }, ctx.signal);
    const attachments = args.files?.length ? await workspaceFilesToAttachments(rt, ctx, args.files) : [];
    const id = `msg-${call.toolCallId}`.slice(0, 200);
    const ack = await queueMessage(rt, call, target, id, { kind: args.kind ?? "notice", text: args.text, attachments }, "the message");
    const files = attachments.length > 0 ? ` with ${attachments.map((a) => a.name).join(", ")}` : "";
    return { content: [{ type: "text", text: `${ack.duplicate ? "already sent" : "sent"} to ${target.channel}/${target.conversation}${files} (delivery id ${id})` }] };
  },
});
