/**
 * The Matrix channel: event mapping, message content and config rules (pure), the audit rules,
 * and end to end with the whole system, the fake LLM and a local homeserver
 * (test/fakes/matrix-server.ts) speaking the Client-Server API v3 wire format: /sync long polls
 * with next_batch, PUT send with txnId dedup, media upload/download, typing, invites and joins.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { toMatrixHtml } from "../shared/runtime/channel/markdown.js";
import { matrixChannelSchema } from "../shared/runtime/config-channels.js";
import { parseConfig } from "../shared/runtime/config.js";
import { matrixChecks } from "../services/cli/audit/matrix.js";
import { conversationOf, eventToInbound, roomOf, stripReplyFallback } from "../services/channel-matrix/inbound.js";
import { fileContent, textContent, txnIdFor } from "../services/channel-matrix/send.js";
import type { RoomEvent } from "../services/channel-matrix/wire.js";
import { FakeMatrixServer } from "./fakes/matrix-server.js";
import { waitFor } from "./harness/actors.js";
import { runCli } from "./harness/cli.js";
import { TestSystem } from "./harness/system.js";

const BOT = { userId: "@lurk:test.local", displayName: "Lurk" };
const ANN = "@ann:test.local";
const ROOM = "!abc123:test.local";
/** a 1x1 PNG */
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");
const ev = (content: Record<string, unknown>, over: Partial<RoomEvent> = {}): RoomEvent => ({ type: "m.room.message", event_id: "$e1", sender: ANN, origin_server_ts: 1_700_000_000_000, content, ...over });

