/**
 * The `message` tool's react, edit and delete on Matrix (the kit's `act`, shared/runtime/channel/
 * actions.ts: edit and delete come only for the bot's own messages of the conversation, from the
 * sent-ledger). Each call is a PUT with a transaction id derived from the delivery id (send.ts
 * txnIdFor), so a retried action is the same event, never a second one:
 * - react: `m.reaction` with an `m.annotation` relation (`key`: the emoji) to the event, after
 *   checking the event is in the conversation's room (GET /rooms/{roomId}/event/{eventId}; 404:
 *   refused); a reaction the bot already has answers 400 M_DUPLICATE_ANNOTATION, taken as done.
 *   `remove` redacts the bot's reaction, found among the event's annotations (GET
 *   /_matrix/client/v1/rooms/{roomId}/relations/{eventId}/m.annotation/m.reaction; nothing is kept
 *   per reaction, so reactions made in another client are found too); none found: nothing to take
 *   back, done (a retry after a lost answer finds the reaction redacted);
 * - edit: an m.room.message `m.replace` of a text message or notice (send.ts editContent); a file
 *   message or a deleted one is refused;
 * - delete: a redaction of each part (PUT /rooms/{roomId}/redact/{eventId}/{txnId}).
 * Nothing goes into an encrypted room (encryption.ts), as for replies.
 */
import { DeliveryError, deliveryTarget, type ActionRequest, type DeliveryContext } from "../../shared/runtime/channel/index.js";
import { MatrixError, type MatrixApi } from "./api.js";
import type { EncryptionGate } from "./encryption.js";
import { isEventId, targetOf } from "./inbound.js";
import { editContent, reactionContent, toDeliveryError, txnIdFor } from "./send.js";
import { reactionContentSchema, roomEventSchema, type RoomEvent } from "./wire.js";

/** what `act` does (the kit's `actions`; shared/runtime/channel-capabilities.ts lists them for the prompt) */
export const MATRIX_ACTIONS = ["react", "edit", "delete"] as const;

/** relation pages read looking for the bot's reaction to take back */
const MAX_RELATION_PAGES = 10;

export class MatrixActions {
  constructor(private readonly api: MatrixApi, private readonly gate: EncryptionGate, private readonly userId: string) {}

  async act(request: ActionRequest, ctx: DeliveryContext): Promise<void> {
    const roomId = deliveryTarget(targetOf, request.message.conversation).roomId;
    const what = request.op === "react" ? "reaction" : request.op === "edit" ? "edit" : "deletion";
    await this.gate.assertSendable(roomId, what, ctx.signal);
    try {
      if (request.op === "react") await this.react(roomId, request.platformMessageId, request.emoji, request.remove, ctx);
      else if (request.op === "edit") await this.edit(roomId, request.platformMessageId, request.text, ctx);
      else {
        for (const [index, eventId] of request.platformMessageIds.entries()) await this.api.redact(roomId, eventId, txnIdFor(ctx.deliveryId, index), ctx.signal);
      }
    } catch (err) {
      throw toDeliveryError(err);
    }
  }

  /** The event `eventId` of `roomId`; refused for good when it is not an event of that room. */
  private async eventIn(roomId: string, eventId: string, signal: AbortSignal): Promise<RoomEvent> {
    if (!isEventId(eventId)) throw new DeliveryError(`${eventId} is not a Matrix event id ($…)`, { permanent: true });
    try {
      return await this.api.event(roomId, eventId, signal);
    } catch (err) {
      if (err instanceof MatrixError && err.status === 404) throw new DeliveryError(`message ${eventId} is not in this conversation (${roomId})`, { permanent: true, cause: err });
      throw err;
    }
  }

  private async react(roomId: string, eventId: string, emoji: string, remove: boolean, ctx: DeliveryContext): Promise<void> {
    await this.eventIn(roomId, eventId, ctx.signal);
    const txnId = txnIdFor(ctx.deliveryId, 0);
    if (!remove) {
      try {
        await this.api.sendEvent(roomId, "m.reaction", txnId, reactionContent(eventId, emoji), ctx.signal);
      } catch (err) {
        if (!(err instanceof MatrixError && err.errcode === "M_DUPLICATE_ANNOTATION")) throw err;
        ctx.log.debug({ eventId, emoji }, "the bot already has this reaction");
      }
      return;
    }
    const reactionId = await this.findReaction(roomId, eventId, emoji, ctx.signal);
    if (!reactionId) {
      ctx.log.debug({ eventId, emoji }, "no reaction of the bot to take back");
      return;
    }
    await this.api.redact(roomId, reactionId, txnId, ctx.signal);
  }

  /** The bot's (not redacted) reaction `emoji` to `eventId`, from the event's annotations. */
  private async findReaction(roomId: string, eventId: string, emoji: string, signal: AbortSignal): Promise<string | undefined> {
    let from: string | undefined;
    for (let page = 0; page < MAX_RELATION_PAGES; page++) {
      const got = await this.api.relations(roomId, eventId, "m.annotation", "m.reaction", { from, signal });
      for (const raw of got.chunk) {
        const ev = roomEventSchema.safeParse(raw);
        if (!ev.success || ev.data.sender !== this.userId || !ev.data.event_id || ev.data.unsigned?.redacted_because !== undefined) continue;
        if (reactionContentSchema.safeParse(ev.data.content).data?.["m.relates_to"].key === emoji) return ev.data.event_id;
      }
      if (!got.next_batch) return undefined;
      from = got.next_batch;
    }
    return undefined;
  }

  private async edit(roomId: string, eventId: string, text: string, ctx: DeliveryContext): Promise<void> {
    const original = await this.eventIn(roomId, eventId, ctx.signal);
    const msgtype = original.content.msgtype;
    if (original.type !== "m.room.message" || original.sender !== this.userId) throw new DeliveryError(`message ${eventId} is not a message of the assistant`, { permanent: true });
    if (msgtype === undefined) throw new DeliveryError(`message ${eventId} was deleted: it cannot be edited`, { permanent: true });
    if (msgtype !== "m.text" && msgtype !== "m.notice") throw new DeliveryError(`message ${eventId} is a file (${String(msgtype)}): only text can be edited`, { permanent: true });
    await this.api.send(roomId, txnIdFor(ctx.deliveryId, 0), editContent(eventId, text, msgtype === "m.notice"), ctx.signal);
  }
}
