/**
 * The usage ledger (services/sessions/usage-ledger.ts) in the sessions store on real LMDB files
 * with an injected clock: buckets per UTC day, agent, model, channel and session type, priced
 * when the usage arrives; a day boundary; grouping and ranges; retention; an older store without
 * the ledger; the ledger's change sets (replication) and old change sets still readable.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { open } from "lmdb";
import { LurkError, sessionChangeSchema, USAGE_LEDGER_CHANGE_KEY, type TranscriptRecord, type Usage } from "../shared/contract/index.js";
import { SessionStore } from "../services/sessions/store.js";
import { usageModelRef } from "../services/sessions/usage-ledger.js";

const T0 = Date.parse("2026-11-27T12:00:00Z");
const DAY = 86_400_000;
const ALL = ["day", "agent", "model", "channel", "sessionType"] as const;
const usage = (input: number, output: number, cacheRead = 0, cacheWrite = 0): Usage => ({ input, output, cacheRead, cacheWrite, total: input + output + cacheRead + cacheWrite });
const marker = (runId: string): TranscriptRecord => ({ id: `${runId}:done`, ts: 1, runId, kind: "run_marker", runStatus: "done" });
const near = (a: number, b: number) => assert.ok(Math.abs(a - b) < 1e-12, `${a} ≈ ${b}`);

/** A store in a fresh directory with a clock the test moves. */
function tempStore(options: ConstructorParameters<typeof SessionStore>[2] = {}) {
  const dir = mkdtempSync(join(tmpdir(), "lurk-usage-"));
  const clock = { now: T0 };
  const store = new SessionStore(dir, () => clock.now, options);
  return { dir, clock, store };
}

