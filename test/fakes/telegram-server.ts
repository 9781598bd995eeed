/**
 * A local Telegram Bot API server for the channel tests: `POST /bot<token>/<method>` with JSON
 * bodies, `{ ok, result }` / `{ ok: false, error_code, description, parameters }` answers, as
 * grammy's Api speaks it. getUpdates long-polls and honours `offset` (updates below the highest
 * offset seen are confirmed and never returned again, as Telegram does). `holdConfirmations()`
 * makes getUpdates calls that would confirm an update (a higher offset) wait unanswered, their
 * offset not taken, until `releasePolls()`. The test pushes user messages with `userMessage()`
 * and reads what the bot sent in `sent`; `failNext()` makes the next calls of a method fail.
 * setMessageReaction keeps the bot's reactions in `reactions` (an emoji outside a small allowed
 * set is REACTION_INVALID); `userReaction()` queues a user's `message_reaction` update.
 * Files: `addFile()` registers a file a user message can carry (photo, document, voice, audio,
 * video); `getFile` and `GET /file/bot<token>/<file_path>` serve it (`downloads` lists the
 * paths fetched). sendPhoto/sendDocument/sendVoice/sendAudio/sendVideo take multipart/form-data as grammy
 * uploads it (fields, and the file under `attach://<id>`); `uploads` holds what they got.
 * Webhooks: setWebhook/deleteWebhook/getWebhookInfo keep one `webhook` (url, secret_token,
 * allowed_updates) and record each change in `webhookCalls`; while one is set getUpdates answers
 * 409 as Telegram does. `deliverWebhook()` POSTs an update to the channel's listening address as
 * Telegram would (the secret header from the registered webhook, unless the test gives another).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { closeLoopback, listenLoopback, readRaw, sendJson } from "./http.js";

export interface SentMessage {
  method: "sendMessage" | "editMessageText" | "deleteMessage";
  chatId: number;
  messageId: number;
  text: string;
  body: Record<string, unknown>;
}

export interface Upload {
  method: "sendPhoto" | "sendDocument" | "sendVoice" | "sendAudio" | "sendVideo";
  chatId: number;
  threadId?: number;
  messageId: number;
  /** the file part's filename and bytes */
  name: string;
  bytes: Buffer;
  fields: Record<string, string>;
}

export interface FakeFile { fileId: string; path: string; bytes: Buffer; mime: string; name?: string }

interface Failure { status: number; description: string; retryAfter?: number }

/** a few of the emoji Telegram accepts as reactions (another is REACTION_INVALID, as Telegram answers) */
const ALLOWED_REACTIONS = new Set(["👍", "👎", "❤", "🔥", "🎉", "👀", "🙏", "👌", "😁", "🤔"]);

const UPLOAD_METHODS = new Set(["sendPhoto", "sendDocument", "sendVoice", "sendAudio", "sendVideo"]);

export class FakeTelegramServer {
  readonly bot = { id: 7000001, is_bot: true, first_name: "Lurk", username: "LurkTestBot" };
  /** every call: method and body */
  readonly calls: { method: string; body: Record<string, unknown> }[] = [];
  readonly sent: SentMessage[] = [];
  /** current text of each bot message, by `<chatId>:<messageId>` */
  readonly messages = new Map<string, string>();
  readonly uploads: Upload[] = [];
  /** the bot's reaction emoji on each message, by `<chatId>:<messageId>` (setMessageReaction) */
  readonly reactions = new Map<string, string[]>();
  /** file paths downloaded through /file/bot<token>/... */
  readonly downloads: string[] = [];
  private readonly files = new Map<string, FakeFile>();
  private readonly updates: Record<string, unknown>[] = [];
  private readonly failures = new Map<string, Failure[]>();
  private waiting: (() => void)[] = [];
  private nextUpdateId = 100;
  private nextMessageId = 500;
  /** the highest offset getUpdates was called with (updates below it are confirmed) */
  confirmedOffset = 0;
  private held: (() => void)[] | undefined;
  /** getUpdates calls waiting in holdPolls() */
  heldPolls = 0;
  /** the webhook set by setWebhook (undefined: none, getUpdates works) */
  webhook: { url: string; secretToken?: string; allowedUpdates?: unknown; dropPending?: unknown } | undefined;
  /** setWebhook / deleteWebhook calls in order */
  readonly webhookCalls: { method: "setWebhook" | "deleteWebhook"; body: Record<string, unknown> }[] = [];

