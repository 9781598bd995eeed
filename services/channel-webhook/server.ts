/**
 * The webhook's HTTP side: `POST /v1/messages`, signed (signature.ts), JSON (request.ts).
 * 202 `{ accepted, id, runId, duplicate }` only once the message is persisted in LURK_INBOUND
 * (its `dataBase64` files stored in the media store first: files.ts); 400 malformed (bad base64
 * included), 401 bad/missing signature or stale timestamp, 413 body or a file too large,
 * 503 bus down.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { encodeToken, LurkError, safeParseJson } from "../../shared/contract/index.js";
import { listenHttp, readBody, sendJson, type ChannelContext } from "../../shared/runtime/channel/index.js";
import type { WebhookChannelConfig } from "../../shared/runtime/config-channels.js";
import { formatIssues } from "../../shared/runtime/service.js";
import { RequestFileError, storeRequestFiles } from "./files.js";
import { webhookRequestSchema } from "./request.js";
import type { SeenIds } from "./seen.js";
import { SIGNATURE_HEADER, TIMESTAMP_HEADER, verify } from "./signature.js";

const error = (res: ServerResponse, status: number, code: string, message: string) => sendJson(res, status, { error: { code, message } });

export function webhookHandler(ctx: ChannelContext<WebhookChannelConfig>, secret: string, seen: SeenIds) {
  const { settings, log } = ctx;
  return async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method === "GET" && path === "/healthz") return sendJson(res, 200, { ok: true });
    if (path !== "/v1/messages") return error(res, 404, "not_found", "POST /v1/messages");
    if (req.method !== "POST") return error(res, 405, "method_not_allowed", "POST /v1/messages");
    let body: Buffer;
    try {
      body = await readBody(req, settings.maxBodyBytes);
    } catch (err) {
      return error(res, 413, "payload_too_large", (err as Error).message);
    }
    const header = (name: string) => (typeof req.headers[name] === "string" ? (req.headers[name] as string) : undefined);
    const verdict = verify(secret, { timestamp: header(TIMESTAMP_HEADER), signature: header(SIGNATURE_HEADER) }, body, settings.toleranceSec);
    if (!verdict.ok) {
      log.warn({ reason: verdict.reason, remote: req.socket.remoteAddress }, "webhook request refused");
      return error(res, 401, "bad_signature", verdict.reason);
    }
    let parsed;
    try {
      parsed = webhookRequestSchema.safeParse(safeParseJson(body, { maxBytes: settings.maxBodyBytes, maxDepth: 32 }));
    } catch (err) {
      return error(res, 400, "bad_json", LurkError.from(err).message);
    }
    if (!parsed.success) return error(res, 400, "invalid_request", formatIssues(parsed.error));
    const r = parsed.data;
    const earlier = seen.get(r.id);
    if (earlier) return sendJson(res, 202, { accepted: true, id: r.id, runId: earlier.runId, duplicate: true });
    let attachments;
    try {
      attachments = await storeRequestFiles(ctx.rt.media, r.attachments);
    } catch (err) {
      if (!(err instanceof RequestFileError)) throw err;
      log.warn({ id: r.id, code: err.code }, "webhook request refused: an attachment");
      return error(res, err.status, err.code, err.message);
    }
    try {
      const conversation = encodeToken(r.conversation);
      const published = await ctx.publishInbound({
        id: r.id,
        conversation,
        peer: { kind: "dm", id: conversation },
        sender: r.sender,
        text: r.text,
        attachments,
        sessionName: r.session ?? r.conversation,
        ...(r.agentId ? { agentId: r.agentId } : {}),
        ...(r.replyToMessageId ? { replyToMessageId: r.replyToMessageId } : {}),
      });
      await seen.add(r.id, published.runId);
      log.info({ id: r.id, runId: published.runId, duplicate: published.duplicate }, "webhook message accepted");
      return sendJson(res, 202, { accepted: true, id: r.id, runId: published.runId, duplicate: published.duplicate });
    } catch (err) {
      const e = LurkError.from(err);
      if (e.code === "PAYLOAD_TOO_LARGE") return error(res, 413, "payload_too_large", e.message);
      if (e.code === "VALIDATION_FAILED" || e.code === "BAD_SUBJECT_TOKEN") return error(res, 400, "invalid_request", e.message);
      log.error({ err: e }, "could not persist a webhook message");
      return error(res, 503, "unavailable", "the message could not be stored; retry later");
    }
  };
}

export function listen(handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>, host: string, port: number): Promise<{ server: Server; port: number }> {
  return listenHttp(handler, {
    host, port, requestTimeoutMs: 60_000,
    onError: (err, res) => sendJson(res, 500, { error: { code: "internal", message: (err as Error).message } }),
  });
}
