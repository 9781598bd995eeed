/**
 * The tools worker pool with real worker threads (piscina) and fixture tool modules
 * (test/fixtures/tools): deadlines that start when a task starts, termination of a runaway
 * tool, the per-worker heap cap, worker crashes, cancellation, progress, and that the pool
 * keeps serving after each of them.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { LurkError } from "../shared/contract/index.js";
import { ToolPool, type RunToolOptions } from "../services/tools/pool.js";

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/tools/${name}.js`, import.meta.url));

describe("tools pool", () => {
  let pool: ToolPool;
  let workspace: string;
  const opts = (args: Record<string, unknown>, timeoutMs: number, extra: Partial<RunToolOptions> = {}): RunToolOptions => ({
    args,
    workspace,
    timeoutMs,
    limits: { outputCapBytes: 64 * 1024, imageCapBytes: 256 * 1024 },
    ...extra,
  });
  const rejectsWith = async (promise: Promise<unknown>, code: string, message?: RegExp) => {
    await assert.rejects(promise, (err: unknown) => {
      assert.ok(LurkError.is(err), `a LurkError, got ${String(err)}`);
      assert.equal(err.code, code, err.message);
      if (message) assert.match(err.message, message);
      return true;
    });
  };
  const threadId = () => {
    const threads = (pool as unknown as { piscina: { threads: Array<{ threadId: number }> } }).piscina.threads;
    return threads[0]?.threadId;
  };
  /** the pool still works: a quick task succeeds */
  const stillServes = async () => {
    const result = await pool.runModule(fixture("sleep"), opts({ ms: 1 }, 10_000));
    assert.deepEqual(result.content, [{ type: "text", text: "slept 1" }]);
  };

  before(() => {
    workspace = mkdtempSync(join(tmpdir(), "lurk-pool-ws-"));
    writeFileSync(join(workspace, "hello.txt"), "hello\n");
    // one thread, so queueing is deterministic
    pool = new ToolPool({ minThreads: 1, maxThreads: 1, workerMemoryMb: 48, graceMs: 1_000 });
  });
  after(async () => {
    await pool?.close();
    rmSync(workspace, { recursive: true, force: true });
  });

  it("runs a built-in tool by name in a worker", async () => {
    const result = await pool.run("read", opts({ path: "hello.txt" }, 10_000));
    assert.deepEqual(result.content, [{ type: "text", text: "     1\thello\n" }]);
    const unknown = await pool.run("no-such-tool", opts({}, 10_000));
    assert.equal(unknown.isError, true);
    assert.equal(unknown.errorCode, "TOOL_UNKNOWN");
  });

  it("ends a runaway JS loop at its deadline, and the pool serves the next task", async () => {
    await stillServes();
    const before = threadId();
    const started = Date.now();
    await rejectsWith(pool.runModule(fixture("spin"), opts({}, 300)), "TIMEOUT", /spin tool ran longer than 300 ms/);
    assert.ok(Date.now() - started < 15_000, "ended near its deadline");
    await stillServes();
    assert.notEqual(threadId(), before, "the spinning worker was replaced");
  });

  it("a tool that honours its AbortSignal stops at the deadline and keeps its worker", async () => {
    await stillServes();
    const before = threadId();
    await rejectsWith(pool.runModule(fixture("sleep"), opts({ ms: 60_000 }, 200)), "TIMEOUT");
    await stillServes();
    assert.equal(threadId(), before, "no termination was needed");
  });

  it("a tool that ignores its AbortSignal is terminated after the grace period", async () => {
    await rejectsWith(pool.runModule(fixture("sleep"), opts({ ms: 60_000, ignoreAbort: true }, 200)), "TIMEOUT");
    await stillServes();
  });

  it("does not count queue time: a short task queued behind a slow one completes within its own deadline", async () => {
    const slow = pool.runModule(fixture("sleep"), opts({ ms: 2_500 }, 20_000));
    // waits ~2.5 s in the queue, longer than its 1 s deadline, then runs for 20 ms
    const queued = pool.runModule(fixture("sleep"), opts({ ms: 20 }, 1_000));
    assert.deepEqual((await slow).content, [{ type: "text", text: "slept 2500" }]);
    assert.deepEqual((await queued).content, [{ type: "text", text: "slept 20" }]);
  });

  it("ends a memory hog at the worker heap cap with an error, and the pool recovers", async () => {
    await rejectsWith(pool.runModule(fixture("hog"), opts({}, 50_000)), "TOOL_FAILED", /out of memory/);
    await stillServes();
    const result = await pool.run("read", opts({ path: "hello.txt" }, 10_000));
    assert.equal(result.isError, undefined);
  });

  it("reports a worker that exits mid-call as TOOL_FAILED, and the pool recovers", async () => {
    await rejectsWith(pool.runModule(fixture("crash"), opts({}, 10_000)), "TOOL_FAILED", /exited/);
    await stillServes();
  });

  it("cancels a running task through the caller's AbortSignal", async () => {
    const controller = new AbortController();
    const started = Date.now();
    const running = pool.runModule(fixture("sleep"), opts({ ms: 60_000 }, 60_000, { signal: controller.signal }));
    setTimeout(() => controller.abort(), 200);
    await rejectsWith(running, "ABORTED");
    assert.ok(Date.now() - started < 15_000);
    await stillServes();
  });

  it("cancels a runaway task through the caller's AbortSignal (its worker is terminated)", async () => {
    const controller = new AbortController();
    const running = pool.runModule(fixture("spin"), opts({}, 60_000, { signal: controller.signal }));
    setTimeout(() => controller.abort(), 200);
    await rejectsWith(running, "ABORTED");
    await stillServes();
  });

  it("a task cancelled while queued never runs; an already aborted signal is refused at once", async () => {
    const slow = pool.runModule(fixture("sleep"), opts({ ms: 800 }, 20_000));
    const controller = new AbortController();
    const notes: string[] = [];
    const queued = pool.runModule(fixture("sleep"), opts({ ms: 1 }, 20_000, { signal: controller.signal, onProgress: (m) => notes.push(m) }));
    controller.abort();
    await rejectsWith(queued, "ABORTED");
    await slow;
    await stillServes();
    assert.deepEqual(notes, [], "the cancelled task never started");
    await rejectsWith(pool.runModule(fixture("sleep"), opts({ ms: 1 }, 1_000, { signal: AbortSignal.abort() })), "ABORTED");
  });

  it("forwards progress notes from the worker", async () => {
    const notes: Array<[string, number | undefined]> = [];
    await pool.runModule(fixture("sleep"), opts({ ms: 5 }, 10_000, { onProgress: (m, f) => notes.push([m, f]) }));
    assert.deepEqual(notes, [["sleeping", 0], ["done", 1]]);
  });

  it("validates arguments in the worker too", async () => {
    const result = await pool.runModule(fixture("sleep"), opts({ ms: "soon" }, 10_000));
    assert.equal(result.isError, true);
    assert.equal(result.errorCode, "TOOL_INVALID_ARGS");
    assert.match((result.content[0] as { text: string }).text, /ms/);
  });
});

