/**
 * channel-matrix: a Matrix account (Client-Server API v3 over fetch, api.ts) <-> the bus, on the
 * channel kit. In: the /sync long poll (sync.ts), its `next_batch` kept in LMDB only after the
 * batch's messages are stored, so a restart neither replays nor loses one; each batch's rooms,
 * invites and messages (batch.ts -> inbound.ts, files into the media store) -> LURK_INBOUND.
 * Out: the kit's durable deliveries, chunked at 8000 characters, as m.text with plain `body` and
 * HTML `formatted_body`, the first part a reply (m.in_reply_to) to the message answered; each
 * attachment uploaded and sent as its own m.image / m.audio / m.video / m.file. Every PUT carries
 * a transaction id derived from the delivery id and the part (send.ts), so a retried delivery is
 * never posted twice. While a run writes, the room shows the bot typing. Rooms with more than two
 * members are groups: the router's mention gating (routing.groups) applies there. A thread
 * (m.thread) is a conversation of its own, answered in the thread (`threads: "thread"`, inbound.ts,
 * send.ts). The `message` tool's react, edit and delete: actions.ts. Users' reactions (m.reaction,
 * and their redaction as "removed") go to the kit's publishReaction (reactions.ts).
 * End-to-end encrypted rooms are not supported: one notice per room says so (batch.ts), and
 * nothing else is ever sent there: a delivery or typing into a room known (or found, from its
 * state) to be encrypted fails for good, saying why (encryption.ts).
 */
import { join } from "node:path";
import { LurkError } from "../../shared/contract/index.js";
import { defineChannelActor, deliveryTarget } from "../../shared/runtime/channel/index.js";
import { RunTyping } from "../../shared/runtime/channel/run-typing.js";
import { matrixChannelSchema } from "../../shared/runtime/config-channels.js";
import { registerSecret } from "../../shared/runtime/logger.js";
import { MatrixApi } from "./api.js";
import { BatchHandler } from "./batch.js";
import { EncryptionGate } from "./encryption.js";
import { sendAttachment } from "./files.js";
import { MATRIX_ACTIONS, MatrixActions } from "./actions.js";
import { isEventId, roomOf, targetOf, type BotIdentity } from "./inbound.js";
import { ReactionLog } from "./reactions.js";
import { MatrixState } from "./rooms.js";
import { textContent, toDeliveryError, txnIdFor, type Relation } from "./send.js";
import { SyncLoop } from "./sync.js";

export const MATRIX_TEXT_LIMIT = 8000;
/** how long the homeserver shows "typing…" (renewed every TYPING_RENEW_MS while a run writes) */
const TYPING_TIMEOUT_MS = 30_000;
const TYPING_RENEW_MS = 20_000;

export const definition = defineChannelActor({
  channel: "matrix",
  description: "Matrix account (Client-Server API v3 /sync + send) <-> bus",
  schema: matrixChannelSchema,
  metadata: (s) => ({ ...(s.homeserverUrl ? { homeserver: new URL(s.homeserverUrl).origin } : {}), ...(s.userId ? { userId: s.userId } : {}), autoJoin: s.autoJoin }),
  async start(ctx) {
    const { settings, log } = ctx;
    const { homeserverUrl, userId, accessToken } = settings;
    if (!homeserverUrl || !userId) throw new LurkError("CONFIG_INVALID", "channels.matrix needs homeserverUrl and userId (e.g. https://matrix.example.org and @lurkbot:example.org)");
    if (!accessToken) {
      throw new LurkError("CONFIG_INVALID", "the Matrix channel needs the bot account's access token: set LURKBOT_MATRIX_ACCESS_TOKEN (or store it with `npx lurkbot onboard`, or channels.matrix.accessToken); services/channel-matrix/README.md shows how to get one");
    }
    registerSecret(accessToken);
    const api = new MatrixApi(homeserverUrl, accessToken);
    let who;
    try {
      who = await api.whoami();
    } catch (err) {
      throw new LurkError("CONFIG_INVALID", `the homeserver did not accept the access token (whoami: ${(err as Error).message}); log in again and set LURKBOT_MATRIX_ACCESS_TOKEN`, { cause: err });
    }
    if (who.user_id !== userId) throw new LurkError("CONFIG_INVALID", `the access token belongs to ${who.user_id}, not to channels.matrix.userId ${userId}`);
    if (settings.deviceId && who.device_id && who.device_id !== settings.deviceId) log.warn({ configured: settings.deviceId, token: who.device_id }, "the access token is of another device than channels.matrix.deviceId");
    const displayName = await api.displayName(userId).catch(() => undefined);
    const bot: BotIdentity = { userId, ...(displayName ? { displayName } : {}) };
    const state = new MatrixState(join(ctx.dataDir, "sync"));
    // never into a room that turned encrypted meanwhile; a failed typing call is only logged
    const typing = new RunTyping<string>(ctx.watchRun, TYPING_RENEW_MS, (roomId, on) => {
      if (state.room(roomId).encrypted === true) return;
      api.typing(roomId, userId, on, TYPING_TIMEOUT_MS).catch((err) => log.debug({ err: (err as Error).message, roomId }, "typing notification failed"));
    });
    const gate = new EncryptionGate(api, state);
    const reactionLog = new ReactionLog(join(ctx.dataDir, "reactions"));
    const batches = new BatchHandler(ctx, api, state, bot, typing, gate, reactionLog);
    const actions = new MatrixActions(api, gate, userId);
    const loop = new SyncLoop({ api, state, log, timeoutMs: settings.syncTimeoutMs, handle: (batch, since) => batches.handle(batch, since) });
    loop.start();
    log.info({ homeserver: new URL(homeserverUrl).origin, userId, displayName, resumed: state.since !== undefined }, state.since ? "matrix channel syncing (resumed)" : "matrix channel syncing (first start: history skipped)");

    return {
      textLimit: MATRIX_TEXT_LIMIT,
      actions: MATRIX_ACTIONS,
      act: (request, dctx) => actions.act(request, dctx),
      async deliver(part, dctx) {
        const msg = part.message;
        const target = deliveryTarget(targetOf, msg.conversation);
        const { roomId, threadRoot } = target;
        // the first part answers the message (a reply tag's target, else the last message the run answers)
        const answered = part.replyToMessageId ?? (msg.kind === "reply" ? msg.replyTo.at(-1) : undefined);
        const replyTo = part.index === 0 && answered && isEventId(answered) ? answered : undefined;
        // in a thread every part goes into it; the first answers the message (a real reply only when a tag asked)
        const relation: Relation = { replyTo, ...(threadRoot ? { thread: threadRoot, realReply: part.index === 0 && part.replyToMessageId !== undefined } : {}) };
        await gate.assertSendable(roomId, part.attachments.length ? "file" : "reply", dctx.signal);
        const txnId = txnIdFor(dctx.deliveryId, part.index);
        const file = part.attachments[0];
        if (file) return { platformMessageId: await sendAttachment(ctx, api, roomId, file, txnId, relation, dctx.signal) };
        try {
          const eventId = await api.send(roomId, txnId, textContent(part.text, { ...relation, notice: msg.kind === "notice" }), dctx.signal);
          return { platformMessageId: eventId };
        } catch (err) {
          throw toDeliveryError(err);
        }
      },
      async typing(msg) {
        const roomId = roomOf(msg.conversation);
        await gate.assertSendable(roomId, "typing notification");
        await api.typing(roomId, userId, true).catch((err) => {
          throw toDeliveryError(err);
        });
      },
      async stop() {
        await loop.stop();
        typing.stopAll();
        await state.close();
        await reactionLog.close();
      },
    };
  },
});
