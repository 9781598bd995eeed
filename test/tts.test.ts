/**
 * Voice replies, their parts on their own: the model's [[tts…]] directives (removed from what the
 * user reads, the same whether the text arrives whole or in any number of deltas, run events
 * included), the text made speakable and fitted to tts.maxChars, the tts config and its
 * validation errors, synthesis through the real OpenAI SDK against the fake OpenAI server
 * (/v1/audio/speech) and through fetch against the fake ElevenLabs server (requests on the wire,
 * auth profiles and keys, errors classified), and the choice of when a reply is spoken.
 * The whole system (router /tts, channels, the tts tool) is in tts-system.test.ts.
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { LurkError, subjects, type RunRequest } from "../shared/contract/index.js";
import { configSecrets, parseConfig, type LurkConfig } from "../shared/runtime/config.js";
import { createLogger } from "../shared/runtime/logger.js";
import { sha256Hex } from "../shared/runtime/media.js";
import { RunEvents } from "../services/agent-runner/events.js";
import { ProviderRegistry } from "../services/agent-runner/providers/registry.js";
import { parseTtsReply, TtsDirectiveFilter } from "../services/agent-runner/tts-directives.js";
import { cutAtSentence, fitForSpeech, speechText } from "../services/agent-runner/tts-text.js";
import { ttsPromptLines } from "../services/agent-runner/tts-prompt.js";
import { Speaker, type SpeakOptions } from "../services/agent-runner/tts.js";
import { VoiceReplies } from "../services/agent-runner/voice-reply.js";
import { fakeSpeech, FakeOpenAIServer } from "./fakes/openai-server.js";
import { fakeElevenLabsAudio, FakeElevenLabsServer } from "./fakes/elevenlabs-server.js";

const log = createLogger("test", "silent");
const HOME = "/tmp/lurk-tts-unit";
const config = (file: Record<string, unknown>, env: Record<string, string> = {}): LurkConfig => parseConfig(file, { LURKBOT_HOME: HOME, ...env }, HOME);
const never = new AbortController().signal;

/** A media store in memory: what the Speaker stored. */
function memoryMedia(maxFileBytes = 1024 * 1024) {
  const stored: Array<{ bytes: Buffer; mime: string; name?: string | undefined }> = [];
  return {
    stored,
    store: () => ({
      maxFileBytes,
      put: async (bytes: Uint8Array, meta: { mime: string; name?: string | undefined }) => {
        stored.push({ bytes: Buffer.from(bytes), ...meta });
        return { ref: sha256Hex(bytes), mime: meta.mime, size: bytes.byteLength, ...(meta.name ? { name: meta.name } : {}) };
      },
    }),
  };
}

