/**
 * The usage ledger with `sessions.replication`: sessions actors as processes with their own homes
 * (their own LMDB) on one real nats-server. The first active instance publishes the ledger it had
 * and its prune; usage booked through either instance reaches the standby; a standby that takes
 * over after a SIGKILL, and a fresh host rebuilding from the stream, report the same ledger, also
 * for a session deleted since (the ledger's change sets are its own, never purged with a
 * session's); and the three LMDB files hold the same buckets.
 */
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { addDays, STREAMS, subjects, USAGE_LEDGER_CHANGE_KEY, utcDay, type TranscriptRecord, type Usage, type UsageReport } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { SessionStore } from "../services/sessions/store.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";

const DAY = 86_400_000;
const REPLICATION = { enabled: true, leaseTtlMs: 2_000, leaseRenewMs: 500, ackTimeoutMs: 800 };
const ALL = ["day", "agent", "model", "channel", "sessionType"] as const;
const usage = (input: number, output: number): Usage => ({ input, output, cacheRead: 0, cacheWrite: 0, total: input + output });
const marker = (runId: string, status: "started" | "done"): TranscriptRecord => ({ id: `${runId}:${status}`, ts: Date.now(), runId, kind: "run_marker", runStatus: status });

describe("usage ledger replicated across hosts", () => {
  let nats: TestNats;
  let nc: NatsConnection;
  let admin: NatsConnection;
  let bus: BusClient;
  const hosts = new Map<string, ActorProcess>();
  const roles: string[] = [];
  const activeCount = () => roles.filter((r) => r === "active").length;
  const home = (name: string) => join(nats.dir, name);
  const everything = () => ({ from: "2000-01-01", to: addDays(utcDay(Date.now()), 1), groupBy: [...ALL] });
  let answered: UsageReport;

  async function startHost(name: string): Promise<ActorProcess> {
    mkdirSync(home(name), { recursive: true });
    writeFileSync(join(home(name), "config.json"), JSON.stringify({ sessions: { replication: REPLICATION, usage: { retentionDays: 30 } } }));
    const p = await startActorProcess("sessions", nats, { LURKBOT_HOME: home(name), LURKBOT_NATS_CREDENTIALS: join(nats.home, "credentials", "nats.json") });
    hosts.set(name, p);
    return p;
  }
  async function run(sessionKey: string, runId: string, channel: string, sessionType: "main" | "dm", u: Usage, model: string) {
    await bus.call("sessions", "begin", { sessionKey, agentId: "main", sessionType, runId, channel, historyLimit: 10, origin: { channel, conversation: "c", messageIds: [] }, records: [marker(runId, "started")] });
    await bus.call("sessions", "append", { sessionKey, records: [marker(runId, "done")], usage: { usage: u, model, provider: model.split("/")[0]! } });
  }
  /** The ledger in a host's LMDB files (the host stopped). */
  async function ledgerOf(name: string): Promise<UsageReport> {
    const store = new SessionStore(join(home(name), "data", "sessions"));
    try {
      return store.usageReport(everything());
    } finally {
      await store.close();
    }
  }

  before(async () => {
    nats = await TestNats.start();
    nc = await nats.connect("agent-runner");
    admin = await nats.connect("admin");
    bus = new BusClient(nc);
    admin.subscribe("lurk.evt.sessions.*", { callback: (_e, m) => void roles.push(m.subject.split(".").at(-1)!) });
    await admin.flush();
    // host a's store from before replication: a bucket 100 days old (past retention) and one of yesterday
    const dir = join(home("a"), "data", "sessions");
    mkdirSync(dir, { recursive: true });
    const clock = { now: Date.now() - 100 * DAY };
    const seed = new SessionStore(dir, () => clock.now);
    await seed.ensure({ sessionKey: "agent:archive:main", agentId: "archive", sessionType: "main" });
    await seed.addUsage("agent:archive:main", usage(5, 5), "openai/gpt-4o-mini", "openai");
    clock.now = Date.now() - DAY;
    await seed.ensure({ sessionKey: "agent:main:main", agentId: "main", sessionType: "main", channel: "cli" });
    await seed.addUsage("agent:main:main", usage(50, 50), "openai/gpt-4o-mini", "openai");
    await seed.close();
  });
  after(async () => {
    for (const p of hosts.values()) await p.stop().catch(() => undefined);
    await nc?.close();
    await admin?.close();
    await nats?.stop();
  });

  it("the first active instance publishes its ledger and prunes it; usage booked through either instance is reported once", async () => {
    await startHost("a");
    await waitFor(() => activeCount() === 1, 10_000, "host a active");
    await startHost("b");
    await run("agent:main:main", "r1", "cli", "main", usage(1000, 500), "openai/gpt-4o-mini");
    await run("agent:main:telegram:dm:7", "r2", "telegram", "dm", usage(200, 100), "anthropic/claude-haiku-4-5");
    await run("agent:main:main", "r3", "cli", "main", usage(30, 20), "openai/local-llama");
    await bus.call("sessions", "usage", { sessionKey: "agent:main:main", usage: usage(10, 10), model: "gpt-4o-mini", provider: "openai" });
    // the dm session goes: its change sets leave the stream, its usage stays in the ledger
    assert.equal((await bus.call("sessions", "delete", { sessionKey: "agent:main:telegram:dm:7" })).deleted, true);

    answered = await bus.call("sessions", "usage_report", everything());
    const today = utcDay(Date.now());
    assert.deepEqual(answered.rows.map((x) => [x.day, x.model, x.channel, x.sessionType, x.runs]), [
      [addDays(today, -1), "openai/gpt-4o-mini", "cli", "main", 1],
      [today, "anthropic/claude-haiku-4-5", "telegram", "dm", 1],
      [today, "openai/gpt-4o-mini", "cli", "main", 2],
      [today, "openai/local-llama", "cli", "main", 1],
    ], "the archive agent's 100-day-old bucket was pruned");
    assert.equal(answered.totals.unpricedTokens, 50);

    // the stream holds the seeded old bucket and the prune after it: a host rebuilding applies both
    const consumer = await jetstream(admin).consumers.get(STREAMS.sessions, { filter_subjects: subjects().sessionChanges(USAGE_LEDGER_CHANGE_KEY) });
    const texts: string[] = [];
    for await (const m of await consumer.fetch({ max_messages: 1_000, expires: 1_000 })) {
      texts.push(m.string());
      if (m.info.pending === 0) break;
    }
    const seeded = texts.findIndex((t) => t.includes('"archive"'));
    const pruned = texts.findIndex((t) => t.includes('"pruneUsage"'));
    assert.ok(seeded >= 0 && pruned > seeded, "the seeded bucket, then the prune");
  });

  it("a standby that takes over after a SIGKILL, and a fresh host rebuilding from the stream, report the same ledger", async () => {
    await hosts.get("a")!.kill();
    await waitFor(() => activeCount() === 2, 15_000, "host b active");
    assert.deepEqual(await bus.call("sessions", "usage_report", everything()), answered);
    await startHost("c");
    await hosts.get("b")!.kill();
    await waitFor(() => activeCount() === 3, 15_000, "host c active");
    assert.deepEqual(await bus.call("sessions", "usage_report", everything()), answered, "rebuilt from the stream: the deleted session's usage too, the old bucket pruned");
    // and books on
    await bus.call("sessions", "usage", { sessionKey: "agent:main:main", usage: usage(1, 1), model: "openai/gpt-4o-mini", provider: "openai" });
    assert.equal((await bus.call("sessions", "usage_report", everything())).totals.runs, answered.totals.runs + 1);
  });

  it("the hosts' LMDB files hold the same ledger", async () => {
    await hosts.get("c")!.stop();
    const [a, b, c] = [await ledgerOf("a"), await ledgerOf("b"), await ledgerOf("c")];
    assert.deepEqual(a, answered);
    assert.deepEqual(b, answered);
    assert.equal(c.totals.runs, answered.totals.runs + 1, "host c has the last update as well");
  });
});
