/**
 * The actor runtime's rules, against a real nats-server: the durable consumer's retries,
 * in-progress acks and dead letters; configuration sources; start-up security checks; log
 * redaction.
 */
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { after, before, describe, it } from "node:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import { LurkError, STREAMS } from "../shared/contract/index.js";
import { configSecrets, loadConfig, parseConfig } from "../shared/runtime/config.js";
import { compareCodeUnits } from "../shared/runtime/order.js";
import { startConsumer, type DeadLetterInfo, type DeliveryInfo } from "../shared/runtime/consumer.js";
import { checkTransportSecurity, ensureCredentials, passwordFor } from "../shared/runtime/credentials.js";
import { createLogger, redactSecrets, registerSecret } from "../shared/runtime/logger.js";
import { waitFor } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";

const silent = createLogger("test", "silent");
const body = z.object({ n: z.number() });

describe("durable consumer", () => {
  let nats: TestNats;
  let nc: NatsConnection;
  before(async () => {
    nats = await TestNats.start();
    nc = await nats.connect("admin");
  });
  after(async () => {
    await nc?.close();
    await nats?.stop();
  });

  const publish = (conversation: string, n: number) => jetstream(nc).publish(`lurk.out.test.${conversation}`, JSON.stringify({ n }));
  const consume = (name: string, handler: (n: number, deliveries: number, delivery: DeliveryInfo) => Promise<void>, extra: { ackWaitMs?: number; stopGraceMs?: number; onDeadLetter?: (i: DeadLetterInfo) => void } = {}) =>
    startConsumer(nc, {
      stream: STREAMS.outbound, consumer: name, filterSubject: `lurk.out.test.${name}`, schema: body, concurrency: 4,
      ackWaitMs: extra.ackWaitMs ?? 5_000, maxDeliver: 3, backoffMs: [50, 100], limits: {}, log: silent,
      ...(extra.onDeadLetter ? { onDeadLetter: extra.onDeadLetter } : {}),
      ...(extra.stopGraceMs ? { stopGraceMs: extra.stopGraceMs } : {}),
      handler: (m, d) => handler(m.n, d.deliveryCount, d),
    });

  it("retries a failing handler with backoff, then dead-letters it after maxDeliver and reports it", async () => {
    const deliveries: number[] = [];
    let dead: DeadLetterInfo | undefined;
    const running = consume("failing", async (_n, d) => {
      deliveries.push(d);
      throw new Error("boom");
    }, { onDeadLetter: (i) => (dead = i), ackWaitMs: 1_000 });
    await publish("failing", 1);
    await waitFor(() => dead, 10_000, "dead letter");
    // terminated for good: not delivered again after the ack wait (a +TERM with a reason is ignored by nats-server 2.9)
    await new Promise((r) => setTimeout(r, 2_500));
    assert.deepEqual(deliveries, [1, 2, 3]);
    assert.equal(dead!.deliveries, 3);
    assert.match(dead!.error, /boom/);
    const jsm = await jetstreamManager(nc);
    const stored = await jsm.streams.getMessage(STREAMS.deadLetter, { last_by_subj: dead!.dlqSubject });
    assert.ok(stored, "the dead letter is stored");
    assert.equal(stored.header.get("Lurk-Dlq-Subject"), "lurk.out.test.failing");
    assert.deepEqual(stored.json(), { n: 1 });
    await running.stop();
  });

  it("acks after a retry succeeds and never dead-letters", async () => {
    const seen: number[] = [];
    let dead = false;
    const running = consume("flaky", async (_n, d) => {
      seen.push(d);
      if (d === 1) throw new LurkError("UNAVAILABLE", "not yet");
    }, { onDeadLetter: () => (dead = true) });
    await publish("flaky", 2);
    await waitFor(() => seen.length === 2, 10_000, "second delivery");
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(seen, [1, 2]);
    assert.equal(dead, false);
    const info = await (await jetstreamManager(nc)).consumers.info(STREAMS.outbound, "flaky");
    assert.equal(info.num_ack_pending, 0);
    await running.stop();
  });

  it("keeps long work from redelivery with in-progress acks", async () => {
    const seen: number[] = [];
    const running = consume("long", async (_n, d) => {
      seen.push(d);
      await new Promise((r) => setTimeout(r, 3_000)); // three times the ack wait
    }, { ackWaitMs: 1_000 });
    await publish("long", 3);
    await waitFor(async () => (await (await jetstreamManager(nc)).consumers.info(STREAMS.outbound, "long")).num_ack_pending === 0 && seen.length > 0, 10_000, "ack");
    assert.deepEqual(seen, [1]);
    await running.stop();
  });

  it("on stop, lets a handler finish within the grace and acks its message", async () => {
    let started = false;
    const running = consume("graceful", async () => {
      started = true;
      await new Promise((r) => setTimeout(r, 300));
    }, { ackWaitMs: 30_000 });
    await publish("graceful", 5);
    await waitFor(() => started, 10_000, "handler start");
    await running.stop();
    const info = await (await jetstreamManager(nc)).consumers.info(STREAMS.outbound, "graceful");
    assert.equal(info.num_ack_pending, 0, "acked, not handed back");
    assert.equal(info.num_redelivered, 0);
  });

  it("on stop, hands a stuck handler's message back for redelivery at once, long before the ack wait", async () => {
    let release!: () => void;
    const stuck = new Promise<void>((r) => (release = r));
    const first: number[] = [];
    const second: number[] = [];
    const a = consume("handback", async (n) => {
      first.push(n);
      await stuck; // e.g. a request to a peer that died
    }, { ackWaitMs: 30_000, stopGraceMs: 200 });
    await publish("handback", 6);
    await waitFor(() => first.length === 1, 10_000, "first delivery");
    const stopping = Date.now();
    await a.stop();
    assert.ok(Date.now() - stopping < 5_000, "stop did not wait for the stuck handler");
    // a hand-back is no failure: nats-server does not count it as a delivery
    const b = consume("handback", async (n) => void second.push(n), { ackWaitMs: 30_000 });
    await waitFor(() => second.length === 1, 10_000, "redelivery to the next instance (the ack wait is 30 s)");
    release(); // the stuck handler finishing late neither acks nor naks
    await waitFor(async () => (await (await jetstreamManager(nc)).consumers.info(STREAMS.outbound, "handback")).num_ack_pending === 0, 10_000, "ack by the next instance");
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(first, [6]);
    assert.deepEqual(second, [6]);
    await b.stop();
  });

  it("acks at once on ackNow, before the handler ends; a failure after it is neither retried nor dead-lettered", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const seen: number[] = [];
    let dead = false;
    const running = consume("acknow", async (_n, d, delivery) => {
      seen.push(d);
      delivery.ackNow();
      delivery.ackNow(); // a second call does nothing
      await gate;
      throw new Error("after the ack");
    }, { ackWaitMs: 1_000, onDeadLetter: () => (dead = true) });
    await publish("acknow", 8);
    const pending = async () => (await (await jetstreamManager(nc)).consumers.info(STREAMS.outbound, "acknow")).num_ack_pending;
    await waitFor(async () => seen.length === 1 && (await pending()) === 0, 10_000, "the ack while the handler still runs");
    release();
    await new Promise((r) => setTimeout(r, 1_500)); // past the ack wait and the backoff
    assert.deepEqual(seen, [1], "not delivered again");
    assert.equal(dead, false);
    const info = await (await jetstreamManager(nc)).consumers.info(STREAMS.outbound, "acknow");
    assert.equal(info.num_redelivered, 0);
    assert.equal(info.num_ack_pending, 0);
    await running.stop();
  });

  it("dead-letters a malformed message at once", async () => {
    let dead: DeadLetterInfo | undefined;
    const handled: number[] = [];
    const running = consume("malformed", async (n) => void handled.push(n), { onDeadLetter: (i) => (dead = i) });
    await jetstream(nc).publish("lurk.out.test.malformed", '{"n":"not a number"}');
    await publish("malformed", 4);
    await waitFor(() => dead && handled.length === 1, 10_000, "dead letter and the next message");
    assert.equal(dead!.deliveries, 1);
    assert.match(dead!.error, /malformed/);
    assert.deepEqual(handled, [4]);
    await running.stop();
  });
});

