/**
 * A local Matrix homeserver for the channel tests, speaking the Client-Server API v3 wire format
 * the channel uses: `GET /_matrix/client/v3/sync` (a `next_batch` per stream position; with
 * `since` it long-polls up to `timeout` ms for anything newer; without it, the initial sync:
 * rooms with their state and latest timeline, invites), `PUT /rooms/{roomId}/send/{eventType}/{txnId}`
 * (a txnId already used by this access token answers the event it created, as Synapse does:
 * nothing is posted twice; a second `m.reaction` of the bot with the same key to the same event
 * is 400 M_DUPLICATE_ANNOTATION), `PUT /rooms/{roomId}/redact/{eventId}/{txnId}` (the same dedup;
 * the event's content is emptied and `unsigned.redacted_because` set; 404 for an event not in
 * the room), `GET /rooms/{roomId}/event/{eventId}` (404 M_NOT_FOUND when not in the room),
 * `GET /_matrix/client/v1/rooms/{roomId}/relations/{eventId}/{relType}/{eventType}` (one page,
 * newest first), `POST /_matrix/media/v3/upload`, `GET /_matrix/client/v1/media/download`
 * (authenticated; `legacyMediaOnly` makes it answer 404 M_UNRECOGNIZED like an older server, and
 * `/_matrix/media/v3/download` serves instead), typing, join, leave, joined_members, whoami,
 * profile displayname, `GET /rooms/{roomId}/state/m.room.encryption` (404 M_NOT_FOUND when the
 * room has none) and `GET /rooms/{roomId}/messages?dir=b` (pages back from a `prev_batch` or
 * `next_batch` token, newest first, the filter's types, stopping at `to` unless `ignoreMessagesTo`;
 * no `end` once nothing is left). A /sync with `since` gives each room at most the filter's
 * `timeline.limit` events, the newest, `limited: true` with a `prev_batch` when there were more
 * (the skipped state events in `state`, as Synapse does); a timeline holds only the filter's
 * `timeline.types` when it names them. Errors are `{ errcode, error }` bodies
 * (429: `retry_after_ms`); a scripted `stream` failure streams a big 200 answer slowly, recording
 * in `streamed` how much was written before the client hung up. Every call needs the bot's bearer
 * token (401 M_UNKNOWN_TOKEN otherwise), except the legacy download.
 * The test acts as the users: `createRoom`, `userMessage`, `userReaction` (an m.reaction
 * annotation), `userRedact` (an m.room.redaction with `redacts` in its content and at the top
 * level, as Synapse gives it; the target's content emptied), `invite`, `enableEncryption`; it reads
 * what the bot sent in `sends` (each PUT send, retries included), `redactions` (each PUT redact),
 * `roomEvents`, `reactions` and `shown` (an event's content after edits); `failNext` scripts
 * errors.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { closeLoopback, drainOrClose, listenLoopback, readRaw, sendJson } from "./http.js";

export const SERVER_NAME = "test.local";

export interface MxEvent {
  type: string;
  event_id: string;
  sender: string;
  origin_server_ts: number;
  state_key?: string;
  content: Record<string, unknown>;
  room_id: string;
  unsigned?: Record<string, unknown>;
  /** an m.room.redaction's target (room versions before 11; also in `content`) */
  redacts?: string;
  /** stream position */
  pos: number;
}

interface Room { id: string; members: Set<string>; encrypted: boolean; events: MxEvent[] }
interface Invite { roomId: string; inviter: string; pos: number }
interface Failure {
  status: number;
  body?: unknown;
  raw?: string;
  afterStore?: boolean;
  /** a 200 JSON answer of `bytes`, written `chunk` bytes every `delayMs` (no Content-Length) */
  stream?: { bytes: number; chunk: number; delayMs: number };
}

export interface SendRecord { roomId: string; txnId: string; content: Record<string, unknown>; eventId?: string; status: number; at: number; type: string }
export interface RedactRecord { roomId: string; eventId: string; txnId: string; redactionId?: string; status: number }