describe("tts directives", () => {
  it("removes [[tts]] tags and [[tts:text]] blocks; keeps the spoken text, the choices and other brackets", () => {
    const r = parseTtsReply("Here you go. [[tts:provider=openai voice=nova speed=1.25]][[tts:text]]The weather is fine.[[/tts:text]] See [1] and [[reply_to_current]].");
    assert.equal(r.visible, "Here you go.  See [1] and [[reply_to_current]].");
    assert.equal(r.spoken, "The weather is fine.");
    assert.equal(r.tagged, true);
    assert.deepEqual(r.overrides, { provider: "openai", voice: "nova", speed: 1.25 });
    assert.deepEqual(parseTtsReply("no directives [here]"), { visible: "no directives [here]", tagged: false, overrides: {}, ignored: [] });
    const tagOnly = parseTtsReply("[[ TTS ]]Hello there");
    assert.deepEqual({ visible: tagOnly.visible, tagged: tagOnly.tagged, spoken: tagOnly.spoken }, { visible: "Hello there", tagged: true, spoken: undefined });
    const bad = parseTtsReply("x [[tts:provider=edge voice=a/b pitch=3]]");
    assert.deepEqual(bad.overrides, {});
    assert.deepEqual(bad.ignored, ["provider=edge", "voice=a/b", "pitch=3"]);
    // an unclosed spoken block hides (and speaks) the rest; an unclosed tag is text
    assert.deepEqual([parseTtsReply("Hi [[tts:text]]spoken to the end").visible, parseTtsReply("Hi [[tts:text]]spoken to the end").spoken], ["Hi ", "spoken to the end"]);
    assert.equal(parseTtsReply("a [[tts:voice=nova").visible, "a [[tts:voice=nova");
    assert.equal(parseTtsReply("[[ttsx]] [[tts\nvoice=a]]").visible, "[[ttsx]] [[tts\nvoice=a]]");
  });

  it("streams exactly the visible text, however the reply is cut into deltas", () => {
    const reply = "Sure! [[tts:voice=nova]]Here it is [x]. [[tts:text]]Spoken [[tts:model=tts-1-hd]]part[[/tts:text]] Written part. [[ tts ]] end [[";
    const whole = parseTtsReply(reply);
    for (let size = 1; size <= 7; size++) {
      const f = new TtsDirectiveFilter();
      let streamed = "";
      for (let i = 0; i < reply.length; i += size) streamed += f.push(reply.slice(i, i + size));
      streamed += f.end();
      assert.equal(streamed, whole.visible, `deltas of ${size}`);
      assert.equal(f.spoken, whole.spoken);
      assert.deepEqual(f.overrides, { voice: "nova", model: "tts-1-hd" });
    }
    assert.equal(whole.visible, "Sure! Here it is [x].  Written part.  end [[");
  });

  it("run events carry no directive: deltas add up to the visible text, message_end is stripped", () => {
    const published: Array<{ subject: string; event: { kind: string; text?: string } }> = [];
    const nc = { publish: (subject: string, data: string) => void published.push({ subject, event: JSON.parse(data).event }) };
    const events = new RunEvents(nc as never, subjects(), "run-tts-1", "agent:main:main", "cause-1", log, 0);
    const text = "Hello [[tts:text]]spoken[[/tts:text]]world [[tt";
    for (const piece of ["Hello [", "[tts:te", "xt]]spo", "ken[[/tts:text]]", "world [[tt"]) events.emit({ kind: "message_delta", turn: 1, text: piece });
    events.emit({ kind: "message_end", turn: 1, text });
    events.emit({ kind: "done", text: "Hello world [[tt", turns: 1, usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } });
    const deltas = published.filter((p) => p.event.kind === "message_delta").map((p) => p.event.text).join("");
    assert.equal(deltas, "Hello world [[tt");
    assert.equal(published.find((p) => p.event.kind === "message_end")!.event.text, "Hello world [[tt");
    assert.ok(!JSON.stringify(published).includes("spoken"), "the spoken part never leaves");
  });
});

describe("speech text", () => {
  it("reads markdown as plain sentences: no code, URLs or markup; link texts kept", () => {
    const md = "# Result\n\n**Bold** and _soft_ words, see [the docs](https://x.example/a) or https://y.example.\n\n```js\nconsole.log(1)\n```\n- one\n- `two`\n\n| a | b |\n|---|---|\n| 1 | 2 |";
    assert.equal(speechText(md), "Result\nBold and soft words, see the docs or.\none\ntwo\na, b\n1, 2");
  });

  it("cuts at a sentence end within the limit, else at a word", () => {
    assert.equal(cutAtSentence("One two. Three four five. Six seven eight nine.", 30), "One two. Three four five.");
    assert.equal(cutAtSentence("short", 30), "short");
    assert.equal(cutAtSentence("word ".repeat(20).trim(), 23), "word word word word…");
  });

  it("summarizes a text above maxChars, and cuts it when the summary fails or none is asked", async () => {
    const long = "This is a sentence that goes on. ".repeat(20).trim();
    const prompts: string[] = [];
    const ok = await fitForSpeech(long, 120, async (_s, prompt) => {
      prompts.push(prompt);
      return { text: "**A short** summary.", usage: { input: 10, output: 3, cacheRead: 0, cacheWrite: 0, total: 13 } };
    }, log);
    assert.deepEqual({ text: ok.text, how: ok.how, total: ok.usage.total }, { text: "A short summary.", how: "summarized", total: 13 });
    assert.match(prompts[0]!, /at most 120 characters/);
    const failed = await fitForSpeech(long, 120, async () => { throw new LurkError("PROVIDER_ERROR", "down"); }, log);
    assert.equal(failed.how, "cut");
    assert.ok(failed.text.length <= 120 && failed.text.endsWith("on."), failed.text);
    assert.equal((await fitForSpeech(long, 120, undefined, log)).how, "cut");
    assert.equal((await fitForSpeech("tiny", 120, undefined, log)).how, "as is");
  });
});

