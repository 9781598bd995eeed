/**
 * `message`: sends a message to a channel conversation through the bus
 * (`lurk.out.<channel>.<conversation>`, stream OUTBOUND), as kind "notice" (default) or
 * "reply". Default target: the run's origin (the tool call's `origin`), else the session's last
 * origin (sessions actor); `channel` + `conversation` name another one. `files` are workspace
 * files, put in the media store (tools/media.ts) and sent as attachments. `Nats-Msg-Id` is derived
 * from the tool call id, so a repeated call (a resumed run) delivers once.
 */
import { z } from "zod";
import { channelNameSchema, conversationSchema, LurkError } from "../../../shared/contract/index.js";
import { defineTool } from "../tool.js";
import { busOf, defaultTarget, queueMessage, type MessageTarget } from "./bus.js";
import { MAX_FILES_PER_MESSAGE, workspaceFilesToAttachments } from "./media.js";

const MAX_TEXT = 100_000;

const parameters = z.object({
  text: z.string().max(MAX_TEXT).default("").describe("The message text (may be empty when files are sent)"),
  files: z.array(z.string().min(1).max(4096)).max(MAX_FILES_PER_MESSAGE).optional()
    .describe("Workspace files to send with it (paths relative to the workspace root), e.g. a chart or a report"),
  channel: channelNameSchema.optional().describe("The channel (e.g. telegram, slack); default: where this conversation came from"),
  conversation: conversationSchema.optional().describe("The conversation id on that channel (required with channel)"),
  kind: z.enum(["notice", "reply"]).optional().describe("notice (default) or reply"),
});

export const messageTool = defineTool({
  name: "message",
  description: "Send a message to a chat. By default it goes to the conversation this run came from (use it to tell the user something "
    + "before your final answer, e.g. progress on a long task, or to send files from the workspace); channel and conversation send it elsewhere.",
  parameters,
  sideEffects: true,
  parallelSafe: true,
  groups: ["group:messaging"],
  runsIn: "process",
  async execute(args, ctx) {
    const { rt, call } = busOf(ctx);
    if (args.text === "" && !args.files?.length) throw new LurkError("TOOL_INVALID_ARGS", "give the message text, files to send, or both");
    let target: MessageTarget;
    if (args.channel || args.conversation) {
      if (!args.channel || !args.conversation) throw new LurkError("TOOL_INVALID_ARGS", "give both channel and conversation, or neither (to answer where the run came from)");
      target = { channel: args.channel, conversation: args.conversation };
    } else {
      target = await defaultTarget(rt, call);
    }
    const attachments = args.files?.length ? await workspaceFilesToAttachments(rt, ctx, args.files) : [];
    const id = `msg-${call.toolCallId}`.slice(0, 200);
    const ack = await queueMessage(rt, call, target, id, { kind: args.kind ?? "notice", text: args.text, attachments }, "the message");
    const files = attachments.length > 0 ? ` with ${attachments.map((a) => a.name).join(", ")}` : "";
    return { content: [{ type: "text", text: `${ack.duplicate ? "already sent" : "sent"} to ${target.channel}/${target.conversation}${files}` }] };
  },
});
