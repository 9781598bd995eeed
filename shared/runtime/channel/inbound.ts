/**
 * Inbound: a platform message becomes an InboundMessage on `lurk.in.<channel>` (stream
 * LURK_INBOUND) with `Nats-Msg-Id` = inboundMsgId(channel, platform message id), so a platform
 * that delivers the same message twice starts one run. The promise resolves once JetStream
 * stored it: call it BEFORE answering or acknowledging the platform.
 */
import type { JetStreamClient } from "@nats-io/jetstream";
import {
  inboundMessageSchema, inboundMsgId, LurkError, runIdFor, subjects, type InboundMessage,
} from "../../contract/index.js";

/** What an adapter supplies; the kit fills type, ts and channel. `id` = the platform message id. */
export type InboundInput = Omit<InboundMessage, "type" | "ts" | "channel" | "attachments" | "mentioned"> & Partial<Pick<InboundMessage, "ts" | "attachments" | "mentioned">>;

export interface PublishedInbound {
  /** the platform message id (= InboundMessage.id) */
  id: string;
  /** the run this message starts (subscribe its events before publishing to stream them) */
  runId: string;
  /** JetStream already had this message: it is processed once */
  duplicate: boolean;
  seq: number;
}

export interface InboundPublisher {
  js: JetStreamClient;
  prefix: string;
  channel: string;
  maxBytes: number;
  timeoutMs?: number;
  /** the channel's configured account (channels.<name>.accountId): stamped on every message the adapter does not stamp itself */
  accountId?: string;
}

/**
 * Whether `publishInbound` refused the message itself (malformed, or too large for the bus):
 * storing it again can never work, so the adapter acknowledges it to the platform and drops it.
 */
export function isUnstorable(err: unknown): boolean {
  return LurkError.is(err) && (err.code === "VALIDATION_FAILED" || err.code === "PAYLOAD_TOO_LARGE");
}

/** Validates, size-checks and persists one inbound message; throws a LurkError otherwise. */
export async function publishInbound(p: InboundPublisher, input: InboundInput): Promise<PublishedInbound> {
  const parsed = inboundMessageSchema.safeParse({ attachments: [], mentioned: false, ts: Date.now(), ...(p.accountId ? { accountId: p.accountId } : {}), ...input, type: "lurk.inbound.message.v1", channel: p.channel });
  if (!parsed.success) {
    throw new LurkError("VALIDATION_FAILED", `inbound message: ${parsed.error.issues.slice(0, 5).map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  }
  const body = JSON.stringify(parsed.data);
  const bytes = Buffer.byteLength(body);
  if (bytes > p.maxBytes) throw new LurkError("PAYLOAD_TOO_LARGE", `the message is ${bytes} bytes; the bus takes at most ${p.maxBytes}`);
  let ack;
  try {
    ack = await p.js.publish(subjects(p.prefix).inbound(p.channel), body, { msgID: inboundMsgId(p.channel, parsed.data.id), timeout: p.timeoutMs ?? 5_000 });
  } catch (err) {
    throw new LurkError("UNAVAILABLE", `could not store the message in LURK_INBOUND: ${(err as Error).message}`, { cause: err });
  }
  return { id: parsed.data.id, runId: runIdFor(p.channel, parsed.data.id), duplicate: ack.duplicate, seq: ack.seq };
}
