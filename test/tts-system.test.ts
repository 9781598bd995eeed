/**
 * Voice replies through the whole system: a real nats-server, every actor as a process, the fake
 * LLM (whose /v1/audio/speech the OpenAI SDK calls), a fake ElevenLabs server, the terminal
 * channel's client and the Telegram channel against its fake Bot API.
 * Off by default; `/tts on|inbound|tagged` (router) sets a session's mode; the agent-runner
 * strips the model's directives from what users see (streamed deltas included), speaks the
 * [[tts:text]] part or the reply, summarizes a reply above tts.maxChars (or cuts it when the
 * summary fails), stores the audio and attaches it to the reply; a failed synthesis still
 * delivers the text; the tts tool gets its audio from the agent-runner; Telegram gets a voice note;
 * OpenAI's speech rate-limited hands the reply to ElevenLabs (tts.fallbacks) and cools the key's
 * speech down in the runner's LMDB, which the next reply honours while chat goes on with the key.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { after, before, beforeEach, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { outboundMessageSchema, runEventSchema, safeParseJson, subjects, type OutboundMessage } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { MEDIA_DEFAULTS } from "../shared/runtime/config-media.js";
import { MediaStore } from "../shared/runtime/media.js";
import { fakeElevenLabsAudio, FakeElevenLabsServer } from "./fakes/elevenlabs-server.js";
import { fakeSpeech, messageText } from "./fakes/openai-server.js";
import { FakeTelegramServer } from "./fakes/telegram-server.js";
import { waitFor } from "./harness/actors.js";
import { runCli } from "./harness/cli.js";
import { CliClient, TestSystem } from "./harness/system.js";

const S = subjects();
const KEY = "sk-test-0123456789abcdef";
const MAX_CHARS = 200;

describe("voice replies through the whole system", () => {
  let system: TestSystem;
  let telegram: FakeTelegramServer;
  let eleven: FakeElevenLabsServer;
  let channelNc: NatsConnection;
  let media: MediaStore;
  let cli: CliClient;

  before(async () => {
    telegram = await FakeTelegramServer.start();
    eleven = await FakeElevenLabsServer.start();
    system = await TestSystem.start({
      config: {
        agents: [{ id: "main", default: true, toolProfile: "full" }],
        routing: { dm: { policy: "open" } },
        tts: { maxChars: MAX_CHARS, fallbacks: ["elevenlabs"], elevenlabs: { baseUrl: eleven.url } },
        channels: { telegram: { enabled: true, botToken: telegram.token, apiRoot: telegram.url, pollTimeoutSec: 1, streaming: "off" } },
      },
      env: { ELEVENLABS_API_KEY: eleven.apiKey },
    });
    await system.startActor("channel-telegram");
    channelNc = await system.nats.connect("channel-telegram");
    media = new MediaStore(channelNc, { ...MEDIA_DEFAULTS });
    cli = await CliClient.connect(system.nats);
  });
  after(async () => {
    await cli?.close();
    await channelNc?.close();
    await system?.actors.get("channel-telegram")?.stop();
    await system?.stop();
    await telegram?.close();
    await eleven?.close();
  });
  beforeEach(() => {
    system.fake.reset();
    system.fake.speechStatus = () => undefined;
    eleven.requests.length = 0;
  });

  const systemPrompt = (i = 0) => messageText(system.fake.requests[i]!.body.messages[0]);
  const bytesOf = async (ref: string | undefined) => Buffer.from((await media.get(ref!)).bytes);
  const setMode = async (session: string, mode: string) => {
    const r = await cli.send(`/tts ${mode}`, { sessionName: session });
    assert.match(r.text, new RegExp(`tts: ${mode === "on" ? "always" : mode}`));
  };

  it("is off by default: text only, no speech call, no Voice section in the prompt", async () => {
    const reply = await cli.send("hello", { sessionName: "plain" });
    assert.equal(reply.text, "echo: hello");
    assert.deepEqual(reply.attachments, []);
    assert.equal(system.fake.speechRequests.length, 0);
    assert.doesNotMatch(systemPrompt(), /## Voice \(TTS\)/);
    assert.match(systemPrompt(), /- tts: Send a voice message/, "the tts tool is listed");
    assert.match((await cli.send("/status", { sessionName: "plain" })).text, /tts: off \(default\)/);
  });

  it("/tts on: every reply of the session carries an MP3 voice message of its text, from the OpenAI speech API", async () => {
    await setMode("loud", "on");
    assert.match((await cli.send("/tts", { sessionName: "loud" })).text, /tts: always/, "bare /tts only shows it");
    const reply = await cli.send("tell me", { sessionName: "loud" });
    assert.equal(reply.text, "echo: tell me");
    assert.equal(reply.attachments.length, 1);
    const [audio] = reply.attachments;
    assert.deepEqual({ kind: audio!.kind, mime: audio!.mime, name: audio!.name }, { kind: "audio", mime: "audio/mpeg", name: "voice.mp3" });
    const [sent] = system.fake.speechRequests;
    assert.deepEqual({ model: sent!.model, voice: sent!.voice, input: sent!.input, format: sent!.responseFormat, auth: sent!.headers.authorization },
      { model: "tts-1", voice: "alloy", input: "echo: tell me", format: "mp3", auth: `Bearer ${KEY}` });
    assert.deepEqual(await bytesOf(audio!.ref), fakeSpeech({ model: "tts-1", voice: "alloy", responseFormat: "mp3", input: "echo: tell me" }), "the stored audio is the API's");
    assert.match(systemPrompt(), /## Voice \(TTS\)\nYour replies in this conversation are also sent as voice messages/);
  });

  it("/tts inbound: a reply to a voice note is spoken, a reply to text is not", async () => {
    await setMode("ears", "inbound");
    system.fake.enqueue({ kind: "text", text: "Text back." }, { kind: "text", text: "Heard you." });
    assert.deepEqual((await cli.send("just text", { sessionName: "ears" })).attachments, []);
    const note = Buffer.concat([Buffer.from("OggS"), randomBytes(500)]);
    const { ref } = await media.put(note, { mime: "audio/ogg", name: "note.ogg" });
    const reply = await cli.send("", { sessionName: "ears", attachments: [{ kind: "audio", mime: "audio/ogg", name: "note.ogg", size: note.length, ref }] });
    assert.equal(reply.text, "Heard you.");
    assert.equal(reply.attachments[0]?.mime, "audio/mpeg");
    assert.deepEqual(system.fake.speechRequests.map((r) => r.input), ["Heard you."]);
  });

  it("/tts tagged: only a reply with a directive is spoken; directives never reach the user; [[tts:text]] and the provider choice are used", async () => {
    await setMode("tags", "tagged");
    system.fake.enqueue({ kind: "text", text: "Plain answer." });
    assert.deepEqual((await cli.send("weather?", { sessionName: "tags" })).attachments, []);
    const raw = "Here is the forecast. [[tts:provider=elevenlabs voice=pNInz6obpgDQGcFmaJgB]][[tts:text]]Sunny and warm today.[[/tts:text]]";
    system.fake.enqueue({ kind: "text", text: raw, chunks: 9 });
    const seen: string[] = [];
    const sub = cli.nc.subscribe(S.runEventAll, { callback: (_e, m) => { const ev = runEventSchema.safeParse(safeParseJson(m.data)); if (ev.success) seen.push(JSON.stringify(ev.data.event)); } });
    const reply = await cli.send("and tomorrow?", { sessionName: "tags" });
    await waitFor(() => seen.some((e) => e.includes("\"done\"")) || undefined, 5_000, "the done event");
    sub.unsubscribe();
    assert.equal(reply.text, "Here is the forecast.");
    const deltas = seen.map((e) => JSON.parse(e) as { kind: string; text?: string }).filter((e) => e.kind === "message_delta").map((e) => e.text).join("");
    assert.equal(deltas.trim(), "Here is the forecast.", "the streamed text has no directive");
    assert.ok(!seen.some((e) => e.includes("[[") || e.includes("Sunny")), "no event carries a directive or the spoken text");
    assert.equal(system.fake.speechRequests.length, 0, "not OpenAI");
    const [req] = eleven.requests;
    assert.deepEqual({ voice: req!.voiceId, format: req!.outputFormat, text: req!.body.text, key: req!.headers["xi-api-key"] },
      { voice: "pNInz6obpgDQGcFmaJgB", format: "mp3_44100_128", text: "Sunny and warm today.", key: eleven.apiKey });
    assert.deepEqual(await bytesOf(reply.attachments[0]!.ref), fakeElevenLabsAudio("pNInz6obpgDQGcFmaJgB", "mp3_44100_128", "Sunny and warm today."));
    assert.match(systemPrompt(1), /\[\[tts\]\] in the reply/);
  });

  it("a reply above tts.maxChars is spoken as a summary (one model call); when that call fails it is cut at a sentence end", async () => {
    await setMode("long", "on");
    const long = Array.from({ length: 12 }, (_, i) => `Point number ${i + 1} is explained here in a few words.`).join(" ");
    system.fake.enqueue({ kind: "text", text: long }, { kind: "text", text: "In short: twelve points, all fine." });
    const first = await cli.send("explain", { sessionName: "long" });
    assert.equal(first.text, long, "the written reply is whole");
    assert.equal(system.fake.requests.length, 2, "the run's call and the summary call");
    assert.match(messageText(system.fake.requests[1]!.body.messages.at(-1)), new RegExp(`at most ${MAX_CHARS} characters[^]*Point number 12`));
    assert.deepEqual(system.fake.speechRequests.map((r) => r.input), ["In short: twelve points, all fine."]);
    system.fake.reset();
    system.fake.enqueue({ kind: "text", text: long }, { kind: "error", status: 400, message: "no summaries today" });
    await cli.send("again", { sessionName: "long" });
    const cut = system.fake.speechRequests[0]!.input;
    assert.ok(cut.length <= MAX_CHARS && cut.endsWith("words.") && long.startsWith(cut), cut);
  });

  it("a failed synthesis (every provider) still delivers the text reply; the run's end marker says why", async () => {
    await setMode("broken", "on");
    // bad requests: no cooldown (a 5xx or 429 would cool the key down for the tests after this one)
    system.fake.speechStatus = () => 400;
    eleven.failNext(400, "invalid_request");
    const reply = await cli.send("are you there?", { sessionName: "broken" });
    assert.equal(reply.text, "echo: are you there?");
    assert.deepEqual(reply.attachments, []);
    assert.ok(system.fake.speechRequests.length >= 1);
    const runner = await system.nats.connect("agent-runner");
    try {
      const { records } = await new BusClient(runner).call("sessions", "history", { sessionKey: "agent:main:cli:dm:broken", limit: 50 });
      const marker = records.findLast((r) => r.kind === "run_marker" && r.runStatus === "done");
      assert.match(String((marker?.meta?.voice as { error?: string } | undefined)?.error), /^PROVIDER_ERROR: elevenlabs: HTTP 400 invalid_request.*\(before: openai\/default: PROVIDER_ERROR\)$/);
    } finally {
      await runner.close();
    }
  });

  it("the tts tool: the agent-runner synthesizes (it holds the keys), the tools actor sends the voice message", async () => {
    const notices: OutboundMessage[] = [];
    const sub = cli.nc.subscribe(S.outbound("cli", "main"), { callback: (_e, m) => { const out = outboundMessageSchema.parse(safeParseJson(m.data)); if (out.kind === "notice") notices.push(out); } });
    system.fake.enqueue({ kind: "tool_calls", calls: [{ name: "tts", arguments: { text: "Reading it **aloud**.", voice: "nova" } }] }, { kind: "text", text: "Done." });
    const reply = await cli.send("read it to me", { sessionName: "tool" });
    assert.equal(reply.text, "Done.");
    assert.deepEqual(reply.attachments, [], "the reply itself is text (tts off)");
    const notice = await waitFor(() => notices.find((n) => n.attachments.length > 0), 5_000, "the voice message");
    sub.unsubscribe();
    assert.deepEqual({ text: notice.text, kind: notice.attachments[0]!.kind, mime: notice.attachments[0]!.mime }, { text: "", kind: "audio", mime: "audio/mpeg" });
    assert.deepEqual(system.fake.speechRequests.map((r) => [r.input, r.voice]), [["Reading it aloud.", "nova"]]);
    assert.deepEqual(await bytesOf(notice.attachments[0]!.ref), fakeSpeech({ model: "tts-1", voice: "nova", responseFormat: "mp3", input: "Reading it aloud." }));
    assert.match(messageText(system.fake.requests[1]!.body.messages.at(-1)), /sent a voice message \(voice\.mp3, [^)]*openai voice nova\) to cli\/main/);
  });

  it("the terminal: `lurkbot send --json` saves the voice reply under $LURKBOT_HOME/downloads", async () => {
    const env = system.nats.env(system.nats.passwordEnv("cli"));
    const on = await runCli(["send", "/tts on", "--session", "term"], env);
    assert.equal(on.code, 0, on.stderr);
    const r = await runCli(["send", "say hi", "--session", "term", "--json", "--timeout", "30"], env);
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { reply: string; files?: Array<{ name: string; mime: string; path?: string }> };
    assert.equal(out.reply, "echo: say hi");
    const [file] = out.files ?? [];
    assert.deepEqual({ name: file?.name, mime: file?.mime }, { name: "voice.mp3", mime: "audio/mpeg" });
    assert.ok(file!.path!.startsWith(system.nats.home), file!.path);
    assert.deepEqual(readFileSync(file!.path!), fakeSpeech({ model: "tts-1", voice: "alloy", responseFormat: "mp3", input: "echo: say hi" }));
  });

  it("Telegram: a voice note gets the text reply, then an OGG/Opus voice note through sendVoice", async () => {
    const chatId = 2001;
    telegram.userMessage({ chatId, text: "/tts inbound" });
    await waitFor(() => telegram.sent.find((m) => m.chatId === chatId && /tts: inbound/.test(m.text)), 20_000, "the settings reply");
    const note = Buffer.concat([Buffer.from("OggS"), randomBytes(300)]);
    const fileId = telegram.addFile(note, { mime: "audio/ogg" });
    system.fake.enqueue({ kind: "text", text: "Got your voice note." });
    telegram.userMessage({ chatId, voice: fileId });
    const upload = await waitFor(() => telegram.uploads.find((u) => u.chatId === chatId), 20_000, "the voice upload");
    assert.deepEqual({ method: upload.method, name: upload.name }, { method: "sendVoice", name: "voice.ogg" });
    assert.deepEqual(upload.bytes, fakeSpeech({ model: "tts-1", voice: "alloy", responseFormat: "opus", input: "Got your voice note." }));
    assert.equal(system.fake.speechRequests.at(-1)!.responseFormat, "opus");
    const calls = telegram.calls.filter((c) => Number(c.body.chat_id) === chatId).map((c) => c.method);
    assert.deepEqual(calls.slice(-2), ["sendMessage", "sendVoice"], "the text first, then the voice note");
    assert.ok(telegram.sent.some((m) => m.chatId === chatId && m.text === "Got your voice note."));
  });

  // last: it leaves the OpenAI key's speech cooling down in the agent-runner's LMDB
  it("OpenAI's speech rate-limited: ElevenLabs (tts.fallbacks) speaks, the key's speech cools down and the next reply skips it; chat on the same key goes on", async () => {
    await setMode("fallback", "on");
    system.fake.speechStatus = () => 429;
    const first = await cli.send("first", { sessionName: "fallback" });
    assert.equal(first.text, "echo: first");
    assert.equal(system.fake.speechRequests.length, 1, "one OpenAI speech call (no SDK retry)");
    assert.deepEqual(eleven.requests.map((r) => [r.body.text, r.outputFormat]), [["echo: first", "mp3_44100_128"]]);
    assert.deepEqual(await bytesOf(first.attachments[0]?.ref), fakeElevenLabsAudio("21m00Tcm4TlvDq8ikWAM", "mp3_44100_128", "echo: first"));
    const runner = await system.nats.connect("agent-runner");
    try {
      const { records } = await new BusClient(runner).call("sessions", "history", { sessionKey: "agent:main:cli:dm:fallback", limit: 50 });
      const marker = records.findLast((r) => r.kind === "run_marker" && r.runStatus === "done");
      assert.deepEqual(marker?.meta?.voice, { provider: "elevenlabs", voice: "21m00Tcm4TlvDq8ikWAM", chars: 11, shortened: "as is", failed: ["openai/default PROVIDER_RATE_LIMIT"] });
    } finally {
      await runner.close();
    }
    system.fake.reset();
    system.fake.speechStatus = () => undefined;
    eleven.requests.length = 0;
    const second = await cli.send("second", { sessionName: "fallback" });
    assert.equal(second.text, "echo: second", "the chat model still uses the key");
    assert.equal(system.fake.requests.length, 1);
    assert.equal(system.fake.speechRequests.length, 0, "the cooling key is not asked for speech");
    assert.deepEqual(eleven.requests.map((r) => r.body.text), ["echo: second"]);
  });
});
