/**
 * `sessions.replication` (services/sessions/{replication,change-log}.ts): sessions actors as
 * separate processes, each with its own LURKBOT_HOME and LMDB (its own "host"), on one real
 * nats-server. The active instance answers a write once its change set is in the SESSIONS
 * stream; standbys follow the stream, relay requests, and one takes over with every answered
 * write when the active one is SIGKILLed; a fresh host rebuilds the store from the stream; a
 * store that had data before replication publishes it; a deleted session leaves the stream.
 */
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { STREAMS, subjects, type TranscriptRecord } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { splitOps } from "../services/sessions/replication.js";
import { gatherStatus } from "../services/cli/status.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";

const S = subjects();
const note = (id: string, text = id): TranscriptRecord => ({ id, ts: 1, kind: "context_note", text });
const REPLICATION = { enabled: true, leaseTtlMs: 2_000, leaseRenewMs: 500, ackTimeoutMs: 800 };

describe("sessions replication across hosts", () => {
  let nats: TestNats;
  let nc: NatsConnection;
  let admin: NatsConnection;
  let bus: BusClient;
  const hosts = new Map<string, ActorProcess>();
  const relayed: string[] = [];
  const roles: string[] = [];

  /** A sessions process with its own home (its own LMDB), replication on unless `replication` is false. */
  async function startHost(name: string, replication = true): Promise<ActorProcess> {
    const home = join(nats.dir, name);
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, "config.json"), JSON.stringify({ sessions: { replication: { ...REPLICATION, enabled: replication } } }));
    const p = await startActorProcess("sessions", nats, { LURKBOT_HOME: home, LURKBOT_NATS_CREDENTIALS: join(nats.home, "credentials", "nats.json") });
    hosts.set(name, p);
    return p;
  }
  const ensure = (sessionKey: string) => bus.call("sessions", "ensure", { sessionKey, agentId: "main", sessionType: "main" });
  const history = async (sessionKey: string) => (await bus.call("sessions", "history", { sessionKey, limit: 1000 })).records.map((r) => r.id);
  const streamCount = async (subject?: string) => {
    const info = await (await jetstreamManager(admin)).streams.info(STREAMS.sessions, subject ? { subjects_filter: subject } : undefined);
    return subject ? (info.state.subjects?.[subject] ?? 0) : info.state.messages;
  };
  const activeCount = () => roles.filter((r) => r === "active").length;

  before(async () => {
    nats = await TestNats.start();
    nc = await nats.connect("agent-runner");
    admin = await nats.connect("admin");
    bus = new BusClient(nc);
    admin.subscribe("lurk.sessions.active.>", { callback: (_e, m) => void relayed.push(m.subject) });
    admin.subscribe("lurk.evt.sessions.*", { callback: (_e, m) => void roles.push(m.subject.split(".").at(-1)!) });
    await admin.flush();
  });
  after(async () => {
    for (const p of hosts.values()) await p.stop().catch(() => undefined);
    await nc.close();
    await admin.close();
    await nats.stop();
  });

  it("a store that had sessions before replication publishes them when it first becomes active", async () => {
    const plain = await startHost("a", false);
    await ensure("agent:main:before");
    // three large records: the session's first change set is larger than one bus message (split in parts)
    for (const id of ["old-1", "old-2", "old-3"]) await bus.call("sessions", "append", { sessionKey: "agent:main:before", records: [note(id, id.repeat(40_000))] });
    await plain.stop();
    assert.equal(await streamCount(), 0, "nothing replicated while replication is off");
    await startHost("a");
    await waitFor(() => activeCount() === 1, 10_000, "host a active");
    await waitFor(async () => (await streamCount(S.sessionChanges("agent:main:before"))) > 1, 10_000, "the old session in the stream, in parts");
  });

  it("answers a write once it is in the stream; a standby relays, follows, and takes over with every answered write", async () => {
    await startHost("b");
    await ensure("agent:main:s1");
    const before = await streamCount();
    const answered: string[] = [];
    for (let i = 0; i < 30; i++) {
      await bus.call("sessions", "append", { sessionKey: "agent:main:s1", records: [note(`r${i}`)] });
      answered.push(`r${i}`);
    }
    assert.ok((await streamCount()) >= before + 30, "each answered append is in the stream");
    assert.ok(relayed.some((s) => s === "lurk.sessions.active.append"), "the standby relayed some of the requests to the active instance");
    const cli = await nats.connect("cli");
    try {
      const status = await gatherStatus(cli, nats.url);
      assert.deepEqual(status.instances.filter((i) => i.name === "sessions").map((i) => i.role).sort(), ["active", "standby"], "lurkbot status shows the roles");
    } finally {
      await cli.close();
    }
    // the active host dies; the standby takes over (its lease holder is a dead process of this host)
    await hosts.get("a")!.kill();
    hosts.delete("a");
    await waitFor(() => activeCount() === 2, 15_000, "host b active");
    assert.deepEqual(await history("agent:main:s1"), answered, "every answered write survived on the other host");
    assert.deepEqual(await history("agent:main:before"), ["old-1", "old-2", "old-3"], "the sessions from before replication too, split over several messages");
    // and it writes on
    await bus.call("sessions", "append", { sessionKey: "agent:main:s1", records: [note("after-takeover")] });
    assert.equal((await history("agent:main:s1")).at(-1), "after-takeover");
  });

  it("when JetStream cannot store, a write waits ackTimeoutMs, is answered, and reaches the stream once it can", async () => {
    const jsm = await jetstreamManager(admin);
    const config = (await jsm.streams.info(STREAMS.sessions)).config;
    await ensure("agent:main:queued");
    const stored = await streamCount(S.sessionChanges("agent:main:queued"));
    await jsm.streams.update(STREAMS.sessions, { ...config, subjects: ["lurk.sesslog-paused.>"] });
    try {
      const started = Date.now();
      await bus.call("sessions", "append", { sessionKey: "agent:main:queued", records: [note("q1")] });
      assert.ok(Date.now() - started >= 700, "the answer waited for JetStream's ack (ackTimeoutMs)");
      assert.deepEqual(await history("agent:main:queued"), ["q1"], "committed on the active host");
    } finally {
      await jsm.streams.update(STREAMS.sessions, config);
    }
    await waitFor(async () => (await streamCount(S.sessionChanges("agent:main:queued"))) === stored + 1, 15_000, "the queued change set in the stream");
  });

  it("a fresh host rebuilds the store from the stream and takes over with it", async () => {
    await startHost("c");
    await ensure("agent:main:s2");
    await bus.call("sessions", "append", { sessionKey: "agent:main:s2", records: [note("x1"), note("x2"), note("x3"), note("x4")] });
    await bus.call("sessions", "patch", { sessionKey: "agent:main:s2", patch: { label: "replicated label" } });
    await hosts.get("b")!.kill();
    hosts.delete("b");
    await waitFor(() => activeCount() === 3, 15_000, "host c active");
    assert.deepEqual(await history("agent:main:s2"), ["x1", "x2", "x3", "x4"]);
    assert.equal((await bus.call("sessions", "get", { sessionKey: "agent:main:s2" })).session?.label, "replicated label");
    assert.equal((await history("agent:main:s1")).length, 31);
    assert.deepEqual(await history("agent:main:queued"), ["q1"], "the change set queued while JetStream could not store");
  });

  it("a deleted session leaves the stream (its delete stays for hosts that lag)", async () => {
    const key = "agent:main:s1";
    assert.ok((await streamCount(S.sessionChanges(key))) > 1);
    assert.equal((await bus.call("sessions", "delete", { sessionKey: key })).deleted, true);
    await waitFor(async () => (await streamCount(S.sessionChanges(key))) === 1, 10_000, "the session's change sets purged");
    await startHost("d");
    await hosts.get("c")!.kill();
    hosts.delete("c");
    await waitFor(() => activeCount() === 4, 15_000, "host d active");
    assert.equal((await bus.call("sessions", "get", { sessionKey: key })).session, null, "deleted on the host that rebuilt from the stream");
    assert.deepEqual(await history("agent:main:s2"), ["x1", "x2", "x3", "x4"]);
  });

  it("a host whose last term left a change set unreplicated drops it when another host wrote since", async () => {
    const key = "agent:main:s2";
    const subject = S.sessionChanges(key);
    await startHost("e");
    const jsm = await jetstreamManager(admin);
    const config = (await jsm.streams.info(STREAMS.sessions)).config;
    // JetStream cannot store: host d (active) answers the write after ackTimeoutMs and keeps it queued
    await jsm.streams.update(STREAMS.sessions, { ...config, subjects: ["lurk.sesslog-paused.>"] });
    try {
      await bus.call("sessions", "append", { sessionKey: key, records: [note("lost-1")] });
      await hosts.get("d")!.kill();
      hosts.delete("d");
    } finally {
      await jsm.streams.update(STREAMS.sessions, config);
    }
    await waitFor(() => activeCount() === 5, 15_000, "host e active");
    await bus.call("sessions", "append", { sessionKey: key, records: [note("after-1")] });
    assert.deepEqual(await history(key), ["x1", "x2", "x3", "x4", "after-1"], "host e never had the unreplicated write");
    // host d comes back (its outbox still holds lost-1) as a standby, then takes over from e
    await startHost("d");
    await hosts.get("e")!.kill();
    hosts.delete("e");
    await waitFor(() => activeCount() === 6, 15_000, "host d active again");
    assert.deepEqual(await history(key), ["x1", "x2", "x3", "x4", "after-1"], "host d has host e's writes, not its own stale one");
    const js = jetstream(admin);
    const consumer = await js.consumers.get(STREAMS.sessions, { filter_subjects: subject });
    const texts: string[] = [];
    for await (const m of await consumer.fetch({ max_messages: 1_000, expires: 1_000 })) {
      texts.push(m.string());
      if (m.info.pending === 0) break;
    }
    assert.ok(texts.length > 0 && texts.every((t) => !t.includes("lost-1")), "the stale change set never reached the stream");
  });

  it("splits a change set only when it does not fit one message", () => {
    const ops = Array.from({ length: 5 }, (_, i) => ({ op: "put" as const, db: "records" as const, key: ["s", i] as [string, number], value: "v".repeat(100) }));
    assert.equal(splitOps(ops, 10_000).length, 1);
    const parts = splitOps(ops, 300);
    assert.ok(parts.length > 1);
    assert.deepEqual(parts.flat(), ops, "in order, nothing lost");
  });
});
