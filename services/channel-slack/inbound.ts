/**
 * Slack events -> inbound messages (pure). `message` and `app_mention` events: DMs (channel_type
 * "im") are `dm` peers, multi-person DMs `group`, channels `channel` peers with the team id; a
 * reply inside a thread (thread_ts != ts) is a `thread` peer (channel + thread ts), its own
 * session, and the answer goes into that thread. The bot is mentioned by `<@BOTID>`, by an
 * app_mention event, or in a DM; its own mention is cut so `@lurk /new` reads `/new`. Bot
 * messages and edits/deletions (subtypes) are ignored. The platform message id is
 * `<channel>:<ts>` (the same for a redelivery, and for the message + app_mention pair).
 * Approval buttons (block_actions) become `/approve ID` / `/deny ID` from the clicking user.
 * The app's slash command (`/lurk <text>`) is `<text>` from its user, addressed to the bot, in
 * the channel or DM it was typed in (`/lurk /status` runs the chat command; `/lurk` alone, /help).
 * Files are mapped without their urls: the actor downloads each (with the bot token) into the
 * media store (files.ts) and the published message carries the ref.
 */
import { decodeToken, encodeToken } from "../../shared/contract/index.js";
import type { InboundInput, PlatformFile } from "../../shared/runtime/channel/index.js";
import { attachmentKind } from "../../shared/runtime/media.js";

export interface SlackFile { id: string; name?: string; mimetype?: string; size?: number; url_private?: string; url_private_download?: string }
export interface SlackEvent {
  type: string;
  subtype?: string;
  channel: string;
  channel_type?: string;
  user?: string;
  bot_id?: string;
  text?: string;
  ts: string;
  thread_ts?: string;
  team?: string;
  files?: SlackFile[];
  user_profile?: { display_name?: string; real_name?: string };
}
export interface BotIdentity { userId: string; teamId?: string }

/** Where a reply goes: the channel, and the thread when there is one. */
export interface SlackTarget { channel: string; threadTs?: string }

/** The approval buttons' action ids (value = the approval id). */
export const APPROVE_ACTION = "lurk_approve";
export const DENY_ACTION = "lurk_deny";

/** Subtypes that are still a person's new message. */
const TAKEN_SUBTYPES = new Set(["file_share", "thread_broadcast"]);

export function conversationOf(target: SlackTarget): string {
  return encodeToken(target.threadTs ? `${target.channel}:${target.threadTs}` : target.channel);
}

/** Reverses conversationOf; throws on a conversation that is not one of ours. */
export function targetOf(conversation: string): SlackTarget {
  const match = /^([A-Z0-9]+)(?::(\d+\.\d+))?$/.exec(decodeToken(conversation));
  if (!match) throw new Error(`"${conversation}" is not a Slack conversation`);
  return { channel: match[1]!, ...(match[2] ? { threadTs: match[2] } : {}) };
}

export const platformMessageId = (channel: string, ts: string) => `${channel}:${ts}`;

/** Slack escapes &, < and > in message text. */
const unescapeSlack = (text: string) => text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");

const isDmChannel = (ev: Pick<SlackEvent, "channel" | "channel_type">) => ev.channel_type === "im" || (ev.channel_type === undefined && ev.channel.startsWith("D"));

/** The inbound message for a Slack event; undefined for what LurkBot does not take. */
export function eventToInbound(ev: SlackEvent, bot: BotIdentity): InboundInput | undefined {
  if (ev.type !== "message" && ev.type !== "app_mention") return undefined;
  if (ev.subtype && !TAKEN_SUBTYPES.has(ev.subtype)) return undefined;
  if (!ev.user || ev.bot_id || ev.user === bot.userId || !ev.channel || !ev.ts) return undefined;
  const ownMention = new RegExp(`<@${bot.userId}(?:\\|[^>]*)?>`, "g");
  const raw = ev.text ?? "";
  const text = unescapeSlack(raw.replace(ownMention, "")).replace(/[ \t]{2,}/g, " ").trim();
  const attachments: NonNullable<InboundInput["attachments"]> = (ev.files ?? []).map((f) => {
    const mime = f.mimetype ?? "application/octet-stream";
    return { kind: attachmentKind(mime), mime, name: fileNameOf(f), ...(f.size !== undefined ? { size: f.size } : {}) };
  });
  if (!text && attachments.length === 0) return undefined;
  const dm = isDmChannel(ev);
  const threadTs = ev.thread_ts && ev.thread_ts !== ev.ts ? ev.thread_ts : undefined;
  const teamId = ev.team ?? bot.teamId;
  const team = teamId ? { teamId } : {};
  const peer: InboundInput["peer"] = dm
    ? { kind: "dm", id: ev.user }
    : threadTs
      ? { kind: "thread", id: ev.channel, threadId: threadTs, ...team }
      : { kind: ev.channel_type === "mpim" ? "group" : "channel", id: ev.channel, ...team };
  const name = ev.user_profile?.display_name || ev.user_profile?.real_name;
  ownMention.lastIndex = 0;
  return {
    id: platformMessageId(ev.channel, ev.ts),
    conversation: conversationOf({ channel: ev.channel, ...(threadTs ? { threadTs } : {}) }),
    peer,
    sender: { id: ev.user, ...(name ? { name } : {}) },
    text,
    attachments,
    mentioned: dm || ev.type === "app_mention" || ownMention.test(raw),
    ts: Math.round(Number.parseFloat(ev.ts) * 1000) || Date.now(),
  };
}

