/**
 * `channels`: one optional sub-object per channel actor (`channel-<name>`); a channel runs when
 * its sub-object says `enabled: true`. A new channel adds ONE line to `channelsConfigSchema`
 * (its own schema, built on `channelBaseShape`). Secrets (tokens, signing secrets) may come from
 * the file, from the environment (`channelEnvOverrides`), or are generated into
 * `<home>/credentials/channels.json` (shared/runtime/channel/secrets.ts).
 */
import { z } from "zod";
import { isLoopbackUrl } from "./loopback-host.js";

const portSchema = z.number().int().min(0).max(65_535);
const secretSchema = z.string().min(16, "at least 16 characters").max(512);

/** Fields every channel has. */
export const channelBaseShape = {
  enabled: z.boolean().default(false),
  /** the platform's message length limit (chunks are cut below it) */
  textLimit: z.number().int().min(64).max(1_000_000).optional(),
  /**
   * where a reply longer than the limit is cut: "paragraph" (blank line, else line end, sentence,
   * space), "sentence" (sentence end, else line end, space) or "length" (fill each message).
   * Unset: the channel's own default ("paragraph").
   */
  chunkMode: z.enum(["length", "paragraph", "sentence"]).optional(),
  /** deliveries tried (platform errors) before the delivery is reported failed */
  maxAttempts: z.number().int().min(1).max(100).default(5),
  /** outbound deliveries handled at once (1 keeps a conversation's order strict) */
  concurrency: z.number().int().min(1).max(256).default(4),
  /** this channel's account name: every inbound message carries it (bindings `{ channel, accountId }`) */
  accountId: z.string().min(1).max(200).optional(),
  /**
   * markdown the platform does not render: `tables` "code" (a padded monospace block), "bullets"
   * (one list item per row) or "off" (as written). Unset: the channel's default (code for
   * Telegram, Discord, Slack and the web chat; off for the others).
   */
  markdown: z.object({ tables: z.enum(["code", "bullets", "off"]).optional() }).optional(),
};

/** The streaming fields of a chat channel (Telegram, Discord, Slack). */
const streamingShape = {
  /**
   * How the reply is shown while the model writes it: "draft" edits one message (it becomes
   * the reply), "block" sends each finished paragraph as its own message (the final delivery
   * sends only the rest), "off" sends the reply when the run ends. Unset: "draft", or "off"
   * when the older `streamDrafts: false` is set.
   */
  streaming: z.enum(["draft", "block", "off"]).optional(),
  /** older switch: false = `streaming: "off"` (ignored when `streaming` is set) */
  streamDrafts: z.boolean().optional(),
};
export type StreamingMode = NonNullable<z.infer<typeof streamingShape.streaming>>;

/** The streaming mode a chat channel's settings ask for. */
export function streamingMode(s: { streaming?: StreamingMode | undefined; streamDrafts?: boolean | undefined }): StreamingMode {
  return s.streaming ?? (s.streamDrafts === false ? "off" : "draft");
}

/**
 * Which users' reactions reach the agent (as system events of the session, seen on its next run;
 * they never start one): "off" none, "own" (default) reactions to the assistant's own messages,
 * "all" reactions to any message. A chat channel that reports reactions has it (channel kit,
 * reactions.ts).
 */
const reactionNotificationsSchema = z.enum(["off", "own", "all"]).default("own");
export type ReactionNotifications = z.infer<typeof reactionNotificationsSchema>;
const reactionsShape = {
  /** users' reactions to the agent: "off", "own" (to the assistant's messages; default) or "all" */
  reactionNotifications: reactionNotificationsSchema,
};

/** `channels["openai-http"]`: the OpenAI-compatible HTTP API (services/channel-openai-http). */
export const openaiHttpChannelSchema = z.object({
  ...channelBaseShape,
  /** loopback by default: a public address needs a reverse proxy with TLS */
  host: z.string().min(1).default("127.0.0.1"),
  port: portSchema.default(8787),
  /** the bearer token clients send; generated at setup when absent (env LURKBOT_OPENAI_HTTP_TOKEN) */
  token: secretSchema.optional(),
  /** the longest a request waits for its reply, ms */
  replyTimeoutMs: z.number().int().positive().max(3_600_000).default(300_000),
  /** a request body above this is refused (413); images come base64 in the body (a third larger) */
  maxBodyBytes: z.number().int().min(1024).max(64 * 1024 * 1024).default(1024 * 1024),
});

