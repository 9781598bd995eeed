/**
 * What a heartbeat reply means. HEARTBEAT_OK at the start or the end of the reply (also wrapped in
 * markdown emphasis or code, followed by punctuation) is stripped; a reply that had the token and
 * keeps at most `ackMaxChars` other characters is an acknowledgement (ok-token) and never
 * delivered. An empty or silent (NO_REPLY) reply is ok-empty. Anything else is an alert.
 */
import { createHash } from "node:crypto";
import { HEARTBEAT_OK_TOKEN, isSilentReply } from "../../shared/contract/index.js";

const WRAP = "[\\s*_`~]*";
const AT_START = new RegExp(`^${WRAP}${HEARTBEAT_OK_TOKEN}${WRAP}[.!:,;]?${WRAP}`);
const AT_END = new RegExp(`${WRAP}${HEARTBEAT_OK_TOKEN}${WRAP}[.!]?${WRAP}$`);

export function stripHeartbeatToken(raw: string): { hadToken: boolean; text: string } {
  let text = raw.trim();
  let hadToken = false;
  for (;;) {
    const next = text.replace(AT_START, "").replace(AT_END, "").trim();
    if (next === text) break;
    hadToken = true;
    text = next;
  }
  return { hadToken, text };
}

export type ReplyVerdict =
  | { status: "ok-empty" }
  | { status: "ok-token"; rest: string }
  | { status: "alert"; text: string };

export function classifyReply(reply: string, silent: boolean, ackMaxChars: number): ReplyVerdict {
  const trimmed = reply.trim();
  if (silent || trimmed === "" || isSilentReply(trimmed)) return { status: "ok-empty" };
  const { hadToken, text } = stripHeartbeatToken(trimmed);
  if (hadToken && text.length <= ackMaxChars) return { status: "ok-token", rest: text };
  if (text === "") return { status: "ok-empty" };
  return { status: "alert", text };
}

/** The dedupe key of an alert: whitespace and case do not make a new alert. */
export function alertHash(text: string): string {
  return createHash("sha256").update(text.replace(/\s+/g, " ").trim().toLowerCase()).digest("hex").slice(0, 32);
}
