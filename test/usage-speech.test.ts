/**
 * Speech synthesis and transcription in the usage ledger, through real actors: nats-server with
 * the sessions and agent-runner actors as child processes, the fake OpenAI server (chat,
 * /v1/audio/speech, /v1/audio/transcriptions) and the fake ElevenLabs server. A voice reply books
 * its characters under `speech` at `openai/tts-1` ($15 per million) to the run's session, agent
 * and channel, without touching the session's token counters; the tts tool's ElevenLabs speech at
 * the price config sets; a speech model without a price books its characters unpriced; a voice
 * note's transcription books its seconds under `transcription` at whisper-1 ($0.006 a minute) from
 * the answer's usage, else from the Ogg file's own duration, else as "duration unknown" without
 * cost; a booking retried after a lost reply counts once; `lurkbot usage --by purpose` (table and
 * --json) shows characters and audio apart from tokens. In process: old buckets without the new
 * fields still load and sum; the unit price table and its overrides; the audio duration reader
 * (a header claiming more audio than the file's size allows is unknown).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  utcDay, type Attachment, type RunEvent, type RunRequest, type UsageReport, type UsageReportRow, type UsageSums,
} from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { modelsConfigSchema } from "../shared/runtime/config-models.js";
import { MEDIA_DEFAULTS } from "../shared/runtime/config-media.js";
import { createLogger } from "../shared/runtime/logger.js";
import { mediaCost, unitsCostUsd } from "../shared/runtime/media-prices.js";
import { MediaStore } from "../shared/runtime/media.js";
import { audioDurationSec, MIN_BITS_PER_SEC } from "../services/agent-runner/audio-duration.js";
import { usageBooker } from "../services/agent-runner/usage-booking.js";
import { SessionStore } from "../services/sessions/store.js";
import { FakeElevenLabsServer } from "./fakes/elevenlabs-server.js";
import { FakeOpenAIServer } from "./fakes/openai-server.js";
import { OPUS_PRE_SKIP, oggOpusFile } from "./fakes/ogg-opus.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { runCli } from "./harness/cli.js";
import { TestNats } from "./harness/nats.js";
import { runDirect } from "./harness/run-request.js";

const near = (a: number, b: number, what = "") => assert.ok(Math.abs(a - b) < 1e-12, `${what} ${a} ≈ ${b}`);
const chars = (text: string) => [...text].length;
/** ElevenLabs' price per million characters, as config.json sets it */
const ELEVEN_PER_M = 120;

