/**
 * A local Discord for the channel tests: the REST API (`/api/v10/...`: gateway/bot, channels,
 * messages, typing) and the gateway WebSocket (HELLO, IDENTIFY -> READY, heartbeats, RESUME,
 * MESSAGE_CREATE dispatches) on one port, as @discordjs/rest and @discordjs/ws speak them.
 * Files: a user's message can carry attachments, served (without auth, as Discord's CDN) at
 * their `url` and each download recorded; a message POST may be multipart/form-data (`files[n]`
 * + `payload_json`), whose files are recorded with their names and bytes. A voice message (flag
 * IS_VOICE_MESSAGE, 1 << 13) is checked as Discord does: one OGG audio file, no text, the
 * attachment's `duration_secs` and `waveform` (else 400 with 50159/50160/50161); in a channel
 * of `refuseVoiceMessages` it is a 403 (50173).
 * Slash commands: READY carries the application id; `PUT /applications/{app}/commands` (and
 * `/guilds/{guild}/commands`) record the registered commands (or answer 403 with
 * `refuseCommands`); `interaction()` pushes an INTERACTION_CREATE of an application command;
 * `POST /interactions/{id}/{token}/callback` takes the answer (a second one: 400, code 40060);
 * `PATCH /webhooks/{app}/{token}/messages/@original` edits the deferred message (DELETE deletes it) and
 * `POST /webhooks/{app}/{token}` sends a follow-up, both without the bot token, recorded in
 * `sent` with `via`; an expired token (`expireInteraction`) is a 401 (50027).
 * Reactions: `PUT|DELETE /channels/{c}/messages/{m}/reactions/{emoji}/@me` are recorded in `reactions`;
 * a user's reaction is pushed with `replay("MESSAGE_REACTION_ADD", payload)`; `intents` is IDENTIFY's.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { WebSocketServer, type WebSocket } from "ws";
import { closeLoopback, listenLoopback, readRaw, sendJson } from "./http.js";

/** the message flag of a voice message (1 << 13) */
const IS_VOICE_MESSAGE = 8192;

export interface DiscordFile { field: string; name: string; contentType: string; bytes: Buffer }
export interface DiscordSent {
  method: "POST" | "PATCH" | "DELETE"; channelId: string; messageId: string; content: string; body: Record<string, unknown>; files: DiscordFile[];
  /** sent through an interaction's webhook: the deferred message's edit, or a follow-up */
  via?: "original" | "followup"; interactionId?: string;
}
/** A registration: `global` or the guild id, and the commands as sent. */
export interface DiscordCommandPut { scope: string; commands: Array<{ name: string; description: string; type?: number; options?: Array<{ name: string; type: number; description: string; required?: boolean }> }> }
export interface DiscordInteractionState { id: string; token: string; channelId: string; callbacks: Record<string, unknown>[]; originalId?: string; expired: boolean }
/** A file a user attaches; `announcedSize` (default: the real size) is what the gateway event says. */
export interface DiscordUpload { filename: string; bytes: Uint8Array; contentType?: string; announcedSize?: number }


/** A request body as Discord reads it: JSON, or multipart with `payload_json` and `files[n]`. */
async function parseBody(raw: Buffer, contentType: string): Promise<{ body: Record<string, unknown>; files: DiscordFile[] }> {
  if (!contentType.startsWith("multipart/form-data")) return { body: raw.length ? JSON.parse(raw.toString("utf8")) as Record<string, unknown> : {}, files: [] };
  const form = await new Response(raw, { headers: { "content-type": contentType } }).formData();
  const payload = form.get("payload_json");
  const files: DiscordFile[] = [];
  for (const [field, value] of form.entries()) {
    if (/^files\[\d+\]$/.test(field) && typeof value !== "string") files.push({ field, name: value.name, contentType: value.type, bytes: Buffer.from(await value.arrayBuffer()) });
  }
  return { body: typeof payload === "string" ? JSON.parse(payload) as Record<string, unknown> : {}, files };
}

