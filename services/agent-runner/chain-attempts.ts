/**
 * One call over a model chain's usable candidates (failover.ts), in the chain's order: a
 * failure that another key or model may not have (`failureReason`) puts that candidate on
 * cooldown and the next one is tried; any other failure, an abort, or less than 250 ms left
 * before `deadline` ends it. Returns the first success (the candidate marked successful);
 * throws the last error, or `none()` when no candidate could be tried. Used by the runner's
 * one-shot calls (housekeeping completions, embeddings, image descriptions); a run's own turns
 * have their own loop with backoff and events.
 */
import { LurkError, type ErrorCode } from "../../shared/contract/index.js";
import { failureReason, type Candidate, type ModelChain } from "./failover.js";

export interface ChainAttemptOptions {
  signal: AbortSignal;
  /** epoch ms; none: no deadline */
  deadline?: number;
  /** the code of an error that is not a LurkError (LurkError.from's fallback) */
  errorCode?: ErrorCode;
}

export async function attemptChain<T>(
  chain: ModelChain, opts: ChainAttemptOptions, attempt: (candidate: Candidate, leftMs: number) => Promise<T>, none: () => LurkError,
): Promise<T> {
  const tried = new Set<string>();
  let last: LurkError | undefined;
  for (let candidate = chain.next(tried); candidate; candidate = chain.next(tried)) {
    const left = opts.deadline === undefined ? Number.POSITIVE_INFINITY : opts.deadline - Date.now();
    if (left < 250) break;
    await chain.use(candidate);
    try {
      const result = await attempt(candidate, left);
      await chain.success(candidate);
      return result;
    } catch (err) {
      last = LurkError.from(err, opts.errorCode);
      const reason = failureReason(last);
      if (!reason || opts.signal.aborted) throw last;
      await chain.failure(candidate, reason);
      tried.add(candidate.key);
    }
  }
  throw last ?? none();
}
