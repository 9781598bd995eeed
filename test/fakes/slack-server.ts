/**
 * A local Slack for the channel tests: the Web API (`POST /api/<method>`, form or JSON bodies,
 * `{ok, ...}` answers: apps.connections.open, auth.test, chat.postMessage/update/delete, reactions.add/remove) and the
 * Socket Mode WebSocket (`hello`, `events_api`, `interactive` and `slash_commands` envelopes, pings; it records
 * each ACK `{envelope_id}` with its wall-clock time), as @slack/web-api and @slack/socket-mode
 * speak them. `rateLimitNextPosts(n)` answers chat.postMessage with 429 + Retry-After.
 * Files: a user's message can share files, served at their `url_private(_download)` only with
 * the bot token (`Authorization: Bearer xoxb-...`; without it, as Slack, a redirect to an HTML
 * sign-in page), each download recorded; uploads take Slack's external flow
 * (files.getUploadURLExternal -> POST the bytes, raw or multipart, to the upload_url here ->
 * files.completeUploadExternal), recorded with name, bytes, channel and thread.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { WebSocketServer, type WebSocket } from "ws";
import { closeLoopback, listenLoopback, readBody, readRaw, sendJson } from "./http.js";

export interface SlackSent { method: string; channel: string; ts: string; text: string; body: Record<string, unknown> }
export interface SlackAck { envelopeId: string; atMs: number }
/** A file a user shares; `announcedSize` (default: the real size) is what the event says. */
export interface SlackUserFile { name: string; mimetype: string; bytes: Uint8Array; announcedSize?: number }
export interface SlackDownload { path: string; authorized: boolean }
export interface SlackUpload { fileId: string; filename: string; title: string; bytes: Buffer; channel: string; threadTs?: string; ts: string }
export interface SlackEnvelope { envelope_id: string; type: string; payload: unknown; retry_attempt?: number; retry_reason?: string; accepts_response_payload: boolean }

const nowMs = () => performance.timeOrigin + performance.now();

export class FakeSlackServer {
  readonly botToken = "xoxb-test-0000000000-slack-bot-token";
  readonly appToken = "xapp-1-A000TEST-0000-slack-app-token";
  readonly bot = { userId: "UBOT0001", botId: "BBOT0001", teamId: "T0TEAM01" };
  readonly sent: SlackSent[] = [];
  /** current text of each bot message, by `<channel>:<ts>` */
  readonly messages = new Map<string, string>();
  readonly acks: SlackAck[] = [];
  /** the bot's reactions, `<channel>:<ts>:<name>` (reactions.add / reactions.remove) */
  readonly reactions = new Set<string>();
  /** Web API calls by method name */
  readonly calls: string[] = [];
  connections = 0;
  /** users' files by url path, the downloads asked for, and the files the bot uploaded */
  readonly hosted = new Map<string, { bytes: Uint8Array; mimetype: string }>();
  readonly downloads: SlackDownload[] = [];
  readonly uploads: SlackUpload[] = [];
  /** files.getUploadURLExternal answered, by file id: the bytes once posted to the upload_url */
  private readonly pendingUploads = new Map<string, { filename: string; length: number; bytes?: Buffer }>();
  private fileCounter = 0;
  /** chat.postMessage calls answered with 429 */
  rateLimited = 0;
  private readonly sockets = new Set<WebSocket>();
  private readonly wss: WebSocketServer;
  private rateLimitNext = 0;
  private tsCounter = 0;
  private readonly pinger: NodeJS.Timeout;

  private constructor(private readonly server: Server, readonly url: string) {
    this.wss = new WebSocketServer({ noServer: true });
    server.on("upgrade", (req, socket, head) => this.wss.handleUpgrade(req, socket, head, (ws) => this.onSocket(ws)));
    this.pinger = setInterval(() => { for (const ws of this.sockets) ws.ping("fake"); }, 5_000);
    this.pinger.unref();
  }

  static async start(): Promise<FakeSlackServer> {
    let fake!: FakeSlackServer;
    const server = createServer((req, res) => void fake.handle(req, res));
    fake = new FakeSlackServer(server, await listenLoopback(server));
    return fake;
  }

  get apiUrl(): string {
    return `${this.url}/api/`;
  }

  /** A new message ts, as Slack makes them (`<seconds>.<micro>`), increasing. */
  nextTs(): string {
    return `${Math.floor(Date.now() / 1000)}.${String(++this.tsCounter).padStart(6, "0")}`;
  }

