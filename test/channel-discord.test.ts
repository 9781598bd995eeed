/**
 * The Discord channel: message mapping (pure), and end to end with the whole system, the fake
 * LLM and a local Discord (REST + gateway, test/fakes/discord-server.ts) that @discordjs/rest
 * and @discordjs/ws talk to.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { runIdFor, subjects } from "../shared/contract/index.js";
import { messageToInbound, type DcMessage } from "../services/channel-discord/inbound.js";
import { FakeDiscordServer } from "./fakes/discord-server.js";
import { startActorProcess, waitFor } from "./harness/actors.js";
import { TestSystem } from "./harness/system.js";

const BOT = "900000000000000001";
const msg = (over: Partial<DcMessage>): DcMessage => ({ id: "m1", channel_id: "c1", author: { id: "u1", username: "ann", global_name: "Ann" }, content: "hi", ...over });
const plainChannel = { id: "c1", isThread: false };
const S = subjects();

describe("discord message mapping", () => {
  it("maps DMs, guild channels, threads and mentions", () => {
    const dm = messageToInbound(msg({}), BOT, plainChannel)!;
    assert.deepEqual({ peer: dm.peer, mentioned: dm.mentioned, conversation: dm.conversation, sender: dm.sender }, { peer: { kind: "dm", id: "u1" }, mentioned: true, conversation: "c1", sender: { id: "u1", name: "Ann" } });
    const guild = messageToInbound(msg({ guild_id: "g1", content: "lunch?" }), BOT, plainChannel)!;
    assert.deepEqual(guild.peer, { kind: "channel", id: "c1", guildId: "g1" });
    assert.equal(guild.mentioned, false);
    const mention = messageToInbound(msg({ guild_id: "g1", content: `<@${BOT}> /new` }), BOT, plainChannel)!;
    assert.equal(mention.mentioned, true);
    assert.equal(mention.text, "/new", "the bot's own mention is cut");
    const reply = messageToInbound(msg({ guild_id: "g1", content: "and?", referenced_message: { id: "m0", author: { id: BOT } } }), BOT, plainChannel)!;
    assert.equal(reply.mentioned, true);
    assert.equal(reply.replyToMessageId, "m0");
    const thread = messageToInbound(msg({ guild_id: "g1", channel_id: "t9" }), BOT, { id: "t9", isThread: true, parentId: "c1" })!;
    assert.deepEqual(thread.peer, { kind: "thread", id: "c1", threadId: "t9", guildId: "g1" });
    assert.equal(messageToInbound(msg({ author: { id: "b", bot: true } }), BOT, plainChannel), undefined, "bots are ignored");
    assert.equal(messageToInbound(msg({ content: `<@${BOT}>` }), BOT, plainChannel), undefined, "a bare mention says nothing");
  });
});

describe("discord channel end to end", () => {
  let system: TestSystem;
  let discord: FakeDiscordServer;

  /** the router reads this at start: guild channels answer only when the bot is mentioned */
  const routing = { dm: { policy: "open" }, groups: { requireMention: true } };
  const writeConfig = (extra: Record<string, unknown> = {}) => writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({
    channels: { discord: { enabled: true, botToken: discord.token, apiRoot: discord.apiRoot, draftIntervalMs: 200, ...extra } },
    routing,
  }));

  before(async () => {
    discord = await FakeDiscordServer.start();
    system = await TestSystem.start({ fake: { chunkDelayMs: 60 }, config: { routing } });
    writeConfig();
    await system.startActor("channel-discord");
  });
  after(async () => {
    await system?.actors.get("channel-discord")?.stop();
    await system?.stop();
    await discord?.close();
  });
  beforeEach(() => system.fake.reset());

  const contents = (channelId: string) => [...discord.messages.entries()].filter(([k]) => k.startsWith(`${channelId}:`)).map(([, v]) => v);

  it("answers a DM through the gateway and REST, the draft becoming the reply", async () => {
    system.fake.enqueue({ kind: "text", text: "Hi **Ann**, this answer streams in a few pieces to the chat.", chunks: 8 });
    discord.userMessage({ channelId: "2001", content: "hello" });
    await waitFor(() => contents("2001").includes("Hi **Ann**, this answer streams in a few pieces to the chat."), 20_000, "final reply");
    const posts = discord.sent.filter((m) => m.channelId === "2001" && m.method === "POST");
    assert.equal(posts.length, 1, "the draft became the reply");
    assert.ok(discord.sent.some((m) => m.channelId === "2001" && m.method === "PATCH"), "edited while streaming or at the end");
    assert.deepEqual(posts[0]!.body.allowed_mentions, { parse: [] }, "replies never ping @everyone");
  });

  it("chunks a long reply at 2000 characters", async () => {
    const paragraph = `${"word ".repeat(150).trim()}.`;
    system.fake.enqueue({ kind: "text", text: Array.from({ length: 5 }, () => paragraph).join("\n\n"), chunks: 1 });
    discord.userMessage({ channelId: "2002", content: "write a lot" });
    await waitFor(() => contents("2002").join("").length >= 5 * paragraph.length - 10, 20_000, "all chunks");
    const texts = contents("2002");
    assert.ok(texts.length >= 3, `split into ${texts.length} messages`);
    assert.ok(texts.every((t) => t.length <= 2000));
  });

  it("answers in a guild thread when mentioned and waits out a 429", async () => {
    discord.threads.set("2003", "2000");
    discord.rateLimitNextSends(1);
    system.fake.enqueue({ kind: "text", text: "thread answer", chunks: 1 });
    discord.userMessage({ channelId: "2003", guildId: "g1", content: `<@${discord.bot.id}> what's up`, mentionsBot: true });
    await waitFor(() => contents("2003").includes("thread answer"), 20_000, "thread reply");
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(contents("2003").length, 1, "delivered once");
    const request = system.fake.requests.at(-1)!.body.messages.at(-1);
    assert.equal(typeof request?.content === "string" ? request.content : "", "what's up", "the mention was cut");
  });

  it("in a plain guild channel answers only the message that mentions the bot", async () => {
    system.fake.enqueue({ kind: "text", text: "guild answer", chunks: 1 });
    discord.userMessage({ channelId: "2004", guildId: "g1", content: "lunch anyone?" });
    discord.userMessage({ channelId: "2004", guildId: "g1", content: `<@${discord.bot.id}> hello guild`, mentionsBot: true });
    await waitFor(() => contents("2004").includes("guild answer"), 20_000, "the mentioned message answered");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(system.fake.requests.length, 1, "one LLM request: the unmentioned message started no run");
    const request = system.fake.requests[0]!.body.messages.at(-1);
    assert.equal(typeof request?.content === "string" ? request.content : "", "hello guild");
    assert.deepEqual(contents("2004"), ["guild answer"]);
  });

  it("a channel killed while its draft is shown edits that draft into the reply after the restart: one message", async () => {
    const full = Array.from({ length: 6 }, (_, i) => `Sentence number ${i + 1} of a reply that streams slowly.`).join(" ");
    system.fake.enqueue({ kind: "text", text: full, chunks: 40 });
    discord.userMessage({ channelId: "2005", content: "tell me slowly" });
    await waitFor(() => discord.sent.find((m) => m.channelId === "2005" && m.method === "PATCH"), 20_000, "the draft shown and edited");
    assert.ok(contents("2005")[0]!.length < full.length, "killed in the middle of the reply");
    await system.actors.get("channel-discord")!.kill();
    await system.startActor("channel-discord");
    await waitFor(() => contents("2005").includes(full), 20_000, "the full reply after the restart");
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(contents("2005"), [full], "exactly one message: the draft became the reply");
    assert.equal(discord.sent.filter((m) => m.channelId === "2005" && m.method === "POST").length, 1, "no second message was posted");
  });

  it("block streaming sends finished paragraphs while the model writes, and the whole text once", async () => {
    await system.actors.get("channel-discord")?.stop();
    writeConfig({ streaming: "block" });
    await system.startActor("channel-discord");
    const paragraphs = ["First paragraph, already finished while the model writes on.", "Second paragraph, also its own message.", "Third and last paragraph."];
    system.fake.enqueue({ kind: "text", text: paragraphs.join("\n\n"), chunks: 40 });
    const messageId = discord.userMessage({ channelId: "2006", content: "write paragraphs" });
    const admin = await system.nats.connect("admin");
    let ended = false;
    admin.subscribe(S.runEvents(runIdFor("discord", messageId)), { callback: (_e, m) => { if (/"kind":"(done|error)"/.test(m.string())) ended = true; } });
    await admin.flush();
    await waitFor(() => contents("2006").length > 0, 20_000, "the first block");
    assert.equal(ended, false, "the first paragraph arrived before the run ended");
    assert.deepEqual(contents("2006"), [paragraphs[0]]);
    await waitFor(() => contents("2006").length === 3, 20_000, "all paragraphs");
    await waitFor(() => ended, 10_000, "the run's end");
    await new Promise((r) => setTimeout(r, 800));
    await admin.close();
    assert.deepEqual(contents("2006"), paragraphs, "each paragraph once, nothing repeated by the final delivery");
    assert.equal(discord.sent.filter((m) => m.channelId === "2006" && m.method !== "POST").length, 0, "no edits or deletions");
  });

  it("refuses to start without a bot token, saying how to set one", async () => {
    writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({ channels: { discord: { enabled: true, apiRoot: discord.apiRoot } } }));
    await assert.rejects(startActorProcess("channel-discord", system.nats, { ...system.env, DISCORD_BOT_TOKEN: "" }, 10_000), /DISCORD_BOT_TOKEN/);
  });
});
