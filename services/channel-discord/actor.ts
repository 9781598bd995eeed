/**
 * channel-discord: a Discord bot <-> the bus, on the channel kit. In: the gateway
 * (@discordjs/ws) MESSAGE_CREATE -> inbound.ts -> LURK_INBOUND (Discord has no acknowledgement:
 * a missed event comes back through the gateway's resume). Out: the kit's durable deliveries,
 * chunked at 2000 characters, Discord markdown (tables as code blocks); the message tool's
 * react/edit/delete (actions.ts); while a run writes, a draft message is edited
 * and becomes the reply (its id kept across restarts), or with `streaming: "block"` finished
 * paragraphs are sent as their own messages. Guild channels and threads are gated by mention in the router; DMs need
 * the Direct Messages intent, guild text the privileged Message Content intent. Files (files.ts):
 * a message's attachments are stored in the media store before it is published; an attachment
 * part of a delivery is posted as a file message (OGG/Opus audio as a native voice message).
 * Slash commands (commands.ts, interactions.ts): registered once the gateway is ready (the
 * application id comes with READY); users' reactions (MESSAGE_REACTION_ADD/REMOVE, reactions.ts)
 * go to the kit's publishReaction; an INTERACTION_CREATE is answered deferred and published like
 * a message, and the reply edits the deferred message and follows it up through the interaction's webhook.
 */
import { REST } from "@discordjs/rest";
import { WebSocketManager, WebSocketShardEvents } from "@discordjs/ws";
import { GatewayDispatchEvents, GatewayIntentBits, type GatewayDispatchPayload } from "discord-api-types/v10";
import { LurkError } from "../../shared/contract/index.js";
import { channelDrafts, defineChannelActor, DraftMessages, publishWithDraft, toDiscordMarkdown, type ChannelContext } from "../../shared/runtime/channel/index.js";
import { discordChannelSchema, type DiscordChannelConfig } from "../../shared/runtime/config-channels.js";
import { registerCommands } from "./commands.js";
import { sendAttachment, storeAttachments } from "./files.js";
import { messageToInbound, type DcMessage } from "./inbound.js";
import { deliverToInteraction, InteractionStore, isInteractionMessageId, onInteraction, sweepSilentInteractions, type DcInteraction } from "./interactions.js";
import { DISCORD_ACTIONS, discordAct } from "./actions.js";
import { DiscordApi } from "./send.js";
import { isReaction, reactionEvent, type DcReaction } from "./reactions.js";

export const DISCORD_TEXT_LIMIT = 2000;
/** reactions (reactions.ts) need the two *MessageReactions intents (not privileged) */
export const INTENTS = GatewayIntentBits.Guilds | GatewayIntentBits.GuildMessages | GatewayIntentBits.DirectMessages | GatewayIntentBits.MessageContent
  | GatewayIntentBits.GuildMessageReactions | GatewayIntentBits.DirectMessageReactions;

async function onMessage(ctx: ChannelContext<DiscordChannelConfig>, api: DiscordApi, botId: string, drafts: DraftMessages<string>, msg: DcMessage): Promise<void> {
  if (msg.author.id === botId || msg.author.bot) return;
  const info = msg.guild_id ? await api.channelInfo(msg.channel_id) : { id: msg.channel_id, isThread: false };
  const inbound = messageToInbound(msg, botId, info);
  if (!inbound) return;
  if (msg.attachments?.length) inbound.attachments = await storeAttachments(ctx, msg.attachments);
  await publishWithDraft({ ctx, drafts, target: inbound.conversation }, inbound);
}

/** A user's reaction (added or removed) -> the kit (filtered there by reactionNotifications); a malformed payload is dropped. */
async function onReaction(ctx: ChannelContext<DiscordChannelConfig>, api: DiscordApi, botId: string, d: DcReaction, action: "added" | "removed"): Promise<void> {
  if (!isReaction(d)) {
    ctx.log.warn({ action }, "a Discord reaction event without its ids or emoji; dropped");
    return;
  }
  if (d.user_id === botId) return;
  const info = d.guild_id !== undefined ? await api.channelInfo(d.channel_id) : { id: d.channel_id, isThread: false };
  await ctx.publishReaction(reactionEvent(d, action, botId, info));
}

