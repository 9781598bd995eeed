/**
 * The `message` tool's react, edit and delete: an outbound message of kind "action" on the
 * conversation's subject (stream OUTBOUND, `Nats-Msg-Id` `act-<toolCallId>`), answered by the
 * channel's receipt (`lurk.evt.channel-<name>.delivered` / `.delivery_failed`, the kit's
 * actions.ts), which this waits for (at most ACTION_WAIT_MS). The channel checks what it can:
 * edit and delete only the assistant's own messages of that conversation (its sent-ledger), and
 * answers "<action> is not supported by <channel>" for what it cannot do. The terminal (`cli`)
 * is no kit channel: it prints a reaction as a note and cannot edit or delete printed text.
 * `messageId` "current" (react's default) is the message the run answers: the last inbound id of
 * the run's origin, only in that conversation.
 */
import { deliveryReceiptSchema, LurkError, safeParseJson, type MessageAction } from "../../../shared/contract/index.js";
import type { ActorRuntime } from "../../../shared/runtime/actor.js";
import type { ToolCallInfo } from "../tool.js";
import { queueMessage, type MessageTarget } from "./bus.js";

/** how long a react/edit/delete waits for the channel's answer */
export const ACTION_WAIT_MS = 20_000;

export interface ActionArgs {
  action: MessageAction["op"];
  text: string;
  messageId?: string | undefined;
  emoji?: string | undefined;
  remove?: boolean | undefined;
}

const done = (text: string) => ({ content: [{ type: "text" as const, text }] });

function actionOf(call: ToolCallInfo, target: MessageTarget, args: ActionArgs): MessageAction {
  let messageId = args.messageId ?? (args.action === "react" ? "current" : undefined);
  if (!messageId) throw new LurkError("TOOL_INVALID_ARGS", `${args.action} needs messageId: the delivery id a send returned (or the message's platform id)`);
  if (messageId === "current") {
    const origin = call.origin;
    if (args.action !== "react") throw new LurkError("TOOL_INVALID_ARGS", `"current" is the user's message: only react takes it; ${args.action} works on messages you sent`);
    if (!origin || origin.channel !== target.channel || origin.conversation !== target.conversation || origin.messageIds.length === 0) {
      throw new LurkError("TOOL_INVALID_ARGS", "there is no current message in that conversation (this run was not started by a chat message there): give messageId");
    }
    messageId = origin.messageIds.at(-1)!;
  }
  if (args.action === "react") {
    if (!args.emoji) throw new LurkError("TOOL_INVALID_ARGS", "react needs emoji, e.g. 👍");
    return { op: "react", messageId, emoji: args.emoji, ...(args.remove ? { remove: true } : {}) };
  }
  if (args.action === "edit") {
    if (!args.text) throw new LurkError("TOOL_INVALID_ARGS", "edit needs text: the message's new text");
    return { op: "edit", messageId, text: args.text };
  }
  return { op: "delete", messageId };
}

function describe(action: MessageAction, target: MessageTarget): string {
  const where = `${target.channel}/${target.conversation}`;
  if (action.op === "react") return `${action.remove ? "removed the reaction" : "reacted"} ${action.emoji} ${action.remove ? "from" : "to"} message ${action.messageId} in ${where}`;
  return `${action.op === "edit" ? "edited" : "deleted"} message ${action.messageId} in ${where}`;
}

export async function runAction(rt: ActorRuntime, call: ToolCallInfo, target: MessageTarget, args: ActionArgs, signal: AbortSignal) {
  const action = actionOf(call, target, args);
  if (target.channel === "cli" && action.op !== "react") throw new LurkError("TOOL_FAILED", `${action.op} is not supported by cli (the terminal cannot change text it printed)`);
  const id = `act-${call.toolCallId}`.slice(0, 200);
  const publish = () => queueMessage(rt, call, target, id, { kind: "action", text: "", attachments: [], action }, `the ${action.op}`);
  if (target.channel === "cli") {
    await publish();
    return done(`${describe(action, target)} (the terminal shows it as a note)`);
  }
  // subscribed before publishing: the receipt cannot come first
  const actor = `channel-${target.channel}`;
  const subs: ReturnType<ActorRuntime["nc"]["subscribe"]>[] = [];
  const answer = new Promise<{ ok: boolean; error?: string; duplicate: boolean }>((resolve) => {
    for (const event of ["delivered", "delivery_failed"] as const) {
      subs.push(rt.nc.subscribe(rt.subjects.event(actor, event), {
        callback: (err, m) => {
          if (err) return;
          // an actor event (`lurk.actor.event.v1`) whose data is the receipt
          const event = safeParseJson(m.data) as { data?: unknown } | null;
          const r = deliveryReceiptSchema.safeParse(event?.data);
          if (!r.success || r.data.deliveryId !== id) return;
          resolve({ ok: r.data.status !== "failed", duplicate: r.data.status === "duplicate", ...(r.data.error ? { error: r.data.error } : {}) });
        },
      }));
    }
  });
  let timer: NodeJS.Timeout | undefined;
  let onAbort = () => {};
  try {
    await rt.nc.flush();
    const ack = await publish();
    const timeout = new Promise<"timeout">((resolve) => { timer = setTimeout(() => resolve("timeout"), ACTION_WAIT_MS); });
    const aborted = new Promise<"aborted">((resolve) => {
      onAbort = () => resolve("aborted");
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
    });
    const result = await Promise.race([answer, timeout, aborted]);
    if (result === "aborted") throw new LurkError("ABORTED", `the ${action.op} was cancelled`);
    if (result === "timeout") {
      if (ack.duplicate) return done(`the same ${action.op} was already asked for (a repeated call)`);
      throw new LurkError("TIMEOUT", `${target.channel} did not answer the ${action.op} within ${ACTION_WAIT_MS / 1000} s (is the channel running?); it stays queued and is done when the channel takes it`);
    }
    if (!result.ok) throw new LurkError("TOOL_FAILED", `${target.channel} refused the ${action.op}: ${result.error ?? "no reason given"}`);
    return done(`${describe(action, target)}${result.duplicate ? " (already done)" : ""}`);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
    for (const s of subs) s.unsubscribe();
  }
}
