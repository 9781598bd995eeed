/**
 * Memory at idle. Actor processes start with ACTOR_NODE_FLAGS (`gc` exposed; the young generation
 * starts at V8's 1 MB semi-space and may grow to 4 MB under load); `startIdleGc` runs a full
 * collection once an actor has been idle for a while after doing work, and a second one shortly
 * after, so V8 returns the pages a busy spell grew (the young generation included) instead of
 * keeping them until the next allocation pressure. Peak capacity is not limited.
 */
import { createRequire } from "node:module";
import type { Logger } from "./logger.js";

/**
 * Node flags for actor processes (the launcher, the test harness and the benchmark use them).
 * A 1 MB cap on the semi-space cost the agent-runner ~1.5 ms of scavenges per turn with 50
 * sessions in flight (objects of runs in flight survive and are copied); 4 MB cuts that by half
 * and the idle collections give the pages back (measured: same idle RSS after a load).
 * `--flush-baseline-code`: Sparkplug's code of a function unused for several collections goes
 * with its bytecode, as V8 already does for bytecode alone (the agent-runner ~1 MB smaller at
 * idle after a load, three pairs of runs; a function that runs again is compiled again).
 */
export const ACTOR_NODE_FLAGS = ["--max-semi-space-size=4", "--expose-gc", "--flush-baseline-code"];

/**
 * Environment for actor processes (callers put the user's environment over it). glibc's malloc
 * otherwise keeps up to 8 arenas per core, whose freed memory stays in the process after a busy
 * spell (measured: the agent-runner ~10 MB smaller at idle after a load). Ignored elsewhere (musl).
 */
export const ACTOR_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: "2" };

/** What the optional `@lurkbot/idle-memory` addon gives an idle process (shared/native/idle-memory). */
export interface IdleMemoryAddon {
  /** glibc's malloc_trim(0): the free pages inside malloc's arenas go back to the system */
  trim(): boolean;
  /** drops this process's page-table entries of shared file mappings whose path ends so; the pages stay in the page cache */
  releaseSharedFilePages(pathSuffix: string): number;
  /** V8's Isolate::LowMemoryNotification (full collections that compact every fragmented page); absent when it could not be loaded */
  lowMemoryNotification?: () => void;
}

/**
 * The `@lurkbot/idle-memory` addon (N-API, built by node-gyp at install), or undefined when it
 * is not built: then an idle actor only collects garbage. Measured after a load: malloc_trim
 * gave back 10-15 MB in the tools actor (whose worker threads come and go) and 5-8 MB in the
 * agent-runner; the sessions actor's LMDB file was 15 MB of its RSS; the low-memory
 * notification compacted 3-4 MB of half-empty old-space pages in the agent-runner.
 */
export function loadIdleMemoryAddon(): IdleMemoryAddon | undefined {
  try {
    const addon = createRequire(import.meta.url)("@lurkbot/idle-memory") as Partial<IdleMemoryAddon>;
    return typeof addon.trim === "function" && typeof addon.releaseSharedFilePages === "function" ? (addon as IdleMemoryAddon) : undefined;
  } catch {
    return undefined;
  }
}

/** LMDB's data file, which every store (opened on a directory) maps shared */
export const LMDB_DATA_FILE_SUFFIX = "/data.mdb";

const IDLE_CHECK_MS = 10_000;
/** V8 rates allocation over the last 5 s: a collection this long after the first sees only the quiet spell */
const SECOND_GC_DELAY_MS = 6_000;

export interface ActivityCounter {
  /** a number that changes whenever the actor handles something */
  readonly count: number;
}

/**
 * Once the actor has been idle for IDLE_CHECK_MS after doing work (start-up included): runs
 * `onIdle` (actors drop caches there, see ActorRuntime.onIdle), then a full collection when `gc`
 * is exposed, and a second one SECOND_GC_DELAY_MS later if it is still idle. With the idle-memory
 * addon built, the second is V8's low-memory notification (it compacts every fragmented page),
 * and each is followed by malloc_trim and by dropping the process's mapped pages of its LMDB
 * files (they stay in the page cache: the next read maps them again).
 */
export function startIdleGc(activity: ActivityCounter, log: Logger, onIdle: () => void = () => {}, timing = { checkMs: IDLE_CHECK_MS, secondGcMs: SECOND_GC_DELAY_MS }): { stop(): void } {
  const gc = (globalThis as { gc?: () => void }).gc;
  const addon = typeof gc === "function" ? loadIdleMemoryAddon() : undefined;
  if (typeof gc === "function" && !addon) log.debug("idle: the idle-memory addon is not built, so malloc keeps its free pages (run `npm rebuild @lurkbot/idle-memory`; it needs make and a C compiler)");
  const collect = (compact = false): void => {
    if (compact && addon?.lowMemoryNotification) addon.lowMemoryNotification();
    else gc?.();
    if (!addon) return;
    addon.trim();
    addon.releaseSharedFilePages(LMDB_DATA_FILE_SUFFIX);
  };
  let seen = activity.count;
  /** the count at the last collection; NaN: none yet, so the quiet after start-up collects too */
  let collectedAt = Number.NaN;
  const timer = setInterval(() => {
    const now = activity.count;
    const idle = now === seen && now !== collectedAt;
    seen = now;
    if (!idle) return;
    collectedAt = now;
    try {
      onIdle();
    } catch (err) {
      log.warn({ err }, "idle: a cache could not be trimmed");
    }
    if (typeof gc !== "function") return;
    collect();
    // V8 shrinks a young generation grown by the busy spell only at a collection whose allocation
    // rate over the last 5 s is low: this one still counts the spell's tail, one 6 s later does not
    setTimeout(() => {
      if (activity.count === now) collect(true);
    }, timing.secondGcMs).unref();
    const m = process.memoryUsage();
    log.debug({ rssMb: Math.round(m.rss / 1048576), heapUsedMb: Math.round(m.heapUsed / 1048576), heapTotalMb: Math.round(m.heapTotal / 1048576), externalMb: Math.round(m.external / 1048576), arrayBuffersMb: Math.round(m.arrayBuffers / 1048576) }, "idle: collected garbage");
  }, timing.checkMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
