/**
 * Durable JetStream pull consumer with the contract's delivery rules:
 * - the payload is capped, safely parsed and validated; a malformed message cannot succeed on
 *   retry, so it goes straight to the dead-letter subject;
 * - ack only after the handler resolved (a plain ack: if it is lost, the message comes again,
 *   which idempotent handlers absorb; a confirmed double ack would cost a round trip each), or
 *   when the handler calls `ackNow()` once its work is done and stored: the ack then leaves in
 *   the same socket write as whatever the handler publishes in that step, and a later throw is
 *   logged, not naked;
 * - in-progress acks every ackWait/3 while the handler runs, so long work is not redelivered;
 * - a handler failure naks with a growing delay; after maxDeliver deliveries the message is
 *   published to `lurk.dlq.<stream>.<consumer>`, terminated, and `lurk.evt.<actor>.dead_letter`
 *   is emitted;
 * - on stop, handlers get STOP_GRACE_MS to finish; the messages of those still running are
 *   handed back (nak, no delay) so another instance takes them at once instead of after ackWait,
 *   and whatever those handlers do later is neither acked nor naked;
 * - handlers must be idempotent: an ack can be lost and the message delivered again.
 */
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type JsMsg } from "@nats-io/jetstream";
import { headers, nanos, type NatsConnection } from "@nats-io/transport-node";
import type { z } from "zod";
import { LurkError, safeParseJson, subjects, type SafeParseLimits } from "../contract/index.js";
import type { Logger } from "./logger.js";

/** how long a stopping consumer waits for its handlers before handing their messages back */
export const STOP_GRACE_MS = 5_000;

export interface ConsumeOptions<S extends z.ZodType> {
  stream: string;
  consumer: string;
  /** only this subject (one filter: array filters need nats-server 2.10) */
  filterSubject?: string;
  schema: S;
  concurrency: number;
  ackWaitMs: number;
  maxDeliver: number;
  backoffMs: number[];
  limits: SafeParseLimits;
  prefix?: string;
  log: Logger;
  /** called for dead letters (the runtime publishes the event) */
  onDeadLetter?: (info: DeadLetterInfo) => void;
  handler: (message: z.output<S>, delivery: DeliveryInfo) => Promise<void>;
  /** default STOP_GRACE_MS; kept below the actor process's 10 s forced exit */
  stopGraceMs?: number;
}

export interface DeliveryInfo {
  subject: string;
  streamSeq: number;
  deliveryCount: number;
  redelivered: boolean;
  headers: Record<string, string>;
  /**
   * Acks now instead of when the handler resolves: for a handler whose last step publishes
   * (a run's terminal event), so both leave in one socket write. Nothing once a stop handed
   * the message back; a second call does nothing.
   */
  ackNow(): void;
}

export interface DeadLetterInfo {
  stream: string;
  consumer: string;
  subject: string;
  streamSeq: number;
  deliveries: number;
  error: string;
  dlqSubject: string;
}

export interface RunningConsumer {
  stop(): Promise<void>;
  /** resolves when every in-flight handler finished */
  idle(): Promise<void>;
}

export async function ensureDurableConsumer(nc: NatsConnection, opts: { stream: string; consumer: string; filterSubject?: string; ackWaitMs: number; maxAckPending: number }): Promise<void> {
  const jsm = await jetstreamManager(nc);
  await jsm.consumers.add(opts.stream, {
    durable_name: opts.consumer,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(opts.ackWaitMs),
    max_deliver: -1,
    max_ack_pending: opts.maxAckPending,
    ...(opts.filterSubject ? { filter_subject: opts.filterSubject } : {}),
  });
}