describe("speech and transcription in the usage ledger (sessions and agent-runner actors)", () => {
  let nats: TestNats;
  let openai: FakeOpenAIServer;
  let eleven: FakeElevenLabsServer;
  let sessions: ActorProcess;
  let runner: ActorProcess;
  let admin: NatsConnection;
  let router: NatsConnection;
  let runnerNc: NatsConnection;
  let toolsNc: NatsConnection;
  let js: JetStreamClient;
  let bus: BusClient;
  let media: MediaStore;
  let counter = 0;
  const today = () => utcDay(Date.now());
  const report = (groupBy: Array<"model" | "purpose" | "channel" | "sessionType">, agentId = "main") => bus.call("sessions", "usage_report", { from: today(), groupBy, agentId });
  const find = (rows: UsageReportRow[], model: string, purpose: string) => rows.find((r) => r.model === model && r.purpose === purpose);
  /** the row of `model` and `purpose` once `ready` says it has what the test waits for */
  const rowOnce = (model: string, purpose: string, ready: (r: UsageReportRow) => boolean, agentId = "main") =>
    waitFor(async () => {
      const row = find((await report(["model", "purpose", "channel", "sessionType"], agentId)).rows, model, purpose);
      return row && ready(row) ? row : undefined;
    }, 15_000, `the ${purpose} row of ${model}`);

  before(async () => {
    nats = await TestNats.start();
    [openai, eleven] = await Promise.all([FakeOpenAIServer.start(), FakeElevenLabsServer.start()]);
    writeFileSync(join(nats.home, "config.json"), JSON.stringify({
      model: "openai/gpt-4o",
      providers: { openai: { baseUrl: openai.baseUrl, apiKey: "sk-usage-speech-0123456789" } },
      agents: [{ id: "main", default: true }, { id: "ears" }],
      tts: { elevenlabs: { baseUrl: eleven.url } },
      media: { transcription: { model: "openai/whisper-1" } },
      models: { entries: { "elevenlabs/eleven_multilingual_v2": { cost: { perMChars: ELEVEN_PER_M } } } },
    }));
    sessions = await startActorProcess("sessions", nats);
    runner = await startActorProcess("agent-runner", nats, { ELEVENLABS_API_KEY: eleven.apiKey, LURKBOT_LOG_LEVEL: "info" });
    [admin, router, runnerNc, toolsNc] = await Promise.all([nats.connect("admin"), nats.connect("router"), nats.connect("agent-runner"), nats.connect("tools")]);
    js = jetstream(router);
    bus = new BusClient(runnerNc);
    media = new MediaStore(runnerNc, { ...MEDIA_DEFAULTS });
  });
  after(async () => {
    await Promise.all([admin?.close(), router?.close(), runnerNc?.close(), toolsNc?.close()]);
    await Promise.all([runner?.stop(), sessions?.stop()]);
    await Promise.all([openai?.close(), eleven?.close()]);
    await nats?.stop();
  });

  /** Publishes a run request as the router would and waits for its terminal event. */
  async function run(text: string, opts: { sessionKey: string; agentId?: string; options?: RunRequest["options"]; attachments?: Attachment[] }) {
    return (await runDirect(admin, js, "s", ++counter, text, opts)).terminal;
  }


  it("a voice reply books its characters under `speech` at openai/tts-1 ($15 per million), to the run's session, agent and channel", async () => {
    const sessionKey = "agent:main:cli:dm:speech-reply";
    const spokenBefore = openai.speechRequests.length;
    openai.enqueue({ kind: "text", text: "Your plants are watered. Sleep well, dear owner!" });
    const done = await run("water the plants", { sessionKey, options: { tts: "always" } });
    assert.equal(done.kind, "done", JSON.stringify(done));
    const spoken = openai.speechRequests.slice(spokenBefore);
    assert.deepEqual(spoken.map((r) => [r.model, r.input]), [["tts-1", "Your plants are watered. Sleep well, dear owner!"]]);
    const n = chars(spoken[0]!.input);
    const row = await rowOnce("openai/tts-1", "speech", (r) => r.chars > 0);
    assert.deepEqual([row.chars, row.unpricedChars, row.audioSeconds, row.total, row.runs, row.channel, row.sessionType], [n, 0, 0, 0, 0, "cli", "dm"]);
    near(row.costUsd, (n * 15) / 1e6, "tts-1");
    // the session's own counters are tokens: the run's, nothing of the speech
    const session = (await bus.call("sessions", "get", { sessionKey })).session!;
    assert.equal(session.usage.total, (done as Extract<RunEvent["event"], { kind: "done" }>).usage.total);
    assert.equal(session.model, "openai/gpt-4o", "speech does not change the session's model");
  });

  it("the tts tool's speech through ElevenLabs is booked to the calling session at the price config sets", async () => {
    const sessionKey = "agent:main:cli:dm:speech-reply";
    const text = "A voice message from the tool, spoken by ElevenLabs.";
    const spoken = await new BusClient(toolsNc).call("agent-runner", "speak", { text, sessionKey, agentId: "main", provider: "elevenlabs" });
    assert.deepEqual([spoken.provider, spoken.model], ["elevenlabs", "eleven_multilingual_v2"]);
    const row = await rowOnce("elevenlabs/eleven_multilingual_v2", "speech", (r) => r.chars > 0);
    assert.deepEqual([row.chars, row.unpricedChars, row.channel, row.sessionType], [chars(text), 0, "cli", "dm"]);
    near(row.costUsd, (chars(text) * ELEVEN_PER_M) / 1e6, "the configured ElevenLabs price");
  });

  it("a speech model without a known price books its characters without cost", async () => {
    const spokenBefore = openai.speechRequests.length;
    openai.enqueue({ kind: "text", text: "[[tts:model=kokoro-local]] Spoken by a local model." });
    const done = await run("say it locally", { sessionKey: "agent:main:cli:dm:speech-local", options: { tts: "always" } });
    assert.equal(done.kind, "done", JSON.stringify(done));
    const spoken = openai.speechRequests.slice(spokenBefore);
    assert.deepEqual(spoken.map((r) => r.model), ["kokoro-local"]);
    const row = await rowOnce("openai/kokoro-local", "speech", (r) => r.chars > 0);
    assert.deepEqual([row.chars, row.unpricedChars, row.costUsd], [chars(spoken[0]!.input), chars(spoken[0]!.input), 0]);
  });

  it("a transcription books its seconds under `transcription` at whisper-1 ($0.006 a minute), from the answer's usage", async () => {
    openai.transcriptUsage = () => ({ type: "duration", seconds: 42 });
    const bytes = Buffer.concat([Buffer.from("OggS\0\x02", "binary"), randomBytes(2_000)]);
    const { ref } = await media.put(bytes, { mime: "audio/ogg", name: "note.ogg" });
    openai.enqueue({ kind: "text", text: "Noted." });
    const done = await run("", { sessionKey: "agent:ears:cli:dm:heard", agentId: "ears", attachments: [{ kind: "audio", mime: "audio/ogg", name: "note.ogg", size: bytes.length, ref }] });
    assert.equal(done.kind, "done", JSON.stringify(done));
    const row = await rowOnce("openai/whisper-1", "transcription", (r) => r.audioSeconds > 0, "ears");
    assert.deepEqual([row.audioSeconds, row.unpricedAudioSeconds, row.unknownDurations, row.chars, row.total, row.channel, row.sessionType], [42, 0, 0, 0, 0, "cli", "dm"],
      "booked under the session begun after the transcription");
    near(row.costUsd, (42 / 60) * 0.006);
  });

  it("without a duration in the answer, the Ogg file's own is booked; a file of no known format books \"duration unknown\" without cost", async () => {
    openai.transcriptUsage = () => undefined;
    const before = find((await report(["model", "purpose"], "ears")).rows, "openai/whisper-1", "transcription")!;
    const ogg = oggOpusFile(Array.from({ length: 250 }, () => 20)); // 250 packets of 20 ms
    const opaque = randomBytes(3_000);
    const [a, b] = await Promise.all([media.put(ogg, { mime: "audio/ogg", name: "five.ogg" }), media.put(opaque, { mime: "audio/mpeg", name: "odd.mp3" })]);
    openai.enqueue({ kind: "text", text: "Heard both." });
    const done = await run("two notes", {
      sessionKey: "agent:ears:cli:dm:heard", agentId: "ears",
      attachments: [{ kind: "audio", mime: "audio/ogg", name: "five.ogg", size: ogg.length, ref: a.ref }, { kind: "audio", mime: "audio/mpeg", name: "odd.mp3", size: opaque.length, ref: b.ref }],
    });
    assert.equal(done.kind, "done", JSON.stringify(done));
    const fiveSec = Math.round(((250 * 960 - OPUS_PRE_SKIP) / 48_000) * 1000) / 1000;
    const row = await rowOnce("openai/whisper-1", "transcription", (r) => r.unknownDurations > 0 && r.audioSeconds > before.audioSeconds, "ears");
    assert.deepEqual([row.audioSeconds, row.unknownDurations, row.unpricedAudioSeconds], [before.audioSeconds + fiveSec, 1, 0]);
    near(row.costUsd, before.costUsd + (fiveSec / 60) * 0.006, "only the known seconds are priced");
    assert.match(runner.output(), /"seconds":"unknown"[^\n]*audio transcribed/);
    openai.transcriptUsage = () => ({ type: "duration", seconds: 3 });
  });

  it("a booking repeated with its idempotency key, or retried by the runner after a lost reply, counts once", async () => {
    const sessionKey = "agent:main:cli:dm:speech-reply";
    const base = find((await report(["model", "purpose"])).rows, "openai/tts-1-hd", "speech");
    assert.equal(base, undefined);
    const body = { sessionKey, usage: {}, model: "tts-1-hd", provider: "openai", purpose: "speech" as const, units: { chars: 1_000 }, idempotencyKey: "usage:speech-repeat" };
    const [first, second] = [await bus.call("sessions", "usage", body), await bus.call("sessions", "usage", body)];
    assert.deepEqual([first.duplicate, second.duplicate], [false, true]);
    let row = find((await report(["model", "purpose"])).rows, "openai/tts-1-hd", "speech")!;
    assert.equal(row.chars, 1_000);
    near(row.costUsd, (1_000 * 30) / 1e6, "tts-1-hd: $30 per million");

    // the runner's booker: its first request times out while the sessions actor is paused; the
    // retries carry the same key, so the late first one and the retries book once
    const impatient = new BusClient(runnerNc, undefined, 400);
    const book = usageBooker({ client: impatient, signal: new AbortController().signal, log: createLogger("test", "silent") }, [300, 300, 300, 300, 300, 300]);
    sessions.child.kill("SIGSTOP");
    const booked = book({ owner: { sessionKey }, purpose: "speech", provider: "openai", model: "tts-1-hd", usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }, units: { chars: 500 } });
    try {
      await new Promise((resolve) => setTimeout(resolve, 1_200));
    } finally {
      sessions.child.kill("SIGCONT");
    }
    await booked;
    await new Promise((resolve) => setTimeout(resolve, 300));
    row = find((await report(["model", "purpose"])).rows, "openai/tts-1-hd", "speech")!;
    assert.equal(row.chars, 1_500, "500 characters booked once, not once per attempt");
  });

  it("refuses units that do not fit the purpose, with a typed error, and keeps serving", async () => {
    const bad = async (body: Record<string, unknown>, message: RegExp) => assert.rejects(
      bus.call("sessions", "usage", { agentId: "main", usage: {}, model: "tts-1", provider: "openai", ...body } as never),
      (e: unknown) => (e as { code?: string }).code === "VALIDATION_FAILED" && message.test((e as Error).message),
    );
    await bad({ purpose: "speech" }, /units\.chars/);
    await bad({ purpose: "speech", usage: { input: 10 }, units: { chars: 5 } }, /not tokens/);
    await bad({ purpose: "embedding", usage: { input: 10 }, units: { chars: 5 } }, /units are for the purposes speech and transcription/);
    await bad({ purpose: "transcription", units: { audioSeconds: 3, durationUnknown: true } }, /audioSeconds, or units\.durationUnknown/);
    assert.ok((await report(["purpose"])).rows.length > 0, "still serving");
  });

  it("lurkbot usage --by purpose shows characters and audio apart from tokens; --json has them in every row", async () => {
    const env = nats.env(nats.passwordEnv("cli"));
    const json = await runCli(["usage", "--json", "--days", "1", "--by", "purpose"], env);
    assert.equal(json.code, 0, json.stderr);
    const parsed = JSON.parse(json.stdout) as UsageReport;
    assert.deepEqual(parsed.rows.map((x) => x.purpose), ["speech", "transcription", "turn"]);
    const [speech, transcription, turn] = parsed.rows as [UsageReportRow, UsageReportRow, UsageReportRow];
    assert.ok(speech.chars > 1_500 && speech.total === 0 && speech.audioSeconds === 0, JSON.stringify(speech));
    assert.ok(transcription.audioSeconds > 46.9 && transcription.unknownDurations === 1 && transcription.chars === 0 && transcription.total === 0, JSON.stringify(transcription));
    assert.ok(turn.total > 0 && turn.chars === 0 && turn.audioSeconds === 0);
    assert.equal(parsed.totals.chars, speech.chars);
    assert.equal(parsed.totals.unknownDurations, 1);

    const table = await runCli(["usage", "--days", "1", "--by", "purpose"], env);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^PURPOSE\s+RUNS\s+INPUT\s+OUTPUT\s+CACHE READ\s+CACHE WRITE\s+TOTAL\s+CHARS\s+AUDIO\s+COST \(USD\)$/m);
    assert.match(table.stdout, new RegExp(`^speech\\s+0\\s+0\\s+0\\s+0\\s+0\\s+0\\s+${speech.chars}\\s+0s\\s+\\$0\\.\\d{4}\\*$`, "m"));
    assert.match(table.stdout, /^transcription\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+[\d.]+s \+1 unknown\s+\$0\.\d{4}\*$/m);
    assert.match(table.stdout, /^turn\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+0\s+0s\s+\$\d\.\d{2,4}$/m);
    assert.match(table.stdout, /^\* \d+ characters of speech without a known price are not in the cost: set models\.entries\["<provider\/model>"\]\.cost\.perMChars/m);
    assert.match(table.stdout, /^\* 1 transcription of unknown duration .*: not in AUDIO nor in the cost\.$/m);
    // by model: the speech model without a price is named, its cost "unpriced"
    const byModel = await runCli(["usage", "--days", "1", "--by", "model,purpose"], env);
    assert.equal(byModel.code, 0, byModel.stderr);
    assert.match(byModel.stdout, /^openai\/kokoro-local\s+speech\s+0\s+0\s+0\s+0\s+0\s+0\s+\d+\s+0s\s+unpriced$/m);
    assert.match(byModel.stdout, /^openai\/tts-1\s+speech\s+0\s+0\s+0\s+0\s+0\s+0\s+\d+\s+0s\s+\$0\.\d{4}$/m);
    assert.match(byModel.stdout, /^\* \d+ characters of speech without a known price are not in the cost \(openai\/kokoro-local\)/m);
    assert.match(byModel.stdout, /^\* 1 transcription of unknown duration .*\(openai\/whisper-1\)\.$/m);
  });
});

