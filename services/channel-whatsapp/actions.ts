/**
 * The `message` tool's actions on WhatsApp (the kit's `act`, shared/runtime/channel/actions.ts):
 * react only, as a message `{ type: "reaction", reaction: { message_id, emoji } }` to the
 * conversation's user (an empty emoji takes the reaction back). The Cloud API can neither edit
 * nor delete a message: the kit answers those "not supported by whatsapp". A message of another
 * chat (the channel remembers each user message's sender, seen.ts) is refused; an id that is no
 * `wamid.…` is refused; the Cloud API refuses what it does not know.
 */
import { DeliveryError, deliveryTarget, type ActionRequest, type DeliveryContext } from "../../shared/runtime/channel/index.js";
import { toDeliveryError, type GraphApi } from "./graph.js";
import { isWamid, targetOf } from "./inbound.js";
import type { SeenStore } from "./seen.js";

/** what `act` does (shared/runtime/channel-capabilities.ts lists them for the prompt) */
export const WHATSAPP_ACTIONS = ["react"] as const;

export async function whatsappAct(api: GraphApi, seen: SeenStore, request: ActionRequest, ctx: DeliveryContext): Promise<void> {
  if (request.op !== "react") throw new DeliveryError(`${request.op} is not supported by whatsapp`, { permanent: true });
  const to = deliveryTarget(targetOf, request.message.conversation);
  const id = request.platformMessageId;
  if (!isWamid(id)) throw new DeliveryError(`${id} is not a WhatsApp message id (wamid.…)`, { permanent: true });
  const from = seen.get(`m:${id}`)?.from;
  if (from && from !== to) throw new DeliveryError(`message ${id} is not in this conversation`, { permanent: true });
  try {
    await api.send(to, { type: "reaction", reaction: { message_id: id, emoji: request.remove ? "" : request.emoji } }, ctx.signal);
  } catch (err) {
    throw toDeliveryError(err);
  }
}
