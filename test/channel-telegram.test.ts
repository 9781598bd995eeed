/**
 * The Telegram channel: update mapping (pure), and end to end with the whole system, the fake
 * LLM and a local Bot API server (test/fakes/telegram-server.ts) that grammy's Api talks to.
 * Files: a user's photo/document is downloaded into the media store (real object store) before
 * the message is stored; replies upload their files as multipart photo/document messages.
 * Webhook mode: the channel registers its webhook with the fake and the test POSTs updates to
 * it as Telegram does (secret header, redeliveries); switching back to polling deletes it.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { randomBytes } from "node:crypto";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { envelope, inboundMessageSchema, MEDIA_BUCKET, runIdFor, STREAMS, subjects, type InboundMessage } from "../shared/contract/index.js";
import { ensureStreams } from "../shared/runtime/streams.js";
import { mediaConfigSchema } from "../shared/runtime/config-media.js";
import { MediaStore, sha256Hex } from "../shared/runtime/media.js";
import { BusClient } from "../shared/runtime/client.js";
import { textAfterBlocks } from "../shared/runtime/channel/blocks.js";
import { chunkText, finishedBlocksEnd, type ChunkMode } from "../shared/runtime/channel/chunk.js";
import { conversationOf, filesOf, messageToInbound, normalizeCommand, targetOf, type TgMessage } from "../services/channel-telegram/inbound.js";
import { FakeTelegramServer } from "./fakes/telegram-server.js";
import { startActorProcess, waitFor } from "./harness/actors.js";
import { runCli } from "./harness/cli.js";
import { freePort } from "./harness/nats.js";
import { TestSystem } from "./harness/system.js";

const BOT = { id: 7000001, username: "LurkTestBot" };
const S = subjects();

const msg = (over: Partial<TgMessage>): TgMessage => ({
  message_id: 10, chat: { id: 555, type: "private" }, from: { id: 555, first_name: "Ann", last_name: "Lee" }, text: "hi", ...over,
});

describe("telegram update mapping", () => {
  it("maps private chats, groups, mentions, replies, topics and commands", () => {
    const dm = messageToInbound(msg({}), BOT)!;
    assert.deepEqual({ id: dm.id, peer: dm.peer, mentioned: dm.mentioned, sender: dm.sender }, { id: "555:10", peer: { kind: "dm", id: "555" }, mentioned: true, sender: { id: "555", name: "Ann Lee" } });

    const group = { id: -100123, type: "supergroup" as const };
    const plain = messageToInbound(msg({ chat: group, text: "lunch?" }), BOT)!;
    assert.equal(plain.mentioned, false, "a group message without a mention");
    assert.deepEqual(plain.peer, { kind: "group", id: "-100123" });

    const mention = messageToInbound(msg({ chat: group, text: "hey @lurktestbot look", entities: [{ type: "mention", offset: 4, length: 12 }] }), BOT)!;
    assert.equal(mention.mentioned, true, "@username (case-insensitive)");
    const other = messageToInbound(msg({ chat: group, text: "hey @someone", entities: [{ type: "mention", offset: 4, length: 8 }] }), BOT)!;
    assert.equal(other.mentioned, false, "another bot's mention");
    const reply = messageToInbound(msg({ chat: group, text: "and?", reply_to_message: { message_id: 9, from: { id: BOT.id, is_bot: true } } }), BOT)!;
    assert.equal(reply.mentioned, true, "a reply to the bot");
    assert.equal(reply.replyToMessageId, "-100123:9");

    const topic = messageToInbound(msg({ chat: { ...group, is_forum: true }, message_thread_id: 77, is_topic_message: true, text: "/new@LurkTestBot", entities: [{ type: "bot_command", offset: 0, length: 16 }] }), BOT)!;
    assert.deepEqual(topic.peer, { kind: "group", id: "-100123", topicId: "77" });
    assert.equal(topic.text, "/new");
    assert.equal(topic.mentioned, true);
    assert.deepEqual(targetOf(topic.conversation), { chatId: -100123, threadId: 77 });
    assert.equal(normalizeCommand("/new@OtherBot", BOT), "/new@OtherBot", "another bot's command stays");

    assert.equal(messageToInbound(msg({ chat: { id: -5, type: "channel" } }), BOT), undefined, "channel posts are ignored");
    assert.equal(messageToInbound(msg({ from: { id: 9, is_bot: true } }), BOT), undefined, "bots are ignored");
    assert.equal(messageToInbound(msg({ text: undefined }), BOT), undefined, "nothing to say");
    const photoMsg = msg({ text: undefined, caption: "look", photo: [{ file_id: "small" }, { file_id: "big", file_size: 2048 }] });
    assert.equal(messageToInbound(photoMsg, BOT)!.text, "look", "the caption is the text");
    assert.deepEqual(filesOf(photoMsg), [{ fileId: "big", kind: "image", mime: "image/jpeg", size: 2048 }], "the largest photo size");
    const media = msg({
      text: undefined, document: { file_id: "d", file_name: "scan.png", file_size: 10 }, voice: { file_id: "v" },
      audio: { file_id: "a", file_name: "song.mp3", mime_type: "audio/mpeg" }, video: { file_id: "m", mime_type: "video/webm" },
    });
    assert.deepEqual(filesOf(media), [
      { fileId: "d", mime: "image/png", name: "scan.png", size: 10 },
      { fileId: "v", kind: "audio", mime: "audio/ogg" },
      { fileId: "a", kind: "audio", mime: "audio/mpeg", name: "song.mp3" },
      { fileId: "m", kind: "video", mime: "video/webm" },
    ]);
    assert.ok(messageToInbound(msg({ text: undefined, voice: { file_id: "v" } }), BOT), "a voice message alone is taken");
    assert.deepEqual(targetOf(conversationOf({ chatId: -42 })), { chatId: -42 });
    assert.throws(() => targetOf("web-1"), /not a Telegram conversation/);
  });
});

describe("block streaming helpers (kit)", () => {
  it("finds finished paragraphs outside code fences, and the reply's rest after the blocks sent", () => {
    assert.equal(finishedBlocksEnd("one paragraph still being written"), 0);
    const two = "First.\n\nSecond, being written";
    assert.equal(two.slice(0, finishedBlocksEnd(two)).trim(), "First.");
    const fenced = "Intro.\n\n```\ncode\n\nmore code\n";
    assert.equal(fenced.slice(0, finishedBlocksEnd(fenced)).trim(), "Intro.", "a blank line inside an open fence ends no block");
    const closed = `${fenced}\`\`\`\n\nAfter.`;
    assert.equal(closed.slice(0, finishedBlocksEnd(closed)).trim(), `${fenced}\`\`\``.trim());

    const full = "Para one.\n\nPara two.\n\nPara three.";
    assert.equal(textAfterBlocks(full, ["Para one."]), "Para two.\n\nPara three.");
    assert.equal(textAfterBlocks(full, ["Para one.", "Para two.", "Para three."]), "");
    assert.equal(textAfterBlocks(full, ["Let me look at that.", "Para one."]), "Para two.\n\nPara three.", "a tool turn's block is skipped");
    assert.equal(textAfterBlocks(full, []), full);
  });
});

describe("lurkbot setup and platform tokens", () => {
  it("never invents a Telegram, Discord or Slack token: it says which variable or key to set, and generates only its own secrets", async () => {
    const home = mkdtempSync(join(tmpdir(), "lurk-setup-channels-"));
    try {
      writeFileSync(join(home, "config.json"), JSON.stringify({ channels: { telegram: { enabled: true }, discord: { enabled: true }, slack: { enabled: true }, webhook: { enabled: true } } }));
      const env = { PATH: process.env.PATH ?? "/usr/bin", LURKBOT_HOME: home };
      const run = await runCli(["setup"], env);
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /telegram channel: botToken is missing: set TELEGRAM_BOT_TOKEN \(or channels\.telegram\.botToken in config\.json\); create a bot with @BotFather/);
      assert.match(run.stdout, /discord channel: botToken is missing: set DISCORD_BOT_TOKEN/);
      assert.match(run.stdout, /slack channel: botToken is missing: set SLACK_BOT_TOKEN/);
      assert.match(run.stdout, /slack channel: appToken is missing: set SLACK_APP_TOKEN/);
      assert.doesNotMatch(run.stdout, /generated the (telegram|discord|slack)/);
      assert.match(run.stdout, /generated the webhook channel's secret/, "its own secrets are still generated");
      const secretsFile = join(home, "credentials", "channels.json");
      assert.ok(existsSync(secretsFile));
      assert.deepEqual(Object.keys(JSON.parse(readFileSync(secretsFile, "utf8"))), ["webhook"], "no platform token written");

      const withToken = await runCli(["setup"], { ...env, TELEGRAM_BOT_TOKEN: "123456:from-the-environment-abcdef" });
      assert.equal(withToken.code, 0, withToken.stderr);
      assert.match(withToken.stdout, /telegram channel: botToken is set/);
      assert.doesNotMatch(withToken.stdout, /from-the-environment/, "the token is never printed");
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe("telegram channel end to end", () => {
  let system: TestSystem;
  let telegram: FakeTelegramServer;

  /** the router reads this at start: groups answer only when the bot is mentioned */
  const routing = { dm: { policy: "open" }, groups: { requireMention: true } };
  const writeConfig = (extra: Record<string, unknown> = {}, media?: Record<string, unknown>) => writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({
    channels: { telegram: { enabled: true, botToken: telegram.token, apiRoot: telegram.url, pollTimeoutSec: 1, draftIntervalMs: 200, ...extra } },
    routing,
    ...(media ? { media } : {}),
  }));
  /** stops the channel (SIGKILL with `kill`), writes its config (`media`: the media key) and starts it again */
  const restartTelegram = async (extra: Record<string, unknown> = {}, opts: { kill?: boolean; media?: Record<string, unknown> } = {}) => {
    const current = system.actors.get("channel-telegram");
    if (opts.kill) await current?.kill();
    else await current?.stop();
    writeConfig(extra, opts.media);
    await system.startActor("channel-telegram");
  };

  before(async () => {
    telegram = await FakeTelegramServer.start();
    system = await TestSystem.start({ fake: { chunkDelayMs: 60 }, config: { routing } });
    writeConfig();
    await system.startActor("channel-telegram");
  });
  after(async () => {
    await system?.actors.get("channel-telegram")?.stop();
    await system?.stop();
    await telegram?.close();
  });
  beforeEach(() => system.fake.reset());

  const replyText = (chatId: number) => [...telegram.messages.entries()].filter(([k]) => k.startsWith(`${chatId}:`)).map(([, v]) => v);

  it("answers a private message, edits its streaming draft into the reply, and confirms the update", async () => {
    system.fake.enqueue({ kind: "text", text: "Hello **Ann**, here is a longer answer that streams in several pieces.", chunks: 8 });
    const messageId = telegram.userMessage({ chatId: 1001, text: "hello there" });
    const final = await waitFor(() => telegram.sent.find((m) => m.chatId === 1001 && m.body.parse_mode === "HTML"), 20_000, "final reply");
    assert.equal(final.text, "Hello <b>Ann</b>, here is a longer answer that streams in several pieces.");
    const sends = telegram.sent.filter((m) => m.chatId === 1001 && m.method === "sendMessage");
    assert.equal(sends.length, 1, "one message: the draft became the reply");
    assert.equal(final.method, "editMessageText", "the final text replaced the draft");
    assert.equal(final.messageId, sends[0]!.messageId);
    assert.equal(replyText(1001).length, 1);
    await waitFor(() => telegram.confirmedOffset > 0 && telegram.unconfirmed === 0, 10_000, "update confirmed");
    assert.ok(messageId > 0);
  });

  it("chunks a long reply at 4096 characters", async () => {
    const paragraph = `${"word ".repeat(300).trim()}.`;
    system.fake.enqueue({ kind: "text", text: Array.from({ length: 6 }, () => paragraph).join("\n\n"), chunks: 1 });
    telegram.userMessage({ chatId: 1002, text: "write a lot" });
    await waitFor(() => replyText(1002).join("").length >= 6 * paragraph.length - 10, 20_000, "all chunks");
    const texts = replyText(1002);
    assert.ok(texts.length >= 2, `split into ${texts.length} messages`);
    assert.ok(texts.every((t) => t.length <= 4096));
  });

  it("replies inside the forum topic the message came from", async () => {
    telegram.userMessage({ chatId: -100777, chatType: "supergroup", threadId: 12, text: "@LurkTestBot status?", entities: [{ type: "mention", offset: 0, length: 12 }] });
    const reply = await waitFor(() => telegram.sent.find((m) => m.chatId === -100777 && m.method === "sendMessage"), 20_000, "topic reply");
    assert.equal(reply.body.message_thread_id, 12);
  });

  it("waits out a 429 with retry_after and delivers once", async () => {
    telegram.failNext("sendMessage", { status: 429, description: "Too Many Requests: retry after 1", retryAfter: 1 });
    system.fake.enqueue({ kind: "text", text: "after the limit", chunks: 1 });
    telegram.userMessage({ chatId: 1003, text: "are you there" });
    await waitFor(() => replyText(1003).includes("after the limit"), 20_000, "delivered after the rate limit");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(replyText(1003).length, 1, "delivered once");
  });

  it("turns an approval button press into /approve from the person who pressed it", async () => {
    telegram.buttonPress({ chatId: 1004, messageId: 1, data: "approve:appr-123", fromId: 1004 });
    const admin = await system.nats.connect("admin");
    const jsm = await jetstreamManager(admin);
    const stored = await waitFor(async () => {
      try {
        const m = await jsm.streams.getMessage(STREAMS.inbound, { last_by_subj: S.inbound("telegram") });
        const parsed = inboundMessageSchema.parse(m!.json());
        return parsed.text === "/approve appr-123" ? parsed : undefined;
      } catch {
        return undefined;
      }
    }, 10_000, "the /approve message in LURK_INBOUND");
    await admin.close();
    assert.equal(stored.sender.id, "1004");
    // The button is answered right after the inbound message is stored, so it may land a moment later.
    await waitFor(() => telegram.calls.some((c) => c.method === "answerCallbackQuery"), 10_000, "the button press answered");
  });

  it("ignores an unmentioned group message when groups require a mention, and answers a mentioned one", async () => {
    system.fake.enqueue({ kind: "text", text: "group answer", chunks: 1 });
    telegram.userMessage({ chatId: -100500, chatType: "supergroup", text: "lunch anyone?" });
    telegram.userMessage({ chatId: -100500, chatType: "supergroup", text: "@LurkTestBot hello group", entities: [{ type: "mention", offset: 0, length: 12 }] });
    await waitFor(() => replyText(-100500).includes("group answer"), 20_000, "the mentioned message answered");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(system.fake.requests.length, 1, "one LLM request: the unmentioned message started no run");
    const last = system.fake.requests[0]!.body.messages.at(-1);
    assert.match(typeof last?.content === "string" ? last.content : JSON.stringify(last?.content), /hello group/);
    assert.deepEqual(replyText(-100500), ["group answer"]);
  });

  it("a channel killed while its draft is shown edits that draft into the reply after the restart: one message", async () => {
    const full = Array.from({ length: 6 }, (_, i) => `Sentence number ${i + 1} of a reply that streams slowly.`).join(" ");
    system.fake.enqueue({ kind: "text", text: full, chunks: 40 });
    telegram.userMessage({ chatId: 1010, text: "tell me slowly" });
    // an edit of the draft happens only after its id is recorded
    await waitFor(() => telegram.sent.find((m) => m.chatId === 1010 && m.method === "editMessageText"), 20_000, "the draft shown and edited");
    const partial = replyText(1010)[0]!;
    assert.ok(partial.length < full.length, "killed in the middle of the reply");
    await restartTelegram({}, { kill: true });
    await waitFor(() => replyText(1010).includes(full), 20_000, "the full reply after the restart");
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(replyText(1010), [full], "exactly one message: the draft became the reply");
    assert.equal(telegram.sent.filter((m) => m.chatId === 1010 && m.method === "sendMessage").length, 1, "no second message was sent");
  });

  it("a run aborted while the channel is down: the restarted channel deletes its draft", async () => {
    await restartTelegram();
    system.fake.enqueue({ kind: "hang", text: "Let me think about this for a very long time" });
    const messageId = telegram.userMessage({ chatId: 1040, text: "think forever" });
    const runId = runIdFor("telegram", `1040:${messageId}`);
    const admin = await system.nats.connect("admin");
    try {
      let sessionKey: string | undefined;
      let aborted = false;
      admin.subscribe(S.runEvents(runId), { callback: (_e, m) => { const body = m.json<{ sessionKey: string; event: { kind: string; code?: string } }>(); sessionKey ??= body.sessionKey; if (body.event.code === "ABORTED") aborted = true; } });
      await admin.flush();
      const draft = await waitFor(() => telegram.sent.find((m) => m.chatId === 1040 && m.method === "sendMessage"), 20_000, "the draft");
      await new Promise((r) => setTimeout(r, 300)); // the draft's id is recorded right after the platform took it
      await system.actors.get("channel-telegram")!.kill();
      admin.publish(S.runControl(runId), JSON.stringify({ type: "lurk.run.control.v1", id: `ctl-${runId}`, ts: Date.now(), runId, action: "abort", reason: "test" }));
      await waitFor(() => aborted, 10_000, "the run's ABORTED end");
      const bus = new BusClient(admin);
      await waitFor(async () => (await bus.call("sessions", "run", { sessionKey: sessionKey!, runId })).status === "aborted", 10_000, "the run recorded as aborted");
      await restartTelegram();
      await waitFor(() => telegram.sent.some((m) => m.chatId === 1040 && m.method === "deleteMessage" && m.messageId === draft.messageId), 10_000, "the orphaned draft deleted");
      assert.deepEqual(replyText(1040), [], "nothing left in the chat");
    } finally {
      await admin.close();
    }
  });

  it("stores an update before confirming it: killed after the store, the restarted channel confirms it and it runs once", async () => {
    await restartTelegram({ streaming: "off" });
    await waitFor(() => telegram.unconfirmed === 0, 10_000, "earlier updates confirmed");
    system.fake.enqueue({ kind: "text", text: "counted once", chunks: 1 });
    telegram.holdConfirmations();
    telegram.userMessage({ chatId: 1011, text: "count me once" });
    const admin = await system.nats.connect("admin");
    const jsm = await jetstreamManager(admin);
    await waitFor(async () => {
      try {
        const m = await jsm.streams.getMessage(STREAMS.inbound, { last_by_subj: S.inbound("telegram") });
        return inboundMessageSchema.parse(m!.json()).text === "count me once";
      } catch {
        return false;
      }
    }, 10_000, "the update stored in LURK_INBOUND");
    await admin.close();
    await waitFor(() => telegram.heldPolls > 0, 10_000, "the next getUpdates (the confirmation) asked for");
    assert.equal(telegram.unconfirmed, 1, "stored, not yet confirmed");
    await system.actors.get("channel-telegram")!.kill();
    telegram.releasePolls();
    assert.equal(telegram.unconfirmed, 1, "the killed channel confirmed nothing");
    await restartTelegram({ streaming: "off" });
    await waitFor(() => telegram.unconfirmed === 0, 10_000, "confirmed by the restarted channel");
    await waitFor(() => replyText(1011).includes("counted once"), 20_000, "the reply");
    await new Promise((r) => setTimeout(r, 800));
    assert.equal(system.fake.requests.filter((r) => JSON.stringify(r.body.messages.at(-1)).includes("count me once")).length, 1, "one run for the re-read update");
    assert.deepEqual(replyText(1011), ["counted once"]);
  });

  it("cuts replies by the configured chunkMode (length, sentence, paragraph)", async () => {
    const text = "Alpha beta gamma delta epsilon.\n\nZeta eta theta. Iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega and more words.";
    const limit = 80;
    const expected = (mode: ChunkMode) => chunkText(text, limit, mode);
    assert.notDeepEqual(expected("length"), expected("sentence"));
    assert.notDeepEqual(expected("sentence"), expected("paragraph"));
    assert.notDeepEqual(expected("length"), expected("paragraph"));
    let chatId = 1020;
    for (const mode of ["length", "sentence", "paragraph"] as const) {
      await restartTelegram({ streaming: "off", textLimit: limit, chunkMode: mode });
      system.fake.enqueue({ kind: "text", text, chunks: 1 });
      const chat = ++chatId;
      telegram.userMessage({ chatId: chat, text: `chunk by ${mode}` });
      await waitFor(() => replyText(chat).length === expected(mode).length, 20_000, `${mode} chunks`);
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(replyText(chat), expected(mode), `chunkMode ${mode}`);
    }
  });

  it("block streaming sends finished paragraphs while the model writes, and the whole text once", async () => {
    await restartTelegram({ streaming: "block" });
    const paragraphs = ["First paragraph, already finished while the model writes on.", "Second paragraph, also its own message.", "Third and last paragraph."];
    system.fake.enqueue({ kind: "text", text: paragraphs.join("\n\n"), chunks: 40 });
    const messageId = telegram.userMessage({ chatId: 1030, text: "write paragraphs" });
    const admin = await system.nats.connect("admin");
    let ended = false;
    admin.subscribe(S.runEvents(runIdFor("telegram", `1030:${messageId}`)), { callback: (_e, m) => { if (/"kind":"(done|error)"/.test(m.string())) ended = true; } });
    await admin.flush();
    await waitFor(() => replyText(1030).length > 0, 20_000, "the first block");
    assert.equal(ended, false, "the first paragraph arrived before the run ended");
    assert.deepEqual(replyText(1030), [paragraphs[0]]);
    await waitFor(() => replyText(1030).length === 3, 20_000, "all paragraphs");
    await waitFor(() => ended, 10_000, "the run's end");
    await new Promise((r) => setTimeout(r, 800));
    await admin.close();
    assert.deepEqual(replyText(1030), paragraphs, "each paragraph once, nothing repeated by the final delivery");
    assert.equal(telegram.sent.filter((m) => m.chatId === 1030 && m.method !== "sendMessage").length, 0, "no edits or deletions");
  });

  it("block streaming survives a kill: after the restart the final delivery sends only the paragraphs not yet sent", async () => {
    const paragraphs = ["Block one, sent before the kill.", "Block two, written while the channel is down.", "Block three, the end."];
    // 80 chunks at 60 ms: the stream goes on for seconds after the first block, while the channel is down
    system.fake.enqueue({ kind: "text", text: paragraphs.join("\n\n"), chunks: 80 });
    telegram.userMessage({ chatId: 1031, text: "write and survive" });
    await waitFor(() => replyText(1031).length > 0, 20_000, "the first block");
    // the channel records a block right after the platform accepted it; a kill inside that
    // moment sends it again (the documented window), so the kill comes a little later, still
    // seconds before the stream ends
    await new Promise((r) => setTimeout(r, 300));
    await system.actors.get("channel-telegram")!.kill();
    const beforeKill = replyText(1031).length;
    await restartTelegram({ streaming: "block" });
    // what was not sent before the kill comes with the final delivery; nothing is sent twice
    const full = paragraphs.join("\n\n");
    await waitFor(() => replyText(1031).join("\n\n").length >= full.length, 20_000, "the rest after the restart");
    await new Promise((r) => setTimeout(r, 800));
    const messages = replyText(1031);
    assert.equal(messages[0], paragraphs[0], "the first block went out before the kill");
    assert.equal(messages.join("\n\n"), full, `every paragraph exactly once, in order: ${JSON.stringify(messages)}`);
    assert.ok(messages.length > beforeKill, "the rest came after the restart");
  });

  /** the last inbound message of the channel once `match` holds for it */
  const inboundWhere = async (match: (m: InboundMessage) => boolean, what: string): Promise<InboundMessage> => {
    const admin = await system.nats.connect("admin");
    try {
      const jsm = await jetstreamManager(admin);
      return await waitFor(async () => {
        const m = await jsm.streams.getMessage(STREAMS.inbound, { last_by_subj: S.inbound("telegram") }).catch(() => null);
        const parsed = m ? inboundMessageSchema.parse(m.json()) : undefined;
        return parsed && match(parsed) ? parsed : undefined;
      }, 20_000, what);
    } finally {
      await admin.close();
    }
  };
  const mediaStore = async () => {
    const nc = await system.nats.connect("channel-telegram");
    return { nc, media: new MediaStore(nc, mediaConfigSchema.parse({})) };
  };

  it("downloads a user's photo (largest size) into the media store before the message reaches the bus; the token stays out", async () => {
    await restartTelegram({ streaming: "off" }, { media: { maxFileMb: 0.001 } });
    const thumb = randomBytes(100);
    const photo = randomBytes(700);
    const thumbId = telegram.addFile(thumb, { mime: "image/jpeg" });
    const photoId = telegram.addFile(photo, { mime: "image/jpeg" });
    system.fake.enqueue({ kind: "text", text: "a nice photo", chunks: 1 });
    telegram.userMessage({ chatId: 1050, caption: "what is in this photo?", photo: [thumbId, photoId] });
    const stored = await inboundWhere((m) => m.text === "what is in this photo?", "the photo message in LURK_INBOUND");
    assert.equal(stored.attachments.length, 1);
    const [a] = stored.attachments;
    assert.deepEqual({ kind: a!.kind, mime: a!.mime, size: a!.size, error: a!.error }, { kind: "image", mime: "image/jpeg", size: 700, error: undefined });
    assert.equal(a!.ref, sha256Hex(photo));
    const { nc, media } = await mediaStore();
    try {
      assert.deepEqual(Buffer.from((await media.get(a!.ref!)).bytes), photo, "the store holds the fake's file");
    } finally {
      await nc.close();
    }
    assert.equal(telegram.downloads.length, 1, "only the largest size was downloaded");
    assert.ok(!JSON.stringify(stored).includes(telegram.token), "no token in the inbound message");
    assert.ok(!JSON.stringify(stored).includes(telegram.token.split(":")[1]!), "no part of the token either");
    await waitFor(() => replyText(1050).includes("a nice photo"), 20_000, "the reply");
    assert.ok(!system.actors.get("channel-telegram")!.output().includes(telegram.token), "no token in the logs");
  });

  it("a media store that is down leaves the update unconfirmed: the photo arrives once the store is back", async () => {
    const admin = await system.nats.connect("admin");
    try {
      await (await jetstreamManager(admin)).streams.delete(`OBJ_${MEDIA_BUCKET}`);
      const photo = randomBytes(300);
      const photoId = telegram.addFile(photo, { mime: "image/png" });
      system.fake.enqueue({ kind: "text", text: "got it after all", chunks: 1 });
      telegram.userMessage({ chatId: 1052, caption: "while the store is down", photo: [photoId] });
      await waitFor(() => telegram.downloads.length >= 3 || undefined, 20_000, "the update tried again");
      const last = await (await jetstreamManager(admin)).streams.getMessage(STREAMS.inbound, { last_by_subj: S.inbound("telegram") });
      assert.notEqual(last ? inboundMessageSchema.parse(last.json()).text : undefined, "while the store is down", "nothing published without the file");
      await ensureStreams(admin, system.nats.prefix);
      const stored = await inboundWhere((m) => m.text === "while the store is down", "the photo message once the store is back");
      assert.equal(stored.attachments[0]!.ref, sha256Hex(photo));
      assert.equal(stored.attachments[0]!.error, undefined);
      await waitFor(() => replyText(1052).includes("got it after all"), 20_000, "the reply");
    } finally {
      await admin.close();
    }
  });

  it("does not download a document above media.maxFileMb: it arrives with its name, type and why", async () => {
    const doc = randomBytes(5_000);
    const docId = telegram.addFile(doc, { mime: "application/pdf", name: "big-report.pdf" });
    const downloadsBefore = telegram.downloads.length;
    system.fake.enqueue({ kind: "text", text: "too big for me", chunks: 1 });
    telegram.userMessage({ chatId: 1051, caption: "read this", document: docId });
    const stored = await inboundWhere((m) => m.text === "read this", "the document message in LURK_INBOUND");
    assert.equal(stored.attachments.length, 1);
    const [a] = stored.attachments;
    assert.deepEqual({ kind: a!.kind, mime: a!.mime, name: a!.name, size: a!.size, ref: a!.ref }, { kind: "file", mime: "application/pdf", name: "big-report.pdf", size: 5_000, ref: undefined });
    assert.match(a!.error ?? "", /not downloaded: 4\.9 KB is above the 1\.0 KB cap \(media\.maxFileMb\)/);
    assert.equal(telegram.downloads.length, downloadsBefore, "nothing downloaded");
    assert.equal(telegram.calls.filter((c) => c.method === "getFile" && c.body.file_id === docId).length, 0, "not even asked for (the announced size decided)");
    await waitFor(() => replyText(1051).includes("too big for me"), 20_000, "the reply");
  });

  it("sends a reply's text, then its image as a photo and its document as a file, into the topic", async () => {
    await restartTelegram({ streaming: "off" });
    const png = randomBytes(3_000);
    const pdf = randomBytes(2_000);
    const { nc, media } = await mediaStore();
    const image = await media.put(png, { mime: "image/png", name: "chart.png" });
    const file = await media.put(pdf, { mime: "application/pdf", name: "report.pdf" });
    await nc.close();
    const chatId = -100600;
    const conversation = conversationOf({ chatId, threadId: 9 });
    const reply = envelope("lurk.outbound.message.v1", {
      channel: "telegram", conversation, kind: "reply" as const, replyTo: [], text: "Here are **your** files.",
      attachments: [
        { kind: "image" as const, mime: "image/png", name: "chart.png", size: png.length, ref: image.ref },
        { kind: "file" as const, mime: "application/pdf", name: "report.pdf", size: pdf.length, ref: file.ref },
      ],
    });
    const admin = await system.nats.connect("admin");
    try {
      const receipts: { deliveryId: string; status: string }[] = [];
      admin.subscribe(S.eventsOf("channel-telegram"), { callback: (_e, m) => { const ev = m.json<{ data: { deliveryId?: string; status?: string } }>(); if (ev.data.deliveryId) receipts.push({ deliveryId: ev.data.deliveryId, status: ev.data.status ?? "" }); } });
      await admin.flush();
      await jetstream(admin).publish(S.outbound("telegram", conversation), JSON.stringify(reply), { msgID: reply.id });
      await waitFor(() => receipts.find((r) => r.deliveryId === reply.id && r.status === "delivered"), 20_000, "delivered");
    } finally {
      await admin.close();
    }
    const order = telegram.calls.filter((c) => Number(c.body.chat_id) === chatId).map((c) => c.method);
    assert.deepEqual(order, ["sendMessage", "sendPhoto", "sendDocument"], "the text, then each file in order");
    assert.deepEqual(replyText(chatId), ["Here are <b>your</b> files."]);
    const uploads = telegram.uploads.filter((u) => u.chatId === chatId);
    assert.deepEqual(uploads.map((u) => ({ method: u.method, name: u.name, threadId: u.threadId })), [
      { method: "sendPhoto", name: "chart.png", threadId: 9 },
      { method: "sendDocument", name: "report.pdf", threadId: 9 },
    ]);
    assert.deepEqual(uploads[0]!.bytes, png, "the photo's bytes");
    assert.deepEqual(uploads[1]!.bytes, pdf, "the document's bytes");
  });

  it("sends a line in place of an attachment the media store does not have, and the delivery succeeds", async () => {
    const chatId = 1061;
    const conversation = conversationOf({ chatId });
    const reply = envelope("lurk.outbound.message.v1", {
      channel: "telegram", conversation, kind: "reply" as const, replyTo: [], text: "",
      attachments: [{ kind: "image" as const, mime: "image/png", name: "gone.png", size: 10, ref: "f".repeat(64) }],
    });
    const admin = await system.nats.connect("admin");
    try {
      const receipts: { deliveryId: string; status: string }[] = [];
      admin.subscribe(S.eventsOf("channel-telegram"), { callback: (_e, m) => { const ev = m.json<{ data: { deliveryId?: string; status?: string } }>(); if (ev.data.deliveryId) receipts.push({ deliveryId: ev.data.deliveryId, status: ev.data.status ?? "" }); } });
      await admin.flush();
      await jetstream(admin).publish(S.outbound("telegram", conversation), JSON.stringify(reply), { msgID: reply.id });
      await waitFor(() => receipts.find((r) => r.deliveryId === reply.id && r.status === "delivered"), 20_000, "delivered");
    } finally {
      await admin.close();
    }
    const texts = replyText(chatId);
    assert.equal(texts.length, 1);
    assert.match(texts[0]!, /^\[image: gone\.png could not be sent: media f{12}… is not in the media store/);
    assert.equal(telegram.uploads.filter((u) => u.chatId === chatId).length, 0, "no upload");
  });

  it("refuses to start without a bot token, saying how to set one", async () => {
    writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({ channels: { telegram: { enabled: true, apiRoot: telegram.url } } }));
    await assert.rejects(startActorProcess("channel-telegram", system.nats, { ...system.env, TELEGRAM_BOT_TOKEN: "" }, 10_000), /TELEGRAM_BOT_TOKEN/);
  });
});

