/**
 * The Slack channel: event mapping (pure), and end to end with the whole system, the fake LLM
 * and a local Slack (Web API + Socket Mode WebSocket, test/fakes/slack-server.ts) that
 * @slack/web-api and @slack/socket-mode talk to. Files go through the real media store (a user's
 * files are downloaded with the bot token; replies' files go up by Slack's external upload flow).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { envelope, inboundMessageSchema, STREAMS, subjects, type Attachment, type InboundMessage } from "../shared/contract/index.js";
import { MEDIA_DEFAULTS } from "../shared/runtime/config-media.js";
import { MediaStore, sha256Hex } from "../shared/runtime/media.js";
import { mayCarryToken } from "../services/channel-slack/files.js";
import { actionToInbound, conversationOf, eventToInbound, slashToInbound, targetOf, type SlackEvent } from "../services/channel-slack/inbound.js";
import { approvalBlocks } from "../services/channel-slack/send.js";
import { FakeSlackServer } from "./fakes/slack-server.js";
import { startActorProcess, waitFor } from "./harness/actors.js";
import { TestSystem } from "./harness/system.js";

const BOT = { userId: "UBOT0001", teamId: "T1" };
const S = subjects();
/** the channel's media.maxFileMb in these tests (about 51 KB) */
const MAX_FILE_MB = 0.05;
const ev = (over: Partial<SlackEvent>): SlackEvent => ({ type: "message", channel: "D100", channel_type: "im", user: "U1", text: "hi", ts: "1700000000.000100", ...over });

