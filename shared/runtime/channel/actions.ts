/**
 * Outbound messages of kind "action" (the `message` tool's react, edit and delete), for every
 * channel on the kit. The kit resolves what the action names and checks it; the adapter's `act`
 * only talks to the platform:
 * - react: `messageId` is a platform message id (a user's message as its inbound id, e.g. Telegram
 *   `<chatId>:<messageId>`, Slack `<channel>:<ts>`, Discord the message id), or the delivery id of
 *   a message the assistant sent; the adapter refuses an id of another conversation;
 * - edit, delete: only a message this channel's sent-ledger holds for the action's conversation
 *   (the assistant's own, by its delivery id or any of its platform message ids); anything else is
 *   refused ("… is not a message the assistant sent in this conversation"). Edit needs a delivery
 *   of one message (name a part by its platform id otherwise); delete removes every part.
 *   A message still being sent is waited for by redelivery; one unknown for ACTION_LOOKUP_WAIT_MS
 *   (a send queued just before) is refused.
 * A channel whose adapter has no `act`, or whose `actions` lack the op, answers "<op> is not
 * supported by <channel>". Every action is recorded in the ledger (`action: true`), so a
 * redelivered action is not done twice; the answer is the kit's receipt (`delivered` /
 * `delivery_failed` with `action` and the reason), which the tool waits for.
 */
import { LurkError, type MessageAction, type OutboundMessage } from "../../contract/index.js";
import type { DeliveryInfo } from "../consumer.js";
import type { Logger } from "../logger.js";
import { sleepUnlessAborted as sleep } from "../abortable-sleep.js";
import type { DeliveryAdapter, DeliveryContext } from "./delivery.js";
import { DeliveryError } from "./delivery.js";
import type { LedgerEntry, SentLedger } from "./ledger.js";
import { convertTables } from "./tables.js";

/** What the adapter's `act` gets: the platform message ids the action is for. */
export type ActionRequest =
  | { op: "react"; message: OutboundMessage; platformMessageId: string; emoji: string; remove: boolean }
  | { op: "edit"; message: OutboundMessage; platformMessageId: string; text: string }
  | { op: "delete"; message: OutboundMessage; platformMessageIds: string[] };

/** how long an edit or delete waits for a message it does not know yet (a send queued just before it) */
export const ACTION_LOOKUP_WAIT_MS = 5_000;

export interface ActionDeps {
  channel: string;
  ledger: SentLedger;
  adapter: DeliveryAdapter;
  maxAttempts: number;
  signal: AbortSignal;
  receipt(event: "delivered" | "delivery_failed", msg: OutboundMessage, status: "delivered" | "failed" | "duplicate", attempts: number, extra?: { platformMessageId?: string; error?: string }): void;
  fail(msg: OutboundMessage, attempts: number, error: string, log: Logger): Promise<void>;
}

/** Refused for good: the action is wrong, retrying cannot help. */
class Refused extends Error {}

/** The assistant's own delivery that `messageId` names in `conversation`, waiting briefly for one not yet known. */
async function ownMessage(deps: ActionDeps, messageId: string, conversation: string): Promise<{ entry: LedgerEntry; platformMessageId?: string }> {
  const find = () => {
    const byDelivery = deps.ledger.get(messageId);
    if (byDelivery && !byDelivery.action) return { entry: byDelivery };
    const byPlatform = deps.ledger.findByPlatformId(messageId);
    return byPlatform ? { entry: byPlatform.entry, platformMessageId: messageId } : undefined;
  };
  let found = find();
  const until = Date.now() + ACTION_LOOKUP_WAIT_MS;
  while (!found && Date.now() < until && !deps.signal.aborted) {
    await sleep(250, deps.signal);
    found = find();
  }
  const notOwn = `message ${messageId} is not a message the assistant sent in this conversation (only the assistant's own messages can be edited or deleted)`;
  if (!found || found.entry.conversation !== conversation) throw new Refused(notOwn);
  if (found.entry.status === "failed") throw new Refused(`message ${messageId} was never delivered (${found.entry.error ?? "it failed"})`);
  if (found.entry.status === "sending") throw new LurkError("UNAVAILABLE", `message ${messageId} is still being sent`, { retryable: true });
  return found;
}

async function resolve(deps: ActionDeps, msg: OutboundMessage, action: MessageAction): Promise<ActionRequest> {
  if (action.op === "react") {
    // the assistant's own message by its delivery id: its first platform message
    const own = deps.ledger.get(action.messageId);
    const platformMessageId = own && !own.action && own.conversation === msg.conversation && own.parts[0] ? own.parts[0] : action.messageId;
    return { op: "react", message: msg, platformMessageId, emoji: action.emoji, remove: action.remove ?? false };
  }
  const own = await ownMessage(deps, action.messageId, msg.conversation);
  const ids = own.platformMessageId ? [own.platformMessageId] : own.entry.parts.filter((p) => p !== "");
  if (ids.length === 0) throw new Refused(`${deps.channel} gave no message id for ${action.messageId}: it cannot be changed`);
  if (action.op === "delete") return { op: "delete", message: msg, platformMessageIds: ids };
  if (ids.length > 1) throw new Refused(`${action.messageId} was sent as ${ids.length} messages (${ids.join(", ")}): edit one of them by its id`);
  const text = convertTables(action.text, deps.adapter.tables ?? "off");
  if (text.length > deps.adapter.textLimit) throw new Refused(`the new text has ${text.length} characters; ${deps.channel} takes at most ${deps.adapter.textLimit} in one message`);
  return { op: "edit", message: msg, platformMessageId: ids[0]!, text };
}

/** Handles one outbound message of kind "action" (see the file comment). */
export async function handleAction(deps: ActionDeps, msg: OutboundMessage, info: DeliveryInfo, log: Logger): Promise<void> {
  const action = msg.action!;
  const known = deps.ledger.get(msg.id);
  if (known?.status === "sent") return deps.receipt("delivered", msg, "duplicate", known.attempts);
  if (known?.status === "failed") return deps.receipt("delivery_failed", msg, "failed", known.attempts, { error: known.error ?? "failed" });
  const attempt = info.deliveryCount;
  const { adapter } = deps;
  if (!adapter.act || !(adapter.actions ?? []).includes(action.op)) {
    return deps.fail(msg, attempt, `${action.op} is not supported by ${deps.channel}`, log);
  }
  const ctx: DeliveryContext = { deliveryId: msg.id, attempt, signal: deps.signal, log };
  try {
    const request = await resolve(deps, msg, action);
    await adapter.act(request, ctx);
  } catch (err) {
    if (err instanceof Refused) return deps.fail(msg, attempt, err.message, log);
    const e = err instanceof DeliveryError ? err : new DeliveryError((err as Error)?.message ?? String(err));
    if (e.opts.permanent || attempt >= deps.maxAttempts) return deps.fail(msg, attempt, e.message, log);
    throw new LurkError("UNAVAILABLE", `action attempt ${attempt} failed: ${e.message}`, { retryable: true });
  }
  await deps.ledger.finish(msg.id, "sent", attempt, undefined, { conversation: msg.conversation, action: true });
  log.info({ action: action.op, attempt }, "action done");
  deps.receipt("delivered", msg, "delivered", attempt);
}
