/**
 * channel-whatsapp: a WhatsApp Business number through Meta's WhatsApp Business Cloud API <-> the
 * bus, on the channel kit. DMs only.
 * In: Meta POSTs the `messages` webhook (webhook.ts: signature checked before parsing) ->
 * inbound.ts -> the message's media downloaded by id into the media store (files.ts) ->
 * LURK_INBOUND (id: the `wamid`), all before the 200; a message is recorded as seen (seen.ts)
 * once stored, so Meta's redeliveries (days later too) never run twice. Users' reactions go to
 * the kit's publishReaction (reactions.ts); `statuses[]` are logged (a failed one as a warning
 * naming the cause). While a message's run writes, the message is marked read with a typing
 * indicator (renewed every 20 s: WhatsApp drops it after 25 s or at the reply).
 * Out: the kit's durable deliveries through POST `/<phoneNumberId>/messages` (graph.ts),
 * markdown as WhatsApp formatting, chunked at 4096 characters; a reply tag quotes the message
 * (`context.message_id`); each file is uploaded, then sent by its media id (files.ts). The
 * `message` tool's react (actions.ts); edit and delete: not supported by the Cloud API.
 * A missing phoneNumberId, accessToken, appSecret or verifyToken refuses the start.
 */
import { join } from "node:path";
import { LurkError } from "../../shared/contract/index.js";
import { defineChannelActor, deliveryTarget, isUnstorable, publishWatched, toWhatsAppText, type ChannelContext, type InboundInput } from "../../shared/runtime/channel/index.js";
import { RunTyping } from "../../shared/runtime/channel/run-typing.js";
import { whatsappChannelSchema, type WhatsAppChannelConfig } from "../../shared/runtime/config-channels.js";
import { registerSecret } from "../../shared/runtime/logger.js";
import { WHATSAPP_ACTIONS, whatsappAct } from "./actions.js";
import { sendAttachment, storeMessageFiles } from "./files.js";
import { GraphApi, toDeliveryError } from "./graph.js";
import { isWamid, takeMessage, targetOf, valuesOf, type Taken, type WaPayload, type WaValue } from "./inbound.js";
import { takeReaction } from "./reactions.js";
import { SeenStore } from "./seen.js";
import { startWebhookServer } from "./webhook.js";

export const WHATSAPP_TEXT_LIMIT = 4096;
/** WhatsApp shows "typing…" for 25 s: renewed before */
const TYPING_RENEW_MS = 20_000;
/** a run followed for its typing indicator at most this long */
const WATCH_MAX_MS = 30 * 60_000;

type Ctx = ChannelContext<WhatsAppChannelConfig>;

const REQUIRED: { field: "phoneNumberId" | "accessToken" | "appSecret" | "verifyToken"; how: string }[] = [
  { field: "phoneNumberId", how: "the business number's Phone number ID (your Meta app > WhatsApp > API Setup), digits only" },
  { field: "accessToken", how: "set WHATSAPP_ACCESS_TOKEN (or channels.whatsapp.accessToken): a permanent System User token with whatsapp_business_messaging" },
  { field: "appSecret", how: "set WHATSAPP_APP_SECRET (or channels.whatsapp.appSecret) to your Meta app's App secret (App settings > Basic): without it anyone who finds the webhook URL could send the bot forged messages" },
  { field: "verifyToken", how: "set WHATSAPP_VERIFY_TOKEN (or channels.whatsapp.verifyToken) to a random string of 16+ characters (`openssl rand -hex 24`) and type the same into the app's webhook settings" },
];

/** Refuses a start without what the channel cannot run safely without. */
function checkRequired(s: WhatsAppChannelConfig): void {
  const missing = REQUIRED.filter((r) => !s[r.field]);
  if (missing.length === 0) return;
  throw new LurkError("CONFIG_INVALID", `the WhatsApp channel does not start: ${missing.map((r) => `channels.whatsapp.${r.field} is not set: ${r.how}`).join("; ")}`);
}

/** Logs what became of the business's own messages: a failure as a warning naming its cause. */
function logStatuses(ctx: Ctx, value: WaValue): void {
  for (const st of Array.isArray(value.statuses) ? value.statuses : []) {
    if (st?.status !== "failed") {
      ctx.log.debug({ messageId: st?.id, status: st?.status }, "whatsapp status");
      continue;
    }
    const e = st.errors?.[0];
    const code = typeof e?.code === "number" ? e.code : undefined;
    const cause = code === 131047
      ? "more than 24 hours since the user's last message: WhatsApp only takes a free-form reply within 24 hours of it"
      : `${typeof e?.title === "string" ? e.title : "failed"}${typeof e?.message === "string" ? `: ${e.message}` : ""}`;
    ctx.log.warn({ messageId: st.id, code, cause }, "WhatsApp reports a message the channel sent as failed");
  }
  for (const e of Array.isArray(value.errors) ? value.errors : []) ctx.log.warn({ code: e?.code, title: typeof e?.title === "string" ? e.title.slice(0, 200) : undefined }, "WhatsApp reports an error");
}