/** `channels.webhook`: signed HTTP requests in, signed callbacks out (services/channel-webhook). */
export const webhookChannelSchema = z.object({
  ...channelBaseShape,
  host: z.string().min(1).default("127.0.0.1"),
  port: portSchema.default(8788),
  /** HMAC-SHA256 key of both directions; generated at setup when absent (env LURKBOT_WEBHOOK_SECRET) */
  secret: secretSchema.optional(),
  /** where replies are POSTed; without it replies are reported as failed deliveries */
  callbackUrl: z.url({ protocol: /^https?$/ }).optional(),
  /** a request whose timestamp is further than this from now is refused, seconds */
  toleranceSec: z.number().int().min(10).max(3600).default(300),
  /** a request body above this is refused (413); files come base64 in the body (a third larger) */
  maxBodyBytes: z.number().int().min(1024).max(64 * 1024 * 1024).default(256 * 1024),
  /** ms one callback POST may take */
  callbackTimeoutMs: z.number().int().positive().max(120_000).default(10_000),
});

/** `channels.telegram`: a Telegram bot through the Bot API with long polling (services/channel-telegram). */
export const telegramChannelSchema = z.object({
  ...channelBaseShape,
  /** the token from @BotFather (env TELEGRAM_BOT_TOKEN) */
  botToken: z.string().min(20).max(200).optional(),
  /** the Bot API server (a self-hosted telegram-bot-api server, or a test server) */
  apiRoot: z.url({ protocol: /^https?$/ }).default("https://api.telegram.org"),
  /** seconds one getUpdates long poll waits */
  pollTimeoutSec: z.number().int().min(0).max(50).default(30),
  ...streamingShape,
  ...reactionsShape,
  /** the least time between two edits of a draft, ms (Telegram limits edits per chat) */
  draftIntervalMs: z.number().int().min(200).max(60_000).default(1_500),
  /** how updates arrive: "polling" (getUpdates) or "webhook" (Telegram POSTs them to `webhookUrl`) */
  mode: z.enum(["polling", "webhook"]).default("polling"),
  /** webhook mode: the public https URL Telegram POSTs to (a reverse proxy forwarding to webhookHost:webhookPort + webhookPath) */
  webhookUrl: z.url({ protocol: /^https$/, error: "an https URL" }).optional(),
  /** webhook mode: where the channel listens (loopback by default: the reverse proxy terminates TLS) */
  webhookHost: z.string().min(1).default("127.0.0.1"),
  webhookPort: portSchema.default(8789),
  webhookPath: z.string().regex(/^\/[A-Za-z0-9._~\/-]*$/, "a path starting with /").max(200).default("/telegram/webhook"),
  /** webhook mode: Telegram's `secret_token` (the X-Telegram-Bot-Api-Secret-Token header); generated when absent */
  webhookSecret: z.string().min(1).max(256).regex(/^[A-Za-z0-9_-]+$/, "1-256 characters of A-Z, a-z, 0-9, _ and -").optional(),
}).superRefine((s, ctx) => {
  if (s.mode === "webhook" && !s.webhookUrl) {
    ctx.addIssue({ code: "custom", path: ["webhookUrl"], message: "required when mode is \"webhook\": the public https URL Telegram sends updates to" });
  }
});