describe("configuration", () => {
  const home = "/tmp/lurk-config-test";
  it("fills defaults and takes the documented environment variables", () => {
    const config = parseConfig({}, { LURKBOT_HOME: home }, home);
    assert.equal(config.workspace, `${home}/workspace`);
    assert.equal(config.nats.url, "nats://127.0.0.1:4222");
    assert.equal(config.model, undefined);
    assert.equal(config.runs.maxIterations, 10);
    assert.deepEqual(config.agents.map((a) => [a.id, a.default]), [["main", true]]);
    assert.deepEqual(config.log, { level: "info", maxFileMb: 20, keepFiles: 3, checkEverySec: 10 });
    assert.deepEqual(parseConfig({ log: { maxFileMb: 0.5 } }, { LURKBOT_HOME: home, LURKBOT_LOG_LEVEL: "warn" }, home).log, { level: "warn", maxFileMb: 0.5, keepFiles: 3, checkEverySec: 10 });
    const env = parseConfig({ model: "openai/a" }, {
      LURKBOT_HOME: home, LURKBOT_WORKSPACE: "/srv/ws", LURKBOT_NATS_URL: "nats://127.0.0.1:5222", LURKBOT_MODEL: "openai/gpt-4o-mini",
      OPENAI_BASE_URL: "http://127.0.0.1:8000/v1", OPENAI_API_KEY: "sk-from-env-123",
    }, home);
    assert.equal(env.workspace, "/srv/ws");
    assert.equal(env.nats.url, "nats://127.0.0.1:5222");
    assert.equal(env.model, "openai/gpt-4o-mini"); // env beats the file
    assert.equal(env.providers.openai.baseUrl, "http://127.0.0.1:8000/v1");
    assert.equal(env.providers.openai.apiKey, "sk-from-env-123");
  });

  const invalid: Array<[string, Record<string, unknown>, RegExp]> = [
    ["a model without provider", { model: "gpt-4o" }, /model: provider\/model/],
    ["two default agents", { agents: [{ id: "a", default: true }, { id: "b", default: true }] }, /marked default/],
    ["a repeated agent id", { agents: [{ id: "a" }, { id: "a" }] }, /used twice/],
    ["a bad agent id", { agents: [{ id: "Bad Id" }] }, /agent id/],
    ["a wrong type", { runs: { maxIterations: "ten" } }, /runs\.maxIterations/],
    ["a log size of zero", { log: { maxFileMb: 0 } }, /log\.maxFileMb/],
    ["a summary model without provider", { compaction: { model: "nano" } }, /compaction\.model.*provider\/model/],
    ["a Slack slash command without its slash", { channels: { slack: { slashCommand: "lurk" } } }, /channels\.slack\.slashCommand.*e\.g\. \/lurk/],
    ["a subagents lease renewed too rarely", { subagents: { leaseTtlMs: 2_000, leaseRenewMs: 1_500 } }, /subagents\.leaseRenewMs must be at most half of subagents\.leaseTtlMs/],
    ["a router lease renewed too rarely", { routing: { leaseTtlMs: 2_000, leaseRenewMs: 1_500 } }, /routing\.leaseRenewMs must be at most half of routing\.leaseTtlMs/],
    ["a transcription model of a provider without a transcription API", { media: { transcription: { model: "anthropic/claude-3-5-haiku" } } }, /media\.transcription\.model.*openai\/<model>, e\.g\. openai\/whisper-1/],
    ["a transcription language that is not a two-letter code", { media: { transcription: { model: "openai/whisper-1", language: "English" } } }, /media\.transcription\.language.*two-letter ISO-639-1/],
    ["two web users with the same id", { channels: { web: { users: [{ id: "ann", token: "ann-token-0123456789" }, { id: "ann", token: "other-token-0123456789" }] } } }, /channels\.web\.users\.1\.id: user id "ann" is used twice \(users\[0\] has it\)/],
    ["two web users with the same token", { channels: { web: { users: [{ id: "ann", token: "shared-token-0123456789" }, { id: "ben", token: "shared-token-0123456789" }] } } }, /channels\.web\.users\.1\.token: the same token as users\[0\]/],
    ["a web user id with a dot", { channels: { web: { users: [{ id: "ann.b", token: "ann-token-0123456789" }] } } }, /channels\.web\.users\.0\.id: 1-64 letters, digits, _ or -/],
    ["a short web user token", { channels: { web: { users: [{ id: "ann", token: "short" }] } } }, /channels\.web\.users\.0\.token: at least 16 characters/],
  ];
  for (const [name, file, message] of invalid) {
    it(`refuses ${name} with a message naming the field`, () => {
      assert.throws(() => parseConfig(file, { LURKBOT_HOME: home }, home), (e: unknown) => LurkError.is(e) && e.code === "CONFIG_INVALID" && message.test(e.message));
    });
  }

  it("never shows a web user's token in the duplicate-token message, and redacts every web user's token", () => {
    const users = [{ id: "ann", token: "ann-secret-token-0123456789" }, { id: "ben", token: "ben-secret-token-0123456789", name: "Ben" }];
    assert.throws(() => parseConfig({ channels: { web: { users: [users[0], { id: "ben", token: users[0]!.token }] } } }, { LURKBOT_HOME: home }, home),
      (e: unknown) => LurkError.is(e) && !e.message.includes(users[0]!.token));
    const config = parseConfig({ channels: { web: { users } } }, { LURKBOT_HOME: home }, home);
    assert.deepEqual(config.channels.web?.users?.map((u) => u.id), ["ann", "ben"]);
    const secrets = configSecrets(config);
    assert.ok(users.every((u) => secrets.includes(u.token)), "each user's token is a secret");
    assert.ok(!secrets.includes("Ben") && !secrets.includes("ann"), "names and ids are not");
  });

  it("turns transcription on with LURKBOT_TRANSCRIPTION_MODEL (defaults filled in), and keeps it off without", () => {
    assert.equal(parseConfig({}, { LURKBOT_HOME: home }, home).media.transcription, undefined);
    const on = parseConfig({ media: { transcription: { language: "de" } } }, { LURKBOT_HOME: home, LURKBOT_TRANSCRIPTION_MODEL: "openai/gpt-4o-mini-transcribe" }, home);
    assert.deepEqual(on.media.transcription, { model: "openai/gpt-4o-mini-transcribe", language: "de", maxMb: 25, timeoutMs: 120_000 });
  });

  it("reads config.json under LURKBOT_HOME and says how to fix a broken one", () => {
    const dir = `/tmp/lurk-config-${process.pid}`;
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "config.json"), JSON.stringify({ runs: { maxIterations: 3 } }));
    assert.equal(loadConfig({ LURKBOT_HOME: dir }).runs.maxIterations, 3);
    writeFileSync(join(dir, "config.json"), "{ not json");
    assert.throws(() => loadConfig({ LURKBOT_HOME: dir }), (e: unknown) => LurkError.is(e) && e.code === "CONFIG_INVALID" && /config\.json/.test(e.message));
  });
});