  private constructor(private readonly server: Server, readonly url: string, readonly token: string) {}

  static async start(token = "123456:TEST-telegram-token-abcdefghij"): Promise<FakeTelegramServer> {
    let fake!: FakeTelegramServer;
    const server = createServer((req, res) => void fake.handle(req, res));
    fake = new FakeTelegramServer(server, await listenLoopback(server), token);
    return fake;
  }

  /** Registers a file for user messages to carry; returns its file_id. */
  addFile(bytes: Uint8Array, meta: { mime: string; name?: string }): string {
    const n = this.files.size + 1;
    const fileId = `file-id-${n}-${"x".repeat(20)}`;
    const folder = meta.mime.startsWith("image/") ? "photos" : meta.mime.startsWith("audio/") ? "voice" : "documents";
    const ext = meta.name?.split(".").at(-1) ?? meta.mime.split("/")[1];
    this.files.set(fileId, { fileId, path: `${folder}/file_${n}.${ext}`, bytes: Buffer.from(bytes), mime: meta.mime, ...(meta.name ? { name: meta.name } : {}) });
    return fileId;
  }

  /** The announced metadata of a registered file, as in a message's document/voice/audio/video. */
  private fileMeta(fileId: string): Record<string, unknown> {
    const f = this.files.get(fileId);
    if (!f) throw new Error(`no file ${fileId} in the fake: addFile() first`);
    return { file_id: f.fileId, file_unique_id: `u-${f.fileId}`, file_size: f.bytes.byteLength, mime_type: f.mime, ...(f.name ? { file_name: f.name } : {}) };
  }

  /** A user's message as an update, not queued for getUpdates: for deliverWebhook(). */
  userUpdate(opts: Parameters<FakeTelegramServer["userMessage"]>[0]): Record<string, unknown> {
    const messageId = this.userMessage(opts);
    const index = this.updates.findIndex((u) => (u.message as { message_id?: number } | undefined)?.message_id === messageId);
    return this.updates.splice(index, 1)[0]!;
  }

  /**
   * POSTs `update` to `target` (the channel's http://host:port/path) as Telegram does: JSON, with
   * the registered webhook's secret in X-Telegram-Bot-Api-Secret-Token (`secret` overrides it,
   * null sends none; `body` sends raw bytes instead). Resolves to the HTTP status.
   */
  async deliverWebhook(target: string, update: Record<string, unknown> | undefined, opts: { secret?: string | null; body?: string; method?: string } = {}): Promise<number> {
    const secret = opts.secret === undefined ? this.webhook?.secretToken : opts.secret;
    const res = await fetch(target, {
      method: opts.method ?? "POST",
      headers: { "content-type": "application/json", ...(secret ? { "X-Telegram-Bot-Api-Secret-Token": secret } : {}) },
      ...(opts.method && opts.method !== "POST" ? {} : { body: opts.body ?? JSON.stringify(update) }),
    });
    await res.arrayBuffer();
    return res.status;
  }

  /** Queues a user's message; returns its message id. `photo` lists file ids, smallest size first. */
  userMessage(opts: {
    chatId: number; text?: string; caption?: string; chatType?: "private" | "group" | "supergroup"; from?: { id: number; first_name: string };
    threadId?: number; entities?: { type: string; offset: number; length: number }[]; replyTo?: number;
    photo?: string[]; document?: string; voice?: string; audio?: string; video?: string;
  }): number {
    const messageId = ++this.nextMessageId;
    const chatType = opts.chatType ?? "private";
    const photo = opts.photo?.map((id, i) => {
      const { file_id, file_unique_id, file_size } = this.fileMeta(id);
      return { file_id, file_unique_id, file_size, width: 90 * (i + 1), height: 60 * (i + 1) };
    });
    const files = Object.fromEntries((["document", "voice", "audio", "video"] as const).filter((k) => opts[k]).map((k) => [k, this.fileMeta(opts[k]!)]));
    this.push({
      message: {
        message_id: messageId, date: Math.floor(Date.now() / 1000),
        ...(opts.text !== undefined ? { text: opts.text } : {}),
        ...(opts.caption !== undefined ? { caption: opts.caption } : {}),
        ...(photo ? { photo } : {}),
        ...files,
        chat: { id: opts.chatId, type: chatType, ...(chatType === "private" ? { first_name: "Ann" } : { title: "Team", is_forum: opts.threadId !== undefined }) },
        from: opts.from ?? { id: opts.chatId > 0 ? opts.chatId : 42, is_bot: false, first_name: "Ann" },
        ...(opts.entities ? { entities: opts.entities } : {}),
        ...(opts.threadId !== undefined ? { message_thread_id: opts.threadId, is_topic_message: true } : {}),
        ...(opts.replyTo !== undefined ? { reply_to_message: { message_id: opts.replyTo, date: 0, chat: { id: opts.chatId, type: chatType }, from: this.bot } } : {}),
      },
    });
    return messageId;
  }