describe("usage ledger in the sessions store (LMDB)", () => {
  let dir: string;
  let clock: { now: number };
  let store: SessionStore;
  before(async () => {
    ({ dir, clock, store } = tempStore());
    const cli = { channel: "cli", conversation: "main", messageIds: [] };
    const telegram = { channel: "telegram", conversation: "42", messageIds: [] };
    await store.ensure({ sessionKey: "agent:main:main", agentId: "main", sessionType: "main", lastOrigin: cli, channel: "cli" });
    await store.ensure({ sessionKey: "agent:main:telegram:dm:42", agentId: "main", sessionType: "dm", channel: "telegram", lastOrigin: telegram });
    await store.ensure({ sessionKey: "agent:ops:cron:nightly", agentId: "ops", sessionType: "cron" });
  });
  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("books a run's end (append with usage) and the usage op in the right bucket, priced at that moment", async () => {
    // gpt-4o-mini: $0.15 in, $0.60 out, $0.075 cache read per million tokens
    await store.append("agent:main:main", [marker("r1")], { usage: usage(1000, 500, 2000), model: "openai/gpt-4o-mini", provider: "openai" });
    // the usage op may name the model without its provider
    await store.addUsage("agent:main:main", usage(1000, 500, 2000), "gpt-4o-mini", "openai");
    // claude-sonnet-4-5: $3 in, $15 out, $0.30 cache read, $3.75 cache write
    await store.append("agent:main:telegram:dm:42", [marker("r2")], { usage: usage(100, 50, 1000, 200), model: "anthropic/claude-sonnet-4-5-20250929", provider: "anthropic" });
    // a model without a known price: its tokens are counted as unpriced, not as $0
    await store.append("agent:ops:cron:nightly", [marker("r3")], { usage: usage(70, 30), model: "openai/my-local-llm", provider: "openai" });
    // ollama's models are free
    await store.append("agent:ops:cron:nightly", [marker("r4")], { usage: usage(10, 5), model: "ollama/llama3.1:8b", provider: "ollama" });

    const r = store.usageReport({ groupBy: [...ALL] });
    assert.deepEqual(r.rows.map((x) => [x.day, x.agentId, x.model, x.channel, x.sessionType, x.runs]), [
      ["2026-11-27", "main", "anthropic/claude-sonnet-4-5-20250929", "telegram", "dm", 1],
      ["2026-11-27", "main", "openai/gpt-4o-mini", "cli", "main", 2],
      ["2026-11-27", "ops", "ollama/llama3.1:8b", "-", "cron", 1],
      ["2026-11-27", "ops", "openai/my-local-llm", "-", "cron", 1],
    ]);
    const [claude, mini, ollama, local] = r.rows;
    near(mini!.costUsd, 2 * 0.0006);
    assert.deepEqual([mini!.input, mini!.output, mini!.cacheRead, mini!.total, mini!.unpricedTokens], [2000, 1000, 4000, 7000, 0]);
    near(claude!.costUsd, 0.0021);
    assert.deepEqual([local!.costUsd, local!.unpricedTokens], [0, 100]);
    assert.deepEqual([ollama!.costUsd, ollama!.unpricedTokens], [0, 0], "a free model is priced at $0, not unpriced");
    assert.equal(r.totals.runs, 5);
    assert.equal(r.totals.unpricedTokens, 100);
    near(r.totals.costUsd, 0.0012 + 0.0021);
    assert.equal(r.ledgerSince, "2026-11-27");
    // the session's own counters got the same updates, in the same transactions
    assert.equal(store.get("agent:main:main")!.usage.total, 7000);
  });

  it("a retried run end (its records already stored) is counted once, in the ledger and in the session's counters", async () => {
    const before = store.usageReport({ groupBy: [] }).totals;
    const entry = store.get("agent:main:main")!;
    const again = await store.append("agent:main:main", [marker("r1")], { usage: usage(1000, 500, 2000), model: "openai/gpt-4o-mini", provider: "openai" });
    assert.deepEqual([again.appended, again.duplicates], [0, 1]);
    assert.deepEqual(store.usageReport({ groupBy: [] }).totals, before);
    assert.deepEqual(store.get("agent:main:main")!.usage, entry.usage);
  });

  it("prices with the store's price function (the actor's: built-in prices and config `models`)", async () => {
    const t = tempStore({ usagePrice: (ref, u) => (ref === "openai/my-finetune" ? (u.input * 3 + u.output * 12) / 1e6 : undefined) });
    try {
      await t.store.ensure({ sessionKey: "agent:main:main", agentId: "main", sessionType: "main" });
      await t.store.addUsage("agent:main:main", usage(1000, 1000), "openai/my-finetune", "openai");
      await t.store.addUsage("agent:main:main", usage(1000, 1000), "openai/gpt-4o-mini", "openai");
      const rows = t.store.usageReport({ groupBy: ["model"] }).rows;
      near(rows.find((x) => x.model === "openai/my-finetune")!.costUsd, 0.015);
      assert.equal(rows.find((x) => x.model === "openai/gpt-4o-mini")!.unpricedTokens, 2000, "this price function knows only the finetune");
    } finally {
      await t.store.close();
      rmSync(t.dir, { recursive: true, force: true });
    }
  });

  it("a day boundary: the last millisecond of a UTC day and the first of the next land in two days", async () => {
    clock.now = Date.parse("2026-11-27T23:59:59.999Z");
    await store.addUsage("agent:main:main", usage(1, 1), "openai/gpt-4o-mini", "openai");
    clock.now = Date.parse("2026-11-28T00:00:00.000Z");
    await store.addUsage("agent:main:main", usage(2, 2), "openai/gpt-4o-mini", "openai");
    const byDay = store.usageReport({ groupBy: ["day"], agentId: "main" });
    assert.deepEqual(byDay.rows.map((x) => [x.day, x.runs]), [["2026-11-27", 4], ["2026-11-28", 1]]);
    assert.equal(byDay.to, "2026-11-28", "to defaults to today (UTC)");
    assert.equal(byDay.from, "2026-11-27", "from defaults to the oldest day held");
  });

  it("ranges, grouping and the agent filter", async () => {
    clock.now = Date.parse("2026-11-30T08:00:00Z");
    await store.addUsage("agent:ops:cron:nightly", usage(40, 2), "openai/gpt-4o-mini", "openai");
    const only28 = store.usageReport({ from: "2026-11-28", to: "2026-11-28", groupBy: ["day"] });
    assert.deepEqual(only28.rows.map((x) => x.day), ["2026-11-28"]);
    assert.deepEqual([only28.from, only28.to], ["2026-11-28", "2026-11-28"]);
    const since28 = store.usageReport({ from: "2026-11-28", groupBy: ["day", "agent"] });
    assert.deepEqual(since28.rows.map((x) => [x.day, x.agentId]), [["2026-11-28", "main"], ["2026-11-30", "ops"]]);
    assert.equal(since28.to, "2026-11-30");
    // rows sort by the keys in groupBy order
    const byModelThenAgent = store.usageReport({ groupBy: ["model", "agent"] });
    assert.deepEqual(byModelThenAgent.rows.map((x) => `${x.model} ${x.agentId}`), [
      "anthropic/claude-sonnet-4-5-20250929 main", "ollama/llama3.1:8b ops", "openai/gpt-4o-mini main", "openai/gpt-4o-mini ops", "openai/my-local-llm ops",
    ]);
    assert.deepEqual(Object.keys(byModelThenAgent.rows[0]!).filter((k) => ["day", "agentId", "model", "channel", "sessionType"].includes(k)).sort(), ["agentId", "model"], "a row has only its group keys");
    const byChannel = store.usageReport({ groupBy: ["channel", "sessionType"], agentId: "ops" });
    assert.deepEqual(byChannel.rows.map((x) => [x.channel, x.sessionType, x.runs]), [["-", "cron", 3]]);
    // no keys: one row with everything, equal to the totals
    const all = store.usageReport({ groupBy: [] });
    assert.equal(all.rows.length, 1);
    const { runs, total, costUsd } = all.rows[0]!;
    assert.deepEqual({ runs, total, costUsd }, { runs: all.totals.runs, total: all.totals.total, costUsd: all.totals.costUsd });
    // an empty range, and a range the wrong way round
    assert.deepEqual(store.usageReport({ from: "2025-01-01", to: "2025-01-31", groupBy: ["day"] }).rows, []);
    assert.throws(() => store.usageReport({ from: "2026-11-30", to: "2026-11-01", groupBy: ["day"] }), (e: unknown) => LurkError.is(e) && e.code === "VALIDATION_FAILED" && /after to/.test(e.message));
  });

  it("prunes the days before the retention window, today included in it", async () => {
    clock.now = Date.parse("2026-11-30T23:00:00Z");
    assert.equal(store.pruneUsage(4), 0, "2026-11-27 is the fourth day back: kept");
    const removed = store.pruneUsage(3);
    assert.equal(removed, 4, "the four buckets of 2026-11-27");
    const r = store.usageReport({ groupBy: ["day"] });
    assert.deepEqual(r.rows.map((x) => x.day), ["2026-11-28", "2026-11-30"]);
    assert.equal(r.ledgerSince, "2026-11-28");
    assert.equal(store.pruneUsage(3), 0, "nothing more to prune");
    // the sessions' own counters keep their totals
    assert.ok(store.get("agent:main:main")!.usage.total > 7000);
  });

  it("keeps its buckets across a reopen of the environment", async () => {
    const before = store.usageReport({ groupBy: [...ALL] });
    await store.close();
    store = new SessionStore(dir, () => clock.now);
    assert.deepEqual(store.usageReport({ groupBy: [...ALL] }), before);
  });

  it("names a model `provider/model` whichever way the update spells it", () => {
    assert.equal(usageModelRef("openai", "openai/gpt-4o"), "openai/gpt-4o");
    assert.equal(usageModelRef("openai", "gpt-4o"), "openai/gpt-4o");
    // an OpenAI-compatible server's model whose name has a slash (OpenRouter)
    assert.equal(usageModelRef("openai", "anthropic/claude-3.5-sonnet"), "openai/anthropic/claude-3.5-sonnet");
    assert.equal(usageModelRef("openai", "x".repeat(500)).length, 200, "capped: an LMDB key is at most ~2 KB");
  });
});