async function takeUserMessage(ctx: Ctx, api: GraphApi, seen: SeenStore, typing: RunTyping<string>, taken: Extract<Taken, { kind: "message" }>): Promise<void> {
  const { inbound, files, from } = taken;
  const key = `m:${inbound.id}`;
  if (seen.has(key)) {
    ctx.log.info({ messageId: inbound.id }, "whatsapp message already stored: a redelivery, skipped");
    return;
  }
  const message: InboundInput = files.length ? { ...inbound, attachments: await storeMessageFiles(ctx.rt.media, api, files, ctx.log) } : inbound;
  const watch = ctx.settings.typingIndicator ? typing.watch(ctx.runIdFor(message.id), message.id) : undefined;
  try {
    await publishWatched(ctx, message, watch, WATCH_MAX_MS);
  } catch (err) {
    if (!isUnstorable(err)) throw err;
    ctx.log.warn({ err, messageId: message.id }, "a WhatsApp message cannot be stored; skipped");
  }
  await seen.add(key, { from });
}

/** Takes every message of a payload, in order; throws (a 500: Meta delivers it again) when one cannot be stored. */
async function takePayload(ctx: Ctx, api: GraphApi, seen: SeenStore, typing: RunTyping<string>, payload: WaPayload): Promise<void> {
  for (const value of valuesOf(payload)) {
    const numberId = value.metadata?.phone_number_id;
    if (numberId !== undefined && numberId !== ctx.settings.phoneNumberId) {
      ctx.log.info({ phoneNumberId: typeof numberId === "string" ? numberId.slice(0, 40) : null }, "a WhatsApp webhook for another phone number of the app: skipped");
      continue;
    }
    logStatuses(ctx, value);
    for (const m of Array.isArray(value.messages) ? value.messages : []) {
      const taken = takeMessage(m, value);
      if (taken.kind === "skipped") ctx.log.info({ messageId: taken.id, why: taken.why }, "a WhatsApp message not taken");
      else if (taken.kind === "reaction") await takeReaction(ctx, seen, taken);
      else await takeUserMessage(ctx, api, seen, typing, taken);
    }
  }
}

export const definition = defineChannelActor({
  channel: "whatsapp",
  description: "WhatsApp Business (Meta's Cloud API: signed webhook in, Graph API out) <-> bus",
  schema: whatsappChannelSchema,
  metadata: (s) => ({ apiBaseUrl: new URL(s.apiBaseUrl).origin, apiVersion: s.apiVersion, webhook: `${s.host}:${s.port}${s.path}` }),
  async start(ctx) {
    const { settings, log } = ctx;
    checkRequired(settings);
    const phoneNumberId = settings.phoneNumberId!;
    for (const secret of [settings.accessToken!, settings.appSecret!, settings.verifyToken!]) registerSecret(secret);
    const api = new GraphApi({ baseUrl: settings.apiBaseUrl, version: settings.apiVersion, phoneNumberId, token: settings.accessToken!, timeoutMs: settings.requestTimeoutMs });
    const seen = new SeenStore(join(ctx.dataDir, "seen"));
    const typing = new RunTyping<string>(ctx.watchRun, TYPING_RENEW_MS, (messageId, on) => {
      // the indicator ends by itself at the reply or after 25 s: nothing to send to stop it
      if (on) api.typing(messageId).catch((err) => log.debug({ error: (err as Error).message }, "typing indicator failed"));
    });
    let server;
    try {
      server = await startWebhookServer({
        host: settings.host, port: settings.port, path: settings.path, appSecret: settings.appSecret!, verifyToken: settings.verifyToken!,
        maxBodyBytes: settings.maxBodyBytes, log, handle: (payload) => takePayload(ctx, api, seen, typing, payload),
      });
    } catch (err) {
      await seen.close();
      throw err;
    }
    log.info({ host: settings.host, port: server.port, path: settings.path, apiVersion: settings.apiVersion }, "whatsapp channel listening for Meta's webhook");

    const sendText = (to: string, text: string, context: Record<string, unknown>, signal?: AbortSignal) =>
      api.send(to, { type: "text", text: { body: text, preview_url: false }, ...context }, signal).catch((err) => {
        throw toDeliveryError(err);
      });

    return {
      textLimit: WHATSAPP_TEXT_LIMIT,
      actions: WHATSAPP_ACTIONS,
      act: (request, dctx) => whatsappAct(api, seen, request, dctx),
      async deliver(part, dctx) {
        const to = deliveryTarget(targetOf, part.message.conversation);
        const context = isWamid(part.replyToMessageId) ? { context: { message_id: part.replyToMessageId } } : {};
        const file = part.attachments[0];
        if (file) {
          const id = await sendAttachment(api, ctx.rt.media, dctx.log, to, file, (text) => sendText(to, text, context, dctx.signal), context, dctx.signal);
          return { platformMessageId: id };
        }
        const text = toWhatsAppText(part.text).trim();
        if (!text) return {};
        return { platformMessageId: await sendText(to, text, context, dctx.signal) };
      },
      async stop() {
        typing.stopAll();
        await server.close();
        await seen.close();
      },
    };
  },
});