  /**
   * Queues a user's `message_reaction` update (their reactions on a message before and after,
   * emoji strings); returns its update id.
   */
  userReaction(opts: { chatId: number; messageId: number; chatType?: "private" | "group" | "supergroup"; from?: { id: number; first_name: string; is_bot?: boolean }; old?: string[]; new?: string[] }): number {
    const chatType = opts.chatType ?? "private";
    const emoji = (e: string) => ({ type: "emoji", emoji: e });
    this.push({
      message_reaction: {
        chat: { id: opts.chatId, type: chatType, ...(chatType === "private" ? { first_name: "Ann" } : { title: "Team" }) },
        message_id: opts.messageId, date: Math.floor(Date.now() / 1000),
        user: { is_bot: false, ...(opts.from ?? { id: opts.chatId > 0 ? opts.chatId : 42, first_name: "Ann" }) },
        old_reaction: (opts.old ?? []).map(emoji), new_reaction: (opts.new ?? []).map(emoji),
      },
    });
    return this.nextUpdateId;
  }

  /** Queues an update as given (its update id is added): e.g. a malformed one. */
  pushUpdate(update: Record<string, unknown>): number {
    this.push(update);
    return this.nextUpdateId;
  }

  /** Queues a press of an inline button under a bot message. */
  buttonPress(opts: { chatId: number; messageId: number; data: string; fromId: number }): void {
    this.push({
      callback_query: {
        id: `cbq-${this.nextUpdateId}`, chat_instance: "ci", data: opts.data, from: { id: opts.fromId, is_bot: false, first_name: "Ann" },
        message: { message_id: opts.messageId, date: 0, chat: { id: opts.chatId, type: "private", first_name: "Ann" }, text: "" },
      },
    });
  }

  /** The next `count` calls of `method` answer this error. */
  failNext(method: string, failure: Failure, count = 1): void {
    this.failures.set(method, [...(this.failures.get(method) ?? []), ...Array.from({ length: count }, () => failure)]);
  }

  /** From now on getUpdates calls that confirm updates wait (offset not taken) until releasePolls(). */
  holdConfirmations(): void {
    this.held ??= [];
  }

  releasePolls(): void {
    const held = this.held ?? [];
    this.held = undefined;
    for (const r of held) r();
  }

  /** Updates not yet confirmed by an offset. */
  get unconfirmed(): number {
    return this.updates.filter((u) => (u.update_id as number) >= this.confirmedOffset).length;
  }

  async close(): Promise<void> {
    this.releasePolls();
    for (const w of this.waiting) w();
    await closeLoopback(this.server);
  }

