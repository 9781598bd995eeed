/**
 * Idle workers of the tools pool (real piscina worker threads): with minThreads 0 an idle pool
 * holds no worker, the first call after idle starts one and its deadline still counts from the
 * moment the tool starts (not while the worker boots), and calls never hang when no worker can
 * start at all.
 */
import assert from "node:assert/strict";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { LurkError } from "../shared/contract/index.js";
import { parseConfig } from "../shared/runtime/config.js";
import { ToolPool, type RunToolOptions } from "../services/tools/pool.js";

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/tools/${name}.js`, import.meta.url));
const opts = (args: Record<string, unknown>, timeoutMs: number): RunToolOptions => ({
  args, workspace: tmpdir(), timeoutMs, limits: { outputCapBytes: 64 * 1024, imageCapBytes: 256 * 1024 },
});

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`timed out waiting until ${what}`);
}

describe("tools pool idle workers", () => {
  it("defaults: no worker kept when idle, idle workers stopped after 15 s", () => {
    const tools = parseConfig({}, {}).tools;
    assert.equal(tools.minThreads, 0);
    assert.equal(tools.workerIdleMs, 15_000);
  });

  it("with minThreads 0 starts no worker, starts one per call and stops it when idle; the next call works", async () => {
    const pool = new ToolPool({ minThreads: 0, maxThreads: 2, workerMemoryMb: 64, idleTimeoutMs: 300 });
    try {
      assert.equal(pool.stats.threads, 0, "no worker before the first call");
      const first = await pool.runModule(fixture("sleep"), opts({ ms: 1 }, 10_000));
      assert.deepEqual(first.content, [{ type: "text", text: "slept 1" }]);
      await until(() => pool.stats.threads === 0, "the idle worker is stopped");
      // the deadline counts from the start of the tool: a 1 s budget is not spent booting the worker
      const again = await pool.runModule(fixture("sleep"), opts({ ms: 200 }, 1_000));
      assert.deepEqual(again.content, [{ type: "text", text: "slept 200" }]);
      await until(() => pool.stats.threads === 0, "the idle worker is stopped again");
    } finally {
      await pool.close();
    }
  });

  it("keeps minThreads workers when idle", async () => {
    const pool = new ToolPool({ minThreads: 1, maxThreads: 2, workerMemoryMb: 64, idleTimeoutMs: 200 });
    try {
      await Promise.all([0, 1, 2].map(() => pool.runModule(fixture("sleep"), opts({ ms: 300 }, 10_000))));
      await until(() => pool.stats.threads === 1, "the pool shrinks to minThreads");
      await new Promise((r) => setTimeout(r, 600));
      assert.equal(pool.stats.threads, 1, "the last worker stays");
    } finally {
      await pool.close();
    }
  });

  it("with minThreads 0, calls never hang when workers cannot even start", async () => {
    // each worker dies while starting; the pool keeps replacing itself until the queue wait ends
    const pool = new ToolPool({ minThreads: 0, maxThreads: 1, workerMemoryMb: 64, maxQueueWaitMs: 3_000, workerFile: fixture("cannot-start") });
    try {
      for (let i = 0; i < 2; i++) {
        const settled = await pool.runModule(fixture("sleep"), opts({ ms: 1 }, 5_000)).then(() => "ok", (err: unknown) => (LurkError.is(err) ? err.code : String(err)));
        assert.ok(["TOOL_FAILED", "UNAVAILABLE"].includes(settled), settled);
      }
    } finally {
      await pool.close();
    }
  });
});