describe("slack event mapping", () => {
  it("maps DMs, channels, threads, mentions and ignores bots and edits", () => {
    const dm = eventToInbound(ev({}), BOT)!;
    assert.deepEqual({ id: dm.id, peer: dm.peer, mentioned: dm.mentioned, sender: dm.sender, text: dm.text }, { id: "D100:1700000000.000100", peer: { kind: "dm", id: "U1" }, mentioned: true, sender: { id: "U1" }, text: "hi" });
    assert.deepEqual(targetOf(dm.conversation), { channel: "D100" });

    const plain = eventToInbound(ev({ channel: "C200", channel_type: "channel", text: "lunch?", team: "T9" }), BOT)!;
    assert.deepEqual(plain.peer, { kind: "channel", id: "C200", teamId: "T9" });
    assert.equal(plain.mentioned, false, "a channel message without a mention");

    const mention = eventToInbound(ev({ channel: "C200", channel_type: "channel", text: "<@UBOT0001|lurk>  /new" }), BOT)!;
    assert.equal(mention.mentioned, true);
    assert.equal(mention.text, "/new", "the bot's own mention is cut");
    const other = eventToInbound(ev({ channel: "C200", channel_type: "channel", text: "<@UOTHER> look &lt;here&gt; &amp; now" }), BOT)!;
    assert.equal(other.mentioned, false, "another user's mention");
    assert.equal(other.text, "<@UOTHER> look <here> & now", "Slack's escapes are undone");
    const appMention = eventToInbound({ type: "app_mention", channel: "C200", user: "U1", text: "<@UBOT0001> hey", ts: "1700000000.000200" }, BOT)!;
    assert.equal(appMention.mentioned, true);
    assert.deepEqual(appMention.peer, { kind: "channel", id: "C200", teamId: "T1" }, "app_mention has no channel_type; the bot's team fills in");

    const thread = eventToInbound(ev({ channel: "C200", channel_type: "channel", text: "<@UBOT0001> and?", ts: "1700000001.000300", thread_ts: "1700000000.000200" }), BOT)!;
    assert.deepEqual(thread.peer, { kind: "thread", id: "C200", threadId: "1700000000.000200", teamId: "T1" });
    assert.ok(!thread.conversation.includes("."), "the conversation is a subject token");
    assert.deepEqual(targetOf(thread.conversation), { channel: "C200", threadTs: "1700000000.000200" });
    const parent = eventToInbound(ev({ channel: "C200", channel_type: "channel", thread_ts: "1700000000.000100" }), BOT)!;
    assert.equal(parent.peer.kind, "channel", "a thread's parent (thread_ts = ts) is not in the thread");
    assert.equal(eventToInbound(ev({ channel_type: "mpim", channel: "G300" }), BOT)!.peer.kind, "group");

    assert.equal(eventToInbound(ev({ bot_id: "B1" }), BOT), undefined, "bots are ignored");
    assert.equal(eventToInbound(ev({ user: "UBOT0001" }), BOT), undefined, "its own messages are ignored");
    assert.equal(eventToInbound(ev({ subtype: "message_changed" }), BOT), undefined, "edits are ignored");
    assert.equal(eventToInbound(ev({ text: "<@UBOT0001>" }), BOT), undefined, "a bare mention says nothing");
    const file = eventToInbound(ev({ subtype: "file_share", text: "", files: [{ id: "F1", name: "a.png", mimetype: "image/png", size: 10, url_private: "https://files/a.png" }] }), BOT)!;
    assert.deepEqual(file.attachments, [{ kind: "image", mime: "image/png", name: "a.png", size: 10 }], "no url: the actor stores the file and adds its ref");
    assert.throws(() => targetOf("web-1"), /not a Slack conversation/);
    assert.deepEqual(targetOf(conversationOf({ channel: "C1", threadTs: "1.2" })), { channel: "C1", threadTs: "1.2" });
  });

  it("sends the bot token only to Slack's hosts (or the configured apiUrl's origin)", () => {
    const api = "https://slack.com/api/";
    assert.equal(mayCarryToken("https://files.slack.com/files-pri/T1-F1/download/a.png", api), true);
    assert.equal(mayCarryToken("http://127.0.0.1:4000/files-pri/T1-F1/a.png", "http://127.0.0.1:4000/api/"), true);
    assert.equal(mayCarryToken("http://files.slack.com/files-pri/T1-F1/a.png", api), false, "not over plain http");
    assert.equal(mayCarryToken("https://files.slack.com.evil.example/a.png", api), false);
    assert.equal(mayCarryToken("not a url", api), false);
  });

  it("maps the app's slash command: text, DM or channel peer, /help when empty; ignores other commands", () => {
    const cmd = { command: "/lurk", text: "/status", user_id: "U1", user_name: "ann", channel_id: "C9", team_id: "T1", trigger_id: "tr-1" };
    const inChannel = slashToInbound(cmd, "/lurk")!;
    assert.deepEqual([inChannel.id, inChannel.text, inChannel.peer, inChannel.mentioned], ["slash:C9:tr-1", "/status", { kind: "channel", id: "C9", teamId: "T1" }, true]);
    assert.deepEqual(slashToInbound({ ...cmd, channel_id: "D4", text: "  " }, "/lurk")?.peer, { kind: "dm", id: "U1" });
    assert.equal(slashToInbound({ ...cmd, text: "" }, "/lurk")?.text, "/help");
    assert.equal(slashToInbound(cmd, "/bot"), undefined);
    assert.equal(slashToInbound({ ...cmd, user_id: undefined }, "/lurk"), undefined);
  });

  it("maps an approval button click to /approve and builds the buttons", () => {
    const click = actionToInbound({
      type: "block_actions", user: { id: "U1", name: "ann" }, channel: { id: "C200" }, team: { id: "T1" },
      message: { ts: "1700000005.000100", thread_ts: "1700000000.000200" }, actions: [{ action_id: "lurk_deny", value: "appr-9", action_ts: "1700000006.1" }],
    })!;
    assert.equal(click.text, "/deny appr-9");
    assert.deepEqual(click.sender, { id: "U1", name: "ann" });
    assert.deepEqual(targetOf(click.conversation), { channel: "C200", threadTs: "1700000000.000200" });
    assert.equal(actionToInbound({ type: "block_actions", user: { id: "U1" }, channel: { id: "C1" }, message: { ts: "1.1" }, actions: [{ action_id: "other", value: "x" }] }), undefined);
    const blocks = approvalBlocks("x".repeat(5000), "appr-9");
    assert.equal((blocks[0] as { text: { text: string } }).text.text.length, 3000, "a section holds 3000 characters");
    assert.deepEqual((blocks[1] as { elements: { action_id: string; value: string }[] }).elements.map((e) => [e.action_id, e.value]), [["lurk_approve", "appr-9"], ["lurk_deny", "appr-9"]]);
  });
});