  private push(update: Record<string, unknown>): void {
    this.updates.push({ update_id: ++this.nextUpdateId, ...update });
    const waiting = this.waiting;
    this.waiting = [];
    for (const w of waiting) w();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = (req.url ?? "").split("?")[0]!;
    const download = /^\/file\/bot([^/]+)\/(.+)$/.exec(url);
    if (download && req.method === "GET") return this.serveFile(res, download[1]!, decodeURIComponent(download[2]!));
    const match = /^\/bot([^/]+)\/(\w+)$/.exec(url);
    if (!match) return sendJson(res, 404, { ok: false, error_code: 404, description: "Not Found" });
    if (match[1] !== this.token) return sendJson(res, 401, { ok: false, error_code: 401, description: "Unauthorized" });
    const method = match[2]!;
    const raw = await readRaw(req);
    const type = req.headers["content-type"] ?? "";
    const multipart = /^multipart\/form-data;\s*boundary=(.+)$/i.exec(type);
    const form = multipart ? parseMultipart(raw, multipart[1]!.replace(/^"|"$/g, "")) : undefined;
    const body = (form ? form.fields : raw.length ? JSON.parse(raw.toString("utf8")) : {}) as Record<string, unknown>;
    this.calls.push({ method, body });
    const failure = this.failures.get(method)?.shift();
    if (failure) {
      return sendJson(res, failure.status, { ok: false, error_code: failure.status, description: failure.description, ...(failure.retryAfter ? { parameters: { retry_after: failure.retryAfter } } : {}) });
    }
    const ok = (result: unknown) => sendJson(res, 200, { ok: true, result });
    switch (method) {
      case "getMe":
        return ok(this.bot);
      case "setWebhook":
        this.webhookCalls.push({ method, body });
        if (!/^https:\/\//.test(String(body.url ?? ""))) return sendJson(res, 400, { ok: false, error_code: 400, description: "Bad Request: bad webhook: An HTTPS URL must be provided for webhook" });
        this.webhook = { url: String(body.url), ...(body.secret_token !== undefined ? { secretToken: String(body.secret_token) } : {}), allowedUpdates: body.allowed_updates, dropPending: body.drop_pending_updates };
        return ok(true);
      case "deleteWebhook":
        this.webhookCalls.push({ method, body });
        this.webhook = undefined;
        return ok(true);
      case "getWebhookInfo":
        return ok({ url: this.webhook?.url ?? "", has_custom_certificate: false, pending_update_count: this.webhook ? this.unconfirmed : 0 });
      case "sendChatAction":
      case "answerCallbackQuery":
        return ok(true);
      case "setMessageReaction": {
        // the bot's reaction on a message: the last call wins (an empty list takes it back)
        const reaction = (body.reaction ?? []) as { type: string; emoji?: string }[];
        if (reaction.some((r) => r.type === "emoji" && !ALLOWED_REACTIONS.has(r.emoji ?? ""))) return sendJson(res, 400, { ok: false, error_code: 400, description: "Bad Request: REACTION_INVALID" });
        this.reactions.set(`${Number(body.chat_id)}:${Number(body.message_id)}`, reaction.map((r) => r.emoji ?? ""));
        return ok(true);
      }
      case "getUpdates":
        if (this.webhook) return sendJson(res, 409, { ok: false, error_code: 409, description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first" });
        return ok(await this.getUpdates(body, req));
      case "sendMessage": {
        const chatId = Number(body.chat_id);
        const messageId = ++this.nextMessageId;
        const text = String(body.text ?? "");
        this.messages.set(`${chatId}:${messageId}`, text);
        this.sent.push({ method, chatId, messageId, text, body });
        return ok({ message_id: messageId, date: Math.floor(Date.now() / 1000), chat: { id: chatId, type: "private" }, from: this.bot, text });
      }
      case "editMessageText": {
        const chatId = Number(body.chat_id);
        const messageId = Number(body.message_id);
        const key = `${chatId}:${messageId}`;
        if (!this.messages.has(key)) return sendJson(res, 400, { ok: false, error_code: 400, description: "Bad Request: message to edit not found" });
        const text = String(body.text ?? "");
        if (this.messages.get(key) === text) return sendJson(res, 400, { ok: false, error_code: 400, description: "Bad Request: message is not modified" });
        this.messages.set(key, text);
        this.sent.push({ method, chatId, messageId, text, body });
        return ok({ message_id: messageId, date: 0, chat: { id: chatId, type: "private" }, text });
      }
      case "deleteMessage": {
        const chatId = Number(body.chat_id);
        const messageId = Number(body.message_id);
        this.messages.delete(`${chatId}:${messageId}`);
        this.sent.push({ method, chatId, messageId, text: "", body });
        return ok(true);
      }
      case "getFile": {
        const file = this.files.get(String(body.file_id));
        if (!file) return sendJson(res, 400, { ok: false, error_code: 400, description: "Bad Request: invalid file_id" });
        return ok({ file_id: file.fileId, file_unique_id: `u-${file.fileId}`, file_size: file.bytes.byteLength, file_path: file.path });
      }
      default:
        if (UPLOAD_METHODS.has(method)) return this.upload(res, method as Upload["method"], body, form);
        return sendJson(res, 404, { ok: false, error_code: 404, description: `Not Found: method ${method} is not in the fake` });
    }
  }

  /** sendPhoto & co.: the file field is `attach://<id>` naming a multipart file part (or a file_id already on the server). */
  private upload(res: ServerResponse, method: Upload["method"], body: Record<string, unknown>, form: Multipart | undefined): void {
    const field = { sendPhoto: "photo", sendDocument: "document", sendVoice: "voice", sendAudio: "audio", sendVideo: "video" }[method];
    const attach = /^attach:\/\/(.+)$/.exec(String(body[field] ?? ""));
    const part = attach ? form?.files[attach[1]!] : undefined;
    if (!part) return sendJson(res, 400, { ok: false, error_code: 400, description: `Bad Request: there is no ${field} in the request` });
    const chatId = Number(body.chat_id);
    const messageId = ++this.nextMessageId;
    const threadId = body.message_thread_id !== undefined ? Number(body.message_thread_id) : undefined;
    this.uploads.push({ method, chatId, messageId, name: part.filename, bytes: part.bytes, fields: form!.fields, ...(threadId !== undefined ? { threadId } : {}) });
    const fileId = this.addFile(part.bytes, { mime: "application/octet-stream", name: part.filename });
    return sendJson(res, 200, { ok: true, result: { message_id: messageId, date: Math.floor(Date.now() / 1000), chat: { id: chatId, type: "private" }, from: this.bot, [field]: field === "photo" ? [{ file_id: fileId, file_unique_id: `u-${fileId}`, width: 90, height: 60 }] : { file_id: fileId, file_unique_id: `u-${fileId}` } } });
  }

  private serveFile(res: ServerResponse, token: string, path: string): void {
    if (token !== this.token) return sendJson(res, 401, { ok: false, error_code: 401, description: "Unauthorized" });
    const file = [...this.files.values()].find((f) => f.path === path);
    if (!file) return sendJson(res, 404, { ok: false, error_code: 404, description: "Not Found" });
    this.downloads.push(path);
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": file.bytes.byteLength });
    res.end(file.bytes);
  }

  private async getUpdates(body: Record<string, unknown>, req: IncomingMessage): Promise<unknown[]> {
    if (this.held && Number(body.offset ?? 0) > this.confirmedOffset) {
      this.heldPolls++;
      await new Promise<void>((resolve) => this.held!.push(resolve));
      this.heldPolls--;
      // a caller that died while held never confirmed anything
      if (req.socket.destroyed) return [];
    }
    const offset = Number(body.offset ?? 0);
    if (offset > this.confirmedOffset) this.confirmedOffset = offset;
    const pending = () => this.updates.filter((u) => (u.update_id as number) >= Math.max(offset, this.confirmedOffset)).slice(0, Number(body.limit ?? 100));
    const timeoutSec = Number(body.timeout ?? 0);
    if (pending().length === 0 && timeoutSec > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutSec * 1000);
        req.once("close", () => { clearTimeout(timer); resolve(); });
        this.waiting.push(() => { clearTimeout(timer); resolve(); });
      });
    }
    return pending();
  }
}


