/**
 * A local signal-cli HTTP daemon (`signal-cli -a +NUMBER daemon --http`) for the Signal channel
 * tests, on its wire format:
 *  - `POST /api/v1/rpc`: JSON-RPC 2.0 (Content-Type application/json, else 415), answers
 *    `{ jsonrpc, id, result }` or `{ jsonrpc, id, error: { code, message, data } }` with HTTP 200;
 *    methods version, listAccounts, send (recipient[] or groupId, message, attachments as data
 *    URIs, quoteTimestamp/quoteAuthor -> `{ timestamp, results }`; with `editTimestamp` an edit of
 *    the bot's message of that timestamp), sendReaction (emoji, targetAuthor, targetTimestamp,
 *    remove; one reaction per message and sender, a new emoji replaces it, as Signal does),
 *    remoteDelete (targetTimestamp: the bot's own message), all as signal-cli 0.13 names their
 *    JSON-RPC params (the cli's options in camelCase) and answering `{ timestamp, results }`;
 *    `botMessages` and `reactions` hold the state they made; sendTyping, sendReceipt,
 *    getAttachment (`{ data: base64 }`; with `slowAnswers` written in 64 KiB pieces with a pause,
 *    recorded in `streamed` with whether the client hung up first), listGroups. `calls` records
 *    each; `failNext()` makes the next calls of a method answer a JSON-RPC error;
 *  - `GET /api/v1/events`: server-sent events `id:<n>` `event:receive` `data:{"envelope":...,"account":...}`,
 *    ":" keep-alives; signal-cli keeps its events and a client reconnecting with `Last-Event-ID`
 *    gets those after it (an unknown id: all kept, as after a signal-cli restart: `forgetIds()`);
 *    `dropConnections()` cuts every stream, `emitRaw()` writes any text into them;
 *  - `GET /api/v1/check`: 200.
 * `userMessage()` builds a real envelope (dataMessage with groupInfo, mentions, quote, attachments);
 * `userReaction()` one whose dataMessage holds a `reaction` as signal-cli 0.13 gives it (emoji,
 * targetAuthor, targetAuthorNumber, targetAuthorUuid, targetSentTimestamp, isRemove).
 */
import { randomUUID } from "node:crypto";
import { createServer, type Server, type ServerResponse } from "node:http";
import { closeLoopback, drainOrClose, listenLoopback, readBody, sendJson } from "./http.js";

export interface RpcCall { method: string; params: Record<string, unknown>; at: number }
interface RpcFailure { code: number; message: string; data?: unknown }
export interface FakeAttachment { id: string; bytes: Buffer; contentType: string; filename?: string }

export interface UserMessageOpts {
  text?: string;
  /** a group message (base64 id) */
  groupId?: string;
  from?: { number: string; uuid: string; name?: string };
  mentions?: { number?: string; uuid?: string; start: number; length: number }[];
  quote?: { id: number; authorNumber: string; authorUuid?: string; text: string };
  attachments?: FakeAttachment[];
  timestamp?: number;
}

export interface UserReactionOpts {
  emoji: string;
  /** the reacted message's author ("bot": this account) and timestamp */
  target: { number: string; uuid: string } | "bot";
  targetTimestamp: number;
  remove?: boolean;
  groupId?: string;
  from?: { number: string; uuid: string; name?: string };
}

export class FakeSignalCli {
  readonly account = "+15550001111";
  readonly accountUuid = "a1b2c3d4-0000-4000-8000-00000000b07a";
  readonly alice = { number: "+15550002222", uuid: "c0ffee00-1111-4111-8111-00000000a11c", name: "Alice" };
  readonly calls: RpcCall[] = [];
  /** what the bot sent, by timestamp: the text (after edits), each edit, whether it was deleted */
  readonly botMessages = new Map<number, { to: string; text: string; edits: string[]; deleted: boolean }>();
  /** the bot's reactions: `<targetAuthor>:<targetTimestamp>` -> emoji */
  readonly reactions = new Map<string, string>();
  /** getAttachment answers stream slowly (64 KiB every `slowAnswers` ms) */
  slowAnswers = 0;
  /** each slow answer: bytes written of its total, whether all were, whether the client hung up first */
  readonly streamed: { written: number; total: number; finished: boolean; clientClosed: boolean }[] = [];
  /** every GET /api/v1/events with the Last-Event-ID it sent */
  readonly connects: { lastEventId: string | undefined }[] = [];
  private readonly events: { id: number; data: string }[] = [];
  private readonly streams = new Set<ServerResponse>();
  private readonly failures = new Map<string, RpcFailure[]>();
  private readonly attachments = new Map<string, FakeAttachment>();
  private nextEventId = 1;
  private lastTimestamp = Date.now();
  /** event ids before this were "forgotten": a Last-Event-ID below it is unknown */
  private epoch = 0;