/** Whether `e` relates to `eventId` by `relType` (m.annotation, m.replace). */
function relatesTo(e: MxEvent, relType: string, eventId: string): boolean {
  const rel = e.content["m.relates_to"] as { rel_type?: string; event_id?: string } | undefined;
  return rel?.rel_type === relType && rel.event_id === eventId;
}

export class FakeMatrixServer {
  readonly token = `syt_${randomBytes(18).toString("base64url")}`;
  readonly userId = `@lurk:${SERVER_NAME}`;
  readonly deviceId = "LURKDEVICE";
  displayName = "Lurk";
  /** every PUT send the bot made (a retried one appears again with the same txnId) */
  readonly sends: SendRecord[] = [];
  /** every PUT redact the bot made */
  readonly redactions: RedactRecord[] = [];
  readonly typing: { roomId: string; typing: boolean }[] = [];
  readonly joins: string[] = [];
  readonly uploads: { name: string; mime: string; bytes: Buffer; mxc: string }[] = [];
  /** media paths fetched (which endpoint) */
  readonly downloads: string[] = [];
  /** each /sync: its `since` (undefined: initial) and filter */
  readonly syncs: { since?: string; filter: unknown; timeout: number }[] = [];
  /** the authenticated media endpoint answers 404 M_UNRECOGNIZED (a server before spec v1.11) */
  legacyMediaOnly = false;
  /** each GET /messages: room, from, to, limit */
  readonly messagesCalls: { roomId: string; from: string; to?: string; limit: number }[] = [];
  /** /messages ignores `to` (as a server that takes no /sync token there) */
  ignoreMessagesTo = false;
  /** each GET /state/m.room.encryption: the room */
  readonly stateLookups: string[] = [];
  /** each scripted `stream` answer: bytes written, whether all were, whether the client hung up first */
  readonly streamed: { written: number; finished: boolean; clientClosed: boolean }[] = [];
  private readonly rooms = new Map<string, Room>();
  private readonly invites = new Map<string, Invite>();
  private readonly txns = new Map<string, string>();
  private readonly media = new Map<string, { bytes: Buffer; mime: string }>();
  private readonly failures = new Map<string, Failure[]>();
  private waiters: (() => void)[] = [];
  private pos = 1;
  private nextId = 1;
  private server!: Server;
  url = "";

  static async start(): Promise<FakeMatrixServer> {
    const fake = new FakeMatrixServer();
    fake.server = createServer((req, res) => {
      fake.route(req, res).catch((err) => sendJson(res, 500, { errcode: "M_UNKNOWN", error: String(err) }));
    });
    fake.url = await listenLoopback(fake.server);
    return fake;
  }

  async close(): Promise<void> {
    this.wake();
    await closeLoopback(this.server);
  }

