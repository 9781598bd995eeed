/**
 * Slash commands as they come back: the gateway's INTERACTION_CREATE of an application command
 * (type 2) is answered within Discord's 3 s with a deferred response (type 5, "thinking…"), its
 * token is recorded, and it becomes an inbound message like a typed one in the same place
 * (inbound.ts peerOf: DM, guild channel, thread), addressed to the bot: the generic command's
 * `text`, or `/name args` for a router command. Its platform message id is
 * `interaction:<interaction id>`, so the same interaction twice is processed once.
 * The reply: an outbound message whose `replyTo` names the interaction goes through its webhook:
 * the first part of the first reply/notice/error edits the deferred message (@original, once:
 * which delivery took it is recorded, a retry of that delivery edits again), every other part is
 * a follow-up. The token lives 15 minutes: the record (LMDB `<dataDir>/channel-discord/interactions/`,
 * so a restarted channel still answers) is used for 14; after that, or when Discord says the
 * token is dead (401/404), the reply is a normal channel message.
 * Interaction runs show no draft and no blocks: the deferred "thinking…" is their progress. A
 * run that ends without a reply (silent, aborted) deletes it: watched in process, and for a run
 * that ended while the channel was down, by a sweep at start and every minute that reads the run
 * from the sessions actor (`sweepSilentInteractions`). A deferred interaction is published with
 * `awaitsAnswer`, so a message the router refuses (no run) is answered by a notice, which edits
 * the "thinking…" like any other answer.
 */
import { join } from "node:path";
import { DiscordAPIError } from "@discordjs/rest";
import { ApplicationCommandOptionType, InteractionType } from "discord-api-types/v10";
import type { Attachment } from "../../shared/contract/index.js";
import { endedWithoutReply, ExpiringDb, outboundFileOrFallback, publishWatched, storedRunEnd, toDiscordMarkdown, type ChannelContext, type InboundInput, type OutboundFile, type OutboundPart } from "../../shared/runtime/channel/index.js";
import type { DiscordChannelConfig } from "../../shared/runtime/config-channels.js";
import { ARGS_OPTION, routerCommands, TEXT_OPTION } from "./commands.js";
import { peerOf, senderOf, type DcChannelInfo, type DcUser } from "./inbound.js";
import { toDeliveryError, type DiscordApi } from "./send.js";

/** The parts of an INTERACTION_CREATE this channel reads (Discord's wire format). */
export interface DcInteraction {
  id: string;
  application_id: string;
  type: number;
  token: string;
  data?: { name: string; type?: number; options?: { name: string; type: number; value?: unknown }[] };
  guild_id?: string;
  channel_id?: string;
  channel?: { id: string; type: number; parent_id?: string | null };
  member?: { user: DcUser };
  user?: DcUser;
}

export interface InteractionRecord {
  appId: string;
  token: string;
  /** when the interaction arrived (ms): its token is good for 15 minutes from about then */
  at: number;
  /** the delivery that edited the deferred message (@original), or DELETED_BY once deleted */
  originalBy?: string;
  /** the run's session, from its first event (the sweep reads the run's end with it) */
  sessionKey?: string;
}

/** `originalBy` of a deferred message deleted because its run ended without a reply */
const DELETED_BY = "run-ended-without-reply";

const THREAD_TYPES = new Set([10, 11, 12]);
/** used for less than the token's 15 minutes: a request begun at 14:59 would fail */
const TOKEN_USE_MS = 14 * 60_000;
const PREFIX = "interaction:";
export const interactionMessageId = (interactionId: string) => `${PREFIX}${interactionId}`;
export const isInteractionMessageId = (id: string | undefined) => id?.startsWith(PREFIX) === true;
/** Discord's epoch: a snowflake's top bits are ms since it */
const snowflakeMs = (id: string) => Number((BigInt(id) >> 22n) + 1_420_070_400_000n);

/** What the interaction's channel object says (undefined: ask the API). */
export function interactionChannel(i: DcInteraction): DcChannelInfo | undefined {
  if (!i.channel) return undefined;
  return { id: i.channel.id, isThread: THREAD_TYPES.has(i.channel.type), ...(i.channel.parent_id ? { parentId: i.channel.parent_id } : {}) };
}