describe("speech and transcription units in the ledger's store, prices and audio durations (in process)", () => {
  let dir: string;
  let store: SessionStore;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "lurk-usage-units-"));
    store = new SessionStore(dir);
  });
  after(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a bucket written before speech and transcription (no unit fields) still loads and sums with new bookings", async () => {
    const day = utcDay(Date.now());
    const old = { input: 70, output: 30, cacheRead: 0, cacheWrite: 0, total: 100, runs: 1, costUsd: 0.5, unpricedTokens: 0 } as UsageSums;
    store.applyChange([{ op: "usage", key: [day, "main", "openai/gpt-4o", "cli", "dm", "turn"], value: old }, { op: "usage", key: [day, "main", "openai/tts-1", "cli", "dm", "speech"], value: old }], 1);
    await store.recordUsage({ agentId: "main", usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }, model: "tts-1", provider: "openai", purpose: "speech", units: { chars: 2_000 } });
    await store.recordUsage({ agentId: "main", usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }, model: "whisper-1", provider: "openai", purpose: "transcription", units: { audioSeconds: 90 } });
    const r = store.usageReport({ groupBy: ["model", "purpose"] });
    const turn = r.rows.find((x) => x.model === "openai/gpt-4o")!;
    assert.deepEqual([turn.total, turn.chars, turn.audioSeconds, turn.unpricedChars, turn.unknownDurations], [100, 0, 0, 0, 0], "the old bucket reads with zero units");
    const speech = r.rows.find((x) => x.model === "openai/tts-1" && x.purpose === "speech")!;
    assert.deepEqual([speech.total, speech.chars, speech.unpricedChars], [100, 2_000, 0], "an old bucket and a new booking sum");
    near(speech.costUsd, 0.5 + (2_000 * 15) / 1e6);
    const heard = r.rows.find((x) => x.model === "openai/whisper-1")!;
    assert.deepEqual([heard.purpose, heard.audioSeconds, heard.total], ["transcription", 90, 0]);
    near(heard.costUsd, 1.5 * 0.006);
    assert.deepEqual([r.totals.total, r.totals.chars, r.totals.audioSeconds], [200, 2_000, 90]);
    near(r.totals.costUsd, 1 + 0.03 + 0.009);
  });

  it("the unit price table: list prices, estimates, prefixes on a boundary, config overrides per unit", () => {
    const none = { models: { entries: {}, aliases: {} } };
    assert.deepEqual(mediaCost("openai/tts-1", none), { perMChars: 15 });
    assert.deepEqual(mediaCost("openai/tts-1-hd-1106", none), { perMChars: 30 }, "the longest prefix wins");
    assert.ok(Math.abs(mediaCost("openai/gpt-4o-mini-tts", none).perMChars! - 16.667) < 0.01, "an estimate from ~$0.015 a minute");
    assert.deepEqual(mediaCost("openai/gpt-4o-mini-transcribe", none), { perAudioMinute: 0.003 });
    assert.deepEqual(mediaCost("openai/whisper-1", none), { perAudioMinute: 0.006 });
    assert.deepEqual(mediaCost("elevenlabs/eleven_flash_v2_5", none), { perMChars: 50 });
    assert.deepEqual(mediaCost("openai/tts-10", none), {}, "not on a boundary: unknown");
    const cfg = { models: modelsConfigSchema.parse({ entries: { "openai/whisper-1": { cost: { perAudioMinute: 0.01 } }, "openai/kokoro": { cost: { perMChars: 0 } } } }) };
    assert.deepEqual(mediaCost("openai/whisper-1", cfg), { perAudioMinute: 0.01 });
    assert.equal(unitsCostUsd({ chars: 1_000 }, mediaCost("openai/kokoro", cfg)), 0, "a local model priced at $0 is not unpriced");
    assert.equal(unitsCostUsd({ chars: 1_000 }, mediaCost("openai/unknown-tts", cfg)), undefined);
    assert.equal(unitsCostUsd({ durationUnknown: true }, mediaCost("openai/whisper-1", cfg)), undefined);
    assert.throws(() => modelsConfigSchema.parse({ entries: { "openai/x": { cost: { inputPerMTok: 1 } } } }), /both inputPerMTok and outputPerMTok/);
    assert.throws(() => modelsConfigSchema.parse({ entries: { "openai/x": { cost: {} } } }), /perMChars \(speech\) or perAudioMinute/);
  });

  it("reads the duration of Ogg Opus and WAV files; anything else is unknown", () => {
    assert.equal(audioDurationSec(oggOpusFile(Array.from({ length: 100 }, () => 10))), Math.round(((100 * 960 - OPUS_PRE_SKIP) / 48_000) * 1000) / 1000);
    const wav = Buffer.alloc(44 + 32_000);
    wav.write("RIFF", 0, "latin1");
    wav.writeUInt32LE(36 + 32_000, 4);
    wav.write("WAVEfmt ", 8, "latin1");
    wav.writeUInt32LE(16, 16);
    wav.writeUInt16LE(1, 20);
    wav.writeUInt16LE(1, 22);
    wav.writeUInt32LE(16_000, 24);
    wav.writeUInt32LE(32_000, 28); // 16 kHz, 16-bit mono: 32,000 bytes a second
    wav.writeUInt16LE(2, 32);
    wav.writeUInt16LE(16, 34);
    wav.write("data", 36, "latin1");
    wav.writeUInt32LE(32_000, 40);
    assert.equal(audioDurationSec(wav), 1);
    assert.equal(audioDurationSec(randomBytes(500)), undefined);
    assert.equal(audioDurationSec(Buffer.from("OggS")), undefined, "a truncated header");
  });

  it("a header claiming more audio than the file's size allows is unknown: a crafted Ogg granule, a WAV byte rate too low or not its format's", () => {
    const second = oggOpusFile(Array.from({ length: 50 }, () => 40)); // 1 s at 16 kbit/s
    assert.equal(audioDurationSec(second), Math.round(((50 * 960 - OPUS_PRE_SKIP) / 48_000) * 1000) / 1000);
    const crafted = Buffer.from(second);
    const last = crafted.lastIndexOf(Buffer.from("OggS"));
    crafted.writeBigInt64LE(BigInt(48_000 * 3 * 86_400), last + 6); // "3 days"
    assert.equal(audioDurationSec(crafted), undefined, `${crafted.length} bytes cannot hold 3 days of audio`);
    // just past what the bytes allow at MIN_BITS_PER_SEC, and just within it
    crafted.writeBigInt64LE(BigInt(Math.ceil(((crafted.length * 8) / MIN_BITS_PER_SEC + 0.01) * 48_000) + OPUS_PRE_SKIP), last + 6);
    assert.equal(audioDurationSec(crafted), undefined);
    crafted.writeBigInt64LE(BigInt(Math.floor(((crafted.length * 8) / MIN_BITS_PER_SEC - 0.01) * 48_000) + OPUS_PRE_SKIP), last + 6);
    assert.ok(audioDurationSec(crafted)! > 1, "a header within the bound is taken");

    const wav = (format: number, sampleRate: number, byteRate: number, blockAlign: number, dataBytes: number, claimed = dataBytes) => {
      const b = Buffer.alloc(44 + dataBytes);
      b.write("RIFF", 0, "latin1");
      b.writeUInt32LE(36 + dataBytes, 4);
      b.write("WAVEfmt ", 8, "latin1");
      b.writeUInt32LE(16, 16);
      b.writeUInt16LE(format, 20);
      b.writeUInt16LE(1, 22);
      b.writeUInt32LE(sampleRate, 24);
      b.writeUInt32LE(byteRate, 28);
      b.writeUInt16LE(blockAlign, 32);
      b.writeUInt16LE(blockAlign * 8, 34);
      b.write("data", 36, "latin1");
      b.writeUInt32LE(claimed, 40);
      return b;
    };
    assert.equal(audioDurationSec(wav(1, 8_000, 16_000, 2, 16_000)), 1, "PCM 8 kHz 16-bit: exact");
    assert.equal(audioDurationSec(wav(1, 8_000, 16_000, 2, 16_000, 0x7fffffff)), 1, "a data size past the file: what the file holds");
    assert.equal(audioDurationSec(wav(1, 8_000, 1, 2, 16_000)), undefined, "PCM whose byte rate is not sample rate × block size");
    assert.equal(audioDurationSec(wav(0x31, 8_000, 100, 65, 16_000)), undefined, "a compressed format at 800 bit/s: below the floor");
    assert.equal(audioDurationSec(wav(0x31, 8_000, 1_625, 65, 16_250)), 10, "GSM 6.10 at 13 kbit/s is taken");
  });
});
