/**
 * The Discord channel: message mapping (pure), and end to end with the whole system, the fake
 * LLM and a local Discord (REST + gateway, test/fakes/discord-server.ts) that @discordjs/rest
 * and @discordjs/ws talk to. Files go through the real media store (a user's attachments are
 * downloaded from the fake's CDN; replies' files are uploaded as multipart). Slash commands:
 * registration at start (global, per guild, refused), interactions answered deferred, published
 * like messages, their replies editing @original and following it up; a command the router
 * refuses (DM disabled, allowlists) has its deferred message edited to the refusal. Voice
 * messages: an OGG/Opus reply goes with the IS_VOICE_MESSAGE flag, its duration and waveform
 * (read from a real Ogg Opus file, test/fakes/ogg-opus.ts), and as a plain file where Discord refuses it.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { envelope, inboundMessageSchema, runIdFor, STREAMS, subjects, type Attachment, type InboundMessage } from "../shared/contract/index.js";
import { MEDIA_DEFAULTS } from "../shared/runtime/config-media.js";
import { MediaStore, sha256Hex } from "../shared/runtime/media.js";
import { botCommands } from "../services/channel-discord/commands.js";
import { messageToInbound, type DcMessage } from "../services/channel-discord/inbound.js";
import { interactionToInbound, type DcInteraction } from "../services/channel-discord/interactions.js";
import { COMMAND_HELP } from "../shared/contract/index.js";
import { FakeDiscordServer } from "./fakes/discord-server.js";
import { oggOpusFile, OPUS_PRE_SKIP } from "./fakes/ogg-opus.js";
import { opusPacketSamples, readOggOpus } from "../services/channel-discord/ogg-opus.js";
import { voiceMessageOf } from "../services/channel-discord/voice-message.js";
import { startActorProcess, waitFor } from "./harness/actors.js";
import { TestSystem } from "./harness/system.js";

const BOT = "900000000000000001";
const msg = (over: Partial<DcMessage>): DcMessage => ({ id: "m1", channel_id: "c1", author: { id: "u1", username: "ann", global_name: "Ann" }, content: "hi", ...over });
const plainChannel = { id: "c1", isThread: false };
const S = subjects();
/** the channel's media.maxFileMb in these tests (about 51 KB) */
const MAX_FILE_MB = 0.05;

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
    const file = messageToInbound(msg({ content: "", attachments: [{ id: "a1", filename: "v.mp4", content_type: "video/mp4", size: 9, url: "https://cdn.discordapp.com/v.mp4" }] }), BOT, plainChannel)!;
    assert.deepEqual(file.attachments, [{ kind: "video", mime: "video/mp4", name: "v.mp4", size: 9 }], "no CDN url: the actor stores the file and adds its ref");
  });
});