  private constructor(private readonly server: Server, readonly url: string) {}

  static async start(): Promise<FakeSignalCli> {
    let fake!: FakeSignalCli;
    const server = createServer((req, res) => void fake.handle(req, res).catch(() => { if (!res.headersSent) res.writeHead(500); res.end(); }));
    const url = await listenLoopback(server);
    fake = new FakeSignalCli(server, url);
    return fake;
  }

  /** A timestamp after every earlier one (Signal message ids are their sender's clock). */
  nextTimestamp(): number {
    this.lastTimestamp = Math.max(Date.now(), this.lastTimestamp + 1);
    return this.lastTimestamp;
  }

  addAttachment(bytes: Buffer, contentType: string, filename?: string): FakeAttachment {
    const a = { id: `${randomUUID().replace(/-/g, "").slice(0, 20)}.${contentType.split("/")[1] ?? "bin"}`, bytes, contentType, ...(filename ? { filename } : {}) };
    this.attachments.set(a.id, a);
    return a;
  }

  /** Pushes a user's message as signal-cli would receive it; returns its envelope. */
  userMessage(o: UserMessageOpts): { envelope: Record<string, unknown>; timestamp: number; eventId: number } {
    const from = o.from ?? this.alice;
    const timestamp = o.timestamp ?? this.nextTimestamp();
    const dataMessage: Record<string, unknown> = { timestamp, message: o.text ?? null, expiresInSeconds: 0, viewOnce: false };
    if (o.groupId) dataMessage.groupInfo = { groupId: o.groupId, groupName: "Test group", revision: 2, type: "DELIVER" };
    if (o.mentions) dataMessage.mentions = o.mentions.map((m) => ({ name: m.number ?? m.uuid, number: m.number ?? null, uuid: m.uuid ?? null, start: m.start, length: m.length }));
    if (o.quote) dataMessage.quote = { id: o.quote.id, author: o.quote.authorNumber, authorNumber: o.quote.authorNumber, authorUuid: o.quote.authorUuid ?? null, text: o.quote.text, attachments: [] };
    if (o.attachments) {
      dataMessage.attachments = o.attachments.map((a) => ({ contentType: a.contentType, filename: a.filename ?? null, id: a.id, size: a.bytes.length, width: null, height: null, caption: null, uploadTimestamp: timestamp }));
    }
    return this.emitEnvelope(from, timestamp, dataMessage);
  }

  /** Pushes a user's reaction (or its removal) as signal-cli would receive it. */
  userReaction(o: UserReactionOpts): { envelope: Record<string, unknown>; timestamp: number; eventId: number } {
    const from = o.from ?? this.alice;
    const timestamp = this.nextTimestamp();
    const author = o.target === "bot" ? { number: this.account, uuid: this.accountUuid } : o.target;
    const dataMessage: Record<string, unknown> = {
      timestamp, message: null, expiresInSeconds: 0, viewOnce: false,
      reaction: { emoji: o.emoji, targetAuthor: author.number, targetAuthorNumber: author.number, targetAuthorUuid: author.uuid, targetSentTimestamp: o.targetTimestamp, isRemove: o.remove === true },
    };
    if (o.groupId) dataMessage.groupInfo = { groupId: o.groupId, groupName: "Test group", revision: 2, type: "DELIVER" };
    return this.emitEnvelope(from, timestamp, dataMessage);
  }

  private emitEnvelope(from: { number: string; uuid: string; name?: string }, timestamp: number, dataMessage: Record<string, unknown>): { envelope: Record<string, unknown>; timestamp: number; eventId: number } {
    const envelope = {
      source: from.number, sourceNumber: from.number, sourceUuid: from.uuid, sourceName: from.name ?? null, sourceDevice: 1,
      timestamp, serverReceivedTimestamp: timestamp + 5, serverDeliveredTimestamp: timestamp + 9, dataMessage,
    };
    const eventId = this.emit({ envelope, account: this.account });
    return { envelope, timestamp, eventId };
  }

