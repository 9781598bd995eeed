/**
 * A run's end read from its transcript records (shared/runtime/run-ends.ts), as the subagents,
 * cron and heartbeat actors read it from `sessions.run`: the end marker's own usage (the whole
 * run's) wins over the sum of the records at hand, which `sessions.run` may have cut to the
 * newest (`truncated`); a marker without one, or with one that does not parse, falls back to that sum.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { TranscriptRecord } from "../shared/contract/index.js";
import { runEndFromRecords } from "../shared/runtime/run-ends.js";

const runId = "run-ends-1";
const answer = (n: number, input: number, output: number): TranscriptRecord => ({
  id: `${runId}:a:${n}`, ts: n, runId, kind: "message",
  message: { role: "assistant", content: [{ type: "text", text: `answer ${n}` }], provider: "openai", model: "m", stopReason: "end_turn", usage: { input, output, cacheRead: 0, cacheWrite: 0, total: input + output } },
});
const end = (meta: Record<string, unknown>): TranscriptRecord => ({ id: `${runId}:end:done`, ts: 9, runId, kind: "run_marker", runStatus: "done", text: "answer 2", meta });

describe("a run's end from its records", () => {
  it("takes the end marker's usage, the whole run's, even when only the newest records are at hand", () => {
    const whole = { input: 300, output: 30, cacheRead: 0, cacheWrite: 0, total: 330 };
    const read = runEndFromRecords([answer(2, 100, 10), end({ usage: whole })]);
    assert.deepEqual(read?.usage, whole);
    assert.equal(read?.lastAssistantText, "answer 2");
  });

  it("sums the assistant messages when the marker has no usage (a run ended by an older runner) or one that does not parse", () => {
    const records = [answer(1, 200, 20), answer(2, 100, 10)];
    const summed = { input: 300, output: 30, cacheRead: 0, cacheWrite: 0, total: 330 };
    assert.deepEqual(runEndFromRecords([...records, end({})])?.usage, summed);
    assert.deepEqual(runEndFromRecords([...records, end({ usage: { input: -5 } })])?.usage, summed);
    assert.deepEqual(runEndFromRecords([...records, end({ usage: "lots" })])?.usage, summed);
  });

  it("is null while the run has no end marker", () => {
    assert.equal(runEndFromRecords([answer(1, 1, 1)]), null);
  });
});
