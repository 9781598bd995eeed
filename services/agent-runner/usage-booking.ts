/**
 * Usage that no run's end carries goes to the sessions actor's usage ledger on its own, through
 * `lurk.sessions.usage` with its purpose: memory consolidation (after a run, and of a transcript a
 * reset ended), embeddings for memory_search, and, in units instead of tokens, speech synthesized
 * (characters; tts.ts) and audio transcribed (seconds; transcribe.ts). Each call's usage gets a fresh idempotency
 * key, kept across the retries of its request, so a request repeated after a lost reply is counted
 * once. Retryable failures are retried after RETRY_DELAYS_MS; then (or on a permanent failure, or
 * when the actor stops) the usage is logged (warn) and given up. Booking never throws and never
 * holds up the caller: `booked` and the embed endpoint fire it and go on.
 */
import { randomUUID } from "node:crypto";
import { LurkError, sessionKeySchema, usageTokens, type Usage, type UsagePurpose, type UsageUnits } from "../../shared/contract/index.js";
import { sleepUnlessAborted } from "../../shared/runtime/abortable-sleep.js";
import type { BusClient } from "../../shared/runtime/client.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { Complete } from "./model-complete.js";

export const BOOKING_RETRY_DELAYS_MS = [500, 2_000, 5_000];

/** Whose usage it is: the session (its agent, channel and type), else the agent alone. */
export interface UsageOwner {
  sessionKey?: string | undefined;
  agentId?: string | undefined;
}

export interface UsageCharge {
  owner: UsageOwner;
  purpose: UsagePurpose;
  provider: string;
  model: string;
  usage: Usage;
  /** speech (chars) and transcription (audioSeconds or durationUnknown): booked by these, not tokens */
  units?: UsageUnits;
}

/** Books one model call's usage; resolves when it is booked or given up. */
export type BookUsage = (charge: UsageCharge) => Promise<void>;

export function usageBooker(deps: { client: Pick<BusClient, "call">; signal: AbortSignal; log: Logger }, delays: readonly number[] = BOOKING_RETRY_DELAYS_MS): BookUsage {
  return async ({ owner, purpose, provider, model, usage, units }) => {
    if (usageTokens(usage) === 0 && !units) return;
    // an owner the ledger cannot take (a malformed session key from the envelope) is left out
    const sessionKey = owner.sessionKey !== undefined && sessionKeySchema.safeParse(owner.sessionKey).success ? owner.sessionKey : undefined;
    if (sessionKey === undefined && owner.agentId === undefined) {
      deps.log.warn({ purpose, model, usage, units }, "usage without a session or an agent: not booked in the usage ledger");
      return;
    }
    const body = {
      ...(sessionKey !== undefined ? { sessionKey } : {}), ...(owner.agentId !== undefined ? { agentId: owner.agentId } : {}),
      usage, model, provider, purpose, ...(units ? { units } : {}), idempotencyKey: `usage:${randomUUID()}`,
    };
    for (let attempt = 0; ; attempt++) {
      try {
        await deps.client.call("sessions", "usage", body);
        return;
      } catch (err) {
        const e = LurkError.from(err);
        if (!e.retryable || attempt >= delays.length || deps.signal.aborted) {
          deps.log.warn({ err: e, purpose, model, usage, units, sessionKey, agentId: owner.agentId }, "could not book usage in the usage ledger; given up");
          return;
        }
        await sleepUnlessAborted(delays[attempt]!, deps.signal);
      }
    }
  };
}

/** `complete` with each completion's usage booked (in the background) to `owner` under `purpose`. */
export function booked(complete: Complete, book: BookUsage, owner: UsageOwner, purpose: UsagePurpose): Complete {
  return async (system, prompt) => {
    const done = await complete(system, prompt);
    void book({ owner, purpose, provider: done.provider ?? "-", model: done.model ?? "-", usage: done.usage });
    return done;
  };
}

/**
 * Bookings held until `release()` (a run's transcriptions, made before `sessions.begin` stores
 * the session, so they are booked under its channel and type): `book` queues them until then,
 * and books at once after.
 */
export function heldBookings(book: BookUsage): { book(charge: UsageCharge): void; release(): void } {
  let held: UsageCharge[] | undefined = [];
  return {
    book: (charge) => (held ? held.push(charge) : void book(charge)),
    release: () => {
      const due = held ?? [];
      held = undefined;
      for (const charge of due) void book(charge);
    },
  };
}