  /** Pushes any receive event (typing, receipts, sync messages...); returns its id. */
  emit(data: unknown): number {
    const id = this.nextEventId++;
    const line = JSON.stringify(data);
    this.events.push({ id, data: line });
    if (this.events.length > 1000) this.events.shift();
    for (const res of this.streams) res.write(`id:${id}\nevent:receive\ndata:${line}\n\n`);
    return id;
  }

  /** Writes raw text into every open event stream (malformed events). */
  emitRaw(text: string): void {
    for (const res of this.streams) res.write(text);
  }

  /** Cuts every open event stream (the client reconnects). */
  dropConnections(): void {
    for (const res of this.streams) res.destroy();
    this.streams.clear();
  }

  /** As after a signal-cli restart: the ids sent so far are unknown; a reconnect gets every kept event. */
  forgetIds(): void {
    this.epoch = this.nextEventId;
  }

  get openStreams(): number {
    return this.streams.size;
  }

  failNext(method: string, error: RpcFailure, count = 1): void {
    const list = this.failures.get(method) ?? [];
    for (let i = 0; i < count; i++) list.push(error);
    this.failures.set(method, list);
  }

  sends(): RpcCall[] {
    return this.calls.filter((c) => c.method === "send");
  }

  private async handle(req: import("node:http").IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", this.url).pathname;
    if (path === "/api/v1/check") {
      res.writeHead(req.method === "GET" ? 200 : 405).end();
      return;
    }
    if (path === "/api/v1/events") {
      if (req.method !== "GET") return void res.writeHead(405).end();
      const header = req.headers["last-event-id"];
      const lastEventId = typeof header === "string" ? header : undefined;
      this.connects.push({ lastEventId });
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.flushHeaders();
      const known = lastEventId !== undefined && /^\d+$/.test(lastEventId) && Number(lastEventId) >= this.epoch && this.events.some((e) => e.id === Number(lastEventId));
      if (lastEventId !== undefined) {
        for (const e of this.events) if (!known || e.id > Number(lastEventId)) res.write(`id:${e.id}\nevent:receive\ndata:${e.data}\n\n`);
      }
      this.streams.add(res);
      const keepAlive = setInterval(() => res.write(":\n"), 1000);
      res.on("close", () => {
        clearInterval(keepAlive);
        this.streams.delete(res);
      });
      return;
    }
    if (path !== "/api/v1/rpc") return void res.writeHead(404).end();
    if (req.method !== "POST") return void res.writeHead(405).end();
    if (!(req.headers["content-type"] ?? "").startsWith("application/json")) return void res.writeHead(415).end();
    let request: { jsonrpc?: string; id?: unknown; method?: string; params?: Record<string, unknown> };
    try {
      request = JSON.parse(await readBody(req));
    } catch {
      return sendJson(res, 200, { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error", data: null } });
    }
    const id = request.id ?? null;
    const method = request.method ?? "";
    const params = request.params ?? {};
    this.calls.push({ method, params, at: Date.now() });
    const failure = this.failures.get(method)?.shift();
    if (failure) return sendJson(res, 200, { jsonrpc: "2.0", id, error: { code: failure.code, message: failure.message, data: failure.data ?? null } });
    if (params.account !== undefined && params.account !== this.account) {
      return sendJson(res, 200, { jsonrpc: "2.0", id, error: { code: -32602, message: "Specified account does not exist", data: null } });
    }
    const ok = (result: unknown) => sendJson(res, 200, { jsonrpc: "2.0", id, result });
    // the conversation of send, sendReaction and remoteDelete
    const recipients = Array.isArray(params.recipient) ? params.recipient as string[] : typeof params.recipient === "string" ? [params.recipient] : [];
    const noRecipients = recipients.length === 0 && !params.groupId;
    switch (method) {
      case "version": return ok({ version: "0.13.99-fake" });
      case "listAccounts": return ok([{ number: this.account, uuid: this.accountUuid }]);
      case "listGroups": return ok([]);
      case "sendTyping":
      case "sendReceipt": return ok({ timestamp: this.nextTimestamp(), results: [] });
      case "getAttachment": {
        const a = this.attachments.get(String(params.id));
        if (!a) return sendJson(res, 200, { jsonrpc: "2.0", id, error: { code: -1, message: `Attachment file not found: ${String(params.id)}`, data: null } });
        if (this.slowAnswers > 0) return this.streamSlowly(res, JSON.stringify({ jsonrpc: "2.0", id, result: { data: a.bytes.toString("base64") } }));
        return ok({ data: a.bytes.toString("base64") });
      }
      case "sendReaction":
      case "remoteDelete": {
        if (noRecipients) return sendJson(res, 200, { jsonrpc: "2.0", id, error: { code: -1, message: "No recipients given", data: null } });
        const targetTimestamp = params.targetTimestamp;
        if (typeof targetTimestamp !== "number" || !Number.isSafeInteger(targetTimestamp)) return sendJson(res, 200, { jsonrpc: "2.0", id, error: { code: -32602, message: "Invalid params: targetTimestamp is required", data: null } });
        if (method === "remoteDelete") {
          const mine = this.botMessages.get(targetTimestamp);
          if (mine) mine.deleted = true;
        } else {
          if (typeof params.emoji !== "string" || !params.emoji || typeof params.targetAuthor !== "string" || !params.targetAuthor) {
            return sendJson(res, 200, { jsonrpc: "2.0", id, error: { code: -32602, message: "Invalid params: emoji and targetAuthor are required", data: null } });
          }
          const key = `${params.targetAuthor}:${targetTimestamp}`;
          if (params.remove === true) {
            if (this.reactions.get(key) === params.emoji) this.reactions.delete(key);
          } else this.reactions.set(key, params.emoji);
        }
        return ok({ timestamp: this.nextTimestamp(), results: this.results(recipients, params.groupId) });
      }
      case "send": {
        if (noRecipients) return sendJson(res, 200, { jsonrpc: "2.0", id, error: { code: -1, message: "No recipients given", data: null } });
        const attachments = (params.attachments ?? []) as unknown[];
        if (!params.message && attachments.length === 0) {
          return sendJson(res, 200, { jsonrpc: "2.0", id, error: { code: -1, message: "Sending empty message is not allowed, either a message, attachment or sticker must be given.", data: null } });
        }
        if (attachments.some((a) => typeof a !== "string" || !/^data:[\w.+-]+\/[\w.+-]+(;filename=[^;,]*)?;base64,[A-Za-z0-9+/=]+$/.test(a))) {
          return sendJson(res, 200, { jsonrpc: "2.0", id, error: { code: -3, message: "Failed to send message: invalid attachment (AttachmentInvalidException)", data: null } });
        }
        const timestamp = this.nextTimestamp();
        const text = typeof params.message === "string" ? params.message : "";
        if (typeof params.editTimestamp === "number") {
          const mine = this.botMessages.get(params.editTimestamp);
          if (mine) {
            mine.text = text;
            mine.edits.push(text);
          }
        } else this.botMessages.set(timestamp, { to: String(params.groupId ?? recipients[0]), text, edits: [], deleted: false });
        return ok({ timestamp, results: this.results(recipients, params.groupId) });
      }
      default:
        return sendJson(res, 200, { jsonrpc: "2.0", id, error: { code: -32601, message: "Method not implemented", data: null } });
    }
  }

  /** A send's per-recipient results (a group's: its other member). */
  private results(recipients: string[], groupId: unknown): unknown[] {
    if (groupId) return [{ recipientAddress: { uuid: this.alice.uuid, number: this.alice.number }, groupId, type: "SUCCESS" }];
    return recipients.map((r) => ({ recipientAddress: { uuid: r.startsWith("+") ? null : r, number: r.startsWith("+") ? r : null }, type: "SUCCESS" }));
  }

  private async streamSlowly(res: ServerResponse, body: string): Promise<void> {
    const bytes = Buffer.from(body);
    const record = { written: 0, total: bytes.length, finished: false, clientClosed: false };
    this.streamed.push(record);
    res.on("close", () => { if (!res.writableFinished) record.clientClosed = true; });
    res.writeHead(200, { "content-type": "application/json" });
    const piece = 64 * 1024;
    while (record.written < bytes.length) {
      if (record.clientClosed || res.destroyed) return;
      const ok = res.write(bytes.subarray(record.written, record.written + piece));
      record.written = Math.min(bytes.length, record.written + piece);
      if (!ok) await drainOrClose(res);
      await new Promise((r) => setTimeout(r, this.slowAnswers));
    }
    if (record.clientClosed || res.destroyed) return;
    res.end();
    record.finished = true;
  }

  async close(): Promise<void> {
    this.dropConnections();
    await closeLoopback(this.server);
  }
}