describe("discord slash commands (pure)", () => {
  it("derives the router's commands from its help table, after the generic one", () => {
    const commands = botCommands("lurk");
    assert.equal(commands[0]!.name, "lurk");
    assert.deepEqual(commands[0]!.options?.map((o) => [o.name, o.type, o.required]), [["text", 3, true]]);
    const byName = new Map(commands.map((c) => [c.name, c]));
    for (const name of ["new", "reset", "status", "stop", "model", "think", "verbose", "compact", "help"]) assert.ok(byName.has(name), `/${name} is offered`);
    assert.equal(byName.get("status")!.description, COMMAND_HELP.find(([u]) => u === "/status")![1], "described as in the router's table");
    assert.equal(byName.get("status")!.options, undefined, "/status takes nothing");
    assert.deepEqual(byName.get("model")!.options?.map((o) => [o.name, o.required, o.description]), [["args", false, "[provider/model|default]"]]);
    assert.deepEqual(byName.get("new")!.options?.map((o) => o.name), ["args"], "/new [text] like /reset");
    assert.ok(!byName.has("t") && !byName.has("v"), "aliases are not offered");
    assert.ok(commands.every((c) => /^[a-z0-9_-]{1,32}$/.test(c.name) && c.description.length >= 1 && c.description.length <= 100), "names and descriptions within Discord's limits");
    assert.equal(botCommands("status").filter((c) => c.name === "status").length, 1, "a generic command named like a router one replaces it");
  });

  it("maps an interaction like a typed message in the same place", () => {
    const base: DcInteraction = { id: "175928847299117063", application_id: "7", type: 2, token: "tok", data: { name: "lurk", type: 1, options: [{ name: "text", type: 3, value: " hi there " }] }, channel_id: "c1", channel: { id: "c1", type: 1 }, user: { id: "u1", username: "ann", global_name: "Ann" } };
    const dm = interactionToInbound(base, "lurk", plainChannel)!;
    assert.deepEqual({ id: dm.id, text: dm.text, conversation: dm.conversation, peer: dm.peer, sender: dm.sender, mentioned: dm.mentioned }, { id: "interaction:175928847299117063", text: "hi there", conversation: "c1", peer: { kind: "dm", id: "u1" }, sender: { id: "u1", name: "Ann" }, mentioned: true });
    const guild: DcInteraction = { ...base, guild_id: "g1", user: undefined, member: { user: { id: "u2", username: "bob" } }, channel: { id: "t9", type: 11, parent_id: "c1" }, data: { name: "think", options: [{ name: "args", type: 3, value: "high" }] } };
    const thread = interactionToInbound(guild, "lurk", { id: "t9", isThread: true, parentId: "c1" })!;
    assert.deepEqual({ text: thread.text, peer: thread.peer, sender: thread.sender, conversation: thread.conversation }, { text: "/think high", peer: { kind: "thread", id: "c1", threadId: "t9", guildId: "g1" }, sender: { id: "u2", name: "bob" }, conversation: "t9" });
    assert.equal(interactionToInbound({ ...base, data: { name: "status" } }, "lurk", plainChannel)!.text, "/status");
    assert.equal(interactionToInbound({ ...base, data: { name: "other-bots-command" } }, "lurk", plainChannel), undefined);
    assert.equal(interactionToInbound({ ...base, type: 3 }, "lurk", plainChannel), undefined, "components are not commands");
  });
});

describe("discord voice messages (pure)", () => {
  it("reads an Ogg Opus file's duration and packets without decoding; anything else is no voice message", () => {
    // one second: 25 loud packets above 255 bytes (two lacing segments each), 25 near-silent ones
    const file = oggOpusFile([...Array<number>(25).fill(300), ...Array<number>(25).fill(4)], { perPage: 7 });
    const ogg = readOggOpus(file)!;
    assert.deepEqual({ channels: ogg.channels, preSkip: ogg.preSkip, packets: ogg.packets.length, first: ogg.packets[0], last: ogg.packets.at(-1) },
      { channels: 1, preSkip: OPUS_PRE_SKIP, packets: 50, first: { size: 300, samples: 960 }, last: { size: 4, samples: 960 } });
    assert.equal(ogg.durationSecs, (48_000 - OPUS_PRE_SKIP) / 48_000, "the last granule position minus the pre-skip, at 48 kHz");
    const meta = voiceMessageOf({ kind: "audio", mime: "audio/ogg", bytes: file })!;
    assert.equal(meta.durationSecs, 0.994);
    const bars = [...Buffer.from(meta.waveform, "base64")];
    assert.equal(bars.length, 10, "one bar per 100 ms");
    assert.deepEqual(bars.slice(0, 5), [255, 255, 255, 255, 255], "speech: the busiest slices");
    assert.ok(bars.slice(5).every((b) => b < 10), `pauses: low bars (${bars.join(",")})`);
    const long = voiceMessageOf({ kind: "audio", mime: "audio/ogg", bytes: oggOpusFile(Array<number>(2000).fill(80)) })!;
    assert.equal(Buffer.from(long.waveform, "base64").length, 256, "40 s: at most 256 bars");
    assert.equal(voiceMessageOf({ kind: "audio", mime: "audio/mpeg", bytes: file }), undefined, "not OGG by its type");
    assert.equal(voiceMessageOf({ kind: "file", mime: "audio/ogg", bytes: file }), undefined, "not audio");
    assert.equal(voiceMessageOf({ kind: "audio", mime: "audio/ogg", bytes: Buffer.concat([Buffer.from("OggS"), randomBytes(64)]) }), undefined, "not a valid Ogg page");
    const vorbis = Buffer.from(file);
    vorbis.write("\u0001vorbis\u0000", 28 + 0, "latin1");
    assert.equal(readOggOpus(vorbis), undefined, "another codec");
    assert.equal(readOggOpus(oggOpusFile([])), undefined, "no audio");
  });

  it("knows each Opus packet's duration from its TOC byte", () => {
    const samples = (...bytes: number[]) => opusPacketSamples(Uint8Array.from(bytes));
    assert.equal(samples(0xf8), 960, "CELT 20 ms, one frame");
    assert.equal(samples((16 << 3) | 0), 120, "CELT 2.5 ms");
    assert.equal(samples((3 << 3) | 1), 2 * 2880, "SILK 60 ms, two frames");
    assert.equal(samples((13 << 3) | 3, 3), 3 * 960, "hybrid 20 ms, three frames (code 3)");
    assert.equal(samples(), 0);
  });
});