describe("start-up security checks", () => {
  const dir = `/tmp/lurk-security-${process.pid}`;
  const config = (over: Record<string, unknown> = {}) => parseConfig(over, { LURKBOT_HOME: dir }, dir);
  const insecure: Array<[string, () => void, RegExp]> = [
    ["a plaintext NATS URL off loopback", () => checkTransportSecurity(parseConfig({}, { LURKBOT_HOME: dir, LURKBOT_NATS_URL: "nats://10.0.0.5:4222" }, dir)), /not loopback and not TLS/],
    ["credentials in the NATS URL", () => checkTransportSecurity(parseConfig({}, { LURKBOT_HOME: dir, LURKBOT_NATS_URL: "nats://router:pw@127.0.0.1:4222" }, dir)), /must not carry credentials/],
    ["a missing credentials file", () => passwordFor("router", config({ nats: { credentialsFile: `${dir}/none.json` } }), {}), /lurkbot setup/],
    ["a credentials file others can read", () => {
      const file = `${dir}/open.json`;
      ensureCredentials(file);
      chmodSync(file, 0o644);
      passwordFor("router", config({ nats: { credentialsFile: file } }), {});
    }, /chmod 600/],
  ];
  for (const [name, check, message] of insecure) {
    it(`stops start-up on ${name}, saying what to do`, () => {
      assert.throws(check, (e: unknown) => LurkError.is(e) && e.code === "INSECURE_CONFIG" && message.test(e.message));
    });
  }
  it("accepts TLS off loopback, the opt-out, and an own password from the environment", () => {
    assert.doesNotThrow(() => checkTransportSecurity(parseConfig({}, { LURKBOT_HOME: dir, LURKBOT_NATS_URL: "tls://nats.example:4222" }, dir)));
    assert.doesNotThrow(() => checkTransportSecurity(parseConfig({ security: { allowPlaintextRemoteNats: true } }, { LURKBOT_HOME: dir, LURKBOT_NATS_URL: "nats://10.0.0.5:4222" }, dir)));
    assert.equal(passwordFor("router", config(), { LURKBOT_NATS_PASS_ROUTER: "pw-from-env" }), "pw-from-env");
  });
});