describe("telegram channel in webhook mode", () => {
  let system: TestSystem;
  let telegram: FakeTelegramServer;
  let port: number;
  const PUBLIC_URL = "https://bot.example.com/telegram/webhook";
  const routing = { dm: { policy: "open" } };
  const target = () => `http://127.0.0.1:${port}/telegram/webhook`;
  const writeConfig = (extra: Record<string, unknown>) => writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({
    channels: { telegram: { enabled: true, botToken: telegram.token, apiRoot: telegram.url, pollTimeoutSec: 1, streaming: "off", ...extra } },
    routing,
  }));
  const webhookMode = () => ({ mode: "webhook", webhookUrl: PUBLIC_URL, webhookPort: port });
  const restartTelegram = async (extra: Record<string, unknown>) => {
    await system.actors.get("channel-telegram")?.stop();
    writeConfig(extra);
    await system.startActor("channel-telegram");
  };
  const replyText = (chatId: number) => [...telegram.messages.entries()].filter(([k]) => k.startsWith(`${chatId}:`)).map(([, v]) => v);
  /** the channel's last message in LURK_INBOUND (undefined: none yet) */
  const lastInbound = async (): Promise<{ seq: number; message: InboundMessage } | undefined> => {
    const admin = await system.nats.connect("admin");
    try {
      const m = await (await jetstreamManager(admin)).streams.getMessage(STREAMS.inbound, { last_by_subj: S.inbound("telegram") }).catch(() => null);
      return m ? { seq: m.seq, message: inboundMessageSchema.parse(m.json()) } : undefined;
    } finally {
      await admin.close();
    }
  };
  const llmRequestsFor = (text: string) => system.fake.requests.filter((r) => JSON.stringify(r.body.messages.at(-1)).includes(text)).length;

  before(async () => {
    telegram = await FakeTelegramServer.start();
    port = await freePort();
    system = await TestSystem.start({ config: { routing } });
    writeConfig(webhookMode());
    await system.startActor("channel-telegram");
  });
  after(async () => {
    await system?.actors.get("channel-telegram")?.stop();
    await system?.stop();
    await telegram?.close();
  });
  beforeEach(() => system.fake.reset());

  it("registers its webhook at start (url, a generated secret, the update kinds polling asks for) and does not poll", async () => {
    assert.deepEqual(telegram.webhookCalls.map((c) => c.method), ["setWebhook"]);
    const hook = telegram.webhook!;
    assert.equal(hook.url, PUBLIC_URL);
    assert.match(hook.secretToken ?? "", /^[A-Za-z0-9_-]{16,256}$/, "a generated secret Telegram accepts");
    assert.deepEqual(hook.allowedUpdates, ["message", "callback_query", "message_reaction"]);
    assert.equal(hook.dropPending, false);
    const stored = JSON.parse(readFileSync(join(system.nats.home, "credentials", "channels.json"), "utf8"));
    assert.equal(stored.telegram?.webhookSecret, hook.secretToken, "kept in channels.json like other channel secrets");
    assert.equal(telegram.calls.filter((c) => c.method === "getUpdates").length, 0, "no getUpdates in webhook mode");
    const logs = system.actors.get("channel-telegram")!.output();
    assert.ok(!logs.includes(hook.secretToken!), "the secret is not logged");
    assert.ok(!logs.includes(telegram.token.split(":")[1]!), "the token is not logged");
  });

  it("takes an update POSTed with the secret: stored in LURK_INBOUND before the 200, answered through sendMessage", async () => {
    system.fake.enqueue({ kind: "text", text: "hello by webhook", chunks: 1 });
    const update = telegram.userUpdate({ chatId: 2001, text: "hi over the webhook" });
    assert.equal(await telegram.deliverWebhook(target(), update), 200);
    const last = await lastInbound();
    assert.equal(last?.message.text, "hi over the webhook", "stored before Telegram got its 200");
    assert.equal(last?.message.id, `2001:${(update.message as { message_id: number }).message_id}`);
    await waitFor(() => replyText(2001).includes("hello by webhook"), 20_000, "the reply");
    assert.equal(telegram.sent.filter((m) => m.chatId === 2001 && m.method === "sendMessage").length, 1);
  });

  it("refuses a missing or wrong secret (401), a malformed body (400), other methods and paths; nothing is stored", async () => {
    const before = (await lastInbound())?.seq ?? 0;
    const update = telegram.userUpdate({ chatId: 2002, text: "should never arrive" });
    assert.equal(await telegram.deliverWebhook(target(), update, { secret: null }), 401, "no secret header");
    assert.equal(await telegram.deliverWebhook(target(), update, { secret: "wrong-secret" }), 401, "a wrong secret");
    assert.equal(await telegram.deliverWebhook(target(), update, { secret: `${telegram.webhook!.secretToken}x` }), 401, "a longer secret");
    assert.equal(await telegram.deliverWebhook(target(), undefined, { body: "{ not json" }), 400, "malformed JSON");
    assert.equal(await telegram.deliverWebhook(target(), undefined, { body: JSON.stringify({ message: {} }) }), 400, "no update_id");
    assert.equal(await telegram.deliverWebhook(target(), undefined, { body: '{"update_id":1,"__proto__":{"polluted":true}}' }), 400, "an unsafe document");
    assert.equal(await telegram.deliverWebhook(target(), undefined, { body: JSON.stringify({ update_id: 2, pad: "x".repeat(1024 * 1024) }) }), 413, "above the 1 MiB cap");
    assert.equal(await telegram.deliverWebhook(target(), update, { method: "GET" }), 405);
    assert.equal(await telegram.deliverWebhook(target().replace("/webhook", "/other"), update), 404);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await lastInbound())?.seq ?? 0, before, "nothing stored");
    assert.equal(system.fake.requests.length, 0, "no run");
    assert.deepEqual(replyText(2002), []);
  });

  it("runs a redelivered update once: twice at the same time, again later, and again after a restart", async () => {
    system.fake.enqueue({ kind: "text", text: "said once", chunks: 1 });
    const update = telegram.userUpdate({ chatId: 2003, text: "deliver me twice" });
    assert.deepEqual(await Promise.all([telegram.deliverWebhook(target(), update), telegram.deliverWebhook(target(), update)]), [200, 200]);
    assert.equal(await telegram.deliverWebhook(target(), update), 200);
    await waitFor(() => replyText(2003).includes("said once"), 20_000, "the reply");
    await restartTelegram(webhookMode());
    assert.equal(await telegram.deliverWebhook(target(), update), 200, "a redelivery the restarted channel never saw");
    await new Promise((r) => setTimeout(r, 800));
    assert.equal(llmRequestsFor("deliver me twice"), 1, "one run");
    assert.deepEqual(replyText(2003), ["said once"]);
  });

  it("answers 500 while the update cannot be stored (media store down), so Telegram redelivers; the redelivery is taken", async () => {
    const admin = await system.nats.connect("admin");
    try {
      await (await jetstreamManager(admin)).streams.delete(`OBJ_${MEDIA_BUCKET}`);
      const photo = randomBytes(300);
      const update = telegram.userUpdate({ chatId: 2004, caption: "photo by webhook", photo: [telegram.addFile(photo, { mime: "image/png" })] });
      assert.equal(await telegram.deliverWebhook(target(), update), 500);
      assert.notEqual((await lastInbound())?.message.text, "photo by webhook", "nothing stored without the file");
      await ensureStreams(admin, system.nats.prefix);
      system.fake.enqueue({ kind: "text", text: "got the photo", chunks: 1 });
      assert.equal(await telegram.deliverWebhook(target(), update), 200, "Telegram's redelivery");
      const last = await lastInbound();
      assert.equal(last?.message.text, "photo by webhook");
      assert.equal(last?.message.attachments[0]?.ref, sha256Hex(photo));
      await waitFor(() => replyText(2004).includes("got the photo"), 20_000, "the reply");
    } finally {
      await admin.close();
    }
  });

  it("keeps the webhook set across a stop (Telegram queues updates meanwhile)", async () => {
    await system.actors.get("channel-telegram")!.stop();
    assert.equal(telegram.webhookCalls.filter((c) => c.method === "deleteWebhook").length, 0);
    assert.equal(telegram.webhook?.url, PUBLIC_URL);
    writeConfig(webhookMode());
    await system.startActor("channel-telegram");
  });

  it("switched back to polling, deletes the webhook (pending updates kept) and polls", async () => {
    assert.equal(telegram.webhook?.url, PUBLIC_URL, "set before the switch");
    await restartTelegram({});
    assert.equal(telegram.webhook, undefined, "webhook deleted");
    const deletion = telegram.webhookCalls.at(-1)!;
    assert.equal(deletion.method, "deleteWebhook");
    assert.notEqual(deletion.body.drop_pending_updates, true, "pending updates kept");
    system.fake.enqueue({ kind: "text", text: "polling again", chunks: 1 });
    telegram.userMessage({ chatId: 2005, text: "are you polling?" });
    await waitFor(() => replyText(2005).includes("polling again"), 20_000, "the reply by polling");
    assert.ok(!telegram.calls.some((c, i) => c.method === "getUpdates" && i < telegram.calls.findIndex((x) => x.method === "deleteWebhook")), "no getUpdates while the webhook was set");
  });

  it("refuses webhook mode without webhookUrl, naming the key", async () => {
    writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({ channels: { telegram: { enabled: true, botToken: telegram.token, apiRoot: telegram.url, mode: "webhook" } } }));
    await assert.rejects(startActorProcess("channel-telegram", system.nats, system.env, 10_000), /channels\.telegram\.webhookUrl: required when mode is "webhook"/);
  });
});
