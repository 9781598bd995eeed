/**
 * channel-slack: a Slack app <-> the bus, on the channel kit. In: Socket Mode (@slack/socket-mode)
 * envelopes -> inbound.ts -> LURK_INBOUND; each envelope is acknowledged only once the message
 * is stored (unacknowledged envelopes are redelivered by Slack, and the platform message id
 * `<channel>:<ts>` makes a redelivery count once). Approval buttons come back as `interactive`
 * envelopes -> `/approve ID` / `/deny ID` from the clicking user. Out: the kit's durable
 * deliveries through the Web API (@slack/web-api), chunked at 3900 characters, Slack mrkdwn;
 * while a run writes, a draft message is edited (chat.update) and becomes the reply (its ts kept
 * across restarts), or with `streaming: "block"` finished paragraphs are posted as they finish. Channels
 * and threads are gated by mention in the router. Files (files.ts): a message's files are stored
 * in the media store before it is published (and so before the ACK: a redelivery that arrives
 * while they download waits for the same work); an attachment part of a delivery is uploaded.
 * Tables go out as code blocks; the message tool's react/edit/delete: actions.ts. Users'
 * reactions (reaction_added/removed events, reactions.ts) go to the kit's publishReaction.
 */
import { SocketModeClient } from "@slack/socket-mode";
import { LogLevel, WebClient, type Logger as SlackLogger } from "@slack/web-api";
import { LurkError } from "../../shared/contract/index.js";
import { channelDrafts, defineChannelActor, deliveryTarget, DraftMessages, isUnstorable, publishWithDraft, toSlackMrkdwn, type ChannelContext, type InboundInput } from "../../shared/runtime/channel/index.js";
import { slackChannelSchema, streamingMode, type SlackChannelConfig } from "../../shared/runtime/config-channels.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { sendAttachment, storeFiles } from "./files.js";
import {
  actionToInbound, eventToInbound, platformMessageId, slashToInbound, targetOf, type BotIdentity, type SlackBlockActions, type SlackEvent, type SlackSlashCommand, type SlackTarget,
} from "./inbound.js";
import { approvalBlocks, SlackApi } from "./send.js";
import { SLACK_ACTIONS, slackAct } from "./actions.js";
import { isReactionEvent, reactionEvent, type SlackReactionEvent } from "./reactions.js";

export const SLACK_TEXT_LIMIT = 3900;

/** The Slack SDKs' logger interface on pino (their info chatter goes to debug). */
function slackLogger(log: Logger): SlackLogger {
  return {
    debug: (...m: unknown[]) => log.debug({ slack: m.map(String).join(" ") }, "slack sdk"),
    info: (...m: unknown[]) => log.debug({ slack: m.map(String).join(" ") }, "slack sdk"),
    warn: (...m: unknown[]) => log.warn({ slack: m.map(String).join(" ") }, "slack sdk"),
    error: (...m: unknown[]) => log.error({ slack: m.map(String).join(" ") }, "slack sdk"),
    setLevel: () => undefined,
    getLevel: () => LogLevel.INFO,
    setName: () => undefined,
  };
}

/**
 * Persists one message (streaming its run as the settings ask, unless `stream` is false: a button
 * click starts no run); returns false if it can never be stored.
 */
async function publish(ctx: ChannelContext<SlackChannelConfig>, drafts: DraftMessages<SlackTarget> | undefined, inbound: InboundInput, stream = true): Promise<boolean> {
  try {
    await (stream ? publishWithDraft({ ctx, drafts, target: targetOf(inbound.conversation) }, inbound) : ctx.publishInbound(inbound));
    return true;
  } catch (err) {
    if (isUnstorable(err)) {
      ctx.log.warn({ err, messageId: inbound.id }, "a Slack message cannot be stored; acknowledged and dropped");
      return false;
    }
    throw err;
  }
}

interface Envelope { ack: (response?: Record<string, unknown>) => Promise<void>; type: string; body: unknown; envelope_id?: string; retry_num?: number }

/** Messages being stored (their files downloading), by platform message id. */
const storing = new Map<string, Promise<unknown>>();

/**
 * Stores a message event with its files; a redelivery of a message still being stored (Slack
 * redelivers what is not acknowledged within 3 s) waits for that work instead of downloading again.
 */
function storeEvent(ctx: ChannelContext<SlackChannelConfig>, drafts: DraftMessages<SlackTarget> | undefined, event: SlackEvent, inbound: InboundInput): Promise<unknown> {
  let work = storing.get(inbound.id);
  if (!work) {
    work = (async () => {
      if (event.files?.length) inbound.attachments = await storeFiles(ctx, event.files);
      return publish(ctx, drafts, inbound);
    })().finally(() => storing.delete(inbound.id));
    storing.set(inbound.id, work);
  }
  return work;
}

