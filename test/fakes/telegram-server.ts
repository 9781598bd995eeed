/**
 * A local Telegram Bot API server for the channel tests: `POST /bot<token>/<method>` with JSON
 * bodies, `{ ok, result }` / `{ ok: false, error_code, description, parameters }` answers, as
 * grammy's Api speaks it. getUpdates long-polls and honours `offset` (updates below the highest
 * offset seen are confirmed and never returned again, as Telegram does). `holdConfirmations()`
 * makes getUpdates calls that would confirm an update (a higher offset) wait unanswered, their
 * offset not taken, until `releasePolls()`. The test pushes user messages with `userMessage()`
 * and reads what the bot sent in `sent`; `failNext()` makes the next calls of a method fail.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { closeLoopback, listenLoopback, readBody, sendJson } from "./http.js";

export interface SentMessage {
  method: "sendMessage" | "editMessageText" | "deleteMessage";
  chatId: number;
  messageId: number;
  text: string;
  body: Record<string, unknown>;
}

interface Failure { status: number; description: string; retryAfter?: number }

export class FakeTelegramServer {
  readonly bot = { id: 7000001, is_bot: true, first_name: "Lurk", username: "LurkTestBot" };
  /** every call: method and body */
  readonly calls: { method: string; body: Record<string, unknown> }[] = [];
  readonly sent: SentMessage[] = [];
  /** current text of each bot message, by `<chatId>:<messageId>` */
  readonly messages = new Map<string, string>();
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

  private constructor(private readonly server: Server, readonly url: string, readonly token: string) {}

  static async start(token = "123456:TEST-telegram-token-abcdefghij"): Promise<FakeTelegramServer> {
    let fake!: FakeTelegramServer;
    const server = createServer((req, res) => void fake.handle(req, res));
    fake = new FakeTelegramServer(server, await listenLoopback(server), token);
    return fake;
  }

  /** Queues a user's message; returns its message id. */
  userMessage(opts: {
    chatId: number; text: string; chatType?: "private" | "group" | "supergroup"; from?: { id: number; first_name: string };
    threadId?: number; entities?: { type: string; offset: number; length: number }[]; replyTo?: number;
  }): number {
    const messageId = ++this.nextMessageId;
    const chatType = opts.chatType ?? "private";
    this.push({
      message: {
        message_id: messageId, date: Math.floor(Date.now() / 1000), text: opts.text,
        chat: { id: opts.chatId, type: chatType, ...(chatType === "private" ? { first_name: "Ann" } : { title: "Team", is_forum: opts.threadId !== undefined }) },
        from: opts.from ?? { id: opts.chatId > 0 ? opts.chatId : 42, is_bot: false, first_name: "Ann" },
        ...(opts.entities ? { entities: opts.entities } : {}),
        ...(opts.threadId !== undefined ? { message_thread_id: opts.threadId, is_topic_message: true } : {}),
        ...(opts.replyTo !== undefined ? { reply_to_message: { message_id: opts.replyTo, date: 0, chat: { id: opts.chatId, type: chatType }, from: this.bot } } : {}),
      },
    });
    return messageId;
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
    const match = /^\/bot([^/]+)\/(\w+)$/.exec((req.url ?? "").split("?")[0]!);
    if (!match) return sendJson(res, 404, { ok: false, error_code: 404, description: "Not Found" });
    if (match[1] !== this.token) return sendJson(res, 401, { ok: false, error_code: 401, description: "Unauthorized" });
    const method = match[2]!;
    const raw = await readBody(req);
    const body = (raw ? JSON.parse(raw) : {}) as Record<string, unknown>;
    this.calls.push({ method, body });
    const failure = this.failures.get(method)?.shift();
    if (failure) {
      return sendJson(res, failure.status, { ok: false, error_code: failure.status, description: failure.description, ...(failure.retryAfter ? { parameters: { retry_after: failure.retryAfter } } : {}) });
    }
    const ok = (result: unknown) => sendJson(res, 200, { ok: true, result });
    switch (method) {
      case "getMe":
        return ok(this.bot);
      case "deleteWebhook":
      case "sendChatAction":
      case "answerCallbackQuery":
        return ok(true);
      case "getUpdates":
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
      default:
        return sendJson(res, 404, { ok: false, error_code: 404, description: `Not Found: method ${method} is not in the fake` });
    }
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