describe("usage ledger: stores from before it, and replication", () => {
  it("an existing store without the ledger database opens, reports nothing and books new usage", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lurk-usage-old-"));
    try {
      // the layout before the ledger: entries, records, recordIds, runs
      const root = open({ path: dir, compression: true });
      const entries = root.openDB({ name: "entries" });
      for (const name of ["records", "recordIds", "runs"]) root.openDB({ name });
      await entries.put("agent:main:main", { sessionKey: "agent:main:main", sessionId: "ses_old", agentId: "main", sessionType: "main", createdAt: 1, updatedAt: 1, usage: usage(500, 500), records: 0 });
      await root.close();

      const store = new SessionStore(dir, () => T0);
      const empty = store.usageReport({ groupBy: ["day"] });
      assert.deepEqual([empty.rows, empty.ledgerSince, empty.from, empty.to], [[], null, "2026-11-27", "2026-11-27"]);
      assert.equal(store.get("agent:main:main")!.usage.total, 1000, "the session's own counters from before are kept");
      await store.addUsage("agent:main:main", usage(10, 10), "openai/gpt-4o-mini", "openai");
      assert.equal(store.usageReport({ groupBy: ["day"] }).totals.total, 20, "only usage from now on is in the ledger");
      assert.equal(store.get("agent:main:main")!.usage.total, 1020);
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("with replication, the ledger's writes are a change set of their own; applied to another store they give the same ledger", async () => {
    const a = tempStore({ replicate: true });
    const b = tempStore({ replicate: true });
    try {
      await a.store.ensure({ sessionKey: "agent:main:main", agentId: "main", sessionType: "main", channel: "cli" });
      await a.store.append("agent:main:main", [marker("r1")], { usage: usage(1000, 500), model: "openai/gpt-4o-mini", provider: "openai" });
      a.clock.now += 3 * DAY;
      await a.store.addUsage("agent:main:main", usage(7, 7), "openai/unknown", "openai");
      assert.equal(a.store.pruneUsage(2), 1, "the first day's bucket");
      const queued = a.store.changeLog!.pending(100);
      // ensure; the run end's session writes, then its ledger write (same transaction, two change sets); the usage op's two; the prune
      assert.deepEqual(queued.map((c) => c.sessionKey), ["agent:main:main", "agent:main:main", USAGE_LEDGER_CHANGE_KEY, "agent:main:main", USAGE_LEDGER_CHANGE_KEY, USAGE_LEDGER_CHANGE_KEY]);
      assert.deepEqual(queued.at(-1)!.ops, [{ op: "pruneUsage", before: "2026-11-29" }]);
      let seq = 0;
      for (const c of queued) {
        // as a standby gets it: through the stream's schema
        const wire = sessionChangeSchema.parse(JSON.parse(JSON.stringify({ type: "lurk.sessions.change.v1", id: `m${seq}`, ts: 1, sessionKey: c.sessionKey, txn: `t-${c.n}`, part: 0, parts: 1, ops: c.ops })));
        b.store.applyChange(wire.ops, ++seq);
      }
      const all = { from: "2026-01-01", to: "2026-12-31", groupBy: [...ALL] };
      assert.deepEqual(b.store.usageReport(all), a.store.usageReport(all));
      assert.equal(b.store.usageReport(all).rows.length, 1, "the pruned day is gone on the standby too");
    } finally {
      for (const t of [a, b]) {
        await t.store.close();
        rmSync(t.dir, { recursive: true, force: true });
      }
    }
  });

  it("change sets written before the ledger still parse; a malformed ledger op does not", () => {
    const old = { type: "lurk.sessions.change.v1", id: "x", ts: 1, sessionKey: "agent:main:main", txn: "abc-1", part: 0, parts: 1, ops: [
      { op: "put", db: "entries", key: "agent:main:main", value: { any: "thing" } },
      { op: "put", db: "records", key: ["ses_1", 0], value: {} },
      { op: "deleteSession", sessionKey: "agent:main:x", sessionId: "ses_2" },
    ] };
    assert.equal(sessionChangeSchema.safeParse(old).success, true);
    const bad = { ...old, ops: [{ op: "usage", key: ["2026-13-01", "main", "m", "-", "main"], value: {} }] };
    assert.equal(sessionChangeSchema.safeParse(bad).success, false);
  });
});
