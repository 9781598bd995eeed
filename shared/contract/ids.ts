/**
 * Deterministic ids of the contract. Because they are derived, every party can compute them
 * and a redelivered message produces the same id again (so JetStream dedup and idempotent
 * handlers collapse repeats).
 */
import { createHash } from "node:crypto";
import { token } from "./subjects.js";

const digest = (text: string, length: number) => createHash("sha256").update(text).digest("hex").slice(0, length);

/** `Nats-Msg-Id` of an inbound message: one per platform message. */
export function inboundMsgId(channel: string, messageId: string): string {
  return `in:${channel}:${messageId}`;
}

/** The run an inbound message starts: a client can subscribe to its events before sending. */
export function runIdFor(channel: string, messageId: string): string {
  return `run-${digest(`${channel}\u0000${messageId}`, 24)}`;
}

/** The id (and `Nats-Msg-Id`) of a run's final reply delivery. */
export function replyDeliveryId(runId: string, chunk = 0): string {
  return `${token(runId, "runId")}:reply:${chunk}`;
}

/** Transcript record ids of a run: stable, so checkpoint appends are idempotent. */
export const recordIds = {
  input: (runId: string, index: number) => `${runId}:in:${index}`,
  assistant: (runId: string, turn: number) => `${runId}:a:${turn}`,
  toolResult: (runId: string, toolCallId: string) => `${runId}:t:${toolCallId}`,
  /** an input taken mid-run (steering, follow-up), named by the control message's id */
  mailboxInput: (runId: string, controlId: string) => `${runId}:u:${controlId}`,
  marker: (runId: string, status: string) => `${runId}:end:${status}`,
  started: (runId: string) => `${runId}:start`,
};