interface Multipart { fields: Record<string, string>; files: Record<string, { filename: string; bytes: Buffer }> }

/** multipart/form-data (RFC 7578): text fields, and file parts by field name. Header names are case-insensitive, filename quoted or not (grammy does not quote it). */
function parseMultipart(body: Buffer, boundary: string): Multipart {
  const out: Multipart = { fields: {}, files: {} };
  const delimiter = Buffer.from(`--${boundary}`);
  let start = body.indexOf(delimiter);
  while (start !== -1) {
    let from = start + delimiter.length;
    if (body.subarray(from, from + 2).toString() === "--") break;
    from += 2; // CRLF after the delimiter
    const next = body.indexOf(delimiter, from);
    if (next === -1) break;
    const part = body.subarray(from, next - 2); // CRLF before the next delimiter
    const headerEnd = part.indexOf("\r\n\r\n");
    const headers = part.subarray(0, headerEnd).toString("utf8");
    const content = part.subarray(headerEnd + 4);
    const disposition = /^content-disposition:\s*form-data(.*)$/im.exec(headers)?.[1] ?? "";
    const name = /;\s*name="([^"]*)"/.exec(disposition)?.[1] ?? "";
    const filename = /;\s*filename=(?:"([^"]*)"|([^;\r\n]*))/.exec(disposition);
    if (filename) out.files[name] = { filename: (filename[1] ?? filename[2] ?? "").trim(), bytes: Buffer.from(content) };
    else out.fields[name] = content.toString("utf8");
    start = next;
  }
  return out;
}