/** One Socket Mode envelope: stored first, acknowledged after (an error leaves it unacknowledged). */
async function onEnvelope(ctx: ChannelContext<SlackChannelConfig>, api: SlackApi, bot: BotIdentity, drafts: DraftMessages<SlackTarget> | undefined, env: Envelope): Promise<void> {
  if (env.type === "events_api") {
    const body = env.body as { event?: SlackEvent & SlackReactionEvent; event_id?: unknown } | undefined;
    if (body?.event && isReactionEvent(body.event.type)) {
      // stored (or filtered out by the kit) before the ACK; a malformed one is acknowledged and dropped
      const reaction = reactionEvent(body.event, body.event_id, bot);
      if (reaction) await ctx.publishReaction(reaction);
      else ctx.log.warn({ envelopeId: env.envelope_id }, "a Slack reaction event without its user, reaction or message; dropped");
      await env.ack();
      return;
    }
    const event = body?.event;
    const inbound = event ? eventToInbound(event, bot) : undefined;
    if (event && inbound) await storeEvent(ctx, drafts, event, inbound);
    await env.ack();
    return;
  }
  if (env.type === "slash_commands") {
    // stored first; the ACK (empty: the answer comes as a message) within Slack's 3 s
    const inbound = slashToInbound(env.body as SlackSlashCommand, ctx.settings.slashCommand);
    if (inbound) await publish(ctx, drafts, inbound);
    await env.ack();
    return;
  }
  if (env.type === "interactive") {
    const body = env.body as SlackBlockActions;
    const inbound = actionToInbound(body);
    const stored = inbound ? await publish(ctx, drafts, inbound, false) : false;
    await env.ack();
    const channel = body.channel?.id ?? body.container?.channel_id;
    const ts = body.message?.ts ?? body.container?.message_ts;
    if (inbound && stored && channel && ts) {
      // the buttons are replaced by who decided (best effort: the decision is already stored)
      const note = `${inbound.text.startsWith("/approve") ? "Approved" : "Denied"} by <@${inbound.sender.id}>`;
      await api.update(channel, ts, `${body.message?.text ?? ""}\n_${note}_`.trim(), []).catch((err) => ctx.log.debug({ err }, "could not update the approval message"));
    }
    return;
  }
  await env.ack();
}

export const definition = defineChannelActor({
  channel: "slack",
  description: "Slack app (Socket Mode + Web API) <-> bus",
  schema: slackChannelSchema,
  metadata: (s) => ({ apiUrl: new URL(s.apiUrl).origin }),
  async start(ctx) {
    const { settings, log } = ctx;
    const missing = [!settings.botToken && "SLACK_BOT_TOKEN (channels.slack.botToken, xoxb-...)", !settings.appToken && "SLACK_APP_TOKEN (channels.slack.appToken, xapp-... with connections:write)"].filter(Boolean);
    if (missing.length > 0 || !settings.botToken || !settings.appToken) {
      throw new LurkError("CONFIG_INVALID", `the Slack channel needs ${missing.join(" and ")}: create a Slack app with Socket Mode enabled, install it to the workspace, and set the tokens in the environment or config.json`);
    }
    const slackLog = slackLogger(log);
    const web = new WebClient(settings.botToken, { slackApiUrl: settings.apiUrl, rejectRateLimitedCalls: true, retryConfig: { retries: 0 }, logger: slackLog });
    let auth;
    try {
      auth = await web.auth.test();
    } catch (err) {
      throw new LurkError("CONFIG_INVALID", `Slack refused SLACK_BOT_TOKEN (auth.test: ${(err as { data?: { error?: string } }).data?.error ?? (err as Error).message}); check the Bot User OAuth Token`, { cause: err });
    }
    if (!auth.user_id) throw new LurkError("CONFIG_INVALID", "auth.test returned no bot user id; check SLACK_BOT_TOKEN");
    const bot: BotIdentity = { userId: auth.user_id, ...(auth.team_id ? { teamId: auth.team_id } : {}) };
    const api = new SlackApi(web);
    const drafts = streamingMode(settings) === "draft"
      ? channelDrafts<SlackTarget>(ctx, {
        maxChars: SLACK_TEXT_LIMIT - 10,
        send: (t, text) => api.post(t, toSlackMrkdwn(text)),
        edit: (t, ts, text) => api.update(t.channel, ts, toSlackMrkdwn(text)),
        remove: (t, ts) => api.remove(t.channel, ts),
      })
      : undefined;
    const socket = new SocketModeClient({ appToken: settings.appToken, logger: slackLog, clientOptions: { slackApiUrl: settings.apiUrl } });
    socket.on("slack_event", (env: Envelope) => {
      onEnvelope(ctx, api, bot, drafts, env).catch((err) => log.error({ err, envelopeId: env.envelope_id, type: env.type }, "could not take a Slack envelope; left unacknowledged for redelivery"));
    });
    await socket.start();
    log.info({ bot: bot.userId, team: bot.teamId }, "slack socket mode connected");
    return {
      textLimit: SLACK_TEXT_LIMIT,
      tables: "code",
      actions: SLACK_ACTIONS,
      act: (req, dctx) => slackAct(web, api, req, dctx),
      async deliver(part, dctx) {
        const target = deliveryTarget(targetOf, part.message.conversation);
        const draftTs = await drafts?.takeFor(part);
        const attachment = part.attachments[0];
        if (attachment) {
          // a reply with files and no text: the draft (if one was shown) has nothing to become
          if (draftTs !== undefined) await api.remove(target.channel, draftTs).catch((err) => dctx.log.debug({ err }, "could not delete the draft"));
          return { platformMessageId: await sendAttachment(ctx, api, target, attachment) };
        }
        const mrkdwn = toSlackMrkdwn(part.text);
        const approvalId = part.message.kind === "approval" ? part.message.approval?.approvalId : undefined;
        if (draftTs !== undefined) {
          await api.update(target.channel, draftTs, mrkdwn);
          return { platformMessageId: platformMessageId(target.channel, draftTs) };
        }
        const blocks = approvalId && part.index === part.count - 1 ? approvalBlocks(mrkdwn, approvalId) : undefined;
        return { platformMessageId: platformMessageId(target.channel, await api.post(target, mrkdwn, blocks)) };
      },
      async stop() {
        await socket.disconnect();
      },
    };
  },
});