export class FakeDiscordServer {
  readonly bot = { id: "900000000000000001", username: "lurk", bot: true, discriminator: "0", global_name: null, avatar: null };
  /** the application's id (READY's `application.id`), not the bot user's */
  readonly applicationId = "900000000000000777";
  readonly commandPuts: DiscordCommandPut[] = [];
  /** answer command registrations with 403 Missing Access (the bot lacks applications.commands) */
  refuseCommands = false;
  readonly interactions = new Map<string, DiscordInteractionState>();
  readonly sent: DiscordSent[] = [];
  /** the bot's own reactions put (PUT) and taken back (DELETE), emoji decoded */
  readonly reactions: { method: "PUT" | "DELETE"; channelId: string; messageId: string; emoji: string }[] = [];
  /** current content of each bot message, by `<channelId>:<messageId>` */
  readonly messages = new Map<string, string>();
  /** channel id -> parent channel id, for threads */
  readonly threads = new Map<string, string>();
  identified = 0;
  /** the intents of the last IDENTIFY */
  intents: number | undefined;
  /** attachment files by url path, and the paths downloaded (in order) */
  readonly cdn = new Map<string, { bytes: Uint8Array; contentType?: string }>();
  readonly downloads: string[] = [];
  private readonly sockets = new Set<WebSocket>();
  private seq = 0;
  private nextId = 1_000_000_000_000_000n;
  private rateLimitNext = 0;
  private readonly wss: WebSocketServer;

  private constructor(private readonly server: Server, readonly url: string, readonly token: string) {
    this.wss = new WebSocketServer({ noServer: true });
    server.on("upgrade", (req, socket, head) => this.wss.handleUpgrade(req, socket, head, (ws) => this.onSocket(ws)));
  }

  static async start(token = "discord-test-token-0123456789abcdef"): Promise<FakeDiscordServer> {
    let fake!: FakeDiscordServer;
    const server = createServer((req, res) => void fake.handle(req, res));
    fake = new FakeDiscordServer(server, await listenLoopback(server), token);
    return fake;
  }

  get apiRoot(): string {
    return `${this.url}/api`;
  }

  /** A user's message arrives through the gateway; returns its id. */
  userMessage(opts: { channelId: string; content: string; guildId?: string; authorId?: string; mentionsBot?: boolean; attachments?: DiscordUpload[] }): string {
    const id = String(++this.nextId);
    const attachments = (opts.attachments ?? []).map((file) => {
      const attachmentId = String(++this.nextId);
      const path = `/attachments/${opts.channelId}/${attachmentId}/${encodeURIComponent(file.filename)}`;
      this.cdn.set(path, { bytes: file.bytes, ...(file.contentType ? { contentType: file.contentType } : {}) });
      const url = `${this.url}${path}?ex=6700&is=6600&hm=signature`;
      return {
        id: attachmentId, filename: file.filename, size: file.announcedSize ?? file.bytes.byteLength, url, proxy_url: url,
        ...(file.contentType ? { content_type: file.contentType } : {}),
      };
    });
    this.dispatch("MESSAGE_CREATE", {
      id, channel_id: opts.channelId, ...(opts.guildId ? { guild_id: opts.guildId } : {}), type: 0, tts: false, pinned: false,
      content: opts.content, timestamp: new Date().toISOString(), edited_timestamp: null, mention_everyone: false, mention_roles: [], attachments, embeds: [],
      author: { id: opts.authorId ?? "111", username: "ann", discriminator: "0", global_name: "Ann", avatar: null },
      mentions: opts.mentionsBot ? [this.bot] : [],
    });
    return id;
  }

  /**
   * A user runs an application command (CHAT_INPUT) in `channelId` (a DM without `guildId`);
   * `options` are string options by name. Returns the INTERACTION_CREATE payload (for `replay`).
   */
  interaction(opts: { name: string; channelId: string; guildId?: string; userId?: string; options?: Record<string, string> }): Record<string, unknown> & { id: string; token: string } {
    const id = String(++this.nextId);
    const token = `aW50ZXJhY3Rpb246${id}${randomBytes(24).toString("base64url")}`;
    this.interactions.set(id, { id, token, channelId: opts.channelId, callbacks: [], expired: false });
    const parent = this.threads.get(opts.channelId);
    const user = { id: opts.userId ?? "111", username: "ann", discriminator: "0", global_name: "Ann", avatar: null };
    const command = this.commandPuts.flatMap((p) => p.commands).find((c) => c.name === opts.name);
    const payload = {
      id, application_id: this.applicationId, type: 2, token, version: 1,
      data: {
        id: String((command as { id?: string } | undefined)?.id ?? ++this.nextId), name: opts.name, type: 1,
        ...(opts.options ? { options: Object.entries(opts.options).map(([name, value]) => ({ name, type: 3, value })) } : {}),
        ...(opts.guildId ? { guild_id: opts.guildId } : {}),
      },
      channel_id: opts.channelId,
      channel: opts.guildId
        ? { id: opts.channelId, type: parent ? 11 : 0, guild_id: opts.guildId, ...(parent ? { parent_id: parent } : {}), name: "general", flags: 0 }
        : { id: opts.channelId, type: 1, flags: 0, recipients: [user] },
      ...(opts.guildId
        ? { guild_id: opts.guildId, guild: { id: opts.guildId, locale: "en-US", features: [] }, member: { user, roles: [], joined_at: new Date().toISOString(), nick: null, deaf: false, mute: false, flags: 0, permissions: "2248473465835073" }, context: 0, authorizing_integration_owners: { "0": opts.guildId } }
        : { user, context: 1, authorizing_integration_owners: { "0": "0" } }),
      locale: "en-US", app_permissions: "2248473465835073", entitlements: [], attachment_size_limit: 10_485_760,
    };
    this.dispatch("INTERACTION_CREATE", payload);
    return payload;
  }