  /** Sends an envelope to every connected socket; returns it (for a redelivery). */
  sendEnvelope(type: string, payload: unknown, retryAttempt = 0): SlackEnvelope {
    const envelope: SlackEnvelope = {
      envelope_id: randomUUID(), type, payload, accepts_response_payload: false,
      ...(type === "events_api" ? { retry_attempt: retryAttempt, retry_reason: retryAttempt ? "timeout" : "" } : {}),
    };
    for (const ws of this.sockets) ws.send(JSON.stringify(envelope));
    return envelope;
  }

  /** The same payload again under a new envelope id, as Slack retries an unacknowledged event. */
  redeliver(envelope: SlackEnvelope): SlackEnvelope {
    return this.sendEnvelope(envelope.type, envelope.payload, (envelope.retry_attempt ?? 0) + 1);
  }

  /** A user's message as an events_api envelope (`message` event, or `app_mention`). */
  userMessage(opts: { channel: string; text: string; channelType?: "im" | "channel" | "group" | "mpim"; threadTs?: string; user?: string; type?: "message" | "app_mention"; files?: SlackUserFile[] }): { envelope: SlackEnvelope; ts: string } {
    const ts = this.nextTs();
    const files = (opts.files ?? []).map((f) => this.hostFile(f));
    const event = {
      type: opts.type ?? "message", channel: opts.channel, user: opts.user ?? "UANN0001", text: opts.text, ts, team: this.bot.teamId,
      ...(opts.type === "app_mention" ? {} : { channel_type: opts.channelType ?? "im" }),
      ...(files.length ? { subtype: "file_share", files, upload: false, display_as_bot: false } : {}),
      ...(opts.threadTs ? { thread_ts: opts.threadTs } : {}), event_ts: ts,
    };
    const envelope = this.sendEnvelope("events_api", {
      token: "verification", team_id: this.bot.teamId, api_app_id: "A000TEST", event, type: "event_callback",
      event_id: `Ev${ts.replace(".", "")}`, event_time: Math.floor(Date.now() / 1000),
    });
    return { envelope, ts };
  }

  /** A slash command typed in a channel or DM (`slash_commands` envelope, Socket Mode). */
  slashCommand(opts: { channel: string; command: string; text: string; user?: string }): SlackEnvelope {
    return this.sendEnvelope("slash_commands", {
      token: "verification", team_id: this.bot.teamId, team_domain: "test", channel_id: opts.channel, channel_name: "directmessage",
      user_id: opts.user ?? "UANN0001", user_name: "ann", command: opts.command, text: opts.text, api_app_id: "A000TEST",
      is_enterprise_install: "false", response_url: "https://hooks.slack.test/commands/1", trigger_id: randomUUID(),
    });
  }

  /** A click on a Block Kit button of one of the bot's messages. */
  buttonClick(opts: { channel: string; messageTs: string; actionId: string; value: string; user?: string }): SlackEnvelope {
    return this.sendEnvelope("interactive", {
      type: "block_actions", user: { id: opts.user ?? "UANN0001", username: "ann", name: "ann", team_id: this.bot.teamId },
      api_app_id: "A000TEST", token: "verification", trigger_id: randomUUID(), team: { id: this.bot.teamId, domain: "test" },
      container: { type: "message", message_ts: opts.messageTs, channel_id: opts.channel, is_ephemeral: false },
      channel: { id: opts.channel, name: "directmessage" },
      message: { type: "message", ts: opts.messageTs, text: this.messages.get(`${opts.channel}:${opts.messageTs}`) ?? "", user: this.bot.userId, bot_id: this.bot.botId },
      actions: [{ type: "button", action_id: opts.actionId, block_id: "lurk_approval", value: opts.value, action_ts: `${Date.now() / 1000}` }],
    });
  }

  /** A file object as Slack puts it in a message event; its bytes served at its urls. */
  private hostFile(f: SlackUserFile): Record<string, unknown> {
    const id = `F${String(++this.fileCounter).padStart(8, "0")}`;
    const base = `/files-pri/${this.bot.teamId}-${id}`;
    const name = encodeURIComponent(f.name);
    this.hosted.set(`${base}/${name}`, f);
    this.hosted.set(`${base}/download/${name}`, f);
    return {
      id, created: Math.floor(Date.now() / 1000), name: f.name, title: f.name, mimetype: f.mimetype, filetype: f.name.split(".").pop() ?? "binary",
      user: "UANN0001", mode: "hosted", is_external: false, size: f.announcedSize ?? f.bytes.byteLength,
      url_private: `${this.url}${base}/${name}`, url_private_download: `${this.url}${base}/download/${name}`,
      permalink: `https://test.slack.com/files/UANN0001/${id}/${name}`,
    };
  }

  ackOf(envelopeId: string): SlackAck | undefined {
    return this.acks.find((a) => a.envelopeId === envelopeId);
  }

