/**
 * A local WhatsApp Cloud API (Graph API) for the channel tests, speaking what Meta documents:
 * - `POST /<version>/<phoneNumberId>/messages`: JSON with `messaging_product: "whatsapp"`; a send
 *   (`to`, `type`, `text` / `image` / `audio` / `video` / `document` / `reaction`, `context`)
 *   answers `{ messaging_product, contacts: [{ input, wa_id }], messages: [{ id: "wamid.…" }] }`
 *   and is kept in `sent`; a read receipt with `typing_indicator` answers `{ success: true }` and
 *   is kept in `typings`;
 * - `POST /<version>/<phoneNumberId>/media`: multipart (messaging_product, type, file) -> `{ id }`,
 *   kept in `uploads`;
 * - `GET /<version>/<phoneNumberId>?fields=display_phone_number,verified_name`: the number's
 *   `{ id, display_phone_number, verified_name }` (the fields asked for; onboarding's check);
 * - `GET /<version>/<mediaId>`: `{ messaging_product, url, mime_type, sha256, file_size, id }` of
 *   a file `addMedia()` registered; `GET /download/<mediaId>` serves its bytes (`downloads`), or
 *   redirects where `addMedia`'s `redirectTo` says; its `url` option names another download url;
 * - every call needs `Authorization: Bearer <token>` (else 401 with Graph's code 190);
 * - `failNext(status, error)` makes the next message sends answer a Graph error.
 * The other direction: `userMessage()` / `userReaction()` build the `messages` webhook payload
 * of a user's message as Meta sends it (`entry[].changes[].value` with metadata, contacts and
 * messages), `deliver()` POSTs a payload to the channel signed with the app secret
 * (`X-Hub-Signature-256`), `verify()` does Meta's subscription GET.
 */