describe("discord channel end to end", () => {
  let system: TestSystem;
  let discord: FakeDiscordServer;
  let admin: NatsConnection;
  let mediaNc: NatsConnection;
  let media: MediaStore;
  const receipts: { deliveryId: string; status: string }[] = [];

  /** the router reads this at start: guild channels answer only when the bot is mentioned */
  const routing = { dm: { policy: "open" }, groups: { requireMention: true } };
  const writeConfig = (extra: Record<string, unknown> = {}) => writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({
    channels: { discord: { enabled: true, botToken: discord.token, apiRoot: discord.apiRoot, draftIntervalMs: 200, ...extra } },
    routing,
    media: { maxFileMb: MAX_FILE_MB },
  }));

  before(async () => {
    discord = await FakeDiscordServer.start();
    system = await TestSystem.start({ fake: { chunkDelayMs: 60 }, config: { routing } });
    writeConfig();
    await system.startActor("channel-discord");
    admin = await system.nats.connect("admin");
    admin.subscribe(S.eventsOf("channel-discord"), { callback: (_e, m) => { const ev = m.json<{ data: { deliveryId?: string; status?: string } }>(); if (ev.data.deliveryId) receipts.push({ deliveryId: ev.data.deliveryId, status: ev.data.status ?? "" }); } });
    mediaNc = await system.nats.connect("channel-discord");
    media = new MediaStore(mediaNc, MEDIA_DEFAULTS);
  });
  after(async () => {
    await admin?.close();
    await mediaNc?.close();
    await system?.actors.get("channel-discord")?.stop();
    await system?.stop();
    await discord?.close();
  });
  beforeEach(() => system.fake.reset());

  const contents = (channelId: string) => [...discord.messages.entries()].filter(([k]) => k.startsWith(`${channelId}:`)).map(([, v]) => v);
  /** the message `id` as the channel stored it in LURK_INBOUND */
  const storedInbound = (id: string) => waitFor(async (): Promise<InboundMessage | undefined> => {
    const m = await (await jetstreamManager(admin)).streams.getMessage(STREAMS.inbound, { last_by_subj: S.inbound("discord") }).catch(() => null);
    const msg = m ? inboundMessageSchema.parse(m.json()) : undefined;
    return msg?.id === id ? msg : undefined;
  }, 20_000, `message ${id} in LURK_INBOUND`);
  /** a reply to `channelId` as the agent-runner sends one, without a run */
  const sendReply = async (channelId: string, text: string, attachments: Attachment[]): Promise<string> => {
    const out = envelope("lurk.outbound.message.v1", { channel: "discord", conversation: channelId, kind: "reply" as const, replyTo: [], attachments, text });
    await jetstream(admin).publish(S.outbound("discord", channelId), JSON.stringify(out));
    return out.id;
  };

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
    assert.match(typeof request?.content === "string" ? request.content : "", /^what's up\n\[message_id: \d+\]$/, "the mention was cut (the platform id follows)");
  });

  it("in a plain guild channel answers only the message that mentions the bot", async () => {
    system.fake.enqueue({ kind: "text", text: "guild answer", chunks: 1 });
    discord.userMessage({ channelId: "2004", guildId: "g1", content: "lunch anyone?" });
    discord.userMessage({ channelId: "2004", guildId: "g1", content: `<@${discord.bot.id}> hello guild`, mentionsBot: true });
    await waitFor(() => contents("2004").includes("guild answer"), 20_000, "the mentioned message answered");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(system.fake.requests.length, 1, "one LLM request: the unmentioned message started no run");
    const request = system.fake.requests[0]!.body.messages.at(-1);
    assert.match(typeof request?.content === "string" ? request.content : "", /^hello guild\n\[message_id: \d+\]$/);
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

  it("stores a user's image in the media store before publishing: the message carries its ref, not the CDN url", async () => {
    system.fake.enqueue({ kind: "text", text: "nice picture", chunks: 1 });
    const png = Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), randomBytes(3000)]);
    const id = discord.userMessage({ channelId: "2010", content: "look", attachments: [{ filename: "photo.png", contentType: "image/png", bytes: png }] });
    const msg = await storedInbound(id);
    assert.equal(msg.attachments.length, 1);
    const a = msg.attachments[0]!;
    assert.deepEqual({ kind: a.kind, mime: a.mime, name: a.name, size: a.size, url: a.url, error: a.error }, { kind: "image", mime: "image/png", name: "photo.png", size: png.byteLength, url: undefined, error: undefined });
    assert.equal(a.ref, sha256Hex(png));
    assert.deepEqual(Buffer.from((await media.get(a.ref!)).bytes), png, "the stored bytes are the user's file");
    assert.equal(discord.downloads.filter((p) => p.startsWith("/attachments/2010/")).length, 1, "downloaded once from the CDN");
    await waitFor(() => contents("2010").includes("nice picture"), 20_000, "the answer");
  });

  it("a file announced above media.maxFileMb arrives with an error and is not downloaded", async () => {
    system.fake.enqueue({ kind: "text", text: "too big", chunks: 1 });
    const id = discord.userMessage({ channelId: "2011", content: "", attachments: [{ filename: "movie.mp4", contentType: "video/mp4", bytes: randomBytes(100), announcedSize: 30 * 1024 * 1024 }] });
    const msg = await storedInbound(id);
    const a = msg.attachments[0]!;
    assert.deepEqual({ kind: a.kind, name: a.name, size: a.size, ref: a.ref, url: a.url }, { kind: "video", name: "movie.mp4", size: 30 * 1024 * 1024, ref: undefined, url: undefined });
    assert.match(a.error ?? "", /not downloaded: 30\.0 MB is above the .* cap \(media\.maxFileMb\)/);
    assert.deepEqual(discord.downloads.filter((p) => p.startsWith("/attachments/2011/")), [], "not downloaded");
    await waitFor(() => contents("2011").includes("too big"), 20_000, "the answer");
  });

  it("a reply with a file sends the text, then uploads the file as multipart with its name and bytes", async () => {
    const pdf = Buffer.concat([Buffer.from("%PDF-1.4\n"), randomBytes(4000)]);
    const stored = await media.put(pdf, { mime: "application/pdf", name: "report.pdf" });
    const deliveryId = await sendReply("2012", "Here is the **report**.", [{ kind: "file", mime: "application/pdf", name: "report.pdf", size: pdf.byteLength, ref: stored.ref }]);
    await waitFor(() => receipts.find((r) => r.deliveryId === deliveryId && r.status === "delivered"), 20_000, "delivered");
    const posts = discord.sent.filter((m) => m.channelId === "2012" && m.method === "POST");
    assert.equal(posts.length, 2, "the text, then the file");
    assert.deepEqual([posts[0]!.content, posts[0]!.files.length], ["Here is the **report**.", 0]);
    const [file] = posts[1]!.files;
    assert.deepEqual({ field: file?.field, name: file?.name, type: file?.contentType, content: posts[1]!.content }, { field: "files[0]", name: "report.pdf", type: "application/pdf", content: "" });
    assert.deepEqual(file!.bytes, pdf, "the uploaded bytes are the stored file");
    assert.deepEqual(posts[1]!.body.allowed_mentions, { parse: [] }, "payload_json came along");
  });

  it("a file the media store does not have is sent as its fallback text, and the delivery succeeds", async () => {
    const deliveryId = await sendReply("2013", "The chart:", [{ kind: "image", mime: "image/png", name: "chart.png", ref: "e".repeat(64) }]);
    await waitFor(() => receipts.find((r) => r.deliveryId === deliveryId && r.status === "delivered"), 20_000, "delivered");
    const posts = discord.sent.filter((m) => m.channelId === "2013" && m.method === "POST");
    assert.deepEqual(posts.map((p) => p.files.length), [0, 0], "no upload");
    assert.equal(posts[0]!.content, "The chart:");
    assert.match(posts[1]!.content, /^\[image: chart\.png could not be sent: media e{12}… is not in the media store/);
  });

  it("a voice reply (OGG/Opus) goes as a native voice message: the flag, one audio file, its duration and waveform; MP3 stays a file", async () => {
    const ogg = oggOpusFile([...Array<number>(25).fill(300), ...Array<number>(25).fill(4)]);
    const stored = await media.put(ogg, { mime: "audio/ogg", name: "voice.ogg" });
    const deliveryId = await sendReply("2014", "Spoken answer.", [{ kind: "audio", mime: "audio/ogg", name: "voice.ogg", size: ogg.byteLength, ref: stored.ref }]);
    await waitFor(() => receipts.find((r) => r.deliveryId === deliveryId && r.status === "delivered"), 20_000, "delivered");
    const posts = discord.sent.filter((m) => m.channelId === "2014" && m.method === "POST");
    assert.deepEqual(posts.map((p) => [p.content, p.files.length, p.body.flags]), [["Spoken answer.", 0, undefined], ["", 1, 8192]], "the text, then the voice message");
    const [file] = posts[1]!.files;
    assert.deepEqual({ field: file!.field, name: file!.name, type: file!.contentType }, { field: "files[0]", name: "voice.ogg", type: "audio/ogg" });
    assert.deepEqual(file!.bytes, ogg);
    const [meta] = posts[1]!.body.attachments as Array<{ id: number; filename: string; duration_secs: number; waveform: string }>;
    assert.deepEqual({ id: meta!.id, filename: meta!.filename, duration: meta!.duration_secs }, { id: 0, filename: "voice.ogg", duration: 0.994 });
    const bars = [...Buffer.from(meta!.waveform, "base64")];
    assert.deepEqual(bars.slice(0, 5), [255, 255, 255, 255, 255]);
    assert.equal(bars.length, 10);
    const mp3 = Buffer.concat([Buffer.from("ID3"), randomBytes(500)]);
    const mp3Ref = (await media.put(mp3, { mime: "audio/mpeg", name: "voice.mp3" })).ref;
    const mp3Delivery = await sendReply("2016", "", [{ kind: "audio", mime: "audio/mpeg", name: "voice.mp3", size: mp3.byteLength, ref: mp3Ref }]);
    await waitFor(() => receipts.find((r) => r.deliveryId === mp3Delivery && r.status === "delivered"), 20_000, "delivered");
    const mp3Posts = discord.sent.filter((m) => m.channelId === "2016" && m.method === "POST");
    assert.deepEqual(mp3Posts.map((p) => [p.files[0]?.name, p.body.flags]), [["voice.mp3", undefined]], "an MP3 is a plain file");
  });

  it("where Discord refuses voice messages (403, 50173) the audio goes as a plain file", async () => {
    discord.refuseVoiceMessages.add("2015");
    const ogg = oggOpusFile(Array<number>(30).fill(90));
    const stored = await media.put(ogg, { mime: "audio/ogg", name: "voice.ogg" });
    const deliveryId = await sendReply("2015", "", [{ kind: "audio", mime: "audio/ogg", name: "voice.ogg", size: ogg.byteLength, ref: stored.ref }]);
    await waitFor(() => receipts.find((r) => r.deliveryId === deliveryId && r.status === "delivered"), 20_000, "delivered");
    const posts = discord.sent.filter((m) => m.channelId === "2015" && m.method === "POST");
    assert.equal(posts.length, 1, "one message: the refused voice message was not posted");
    assert.deepEqual({ flags: posts[0]!.body.flags, name: posts[0]!.files[0]?.name, type: posts[0]!.files[0]?.contentType, attachments: posts[0]!.body.attachments },
      { flags: undefined, name: "voice.ogg", type: "audio/ogg", attachments: [{ id: 0, filename: "voice.ogg" }] });
    assert.deepEqual(posts[0]!.files[0]!.bytes, ogg);
  });

  /** what went through interaction `id`'s webhook: the deferred message's edits and the follow-ups */
  const viaInteraction = (id: string) => discord.sent.filter((m) => m.interactionId === id);

  it("registers the generic command and the router's commands globally at start, as the application", async () => {
    const put = await waitFor(() => discord.commandPuts.find((p) => p.scope === "global"), 20_000, "the global registration");
    const names = put.commands.map((c) => c.name);
    assert.equal(names[0], "lurk");
    for (const name of ["new", "reset", "status", "stop", "model", "think", "verbose", "compact", "help"]) assert.ok(names.includes(name), `/${name} registered`);
    assert.deepEqual(put.commands[0]!.options?.map((o) => [o.name, o.type, o.required]), [["text", 3, true]]);
    assert.ok(discord.commandPuts.every((p) => p.scope === "global" && p.commands.length === put.commands.length), "one bulk overwrite per start, all alike");
  });

  it("an interaction is answered deferred, stored like a message, and its reply edits the deferred message", async () => {
    system.fake.enqueue({ kind: "text", text: "Hello from the **slash** side.", chunks: 3 });
    const i = discord.interaction({ name: "lurk", channelId: "2020", guildId: "g1", options: { text: "hello by slash" } });
    await waitFor(() => discord.interactions.get(i.id)!.callbacks.length > 0, 3_000, "the answer within 3 s");
    assert.deepEqual(discord.interactions.get(i.id)!.callbacks, [{ type: 5 }], "deferred");
    const stored = await storedInbound(`interaction:${i.id}`);
    assert.deepEqual({ text: stored.text, conversation: stored.conversation, peer: stored.peer, sender: stored.sender, mentioned: stored.mentioned }, { text: "hello by slash", conversation: "2020", peer: { kind: "channel", id: "2020", guildId: "g1" }, sender: { id: "111", name: "Ann" }, mentioned: true });
    await waitFor(() => viaInteraction(i.id).some((m) => m.content === "Hello from the **slash** side."), 20_000, "the reply");
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(viaInteraction(i.id).map((m) => [m.method, m.via]), [["PATCH", "original"]], "one edit of @original, nothing else");
    assert.deepEqual(viaInteraction(i.id)[0]!.body.allowed_mentions, { parse: [] });
    assert.equal(discord.sent.filter((m) => m.channelId === "2020" && !m.via).length, 0, "no channel message, no draft");
    const request = system.fake.requests.at(-1)!.body.messages.at(-1);
    assert.equal(typeof request?.content === "string" ? request.content : "", `hello by slash\n[message_id: interaction:${i.id}]`);
  });

  it("a long reply to an interaction: the first part edits @original, the others are follow-ups", async () => {
    const paragraph = `${"word ".repeat(150).trim()}.`;
    const text = Array.from({ length: 5 }, () => paragraph).join("\n\n");
    system.fake.enqueue({ kind: "text", text, chunks: 1 });
    const i = discord.interaction({ name: "lurk", channelId: "2021", options: { text: "write a lot" } });
    await waitFor(() => viaInteraction(i.id).map((m) => m.content).join("").length >= 5 * paragraph.length - 10, 20_000, "all parts");
    const sent = viaInteraction(i.id);
    assert.ok(sent.length >= 3, `${sent.length} parts`);
    assert.deepEqual(sent.map((m) => m.via), ["original", ...sent.slice(1).map(() => "followup")]);
    assert.ok(sent.every((m) => m.content.length <= 2000));
  });

  it("the same interaction twice is processed once", async () => {
    system.fake.enqueue({ kind: "text", text: "only once", chunks: 1 });
    system.fake.enqueue({ kind: "text", text: "a second run", chunks: 1 });
    const i = discord.interaction({ name: "lurk", channelId: "2022", options: { text: "once please" } });
    discord.replay("INTERACTION_CREATE", i);
    await waitFor(() => viaInteraction(i.id).some((m) => m.content === "only once"), 20_000, "the reply");
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(system.fake.requests.length, 1, "one run");
    assert.equal(viaInteraction(i.id).length, 1, "one answer");
    assert.equal(discord.interactions.get(i.id)!.callbacks.length, 1, "acknowledged once (the replay got 40060)");
  });

  it("a router command through an interaction returns the router's answer in @original", async () => {
    const i = discord.interaction({ name: "status", channelId: "2023" });
    const stored = await storedInbound(`interaction:${i.id}`);
    assert.equal(stored.text, "/status");
    const answer = await waitFor(() => viaInteraction(i.id).find((m) => m.via === "original"), 20_000, "the status");
    assert.match(answer.content, /^Session agent:main:\S+ \(\w+\), agent main\n[^]*run: idle/, "the router's /status");
    assert.equal(system.fake.requests.length, 0, "no model run");
  });

  it("an interaction whose token died answers in the channel instead", async () => {
    system.fake.enqueue({ kind: "text", text: "late answer", chunks: 20 });
    const i = discord.interaction({ name: "lurk", channelId: "2024", options: { text: "take your time" } });
    await waitFor(() => discord.interactions.get(i.id)!.callbacks.length > 0, 3_000, "deferred");
    discord.expireInteraction(i.id);
    await waitFor(() => discord.sent.find((m) => m.channelId === "2024" && !m.via && m.content === "late answer"), 20_000, "the channel message");
    assert.equal(viaInteraction(i.id).length, 0, "nothing through the dead token");
  });

  it("a channel restarted after deferring still answers through the interaction", async () => {
    system.fake.enqueue({ kind: "text", text: "answered after a restart", chunks: 30 });
    const i = discord.interaction({ name: "lurk", channelId: "2025", options: { text: "slowly" } });
    await storedInbound(`interaction:${i.id}`);
    await system.actors.get("channel-discord")!.kill();
    await system.startActor("channel-discord");
    await waitFor(() => viaInteraction(i.id).find((m) => m.via === "original" && m.content === "answered after a restart"), 20_000, "the reply in @original");
    assert.equal(discord.sent.filter((m) => m.channelId === "2025" && !m.via).length, 0, "no channel message");
  });

  it("an interaction whose run ends silent deletes its deferred \"thinking…\" message", async () => {
    system.fake.enqueue({ kind: "text", text: "NO_REPLY", chunks: 1 });
    const i = discord.interaction({ name: "lurk", channelId: "2027", options: { text: "nothing to say" } });
    await waitFor(() => viaInteraction(i.id).find((m) => m.method === "DELETE"), 20_000, "the deferred message deleted");
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(viaInteraction(i.id).map((m) => [m.method, m.via]), [["DELETE", "original"]], "deleted, nothing sent");
    assert.equal(discord.sent.filter((m) => m.channelId === "2027" && !m.via).length, 0, "no channel message");
  });

  it("a channel down when an interaction's run ended silent deletes the \"thinking…\" when it starts again", async () => {
    system.fake.enqueue({ kind: "text", text: "I looked at everything and there is nothing to add here, so NO_REPLY", chunks: 30 });
    const i = discord.interaction({ name: "lurk", channelId: "2028", options: { text: "think, then say nothing" } });
    await waitFor(() => system.fake.requests.some((r) => JSON.stringify(r.body.messages).includes("think, then say nothing")), 20_000, "the run started");
    await new Promise((r) => setTimeout(r, 200)); // the run's first event names its session
    await system.actors.get("channel-discord")!.kill();
    await new Promise((r) => setTimeout(r, 3_000)); // the streamed silent reply (30 chunks, 60 ms apart) ends meanwhile
    assert.equal(viaInteraction(i.id).length, 0, "nothing happened while the channel was down");
    await system.startActor("channel-discord");
    await waitFor(() => viaInteraction(i.id).find((m) => m.method === "DELETE"), 20_000, "deleted by the start-up sweep");
    assert.deepEqual(viaInteraction(i.id).map((m) => m.method), ["DELETE"]);
  });

  it("registers per guild when commandGuildIds is set", async () => {
    await system.actors.get("channel-discord")?.stop();
    const earlier = discord.commandPuts.length;
    writeConfig({ commandGuildIds: ["123456789012345678", "223456789012345678"], slashCommand: "/ask" });
    await system.startActor("channel-discord");
    const puts = await waitFor(() => discord.commandPuts.length >= earlier + 2 ? discord.commandPuts.slice(earlier) : undefined, 20_000, "two guild registrations");
    assert.deepEqual(puts.map((p) => p.scope).sort(), ["123456789012345678", "223456789012345678"], "no global one");
    assert.equal(puts[0]!.commands[0]!.name, "ask", "the configured generic command, its / dropped");
    assert.ok(puts[0]!.commands.some((c) => c.name === "status"));
  });

  it("a refused registration (403) is logged with the fix and the channel keeps answering messages", async () => {
    await system.actors.get("channel-discord")?.stop();
    discord.refuseCommands = true;
    writeConfig();
    try {
      await system.startActor("channel-discord");
      await waitFor(() => /could not register the Discord slash commands.*applications\.commands/.test(system.actors.get("channel-discord")!.output()), 20_000, "the warning");
      system.fake.enqueue({ kind: "text", text: "still here", chunks: 1 });
      discord.userMessage({ channelId: "2026", content: "are you there?" });
      await waitFor(() => contents("2026").includes("still here"), 20_000, "the answer");
    } finally {
      discord.refuseCommands = false;
    }
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

describe("discord slash commands the router refuses", () => {
  let system: TestSystem;
  let discord: FakeDiscordServer;
  let admin: NatsConnection;
  const refusals: string[] = [];

  /** the router reads `routing` at start: these tests restart it with another one */
  const configure = (routing: Record<string, unknown>) => writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({
    channels: { discord: { enabled: true, botToken: discord.token, apiRoot: discord.apiRoot } },
    routing,
  }));

  before(async () => {
    discord = await FakeDiscordServer.start();
    system = await TestSystem.start({ config: { routing: { dm: { policy: "disabled" } } } });
    configure({ dm: { policy: "disabled" } });
    await system.startActor("channel-discord");
    admin = await system.nats.connect("admin");
    admin.subscribe(S.eventsOf("router"), { callback: (_e, m) => { const ev = m.json<{ event: string; data: { reason?: string } }>(); if (ev.event === "refused" && ev.data.reason) refusals.push(ev.data.reason); } });
    await admin.flush();
  });
  after(async () => {
    await admin?.close();
    await system?.actors.get("channel-discord")?.stop();
    await system?.stop();
    await discord?.close();
  });

  const viaInteraction = (id: string) => discord.sent.filter((m) => m.interactionId === id);
  const refusedCount = (reason: string) => refusals.filter((r) => r === reason).length;

  /** A slash command answered deferred whose "thinking…" becomes `text`, with no run and nothing else sent. */
  async function refusedCommand(opts: { channelId: string; guildId?: string }, reason: string, text: string) {
    const before = refusedCount(reason);
    const i = discord.interaction({ name: "lurk", ...opts, options: { text: "are you there?" } });
    const edit = await waitFor(() => viaInteraction(i.id).find((m) => m.via === "original"), 20_000, "the refusal in @original");
    assert.deepEqual(discord.interactions.get(i.id)!.callbacks, [{ type: 5 }], "deferred first");
    assert.equal(edit.content, text);
    await waitFor(() => refusedCount(reason) > before, 5_000, `the router's refused event (${reason})`);
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(viaInteraction(i.id).map((m) => [m.method, m.via]), [["PATCH", "original"]], "one edit of the deferred message, nothing else");
    assert.equal(discord.sent.filter((m) => m.channelId === opts.channelId && !m.via).length, 0, "no channel message");
    assert.equal(system.fake.requests.length, 0, "no run");
  }

  it("DM policy disabled: a slash command's deferred message becomes the refusal; no run", async () => {
    await refusedCommand({ channelId: "3001" }, "dm-disabled", "I don't take direct messages.");
  });

  it("DM policy disabled: an ordinary DM still gets no answer at all", async () => {
    const before = refusedCount("dm-disabled");
    discord.userMessage({ channelId: "3002", content: "hello?" });
    await waitFor(() => refusedCount("dm-disabled") > before, 20_000, "refused");
    await new Promise((r) => setTimeout(r, 800));
    assert.deepEqual(discord.sent.filter((m) => m.channelId === "3002"), [], "nothing sent");
    assert.equal(system.fake.requests.length, 0, "no run");
  });

  it("DM and guild allowlists: a slash command from a sender or a channel not listed is answered with the refusal", async () => {
    await system.actors.get("router")!.stop();
    configure({ dm: { policy: "allowlist", allowFrom: ["discord:222"] }, groups: { policy: "allowlist", allowFrom: ["discord:3999"] } });
    await system.startActor("router");
    await refusedCommand({ channelId: "3003" }, "dm-not-allowed", "You are not on this bot's allowlist here, so I can't answer you.");
    await refusedCommand({ channelId: "3004", guildId: "g1" }, "group-not-allowed", "I don't answer in this channel.");
  });
});