describe("matrix event mapping and content", () => {
  it("maps DMs and rooms, mentions, replies (fallback cut) and ignores notices, edits and its own events", () => {
    const dm = eventToInbound(ev({ msgtype: "m.text", body: "hello" }), ROOM, true, BOT, "Ann")!.inbound;
    assert.deepEqual({ id: dm.id, peer: dm.peer, sender: dm.sender, text: dm.text, mentioned: dm.mentioned, ts: dm.ts }, { id: "$e1", peer: { kind: "dm", id: ANN }, sender: { id: ANN, name: "Ann" }, text: "hello", mentioned: true, ts: 1_700_000_000_000 });
    assert.equal(roomOf(dm.conversation), ROOM);
    assert.ok(!dm.conversation.includes("."), "the conversation is a subject token");
    assert.throws(() => roomOf(conversationOf("not-a-room")), /not a Matrix room/);

    const plain = eventToInbound(ev({ msgtype: "m.text", body: "lunch?" }), ROOM, false, BOT)!.inbound;
    assert.deepEqual([plain.peer, plain.mentioned], [{ kind: "group", id: ROOM }, false]);
    const byName = eventToInbound(ev({ msgtype: "m.text", body: "Lurk: /new" }), ROOM, false, BOT)!.inbound;
    assert.deepEqual([byName.mentioned, byName.text], [true, "/new"], "the display name, cut from the start");
    assert.equal(eventToInbound(ev({ msgtype: "m.text", body: "ask @lurk:test.local" }), ROOM, false, BOT)!.inbound.mentioned, true, "the user id");
    assert.equal(eventToInbound(ev({ msgtype: "m.text", body: "hey you", "m.mentions": { user_ids: [BOT.userId] } }), ROOM, false, BOT)!.inbound.mentioned, true, "m.mentions");
    assert.equal(eventToInbound(ev({ msgtype: "m.text", body: "lurking around" }), ROOM, false, BOT)!.inbound.mentioned, false, "not a word of its own");

    const reply = eventToInbound(ev({
      msgtype: "m.text", body: "> <@lurk:test.local> earlier answer\n> second line\n\nand why?",
      format: "org.matrix.custom.html", formatted_body: "<mx-reply><blockquote>earlier</blockquote></mx-reply>and why?",
      "m.relates_to": { "m.in_reply_to": { event_id: "$prev" } },
    }), ROOM, true, BOT)!.inbound;
    assert.deepEqual([reply.text, reply.replyToMessageId], ["and why?", "$prev"]);
    assert.equal(stripReplyFallback("> not a fallback? no blank line"), "", "quoted lines only: nothing left");
    assert.equal(stripReplyFallback("plain"), "plain");

    assert.equal(eventToInbound(ev({ msgtype: "m.notice", body: "another bot" }), ROOM, true, BOT), undefined, "m.notice is ignored");
    assert.equal(eventToInbound(ev({ msgtype: "m.text", body: "* fixed", "m.new_content": { msgtype: "m.text", body: "fixed" }, "m.relates_to": { rel_type: "m.replace", event_id: "$e0" } }), ROOM, true, BOT), undefined, "edits are ignored");
    assert.equal(eventToInbound(ev({ msgtype: "m.text", body: "me" }, { sender: BOT.userId }), ROOM, true, BOT), undefined, "its own events");
    assert.equal(eventToInbound(ev({}), ROOM, true, BOT), undefined, "a redacted event");

    const image = eventToInbound(ev({ msgtype: "m.image", body: "look at this", filename: "dot.png", url: "mxc://test.local/abc", info: { mimetype: "image/png", size: 68 } }), ROOM, true, BOT)!;
    assert.equal(image.inbound.text, "look at this", "the body is a caption when a filename is given");
    assert.deepEqual(image.files, [{ mxc: "mxc://test.local/abc", kind: "image", mime: "image/png", name: "dot.png", size: 68 }]);
    const file = eventToInbound(ev({ msgtype: "m.file", body: "report.pdf", url: "mxc://test.local/f" }), ROOM, true, BOT)!;
    assert.deepEqual([file.inbound.text, file.files[0]!.mime, file.files[0]!.kind], ["", "application/pdf", "file"], "the body is the file name");
    assert.equal(eventToInbound(ev({ msgtype: "m.image", body: "x.png", file: { url: "mxc://test.local/enc" } }), ROOM, true, BOT), undefined, "encrypted media");
  });

  it("renders markdown as Matrix HTML with a plain body, replies, voice messages and stable transaction ids", () => {
    assert.equal(toMatrixHtml("Hi **Ann** <b>x</b>\n[site](https://example.org) [bad](javascript:alert(1))\n```js\na < b\n```"),
      "Hi <strong>Ann</strong> &lt;b&gt;x&lt;/b&gt;<br>\n<a href=\"https://example.org\">site</a> bad (javascript:alert(1))<br>\n<pre><code class=\"language-js\">a &lt; b</code></pre>");
    const c = textContent("Hi **Ann**", { replyTo: "$in" });
    assert.deepEqual(c, { msgtype: "m.text", body: "Hi Ann", format: "org.matrix.custom.html", formatted_body: "Hi <strong>Ann</strong>", "m.mentions": {}, "m.relates_to": { "m.in_reply_to": { event_id: "$in" } } });
    assert.deepEqual(textContent("just text"), { msgtype: "m.text", body: "just text", "m.mentions": {} }, "no HTML when there is no markup");
    const voice = fileContent({ bytes: Buffer.alloc(10), name: "reply.ogg", mime: "audio/ogg", kind: "audio" }, "mxc://s/v");
    assert.deepEqual([voice.msgtype, voice.info, "org.matrix.msc3245.voice" in voice], ["m.audio", { mimetype: "audio/ogg", size: 10 }, true]);
    assert.equal(txnIdFor("run-1:reply:0", 0), txnIdFor("run-1:reply:0", 0));
    assert.notEqual(txnIdFor("run-1:reply:0", 0), txnIdFor("run-1:reply:0", 1));
  });

  it("config: https unless loopback (or allowPlainHttp), a valid user id; the audit flags plain http and autoJoin always", () => {
    const base = { enabled: true, userId: "@bot:example.org" };
    assert.match(JSON.stringify(matrixChannelSchema.safeParse({ ...base, homeserverUrl: "http://matrix.example.org" }).error?.issues), /https is required/);
    assert.ok(matrixChannelSchema.safeParse({ ...base, homeserverUrl: "http://127.0.0.1:8008" }).success);
    assert.ok(matrixChannelSchema.safeParse({ ...base, homeserverUrl: "http://[::1]:8008" }).success);
    assert.ok(matrixChannelSchema.safeParse({ ...base, homeserverUrl: "http://synapse:8008", allowPlainHttp: true }).success);
    assert.match(JSON.stringify(matrixChannelSchema.safeParse({ ...base, userId: "bot", homeserverUrl: "https://m.example.org" }).error?.issues), /Matrix user id/);
    assert.match(JSON.stringify(matrixChannelSchema.safeParse({ enabled: true, homeserverUrl: "https://m.example.org" }).error?.issues), /userId/);

    const audit = (matrix: Record<string, unknown>, routing: Record<string, unknown> = {}) => {
      const config = parseConfig({ channels: { matrix: { ...base, ...matrix } }, routing }, { LURKBOT_HOME: "/tmp/lurk-matrix-audit" }, "/tmp/lurk-matrix-audit");
      return matrixChecks({ config, env: {}, configPath: "/tmp/lurk-matrix-audit/config.json", rawConfig: undefined }).map((f) => `${f.id}:${f.level}`);
    };
    assert.deepEqual(audit({ homeserverUrl: "https://m.example.org" }), ["channel.matrix.no-e2ee:info"]);
    assert.ok(audit({ homeserverUrl: "http://synapse:8008", allowPlainHttp: true }).includes("channel.matrix.plain-http:critical"));
    assert.ok(audit({ homeserverUrl: "https://m.example.org", autoJoin: "always" }, { dm: { policy: "open" } }).includes("channel.matrix.autojoin-open:critical"));
    assert.ok(audit({ homeserverUrl: "https://m.example.org", autoJoin: "always" }, { dm: { policy: "pairing" } }).includes("channel.matrix.autojoin-open:warning"));
  });
});