  rateLimitNextPosts(count: number): void {
    this.rateLimitNext = count;
  }

  async close(): Promise<void> {
    clearInterval(this.pinger);
    for (const s of this.sockets) s.terminate();
    this.wss.close();
    await closeLoopback(this.server);
  }

  private onSocket(ws: WebSocket): void {
    this.sockets.add(ws);
    this.connections++;
    ws.on("close", () => this.sockets.delete(ws));
    ws.send(JSON.stringify({ type: "hello", num_connections: 1, debug_info: { host: "fake-slack", approximate_connection_time: 3600 }, connection_info: { app_id: "A000TEST" } }));
    ws.on("message", (raw) => {
      const msg = JSON.parse(String(raw)) as { envelope_id?: string };
      if (msg.envelope_id) this.acks.push({ envelopeId: msg.envelope_id, atMs: nowMs() });
    });
  }

  /** A user's file: only with the bot token; otherwise Slack's redirect to its sign-in page. */
  private serveFile(req: IncomingMessage, res: ServerResponse, path: string): void {
    const authorized = req.headers.authorization === `Bearer ${this.botToken}`;
    this.downloads.push({ path, authorized });
    const file = this.hosted.get(path);
    if (!authorized) {
      res.writeHead(302, { location: `/signin?redir=${encodeURIComponent(path)}` }).end();
      return;
    }
    if (!file) {
      res.writeHead(404, { "content-type": "text/plain" }).end("file not found");
      return;
    }
    res.writeHead(200, { "content-type": file.mimetype, "content-length": file.bytes.byteLength });
    res.end(file.bytes);
  }

