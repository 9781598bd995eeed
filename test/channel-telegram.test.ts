/**
 * The Telegram channel: update mapping (pure), and end to end with the whole system, the fake
 * LLM and a local Bot API server (test/fakes/telegram-server.ts) that grammy's Api talks to.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { inboundMessageSchema, STREAMS, subjects } from "../shared/contract/index.js";
import { conversationOf, messageToInbound, normalizeCommand, targetOf, type TgMessage } from "../services/channel-telegram/inbound.js";
import { FakeTelegramServer } from "./fakes/telegram-server.js";
import { startActorProcess, waitFor } from "./harness/actors.js";
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
    const photo = messageToInbound(msg({ text: undefined, caption: "look", photo: [{ file_id: "small" }, { file_id: "big", file_size: 2048 }] }), BOT)!;
    assert.equal(photo.text, "look");
    assert.deepEqual(photo.attachments, [{ kind: "image", mime: "image/jpeg", name: "telegram-file:big", size: 2048 }]);
    assert.deepEqual(targetOf(conversationOf({ chatId: -42 })), { chatId: -42 });
    assert.throws(() => targetOf("web-1"), /not a Telegram conversation/);
  });
});

describe("telegram channel end to end", () => {
  let system: TestSystem;
  let telegram: FakeTelegramServer;

  before(async () => {
    telegram = await FakeTelegramServer.start();
    system = await TestSystem.start({ fake: { chunkDelayMs: 60 } });
    writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({
      channels: { telegram: { enabled: true, botToken: telegram.token, apiRoot: telegram.url, pollTimeoutSec: 1, draftIntervalMs: 200 } },
      routing: { dm: { policy: "open" } },
    }));
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

  it("refuses to start without a bot token, saying how to set one", async () => {
    writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({ channels: { telegram: { enabled: true, apiRoot: telegram.url } } }));
    await assert.rejects(startActorProcess("channel-telegram", system.nats, { ...system.env, TELEGRAM_BOT_TOKEN: "" }, 10_000), /TELEGRAM_BOT_TOKEN/);
  });
});