export const definition = defineChannelActor({
  channel: "discord",
  description: "Discord bot (gateway + REST) <-> bus",
  schema: discordChannelSchema,
  metadata: (s) => ({ apiRoot: new URL(s.apiRoot).origin }),
  async start(ctx) {
    const { settings, log } = ctx;
    if (!settings.botToken) {
      throw new LurkError("CONFIG_INVALID", "channels.discord.botToken is not set: create a bot in the Discord Developer Portal (enable the Message Content intent) and set DISCORD_BOT_TOKEN (or channels.discord.botToken in config.json)");
    }
    const rest = new REST({ version: "10", api: settings.apiRoot }).setToken(settings.botToken);
    const api = new DiscordApi(rest);
    const drafts = channelDrafts<string>(ctx, {
      maxChars: DISCORD_TEXT_LIMIT - 10,
      send: (channelId, text) => api.send(channelId, text),
      edit: (channelId, id, text) => api.edit(channelId, id, text),
      remove: (channelId, id) => api.remove(channelId, id),
    });
    const interactions = new InteractionStore(ctx.dataDir);
    ctx.rt.onStop({ stop: () => interactions.close() });
    sweepSilentInteractions(ctx, api, interactions);
    const gateway = new WebSocketManager({ token: settings.botToken, intents: INTENTS, rest });
    let botId = "";
    let registered = false;
    const ready = new Promise<void>((resolve) => {
      gateway.on(WebSocketShardEvents.Dispatch, ({ data }: { data: GatewayDispatchPayload }) => {
        if (data.t === GatewayDispatchEvents.Ready) {
          botId = data.d.user.id;
          log.info({ bot: data.d.user.username, application: data.d.application.id }, "discord gateway ready");
          if (settings.slashCommands && !registered) {
            registered = true; // once per process (READY comes again after a reconnect)
            void registerCommands(rest, data.d.application.id, settings, log);
          }
          resolve();
        } else if (data.t === GatewayDispatchEvents.MessageCreate && botId) {
          onMessage(ctx, api, botId, drafts, data.d as unknown as DcMessage).catch((err) => log.error({ err, messageId: data.d.id }, "could not take a Discord message"));
        } else if ((data.t === GatewayDispatchEvents.MessageReactionAdd || data.t === GatewayDispatchEvents.MessageReactionRemove) && botId) {
          const action = data.t === GatewayDispatchEvents.MessageReactionAdd ? "added" : "removed";
          onReaction(ctx, api, botId, data.d as unknown as DcReaction, action).catch((err) => log.error({ err }, "could not take a Discord reaction"));
        } else if (data.t === GatewayDispatchEvents.InteractionCreate && botId) {
          onInteraction(ctx, api, interactions, data.d as unknown as DcInteraction).catch((err) => log.error({ err, interactionId: data.d.id }, "could not take a Discord interaction"));
        }
      });
    });
    gateway.on(WebSocketShardEvents.Error, ({ error }: { error: Error }) => log.warn({ err: error }, "discord gateway error"));
    await gateway.connect();
    await ready;
    return {
      textLimit: DISCORD_TEXT_LIMIT,
      tables: "code",
      actions: DISCORD_ACTIONS,
      act: (req, dctx) => discordAct(rest, api, req, dctx),
      async deliver(part, dctx) {
        const channelId = part.message.conversation;
        const viaInteraction = await deliverToInteraction(ctx, api, interactions, part, part.message.id, dctx.signal);
        if (viaInteraction) return viaInteraction;
        // an interaction is no message to quote
        if (isInteractionMessageId(part.replyToMessageId)) part = { ...part, replyToMessageId: undefined };
        const draftId = await drafts.takeFor(part);
        const attachment = part.attachments[0];
        if (attachment) {
          // a reply with files and no text: the draft (if one was shown) has nothing to become
          if (draftId !== undefined) await api.remove(channelId, draftId).catch((err) => dctx.log.debug({ err }, "could not delete the draft"));
          return { platformMessageId: await sendAttachment(ctx, api, channelId, attachment, part.replyToMessageId, dctx.signal) };
        }
        const text = toDiscordMarkdown(part.text);
        if (draftId !== undefined) {
          await api.edit(channelId, draftId, text, dctx.signal);
          return { platformMessageId: draftId };
        }
        return { platformMessageId: await api.send(channelId, text, part.replyToMessageId, dctx.signal) };
      },
      async typing(msg) {
        await api.typing(msg.conversation);
      },
      async stop() {
        await gateway.destroy();
      },
    };
  },
});
