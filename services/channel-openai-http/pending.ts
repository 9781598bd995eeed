/**
 * HTTP requests waiting for their reply, keyed by the inbound message id (the outbound
 * message's `replyTo`). The kit's `deliver` settles them. A request already answered (from the
 * run's terminal event) or abandoned (client gone, timeout) is remembered for a while, so its
 * late delivery is acknowledged ("answered") or reported failed ("abandoned"), not retried.
 */
import type { OutboundMessage } from "../../shared/contract/index.js";

export interface Waiter {
  /** the final reply or run error */
  onFinal(message: OutboundMessage, text: string): void;
  /** an approval request while the run waits */
  onIntermediate(message: OutboundMessage): void;
}

const REMEMBER_MS = 10 * 60_000;

export class PendingRequests {
  private readonly waiters = new Map<string, Waiter>();
  private readonly settled = new Map<string, { how: "answered" | "abandoned"; at: number }>();

  add(inboundId: string, waiter: Waiter): void {
    this.waiters.set(inboundId, waiter);
  }

  settle(inboundId: string, how: "answered" | "abandoned"): void {
    this.waiters.delete(inboundId);
    this.settled.set(inboundId, { how, at: Date.now() });
    const cutoff = Date.now() - REMEMBER_MS;
    for (const [id, s] of this.settled) {
      if (s.at >= cutoff) break;
      this.settled.delete(id);
    }
  }

  find(message: OutboundMessage): { waiter?: Waiter; settled?: "answered" | "abandoned" } {
    for (const id of message.replyTo) {
      const waiter = this.waiters.get(id);
      if (waiter) return { waiter };
      const s = this.settled.get(id);
      if (s) return { settled: s.how };
    }
    return {};
  }

  get size(): number {
    return this.waiters.size;
  }
}