const fileNameOf = (f: SlackFile) => f.name ?? `slack-file:${f.id}`;

/** What the media kit needs of a Slack file; the size Slack announces caps the download. */
export function platformFileOf(f: SlackFile): PlatformFile {
  return { name: fileNameOf(f), ...(f.mimetype ? { mime: f.mimetype } : {}), ...(f.size !== undefined ? { size: f.size } : {}) };
}

/** Where the file's bytes are (both need the bot token); none for a file the bot cannot read. */
export const downloadUrlOf = (f: SlackFile): string | undefined => f.url_private_download ?? f.url_private;

export interface SlackBlockActions {
  type: string;
  user?: { id: string; name?: string; username?: string };
  team?: { id: string } | null;
  channel?: { id: string };
  container?: { channel_id?: string; message_ts?: string; thread_ts?: string };
  message?: { ts: string; thread_ts?: string; text?: string };
  actions?: { action_id: string; value?: string; action_ts?: string }[];
}

/** An approval button press -> `/approve ID` / `/deny ID` (undefined for other interactions). */
export function actionToInbound(body: SlackBlockActions): InboundInput | undefined {
  if (body.type !== "block_actions" || !body.user) return undefined;
  const action = body.actions?.find((a) => a.action_id === APPROVE_ACTION || a.action_id === DENY_ACTION);
  const channel = body.channel?.id ?? body.container?.channel_id;
  const messageTs = body.message?.ts ?? body.container?.message_ts;
  if (!action?.value || !channel || !messageTs) return undefined;
  const threadTs = body.message?.thread_ts ?? body.container?.thread_ts;
  const inThread = threadTs && threadTs !== messageTs ? threadTs : undefined;
  const dm = isDmChannel({ channel });
  const team = body.team?.id ? { teamId: body.team.id } : {};
  const name = body.user.name ?? body.user.username;
  return {
    id: `action:${channel}:${messageTs}:${action.action_ts ?? action.value}`,
    conversation: conversationOf({ channel, ...(inThread ? { threadTs: inThread } : {}) }),
    peer: dm
      ? { kind: "dm", id: body.user.id }
      : inThread ? { kind: "thread", id: channel, threadId: inThread, ...team } : { kind: "channel", id: channel, ...team },
    sender: { id: body.user.id, ...(name ? { name } : {}) },
    text: `/${action.action_id === APPROVE_ACTION ? "approve" : "deny"} ${action.value}`,
    mentioned: true,
  };
}

/** A slash command invocation (Socket Mode `slash_commands` payload; the fields LurkBot uses). */
export interface SlackSlashCommand {
  command?: string;
  text?: string;
  user_id?: string;
  user_name?: string;
  channel_id?: string;
  team_id?: string;
  trigger_id?: string;
}

/** The app's command -> a message to the bot; another command (or a payload without user or channel): undefined. */
export function slashToInbound(cmd: SlackSlashCommand, slashCommand: string): InboundInput | undefined {
  if (cmd.command !== slashCommand || !cmd.user_id || !cmd.channel_id || !cmd.trigger_id) return undefined;
  const channel = cmd.channel_id;
  const text = unescapeSlack(cmd.text ?? "").trim() || "/help";
  const team = cmd.team_id ? { teamId: cmd.team_id } : {};
  return {
    // the trigger id is the invocation's own: a redelivered envelope carries it again
    id: `slash:${channel}:${cmd.trigger_id}`,
    conversation: conversationOf({ channel }),
    peer: isDmChannel({ channel }) ? { kind: "dm", id: cmd.user_id } : { kind: "channel", id: channel, ...team },
    sender: { id: cmd.user_id, ...(cmd.user_name ? { name: cmd.user_name } : {}) },
    text,
    mentioned: true,
  };
}