describe("tools pool limits and self-repair", () => {
  const opts = (args: Record<string, unknown>, timeoutMs: number): RunToolOptions => ({
    args,
    workspace: tmpdir(),
    timeoutMs,
    limits: { outputCapBytes: 64 * 1024, imageCapBytes: 256 * 1024 },
  });

  it("gives up on a task that waits too long for a worker (UNAVAILABLE), without touching the running one", async () => {
    const pool = new ToolPool({ minThreads: 1, maxThreads: 1, workerMemoryMb: 64, maxQueueWaitMs: 1_000 });
    try {
      // a warm worker first: on a loaded machine starting one can take longer than the queue wait
      await pool.runModule(fixture("sleep"), opts({ ms: 1 }, 20_000));
      const slow = pool.runModule(fixture("sleep"), opts({ ms: 3_000 }, 20_000));
      await assert.rejects(pool.runModule(fixture("sleep"), opts({ ms: 1 }, 20_000)), (err: unknown) => LurkError.is(err) && err.code === "UNAVAILABLE" && err.retryable);
      assert.deepEqual((await slow).content, [{ type: "text", text: "slept 3000" }]);
    } finally {
      await pool.close();
    }
  });

  it("never leaves calls hanging when its workers cannot even start: every call settles", async () => {
    const pool = new ToolPool({ minThreads: 1, maxThreads: 1, workerMemoryMb: 64, maxQueueWaitMs: 20_000, workerFile: fixture("cannot-start") });
    try {
      for (let i = 0; i < 3; i++) {
        const settled = await pool.runModule(fixture("sleep"), opts({ ms: 1 }, 5_000)).then(() => "ok", (err: unknown) => (LurkError.is(err) ? err.code : String(err)));
        assert.ok(["TOOL_FAILED", "UNAVAILABLE"].includes(settled), settled);
      }
    } finally {
      await pool.close();
    }
  });

  it("raises a worker heap cap below MIN_WORKER_MEMORY_MB to it (a 2 MB heap aborts the whole process on Node >= 22)", async () => {
    const pool = new ToolPool({ minThreads: 1, maxThreads: 1, workerMemoryMb: 2, maxQueueWaitMs: 5_000 });
    try {
      const result = await pool.runModule(fixture("sleep"), opts({ ms: 1 }, 5_000));
      assert.equal(result.isError ?? false, false, JSON.stringify(result));
    } finally {
      await pool.close();
    }
  });

  it("refuses calls once closed", async () => {
    const pool = new ToolPool({ minThreads: 1, maxThreads: 1, workerMemoryMb: 64 });
    await pool.close();
    await assert.rejects(pool.runModule(fixture("sleep"), opts({ ms: 1 }, 1_000)), (err: unknown) => LurkError.is(err) && err.code === "UNAVAILABLE");
  });
});
