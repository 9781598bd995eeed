/**
 * `lurk.sessions.usage_report` against the sessions actor as a process on a real nats-server:
 * usage sent the way the agent-runner sends it (a run's end: `append` with usage) and through the
 * `usage` op lands in its day/agent/model/channel/type bucket with its cost (built-in prices,
 * config `models` overrides, unpriced models); days past `sessions.usage.retentionDays` are pruned
 * at start; a report larger than one message is refused with a typed error; malformed requests
 * get typed errors and the actor keeps serving.
 */
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { addDays, errorReplySchema, LurkError, utcDay, type TranscriptRecord, type Usage } from "../shared/contract/index.js";
import { BusClient, SERVICE_ERROR_HEADER } from "../shared/runtime/client.js";
import { SessionStore } from "../services/sessions/store.js";
import { startActorProcess, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";

const DAY = 86_400_000;
const BULK = 5_000;
const usage = (input: number, output: number, cacheRead = 0, cacheWrite = 0): Usage => ({ input, output, cacheRead, cacheWrite, total: input + output + cacheRead + cacheWrite });
const marker = (runId: string, status: "started" | "done"): TranscriptRecord => ({ id: `${runId}:${status}`, ts: Date.now(), runId, kind: "run_marker", runStatus: status });
const near = (a: number, b: number) => assert.ok(Math.abs(a - b) < 1e-12, `${a} ≈ ${b}`);

describe("lurk.sessions.usage_report (sessions actor process)", () => {
  let nats: TestNats;
  let actor: ActorProcess;
  let runner: NatsConnection;
  let cli: NatsConnection;
  let bus: BusClient;
  let cliBus: BusClient;
  const today = () => utcDay(Date.now());

  /** A run as the agent-runner stores it: begin with the origin, then the end marker with the usage. */
  async function run(sessionKey: string, runId: string, origin: string, sessionType: "main" | "dm", u: Usage, model: string, provider = "openai") {
    await bus.call("sessions", "begin", {
      sessionKey, agentId: "main", sessionType, runId, channel: origin, historyLimit: 10,
      origin: { channel: origin, conversation: "c1", messageIds: [] }, records: [marker(runId, "started")],
    });
    await bus.call("sessions", "append", { sessionKey, records: [marker(runId, "done")], usage: { usage: u, model, provider } });
  }

  before(async () => {
    nats = await TestNats.start();
    writeFileSync(join(nats.home, "config.json"), JSON.stringify({
      sessions: { usage: { retentionDays: 30 } },
      models: { entries: { "openai/my-finetune": { cost: { inputPerMTok: 3, outputPerMTok: 12 } } } },
    }));
    // the store before this start: a bucket 100 days old (past retention) and many buckets two days ago
    const dir = join(nats.home, "data", "sessions");
    mkdirSync(dir, { recursive: true });
    const clock = { now: Date.now() - 100 * DAY };
    const seed = new SessionStore(dir, () => clock.now);
    await seed.ensure({ sessionKey: "agent:archive:main", agentId: "archive", sessionType: "main" });
    await seed.addUsage("agent:archive:main", usage(5, 5), "openai/gpt-4o-mini", "openai");
    clock.now = Date.now() - 2 * DAY;
    await seed.ensure({ sessionKey: "agent:bulk:main", agentId: "bulk", sessionType: "main" });
    for (let i = 0; i < BULK; i++) await seed.addUsage("agent:bulk:main", usage(1, 1), `bulk-${i}-${"x".repeat(150)}`, "openai");
    await seed.close();

    actor = await startActorProcess("sessions", nats, { LURKBOT_LOG_LEVEL: "info" });
    runner = await nats.connect("agent-runner");
    cli = await nats.connect("cli");
    bus = new BusClient(runner);
    cliBus = new BusClient(cli);
  });
  after(async () => {
    await runner?.close();
    await cli?.close();
    await actor?.stop();
    await nats?.stop();
  });

  it("prunes the days past sessions.usage.retentionDays when it starts", async () => {
    const r = await cliBus.call("sessions", "usage_report", { from: "2000-01-01", groupBy: ["agent"] });
    assert.deepEqual(r.rows.map((x) => [x.agentId, x.runs]), [["bulk", BULK]], "the archive agent's bucket was 100 days old");
    assert.equal(r.ledgerSince, addDays(today(), -2));
    assert.match(actor.output(), /usage ledger days past sessions\.usage\.retentionDays pruned/);
  });

  it("a run's end and the usage op land in their day/agent/model/channel/type bucket, priced when they arrive", async () => {
    // gpt-4o-mini (built-in price): (1000 × 0.15 + 500 × 0.6 + 2000 × 0.075) / 1e6 = $0.0006
    await run("agent:main:telegram:dm:42", "r1", "telegram", "dm", usage(1000, 500, 2000), "openai/gpt-4o-mini");
    // a config price (models.entries): (1000 × 3 + 1000 × 12) / 1e6 = $0.015
    await run("agent:main:main", "r2", "cli", "main", usage(1000, 1000), "openai/my-finetune");
    // no known price: counted as unpriced tokens
    await run("agent:main:main", "r3", "cli", "main", usage(300, 200), "openai/local-llama");
    // the usage op (the model without its provider), from the cli user
    await cliBus.call("sessions", "usage", { sessionKey: "agent:main:main", usage: usage(10, 10), model: "gpt-4o-mini", provider: "openai" });

    const r = await cliBus.call("sessions", "usage_report", { from: today(), groupBy: ["agent", "model", "channel", "sessionType"] });
    assert.deepEqual([r.from, r.to], [today(), today()]);
    assert.deepEqual(r.rows.map((x) => [x.agentId, x.model, x.channel, x.sessionType, x.runs, x.total, x.unpricedTokens]), [
      ["main", "openai/gpt-4o-mini", "cli", "main", 1, 20, 0],
      ["main", "openai/gpt-4o-mini", "telegram", "dm", 1, 3500, 0],
      ["main", "openai/local-llama", "cli", "main", 1, 500, 500],
      ["main", "openai/my-finetune", "cli", "main", 1, 2000, 0],
    ]);
    near(r.rows[0]!.costUsd, (10 * 0.15 + 10 * 0.6) / 1e6);
    near(r.rows[1]!.costUsd, 0.0006);
    assert.equal(r.rows[2]!.costUsd, 0);
    near(r.rows[3]!.costUsd, 0.015);
    near(r.totals.costUsd, 0.0156075);
    assert.deepEqual([r.totals.runs, r.totals.total, r.totals.unpricedTokens], [4, 6020, 500]);
    // the sessions' own counters have the same tokens
    const main = (await bus.call("sessions", "get", { sessionKey: "agent:main:main" })).session!;
    assert.equal(main.usage.total, 2520);
    // by day, the agent filter
    const byDay = await cliBus.call("sessions", "usage_report", { groupBy: ["day"], agentId: "main" });
    assert.deepEqual(byDay.rows.map((x) => [x.day, x.runs]), [[today(), 4]]);
    assert.equal(byDay.from, addDays(today(), -2), "from defaults to the oldest day the ledger holds");
  });

  it("refuses a report larger than one message with PAYLOAD_TOO_LARGE saying how to narrow it; narrower ones are served", async () => {
    await assert.rejects(
      cliBus.call("sessions", "usage_report", { from: addDays(today(), -2), groupBy: ["day", "agent", "model", "channel", "sessionType"] }),
      (e: unknown) => LurkError.is(e) && e.code === "PAYLOAD_TOO_LARGE" && /narrow the range \(from, to\), group by fewer keys/.test(e.message),
    );
    const byAgent = await cliBus.call("sessions", "usage_report", { from: addDays(today(), -2), groupBy: ["agent"] });
    assert.deepEqual(byAgent.rows.map((x) => [x.agentId, x.runs]), [["bulk", BULK], ["main", 4]]);
    const narrow = await cliBus.call("sessions", "usage_report", { from: today(), groupBy: ["day", "agent", "model", "channel", "sessionType"] });
    assert.equal(narrow.rows.length, 4);
  });

  const bad: Array<[string, string, string]> = [
    ["not JSON", "{nope", "BAD_JSON"],
    ["no groupBy", JSON.stringify({ type: "lurk.sessions.usage_report.v1", id: "1", ts: 1 }), "VALIDATION_FAILED"],
    ["an unknown group key", JSON.stringify({ type: "lurk.sessions.usage_report.v1", id: "1", ts: 1, groupBy: ["week"] }), "VALIDATION_FAILED"],
    ["a group key twice", JSON.stringify({ type: "lurk.sessions.usage_report.v1", id: "1", ts: 1, groupBy: ["day", "day"] }), "VALIDATION_FAILED"],
    ["a day not in the calendar", JSON.stringify({ type: "lurk.sessions.usage_report.v1", id: "1", ts: 1, groupBy: ["day"], from: "2026-02-30" }), "VALIDATION_FAILED"],
    ["a day in another format", JSON.stringify({ type: "lurk.sessions.usage_report.v1", id: "1", ts: 1, groupBy: ["day"], to: "11/28/2026" }), "VALIDATION_FAILED"],
    ["from after to", JSON.stringify({ type: "lurk.sessions.usage_report.v1", id: "1", ts: 1, groupBy: ["day"], from: "2026-11-28", to: "2026-11-01" }), "VALIDATION_FAILED"],
    ["a bad agent id", JSON.stringify({ type: "lurk.sessions.usage_report.v1", id: "1", ts: 1, groupBy: ["day"], agentId: "Not An Id" }), "VALIDATION_FAILED"],
    ["__proto__", '{"type":"lurk.sessions.usage_report.v1","id":"1","ts":1,"groupBy":["day"],"__proto__":{"polluted":true}}', "UNSAFE_PAYLOAD"],
  ];
  for (const [name, payload, code] of bad) {
    it(`malformed (${name}): typed error ${code}, and the actor keeps serving`, async () => {
      const reply = await cli.request("lurk.sessions.usage_report", payload, { timeout: 5_000 });
      assert.ok(reply.headers?.get(SERVICE_ERROR_HEADER), "error headers are set");
      assert.equal(errorReplySchema.parse(reply.json()).code, code);
      const ok = await cliBus.call("sessions", "usage_report", { from: today(), groupBy: ["agent"] });
      assert.deepEqual(ok.rows.map((x) => x.agentId), ["main"]);
    });
  }
});
