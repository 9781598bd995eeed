/**
 * The webhook Meta calls (behind a TLS reverse proxy or Tailscale Funnel forwarding to
 * `host:port` + `path`). Contract of a request:
 * - only `<path>` (404 another), GET or POST (405 another method);
 * - GET is the subscription check: `hub.mode=subscribe` and `hub.verify_token` equal to the
 *   verify token (constant time) -> 200 with `hub.challenge` as plain text; anything else 403;
 * - POST: the body is read raw (at most `maxBodyBytes`, else 413), then `X-Hub-Signature-256:
 *   sha256=<hex HMAC-SHA256 of those bytes with the app secret>` is checked in constant time
 *   BEFORE anything is parsed (missing or wrong: 401); a body that is not JSON, or not a
 *   payload with an `entry` list, is a 400;
 * - 200 only once `handle` resolved (every message stored in LURK_INBOUND), 500 when it failed:
 *   Meta redelivers every non-2xx answer, and the messages' ids make a redelivery run once.
 * Neither secret is ever logged.
 */
import { createHmac } from "node:crypto";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { safeParseJson } from "../../shared/contract/index.js";
import { closeHttpServer, listenHttp, readBody, safeEqual, sendText as answer } from "../../shared/runtime/channel/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { isPayload, type WaPayload } from "./inbound.js";

export const SIGNATURE_HEADER = "x-hub-signature-256";

export interface WebhookOptions {
  host: string;
  port: number;
  path: string;
  appSecret: string;
  verifyToken: string;
  maxBodyBytes: number;
  log: Logger;
  handle(payload: WaPayload): Promise<void>;
}

/** `sha256=<hex>` of `body` with `secret`, as Meta signs it. */
export function signatureOf(body: Uint8Array | string, secret: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

function verify(url: URL, token: string): string | undefined {
  const q = url.searchParams;
  const given = q.get("hub.verify_token");
  const challenge = q.get("hub.challenge");
  if (q.get("hub.mode") !== "subscribe" || given === null || challenge === null || challenge.length > 1024) return undefined;
  return safeEqual(given, token) ? challenge : undefined;
}

function webhookHandler(opts: WebhookOptions) {
  const { log } = opts;
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://localhost");
    if (url.pathname !== opts.path) return answer(res, 404, "not found");
    if (req.method === "GET") {
      const challenge = verify(url, opts.verifyToken);
      if (challenge === undefined) {
        log.warn({ remote: req.socket.remoteAddress }, "whatsapp webhook verification refused: wrong mode or verify token");
        return answer(res, 403, "forbidden");
      }
      log.info("whatsapp webhook verified (Meta's subscription check)");
      return answer(res, 200, challenge);
    }
    if (req.method !== "POST") return answer(res, 405, "GET or POST only");
    let body: Buffer;
    try {
      body = await readBody(req, opts.maxBodyBytes);
    } catch (err) {
      const tooLarge = (err as { code?: string }).code === "PAYLOAD_TOO_LARGE";
      return answer(res, tooLarge ? 413 : 400, tooLarge ? "too large" : "unreadable body");
    }
    const given = req.headers[SIGNATURE_HEADER];
    if (typeof given !== "string" || !safeEqual(given.toLowerCase(), signatureOf(body, opts.appSecret))) {
      log.warn({ remote: req.socket.remoteAddress }, "whatsapp webhook request refused: missing or wrong X-Hub-Signature-256");
      return answer(res, 401, "unauthorized");
    }
    let payload: unknown;
    try {
      payload = safeParseJson(body, { maxBytes: opts.maxBodyBytes });
    } catch {
      return answer(res, 400, "malformed JSON");
    }
    if (!isPayload(payload)) return answer(res, 400, "not a WhatsApp webhook payload");
    try {
      await opts.handle(payload);
    } catch (err) {
      log.warn({ err }, "could not take a WhatsApp webhook; Meta will deliver it again");
      return answer(res, 500, "try again");
    }
    answer(res, 200);
  };
}

/** Listens (port 0 picks a free one); resolves once listening. */
export async function startWebhookServer(opts: WebhookOptions): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const { server, port } = await listenHttp(webhookHandler(opts), {
    host: opts.host, port: opts.port, requestTimeoutMs: 60_000,
    onError: (err, res) => {
      opts.log.warn({ err }, "whatsapp webhook request failed");
      answer(res, 500, "internal error");
    },
  });
  return { server, port, close: () => closeHttpServer(server) };
}