describe("matrix channel end to end", () => {
  let system: TestSystem;
  let hs: FakeMatrixServer;
  /** a DM that existed, with a message, before the channel's first start */
  let historyRoom: string;
  const OWNER = "@owner:test.local";
  const routing = { dm: { policy: "open" }, groups: { requireMention: true }, commands: { owners: [`matrix:${OWNER}`] } };

  before(async () => {
    hs = await FakeMatrixServer.start();
    historyRoom = hs.createRoom({ members: ["@old:test.local"] });
    hs.userMessage(historyRoom, "@old:test.local", { msgtype: "m.text", body: "old history, never answer" });
    system = await TestSystem.start({ fake: { chunkDelayMs: 20 }, config: { routing }, env: { LURKBOT_MATRIX_ACCESS_TOKEN: hs.token } });
    writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({
      channels: { matrix: { enabled: true, homeserverUrl: hs.url, userId: hs.userId, syncTimeoutMs: 2_000 } },
      routing,
    }));
    await system.startActor("channel-matrix");
  });
  after(async () => {
    await system?.actors.get("channel-matrix")?.stop();
    await system?.stop();
    await hs?.close();
  });
  beforeEach(() => system.fake.reset());

  const dmRoom = () => hs.createRoom({ members: [ANN] });
  const lastUserText = () => {
    const content = system.fake.requests.at(-1)?.body.messages.at(-1)?.content;
    return typeof content === "string" ? content : JSON.stringify(content);
  };

  it("answers a DM in that room as a reply to the message, with HTML, while typing; history from before the first start is skipped", async () => {
    const room = dmRoom();
    system.fake.enqueue({ kind: "text", text: "Hello **Ann**, nice to meet you.", chunks: 4 });
    const asked = hs.userMessage(room, ANN, { msgtype: "m.text", body: "hello there" });
    const [reply] = await waitFor(() => (hs.roomEvents(room).length ? hs.roomEvents(room) : undefined), 20_000, "the reply");
    assert.deepEqual(reply!.content, {
      msgtype: "m.text", body: "Hello Ann, nice to meet you.", format: "org.matrix.custom.html", formatted_body: "Hello <strong>Ann</strong>, nice to meet you.",
      "m.mentions": {}, "m.relates_to": { "m.in_reply_to": { event_id: asked } },
    });
    assert.ok(hs.typing.some((t) => t.roomId === room && t.typing), "typing while the run wrote");
    await waitFor(() => hs.typing.some((t) => t.roomId === room && !t.typing) || undefined, 10_000, "typing ended");
    assert.equal(hs.syncs[0]!.since, undefined, "the first sync of a fresh install");
    assert.deepEqual((hs.syncs[0]!.filter as { room: { state: unknown } }).room.state, { types: ["m.room.member", "m.room.encryption"], lazy_load_members: true });
    assert.equal(hs.roomEvents(historyRoom).length, 0, "the message from before the first start is not answered");
    assert.ok(!system.fake.requests.some((r) => JSON.stringify(r.body).includes("old history")), "nor sent to the model");
    assert.ok(!system.actors.get("channel-matrix")!.output().includes(hs.token), "no access token in the logs");
  });

  it("`lurkbot status` shows the channel", async () => {
    const status = await runCli(["status"], system.nats.env(system.nats.passwordEnv("cli")));
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /^channel-matrix +\S+ +\d+ /m, "a row for the running channel");
    const json = await runCli(["status", "--json"], system.nats.env(system.nats.passwordEnv("cli")));
    const row = (JSON.parse(json.stdout) as { instances: { name: string; description: string | null }[] }).instances.find((i) => i.name === "channel-matrix");
    assert.match(row?.description ?? "", /Matrix account/);
    assert.ok(!status.stdout.includes(hs.token) && !json.stdout.includes(hs.token));
  });

  it("a restart resumes from the stored next_batch: the message sent while it was down is answered once, older ones not again", async () => {
    const room = dmRoom();
    system.fake.enqueue({ kind: "text", text: "first answer", chunks: 1 });
    hs.userMessage(room, ANN, { msgtype: "m.text", body: "before the restart" });
    await waitFor(() => hs.roomEvents(room).length === 1 || undefined, 20_000, "the first answer");
    await system.actors.get("channel-matrix")!.stop();
    const syncsBefore = hs.syncs.length;
    hs.userMessage(room, ANN, { msgtype: "m.text", body: "while you were away" });
    system.fake.enqueue({ kind: "text", text: "second answer", chunks: 1 });
    await system.startActor("channel-matrix");
    await waitFor(() => hs.roomEvents(room).length === 2 || undefined, 20_000, "the answer to the message sent while down");
    assert.ok(hs.syncs[syncsBefore]!.since, "the restarted channel synced from its stored token");
    await new Promise((r) => setTimeout(r, 800));
    assert.deepEqual(hs.roomEvents(room).map((e) => e.content.body), ["first answer", "second answer"]);
    assert.equal(system.fake.requests.length, 2, "two runs: nothing replayed");
    assert.match(lastUserText(), /while you were away/);
  });

  it("a retried delivery reuses its transaction id: the homeserver's txnId dedup keeps it to one message", async () => {
    const room = dmRoom();
    hs.failNext("send", { status: 502, afterStore: true, body: { errcode: "M_UNKNOWN", error: "bad gateway" } });
    system.fake.enqueue({ kind: "text", text: "only once, please", chunks: 1 });
    hs.userMessage(room, ANN, { msgtype: "m.text", body: "answer me once" });
    await waitFor(() => hs.sends.filter((s) => s.roomId === room && s.status === 200).length === 1 || undefined, 20_000, "the retried send");
    const sends = hs.sends.filter((s) => s.roomId === room);
    assert.deepEqual(sends.map((s) => s.status), [502, 200], "the answer was lost once, then the delivery was retried");
    assert.equal(sends[0]!.txnId, sends[1]!.txnId, "the same transaction id");
    assert.equal(sends[0]!.eventId, sends[1]!.eventId);
    assert.equal(hs.roomEvents(room).length, 1, "one message in the room");
  });

  it("in a room of more than two, a message without a mention starts no run (requireMention); one that mentions the bot is answered", async () => {
    const room = hs.createRoom({ members: [ANN, "@bob:test.local"] });
    hs.userMessage(room, ANN, { msgtype: "m.text", body: "lunch anyone?" });
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal(system.fake.requests.length, 0, "no run for the unmentioned message");
    system.fake.enqueue({ kind: "text", text: "group answer", chunks: 1 });
    const asked = hs.userMessage(room, "@bob:test.local", { msgtype: "m.text", body: "Lurk: what's up?", "m.mentions": { user_ids: [hs.userId] } });
    await waitFor(() => hs.roomEvents(room).length === 1 || undefined, 20_000, "the answer to the mention");
    assert.equal(system.fake.requests.length, 1);
    assert.deepEqual(hs.roomEvents(room)[0]!.content["m.relates_to"], { "m.in_reply_to": { event_id: asked } });
    assert.match(lastUserText(), /what's up\?/);
  });

  it("an image reaches the model as an image part (authenticated media, then the legacy endpoint of an older server)", async () => {
    const room = dmRoom();
    system.fake.enqueue({ kind: "text", text: "a single pixel", chunks: 1 }, { kind: "text", text: "still a pixel", chunks: 1 });
    hs.userMessage(room, ANN, { msgtype: "m.image", body: "what is this?", filename: "dot.png", url: hs.addMedia(PNG, "image/png"), info: { mimetype: "image/png", size: PNG.length } });
    await waitFor(() => hs.roomEvents(room).length === 1 || undefined, 20_000, "the answer");
    const parts = system.fake.requests.at(-1)!.body.messages.at(-1)!.content as { type: string; image_url?: { url: string } }[];
    assert.ok(Array.isArray(parts));
    assert.ok(parts.some((p) => p.type === "image_url" && p.image_url!.url === `data:image/png;base64,${PNG.toString("base64")}`), "the image as an image part");
    assert.ok(hs.downloads.at(-1)!.startsWith("/_matrix/client/v1/media/download/"));

    hs.legacyMediaOnly = true;
    try {
      hs.userMessage(room, ANN, { msgtype: "m.image", body: "and this?", filename: "dot2.png", url: hs.addMedia(PNG, "image/png"), info: { mimetype: "image/png" } });
      await waitFor(() => hs.roomEvents(room).length === 2 || undefined, 20_000, "the second answer");
      assert.ok(hs.downloads.at(-1)!.startsWith("/_matrix/media/v3/download/"), "the legacy endpoint after 404 M_UNRECOGNIZED");
      const last = system.fake.requests.at(-1)!.body.messages.at(-1)!.content as { type: string }[];
      assert.ok(last.some((p) => p.type === "image_url"));
    } finally {
      hs.legacyMediaOnly = false;
    }
  });

  it("an encrypted room gets one notice and nothing else", async () => {
    const room = hs.createRoom({ members: [ANN], encrypted: true });
    hs.userMessage(room, ANN, { algorithm: "m.megolm.v1.aes-sha2", ciphertext: "AwgAEnAc...", session_id: "s1", device_id: "D1" }, "m.room.encrypted");
    hs.userMessage(room, ANN, { algorithm: "m.megolm.v1.aes-sha2", ciphertext: "AwgBEnAc...", session_id: "s1", device_id: "D1" }, "m.room.encrypted");
    const [notice] = await waitFor(() => (hs.roomEvents(room).length ? hs.roomEvents(room) : undefined), 20_000, "the notice");
    assert.equal(notice!.content.msgtype, "m.notice");
    assert.match(String(notice!.content.body), /can't read encrypted messages.*encryption turned off/s);
    hs.userMessage(room, ANN, { msgtype: "m.text", body: "a plain message in the encrypted room" });
    hs.userMessage(room, ANN, { algorithm: "m.megolm.v1.aes-sha2", ciphertext: "AwgCEnAc...", session_id: "s1", device_id: "D1" }, "m.room.encrypted");
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal(hs.roomEvents(room).length, 1, "one notice, no answers");
    assert.equal(system.fake.requests.length, 0, "no run");
    assert.match(system.actors.get("channel-matrix")!.output(), /end-to-end encrypted room/);
  });

  it("joins an invite from an allowed user (autoJoin allowlist), not a stranger's", async () => {
    const strangers = hs.invite("@stranger:elsewhere.org");
    const owners = hs.invite(OWNER);
    await waitFor(() => hs.isJoined(owners) || undefined, 20_000, "the owner's room joined");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(hs.isJoined(strangers), false);
    assert.deepEqual(hs.joins.filter((r) => r === strangers || r === owners), [owners]);
  });

  it("waits out a 429 M_LIMIT_EXCEEDED for its retry_after_ms, then sends once", async () => {
    const room = dmRoom();
    hs.failNext("send", { status: 429, body: { errcode: "M_LIMIT_EXCEEDED", error: "Too Many Requests", retry_after_ms: 700 } });
    system.fake.enqueue({ kind: "text", text: "after the limit", chunks: 1 });
    hs.userMessage(room, ANN, { msgtype: "m.text", body: "are you there?" });
    await waitFor(() => hs.roomEvents(room).length === 1 || undefined, 20_000, "the answer");
    const sends = hs.sends.filter((s) => s.roomId === room);
    assert.deepEqual(sends.map((s) => s.status), [429, 200]);
    assert.ok(sends[1]!.at - sends[0]!.at >= 650, `waited ${sends[1]!.at - sends[0]!.at} ms of the 700 asked`);
    assert.equal(sends[0]!.txnId, sends[1]!.txnId);
  });

  it("a malformed /sync answer is logged and the loop goes on", async () => {
    const room = dmRoom();
    hs.failNext("sync", { status: 200, raw: "{\"rooms\": [" });
    hs.failNext("sync", { status: 200, body: { rooms: {} } });
    system.fake.enqueue({ kind: "text", text: "one", chunks: 1 }, { kind: "text", text: "two", chunks: 1 });
    // wakes the current long poll; the next two /sync answers are malformed
    hs.userMessage(room, ANN, { msgtype: "m.text", body: "wake up" });
    await waitFor(() => hs.roomEvents(room).length === 1 || undefined, 20_000, "the first answer");
    hs.userMessage(room, ANN, { msgtype: "m.text", body: "still there?" });
    await waitFor(() => hs.roomEvents(room).length === 2 || undefined, 30_000, "the answer after the malformed batches");
    const out = system.actors.get("channel-matrix")!.output();
    assert.match(out, /unexpected answer from the homeserver \(next_batch/);
    assert.match(out, /\/sync failed; retrying/);
  });
});