/** The inbound message of an application command; undefined for other interactions and commands not ours. */
export function interactionToInbound(i: DcInteraction, generic: string, channel: DcChannelInfo): InboundInput | undefined {
  const user = i.member?.user ?? i.user;
  const channelId = i.channel?.id ?? i.channel_id;
  if (i.type !== InteractionType.ApplicationCommand || !i.data || !user || !channelId) return undefined;
  const option = (name: string) => {
    const o = i.data!.options?.find((x) => x.name === name && x.type === ApplicationCommandOptionType.String);
    return typeof o?.value === "string" ? o.value.trim() : "";
  };
  let text: string;
  if (i.data.name === generic) text = option(TEXT_OPTION) || "/help";
  else if (routerCommands().some((c) => c.name === i.data!.name)) text = `/${i.data.name} ${option(ARGS_OPTION)}`.trim();
  else return undefined;
  return {
    id: interactionMessageId(i.id),
    conversation: channelId,
    peer: peerOf(i.guild_id, channelId, user.id, channel),
    sender: senderOf(user),
    text,
    mentioned: true,
    ts: snowflakeMs(i.id),
  };
}

/** The interaction tokens, by inbound message id, for 14 minutes. */
export class InteractionStore extends ExpiringDb<InteractionRecord> {
  constructor(dataDir: string, now: () => number = Date.now) {
    super(join(dataDir, "interactions"), "interactions", { keepMs: TOKEN_USE_MS, sweepEveryMs: 5 * 60_000, stampOf: (r) => r.at, now });
  }

  /** Records an interaction (a replay keeps the first record). */
  async add(messageId: string, record: InteractionRecord): Promise<void> {
    if (!this.get(messageId)) await this.db.put(messageId, record);
  }

  /** The live interaction an outbound message answers, if any. */
  find(replyTo: readonly string[]): { key: string; record: InteractionRecord } | undefined {
    for (const key of replyTo) {
      const record = isInteractionMessageId(key) ? this.get(key) : undefined;
      if (record && !this.expired(record)) return { key, record };
    }
    return undefined;
  }

  /** Whether delivery `deliveryId` edits @original: the first to ask, and that one again on a retry. */
  async takeOriginal(key: string, deliveryId: string): Promise<boolean> {
    const record = this.get(key);
    if (!record || (record.originalBy !== undefined && record.originalBy !== deliveryId)) return false;
    if (record.originalBy === undefined) await this.db.put(key, { ...record, originalBy: deliveryId });
    return true;
  }

  async setSessionKey(key: string, sessionKey: string): Promise<void> {
    const record = this.get(key);
    if (record && !record.sessionKey) await this.db.put(key, { ...record, sessionKey });
  }

  /** Live interactions whose deferred message nothing took yet and whose run's session is known. */
  untaken(): Array<{ key: string; record: InteractionRecord & { sessionKey: string } }> {
    const out = [];
    for (const { key, value } of this.db.getRange()) {
      if (value.originalBy === undefined && value.sessionKey && !this.expired(value)) out.push({ key: String(key), record: { ...value, sessionKey: value.sessionKey } });
    }
    return out;
  }

  async drop(key: string): Promise<void> {
    await this.db.remove(key);
  }
}

type Ctx = ChannelContext<DiscordChannelConfig>;

/**
 * Takes one INTERACTION_CREATE: deferred answer, token recorded, then published (not streamed).
 * A replay (Discord: already acknowledged) is published again and collapses as a duplicate.
 */
