/**
 * channel-signal: a Signal account through signal-cli's HTTP daemon <-> the bus, on the channel kit.
 * In: the daemon's server-sent events (events.ts, reconnecting and resuming by event id) ->
 * inbound.ts -> the message's files fetched with getAttachment into the media store (files.ts) ->
 * LURK_INBOUND; a message is recorded as seen (seen.ts) once stored, so an event replayed after
 * a reconnect or a signal-cli restart never runs twice. While its run writes, "typing…" is shown
 * (sendTyping, renewed every 10 s, stopped at the end); a read receipt is sent when asked.
 * Out: the kit's durable deliveries through JSON-RPC `send`, markdown as plain text, chunked at
 * 2000 characters; the first part of a reply quotes the message it answers (quoteTimestamp +
 * quoteAuthor); each file is its own message (a data URI). The `message` tool's react, edit and
 * delete: actions.ts (sendReaction, send with editTimestamp, remoteDelete). Users' reactions
 * (dataMessage.reaction) go to the kit's publishReaction (reactions.ts). signal-cli's HTTP has
 * no authentication, so a url off this machine is refused unless `allowRemote`.
 */
import { join } from "node:path";
import { LurkError } from "../../shared/contract/index.js";
import { defineChannelActor, deliveryTarget, isUnstorable, publishWatched, toPlainText, type ChannelContext, type InboundInput, type OutboundPart } from "../../shared/runtime/channel/index.js";
import { RunTyping } from "../../shared/runtime/channel/run-typing.js";
import { signalChannelSchema, type SignalChannelConfig } from "../../shared/runtime/config-channels.js";
import { isLoopbackUrl } from "../../shared/runtime/loopback-host.js";
import { recipientParams, SIGNAL_ACTIONS, SignalActions } from "./actions.js";
import { runEventStream } from "./events.js";
import { outboundAttachment, storeMessageFiles } from "./files.js";
import { platformMessageId, quoteOf, receiveToInbound, targetOf, type BotIdentity, type SignalReceive, type SignalTarget } from "./inbound.js";
import { checkSendResults, SignalRpc, toDeliveryError, type SendResult } from "./rpc.js";
import { takeReaction } from "./reactions.js";
import { SeenMessages } from "./seen.js";

export const SIGNAL_TEXT_LIMIT = 2000;
/** Signal shows "typing…" for 15 s: renewed well before */
const TYPING_RENEW_MS = 10_000;
/** a run followed for its typing indicator at most this long */
const WATCH_MAX_MS = 30 * 60_000;

type Ctx = ChannelContext<SignalChannelConfig>;

/** The account's uuid (best effort: mentions by uuid then count too); listAccounts, else getUserStatus. */
async function botIdentity(rpc: SignalRpc, number: string, ctx: Ctx): Promise<BotIdentity> {
  try {
    const accounts = await rpc.call<{ number?: string; uuid?: string }[]>("listAccounts");
    const own = Array.isArray(accounts) ? accounts.find((a) => a.number === number) : undefined;
    if (own?.uuid) return { number, uuid: own.uuid };
  } catch (err) {
    ctx.log.debug({ err }, "listAccounts failed");
  }
  try {
    const status = await rpc.call<{ number?: string; uuid?: string }[]>("getUserStatus", { recipient: [number] });
    const own = Array.isArray(status) ? status.find((s) => s.number === number) : undefined;
    if (own?.uuid) return { number, uuid: own.uuid };
  } catch (err) {
    ctx.log.debug({ err }, "getUserStatus failed");
  }
  return { number };
}

/** Handles one receive event: stores the message (once) with its files. Throws to receive it again. */
async function onReceive(ctx: Ctx, rpc: SignalRpc, bot: BotIdentity, seen: SeenMessages, typing: RunTyping<SignalTarget>, data: unknown): Promise<void> {
  if (await takeReaction(ctx, seen, bot, data)) return;
  const mapped = receiveToInbound(data as SignalReceive, bot);
  if (!mapped) return;
  const { inbound, files } = mapped;
  if (seen.has(inbound.id)) {
    ctx.log.info({ messageId: inbound.id }, "signal message already stored: a replayed event, skipped");
    return;
  }
  const message: InboundInput = files.length ? { ...inbound, attachments: await storeMessageFiles(ctx.rt.media, rpc, files, ctx.log) } : inbound;
  const watch = ctx.settings.typingIndicator && message.mentioned ? typing.watch(ctx.runIdFor(message.id), targetOf(message.conversation)) : undefined;
  try {
    await publishWatched(ctx, message, watch, WATCH_MAX_MS);
  } catch (err) {
    if (isUnstorable(err)) {
      ctx.log.warn({ err, messageId: message.id }, "a Signal message cannot be stored; skipped");
      await seen.add(message.id);
      return;
    }
    throw err;
  }
  await seen.add(message.id);
  if (ctx.settings.sendReadReceipts) {
    await rpc.call("sendReceipt", { recipient: [mapped.sender], targetTimestamp: [mapped.timestamp], type: "read" })
      .catch((err) => ctx.log.debug({ error: (err as Error).message }, "sendReceipt failed"));
  }
}