describe("tts config", () => {
  it("is off by default, with OpenAI tts-1/alloy, 1500 characters and summaries", () => {
    const tts = config({}).tts;
    assert.deepEqual({ auto: tts.auto, provider: tts.provider, maxChars: tts.maxChars, summarize: tts.summarize, model: tts.openai.model, voice: tts.openai.voice, format: tts.openai.format },
      { auto: "off", provider: "openai", maxChars: 1500, summarize: true, model: "tts-1", voice: "alloy", format: "auto" });
    assert.deepEqual(ttsPromptLines(tts, "off", true), [], "no prompt section when off");
  });

  it("takes the ElevenLabs key from ELEVENLABS_API_KEY (or XI_API_KEY) and redacts it", () => {
    const cfg = config({ tts: { provider: "elevenlabs" } }, { ELEVENLABS_API_KEY: "el-secret-abcdef123" });
    assert.equal(cfg.tts.elevenlabs.apiKey, "el-secret-abcdef123");
    assert.ok(configSecrets(cfg).includes("el-secret-abcdef123"));
    assert.equal(config({}, { XI_API_KEY: "xi-secret-abcdef123" }).tts.elevenlabs.apiKey, "xi-secret-abcdef123");
  });

  it("refuses bad settings with messages that say what to use", () => {
    const refused = (tts: Record<string, unknown>) => {
      try {
        config({ tts });
      } catch (err) {
        assert.equal((err as LurkError).code, "CONFIG_INVALID");
        return (err as Error).message;
      }
      assert.fail(`accepted ${JSON.stringify(tts)}`);
    };
    assert.match(refused({ auto: "sometimes" }), /tts\.auto: use one of off, always, inbound, tagged/);
    assert.match(refused({ provider: "edge" }), /tts\.provider: "edge" is not supported: Microsoft's Edge TTS has no official API; use "openai"/);
    assert.match(refused({ provider: "polly" }), /tts\.provider: "polly" is not a speech provider; use "openai" or "elevenlabs"/);
    assert.match(refused({ maxChars: 50 }), /tts\.maxChars: .*100/);
    assert.match(refused({ openai: { voice: "no spaces please" } }), /tts\.openai\.voice: a voice name or id/);
    assert.match(refused({ openai: { format: "ogg" } }), /tts\.openai\.format: use auto or one of mp3, opus, aac, flac, wav/);
    assert.match(refused({ elevenlabs: { format: "pcm_16000" } }), /tts\.elevenlabs\.format: use auto or an MP3 or Opus format .*raw PCM/);
  });
});

describe("speech through the OpenAI SDK (fake /v1/audio/speech)", () => {
  let fake: FakeOpenAIServer;
  before(async () => {
    fake = await FakeOpenAIServer.start();
  });
  after(() => fake?.close());
  beforeEach(() => {
    fake.reset();
    fake.speechStatus = () => undefined;
  });

  const speakerFor = (file: Record<string, unknown>, media = memoryMedia()) => {
    const cfg = config({ providers: { openai: { baseUrl: fake.baseUrl, apiKey: "sk-default-0000", profiles: [{ id: "voice", apiKey: "sk-voice-1111" }, { id: "bearer", token: "tok-2222-bearer" }] } }, ...file });
    return { speaker: new Speaker(cfg.tts, new ProviderRegistry(cfg), media.store, log), media };
  };
  const speak = (s: Speaker, opts: Partial<SpeakOptions> = {}) => s.speak({ text: "Hello there.", signal: never, ...opts });

  it("sends model, voice, input and format (OGG/Opus for Telegram, MP3 elsewhere) with the profile's key; stores the audio", async () => {
    const { speaker, media } = speakerFor({ tts: { openai: { profile: "voice", speed: 1.1, instructions: "cheerful" } } });
    const voiceNote = await speak(speaker, { channel: "telegram" });
    const file = await speak(speaker, { channel: "web", voice: "nova", model: "gpt-4o-mini-tts" });
    const [a, b] = fake.speechRequests;
    assert.deepEqual({ model: a!.model, voice: a!.voice, input: a!.input, format: a!.responseFormat, speed: a!.speed, instructions: a!.instructions, auth: a!.headers.authorization },
      { model: "tts-1", voice: "alloy", input: "Hello there.", format: "opus", speed: 1.1, instructions: "cheerful", auth: "Bearer sk-voice-1111" });
    assert.deepEqual({ model: b!.model, voice: b!.voice, format: b!.responseFormat }, { model: "gpt-4o-mini-tts", voice: "nova", format: "mp3" });
    assert.deepEqual(voiceNote.attachment, { kind: "audio", mime: "audio/ogg", name: "voice.ogg", size: media.stored[0]!.bytes.length, ref: sha256Hex(media.stored[0]!.bytes) });
    assert.deepEqual(media.stored[0]!.bytes, fakeSpeech({ model: "tts-1", voice: "alloy", responseFormat: "opus", input: "Hello there." }));
    assert.deepEqual({ mime: file.attachment.mime, name: file.attachment.name, provider: file.provider, voice: file.voice }, { mime: "audio/mpeg", name: "voice.mp3", provider: "openai", voice: "nova" });
  });

  it("uses the first profile by default and a token profile as a bearer; a configured format wins", async () => {
    await speak(speakerFor({}).speaker);
    await speak(speakerFor({ tts: { openai: { profile: "bearer", format: "flac" } } }).speaker, { channel: "telegram" });
    assert.deepEqual(fake.speechRequests.map((r) => [r.headers.authorization, r.responseFormat]), [["Bearer sk-default-0000", "mp3"], ["Bearer tok-2222-bearer", "flac"]]);
  });

  it("classifies failures: 401 auth, 429 rate limit, 500 retryable; an unknown profile or no credentials say what to set", async () => {
    const { speaker } = speakerFor({});
    for (const [status, code, retryable] of [[401, "PROVIDER_AUTH", false], [429, "PROVIDER_RATE_LIMIT", true], [500, "PROVIDER_ERROR", true]] as const) {
      fake.speechStatus = () => status;
      await assert.rejects(speak(speaker), (err: LurkError) => err.code === code && err.retryable === retryable && /^openai: /.test(err.message) && !err.message.includes("sk-default"));
    }
    await assert.rejects(speak(speakerFor({ tts: { openai: { profile: "nope" } } }).speaker), /tts\.openai\.profile "nope" is not an auth profile of providers\.openai \(default, voice, bearer\)/);
    const bare = config({});
    await assert.rejects(new Speaker(bare.tts, new ProviderRegistry(bare), memoryMedia().store, log).speak({ text: "hi", signal: never }),
      (err: LurkError) => err.code === "PROVIDER_AUTH" && /set OPENAI_API_KEY/.test(err.message));
  });

  it("refuses audio above media.maxFileMb", async () => {
    const { speaker } = speakerFor({}, memoryMedia(10));
    await assert.rejects(speak(speaker), (err: LurkError) => err.code === "LIMIT_EXCEEDED" && /media\.maxFileMb/.test(err.message));
  });
});

describe("speech through ElevenLabs (fake server, fetch)", () => {
  let fake: FakeElevenLabsServer;
  before(async () => {
    fake = await FakeElevenLabsServer.start();
  });
  after(() => fake?.close());
  beforeEach(() => void (fake.requests.length = 0));

  const speakerFor = (tts: Record<string, unknown>, env: Record<string, string> = { ELEVENLABS_API_KEY: fake.apiKey }, media = memoryMedia()) => {
    const cfg = config({ tts: { provider: "elevenlabs", ...tts, elevenlabs: { baseUrl: fake.url, ...(tts.elevenlabs as object | undefined) } } }, env);
    return { speaker: new Speaker(cfg.tts, new ProviderRegistry(cfg), media.store, log), media };
  };

  it("posts to /v1/text-to-speech/<voice> with xi-api-key, model_id, settings and the output format", async () => {
    const { speaker, media } = speakerFor({ elevenlabs: { languageCode: "en", voiceSettings: { stability: 0.4, similarityBoost: 0.8, speed: 1.1 } } });
    const note = await speaker.speak({ text: "Hi from ElevenLabs.", channel: "telegram", signal: never });
    await speaker.speak({ text: "An MP3 this time.", channel: "slack", voice: "pNInz6obpgDQGcFmaJgB", model: "eleven_turbo_v2_5", signal: never });
    const [a, b] = fake.requests;
    assert.deepEqual({ voice: a!.voiceId, format: a!.outputFormat, key: a!.headers["xi-api-key"], body: a!.body },
      { voice: "21m00Tcm4TlvDq8ikWAM", format: "opus_48000_64", key: fake.apiKey, body: { text: "Hi from ElevenLabs.", model_id: "eleven_multilingual_v2", language_code: "en", voice_settings: { stability: 0.4, similarity_boost: 0.8, speed: 1.1 } } });
    assert.deepEqual({ voice: b!.voiceId, format: b!.outputFormat, model: b!.body.model_id }, { voice: "pNInz6obpgDQGcFmaJgB", format: "mp3_44100_128", model: "eleven_turbo_v2_5" });
    assert.deepEqual({ mime: note.attachment.mime, name: note.attachment.name, provider: note.provider }, { mime: "audio/ogg", name: "voice.ogg", provider: "elevenlabs" });
    assert.deepEqual(media.stored[0]!.bytes, fakeElevenLabsAudio("21m00Tcm4TlvDq8ikWAM", "opus_48000_64", "Hi from ElevenLabs."));
    assert.equal(media.stored[1]!.mime, "audio/mpeg");
  });

  it("classifies failures with ElevenLabs' message; a missing key says what to set; the key never shows", async () => {
    const { speaker } = speakerFor({});
    const speak = (voice?: string) => speaker.speak({ text: "x", signal: never, ...(voice ? { voice } : {}) });
    const cases: Array<[() => void, string, RegExp]> = [
      [() => fake.failNext(429), "PROVIDER_RATE_LIMIT", /too_many_concurrent_requests/],
      [() => fake.failNext(401, "quota_exceeded"), "PROVIDER_BILLING", /quota_exceeded/],
      [() => fake.failNext(503), "PROVIDER_OVERLOADED", /HTTP 503/],
      [() => undefined, "PROVIDER_ERROR", /voice_not_found: A voice with the voice_id unknownVoice was not found/],
    ];
    for (const [arrange, code, message] of cases) {
      arrange();
      await assert.rejects(speak(code === "PROVIDER_ERROR" ? "unknownVoice" : undefined), (err: LurkError) => err.code === code && message.test(err.message) && !err.message.includes(fake.apiKey));
    }
    const wrongKey = speakerFor({}, { ELEVENLABS_API_KEY: "el-wrong-key-999" }).speaker;
    await assert.rejects(wrongKey.speak({ text: "x", signal: never }), (err: LurkError) => err.code === "PROVIDER_AUTH" && /invalid_api_key/.test(err.message) && !err.message.includes("el-wrong-key"));
    await assert.rejects(speakerFor({}, {}).speaker.speak({ text: "x", signal: never }), (err: LurkError) => err.code === "PROVIDER_AUTH" && /ELEVENLABS_API_KEY/.test(err.message));
  });
});

describe("when a reply is spoken", () => {
  const spoken: SpeakOptions[] = [];
  let failWith: LurkError | undefined;
  const speaker = {
    speak: async (opts: SpeakOptions) => {
      spoken.push(opts);
      if (failWith) throw failWith;
      return { attachment: { kind: "audio" as const, mime: "audio/mpeg", name: "voice.mp3", size: 3, ref: "a".repeat(64) }, provider: opts.provider ?? "openai" as const, voice: opts.voice ?? "alloy", model: "tts-1" };
    },
  };
  const replies = (tts: Record<string, unknown> = {}) => new VoiceReplies(config({ tts }).tts, speaker, log);
  const run = (over: { tts?: RunRequest["options"]["tts"]; audio?: boolean; deliver?: boolean } = {}): RunRequest => ({
    type: "lurk.run.request.v1", id: "r", ts: 0, runId: "run-1", sessionKey: "agent:main:main", agentId: "main", sessionType: "main", trigger: "message",
    inputs: [{ kind: "user", text: "hi", attachments: over.audio ? [{ kind: "audio", mime: "audio/ogg", ref: "b".repeat(64) }] : [] }],
    origin: { channel: "telegram", conversation: "c1", messageIds: ["m1"] }, deliver: over.deliver ?? true, options: over.tts ? { tts: over.tts } : {},
  });
  beforeEach(() => {
    spoken.length = 0;
    failWith = undefined;
  });

  it("always, inbound after audio, tagged with a directive; never when off, undelivered or silent", async () => {
    const r = replies();
    assert.equal((await r.reply(run(), "hello", never)).attachments.length, 0, "off by default");
    assert.equal((await r.reply(run({ tts: "always" }), "hello", never)).attachments.length, 1);
    assert.equal((await r.reply(run({ tts: "inbound" }), "hello", never)).attachments.length, 0, "no audio in");
    assert.equal((await r.reply(run({ tts: "inbound", audio: true }), "hello", never)).attachments.length, 1);
    assert.equal((await r.reply(run({ tts: "tagged" }), "hello", never)).attachments.length, 0, "untagged");
    const tagged = await r.reply(run({ tts: "tagged" }), "hello [[tts]]", never);
    assert.deepEqual({ text: tagged.text, n: tagged.attachments.length }, { text: "hello", n: 1 });
    assert.equal((await replies({ auto: "always" }).reply(run(), "hello", never)).attachments.length, 1, "tts.auto");
    assert.equal((await replies({ auto: "always" }).reply(run({ tts: "off" }), "hello", never)).attachments.length, 0, "the session's /tts off wins");
    assert.equal((await r.reply(run({ tts: "always", deliver: false }), "hello", never)).attachments.length, 0);
    assert.equal((await r.reply(run({ tts: "always" }), "NO_REPLY", never)).attachments.length, 0);
    assert.deepEqual(spoken.map((s) => [s.text, s.channel]), [["hello", "telegram"], ["hello", "telegram"], ["hello", "telegram"], ["hello", "telegram"]]);
  });

  it("speaks [[tts:text]] and the directive's voice; strips directives even when off; honours modelOverrides", async () => {
    const out = await replies().reply(run({ tts: "always" }), "Written **answer**. [[tts:provider=elevenlabs voice=nova]][[tts:text]]Spoken answer.[[/tts:text]]", never);
    assert.equal(out.text, "Written **answer**.");
    assert.deepEqual({ text: spoken[0]!.text, provider: spoken[0]!.provider, voice: spoken[0]!.voice }, { text: "Spoken answer.", provider: "elevenlabs", voice: "nova" });
    assert.equal((await replies().reply(run(), "Just text [[tts:text]]hidden[[/tts:text]]", never)).text, "Just text");
    await replies({ modelOverrides: false }).reply(run({ tts: "always" }), "Hi [[tts:voice=onyx]]", never);
    assert.equal(spoken[1]!.voice, undefined, "overrides ignored");
  });

  it("a failed synthesis keeps the text reply and says why", async () => {
    failWith = new LurkError("PROVIDER_RATE_LIMIT", "openai: slow down");
    const out = await replies().reply(run({ tts: "always" }), "Still here.", never);
    assert.deepEqual({ text: out.text, attachments: out.attachments, voice: out.voice }, { text: "Still here.", attachments: [], voice: { error: "PROVIDER_RATE_LIMIT: openai: slow down" } });
  });
});