export async function onInteraction(ctx: Ctx, api: DiscordApi, store: InteractionStore, i: DcInteraction): Promise<void> {
  if (i.type !== InteractionType.ApplicationCommand) return;
  const channelId = i.channel?.id ?? i.channel_id;
  const channel = interactionChannel(i) ?? (i.guild_id && channelId ? await api.channelInfo(channelId) : { id: channelId ?? "", isThread: false });
  const inbound = interactionToInbound(i, ctx.settings.slashCommand, channel);
  if (!inbound) {
    await api.answerInteraction(i.id, i.token, `/${i.data?.name ?? "?"} is not a LurkBot command (any more); try /${ctx.settings.slashCommand}.`).catch((err) => ctx.log.debug({ err }, "could not answer an unknown command"));
    return;
  }
  let deferred = true;
  try {
    await api.deferInteraction(i.id, i.token);
  } catch (err) {
    // already acknowledged (40060): a replay, whose first arrival recorded the token
    if (!(err instanceof DiscordAPIError && err.code === 40060)) {
      deferred = false;
      ctx.log.warn({ err, interactionId: i.id }, "could not answer a Discord interaction in time; its reply goes to the channel");
    }
  }
  if (!deferred) {
    await ctx.publishInbound(inbound);
    return;
  }
  await store.add(inbound.id, { appId: i.application_id, token: i.token, at: Date.now() });
  // the "thinking…" shown now clears only with an answer: the router answers even a refusal
  const awaiting: InboundInput = { ...inbound, awaitsAnswer: true };
  const watch = ctx.watchRun(ctx.runIdFor(inbound.id), {
    onEvent: (event) => void store.setSessionKey(inbound.id, event.sessionKey).catch(() => undefined),
    onEnd: (end) => {
      if (endedWithoutReply(end)) void deleteOriginal(ctx, api, store, inbound.id).catch((err) => ctx.log.debug({ err, interaction: inbound.id }, "could not delete the deferred message"));
    },
  });
  await publishWatched(ctx, awaiting, watch, TOKEN_USE_MS);
}

/** Deletes an interaction's deferred message unless a delivery took it first. */
async function deleteOriginal(ctx: Ctx, api: DiscordApi, store: InteractionStore, key: string): Promise<boolean> {
  const record = store.get(key);
  if (!record || store.expired(record) || !(await store.takeOriginal(key, DELETED_BY))) return false;
  try {
    await api.deleteInteractionOriginal(record.appId, record.token);
  } catch (err) {
    if (!gone(err)) throw err;
  }
  ctx.log.info({ interaction: key }, "deleted the \"thinking…\" of an interaction whose run ended without a reply");
  return true;
}

/** how often the channel looks for interactions whose run ended without a reply while it was down */
const SWEEP_MS = 60_000;

/**
 * At start and every minute: the deferred message of an interaction whose run ended silent or
 * aborted while this process did not watch it (the channel was down) is deleted.
 */
export function sweepSilentInteractions(ctx: Ctx, api: DiscordApi, store: InteractionStore): void {
  const sweep = async () => {
    for (const { key, record } of store.untaken()) {
      try {
        const end = await storedRunEnd(ctx.rt, record.sessionKey, ctx.runIdFor(key));
        if (endedWithoutReply(end)) await deleteOriginal(ctx, api, store, key);
      } catch (err) {
        ctx.log.debug({ err, interaction: key }, "could not check an interaction's run; the next sweep retries");
      }
    }
  };
  const run = () => void sweep().catch((err) => ctx.log.debug({ err }, "interaction sweep failed"));
  const timer = setInterval(run, SWEEP_MS);
  timer.unref();
  ctx.rt.onStop({ stop: async () => clearInterval(timer) });
  run();
}

/** A dead interaction token or message: answer in the channel instead. */
const gone = (err: unknown) => err instanceof DiscordAPIError && (err.status === 401 || err.status === 404);

/**
 * Delivers a part through the interaction it answers; undefined when it answers none (or the
 * token is dead: then the caller sends it to the channel).
 */
export async function deliverToInteraction(ctx: Ctx, api: DiscordApi, store: InteractionStore, part: OutboundPart, deliveryId: string, signal: AbortSignal): Promise<{ platformMessageId: string } | undefined> {
  const found = store.find(part.message.replyTo);
  if (!found) return undefined;
  const { kind } = part.message;
  const original = part.index === 0 && (kind === "reply" || kind === "notice" || kind === "error") && await store.takeOriginal(found.key, deliveryId);
  const attachment: Attachment | undefined = part.attachments[0];
  let what: { content: string } | { file: OutboundFile };
  if (attachment) {
    const loaded = await outboundFileOrFallback(ctx.rt.media, attachment, ctx.log);
    what = "fallback" in loaded ? { content: loaded.fallback } : { file: loaded.file };
  } else {
    what = { content: toDiscordMarkdown(part.text) };
  }
  try {
    return { platformMessageId: await api.interactionMessage(found.record.appId, found.record.token, what, original, signal) };
  } catch (err) {
    if (!gone(err)) throw toDeliveryError(err);
    ctx.log.info({ err, interaction: found.key }, "the interaction's token is no longer valid; answering in the channel");
    await store.drop(found.key);
    return undefined;
  }
}
