/**
 * The Matrix Client-Server API v3 over fetch (no SDK), for one account: every call carries
 * `Authorization: Bearer <access token>` to the configured homeserver only, and every answer is
 * validated with its zod schema (wire.ts). An answer is read as it streams and refused (the
 * connection dropped) once it passes MAX_JSON_BYTES (MAX_ERROR_BYTES for an error): it is never
 * held whole. A non-2xx answer is a MatrixError with the status, the
 * `errcode` and the wait a 429 (M_LIMIT_EXCEEDED) asks for (`retry_after_ms`, else Retry-After).
 * Error messages never hold the token (it travels in a header, never in a URL).
 */
import { z } from "zod";
import { safeParseJson } from "../../shared/contract/index.js";
import { cappedDownload, downloadCapped } from "../../shared/runtime/channel/index.js";
import { readBodyCapped, type CappedBody } from "../../shared/runtime/http-capped.js";
import {
  displayNameSchema, eventIdSchema, joinedMembersSchema, matrixErrorSchema, messagesSchema, relationsSchema, roomEventSchema, roomIdSchema, syncResponseSchema, uploadSchema, whoamiSchema,
  type MessagesPage, type RoomEvent, type SyncResponse,
} from "./wire.js";

export type RelationsPage = z.output<typeof relationsSchema>;

/** the most a JSON answer may weigh (a /sync batch after a long absence can be large): read as it streams, dropped beyond */
const MAX_JSON_BYTES = 32 * 1024 * 1024;
/** the most an error answer may weigh (its errcode is all the channel needs) */
const MAX_ERROR_BYTES = 1024 * 1024;
const CALL_TIMEOUT_MS = 30_000;

export class MatrixError extends Error {
  constructor(message: string, readonly status: number, readonly errcode?: string, readonly retryAfterMs?: number) {
    super(message);
    this.name = "MatrixError";
  }
}

export interface CallOptions {
  query?: Record<string, string | undefined>;
  json?: unknown;
  body?: Uint8Array;
  contentType?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
}

const seg = encodeURIComponent;

/** `mxc://<server>/<mediaId>` -> its parts (undefined for anything else). */
export function parseMxc(uri: string): { server: string; mediaId: string } | undefined {
  const m = /^mxc:\/\/([A-Za-z0-9.:[\]-]+)\/([A-Za-z0-9_-]+)$/.exec(uri);
  return m ? { server: m[1]!, mediaId: m[2]! } : undefined;
}

export class MatrixApi {
  private readonly base: string;

  constructor(homeserverUrl: string, private readonly token: string, private readonly fetchImpl: typeof fetch = fetch) {
    this.base = homeserverUrl.replace(/\/+$/, "");
  }

