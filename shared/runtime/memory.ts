/**
 * Memory at idle. Actor processes start with ACTOR_NODE_FLAGS (small young generation, `gc`
 * exposed); `startIdleGc` runs a full collection once an actor has been idle for a while after
 * doing work, so V8 returns the pages a busy spell grew instead of keeping them until the next
 * allocation pressure. Peak capacity is not limited.
 */
import type { Logger } from "./logger.js";

/** Node flags for actor processes (the launcher, the test harness and the benchmark use them). */
export const ACTOR_NODE_FLAGS = ["--max-semi-space-size=1", "--expose-gc"];

const IDLE_CHECK_MS = 10_000;

export interface ActivityCounter {
  /** a number that changes whenever the actor handles something */
  readonly count: number;
}

export function startIdleGc(activity: ActivityCounter, log: Logger): { stop(): void } {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (typeof gc !== "function") return { stop() {} };
  let seen = activity.count;
  let collectedAt = activity.count;
  const timer = setInterval(() => {
    const now = activity.count;
    if (now === seen && now !== collectedAt) {
      gc();
      collectedAt = now;
      const m = process.memoryUsage();
      log.debug({ rssMb: Math.round(m.rss / 1048576), heapUsedMb: Math.round(m.heapUsed / 1048576), heapTotalMb: Math.round(m.heapTotal / 1048576), externalMb: Math.round(m.external / 1048576), arrayBuffersMb: Math.round(m.arrayBuffers / 1048576) }, "idle: collected garbage");
    }
    seen = now;
  }, IDLE_CHECK_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
