/**
 * Reliable voice replies (services/agent-runner/{tts,speech-profiles,speech-rotation}.ts): the
 * real OpenAI SDK against the fake /v1/audio/speech and fetch against the fake ElevenLabs, with a
 * real AuthStateStore (LMDB) on a controllable clock. A rate limit moves to the provider's next
 * auth profile and cools the first down (the seeds' formula, under the speech key: chat models
 * of the same key stay usable); the cooldown is stored, survives a reopen and is honoured by the
 * next reply; auth and billing disable the speech profile; a call without audio in time cools its
 * profile down (unless the message's whole time ran out); a provider that gives no audio hands
 * over to the next of tts.fallbacks (each with its own voice); when all fail the reply is text only.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { after, before, beforeEach, describe, it } from "node:test";
import { LurkError, type RunRequest } from "../shared/contract/index.js";
import { parseConfig, type LurkConfig } from "../shared/runtime/config.js";
import { createLogger } from "../shared/runtime/logger.js";
import { sha256Hex } from "../shared/runtime/media.js";
import { AuthStateStore, cooldownMs, disableMs } from "../services/agent-runner/auth-profiles.js";
import { ProviderRegistry } from "../services/agent-runner/providers/registry.js";
import { speechStateProvider, type SpeechProfile } from "../services/agent-runner/speech-profiles.js";
import { synthesizeRotating } from "../services/agent-runner/speech-rotation.js";
import { Speaker } from "../services/agent-runner/tts.js";
import { VoiceReplies } from "../services/agent-runner/voice-reply.js";
import { fakeElevenLabsAudio, FakeElevenLabsServer } from "./fakes/elevenlabs-server.js";
import { fakeSpeech, FakeOpenAIServer } from "./fakes/openai-server.js";

const HOME = "/tmp/lurk-tts-failover";
const never = new AbortController().signal;
const FIRST = "sk-first-000000000000";
const SECOND = "sk-second-11111111111";

function memoryMedia() {
  const stored: Buffer[] = [];
  return {
    stored,
    store: () => ({
      maxFileBytes: 1024 * 1024,
      put: async (bytes: Uint8Array, meta: { mime: string; name?: string | undefined }) => {
        stored.push(Buffer.from(bytes));
        return { ref: sha256Hex(bytes), mime: meta.mime, size: bytes.byteLength, ...(meta.name ? { name: meta.name } : {}) };
      },
    }),
  };
}

/** A logger whose lines the test reads. */
function capturedLog() {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({ write(chunk, _enc, done) { for (const l of String(chunk).split("\n")) if (l) lines.push(JSON.parse(l) as Record<string, unknown>); done(); } });
  return { lines, log: createLogger("tts-failover", "info", sink) };
}