  /** The next `count` calls of `op` ("sync", "send", "redact", "upload", "join", "typing", "download") fail as given. */
  failNext(op: string, failure: Failure, count = 1): void {
    const list = this.failures.get(op) ?? [];
    for (let i = 0; i < count; i++) list.push(failure);
    this.failures.set(op, list);
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  private append(room: Room, e: Omit<MxEvent, "event_id" | "origin_server_ts" | "room_id" | "pos">): MxEvent {
    const ev: MxEvent = { ...e, event_id: `$ev${this.nextId++}_${randomBytes(6).toString("base64url")}`, origin_server_ts: Date.now(), room_id: room.id, pos: this.pos++ };
    room.events.push(ev);
    this.wake();
    return ev;
  }

  /** A room with `members` joined (the bot too unless `withBot` is false); encrypted rooms have m.room.encryption. */
  createRoom(opts: { members: string[]; withBot?: boolean; encrypted?: boolean }): string {
    const room: Room = { id: `!r${this.nextId++}${randomBytes(4).toString("hex")}:${SERVER_NAME}`, members: new Set(), encrypted: false, events: [] };
    this.rooms.set(room.id, room);
    const all = opts.withBot === false ? opts.members : [...opts.members, this.userId];
    for (const m of all) {
      room.members.add(m);
      this.append(room, { type: "m.room.member", sender: m, state_key: m, content: { membership: "join", displayname: m.slice(1).split(":")[0] } });
    }
    if (opts.encrypted) {
      room.encrypted = true;
      this.append(room, { type: "m.room.encryption", sender: opts.members[0]!, state_key: "", content: { algorithm: "m.megolm.v1.aes-sha2" } });
    }
    return room.id;
  }

  /** `sender` turns on encryption in an existing room (an m.room.encryption state event). */
  enableEncryption(roomId: string, sender: string): void {
    const room = this.rooms.get(roomId)!;
    room.encrypted = true;
    this.append(room, { type: "m.room.encryption", sender, state_key: "", content: { algorithm: "m.megolm.v1.aes-sha2" } });
  }

  /** A user's event in a room (default: an m.room.message); returns its event id. */
  userMessage(roomId: string, sender: string, content: Record<string, unknown>, type = "m.room.message"): string {
    return this.append(this.rooms.get(roomId)!, { type, sender, content }).event_id;
  }

  /** A user's m.reaction: `key` on `eventId`; returns the reaction's event id. */
  userReaction(roomId: string, sender: string, eventId: string, key: string): string {
    return this.userMessage(roomId, sender, { "m.relates_to": { rel_type: "m.annotation", event_id: eventId, key } }, "m.reaction");
  }

  /** A user redacts an event (e.g. takes back their reaction); returns the redaction's event id. */
  userRedact(roomId: string, sender: string, eventId: string): string {
    const room = this.rooms.get(roomId)!;
    const target = room.events.find((e) => e.event_id === eventId)!;
    const redaction = this.append(room, { type: "m.room.redaction", sender, content: { redacts: eventId }, redacts: eventId });
    target.content = {};
    target.unsigned = { ...target.unsigned, redacted_because: { event_id: redaction.event_id, sender, type: "m.room.redaction" } };
    return redaction.event_id;
  }

  /** `inviter` invites the bot to a room only `inviter` is in. */
  invite(inviter: string): string {
    const roomId = this.createRoom({ members: [inviter], withBot: false });
    this.invites.set(roomId, { roomId, inviter, pos: this.pos++ });
    this.wake();
    return roomId;
  }

  isJoined(roomId: string): boolean {
    return this.rooms.get(roomId)?.members.has(this.userId) ?? false;
  }

  /** The bot's m.room.message events in a room, in order. */
  roomEvents(roomId: string): MxEvent[] {
    return (this.rooms.get(roomId)?.events ?? []).filter((e) => e.sender === this.userId && e.type === "m.room.message");
  }

  /** The bot's reactions in a room that are not redacted: reacted event id and key. */
  reactions(roomId: string): { eventId: string; key: string; reactionId: string }[] {
    return (this.rooms.get(roomId)?.events ?? []).filter((e) => e.sender === this.userId && e.type === "m.reaction" && !e.unsigned?.redacted_because).map((e) => {
      const rel = e.content["m.relates_to"] as { event_id: string; key: string };
      return { eventId: rel.event_id, key: rel.key, reactionId: e.event_id };
    });
  }

  /** An event's content as clients show it: the newest edit's m.new_content, `{}` once redacted. */
  shown(roomId: string, eventId: string): Record<string, unknown> | undefined {
    const events = this.rooms.get(roomId)?.events ?? [];
    const ev = events.find((e) => e.event_id === eventId);
    if (!ev || ev.unsigned?.redacted_because) return ev ? {} : undefined;
    const edit = events.findLast((e) => e.sender === ev.sender && relatesTo(e, "m.replace", eventId));
    return (edit?.content["m.new_content"] as Record<string, unknown> | undefined) ?? ev.content;
  }

  addMedia(bytes: Buffer, mime: string): string {
    const id = `m${this.nextId++}${randomBytes(4).toString("hex")}`;
    this.media.set(id, { bytes, mime });
    return `mxc://${SERVER_NAME}/${id}`;
  }

  private takeFailure(op: string): Failure | undefined {
    return this.failures.get(op)?.shift();
  }

  private fail(res: ServerResponse, f: Failure): void {
    if (f.stream) return void this.streamBig(res, f.stream);
    if (f.raw !== undefined) {
      res.writeHead(f.status, { "content-type": "application/json" });
      res.end(f.raw);
      return;
    }
    sendJson(res, f.status, f.body ?? { errcode: "M_UNKNOWN", error: "scripted failure" });
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", this.url);
    const path = url.pathname;
    const body = await readRaw(req);
    if (path.startsWith("/_matrix/media/v3/download/")) return this.serveMedia(path.slice("/_matrix/media/v3/download/".length), res, path);
    if (req.headers.authorization !== `Bearer ${this.token}`) return sendJson(res, 401, { errcode: "M_UNKNOWN_TOKEN", error: "Invalid access token passed." });
    const json = () => (body.length ? JSON.parse(body.toString("utf8")) : {});
    let m: RegExpExecArray | null;
    if (req.method === "GET" && path === "/_matrix/client/v3/account/whoami") return sendJson(res, 200, { user_id: this.userId, device_id: this.deviceId });
    if (req.method === "GET" && (m = /^\/_matrix\/client\/v3\/profile\/([^/]+)\/displayname$/.exec(path))) return sendJson(res, 200, { displayname: this.displayName });
    if (req.method === "GET" && path === "/_matrix/client/v3/sync") return this.sync(url, res);
    if (req.method === "PUT" && (m = /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/send\/([^/]+)\/([^/]+)$/.exec(path))) {
      return this.send(decodeURIComponent(m[1]!), decodeURIComponent(m[3]!), json(), res, decodeURIComponent(m[2]!));
    }
    if (req.method === "PUT" && (m = /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/redact\/([^/]+)\/([^/]+)$/.exec(path))) {
      return this.redact(decodeURIComponent(m[1]!), decodeURIComponent(m[2]!), decodeURIComponent(m[3]!), res);
    }
    if (req.method === "GET" && (m = /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/event\/([^/]+)$/.exec(path))) {
      const room = this.rooms.get(decodeURIComponent(m[1]!));
      if (!room?.members.has(this.userId)) return sendJson(res, 403, { errcode: "M_FORBIDDEN", error: "not in the room" });
      const ev = room.events.find((e) => e.event_id === decodeURIComponent(m![2]!));
      if (!ev) return sendJson(res, 404, { errcode: "M_NOT_FOUND", error: "Event not found." });
      const { pos: _p, ...out } = ev;
      return sendJson(res, 200, out);
    }
    if (req.method === "GET" && (m = /^\/_matrix\/client\/v1\/rooms\/([^/]+)\/relations\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(path))) {
      const room = this.rooms.get(decodeURIComponent(m[1]!));
      if (!room?.members.has(this.userId)) return sendJson(res, 403, { errcode: "M_FORBIDDEN", error: "not in the room" });
      const [target, relType, type] = [m[2]!, m[3]!, m[4]!].map(decodeURIComponent) as [string, string, string];
      const chunk = room.events.filter((e) => e.type === type && relatesTo(e, relType, target)).reverse().map(({ pos: _p, ...e }) => e);
      return sendJson(res, 200, { chunk });
    }
    if (req.method === "PUT" && (m = /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/typing\/([^/]+)$/.exec(path))) {
      const f = this.takeFailure("typing");
      if (f) return this.fail(res, f);
      this.typing.push({ roomId: decodeURIComponent(m[1]!), typing: json().typing === true });
      return sendJson(res, 200, {});
    }
    if (req.method === "GET" && (m = /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/messages$/.exec(path))) return this.roomMessages(decodeURIComponent(m[1]!), url, res);
    if (req.method === "GET" && (m = /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/state\/m\.room\.encryption\/?$/.exec(path))) {
      const room = this.rooms.get(decodeURIComponent(m[1]!));
      this.stateLookups.push(decodeURIComponent(m[1]!));
      if (!room?.members.has(this.userId)) return sendJson(res, 403, { errcode: "M_FORBIDDEN", error: "not in the room" });
      const ev = room.events.findLast((e) => e.type === "m.room.encryption" && e.state_key === "");
      return ev ? sendJson(res, 200, ev.content) : sendJson(res, 404, { errcode: "M_NOT_FOUND", error: "Event not found." });
    }
    if (req.method === "POST" && (m = /^\/_matrix\/client\/v3\/join\/([^/]+)$/.exec(path))) return this.join(decodeURIComponent(m[1]!), res);
    if (req.method === "POST" && (m = /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/leave$/.exec(path))) {
      this.rooms.get(decodeURIComponent(m[1]!))?.members.delete(this.userId);
      return sendJson(res, 200, {});
    }
    if (req.method === "GET" && (m = /^\/_matrix\/client\/v3\/rooms\/([^/]+)\/joined_members$/.exec(path))) {
      const room = this.rooms.get(decodeURIComponent(m[1]!));
      if (!room?.members.has(this.userId)) return sendJson(res, 403, { errcode: "M_FORBIDDEN", error: "not in the room" });
      return sendJson(res, 200, { joined: Object.fromEntries([...room.members].map((u) => [u, { display_name: u.slice(1).split(":")[0] }])) });
    }
    if (req.method === "POST" && path === "/_matrix/media/v3/upload") {
      const f = this.takeFailure("upload");
      if (f) return this.fail(res, f);
      const mime = String(req.headers["content-type"] ?? "application/octet-stream");
      const mxc = this.addMedia(body, mime);
      this.uploads.push({ name: url.searchParams.get("filename") ?? "", mime, bytes: body, mxc });
      return sendJson(res, 200, { content_uri: mxc });
    }
    if (req.method === "GET" && path.startsWith("/_matrix/client/v1/media/download/")) {
      if (this.legacyMediaOnly) return sendJson(res, 404, { errcode: "M_UNRECOGNIZED", error: "Unrecognized request" });
      return this.serveMedia(path.slice("/_matrix/client/v1/media/download/".length), res, path);
    }
    return sendJson(res, 404, { errcode: "M_UNRECOGNIZED", error: "Unrecognized request" });
  }

  private async streamBig(res: ServerResponse, o: { bytes: number; chunk: number; delayMs: number }): Promise<void> {
    const record = { written: 0, finished: false, clientClosed: false };
    this.streamed.push(record);
    res.on("close", () => { if (!res.writableFinished) record.clientClosed = true; });
    res.writeHead(200, { "content-type": "application/json" });
    const head = Buffer.from("{\"next_batch\":\"s0\",\"pad\":\"");
    res.write(head);
    record.written = head.length;
    const filler = Buffer.alloc(o.chunk, 0x61);
    while (record.written < o.bytes) {
      if (record.clientClosed || res.destroyed) return;
      await new Promise((r) => setTimeout(r, o.delayMs));
      if (record.clientClosed || res.destroyed) return;
      const ok = res.write(filler);
      record.written += filler.length;
      if (!ok) await drainOrClose(res);
    }
    res.end("\"}");
    record.finished = true;
  }

  private roomMessages(roomId: string, url: URL, res: ServerResponse): void {
    const room = this.rooms.get(roomId);
    if (!room?.members.has(this.userId)) return sendJson(res, 403, { errcode: "M_FORBIDDEN", error: "not in the room" });
    const from = url.searchParams.get("from") ?? "";
    const to = url.searchParams.get("to") ?? undefined;
    const limit = Math.min(Number(url.searchParams.get("limit") ?? 10), 1000);
    this.messagesCalls.push({ roomId, from, ...(to ? { to } : {}), limit });
    if (url.searchParams.get("dir") !== "b" || !/^[ps]\d+$/.test(from)) return sendJson(res, 400, { errcode: "M_INVALID_PARAM", error: "dir=b and a token this server made" });
    const types = (JSON.parse(url.searchParams.get("filter") ?? "{}") as { types?: string[] }).types;
    const upTo = Number(from.slice(1));
    const floor = to && !this.ignoreMessagesTo && /^[ps]\d+$/.test(to) ? Number(to.slice(1)) : 0;
    const left = room.events.filter((e) => e.pos <= upTo && e.pos > floor && (!types || types.includes(e.type))).reverse();
    const chunk = left.slice(0, limit);
    const strip = ({ pos: _p, ...e }: MxEvent) => e;
    const end = chunk.length && left.length > chunk.length ? { end: `p${chunk.at(-1)!.pos - 1}` } : {};
    sendJson(res, 200, { start: from, chunk: chunk.map(strip), ...end });
  }

  private serveMedia(rest: string, res: ServerResponse, path: string): void {
    const [server, id] = rest.split("/").map(decodeURIComponent);
    const item = server === SERVER_NAME ? this.media.get(id ?? "") : undefined;
    this.downloads.push(path);
    if (!item) return sendJson(res, 404, { errcode: "M_NOT_FOUND", error: "not found" });
    res.writeHead(200, { "content-type": item.mime, "content-length": item.bytes.length });
    res.end(item.bytes);
  }

  private send(roomId: string, txnId: string, content: Record<string, unknown>, res: ServerResponse, type: string): void {
    const f = this.takeFailure("send");
    const at = Date.now();
    if (f && !f.afterStore) {
      this.sends.push({ roomId, txnId, content, status: f.status, at, type });
      return this.fail(res, f);
    }
    const room = this.rooms.get(roomId);
    if (!room?.members.has(this.userId)) {
      this.sends.push({ roomId, txnId, content, status: 403, at, type });
      return sendJson(res, 403, { errcode: "M_FORBIDDEN", error: "not in the room" });
    }
    // transactions are scoped by endpoint: a send's txnId is not a redaction's
    const key = `${this.token}|send|${txnId}`;
    let eventId = this.txns.get(key);
    if (!eventId && type === "m.reaction") {
      const rel = content["m.relates_to"] as { event_id?: string; key?: string } | undefined;
      if (this.reactions(roomId).some((r) => r.eventId === rel?.event_id && r.key === rel?.key)) {
        this.sends.push({ roomId, txnId, content, status: 400, at, type });
        return sendJson(res, 400, { errcode: "M_DUPLICATE_ANNOTATION", error: "Can't send same reaction twice" });
      }
    }
    if (!eventId) {
      eventId = this.append(room, { type, sender: this.userId, content }).event_id;
      this.txns.set(key, eventId);
    }
    // afterStore: the event exists, but the answer is lost (a 502 from a proxy, say)
    if (f?.afterStore) {
      this.sends.push({ roomId, txnId, content, eventId, status: f.status, at, type });
      return this.fail(res, f);
    }
    this.sends.push({ roomId, txnId, content, eventId, status: 200, at, type });
    sendJson(res, 200, { event_id: eventId });
  }

  private redact(roomId: string, eventId: string, txnId: string, res: ServerResponse): void {
    const f = this.takeFailure("redact");
    if (f && !f.afterStore) {
      this.redactions.push({ roomId, eventId, txnId, status: f.status });
      return this.fail(res, f);
    }
    const room = this.rooms.get(roomId);
    if (!room?.members.has(this.userId)) {
      this.redactions.push({ roomId, eventId, txnId, status: 403 });
      return sendJson(res, 403, { errcode: "M_FORBIDDEN", error: "not in the room" });
    }
    const target = room.events.find((e) => e.event_id === eventId);
    if (!target) {
      this.redactions.push({ roomId, eventId, txnId, status: 404 });
      return sendJson(res, 404, { errcode: "M_NOT_FOUND", error: "Event not found." });
    }
    const key = `${this.token}|redact|${txnId}`;
    let redactionId = this.txns.get(key);
    if (!redactionId) {
      const redaction = this.append(room, { type: "m.room.redaction", sender: this.userId, content: { redacts: eventId } });
      redactionId = redaction.event_id;
      this.txns.set(key, redactionId);
      target.content = {};
      target.unsigned = { ...target.unsigned, redacted_because: { event_id: redactionId, sender: this.userId, type: "m.room.redaction" } };
    }
    this.redactions.push({ roomId, eventId, txnId, redactionId, status: f?.status ?? 200 });
    if (f?.afterStore) return this.fail(res, f);
    sendJson(res, 200, { event_id: redactionId });
  }

  private join(roomId: string, res: ServerResponse): void {
    const f = this.takeFailure("join");
    if (f) return this.fail(res, f);
    const room = this.rooms.get(roomId);
    if (!room || (!this.invites.has(roomId) && !room.members.has(this.userId))) return sendJson(res, 403, { errcode: "M_FORBIDDEN", error: "You are not invited to this room." });
    this.joins.push(roomId);
    this.invites.delete(roomId);
    room.members.add(this.userId);
    this.append(room, { type: "m.room.member", sender: this.userId, state_key: this.userId, content: { membership: "join", displayname: this.displayName } });
    sendJson(res, 200, { room_id: roomId });
  }

  private async sync(url: URL, res: ServerResponse): Promise<void> {
    const sinceRaw = url.searchParams.get("since") ?? undefined;
    const timeout = Number(url.searchParams.get("timeout") ?? 0);
    const filter = JSON.parse(url.searchParams.get("filter") ?? "{}");
    const limit = Number((filter as { room?: { timeline?: { limit?: number } } }).room?.timeline?.limit ?? 10);
    const types = (filter as { room?: { timeline?: { types?: string[] } } }).room?.timeline?.types;
    const shown = (e: MxEvent) => !types || types.includes(e.type);
    this.syncs.push({ ...(sinceRaw ? { since: sinceRaw } : {}), filter, timeout });
    const f = this.takeFailure("sync");
    if (f) return this.fail(res, f);
    const since = sinceRaw ? Number(sinceRaw.slice(1)) : undefined;
    if (since !== undefined && this.pos - 1 <= since && timeout > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(timeout, 30_000));
        this.waiters.push(() => { clearTimeout(timer); resolve(); });
      });
    }
    const upTo = this.pos - 1;
    const join: Record<string, unknown> = {};
    const invite: Record<string, unknown> = {};
    const strip = ({ pos: _p, room_id: _r, ...e }: MxEvent) => e;
    for (const room of this.rooms.values()) {
      if (!room.members.has(this.userId)) continue;
      const fresh = room.events.filter((e) => e.pos <= upTo && (since === undefined || e.pos > since));
      if (since !== undefined && fresh.length === 0) continue;
      let state = since === undefined ? fresh.filter((e) => e.state_key !== undefined) : [];
      let timeline = since === undefined ? fresh.filter((e) => e.state_key === undefined && shown(e)).slice(-10) : fresh.filter(shown);
      const limited = since !== undefined && timeline.length > limit;
      if (limited) {
        // the newest `limit` events; the state changes of the skipped ones in `state`
        state = timeline.slice(0, -limit).filter((e) => e.state_key !== undefined);
        timeline = timeline.slice(-limit);
      }
      join[room.id] = {
        summary: { "m.joined_member_count": room.members.size, "m.invited_member_count": 0 },
        state: { events: state.map(strip) },
        timeline: { events: timeline.map(strip), limited, prev_batch: `p${timeline.length ? timeline[0]!.pos - 1 : upTo}` },
        ephemeral: { events: [] },
        account_data: { events: [] },
      };
    }
    for (const inv of this.invites.values()) {
      if (inv.pos > upTo || (since !== undefined && inv.pos <= since)) continue;
      invite[inv.roomId] = { invite_state: { events: [{ type: "m.room.member", sender: inv.inviter, state_key: this.userId, content: { membership: "invite" } }] } };
    }
    sendJson(res, 200, { next_batch: `s${upTo}`, rooms: { join, invite, leave: {} }, account_data: { events: [] }, presence: { events: [] } });
  }
}
