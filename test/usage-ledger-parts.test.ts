/**
 * The usage ledger by model and purpose (services/sessions/usage-ledger.ts, usage-seen.ts, store.ts)
 * on real LMDB files with an injected clock: a run end whose parts name several models and
 * purposes books one bucket each, priced at its own model, the run counted once; the `usage` op's
 * purposes, idempotency keys (a repeated request counted once, also on a standby that took over)
 * and session-less updates; buckets from before purposes; the contract's backward compatibility.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  LurkError, sessionChangeSchema, sessionsUsageRequest, usageUpdateSchema,
  type SessionChangeOp, type TranscriptRecord, type Usage, type UsageReportRow, type UsageSums,
} from "../shared/contract/index.js";
import { SessionStore } from "../services/sessions/store.js";
import { ledgerEntries } from "../services/sessions/usage-ledger.js";

const T0 = Date.parse("2026-11-27T12:00:00Z");
const DAY = 86_400_000;
const usage = (input: number, output: number): Usage => ({ input, output, cacheRead: 0, cacheWrite: 0, total: input + output });
const marker = (runId: string): TranscriptRecord => ({ id: `${runId}:done`, ts: 1, runId, kind: "run_marker", runStatus: "done" });
const near = (a: number, b: number) => assert.ok(Math.abs(a - b) < 1e-12, `${a} ≈ ${b}`);
const row = (rows: UsageReportRow[], model: string, purpose: string) => rows.find((r) => r.model === model && r.purpose === purpose);

function tempStore(options: ConstructorParameters<typeof SessionStore>[2] = {}) {
  const dir = mkdtempSync(join(tmpdir(), "lurk-usage-parts-"));
  const clock = { now: T0 };
  const store = new SessionStore(dir, () => clock.now, options);
  return { dir, clock, store, close: async () => { await store.close(); rmSync(dir, { recursive: true, force: true }); } };
}

describe("usage ledger by model and purpose (LMDB)", () => {
  let t: ReturnType<typeof tempStore>;
  before(async () => {
    t = tempStore();
    await t.store.ensure({ sessionKey: "agent:main:main", agentId: "main", sessionType: "main", channel: "cli", lastOrigin: { channel: "cli", conversation: "main", messageIds: [] } });
  });
  after(async () => t.close());

  it("a run end with parts books one bucket per model and purpose at that model's price; the run counts once, on its last model", async () => {
    const total = usage(8010, 610);
    await t.store.append("agent:main:main", [marker("r1")], {
      usage: total, model: "anthropic/claude-sonnet-4-6", provider: "anthropic", parts: [
        { model: "gpt-4o", provider: "openai", purpose: "turn", usage: usage(1000, 100) },
        { model: "claude-sonnet-4-6", provider: "anthropic", purpose: "turn", usage: usage(2000, 200) },
        { model: "gpt-4.1-nano", provider: "openai", purpose: "compaction", usage: usage(5000, 300) },
        // the same model and purpose twice: one bucket
        { model: "openai/gpt-4o", provider: "openai", purpose: "turn", usage: usage(10, 10) },
      ],
    });
    const r = t.store.usageReport({ groupBy: ["model", "purpose"] });
    assert.deepEqual(r.rows.map((x) => [x.model, x.purpose, x.runs, x.input, x.output]), [
      ["anthropic/claude-sonnet-4-6", "turn", 1, 2000, 200],
      ["openai/gpt-4.1-nano", "compaction", 0, 5000, 300],
      ["openai/gpt-4o", "turn", 0, 1010, 110],
    ]);
    near(row(r.rows, "openai/gpt-4o", "turn")!.costUsd, (1010 * 2.5 + 110 * 10) / 1e6);
    near(row(r.rows, "anthropic/claude-sonnet-4-6", "turn")!.costUsd, (2000 * 3 + 200 * 15) / 1e6);
    near(row(r.rows, "openai/gpt-4.1-nano", "compaction")!.costUsd, (5000 * 0.1 + 300 * 0.4) / 1e6);
    assert.equal(r.totals.runs, 1, "one run");
    // the session's own counters keep the run's total and its last model
    const s = t.store.get("agent:main:main")!;
    assert.deepEqual([s.usage.total, s.model, s.provider], [8620, "anthropic/claude-sonnet-4-6", "anthropic"]);
  });

  it("a run end delivered twice (its marker already stored) adds no part again", async () => {
    const before = t.store.usageReport({ groupBy: ["model", "purpose"] });
    const again = await t.store.append("agent:main:main", [marker("r1")], {
      usage: usage(1, 1), model: "openai/gpt-4o", provider: "openai", parts: [{ model: "gpt-4o", provider: "openai", purpose: "turn", usage: usage(1, 1) }],
    });
    assert.equal(again.appended, 0);
    assert.deepEqual(t.store.usageReport({ groupBy: ["model", "purpose"] }), before);
  });

  it("an update without parts is booked as turns of its model (the contract before parts)", async () => {
    await t.store.append("agent:main:main", [marker("r2")], { usage: usage(100, 100), model: "openai/gpt-4o-mini", provider: "openai" });
    const r = t.store.usageReport({ groupBy: ["model", "purpose"] });
    assert.deepEqual([row(r.rows, "openai/gpt-4o-mini", "turn")!.runs, row(r.rows, "openai/gpt-4o-mini", "turn")!.total], [1, 200]);
    assert.deepEqual(ledgerEntries({ usage: usage(1, 1), model: "m", provider: "ollama" }).map((e) => [e.ref, e.purpose, e.runs]), [["ollama/m", "turn", 1]]);
    assert.ok(usageUpdateSchema.safeParse({ usage: usage(1, 1), model: "openai/gpt-4o", provider: "openai" }).success, "parts are optional");
    assert.equal(usageUpdateSchema.safeParse({ usage: usage(1, 1), model: "x", provider: "openai", parts: [{ model: "x", provider: "openai", purpose: "lunch", usage: usage(1, 1) }] }).success, false);
  });

  it("the usage op books housekeeping under its purpose, adds no run and keeps the session's last model; an idempotency key counts once", async () => {
    const before = t.store.get("agent:main:main")!;
    const first = await t.store.recordUsage({ sessionKey: "agent:main:main", usage: usage(3000, 400), model: "gpt-4o-mini", provider: "openai", purpose: "consolidation", idempotencyKey: "k-1" });
    assert.equal(first.duplicate, false);
    assert.deepEqual([first.session!.model, first.session!.usage.total], [before.model, before.usage.total + 3400], "the counters grow; the last model stays");
    const again = await t.store.recordUsage({ sessionKey: "agent:main:main", usage: usage(3000, 400), model: "gpt-4o-mini", provider: "openai", purpose: "consolidation", idempotencyKey: "k-1" });
    assert.equal(again.duplicate, true);
    assert.equal(again.session!.usage.total, first.session!.usage.total, "not added twice to the session");
    const r = t.store.usageReport({ groupBy: ["model", "purpose", "channel", "sessionType"] });
    const consolidation = row(r.rows, "openai/gpt-4o-mini", "consolidation")!;
    assert.deepEqual([consolidation.runs, consolidation.input, consolidation.output, consolidation.channel, consolidation.sessionType], [0, 3000, 400, "cli", "main"]);
    near(consolidation.costUsd, (3000 * 0.15 + 400 * 0.6) / 1e6);
    // the key is remembered the next day too (a retry over midnight), and forgotten after two days
    t.clock.now = T0 + DAY;
    assert.equal((await t.store.recordUsage({ sessionKey: "agent:main:main", usage: usage(3000, 400), model: "gpt-4o-mini", provider: "openai", purpose: "consolidation", idempotencyKey: "k-1" })).duplicate, true);
    t.clock.now = T0 + 2 * DAY;
    assert.equal(t.store.pruneUsage(400), 0, "no ledger day is past retention; the old keys are pruned");
    assert.equal((await t.store.recordUsage({ sessionKey: "agent:main:main", usage: usage(1, 1), model: "gpt-4o-mini", provider: "openai", purpose: "consolidation", idempotencyKey: "k-1" })).duplicate, false);
    t.clock.now = T0;
  });

  it("without a session: booked under the agent, channel and type '-'; a session key that names none and no agent is NOT_FOUND", async () => {
    const r1 = await t.store.recordUsage({ agentId: "ops", usage: usage(500, 0), model: "text-embedding-3-small", provider: "openai", purpose: "embedding", idempotencyKey: "e-1" });
    assert.deepEqual([r1.session, r1.duplicate], [null, false]);
    const r2 = await t.store.recordUsage({ sessionKey: "agent:ops:gone", agentId: "ops", usage: usage(500, 0), model: "text-embedding-3-small", provider: "openai", purpose: "embedding" });
    assert.equal(r2.session, null, "a session that no longer exists: the ledger only");
    const emb = t.store.usageReport({ groupBy: ["agent", "model", "purpose", "channel", "sessionType"], agentId: "ops" }).rows;
    assert.deepEqual(emb.map((x) => [x.agentId, x.model, x.purpose, x.channel, x.sessionType, x.runs, x.input]), [["ops", "openai/text-embedding-3-small", "embedding", "-", "-", 0, 1000]]);
    near(emb[0]!.costUsd, 1000 * 0.02 / 1e6);
    await assert.rejects(t.store.recordUsage({ sessionKey: "agent:ops:gone", usage: usage(1, 1), model: "m", provider: "openai" }), (e: unknown) => LurkError.is(e) && e.code === "NOT_FOUND");
    await assert.rejects(t.store.recordUsage({ usage: usage(1, 1), model: "m", provider: "openai" }), (e: unknown) => LurkError.is(e) && e.code === "VALIDATION_FAILED");
    // the request's contract: purpose defaults to turn (the op as it was); an unknown purpose is refused
    const parsed = sessionsUsageRequest.parse({ type: "lurk.sessions.usage.v1", id: "1", ts: 1, sessionKey: "agent:main:main", usage: usage(1, 1), model: "m", provider: "openai" });
    assert.equal(parsed.purpose, "turn");
    assert.equal(sessionsUsageRequest.safeParse({ ...parsed, purpose: "lunch" }).success, false);
  });

  it("buckets written before purposes (five-element keys) report as turn and sum with new ones", () => {
    t.store.applyChange([{ op: "usage", key: ["2026-11-27", "main", "openai/gpt-4o-mini", "cli", "main"], value: { input: 7, output: 3, cacheRead: 0, cacheWrite: 0, total: 10, runs: 1, costUsd: 0, unpricedTokens: 0 } as UsageSums }], 1); // without the speech and transcription fields, as written then
    const r = t.store.usageReport({ groupBy: ["model", "purpose"], agentId: "main" });
    assert.deepEqual([row(r.rows, "openai/gpt-4o-mini", "turn")!.total, row(r.rows, "openai/gpt-4o-mini", "turn")!.runs], [210, 2]);
    const old = { type: "lurk.sessions.change.v1", id: "x", ts: 1, txn: "t", part: 0, parts: 1, ops: [{ op: "usage", key: ["2026-11-27", "main", "m", "-", "main"], value: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0, runs: 0, costUsd: 0, unpricedTokens: 0 } }] };
    assert.ok(sessionChangeSchema.safeParse(old).success, "an old change set still parses");
  });
});

describe("usage ops on a replicated store", () => {
  it("the idempotency keys travel with the ledger: a standby that takes over still counts a retried update once", async () => {
    const a = tempStore({ replicate: true });
    const b = tempStore({ replicate: true });
    try {
      await a.store.ensure({ sessionKey: "agent:main:main", agentId: "main", sessionType: "main" });
      await a.store.recordUsage({ sessionKey: "agent:main:main", usage: usage(100, 10), model: "gpt-4o-mini", provider: "openai", purpose: "consolidation", idempotencyKey: "retry-me" });
      a.clock.now += 2 * DAY;
      a.store.pruneUsage(400);
      const queued = a.store.changeLog!.pending(100);
      const ledgerOps = queued.flatMap((c) => c.ops).filter((op) => op.op !== "put") as SessionChangeOp[];
      assert.deepEqual(ledgerOps.map((op) => op.op), ["usage", "usageSeen", "pruneUsageSeen"]);
      // b follows everything but the prune, then takes over and gets the retry
      let seq = 0;
      for (const c of queued.slice(0, -1)) {
        const wire = sessionChangeSchema.parse(JSON.parse(JSON.stringify({ type: "lurk.sessions.change.v1", id: `m${seq}`, ts: 1, sessionKey: c.sessionKey, txn: `t-${c.n}`, part: 0, parts: 1, ops: c.ops })));
        b.store.applyChange(wire.ops, ++seq);
      }
      const retry = await b.store.recordUsage({ sessionKey: "agent:main:main", usage: usage(100, 10), model: "gpt-4o-mini", provider: "openai", purpose: "consolidation", idempotencyKey: "retry-me" });
      assert.equal(retry.duplicate, true);
      assert.equal(b.store.usageReport({ groupBy: [] }).totals.total, 110);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