  /** The gateway sends the same event again (e.g. a replay after a resume). */
  replay(t: string, d: unknown): void {
    this.dispatch(t, d);
  }

  /** The interaction's token stops working (its 15 minutes are over). */
  expireInteraction(id: string): void {
    this.interactions.get(id)!.expired = true;
  }

  /** channels where the bot may not send voice messages (403, code 50173) */
  readonly refuseVoiceMessages = new Set<string>();

  rateLimitNextSends(count: number): void {
    this.rateLimitNext = count;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.terminate();
    this.wss.close();
    await closeLoopback(this.server);
  }

  private send(ws: WebSocket, payload: Record<string, unknown>): void {
    ws.send(JSON.stringify({ s: null, t: null, ...payload }));
  }

  private dispatch(t: string, d: unknown): void {
    for (const ws of this.sockets) this.send(ws, { op: 0, t, s: ++this.seq, d });
  }

  private onSocket(ws: WebSocket): void {
    this.sockets.add(ws);
    ws.on("close", () => this.sockets.delete(ws));
    this.send(ws, { op: 10, d: { heartbeat_interval: 45_000 } });
    ws.on("message", (raw) => {
      const msg = JSON.parse(String(raw)) as { op: number; d: { token?: string; intents?: number } };
      if (msg.op === 1) this.send(ws, { op: 11 });
      else if (msg.op === 2) {
        if (msg.d.token !== this.token && msg.d.token !== `Bot ${this.token}`) {
          ws.close(4004, "Authentication failed.");
          return;
        }
        this.identified++;
        this.intents = msg.d.intents;
        this.send(ws, {
          op: 0, t: "READY", s: ++this.seq,
          d: { v: 10, user: this.bot, guilds: [], session_id: `session-${this.identified}`, resume_gateway_url: this.url.replace("http", "ws") + "/gateway", application: { id: this.applicationId, flags: 0 }, shard: [0, 1] },
        });
      } else if (msg.op === 6) this.send(ws, { op: 0, t: "RESUMED", s: ++this.seq, d: {} });
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "").split("?")[0]!;
    if (req.method === "GET" && path.startsWith("/attachments/")) return this.serveAttachment(path, res);
    const interaction = /^\/api\/v10\/(?:interactions\/(\d+)\/([^/]+)\/callback|webhooks\/(\d+)\/([^/]+)(\/messages\/(?:@|%40)original)?)$/.exec(path);
    if (interaction) return this.handleInteraction(req, res, interaction);
    if (req.headers.authorization !== `Bot ${this.token}`) return sendJson(res, 401, { message: "401: Unauthorized", code: 0 });
    const { body, files } = await parseBody(await readRaw(req), req.headers["content-type"] ?? "");
    const commands = /^\/api\/v10\/applications\/(\d+)(?:\/guilds\/(\d+))?\/commands$/.exec(path);
    if (commands && req.method === "PUT") {
      if (commands[1] !== this.applicationId) return sendJson(res, 403, { message: "Missing Access", code: 50001 });
      if (this.refuseCommands) return sendJson(res, 403, { message: "Missing Access", code: 50001 });
      const list = body as unknown as DiscordCommandPut["commands"];
      this.commandPuts.push({ scope: commands[2] ?? "global", commands: list });
      return sendJson(res, 200, list.map((c) => ({ ...c, id: String(++this.nextId), application_id: this.applicationId, version: String(++this.nextId), default_member_permissions: null, ...(commands[2] ? { guild_id: commands[2] } : {}) })));
    }
    // the bot's own user (lurkbot onboard checks a token with it)
    if (req.method === "GET" && (path === "/api/v10/users/@me" || path === "/api/v10/users/%40me")) return sendJson(res, 200, this.bot);
    if (req.method === "GET" && path === "/api/v10/gateway/bot") {
      return sendJson(res, 200, { url: this.url.replace("http", "ws") + "/gateway", shards: 1, session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 } });
    }
    const reaction = /^\/api\/v10\/channels\/(\d+)\/messages\/(\d+)\/reactions\/([^/]+)\/(?:@|%40)me$/.exec(path);
    if (reaction) {
      const [, channelId, messageId, emoji] = reaction as unknown as [string, string, string, string];
      if (req.method !== "PUT" && req.method !== "DELETE") return sendJson(res, 405, { message: "405: Method Not Allowed", code: 0 });
      this.reactions.push({ method: req.method, channelId, messageId, emoji: decodeURIComponent(emoji) });
      res.writeHead(204).end();
      return;
    }
    const channel = /^\/api\/v10\/channels\/(\d+)(?:\/(messages|typing)(?:\/(\d+))?)?$/.exec(path);
    if (!channel) return sendJson(res, 404, { message: "404: Not Found", code: 0 });
    const [, channelId, sub, messageId] = channel as unknown as [string, string, string | undefined, string | undefined];
    if (req.method === "GET" && !sub) {
      const parent = this.threads.get(channelId);
      return sendJson(res, 200, { id: channelId, type: parent ? 11 : 0, ...(parent ? { parent_id: parent } : {}) });
    }
    if (sub === "typing") {
      res.writeHead(204).end();
      return;
    }
    if (req.method === "POST" && sub === "messages") {
      if (this.rateLimitNext > 0) {
        this.rateLimitNext--;
        return sendJson(res, 429, { message: "You are being rate limited.", retry_after: 0.3, global: false }, { "retry-after": "1", "x-ratelimit-scope": "user" });
      }
      const content = String(body.content ?? "");
      const voice = (Number(body.flags ?? 0) & IS_VOICE_MESSAGE) !== 0;
      if (voice) {
        const refusal = this.voiceRefusal(channelId, content, body, files);
        if (refusal) return sendJson(res, refusal.status, { message: refusal.message, code: refusal.code });
      }
      const id = String(++this.nextId);
      if (content.length > 2000) return sendJson(res, 400, { message: "Invalid Form Body", code: 50035 });
      if (!content && files.length === 0) return sendJson(res, 400, { message: "Cannot send an empty message", code: 50006 });
      this.messages.set(`${channelId}:${id}`, content);
      this.sent.push({ method: "POST", channelId, messageId: id, content, body, files });
      const meta = (Array.isArray(body.attachments) ? body.attachments : []) as Array<{ duration_secs?: number; waveform?: string }>;
      const attachments = files.map((f, i) => ({
        id: String(++this.nextId), filename: f.name, size: f.bytes.byteLength, content_type: f.contentType, url: `${this.url}/attachments/${channelId}/${i}/${f.name}`,
        ...(voice ? { duration_secs: meta[i]?.duration_secs, waveform: meta[i]?.waveform } : {}),
      }));
      return sendJson(res, 200, { id, channel_id: channelId, content, attachments, author: this.bot, timestamp: new Date().toISOString(), type: 0, flags: voice ? IS_VOICE_MESSAGE : 0 });
    }
    if (req.method === "PATCH" && messageId) {
      const key = `${channelId}:${messageId}`;
      if (!this.messages.has(key)) return sendJson(res, 404, { message: "Unknown Message", code: 10008 });
      const content = String(body.content ?? "");
      this.messages.set(key, content);
      this.sent.push({ method: "PATCH", channelId, messageId, content, body, files });
      return sendJson(res, 200, { id: messageId, channel_id: channelId, content, author: this.bot, type: 0 });
    }
    if (req.method === "DELETE" && messageId) {
      this.messages.delete(`${channelId}:${messageId}`);
      this.sent.push({ method: "DELETE", channelId, messageId, content: "", body, files });
      res.writeHead(204).end();
      return;
    }
    return sendJson(res, 405, { message: "405: Method Not Allowed", code: 0 });
  }