export function startConsumer<S extends z.ZodType>(nc: NatsConnection, opts: ConsumeOptions<S>): RunningConsumer {
  const js = jetstream(nc);
  const dlqSubject = subjects(opts.prefix).deadLetter(opts.stream, opts.consumer);
  const inFlight = new Set<Promise<void>>();
  /** the deliveries whose handlers are running; one a stop handed back is no longer here */
  const running = new Set<Delivery>();
  let stopped = false;
  let current: { close(): Promise<void | Error> } | undefined;
  const waiters: Array<() => void> = [];

  const deadLetter = async (msg: JsMsg, error: string) => {
    const h = headers();
    h.set("Lurk-Dlq-Subject", msg.subject);
    h.set("Lurk-Dlq-Stream-Seq", String(msg.seq));
    h.set("Lurk-Dlq-Deliveries", String(msg.info.deliveryCount));
    h.set("Lurk-Dlq-Error", error.replace(/[\r\n]+/g, " ").slice(0, 500));
    await js.publish(dlqSubject, msg.data, { headers: h, msgID: `${opts.stream}:${msg.seq}` });
    // no reason: nats-server 2.9 ignores `+TERM <reason>` and delivers the message again (the reason is in the headers above)
    msg.term();
    const info = { stream: opts.stream, consumer: opts.consumer, subject: msg.subject, streamSeq: msg.seq, deliveries: msg.info.deliveryCount, error, dlqSubject };
    opts.log.error(info, "message gave up: dead-lettered");
    opts.onDeadLetter?.(info);
  };

  /** Ends the delivery's in-progress acks; false when a stop already handed it back. */
  const settle = (delivery: Delivery): boolean => {
    clearInterval(delivery.keepAlive);
    return running.delete(delivery);
  };

  const handle = async (delivery: Delivery) => {
    const { msg } = delivery;
    let parsed: unknown;
    try {
      const body = safeParseJson(msg.data, opts.limits);
      const result = opts.schema.safeParse(body);
      if (!result.success) throw new LurkError("VALIDATION_FAILED", result.error.issues.slice(0, 5).map((i) => `${i.path.join(".")}: ${i.message}`).join("; "));
      parsed = result.data;
    } catch (err) {
      await deadLetter(msg, `malformed: ${(err as Error).message}`).catch((e) => opts.log.error({ err: e }, "dead-letter publish failed"));
      return;
    }
    delivery.keepAlive = setInterval(() => msg.working(), Math.max(500, Math.floor(opts.ackWaitMs / 3)));
    running.add(delivery);
    let acked = false;
    /** a second call, or one after a stop handed the message back, finds it settled already */
    const ack = () => {
      if (!settle(delivery)) return;
      acked = true;
      msg.ack();
    };
    try {
      const hdrs: Record<string, string> = {};
      for (const [k, v] of msg.headers ?? []) hdrs[k] = v.join(",");
      await opts.handler(parsed as z.output<S>, {
        subject: msg.subject,
        streamSeq: msg.seq,
        deliveryCount: msg.info.deliveryCount,
        redelivered: msg.redelivered,
        headers: hdrs,
        ackNow: ack,
      });
      ack();
    } catch (err) {
      if (acked) {
        opts.log.error({ err, seq: msg.seq }, "handler failed after it acked its message; nothing to retry");
        return;
      }
      if (!settle(delivery)) return;
      const lurkError = LurkError.from(err);
      const deliveries = msg.info.deliveryCount;
      if (deliveries >= opts.maxDeliver || (!lurkError.retryable && lurkError.code !== "INTERNAL")) {
        await deadLetter(msg, `${lurkError.code}: ${lurkError.message}`).catch((e) => opts.log.error({ err: e }, "dead-letter publish failed"));
      } else {
        const delay = opts.backoffMs[Math.min(deliveries - 1, opts.backoffMs.length - 1)] ?? 1000;
        opts.log.warn({ err: lurkError, seq: msg.seq, deliveries, retryInMs: delay }, "handler failed; will retry");
        msg.nak(delay);
      }
    }
  };

  const loop = async () => {
    let backoff = 250;
    while (!stopped) {
      try {
        await ensureDurableConsumer(nc, { stream: opts.stream, consumer: opts.consumer, ...(opts.filterSubject ? { filterSubject: opts.filterSubject } : {}), ackWaitMs: opts.ackWaitMs, maxAckPending: Math.max(opts.concurrency, 1) });
        const consumer = await js.consumers.get(opts.stream, opts.consumer);
        const messages = await consumer.consume({ max_messages: Math.max(1, Math.min(opts.concurrency, 256)) });
        current = messages;
        backoff = 250;
        for await (const msg of messages) {
          while (inFlight.size >= opts.concurrency) await Promise.race(inFlight);
          const p = handle({ msg }).catch((err) => opts.log.error({ err }, "consumer handler crashed"));
          inFlight.add(p);
          void p.finally(() => {
            inFlight.delete(p);
            if (inFlight.size === 0) waiters.splice(0).forEach((w) => w());
          });
        }
      } catch (err) {
        if (stopped) break;
        opts.log.warn({ err, stream: opts.stream, consumer: opts.consumer }, "consumer interrupted; retrying");
      }
      if (!stopped) {
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(backoff * 2, 5_000);
      }
    }
  };
  const done = loop();

  return {
    async stop() {
      stopped = true;
      await current?.close().catch(() => undefined);
      let grace: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled([...inFlight]), new Promise((r) => (grace = setTimeout(r, opts.stopGraceMs ?? STOP_GRACE_MS)))]);
      clearTimeout(grace);
      for (const delivery of [...running]) {
        settle(delivery); // the handler's own settle now returns false: its outcome is ignored
        delivery.msg.nak();
        opts.log.warn({ seq: delivery.msg.seq, deliveries: delivery.msg.info.deliveryCount }, "stopping: handed an unfinished message back for redelivery");
      }
      await Promise.race([done, new Promise((r) => setTimeout(r, 1000))]);
    },
    idle() {
      return inFlight.size === 0 ? Promise.resolve() : new Promise((r) => waiters.push(() => r()));
    },
  };
}

interface Delivery {
  msg: JsMsg;
  keepAlive?: NodeJS.Timeout;
}
