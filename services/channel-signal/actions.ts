/**
 * The `message` tool's react, edit and delete on Signal, through signal-cli's JSON-RPC (the kit's
 * `act`, shared/runtime/channel/actions.ts: edit and delete come only for the bot's own messages
 * of the conversation, from the sent-ledger). A Signal message is its author and timestamp: the
 * platform message id `<author>:<timestamp>` (inbound.ts) holds both, for a user's message and
 * for the bot's own (`<account>:<timestamp of the send>`), so the ledger is enough:
 * - react: `sendReaction` { emoji, targetAuthor, targetTimestamp, remove? } to the conversation
 *   (`recipient` or `groupId`); in a DM the author must be the peer or the bot (else refused);
 * - edit: `send` { message, editTimestamp: the original's timestamp } (plain text, as replies);
 * - delete: `remoteDelete` { targetTimestamp } of each part.
 * signal-cli has no transaction ids: an attempt whose answer was lost is sent again on retry,
 * which Signal takes as the same reaction, the same deletion, or the same text again.
 * Errors map as for sends (rpc.ts toDeliveryError, checkSendResults).
 */
import { DeliveryError, deliveryTarget, toPlainText, type ActionRequest, type DeliveryContext } from "../../shared/runtime/channel/index.js";
import { isBot, quoteOf, targetOf, type BotIdentity, type SignalTarget } from "./inbound.js";
import { checkSendResults, toDeliveryError, type SendResult, type SignalRpc } from "./rpc.js";

/** what `act` does (the kit's `actions`; shared/runtime/channel-capabilities.ts lists them for the prompt) */
export const SIGNAL_ACTIONS = ["react", "edit", "delete"] as const;

/** The JSON-RPC parameters naming a conversation (`send`, `sendTyping`, `sendReaction`, `remoteDelete`). */
export const recipientParams = (t: SignalTarget) => (t.kind === "dm" ? { recipient: [t.recipient] } : { groupId: t.groupId });

/** author + timestamp of a platform message id; refused for good for anything else. */
function messageOf(id: string): { author: string; timestamp: number } {
  const q = quoteOf(id);
  if (!q) throw new DeliveryError(`${id} is not a Signal message id (<author>:<timestamp>)`, { permanent: true });
  return q;
}

export class SignalActions {
  constructor(private readonly rpc: SignalRpc, private readonly bot: BotIdentity) {}

  private isBot(author: string): boolean {
    return isBot(this.bot, author, author); // an author is a number or a uuid
  }

  /** The timestamp of one of the bot's own messages (Signal edits and deletes only those). */
  private ownTimestamp(id: string): number {
    const m = messageOf(id);
    if (!this.isBot(m.author)) throw new DeliveryError(`message ${id} is not the assistant's: only its own messages can be edited or deleted`, { permanent: true });
    return m.timestamp;
  }

  /** One JSON-RPC call whose result is a send's (`{ timestamp, results }`). */
  private async call(method: string, params: Record<string, unknown>, signal: AbortSignal): Promise<void> {
    let result: { results?: SendResult[] } | undefined;
    try {
      result = await this.rpc.call(method, params, signal);
    } catch (err) {
      throw toDeliveryError(err);
    }
    checkSendResults(result?.results);
  }

  async act(request: ActionRequest, ctx: DeliveryContext): Promise<void> {
    const target = deliveryTarget(targetOf, request.message.conversation);
    const to = recipientParams(target);
    if (request.op === "react") {
      const m = messageOf(request.platformMessageId);
      if (target.kind === "dm" && m.author.toLowerCase() !== target.recipient.toLowerCase() && !this.isBot(m.author)) {
        throw new DeliveryError(`message ${request.platformMessageId} is not in this conversation`, { permanent: true });
      }
      await this.call("sendReaction", { ...to, emoji: request.emoji, targetAuthor: m.author, targetTimestamp: m.timestamp, ...(request.remove ? { remove: true } : {}) }, ctx.signal);
      return;
    }
    if (request.op === "edit") {
      const editTimestamp = this.ownTimestamp(request.platformMessageId);
      const text = toPlainText(request.text).trim();
      if (!text) throw new DeliveryError("the new text is empty", { permanent: true });
      await this.call("send", { ...to, message: text, editTimestamp }, ctx.signal);
      return;
    }
    const timestamps = request.platformMessageIds.map((id) => this.ownTimestamp(id));
    for (const targetTimestamp of timestamps) await this.call("remoteDelete", { ...to, targetTimestamp }, ctx.signal);
  }
}