  /**
   * Why Discord would refuse a voice message (flag IS_VOICE_MESSAGE), as the real API answers:
   * 403 50173 where the bot may not send them (`refuseVoiceMessages`), 400 50159 with text, 50160
   * without exactly one OGG audio file, 50161 without a numeric duration_secs and a base64
   * waveform of at most 256 bytes.
   */
  private voiceRefusal(channelId: string, content: string, body: Record<string, unknown>, files: DiscordFile[]): { status: number; code: number; message: string } | undefined {
    if (this.refuseVoiceMessages.has(channelId)) return { status: 403, code: 50173, message: "You cannot send voice messages in this channel." };
    if (content) return { status: 400, code: 50159, message: "Voice messages do not support additional content." };
    if (files.length !== 1 || files[0]!.contentType !== "audio/ogg") return { status: 400, code: 50160, message: "Voice messages must have a single audio attachment." };
    const [meta] = (Array.isArray(body.attachments) ? body.attachments : []) as Array<{ id?: unknown; duration_secs?: unknown; waveform?: unknown }>;
    const waveform = typeof meta?.waveform === "string" && /^[A-Za-z0-9+/]*={0,2}$/.test(meta.waveform) ? Buffer.from(meta.waveform, "base64") : undefined;
    if (String(meta?.id) !== "0" || typeof meta?.duration_secs !== "number" || !(meta.duration_secs > 0) || !waveform || waveform.length === 0 || waveform.length > 256) {
      return { status: 400, code: 50161, message: "Voice messages must have supporting metadata." };
    }
    return undefined;
  }

