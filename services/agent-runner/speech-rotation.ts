/**
 * One speech provider's profiles, tried in order for one voice message (tts.ts), with the
 * AuthStateStore's cooldowns as for model calls (auth-profiles.ts: after the n-th failure in a row
 * min(1 h, 60 s × 5^(n-1)) for the profile and speech model; billing/auth also disable the
 * profile for min(24 h, 5 h × 2^(n-1))), under the profile's speech state key (speech-profiles.ts).
 *
 * Contract of `synthesizeRotating`: a profile that is disabled or cooling down for the model is
 * skipped (no call); a call that fails with a rate limit, overload, auth, billing, timeout or a
 * retryable server error (failover.ts failureReason) is recorded as a failure and the next profile
 * is called; any other failure (a bad request: an unknown voice, audio above the size cap) ends the
 * provider's turn, as another key would not help. A success clears the profile's failure streak.
 * Each call gets min(tts.timeoutMs, what is left until `deadline`); a call cut short by the
 * deadline (not by its own timeoutMs) is not held against the profile, and no call starts with
 * less than MIN_CALL_MS left. Resolves with the audio and the profile, or with every attempt's
 * failure (in order; never empty). Rejects only when `signal` (the caller's) fired.
 */
import { LurkError, type ErrorCode } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { AuthStateStore, FailureReason } from "./auth-profiles.js";
import { failureReason } from "./failover.js";
import type { SpeechRequest } from "./providers/speech.js";
import type { SpeechProfile } from "./speech-profiles.js";

/** a call is not started with less time than this left */
export const MIN_CALL_MS = 1_000;

const COOLDOWN_CODES: Record<FailureReason, ErrorCode> = {
  rate_limit: "PROVIDER_RATE_LIMIT", overloaded: "PROVIDER_OVERLOADED", auth: "PROVIDER_AUTH", billing: "PROVIDER_BILLING", timeout: "PROVIDER_TIMEOUT", other: "PROVIDER_ERROR",
};

export interface SpeechAttempt {
  /** `provider/profile` */
  label: string;
  error: LurkError;
  /** not called: cooling down or disabled */
  skipped?: boolean;
}

export type RotationResult =
  | { ok: true; bytes: Uint8Array; profile: SpeechProfile; failed: SpeechAttempt[] }
  | { ok: false; failed: SpeechAttempt[] };

export interface RotationOptions {
  store?: AuthStateStore;
  log: Logger;
  /** tts.timeoutMs: one call */
  timeoutMs: number;
  /** epoch ms after which no call runs (tts.totalTimeoutMs from the first call) */
  deadline: number;
  /** the caller's signal: when it fires the rotation stops and rejects */
  signal: AbortSignal;
  now?: () => number;
}

export async function synthesizeRotating(profiles: SpeechProfile[], req: Omit<SpeechRequest, "signal">, opts: RotationOptions): Promise<RotationResult> {
  const now = opts.now ?? Date.now;
  const failed: SpeechAttempt[] = [];
  for (const profile of profiles) {
    const label = `${profile.provider}/${profile.id}`;
    const availability = opts.store?.availabilityWithState(profile.state, req.model) ?? { usable: true as const, hasState: false };
    if (!availability.usable) {
      const until = new Date(availability.until).toISOString();
      failed.push({ label, skipped: true, error: new LurkError(COOLDOWN_CODES[availability.reason], `${label} is ${availability.disabled ? "disabled" : "cooling down"} for speech after a ${availability.reason} failure, until ${until}`, { retryable: true, details: { retryAfterMs: Math.max(0, availability.until - now()) } }) });
      continue;
    }
    const left = opts.deadline - now();
    if (left < MIN_CALL_MS) {
      failed.push({ label, error: new LurkError("PROVIDER_TIMEOUT", `${label}: not tried, the voice message's time (tts.totalTimeoutMs) is spent`, { retryable: true }) });
      break;
    }
    const limit = Math.min(opts.timeoutMs, left);
    const signal = AbortSignal.any([opts.signal, AbortSignal.timeout(limit)]);
    try {
      const bytes = await profile.synthesize({ ...req, signal });
      if (availability.hasState) await opts.store?.markSuccess(profile.state, req.model);
      return { ok: true, bytes, profile, failed };
    } catch (err) {
      if (opts.signal.aborted) throw new LurkError("ABORTED", `${profile.provider}: the request was aborted`);
      // our own time limit fired (the caller's signal did not)
      const timedOut = signal.aborted;
      const e = timedOut
        ? new LurkError("PROVIDER_TIMEOUT", `${profile.provider}: no audio within ${limit} ms (${limit === opts.timeoutMs ? "tts.timeoutMs" : "what was left of tts.totalTimeoutMs"})`, { retryable: true })
        : LurkError.from(err, "PROVIDER_ERROR");
      failed.push({ label, error: e });
      // cut short by the whole message's deadline: not the profile's fault, and no time is left
      if (timedOut && limit < opts.timeoutMs) break;
      const reason = failureReason(e);
      if (!reason) break;
      await markFailure(opts, profile, req.model, reason);
    }
  }
  return { ok: false, failed };
}

async function markFailure(opts: RotationOptions, profile: SpeechProfile, model: string, reason: FailureReason): Promise<void> {
  const store = opts.store;
  if (!store) {
    opts.log.warn({ provider: profile.provider, profile: profile.id, model, reason }, "speech profile failed; trying the next");
    return;
  }
  let result;
  try {
    result = await store.markFailure(profile.state, model, reason);
  } catch (err) {
    opts.log.warn({ err, provider: profile.provider, profile: profile.id, reason }, "could not store a speech profile's failure; trying the next");
    return;
  }
  const { cooldown, profile: state } = result;
  opts.log.warn({
    provider: profile.provider, profile: profile.id, model, reason, failures: cooldown.errorCount, cooldownUntil: new Date(cooldown.cooldownUntil).toISOString(),
    ...(state.disabledUntil && state.disabledUntil > store.now() ? { disabledUntil: new Date(state.disabledUntil).toISOString() } : {}),
  }, "speech profile failed; cooling down");
}
