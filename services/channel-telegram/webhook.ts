/**
 * Webhook mode: Telegram POSTs each update to `webhookUrl`, which a reverse proxy forwards to
 * `webhookHost:webhookPort` + `webhookPath`. Contract of a request:
 * - only `POST <webhookPath>` (404 another path, 405 another method);
 * - the `X-Telegram-Bot-Api-Secret-Token` header equals the secret (constant-time), else 401;
 * - the body (at most 1 MiB, else 413) is a JSON update with an integer `update_id`, else 400;
 * - 200 only once `handle` resolved (the message stored in LURK_INBOUND), 500 when it failed:
 *   Telegram redelivers every non-2xx answer.
 * A redelivered update runs once: an update being handled, or handled lately, is not handled
 * again here, and the handler's Nats-Msg-Id (the platform message id) deduplicates the rest.
 * Neither the secret nor the bot token is ever logged.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Update } from "grammy/types";
import { safeParseJson } from "../../shared/contract/index.js";
import { closeHttpServer, listenHttp, readBody, safeEqual, sendText as answer } from "../../shared/runtime/channel/index.js";
import type { Logger } from "../../shared/runtime/logger.js";

export const SECRET_HEADER = "x-telegram-bot-api-secret-token";
const MAX_BODY_BYTES = 1024 * 1024;
/** update ids remembered after success (Telegram delivers in order, redelivers soon) */
const REMEMBERED = 1_000;

export interface WebhookOptions {
  host: string;
  port: number;
  path: string;
  secret: string;
  log: Logger;
  handle(update: Update): Promise<void>;
}

function webhookHandler(opts: WebhookOptions) {
  const { log } = opts;
  /** update_id -> its handling (kept after success, dropped after a failure so a redelivery retries) */
  const handled = new Map<number, Promise<void>>();
  const handleOnce = (update: Update): Promise<void> => {
    const earlier = handled.get(update.update_id);
    if (earlier) return earlier;
    const run = opts.handle(update);
    handled.set(update.update_id, run);
    run.then(() => {
      if (handled.size > REMEMBERED) handled.delete(handled.keys().next().value!);
    }, () => handled.delete(update.update_id));
    return run;
  };
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== opts.path) return answer(res, 404, "not found");
    if (req.method !== "POST") return answer(res, 405, "POST only");
    const given = req.headers[SECRET_HEADER];
    if (typeof given !== "string" || !safeEqual(given, opts.secret)) {
      req.resume();
      log.warn({ remote: req.socket.remoteAddress }, "telegram webhook request refused: missing or wrong secret token");
      return answer(res, 401, "unauthorized");
    }
    let update: Update;
    try {
      const parsed = safeParseJson(await readBody(req, MAX_BODY_BYTES), { maxBytes: MAX_BODY_BYTES });
      if (!isUpdate(parsed)) return answer(res, 400, "not a Telegram update");
      update = parsed;
    } catch (err) {
      const tooLarge = (err as { code?: string }).code === "PAYLOAD_TOO_LARGE";
      return answer(res, tooLarge ? 413 : 400, tooLarge ? "too large" : "malformed JSON");
    }
    try {
      await handleOnce(update);
    } catch (err) {
      log.warn({ err, updateId: update.update_id }, "could not take a Telegram update; Telegram will redeliver it");
      return answer(res, 500, "try again");
    }
    answer(res, 200);
  };
}

const isUpdate = (v: unknown): v is Update =>
  typeof v === "object" && v !== null && !Array.isArray(v) && Number.isSafeInteger((v as { update_id?: unknown }).update_id);

/** Listens (port 0 picks a free one); resolves once listening. */
export async function startWebhookServer(opts: WebhookOptions): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const { server, port } = await listenHttp(webhookHandler(opts), {
    host: opts.host, port: opts.port, requestTimeoutMs: 60_000,
    onError: (err, res) => {
      opts.log.warn({ err }, "telegram webhook request failed");
      answer(res, 500, "internal error");
    },
  });
  return { server, port, close: () => closeHttpServer(server) };
}