  /** Interaction callbacks and the interaction webhook (no bot token: the interaction token authorizes). */
  private async handleInteraction(req: IncomingMessage, res: ServerResponse, m: RegExpExecArray): Promise<void> {
    const { body, files } = await parseBody(await readRaw(req), req.headers["content-type"] ?? "");
    const [, callbackId, callbackToken, appId, webhookToken, original] = m;
    if (callbackId) {
      const state = this.interactions.get(callbackId);
      if (req.method !== "POST" || !state || state.token !== callbackToken) return sendJson(res, 404, { message: "Unknown interaction", code: 10062 });
      if (state.callbacks.length > 0) return sendJson(res, 400, { message: "Interaction has already been acknowledged.", code: 40060 });
      state.callbacks.push(body);
      if (body.type === 5) {
        // the deferred message ("lurk is thinking…"): empty until edited
        state.originalId = String(++this.nextId);
        this.messages.set(`${state.channelId}:${state.originalId}`, "");
      }
      res.writeHead(204).end();
      return;
    }
    const state = [...this.interactions.values()].find((s) => s.token === webhookToken);
    if (appId !== this.applicationId || !state) return sendJson(res, 404, { message: "Unknown Webhook", code: 10015 });
    if (state.expired) return sendJson(res, 401, { message: "Invalid Webhook Token", code: 50027 });
    const content = String(body.content ?? "");
    if (content.length > 2000) return sendJson(res, 400, { message: "Invalid Form Body", code: 50035 });
    if (original) {
      if (!state.originalId || !this.messages.has(`${state.channelId}:${state.originalId}`)) return sendJson(res, 404, { message: "Unknown Message", code: 10008 });
      if (req.method === "DELETE") {
        this.messages.delete(`${state.channelId}:${state.originalId}`);
        this.sent.push({ method: "DELETE", channelId: state.channelId, messageId: state.originalId, content: "", body, files, via: "original", interactionId: state.id });
        res.writeHead(204).end();
        return;
      }
      if (req.method !== "PATCH") return sendJson(res, 405, { message: "405: Method Not Allowed", code: 0 });
      this.messages.set(`${state.channelId}:${state.originalId}`, content);
      this.sent.push({ method: "PATCH", channelId: state.channelId, messageId: state.originalId, content, body, files, via: "original", interactionId: state.id });
      return sendJson(res, 200, { id: state.originalId, channel_id: state.channelId, content, author: this.bot, type: 20, webhook_id: this.applicationId, application_id: this.applicationId });
    }
    if (req.method !== "POST" || state.callbacks.length === 0) return sendJson(res, 404, { message: "Unknown Webhook", code: 10015 });
    if (!content && files.length === 0) return sendJson(res, 400, { message: "Cannot send an empty message", code: 50006 });
    const id = String(++this.nextId);
    this.messages.set(`${state.channelId}:${id}`, content);
    this.sent.push({ method: "POST", channelId: state.channelId, messageId: id, content, body, files, via: "followup", interactionId: state.id });
    return sendJson(res, 200, { id, channel_id: state.channelId, content, author: this.bot, type: 0, webhook_id: this.applicationId, application_id: this.applicationId });
  }

  private serveAttachment(path: string, res: ServerResponse): void {
    const file = this.cdn.get(path);
    if (!file) {
      res.writeHead(404, { "content-type": "text/plain" }).end("Not Found");
      return;
    }
    this.downloads.push(path);
    res.writeHead(200, { "content-type": file.contentType ?? "application/octet-stream", "content-length": file.bytes.byteLength });
    res.end(file.bytes);
  }
}