describe("speech profiles rotate and cool down", () => {
  let openai: FakeOpenAIServer;
  let eleven: FakeElevenLabsServer;
  const dirs: string[] = [];
  const tempDir = () => {
    const d = mkdtempSync(join(tmpdir(), "lurk-tts-state-"));
    dirs.push(d);
    return d;
  };
  let now = 1_700_000_000_000;
  const clock = () => now;

  before(async () => {
    openai = await FakeOpenAIServer.start();
    eleven = await FakeElevenLabsServer.start();
    eleven.apiKeys.add("el-backup-key-222222");
  });
  after(async () => {
    await openai?.close();
    await eleven?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  beforeEach(() => {
    openai.reset();
    openai.speechStatus = () => undefined;
    eleven.requests.length = 0;
  });

  const config = (tts: Record<string, unknown> = {}, env: Record<string, string> = {}): LurkConfig => parseConfig({
    providers: { openai: { baseUrl: openai.baseUrl, apiKey: FIRST, profiles: [{ id: "second", apiKey: SECOND }] } },
    tts: { ...tts, elevenlabs: { baseUrl: eleven.url, ...(tts.elevenlabs as object | undefined) } },
  }, { LURKBOT_HOME: HOME, ...env }, HOME);
  const speakerFor = (cfg: LurkConfig, store?: AuthStateStore, log = createLogger("t", "silent")) => {
    const registry = new ProviderRegistry(cfg);
    return { speaker: new Speaker(cfg.tts, registry, memoryMedia().store, log, store), registry };
  };
  const auths = () => openai.speechRequests.map((r) => r.headers.authorization);

  it("a 429 moves to the second profile; the first cools down for 60 s (stored, survives a reopen, honoured by the next reply); chat models are not affected", async () => {
    const dir = tempDir();
    let store = new AuthStateStore(dir, clock);
    const cfg = config();
    const { speaker, registry } = speakerFor(cfg, store);
    openai.speechStatus = (r) => (r.headers.authorization === `Bearer ${FIRST}` ? 429 : undefined);
    const t0 = now;
    const spoken = await speaker.speak({ text: "Rotate me.", signal: never });
    assert.deepEqual(auths(), [`Bearer ${FIRST}`, `Bearer ${SECOND}`], "no SDK retry: the next profile at once");
    assert.deepEqual({ provider: spoken.provider, failed: spoken.failed }, { provider: "openai", failed: ["openai/default PROVIDER_RATE_LIMIT"] });
    const [chatDefault] = registry.profiles("openai");
    const speech = { provider: speechStateProvider("openai"), id: "default", fingerprint: chatDefault!.fingerprint };
    const cooldown = store.cooldown(speech, "tts-1")!;
    assert.deepEqual({ errorCount: cooldown.errorCount, until: cooldown.cooldownUntil, reason: cooldown.lastReason }, { errorCount: 1, until: t0 + cooldownMs(1), reason: "rate_limit" });
    assert.deepEqual(store.availability(chatDefault!, "tts-1"), { usable: true }, "the chat key's own state is untouched");
    assert.deepEqual(store.availability(chatDefault!, "gpt-4o-mini"), { usable: true });

    // another process (or a restart) reads the same LMDB state: the next reply skips the first key
    await store.close();
    store = new AuthStateStore(dir, clock);
    openai.reset();
    openai.speechStatus = () => undefined;
    now = t0 + cooldownMs(1) - 1_000;
    const next = await speakerFor(cfg, store).speaker.speak({ text: "Next reply.", signal: never });
    assert.deepEqual(auths(), [`Bearer ${SECOND}`], "the cooling profile is not called");
    assert.match(next.failed![0]!, /^openai\/default PROVIDER_RATE_LIMIT$/);

    // once the cooldown is over the first profile is used again, and its success clears the streak
    openai.reset();
    now = t0 + cooldownMs(1) + 1;
    const again = await speakerFor(cfg, store).speaker.speak({ text: "First again.", signal: never });
    assert.deepEqual(auths(), [`Bearer ${FIRST}`]);
    assert.equal(again.failed, undefined);
    assert.equal(store.cooldown(speech, "tts-1"), undefined, "the success cleared the cooldown");
    await store.close();
  });

  it("an auth refusal disables the speech profile for 5 h (not the chat key); ElevenLabs billing moves to the backup key", async () => {
    const store = new AuthStateStore(tempDir(), clock);
    const { speaker, registry } = speakerFor(config(), store);
    openai.speechStatus = (r) => (r.headers.authorization === `Bearer ${FIRST}` ? 401 : undefined);
    await speaker.speak({ text: "Who am I?", signal: never });
    const [chatDefault] = registry.profiles("openai");
    const speech = { provider: speechStateProvider("openai"), id: "default", fingerprint: chatDefault!.fingerprint };
    assert.deepEqual({ disabledUntil: store.profile(speech)?.disabledUntil, reason: store.profile(speech)?.disabledReason }, { disabledUntil: now + disableMs(1), reason: "auth" });
    assert.equal(store.profile(chatDefault!), undefined, "chat calls still use the key");

    const el = config({ provider: "elevenlabs", elevenlabs: { profiles: [{ id: "backup", apiKey: "el-backup-key-222222" }] } }, { ELEVENLABS_API_KEY: eleven.apiKey });
    const s2 = speakerFor(el, store).speaker;
    eleven.failNext(401, "quota_exceeded", eleven.apiKey);
    const spoken = await s2.speak({ text: "Out of credits.", signal: never });
    assert.deepEqual(eleven.requests.map((r) => r.headers["xi-api-key"]), [eleven.apiKey, "el-backup-key-222222"]);
    assert.deepEqual({ provider: spoken.provider, failed: spoken.failed }, { provider: "elevenlabs", failed: ["elevenlabs/default PROVIDER_BILLING"] });
    eleven.requests.length = 0;
    await s2.speak({ text: "Still out.", signal: never });
    assert.deepEqual(eleven.requests.map((r) => r.headers["xi-api-key"]), ["el-backup-key-222222"], "the disabled key is skipped");
    await store.close();
  });

  it("a call without audio within tts.timeoutMs cools its profile down; one cut short by tts.totalTimeoutMs is not held against it", async () => {
    const store = new AuthStateStore(tempDir(), clock);
    const calls: string[] = [];
    const hanging = (id: string): SpeechProfile => ({
      provider: "openai", id, state: { provider: speechStateProvider("openai"), id, fingerprint: `fp-${id}` },
      synthesize: (req) => new Promise((_resolve, reject) => {
        calls.push(id);
        req.signal.addEventListener("abort", () => reject(new LurkError("ABORTED", "aborted")), { once: true });
      }),
    });
    const [a, b, c] = [hanging("a"), hanging("b"), hanging("c")];
    const started = Date.now();
    const result = await synthesizeRotating([a, b, c], { text: "x", model: "tts-1", voice: "alloy", format: "mp3", maxBytes: 1000 },
      { store, log: createLogger("t", "silent"), timeoutMs: 1_000, deadline: started + 2_600, signal: never });
    assert.equal(result.ok, false);
    assert.deepEqual(calls, ["a", "b"], "c had less than a second left: not called");
    assert.deepEqual(result.failed.map((f) => [f.label, f.error.code]), [["openai/a", "PROVIDER_TIMEOUT"], ["openai/b", "PROVIDER_TIMEOUT"], ["openai/c", "PROVIDER_TIMEOUT"]]);
    assert.match(result.failed[0]!.error.message, /no audio within 1000 ms \(tts\.timeoutMs\)/);
    assert.match(result.failed[2]!.error.message, /not tried, the voice message's time \(tts\.totalTimeoutMs\) is spent/);
    assert.equal(store.cooldown(a.state, "tts-1")?.lastReason, "timeout");
    assert.equal(store.cooldown(b.state, "tts-1")?.lastReason, "timeout");
    // a deadline shorter than timeoutMs: the cut-short call is no failure of the profile
    calls.length = 0;
    const d = hanging("d");
    const short = await synthesizeRotating([d], { text: "x", model: "tts-1", voice: "alloy", format: "mp3", maxBytes: 1000 },
      { store, log: createLogger("t", "silent"), timeoutMs: 5_000, deadline: Date.now() + 1_200, signal: never });
    assert.match(short.ok ? "" : short.failed[0]!.error.message, /what was left of tts\.totalTimeoutMs/);
    assert.equal(store.cooldown(d.state, "tts-1"), undefined);
    await store.close();
  });

  it("a bad request (unknown voice) is not a reason to try another key", async () => {
    const store = new AuthStateStore(tempDir(), clock);
    const el = config({ provider: "elevenlabs", elevenlabs: { profiles: [{ id: "backup", apiKey: "el-backup-key-222222" }] } }, { ELEVENLABS_API_KEY: eleven.apiKey });
    await assert.rejects(speakerFor(el, store).speaker.speak({ text: "x", voice: "noSuchVoice", signal: never }), (err: LurkError) => err.code === "PROVIDER_ERROR" && /voice_not_found/.test(err.message));
    assert.equal(eleven.requests.length, 1);
    await store.close();
  });
});

describe("speech provider fallback", () => {
  let openai: FakeOpenAIServer;
  let eleven: FakeElevenLabsServer;

  before(async () => {
    openai = await FakeOpenAIServer.start();
    eleven = await FakeElevenLabsServer.start();
  });
  after(async () => {
    await openai?.close();
    await eleven?.close();
  });
  beforeEach(() => {
    openai.reset();
    openai.speechStatus = () => undefined;
    eleven.requests.length = 0;
  });

  const config = (tts: Record<string, unknown>, env: Record<string, string> = { ELEVENLABS_API_KEY: eleven.apiKey }): LurkConfig => parseConfig({
    providers: { openai: { baseUrl: openai.baseUrl, apiKey: FIRST } },
    tts: { ...tts, elevenlabs: { baseUrl: eleven.url, ...(tts.elevenlabs as object | undefined) } },
  }, { LURKBOT_HOME: HOME, ...env }, HOME);
  const speakerFor = (cfg: LurkConfig, log = createLogger("t", "silent")) => {
    const media = memoryMedia();
    return { speaker: new Speaker(cfg.tts, new ProviderRegistry(cfg), media.store, log), media };
  };

  it("is off by default (today's behaviour); tts.fallbacks is checked", () => {
    assert.deepEqual(config({}).tts.fallbacks, []);
    assert.deepEqual(speakerFor(config({})).speaker.order(undefined), ["openai"]);
    assert.deepEqual(speakerFor(config({ fallbacks: ["elevenlabs"] })).speaker.order(undefined), ["openai", "elevenlabs"]);
    assert.deepEqual(speakerFor(config({ fallbacks: ["openai"] })).speaker.order("elevenlabs"), ["elevenlabs", "openai"], "the model's choice first, then tts.provider");
    assert.throws(() => config({ fallbacks: ["edge"] }), /tts\.fallbacks\.0: "edge" is not supported/);
    assert.throws(() => config({ fallbacks: ["elevenlabs", "elevenlabs"] }), /tts\.fallbacks: list each provider once/);
    assert.throws(() => config({ elevenlabs: { profiles: [{ id: "default", apiKey: "el-other-key-0000" }] } }), /tts\.elevenlabs\.profiles: profile ids must be unique/);
  });

  it("OpenAI unusable: ElevenLabs speaks with its own voice, in the channel's format", async () => {
    const { lines, log } = capturedLog();
    const { speaker, media } = speakerFor(config({ fallbacks: ["elevenlabs"] }), log);
    openai.speechStatus = () => 500;
    const spoken = await speaker.speak({ text: "Fall back.", channel: "telegram", voice: "nova", signal: never });
    assert.equal(openai.speechRequests.length, 1);
    const [req] = eleven.requests;
    assert.deepEqual({ voice: req!.voiceId, format: req!.outputFormat }, { voice: "21m00Tcm4TlvDq8ikWAM", format: "opus_48000_64" }, "not OpenAI's voice nova");
    assert.deepEqual({ provider: spoken.provider, voice: spoken.voice, mime: spoken.attachment.mime, failed: spoken.failed }, { provider: "elevenlabs", voice: "21m00Tcm4TlvDq8ikWAM", mime: "audio/ogg", failed: ["openai/default PROVIDER_ERROR"] });
    assert.deepEqual(media.stored[0], fakeElevenLabsAudio("21m00Tcm4TlvDq8ikWAM", "opus_48000_64", "Fall back."));
    assert.ok(lines.some((l) => l.msg === "speech synthesized by the fallback provider elevenlabs"), "logged");
  });

  it("and the other way round: ElevenLabs rate-limited, OpenAI speaks; no ElevenLabs key at all works the same", async () => {
    const { speaker, media } = speakerFor(config({ provider: "elevenlabs", fallbacks: ["openai"] }));
    eleven.failNext(429);
    const spoken = await speaker.speak({ text: "Other way.", channel: "discord", signal: never });
    assert.deepEqual({ provider: spoken.provider, voice: spoken.voice, failed: spoken.failed }, { provider: "openai", voice: "alloy", failed: ["elevenlabs/default PROVIDER_RATE_LIMIT"] });
    assert.equal(openai.speechRequests[0]!.responseFormat, "opus", "Discord gets OGG/Opus (its voice messages)");
    assert.deepEqual(media.stored[0], fakeSpeech({ model: "tts-1", voice: "alloy", responseFormat: "opus", input: "Other way." }));
    const keyless = await speakerFor(config({ provider: "elevenlabs", fallbacks: ["openai"] }, {})).speaker.speak({ text: "No key.", signal: never });
    assert.deepEqual({ provider: keyless.provider, failed: keyless.failed }, { provider: "openai", failed: ["elevenlabs PROVIDER_AUTH"] });
  });

  it("every provider failing: the text reply goes alone, the error names each attempt, a warning is logged", async () => {
    const { lines, log } = capturedLog();
    const cfg = config({ auto: "always", fallbacks: ["elevenlabs"] });
    const replies = new VoiceReplies(cfg.tts, speakerFor(cfg, log).speaker, log);
    openai.speechStatus = () => 429;
    eleven.failNext(503);
    const req: RunRequest = {
      type: "lurk.run.request.v1", id: "r", ts: 0, runId: "run-1", sessionKey: "agent:main:main", agentId: "main", sessionType: "main", trigger: "message",
      inputs: [{ kind: "user", text: "hi", attachments: [] }], origin: { channel: "web", conversation: "c1", messageIds: ["m1"] }, deliver: true, options: {},
    };
    const out = await replies.reply(req, "Text survives.", never);
    assert.deepEqual({ text: out.text, attachments: out.attachments }, { text: "Text survives.", attachments: [] });
    const error = (out.voice as { error: string }).error;
    assert.match(error, /^PROVIDER_OVERLOADED: elevenlabs: HTTP 503 .*\(before: openai\/default: PROVIDER_RATE_LIMIT\)$/);
    const warn = lines.find((l) => l.msg === "could not synthesize the voice reply; the text reply goes alone");
    assert.equal(warn?.code, "PROVIDER_OVERLOADED");
  });
});