describe("log redaction", () => {
  it("removes secret-named fields and registered secret values from every line", () => {
    registerSecret("sk-live-abcdef123456");
    let out = "";
    const sink = new Writable({ write(chunk, _enc, done) { out += chunk.toString(); done(); } });
    const log = createLogger("test", "info", sink);
    log.info({ apiKey: "visible?", nested: { password: "hunter22", note: "key is sk-live-abcdef123456" }, err: new Error("failed with sk-live-abcdef123456") }, "calling with sk-live-abcdef123456");
    log.child({ runId: "r1", sessionKey: "agent:main:main" }).warn("per-run line");
    assert.doesNotMatch(out, /sk-live-abcdef123456|hunter22|visible\?/);
    assert.match(out, /\[redacted\]/);
    const lines = out.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(lines[1]!.runId, "r1");
    assert.equal(lines[1]!.sessionKey, "agent:main:main");
    assert.deepEqual(redactSecrets({ token: "t", list: ["sk-live-abcdef123456"] }), { token: "[redacted]", list: ["[redacted]"] });
  });
});

describe("name order (shared/runtime/order.ts)", () => {
  it("sorts by UTF-16 code units, the same under every locale", () => {
    const names = ["web_fetch", "b", "B", "webhook", "é", "e", "a-b", "a_b", "ab", "10", "9"];
    assert.deepEqual([...names].sort(compareCodeUnits), ["10", "9", "B", "a-b", "a_b", "ab", "b", "e", "web_fetch", "webhook", "é"]);
    assert.equal(compareCodeUnits("read", "read"), 0);
  });
});
