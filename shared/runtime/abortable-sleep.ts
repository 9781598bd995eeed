/** Waits `ms`, or less when `signal` fires (then it resolves early; it never rejects). */
export function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/**
 * `work`, or a rejection with `toError(signal)` as soon as `signal` fires (at once when it already
 * has). `work` itself is not stopped: the caller's signal is expected to stop it too.
 */
export function abortable<T>(work: Promise<T>, signal: AbortSignal, toError: (signal: AbortSignal) => Error): Promise<T> {
  if (signal.aborted) return Promise.reject(toError(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(toError(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