/** `channels.discord`: a Discord bot through the gateway and REST API (services/channel-discord). */
export const discordChannelSchema = z.object({
  ...channelBaseShape,
  /** the bot token from the Developer Portal (env DISCORD_BOT_TOKEN); the bot needs the Message Content intent */
  botToken: z.string().min(20).max(200).optional(),
  /** the REST API root (the gateway URL is asked from it) */
  apiRoot: z.url({ protocol: /^https?$/ }).default("https://discord.com/api"),
  ...streamingShape,
  ...reactionsShape,
  /** the least time between two draft edits, ms */
  draftIntervalMs: z.number().int().min(200).max(60_000).default(1_200),
  /** register the application (slash) commands at start: the generic one and the router's chat commands */
  slashCommands: z.boolean().default(true),
  /** the generic command: `/lurk text:<message>` is a message to the bot (a leading / is dropped) */
  slashCommand: z.string().regex(/^\/?[a-z0-9_-]{1,32}$/, "1-32 lower-case letters, digits, - or _, e.g. lurk").transform((s) => s.replace(/^\//, "")).default("lurk"),
  /** register the commands in these guilds (shown at once) instead of globally (can take a while to show) */
  commandGuildIds: z.array(z.string().regex(/^\d{15,25}$/, "a guild id (a snowflake)")).max(50).optional(),
});

const webUserIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "1-64 letters, digits, _ or -");

/** One person of the web chat: their token signs them in; `id` is their DM peer and sender id. */
export const webUserSchema = z.object({
  id: webUserIdSchema,
  token: secretSchema,
  /** the sender's display name (default: the id) */
  name: z.string().min(1).max(200).optional(),
});
export type WebUserConfig = z.infer<typeof webUserSchema>;

/** the HTTPS ports Tailscale Funnel accepts */
export const FUNNEL_PORTS = [443, 8443, 10_000] as const;

/**
 * `channels.web.tailscale`: publish the web chat with Tailscale (services/channel-web/README.md,
 * Tailscale): "serve" on the tailnet, "funnel" on the internet, at
 * `https://<this host's MagicDNS name>[:httpsPort]/`. Needs the chat on loopback; funnel also
 * needs strong tokens. The channel serves locally whatever happens to the exposure.
 */
export const webTailscaleSchema = z.object({
  mode: z.enum(["off", "serve", "funnel"]).default("off"),
  /** turn this serve/funnel off when the channel stops (`tailscale serve|funnel --https=<port> off`) */
  resetOnExit: z.boolean().default(true),
  /** the tailnet HTTPS port the chat is published on (funnel: 443, 8443 or 10000) */
  httpsPort: z.number().int().min(1).max(65_535).default(443),
  /** the longest each `tailscale` command may take, ms (then it is killed and reported) */
  timeoutMs: z.number().int().min(500).max(120_000).default(15_000),
}).superRefine((t, ctx) => {
  if (t.mode === "funnel" && !(FUNNEL_PORTS as readonly number[]).includes(t.httpsPort)) {
    ctx.addIssue({ code: "custom", path: ["httpsPort"], message: `Tailscale Funnel serves only on ports ${FUNNEL_PORTS.join(", ")}` });
  }
});
export type WebTailscaleConfig = z.infer<typeof webTailscaleSchema>;

/** `channels.web`: the browser chat (HTTP + WebSocket, services/channel-web). */
export const webChannelSchema = z.object({
  ...channelBaseShape,
  /** loopback by default: a public address needs a reverse proxy with TLS */
  host: z.string().min(1).default("127.0.0.1"),
  port: portSchema.default(8790),
  /** the access token of the page, the socket and the API (one user: `userId`); generated at first start when absent (env LURKBOT_WEB_TOKEN); not used when `users` is set */
  token: secretSchema.optional(),
  /** the largest WebSocket frame or API body accepted, bytes */
  maxMessageBytes: z.number().int().min(1024).max(16 * 1024 * 1024).default(256 * 1024),
  /** the web user's id (the DM peer and sender of every browser message); not used when `users` is set */
  userId: webUserIdSchema.default("web-user"),
  /**
   * several people, each with their own token, chats, sessions, history and files (unset: the
   * one user of `token`/`userId`). Ids and tokens must be unique.
   */
  users: z.array(webUserSchema).min(1, "at least one user (remove `users` to use the single token)").max(1000).optional(),
  /** messages kept per chat for reconnects and reloads (oldest dropped first) */
  historyPerChat: z.number().int().min(10).max(10_000).default(500),
  /** the user's reactions from the page's picker (services/channel-web/README.md, Reactions) */
  ...reactionsShape,
  /** the agent's `canvas` panel (services/channel-web/README.md, Canvas) */
  canvas: z.object({
    /**
     * run the scripts of HTML the agent presents (false: the frame runs no script at all). On, a
     * script can send what the frame shows off the user's browser: the frame's CSP stops fetch,
     * XHR, WebSocket and remote images, but not WebRTC (STUN/TURN packets to any address).
     */
    allowScripts: z.boolean().default(false),
  }).prefault({}),
  /** publish the chat on the tailnet or the internet with Tailscale (off by default) */
  tailscale: webTailscaleSchema.prefault({}),
}).superRefine((s, ctx) => {
  const ids = new Map<string, number>();
  const tokens = new Map<string, number>();
  s.users?.forEach((u, i) => {
    const sameId = ids.get(u.id);
    if (sameId !== undefined) ctx.addIssue({ code: "custom", path: ["users", i, "id"], message: `user id "${u.id}" is used twice (users[${sameId}] has it); each user needs their own id` });
    else ids.set(u.id, i);
    // the message never shows the token itself
    const sameToken = tokens.get(u.token);
    if (sameToken !== undefined) ctx.addIssue({ code: "custom", path: ["users", i, "token"], message: `the same token as users[${sameToken}]; each user needs their own token` });
    else tokens.set(u.token, i);
  });
});

/** `channels.slack`: a Slack app over Socket Mode (events in) and the Web API (out) (services/channel-slack). */
export const slackChannelSchema = z.object({
  ...channelBaseShape,
  /** the Bot User OAuth Token, xoxb-... (env SLACK_BOT_TOKEN) */
  botToken: z.string().startsWith("xoxb-", "a bot token starts with xoxb-").max(300).optional(),
  /** the App-Level Token with connections:write, xapp-... (env SLACK_APP_TOKEN) */
  appToken: z.string().startsWith("xapp-", "an app-level token starts with xapp-").max(300).optional(),
  /** the Web API root (apps.connections.open gives the Socket Mode URL) */
  apiUrl: z.url({ protocol: /^https?$/ }).default("https://slack.com/api/"),
  ...streamingShape,
  ...reactionsShape,
  /** the least time between two draft edits, ms (chat.update is rate limited per channel) */
  draftIntervalMs: z.number().int().min(200).max(60_000).default(1_500),
  /** the app's slash command (defined in the Slack app, Socket Mode): `/lurk <text>` is a message to the bot */
  slashCommand: z.string().regex(/^\/[a-z0-9_-]{1,31}$/, "a slash command: / and up to 32 lower-case letters, digits, - or _, e.g. /lurk").default("/lurk"),
});

/** A Matrix user id, `@localpart:server.name` (the server name may carry a port). */
export const matrixUserIdSchema = z.string().max(255).regex(/^@[a-z0-9._=\/+-]+:(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/, "a Matrix user id, e.g. @bot:example.org");

/**
 * `channels.matrix`: a Matrix account through the Client-Server API v3 (services/channel-matrix).
 * Who may talk to it is the router's (routing.dm / routing.groups, byChannel.matrix), as for every
 * chat channel; `autoJoin` decides which room invites the account accepts.
 */
export const matrixChannelSchema = z.object({
  ...channelBaseShape,
  /** the homeserver's client API base, e.g. https://matrix.example.org (https unless on loopback or allowPlainHttp) */
  homeserverUrl: z.url({ protocol: /^https?$/ }).optional(),
  /** allow http:// to a homeserver on another host (e.g. http://synapse:8008 on a private container network); the audit warns */
  allowPlainHttp: z.boolean().default(false),
  /** the bot account, e.g. @lurkbot:example.org (must be the access token's user) */
  userId: matrixUserIdSchema.optional(),
  /** the bot account's access token (env LURKBOT_MATRIX_ACCESS_TOKEN or credentials/secrets.json) */
  accessToken: z.string().min(8).max(2048).regex(/^[\x21-\x7e]+$/, "an access token has no spaces").optional(),
  /** the device of the access token (informational: checked against whoami when set) */
  deviceId: z.string().min(1).max(255).optional(),
  /** room invites: "off" (never join), "allowlist" (from routing.commands.owners or the Matrix DM allowFrom), "always" */
  autoJoin: z.enum(["off", "allowlist", "always"]).default("allowlist"),
  /** show "typing…" in the room while a run writes its answer */
  typingIndicator: z.boolean().default(true),
  /** how long one /sync long poll waits on the homeserver, ms */
  syncTimeoutMs: z.number().int().min(0).max(120_000).default(30_000),
  /** after a gap (downtime, a busy spell): how many older events of one room are fetched (/messages) beyond the sync's 50; older ones are skipped with a warning */
  catchUpMax: z.number().int().min(0).max(10_000).default(1_000),
  /** a message in a thread (m.thread): "thread" = a session of its own (a room's thread: type topic), answered in the thread; "room" = the room's session, answered in the room */
  threads: z.enum(["thread", "room"]).default("thread"),
  ...reactionsShape,
}).superRefine((s, ctx) => {
  if (s.enabled && !s.homeserverUrl) ctx.addIssue({ code: "custom", path: ["homeserverUrl"], message: "required: the homeserver's address, e.g. https://matrix.example.org" });
  if (s.enabled && !s.userId) ctx.addIssue({ code: "custom", path: ["userId"], message: "required: the bot account, e.g. @lurkbot:example.org" });
  if (s.homeserverUrl && new URL(s.homeserverUrl).protocol === "http:" && !isLoopbackUrl(s.homeserverUrl) && !s.allowPlainHttp) {
    ctx.addIssue({ code: "custom", path: ["homeserverUrl"], message: "https is required (plain http only to a homeserver on this machine: localhost, 127.0.0.1, ::1, or with allowPlainHttp: true on a private network): the access token and every message would cross the network in clear" });
  }
});

/** A Signal account's number, E.164: + and 7-15 digits, e.g. +15551234567. */
export const signalNumberSchema = z.string().regex(/^\+[1-9]\d{6,14}$/, "a phone number in E.164 form: + then the country code and number, e.g. +15551234567");

/**
 * `channels.signal`: a Signal account through signal-cli's HTTP daemon (services/channel-signal):
 * JSON-RPC at `<url>/api/v1/rpc`, received messages as server-sent events at `<url>/api/v1/events`.
 * signal-cli's HTTP has no authentication: the channel refuses a url off this machine unless
 * `allowRemote` (checked when the channel starts, so the other actors still run). Who may talk to
 * the bot is the router's (routing.dm / routing.groups, byChannel.signal), as for every chat channel.
 */
export const signalChannelSchema = z.object({
  ...channelBaseShape,
  /** signal-cli's HTTP daemon (`signal-cli -a +NUMBER daemon --http 127.0.0.1:8080`) */
  url: z.url({ protocol: /^https?$/ }).default("http://127.0.0.1:8080"),
  /** the bot's own number, E.164 (the account signal-cli registered or linked) */
  account: signalNumberSchema.optional(),
  /** let `url` be another host: anyone who reaches that port reads and sends as the account */
  allowRemote: z.boolean().default(false),
  /** send a read receipt for each message the channel stores */
  sendReadReceipts: z.boolean().default(false),
  /** show "typing…" to the sender (or group) while a run writes its answer */
  typingIndicator: z.boolean().default(true),
  /** ms one JSON-RPC call may take (a send with a large attachment takes longest) */
  requestTimeoutMs: z.number().int().min(1_000).max(300_000).default(60_000),
  ...reactionsShape,
});

/**
 * `channels.whatsapp`: a WhatsApp Business number through Meta's WhatsApp Business Cloud API
 * (services/channel-whatsapp): Meta POSTs the `messages` webhook to `host:port` + `path` (behind a
 * TLS reverse proxy or Tailscale Funnel), signed with the app secret; replies go to
 * `<apiBaseUrl>/<apiVersion>/<phoneNumberId>/messages`. DMs only. Who may talk to it is the
 * router's (routing.dm, byChannel.whatsapp), as for every chat channel. `appSecret` and
 * `verifyToken` are required: the channel refuses to start without them (checked at start).
 */
export const whatsappChannelSchema = z.object({
  ...channelBaseShape,
  /** the business phone number's id (WhatsApp Manager / the app's WhatsApp > API Setup), not the number itself */
  phoneNumberId: z.string().regex(/^\d{5,30}$/, "the phone number ID: digits only (WhatsApp > API Setup), not the phone number").optional(),
  /** a permanent System User access token with whatsapp_business_messaging (env WHATSAPP_ACCESS_TOKEN) */
  accessToken: z.string().min(20).max(2048).regex(/^[\x21-\x7e]+$/, "an access token has no spaces").optional(),
  /** the Meta app's App Secret (App settings > Basic): every webhook POST is signed with it (env WHATSAPP_APP_SECRET) */
  appSecret: z.string().min(16).max(256).regex(/^[\x21-\x7e]+$/, "an app secret has no spaces").optional(),
  /** the Verify Token you type into the app's webhook settings; Meta's verification GET must carry it (env WHATSAPP_VERIFY_TOKEN) */
  verifyToken: z.string().min(16, "at least 16 characters (e.g. `openssl rand -hex 24`)").max(256).regex(/^[\x21-\x7e]+$/, "a verify token has no spaces").optional(),
  /** the Graph API version of every call */
  apiVersion: z.string().regex(/^v\d{1,3}\.\d{1,2}$/, "a Graph API version, e.g. v26.0").default("v26.0"),
  /** the Graph API root (a test server) */
  apiBaseUrl: z.url({ protocol: /^https?$/ }).default("https://graph.facebook.com"),
  /** where the webhook listens (loopback by default: the reverse proxy or Funnel terminates TLS) */
  host: z.string().min(1).default("127.0.0.1"),
  port: portSchema.default(8791),
  path: z.string().regex(/^\/[A-Za-z0-9._~\/-]*$/, "a path starting with /").max(200).default("/whatsapp/webhook"),
  /** a webhook body above this is refused (413): Meta's payloads are small, media comes by id */
  maxBodyBytes: z.number().int().min(16 * 1024).max(16 * 1024 * 1024).default(1024 * 1024),
  /** mark each message read with a typing indicator while its run writes (renewed: WhatsApp drops it after 25 s) */
  typingIndicator: z.boolean().default(true),
  /** ms one Graph API call may take (an upload of a large file takes longest) */
  requestTimeoutMs: z.number().int().min(1_000).max(300_000).default(60_000),
  ...reactionsShape,
});

export const channelsConfigSchema = z.object({
  discord: discordChannelSchema.optional(),
  slack: slackChannelSchema.optional(),
  matrix: matrixChannelSchema.optional(),
  signal: signalChannelSchema.optional(),
  whatsapp: whatsappChannelSchema.optional(),
  telegram: telegramChannelSchema.optional(),
  "openai-http": openaiHttpChannelSchema.optional(),
  webhook: webhookChannelSchema.optional(),
  web: webChannelSchema.optional(),
}).default({});
export type ChannelsConfig = z.infer<typeof channelsConfigSchema>;
export type OpenAiHttpChannelConfig = z.infer<typeof openaiHttpChannelSchema>;
export type WebhookChannelConfig = z.infer<typeof webhookChannelSchema>;
export type TelegramChannelConfig = z.infer<typeof telegramChannelSchema>;
export type DiscordChannelConfig = z.infer<typeof discordChannelSchema>;
export type SlackChannelConfig = z.infer<typeof slackChannelSchema>;
export type MatrixChannelConfig = z.infer<typeof matrixChannelSchema>;
export type WebChannelConfig = z.infer<typeof webChannelSchema>;
export type SignalChannelConfig = z.infer<typeof signalChannelSchema>;
export type WhatsAppChannelConfig = z.infer<typeof whatsappChannelSchema>;

/**
 * Secrets LurkBot makes itself (a random value is generated into channels.json when none is
 * configured), and the environment variables that set them: channel -> config field, variable.
 */
export const CHANNEL_SECRET_ENV: Record<string, { field: string; env: string }> = {
  "openai-http": { field: "token", env: "LURKBOT_OPENAI_HTTP_TOKEN" },
  webhook: { field: "secret", env: "LURKBOT_WEBHOOK_SECRET" },
  web: { field: "token", env: "LURKBOT_WEB_TOKEN" },
};

/**
 * Platform tokens: issued by the platform, never generated; set in the environment or config.json.
 * `where` says where the platform gives it.
 */
export const CHANNEL_TOKEN_ENV: readonly { channel: string; field: string; env: string; where: string }[] = [
  { channel: "telegram", field: "botToken", env: "TELEGRAM_BOT_TOKEN", where: "create a bot with @BotFather in Telegram" },
  { channel: "discord", field: "botToken", env: "DISCORD_BOT_TOKEN", where: "Discord Developer Portal > your application > Bot (enable the Message Content intent)" },
  { channel: "slack", field: "botToken", env: "SLACK_BOT_TOKEN", where: "your Slack app > OAuth & Permissions > Bot User OAuth Token (xoxb-...)" },
  { channel: "slack", field: "appToken", env: "SLACK_APP_TOKEN", where: "your Slack app > Basic Information > App-Level Tokens with connections:write (xapp-...)" },
  { channel: "matrix", field: "accessToken", env: "LURKBOT_MATRIX_ACCESS_TOKEN", where: "log in as the bot account (POST <homeserver>/_matrix/client/v3/login, services/channel-matrix/README.md) and copy access_token" },
  { channel: "whatsapp", field: "accessToken", env: "WHATSAPP_ACCESS_TOKEN", where: "Meta Business Settings > System users > Generate new token (whatsapp_business_messaging, never expires); services/channel-whatsapp/README.md" },
  { channel: "whatsapp", field: "appSecret", env: "WHATSAPP_APP_SECRET", where: "your Meta app > App settings > Basic > App secret" },
  { channel: "whatsapp", field: "verifyToken", env: "WHATSAPP_VERIFY_TOKEN", where: "choose one (e.g. `openssl rand -hex 24`) and type the same into your Meta app > WhatsApp > Configuration > Webhook > Verify token" },
];

/** Applies the environment's channel secrets to the raw config object (before validation). */
export function channelEnvOverrides(raw: Record<string, any>, env: Record<string, string | undefined>): void {
  const specs = [...Object.entries(CHANNEL_SECRET_ENV).map(([channel, s]) => ({ channel, ...s })), ...CHANNEL_TOKEN_ENV.map(({ channel, field, env }) => ({ channel, field, env }))];
  for (const { channel, field, env: name } of specs) {
    const value = env[name];
    if (!value) continue;
    raw.channels = { ...(raw.channels ?? {}) };
    raw.channels[channel] = { ...(raw.channels[channel] ?? {}), [field]: value };
  }
}

/** The names of the enabled channels, e.g. ["openai-http", "webhook"]. */
export function enabledChannels(channels: ChannelsConfig): string[] {
  return Object.entries(channels).filter(([, c]) => (c as { enabled?: boolean } | undefined)?.enabled === true).map(([name]) => name);
}

const SECRET_FIELD = /(token|secret|key|password)/i;

/**
 * Every secret-looking value of the channels config (tokens, secrets, keys), for redaction:
 * string fields with such a name, also inside nested objects and lists (`channels.web.users[].token`).
 */
export function channelConfigSecrets(channels: ChannelsConfig): string[] {
  const out: string[] = [];
  const collect = (node: unknown, depth: number): void => {
    if (!node || typeof node !== "object" || depth > 4) return;
    for (const [key, value] of Object.entries(node)) {
      if (typeof value === "string") {
        if (value.length >= 8 && SECRET_FIELD.test(key)) out.push(value);
      } else {
        collect(value, depth + 1);
      }
    }
  };
  for (const c of Object.values(channels)) collect(c, 0);
  return out;
}