import { createHash, createHmac, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { closeLoopback, listenLoopback, readRaw, sendJson } from "./http.js";

export interface SentMessage { to: string; type: string; body: Record<string, any>; id: string; at: number }
export interface Uploaded { id: string; type: string; name: string; mime: string; bytes: Buffer }
interface Failure { status: number; error: Record<string, unknown>; headers?: Record<string, string> }

export const ALICE = { waId: "15550002222", name: "Alice" };

export class FakeWhatsAppServer {
  readonly version = "v26.0";
  readonly phoneNumberId = "106540352242922";
  readonly displayPhoneNumber = "+1 555-000-9999";
  readonly verifiedName = "LurkBot Test";
  readonly token = `EAAT${randomBytes(24).toString("hex")}`;
  readonly appSecret = randomBytes(16).toString("hex");
  readonly verifyToken = `verify-${randomBytes(12).toString("hex")}`;
  /** message sends accepted (not the typing indicators) */
  readonly sent: SentMessage[] = [];
  /** every attempt of a message send, failed ones too */
  readonly attempts: Record<string, any>[] = [];
  readonly typings: { messageId: string; at: number }[] = [];
  readonly uploads: Uploaded[] = [];
  readonly downloads: string[] = [];
  readonly unauthorized: string[] = [];
  private readonly media = new Map<string, { bytes: Buffer; mime: string; url?: string; redirectTo?: string }>();
  private readonly failures: Failure[] = [];
  private seq = 0;

  private constructor(private readonly server: Server, readonly url: string) {}

  static async start(): Promise<FakeWhatsAppServer> {
    let self!: FakeWhatsAppServer;
    const server = createServer((req, res) => {
      self.handle(req, res).catch((err) => sendJson(res, 500, { error: { message: String(err), code: 1 } }));
    });
    const url = await listenLoopback(server);
    self = new FakeWhatsAppServer(server, url);
    return self;
  }

  async close(): Promise<void> {
    await closeLoopback(this.server);
  }

  /** Registers a file a user message can carry (`url`: the download url to announce instead of this server's; `redirectTo`: where this server's download redirects); returns its media id. */
  addMedia(bytes: Buffer, mime: string, opts: { url?: string; redirectTo?: string } = {}): string {
    const id = String(900_000_000_000 + ++this.seq);
    this.media.set(id, { bytes, mime, ...opts });
    return id;
  }

  failNext(status: number, error: Record<string, unknown>, headers?: Record<string, string>): void {
    this.failures.push({ status, error, ...(headers ? { headers } : {}) });
  }

  sentTo(waId: string): SentMessage[] {
    return this.sent.filter((m) => m.to === waId);
  }

  private nextWamid(): string {
    return `wamid.HBgL${randomBytes(18).toString("base64url")}`;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", this.url);
    const raw = await readRaw(req);
    if (req.headers.authorization !== `Bearer ${this.token}`) {
      this.unauthorized.push(url.pathname);
      return sendJson(res, 401, { error: { message: "Invalid OAuth access token - Cannot parse access token", type: "OAuthException", code: 190, fbtrace_id: "A1" } });
    }
    const download = /^\/download\/(\d+)$/.exec(url.pathname);
    if (download && req.method === "GET") {
      const file = this.media.get(download[1]!);
      if (!file) return sendJson(res, 404, { error: { message: "not found", code: 100 } });
      this.downloads.push(download[1]!);
      if (file.redirectTo) {
        res.writeHead(302, { location: file.redirectTo, "content-length": 0 });
        res.end();
        return;
      }
      res.writeHead(200, { "content-type": file.mime, "content-length": file.bytes.length });
      res.end(file.bytes);
      return;
    }
    const parts = url.pathname.split("/").filter(Boolean);
    if (parts[0] !== this.version) return sendJson(res, 400, { error: { message: `Unknown version ${parts[0]}`, code: 2635 } });
    if (req.method === "GET" && parts.length === 2 && parts[1] === this.phoneNumberId) {
      const fields = (url.searchParams.get("fields") ?? "").split(",");
      const known: Record<string, string> = { display_phone_number: this.displayPhoneNumber, verified_name: this.verifiedName };
      return sendJson(res, 200, { ...Object.fromEntries(Object.entries(known).filter(([k]) => fields.includes(k))), id: this.phoneNumberId });
    }
    if (req.method === "GET" && parts.length === 2) {
      const file = this.media.get(parts[1]!);
      if (!file) return sendJson(res, 400, { error: { message: "Unsupported get request.", type: "GraphMethodException", code: 100 } });
      return sendJson(res, 200, { messaging_product: "whatsapp", url: file.url ?? `${this.url}/download/${parts[1]}`, mime_type: file.mime, sha256: createHash("sha256").update(file.bytes).digest("hex"), file_size: String(file.bytes.length), id: parts[1] });
    }
    if (req.method !== "POST" || parts[1] !== this.phoneNumberId || parts.length !== 3) return sendJson(res, 404, { error: { message: "Unknown path", code: 100 } });
    if (parts[2] === "media") return this.upload(req, raw, res);
    if (parts[2] !== "messages") return sendJson(res, 404, { error: { message: "Unknown path", code: 100 } });
    const body = JSON.parse(raw.toString("utf8")) as Record<string, any>;
    if (body.messaging_product !== "whatsapp") return sendJson(res, 400, { error: { message: "(#100) The parameter messaging_product is required.", code: 100 } });
    if (body.status === "read") {
      if (typeof body.message_id !== "string" || body.typing_indicator?.type !== "text") return sendJson(res, 400, { error: { message: "(#100) Invalid parameter", code: 100 } });
      this.typings.push({ messageId: body.message_id, at: Date.now() });
      return sendJson(res, 200, { success: true });
    }
    this.attempts.push(body);
    const failure = this.failures.shift();
    if (failure) return sendJson(res, failure.status, { error: failure.error }, failure.headers ?? {});
    if (typeof body.to !== "string" || !/^\d+$/.test(body.to) || typeof body.type !== "string" || body[body.type] === undefined) {
      return sendJson(res, 400, { error: { message: "(#100) Invalid parameter", code: 100 } });
    }
    const id = this.nextWamid();
    this.sent.push({ to: body.to, type: body.type, body, id, at: Date.now() });
    sendJson(res, 200, { messaging_product: "whatsapp", contacts: [{ input: body.to, wa_id: body.to }], messages: [{ id }] });
  }

  private async upload(req: IncomingMessage, raw: Buffer, res: ServerResponse): Promise<void> {
    const form = await new Request("http://x/", { method: "POST", headers: { "content-type": req.headers["content-type"] ?? "" }, body: raw }).formData();
    const file = form.get("file");
    if (form.get("messaging_product") !== "whatsapp" || typeof form.get("type") !== "string" || !(file instanceof Blob)) {
      return sendJson(res, 400, { error: { message: "(#100) Param file must be a file with one of the following types", code: 100 } });
    }
    const id = String(700_000_000_000 + ++this.seq);
    this.uploads.push({ id, type: form.get("type") as string, name: (file as File).name, mime: file.type, bytes: Buffer.from(await file.arrayBuffer()) });
    sendJson(res, 200, { id });
  }

  // --- the webhook side -------------------------------------------------------------------

  private payload(from: string, name: string | undefined, message: Record<string, unknown>): Record<string, unknown> {
    return {
      object: "whatsapp_business_account",
      entry: [{
        id: "102290129340398",
        changes: [{
          field: "messages",
          value: {
            messaging_product: "whatsapp",
            metadata: { display_phone_number: "15550009999", phone_number_id: this.phoneNumberId },
            ...(name ? { contacts: [{ profile: { name }, wa_id: from }] } : {}),
            messages: [{ from, id: this.nextWamid(), timestamp: String(Math.floor(Date.now() / 1000)), ...message }],
          },
        }],
      }],
    };
  }

  /** A user's message as Meta's webhook payload, and its wamid. */
  userMessage(opts: { from?: string; name?: string; text?: string; image?: { mediaId: string; mime: string; caption?: string }; context?: string; extra?: Record<string, unknown> }): { payload: Record<string, unknown>; id: string } {
    const from = opts.from ?? ALICE.waId;
    const message: Record<string, unknown> = opts.image
      ? { type: "image", image: { id: opts.image.mediaId, mime_type: opts.image.mime, sha256: "x", ...(opts.image.caption ? { caption: opts.image.caption } : {}) } }
      : { type: "text", text: { body: opts.text ?? "hi" } };
    if (opts.context) message.context = { from: "15550009999", id: opts.context };
    const payload = this.payload(from, opts.name ?? (from === ALICE.waId ? ALICE.name : undefined), { ...message, ...opts.extra });
    return { payload, id: idOf(payload) };
  }

  /** A user's reaction (`emoji: ""`: taken back) on message `messageId`. */
  userReaction(opts: { from?: string; messageId: string; emoji: string }): { payload: Record<string, unknown>; id: string } {
    const from = opts.from ?? ALICE.waId;
    const payload = this.payload(from, from === ALICE.waId ? ALICE.name : undefined, { type: "reaction", reaction: { message_id: opts.messageId, ...(opts.emoji ? { emoji: opts.emoji } : {}) } });
    return { payload, id: idOf(payload) };
  }

  /** A status update of a message the business sent (e.g. failed with 131047). */
  status(messageId: string, status: string, errors?: Record<string, unknown>[]): Record<string, unknown> {
    return {
      object: "whatsapp_business_account",
      entry: [{ id: "102290129340398", changes: [{ field: "messages", value: { messaging_product: "whatsapp", metadata: { display_phone_number: "15550009999", phone_number_id: this.phoneNumberId }, statuses: [{ id: messageId, status, timestamp: "1", recipient_id: ALICE.waId, ...(errors ? { errors } : {}) }] } }] }],
    };
  }

  /** POSTs a payload (or raw `body`) to the channel as Meta does, signed unless `signature` says otherwise; resolves to the status. */
  async deliver(target: string, payload: unknown, opts: { body?: string; signature?: string | null; secret?: string; method?: string } = {}): Promise<number> {
    const body = opts.body ?? JSON.stringify(payload);
    const signature = opts.signature === undefined ? `sha256=${createHmac("sha256", opts.secret ?? this.appSecret).update(body).digest("hex")}` : opts.signature;
    const res = await fetch(target, { method: opts.method ?? "POST", headers: { "content-type": "application/json", ...(signature !== null ? { "x-hub-signature-256": signature } : {}) }, ...(opts.method === "GET" ? {} : { body }) });
    await res.arrayBuffer();
    return res.status;
  }

  /** Meta's subscription check: GET with hub.mode, hub.verify_token, hub.challenge. */
  async verify(target: string, token: string, challenge = "1158201444"): Promise<{ status: number; text: string }> {
    const url = new URL(target);
    url.searchParams.set("hub.mode", "subscribe");
    url.searchParams.set("hub.verify_token", token);
    url.searchParams.set("hub.challenge", challenge);
    const res = await fetch(url);
    return { status: res.status, text: await res.text() };
  }
}

/** The wamid of the first message of a payload. */
export function idOf(payload: Record<string, any>): string {
  return payload.entry[0].changes[0].value.messages[0].id;
}
