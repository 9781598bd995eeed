/**
 * Webhook signatures, both directions: `X-Lurkbot-Signature: sha256=<hex>` where hex is
 * HMAC-SHA256(secret, `<timestamp>.<raw body>`) and `X-Lurkbot-Timestamp` is unix seconds.
 * A request whose timestamp is further than the tolerance from now is refused (replays of old
 * captures), as is any signature mismatch (compared in constant time).
 */
import { createHmac } from "node:crypto";
import { safeEqual } from "../../shared/runtime/channel/index.js";

export const SIGNATURE_HEADER = "x-lurkbot-signature";
export const TIMESTAMP_HEADER = "x-lurkbot-timestamp";
export const DELIVERY_HEADER = "x-lurkbot-delivery";

export function sign(secret: string, timestamp: number | string, body: string | Buffer): string {
  return `sha256=${createHmac("sha256", secret).update(`${timestamp}.`).update(body).digest("hex")}`;
}

export type VerifyResult = { ok: true } | { ok: false; reason: string };

export function verify(secret: string, headers: { timestamp?: string; signature?: string }, body: Buffer, toleranceSec: number, nowMs = Date.now()): VerifyResult {
  const { timestamp, signature } = headers;
  if (!timestamp || !signature) return { ok: false, reason: `the ${TIMESTAMP_HEADER} and ${SIGNATURE_HEADER} headers are required` };
  if (!/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: `${TIMESTAMP_HEADER} must be unix seconds` };
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > toleranceSec) return { ok: false, reason: `the timestamp is more than ${toleranceSec} s from the server's clock (a replay, or a wrong clock)` };
  if (!safeEqual(signature, sign(secret, timestamp, body))) return { ok: false, reason: "the signature does not match (HMAC-SHA256 over `<timestamp>.<body>` with the shared secret)" };
  return { ok: true };
}