/** The quote of a part: a reply tag's message, else (first part of a reply) the message it answers. */
function quoteFor(part: OutboundPart): { quoteTimestamp: number; quoteAuthor: string } | undefined {
  const { kind, replyTo } = part.message;
  const id = part.replyToMessageId ?? (part.index === 0 && (kind === "reply" || kind === "error") ? replyTo.at(-1) : undefined);
  const q = quoteOf(id);
  return q ? { quoteTimestamp: q.timestamp, quoteAuthor: q.author } : undefined;
}

export const definition = defineChannelActor({
  channel: "signal",
  description: "Signal (signal-cli HTTP daemon: JSON-RPC + server-sent events) <-> bus",
  schema: signalChannelSchema,
  metadata: (s) => ({ url: new URL(s.url).origin }),
  async start(ctx) {
    const { settings, log } = ctx;
    if (!settings.account) {
      throw new LurkError("CONFIG_INVALID", "channels.signal.account is not set: give the bot's number in E.164 form (e.g. \"+15551234567\"), the account signal-cli registered or linked");
    }
    if (!isLoopbackUrl(settings.url) && !settings.allowRemote) {
      throw new LurkError("CONFIG_INVALID", `channels.signal.url (${new URL(settings.url).origin}) is not on this machine: signal-cli's HTTP daemon has no authentication, so whoever reaches it reads and sends as ${settings.account}. Run the daemon on 127.0.0.1 (\`signal-cli -a ${settings.account} daemon --http 127.0.0.1:8080\`), or set channels.signal.allowRemote to true if the network path is private (an SSH tunnel, WireGuard)`);
    }
    const rpc = new SignalRpc(settings.url, settings.account, settings.requestTimeoutMs);
    if (!await rpc.check()) {
      log.warn({ url: settings.url }, "signal-cli does not answer yet (GET /api/v1/check); the event stream keeps trying");
    }
    const bot = await botIdentity(rpc, settings.account, ctx);
    const seen = new SeenMessages(join(ctx.dataDir, "seen"));
    const typing = new RunTyping<SignalTarget>(ctx.watchRun, TYPING_RENEW_MS, (target, on) => {
      rpc.call("sendTyping", { ...recipientParams(target), ...(on ? {} : { stop: true }) })
        .catch((err) => log.debug({ error: (err as Error).message }, "sendTyping failed"));
    });
    const stopping = new AbortController();
    const receiving = runEventStream({
      url: settings.url, account: settings.account, log, signal: stopping.signal,
      // a daemon that was down at start: learn the account's uuid once it answers
      onConnect: () => {
        if (!bot.uuid) void botIdentity(rpc, bot.number, ctx).then((found) => { if (found.uuid) bot.uuid = found.uuid; });
      },
      onEvent: async (data) => {
        try {
          await onReceive(ctx, rpc, bot, seen, typing, data);
        } catch (err) {
          if (err instanceof Error && /is not a Signal conversation/.test(err.message)) {
            log.warn({ error: err.message }, "a Signal message with an unusable sender or group id: skipped");
            return;
          }
          throw err;
        }
      },
    });
    log.info({ url: new URL(settings.url).origin, uuid: bot.uuid ?? null }, "signal channel receiving");

    const send = async (target: SignalTarget, params: Record<string, unknown>, signal?: AbortSignal): Promise<string> => {
      let result: { timestamp?: number; results?: SendResult[] } | undefined;
      try {
        result = await rpc.call("send", { ...recipientParams(target), ...params }, signal);
      } catch (err) {
        throw toDeliveryError(err);
      }
      checkSendResults(result?.results);
      return typeof result?.timestamp === "number" ? platformMessageId(settings.account!, result.timestamp) : "";
    };

    const actions = new SignalActions(rpc, bot);
    return {
      textLimit: SIGNAL_TEXT_LIMIT,
      actions: SIGNAL_ACTIONS,
      act: (request, dctx) => actions.act(request, dctx),
      async deliver(part, dctx) {
        const target = deliveryTarget(targetOf, part.message.conversation);
        const quote = quoteFor(part);
        const file = part.attachments[0];
        if (file) {
          const out = await outboundAttachment(ctx.rt.media, file, dctx.log);
          const params = "uri" in out ? { message: "", attachments: [out.uri] } : { message: out.text };
          return { platformMessageId: await send(target, { ...params, ...(quote ?? {}) }, dctx.signal) };
        }
        const text = toPlainText(part.text).trim();
        if (!text) return {};
        return { platformMessageId: await send(target, { message: text, ...(quote ?? {}) }, dctx.signal) };
      },
      async typing(msg) {
        await rpc.call("sendTyping", recipientParams(targetOf(msg.conversation))).catch((err) => {
          throw toDeliveryError(err);
        });
      },
      async stop() {
        stopping.abort();
        await receiving;
        typing.stopAll();
        await seen.close();
      },
    };
  },
});
