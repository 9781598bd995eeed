/**
 * A local Slack for the channel tests: the Web API (`POST /api/<method>`, form or JSON bodies,
 * `{ok, ...}` answers: apps.connections.open, auth.test, chat.postMessage/update/delete) and the
 * Socket Mode WebSocket (`hello`, `events_api`, `interactive` and `slash_commands` envelopes, pings; it records
 * each ACK `{envelope_id}` with its wall-clock time), as @slack/web-api and @slack/socket-mode
 * speak them. `rateLimitNextPosts(n)` answers chat.postMessage with 429 + Retry-After.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { WebSocketServer, type WebSocket } from "ws";
import { closeLoopback, listenLoopback, readBody, sendJson } from "./http.js";

export interface SlackSent { method: string; channel: string; ts: string; text: string; body: Record<string, unknown> }
export interface SlackAck { envelopeId: string; atMs: number }
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
  /** Web API calls by method name */
  readonly calls: string[] = [];
  connections = 0;
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
  userMessage(opts: { channel: string; text: string; channelType?: "im" | "channel" | "group" | "mpim"; threadTs?: string; user?: string; type?: "message" | "app_mention" }): { envelope: SlackEnvelope; ts: string } {
    const ts = this.nextTs();
    const event = {
      type: opts.type ?? "message", channel: opts.channel, user: opts.user ?? "UANN0001", text: opts.text, ts, team: this.bot.teamId,
      ...(opts.type === "app_mention" ? {} : { channel_type: opts.channelType ?? "im" }),
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

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = /^\/api\/([a-zA-Z.]+)$/.exec((req.url ?? "").split("?")[0]!)?.[1];
    if (req.method !== "POST" || !method) return sendJson(res, 404, { ok: false, error: "unknown_method" });
    this.calls.push(method);
    const raw = await readBody(req);
    const body: Record<string, unknown> = (req.headers["content-type"] ?? "").includes("application/json")
      ? (raw ? JSON.parse(raw) as Record<string, unknown> : {})
      : Object.fromEntries(new URLSearchParams(raw));
    if (typeof body.blocks === "string") body.blocks = JSON.parse(body.blocks);
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
      default:
        return sendJson(res, 200, { ok: false, error: "unknown_method" });
    }
  }
}