  private url(path: string, query: Record<string, string | undefined> = {}): string {
    const u = new URL(this.base + path);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) u.searchParams.set(k, v);
    return u.toString();
  }

  /** One call; the answer validated by `schema`. */
  async call<S extends z.ZodType>(method: string, path: string, schema: S, opts: CallOptions = {}): Promise<z.output<S>> {
    const timeout = AbortSignal.timeout(opts.timeoutMs ?? CALL_TIMEOUT_MS);
    const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
    const headers: Record<string, string> = { Authorization: `Bearer ${this.token}` };
    let body: string | Uint8Array | undefined;
    if (opts.json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(opts.json);
    } else if (opts.body) {
      headers["Content-Type"] = opts.contentType ?? "application/octet-stream";
      body = opts.body;
    }
    let res: Response;
    try {
      res = await this.fetchImpl(this.url(path, opts.query), { method, headers, ...(body !== undefined ? { body } : {}), signal });
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      throw new MatrixError(`cannot reach the homeserver (${method} ${path.split("?")[0]}): ${(err as Error).message}`, 0);
    }
    let answer: CappedBody;
    try {
      answer = await readBodyCapped(res, res.ok ? MAX_JSON_BYTES : MAX_ERROR_BYTES);
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      throw new MatrixError(`the homeserver's answer broke off (${method} ${path.split("?")[0]}): ${(err as Error).message}`, 0);
    }
    if ("tooLarge" in answer && res.ok) {
      throw new MatrixError(`${method} ${path.split("?")[0]}: the answer is above ${MAX_JSON_BYTES / 1024 / 1024} MB; refused without reading it whole`, res.status, "M_TOO_LARGE");
    }
    let parsed: unknown;
    try {
      parsed = "bytes" in answer ? safeParseJson(answer.bytes, { maxBytes: MAX_JSON_BYTES }) : undefined;
    } catch {
      parsed = undefined;
    }
    if (!res.ok) {
      const e = matrixErrorSchema.safeParse(parsed);
      const header = Number(res.headers.get("retry-after") ?? NaN);
      const retryAfterMs = e.success && e.data.retry_after_ms !== undefined ? e.data.retry_after_ms : Number.isFinite(header) ? header * 1000 : undefined;
      const what = e.success ? `${e.data.errcode}${e.data.error ? `: ${e.data.error.slice(0, 300)}` : ""}` : `HTTP ${res.status}`;
      throw new MatrixError(`${method} ${path.split("?")[0]} failed: ${res.status} ${what}`, res.status, e.success ? e.data.errcode : undefined, res.status === 429 ? (retryAfterMs ?? 1_000) : retryAfterMs);
    }
    const ok = schema.safeParse(parsed);
    if (!ok.success) {
      throw new MatrixError(`${method} ${path.split("?")[0]}: unexpected answer from the homeserver (${ok.error.issues.slice(0, 3).map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")})`, res.status, "M_BAD_RESPONSE");
    }
    return ok.data;
  }

  whoami(): Promise<z.output<typeof whoamiSchema>> {
    return this.call("GET", "/_matrix/client/v3/account/whoami", whoamiSchema);
  }

  async displayName(userId: string): Promise<string | undefined> {
    const got = await this.call("GET", `/_matrix/client/v3/profile/${seg(userId)}/displayname`, displayNameSchema);
    return got.displayname ?? undefined;
  }

  /** One long poll: waits up to `timeoutMs` on the homeserver for anything new after `since`. */
  sync(opts: { since?: string | undefined; filter: unknown; timeoutMs: number; signal: AbortSignal }): Promise<SyncResponse> {
    return this.call("GET", "/_matrix/client/v3/sync", syncResponseSchema, {
      query: { filter: JSON.stringify(opts.filter), timeout: String(opts.timeoutMs), since: opts.since },
      signal: opts.signal, timeoutMs: opts.timeoutMs + 30_000,
    });
  }

  /**
   * A page of a room's timeline from `from` (`dir=b`: newest first), stopping at `to` (a server
   * may ignore `to` for a /sync token: the caller also stops at an event it knows).
   */
  messages(roomId: string, opts: { from: string; to?: string | undefined; limit: number; filter: unknown; signal?: AbortSignal }): Promise<MessagesPage> {
    return this.call("GET", `/_matrix/client/v3/rooms/${seg(roomId)}/messages`, messagesSchema, {
      query: { dir: "b", from: opts.from, to: opts.to, limit: String(opts.limit), filter: JSON.stringify(opts.filter) },
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
  }

  /** Whether the room has an `m.room.encryption` state event (404 M_NOT_FOUND: it has none). */
  async roomEncrypted(roomId: string, signal?: AbortSignal): Promise<boolean> {
    try {
      await this.call("GET", `/_matrix/client/v3/rooms/${seg(roomId)}/state/m.room.encryption`, z.record(z.string(), z.unknown()), signal ? { signal } : {});
      return true;
    } catch (err) {
      if (err instanceof MatrixError && err.status === 404) return false;
      throw err;
    }
  }

  /** PUT a message event with transaction id `txnId`: the same id again is the same event (idempotent). */
  send(roomId: string, txnId: string, content: Record<string, unknown>, signal?: AbortSignal): Promise<string> {
    return this.sendEvent(roomId, "m.room.message", txnId, content, signal);
  }

  /** PUT an event of `type` (m.room.message, m.reaction) with transaction id `txnId` (idempotent). */
  async sendEvent(roomId: string, type: string, txnId: string, content: Record<string, unknown>, signal?: AbortSignal): Promise<string> {
    const got = await this.call("PUT", `/_matrix/client/v3/rooms/${seg(roomId)}/send/${seg(type)}/${seg(txnId)}`, eventIdSchema, { json: content, ...(signal ? { signal } : {}) });
    return got.event_id;
  }

  /** PUT /rooms/{roomId}/redact/{eventId}/{txnId}: removes an event's content (idempotent by `txnId`); returns the redaction's event id. */
  async redact(roomId: string, eventId: string, txnId: string, signal?: AbortSignal): Promise<string> {
    const got = await this.call("PUT", `/_matrix/client/v3/rooms/${seg(roomId)}/redact/${seg(eventId)}/${seg(txnId)}`, eventIdSchema, { json: {}, ...(signal ? { signal } : {}) });
    return got.event_id;
  }

  /** GET /rooms/{roomId}/event/{eventId}: one event of the room (404 M_NOT_FOUND: not in this room, or not visible). */
  event(roomId: string, eventId: string, signal?: AbortSignal): Promise<RoomEvent> {
    return this.call("GET", `/_matrix/client/v3/rooms/${seg(roomId)}/event/${seg(eventId)}`, roomEventSchema, signal ? { signal } : {});
  }

  /** The events of `type` relating to `eventId` by `relType` (e.g. its m.annotation m.reaction events), a page at a time from `from`. */
  relations(roomId: string, eventId: string, relType: string, type: string, opts: { from?: string | undefined; signal?: AbortSignal } = {}): Promise<RelationsPage> {
    return this.call("GET", `/_matrix/client/v1/rooms/${seg(roomId)}/relations/${seg(eventId)}/${seg(relType)}/${seg(type)}`, relationsSchema, {
      query: { limit: "100", from: opts.from }, ...(opts.signal ? { signal: opts.signal } : {}),
    });
  }

  async typing(roomId: string, userId: string, typing: boolean, timeoutMs = 30_000): Promise<void> {
    await this.call("PUT", `/_matrix/client/v3/rooms/${seg(roomId)}/typing/${seg(userId)}`, z.unknown(), { json: typing ? { typing, timeout: timeoutMs } : { typing } });
  }

  async join(roomId: string): Promise<string> {
    return (await this.call("POST", `/_matrix/client/v3/join/${seg(roomId)}`, roomIdSchema, { json: {} })).room_id;
  }

  /** The joined members of a room, user id -> display name. */
  async joinedMembers(roomId: string): Promise<Map<string, string | undefined>> {
    const got = await this.call("GET", `/_matrix/client/v3/rooms/${seg(roomId)}/joined_members`, joinedMembersSchema);
    return new Map(Object.entries(got.joined).map(([id, m]) => [id, m.display_name ?? undefined]));
  }

  /** POST /_matrix/media/v3/upload; returns the mxc:// URI. */
  async upload(bytes: Uint8Array, mime: string, name: string, signal?: AbortSignal): Promise<string> {
    const got = await this.call("POST", "/_matrix/media/v3/upload", uploadSchema, { query: { filename: name }, body: bytes, contentType: mime, timeoutMs: 120_000, ...(signal ? { signal } : {}) });
    return got.content_uri;
  }

  /**
   * The bytes of an mxc:// URI, at most `maxBytes`: the authenticated endpoint
   * (`/_matrix/client/v1/media/download`, spec v1.11), or the legacy `/_matrix/media/v3/download`
   * when the homeserver does not know it (400/404/405).
   */
  async download(mxc: string, maxBytes: number, signal: AbortSignal): Promise<{ bytes: Uint8Array; mime?: string }> {
    const parts = parseMxc(mxc);
    if (!parts) throw new Error("not an mxc:// URI");
    const headers = { Authorization: `Bearer ${this.token}` };
    const path = `${seg(parts.server)}/${seg(parts.mediaId)}`;
    const first = await this.fetchImpl(this.url(`/_matrix/client/v1/media/download/${path}`), { headers, signal });
    if ([400, 404, 405].includes(first.status)) {
      await first.body?.cancel().catch(() => undefined);
      return downloadCapped(this.url(`/_matrix/media/v3/download/${path}`), { maxBytes, signal, headers, fetchImpl: this.fetchImpl });
    }
    return cappedDownload(first, maxBytes);
  }
}