describe("slack channel end to end", () => {
  let system: TestSystem;
  let slack: FakeSlackServer;
  let admin: NatsConnection;
  let mediaNc: NatsConnection;
  let media: MediaStore;
  const receipts: { deliveryId: string; status: string; platformMessageId?: string }[] = [];

  before(async () => {
    slack = await FakeSlackServer.start();
    system = await TestSystem.start({ fake: { chunkDelayMs: 60 } });
    writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({
      channels: { slack: { enabled: true, botToken: slack.botToken, appToken: slack.appToken, apiUrl: slack.apiUrl, draftIntervalMs: 200 } },
      routing: { dm: { policy: "open" } },
      media: { maxFileMb: MAX_FILE_MB },
    }));
    await system.startActor("channel-slack");
    admin = await system.nats.connect("admin");
    admin.subscribe(S.eventsOf("channel-slack"), { callback: (_e, m) => { const { data } = m.json<{ data: { deliveryId?: string; status?: string; platformMessageId?: string } }>(); if (data.deliveryId) receipts.push({ deliveryId: data.deliveryId, status: data.status ?? "", ...(data.platformMessageId ? { platformMessageId: data.platformMessageId } : {}) }); } });
    mediaNc = await system.nats.connect("channel-slack");
    media = new MediaStore(mediaNc, MEDIA_DEFAULTS);
  });
  after(async () => {
    await admin?.close();
    await mediaNc?.close();
    await system?.actors.get("channel-slack")?.stop();
    await system?.stop();
    await slack?.close();
  });
  beforeEach(() => system.fake.reset());

  const texts = (channel: string) => [...slack.messages.entries()].filter(([k]) => k.startsWith(`${channel}:`)).map(([, v]) => v);
  /** the last slack message in LURK_INBOUND, with the time JetStream stored it (ms, sub-ms precise) */
  const lastInbound = async (): Promise<{ msg: InboundMessage; storedMs: number } | undefined> => {
    try {
      const m = await (await jetstreamManager(admin)).streams.getMessage(STREAMS.inbound, { last_by_subj: S.inbound("slack") });
      if (!m) return undefined;
      const fraction = /\.(\d+)Z$/.exec(m.timestamp)?.[1] ?? "0";
      const storedMs = Math.floor(Date.parse(m.timestamp) / 1000) * 1000 + Number(`0.${fraction}`) * 1000;
      return { msg: inboundMessageSchema.parse(m.json()), storedMs };
    } catch {
      return undefined;
    }
  };

  /** the message `id` as the channel stored it in LURK_INBOUND */
  const storedInbound = (id: string) => waitFor(async () => {
    const last = await lastInbound();
    return last?.msg.id === id ? last : undefined;
  }, 20_000, `message ${id} in LURK_INBOUND`);
  /** a reply into `conversation` as the agent-runner sends one, without a run; resolves when delivered */
  const deliverReply = async (conversation: string, text: string, attachments: Attachment[]) => {
    const out = envelope("lurk.outbound.message.v1", { channel: "slack", conversation, kind: "reply" as const, replyTo: [], attachments, text });
    await jetstream(admin).publish(S.outbound("slack", conversation), JSON.stringify(out));
    return waitFor(() => receipts.find((r) => r.deliveryId === out.id && r.status === "delivered"), 20_000, "delivered");
  };

  it("answers a DM, the streaming draft edited into the reply", async () => {
    system.fake.enqueue({ kind: "text", text: "Hi **Ann**, this answer streams in a few pieces to the chat.", chunks: 8 });
    slack.userMessage({ channel: "D0001", text: "hello" });
    await waitFor(() => texts("D0001").includes("Hi *Ann*, this answer streams in a few pieces to the chat."), 20_000, "final reply");
    const posts = slack.sent.filter((m) => m.channel === "D0001" && m.method === "chat.postMessage");
    assert.equal(posts.length, 1, "the draft became the reply");
    assert.ok(slack.sent.some((m) => m.channel === "D0001" && m.method === "chat.update"), "edited into the reply");
    assert.equal(posts[0]!.body.thread_ts, undefined, "a DM answer is not threaded");
  });

  it("answers a mention inside a thread, in the thread, without the mention", async () => {
    system.fake.enqueue({ kind: "text", text: "thread answer", chunks: 1 });
    const root = slack.nextTs();
    slack.userMessage({ channel: "C0002", channelType: "channel", threadTs: root, text: `<@${slack.bot.userId}> what's up` });
    await waitFor(() => texts("C0002").includes("thread answer"), 20_000, "thread reply");
    const out = slack.sent.filter((m) => m.channel === "C0002" && m.method === "chat.postMessage");
    assert.ok(out.length >= 1 && out.every((m) => m.body.thread_ts === root), "posted into the thread");
    const request = system.fake.requests.at(-1)!.body.messages.at(-1);
    assert.match(typeof request?.content === "string" ? request.content : "", /^what's up\n\[message_id: [A-Z0-9]+:\d+\.\d+\]$/, "the mention was cut (the platform id follows)");
  });

  it("acknowledges an envelope only after the message is stored, and processes a redelivery once", async () => {
    system.fake.enqueue({ kind: "text", text: "once only", chunks: 1 });
    const { envelope: first, ts } = slack.userMessage({ channel: "D0003", text: "count me once" });
    const ack = await waitFor(() => slack.ackOf(first.envelope_id), 10_000, "the ACK");
    const stored = await waitFor(lastInbound, 10_000, "the stored message");
    assert.equal(stored.msg.id, `D0003:${ts}`);
    assert.ok(stored.storedMs <= ack.atMs + 0.5, `stored (${stored.storedMs}) before the ACK (${ack.atMs})`);
    const second = slack.redeliver(first);
    await waitFor(() => slack.ackOf(second.envelope_id), 10_000, "the redelivery's ACK");
    await waitFor(() => texts("D0003").includes("once only"), 20_000, "reply");
    await new Promise((r) => setTimeout(r, 800));
    // on failure, say whether the extra message is a second run's reply or a draft left behind
    const seen = `messages ${JSON.stringify(texts("D0003"))}, model requests ${system.fake.requests.length}`;
    assert.equal(texts("D0003").length, 1, `one reply (${seen})`);
    assert.equal(system.fake.requests.length, 1, `one run (${seen})`);
  });

  it("the app's slash command is a message to the bot from its user: answered where it was typed; other commands are only acknowledged", async () => {
    system.fake.enqueue({ kind: "text", text: "slash answer", chunks: 1 });
    const before = system.fake.requests.length;
    const cmd = slack.slashCommand({ channel: "D0015", command: "/lurk", text: "what &amp; why" });
    const ack = await waitFor(() => slack.ackOf(cmd.envelope_id), 10_000, "the command's ACK");
    const stored = await waitFor(lastInbound, 10_000, "the stored message");
    assert.equal(stored.msg.text, "what & why");
    assert.equal(stored.msg.mentioned, true);
    assert.deepEqual([stored.msg.peer.kind, stored.msg.sender.id], ["dm", "UANN0001"]);
    assert.ok(stored.storedMs <= ack.atMs + 0.5, "stored before the ACK");
    await waitFor(() => texts("D0015").includes("slash answer"), 20_000, "the answer in the DM");
    const other = slack.slashCommand({ channel: "D0015", command: "/weather", text: "tomorrow" });
    await waitFor(() => slack.ackOf(other.envelope_id), 10_000, "the other command's ACK");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(system.fake.requests.length, before + 1, "only /lurk started a run");
  });

  it("waits out a 429 with Retry-After and delivers once", async () => {
    // two: a draft may take the first (drafts are best effort); the reply then meets the second
    slack.rateLimitNextPosts(2);
    system.fake.enqueue({ kind: "text", text: "after the limit", chunks: 1 });
    slack.userMessage({ channel: "C0004", channelType: "channel", text: `<@${slack.bot.userId}> are you there` });
    await waitFor(() => texts("C0004").includes("after the limit"), 20_000, "delivered after the rate limit");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(texts("C0004").length, 1, "delivered once");
    assert.equal(slack.rateLimited, 2, "both 429s were answered");
    assert.match(system.actors.get("channel-slack")!.output(), /platform asked to wait/, "the delivery waited out Retry-After");
  });

  it("shows approval buttons and turns a click into /approve from the clicking user", async () => {
    const conversation = conversationOf({ channel: "D0005" });
    const approval = envelope("lurk.outbound.message.v1", {
      channel: "slack", conversation, kind: "approval" as const, replyTo: [], attachments: [],
      text: "Run `rm -rf build`?", approval: { approvalId: "appr-123", tool: "exec", command: "rm -rf build", expiresAt: Date.now() + 60_000 },
    });
    await jetstream(admin).publish(S.outbound("slack", conversation), JSON.stringify(approval));
    const posted = await waitFor(() => slack.sent.find((m) => m.channel === "D0005" && m.method === "chat.postMessage"), 10_000, "the approval message");
    const buttons = (posted.body.blocks as { type: string; elements?: { action_id: string; value: string }[] }[]).find((b) => b.type === "actions")!;
    assert.deepEqual(buttons.elements!.map((e) => e.value), ["appr-123", "appr-123"]);

    const click = slack.buttonClick({ channel: "D0005", messageTs: posted.ts, actionId: buttons.elements![0]!.action_id, value: "appr-123", user: "UANN0005" });
    const stored = await waitFor(async () => {
      const last = await lastInbound();
      return last?.msg.text === "/approve appr-123" ? last : undefined;
    }, 10_000, "the /approve message in LURK_INBOUND");
    assert.equal(stored.msg.sender.id, "UANN0005");
    const ack = await waitFor(() => slack.ackOf(click.envelope_id), 10_000, "the click's ACK");
    assert.ok(stored.storedMs <= ack.atMs + 0.5, "stored before the ACK");
    await waitFor(() => texts("D0005").some((t) => t.includes("Approved by <@UANN0005>")), 10_000, "the buttons replaced by the decision");
  });

  it("a channel killed while its draft is shown edits that draft into the reply after the restart: one message", async () => {
    const full = Array.from({ length: 6 }, (_, i) => `Sentence number ${i + 1} of a reply that streams slowly.`).join(" ");
    system.fake.enqueue({ kind: "text", text: full, chunks: 40 });
    slack.userMessage({ channel: "D0006", text: "tell me slowly" });
    await waitFor(() => slack.sent.find((m) => m.channel === "D0006" && m.method === "chat.update"), 20_000, "the draft shown and edited");
    assert.ok(texts("D0006")[0]!.length < full.length, "killed in the middle of the reply");
    await system.actors.get("channel-slack")!.kill();
    await system.startActor("channel-slack");
    await waitFor(() => texts("D0006").includes(full), 20_000, "the full reply after the restart");
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(texts("D0006"), [full], "exactly one message: the draft became the reply");
    assert.equal(slack.sent.filter((m) => m.channel === "D0006" && m.method === "chat.postMessage").length, 1, "no second message was posted");
  });

  it("downloads a shared file with the bot token into the media store before the message is stored: the message carries its ref, never a url or the token", async () => {
    system.fake.enqueue({ kind: "text", text: "got the numbers", chunks: 1 });
    const csv = Buffer.from(`team,score\n${Array.from({ length: 200 }, (_, i) => `t${i},${i * 7}`).join("\n")}\n`);
    const { envelope: env, ts } = slack.userMessage({ channel: "D0020", text: "here are the scores", files: [{ name: "scores.csv", mimetype: "text/csv", bytes: csv }] });
    const { msg, storedMs } = await storedInbound(`D0020:${ts}`);
    const ack = await waitFor(() => slack.ackOf(env.envelope_id), 10_000, "the ACK");
    assert.ok(storedMs <= ack.atMs + 0.5, "stored (with its file) before the ACK");
    const a = msg.attachments[0]!;
    assert.deepEqual({ kind: a.kind, mime: a.mime, name: a.name, size: a.size, url: a.url, error: a.error }, { kind: "file", mime: "text/csv", name: "scores.csv", size: csv.byteLength, url: undefined, error: undefined });
    assert.equal(a.ref, sha256Hex(csv));
    assert.deepEqual(Buffer.from((await media.get(a.ref!)).bytes), csv, "the stored bytes are the user's file");
    const downloads = slack.downloads.filter((d) => d.path.endsWith("/scores.csv"));
    assert.deepEqual(downloads.map((d) => [d.path.includes("/download/"), d.authorized]), [[true, true]], "url_private_download, once, with the bot token");
    const anonymous = await fetch(`${slack.url}${downloads[0]!.path}`);
    assert.match(anonymous.headers.get("content-type") ?? "", /text\/html/, "without the token the fake answers its sign-in page, not the file");
    assert.ok(!JSON.stringify(msg).includes(slack.botToken), "the token is not in the message");
    await waitFor(() => texts("D0020").includes("got the numbers"), 20_000, "the answer");
    assert.ok(!system.actors.get("channel-slack")!.output().includes(slack.botToken), "nor in the logs");
  });

  it("a file announced above media.maxFileMb arrives with an error and is not downloaded", async () => {
    system.fake.enqueue({ kind: "text", text: "too big for me", chunks: 1 });
    const { ts } = slack.userMessage({ channel: "D0021", text: "", files: [{ name: "backup.zip", mimetype: "application/zip", bytes: randomBytes(64), announcedSize: 30 * 1024 * 1024 }] });
    const { msg } = await storedInbound(`D0021:${ts}`);
    const a = msg.attachments[0]!;
    assert.deepEqual({ kind: a.kind, name: a.name, size: a.size, ref: a.ref, url: a.url }, { kind: "file", name: "backup.zip", size: 30 * 1024 * 1024, ref: undefined, url: undefined });
    assert.match(a.error ?? "", /not downloaded: 30\.0 MB is above the .* cap \(media\.maxFileMb\)/);
    assert.deepEqual(slack.downloads.filter((d) => d.path.endsWith("/backup.zip")), [], "not downloaded");
    await waitFor(() => texts("D0021").includes("too big for me"), 20_000, "the answer");
  });

  it("a reply with a file in a thread posts the text, then uploads the file into the thread (getUploadURLExternal, upload_url, completeUploadExternal)", async () => {
    const png = Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), randomBytes(5000)]);
    const stored = await media.put(png, { mime: "image/png", name: "chart.png" });
    const root = slack.nextTs();
    const calls = slack.calls.length;
    const receipt = await deliverReply(conversationOf({ channel: "C0022", threadTs: root }), "The **chart**:", [{ kind: "image", mime: "image/png", name: "chart.png", size: png.byteLength, ref: stored.ref }]);
    const posts = slack.sent.filter((m) => m.channel === "C0022" && m.method === "chat.postMessage");
    assert.deepEqual(posts.map((p) => [p.text, p.body.thread_ts]), [["The *chart*:", root]], "the text, in the thread, and no empty message");
    const upload = slack.uploads.find((u) => u.channel === "C0022")!;
    const order = (ts: string) => Number(ts.split(".")[1]);
    assert.ok(order(posts[0]!.ts) < order(upload.ts), "the text first, then the file");
    assert.deepEqual(slack.calls.slice(calls).filter((c) => c.startsWith("files.")), ["files.getUploadURLExternal", "files.completeUploadExternal"], "Slack's external upload flow");
    assert.deepEqual({ filename: upload.filename, title: upload.title, threadTs: upload.threadTs }, { filename: "chart.png", title: "chart.png", threadTs: root });
    assert.deepEqual(upload.bytes, png, "the uploaded bytes are the stored file");
    assert.equal(receipt.platformMessageId, `C0022:${upload.ts}`, "the file's message ts from its share");
  });

  it("a file the media store does not have is posted as its fallback text, and the delivery succeeds", async () => {
    const uploads = slack.uploads.length;
    await deliverReply(conversationOf({ channel: "D0023" }), "The report:", [{ kind: "file", mime: "application/pdf", name: "report.pdf", ref: "d".repeat(64) }]);
    const texts23 = slack.sent.filter((m) => m.channel === "D0023" && m.method === "chat.postMessage").map((m) => m.text);
    assert.equal(texts23.length, 2);
    assert.equal(texts23[0], "The report:");
    assert.match(texts23[1]!, /^\[file: report\.pdf could not be sent: media d{12}… is not in the media store/);
    assert.equal(slack.uploads.length, uploads, "nothing uploaded");
  });

  it("refuses to start without tokens, naming SLACK_BOT_TOKEN and SLACK_APP_TOKEN", async () => {
    writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({ channels: { slack: { enabled: true, apiUrl: slack.apiUrl } } }));
    await assert.rejects(startActorProcess("channel-slack", system.nats, { ...system.env, SLACK_BOT_TOKEN: "", SLACK_APP_TOKEN: "" }, 10_000), /SLACK_BOT_TOKEN[\s\S]*SLACK_APP_TOKEN/);
  });
});