  /** The bytes of an external upload (raw, or the file of a multipart form, as @slack/web-api sends it). */
  private async receiveUpload(req: IncomingMessage, res: ServerResponse, fileId: string): Promise<void> {
    const pending = this.pendingUploads.get(fileId);
    const raw = await readRaw(req);
    if (!pending) {
      res.writeHead(404, { "content-type": "text/plain" }).end("upload url not found");
      return;
    }
    const type = req.headers["content-type"] ?? "";
    let bytes = raw;
    if (type.startsWith("multipart/form-data")) {
      const form = await new Response(raw, { headers: { "content-type": type } }).formData();
      const file = [...form.values()].find((v): v is File => typeof v !== "string");
      bytes = file ? Buffer.from(await file.arrayBuffer()) : Buffer.alloc(0);
    }
    pending.bytes = bytes;
    res.writeHead(200, { "content-type": "text/plain" }).end(`OK - ${bytes.byteLength}`);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "").split("?")[0]!;
    if (req.method === "GET" && path.startsWith("/files-pri/")) return this.serveFile(req, res, path);
    if (req.method === "GET" && path === "/signin") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<!DOCTYPE html><html><body>Sign in to Slack</body></html>");
      return;
    }
    const upload = /^\/upload\/v1\/(F\w+)$/.exec(path);
    if (req.method === "POST" && upload) return this.receiveUpload(req, res, upload[1]!);
    const method = /^\/api\/([a-zA-Z.]+)$/.exec(path)?.[1];
    if (req.method !== "POST" || !method) return sendJson(res, 404, { ok: false, error: "unknown_method" });
    this.calls.push(method);
    const raw = await readBody(req);
    const body: Record<string, unknown> = (req.headers["content-type"] ?? "").includes("application/json")
      ? (raw ? JSON.parse(raw) as Record<string, unknown> : {})
      : Object.fromEntries(new URLSearchParams(raw));
    if (typeof body.blocks === "string") body.blocks = JSON.parse(body.blocks);
    if (typeof body.files === "string") body.files = JSON.parse(body.files);
    const token = (req.headers.authorization ?? "").replace(/^Bearer /, "") || String(body.token ?? "");
    if (method === "apps.connections.open") {
      if (token !== this.appToken) return sendJson(res, 200, { ok: false, error: "invalid_auth" });
      return sendJson(res, 200, { ok: true, url: `${this.url.replace("http", "ws")}/socket` });
    }
    if (token !== this.botToken) return sendJson(res, 200, { ok: false, error: "invalid_auth" });
    const channel = String(body.channel ?? "");
    const text = String(body.text ?? "");
    switch (method) {
      case "auth.test":
        return sendJson(res, 200, { ok: true, url: "https://test.slack.com/", team: "Test", user: "lurk", team_id: this.bot.teamId, user_id: this.bot.userId, bot_id: this.bot.botId });
      case "chat.postMessage": {
        if (this.rateLimitNext > 0) {
          this.rateLimitNext--;
          this.rateLimited++;
          return sendJson(res, 429, { ok: false, error: "ratelimited" }, { "retry-after": "1" });
        }
        if (channel === "CGONE0001") return sendJson(res, 200, { ok: false, error: "channel_not_found" });
        if (!text && !body.blocks) return sendJson(res, 200, { ok: false, error: "no_text" });
        const ts = this.nextTs();
        this.messages.set(`${channel}:${ts}`, text);
        this.sent.push({ method, channel, ts, text, body });
        return sendJson(res, 200, { ok: true, channel, ts, message: { type: "message", text, user: this.bot.userId, bot_id: this.bot.botId, ts } });
      }
      case "chat.update": {
        const ts = String(body.ts ?? "");
        if (!this.messages.has(`${channel}:${ts}`)) return sendJson(res, 200, { ok: false, error: "message_not_found" });
        this.messages.set(`${channel}:${ts}`, text);
        this.sent.push({ method, channel, ts, text, body });
        return sendJson(res, 200, { ok: true, channel, ts, text });
      }
      case "chat.delete": {
        const ts = String(body.ts ?? "");
        if (!this.messages.delete(`${channel}:${ts}`)) return sendJson(res, 200, { ok: false, error: "message_not_found" });
        this.sent.push({ method, channel, ts, text: "", body });
        return sendJson(res, 200, { ok: true, channel, ts });
      }
      case "reactions.add":
      case "reactions.remove": {
        const key = `${channel}:${String(body.timestamp ?? "")}:${String(body.name ?? "")}`;
        if (!body.name || !body.timestamp) return sendJson(res, 200, { ok: false, error: "invalid_arguments" });
        if (method === "reactions.add" && this.reactions.has(key)) return sendJson(res, 200, { ok: false, error: "already_reacted" });
        if (method === "reactions.remove" && !this.reactions.delete(key)) return sendJson(res, 200, { ok: false, error: "no_reaction" });
        if (method === "reactions.add") this.reactions.add(key);
        return sendJson(res, 200, { ok: true });
      }
      case "files.getUploadURLExternal": {
        const filename = String(body.filename ?? "");
        const length = Number(body.length);
        if (!filename || !Number.isInteger(length) || length <= 0) return sendJson(res, 200, { ok: false, error: "invalid_arguments" });
        const fileId = `F${String(++this.fileCounter).padStart(8, "0")}`;
        this.pendingUploads.set(fileId, { filename, length });
        return sendJson(res, 200, { ok: true, upload_url: `${this.url}/upload/v1/${fileId}`, file_id: fileId });
      }
      case "files.completeUploadExternal":
        return this.completeUploads(res, body);
      default:
        return sendJson(res, 200, { ok: false, error: "unknown_method" });
    }
  }

  /** files.completeUploadExternal: shares the uploaded files into channel_id (and thread_ts). */
  private completeUploads(res: ServerResponse, body: Record<string, unknown>): void {
    const files = Array.isArray(body.files) ? body.files as { id?: string; title?: string }[] : [];
    const channel = String(body.channel_id ?? "");
    const threadTs = body.thread_ts ? String(body.thread_ts) : undefined;
    if (files.length === 0) return sendJson(res, 200, { ok: false, error: "invalid_arguments" });
    for (const f of files) {
      const pending = f.id ? this.pendingUploads.get(f.id) : undefined;
      if (!pending?.bytes) return sendJson(res, 200, { ok: false, error: "file_not_found" });
      if (pending.bytes.byteLength !== pending.length) return sendJson(res, 200, { ok: false, error: "file_upload_size_mismatch" });
    }
    if (channel === "CGONE0001") return sendJson(res, 200, { ok: false, error: "channel_not_found" });
    const ts = this.nextTs();
    const shared = files.map((f) => {
      const pending = this.pendingUploads.get(f.id!)!;
      this.pendingUploads.delete(f.id!);
      const title = f.title ?? pending.filename;
      this.uploads.push({ fileId: f.id!, filename: pending.filename, title, bytes: pending.bytes!, channel, ...(threadTs ? { threadTs } : {}), ts });
      const share = { ts, channel_name: channel.toLowerCase(), team_id: this.bot.teamId, share_user_id: this.bot.userId, source: "UNKNOWN", ...(threadTs ? { thread_ts: threadTs } : {}) };
      return {
        id: f.id, created: Math.floor(Date.now() / 1000), name: pending.filename, title, mimetype: "", size: pending.length, user: this.bot.userId,
        shares: { [channel.startsWith("C") ? "public" : "private"]: { [channel]: [share] } },
      };
    });
    return sendJson(res, 200, { ok: true, files: shared });
  }
}

