/**
 * The Matrix channel: event mapping, message content and config rules (pure), the audit rules,
 * and end to end with the whole system, the fake LLM and a local homeserver
 * (test/fakes/matrix-server.ts) speaking the Client-Server API v3 wire format: /sync long polls
 * with next_batch and limited timelines, /messages pages, room state, PUT send with txnId dedup,
 * media upload/download, typing, invites and joins.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { envelope, inboundMessageSchema, STREAMS, subjects, type InboundMessage } from "../shared/contract/index.js";
import { DeliveryError } from "../shared/runtime/channel/index.js";
import { MatrixApi } from "../services/channel-matrix/api.js";
import { EncryptionGate } from "../services/channel-matrix/encryption.js";
import { DisplayNames } from "../services/channel-matrix/names.js";
import { MatrixState } from "../services/channel-matrix/rooms.js";
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

const S = subjects();
const BOT = { userId: "@lurk:test.local", displayName: "Lurk" };
const ANN = "@ann:test.local";
const BOB = "@bob:test.local";
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

describe("matrix bounds and encryption state", () => {
  it("keeps at most its cap of display names, least recently used first out", () => {
    const names = new DisplayNames(3);
    for (const u of ["@a:s", "@b:s", "@c:s"]) names.set(ROOM, u, u.slice(1, 2));
    assert.equal(names.get(ROOM, "@a:s"), "a", "a is used again");
    names.set(ROOM, "@d:s", "d");
    assert.equal(names.size, 3);
    assert.equal(names.get(ROOM, "@b:s"), undefined, "the least recently used went");
    assert.deepEqual(["@a:s", "@c:s", "@d:s"].map((u) => names.get(ROOM, u)), ["a", "c", "d"]);
    for (let i = 0; i < 10_000; i++) names.set(`!r${i}:s`, ANN, `name ${i}`);
    assert.equal(names.size, 3, "bounded under churn");
    names.forget("!r9999:s");
    assert.equal(names.get("!r9999:s", ANN), undefined);
  });

  it("asks the homeserver once about a room it has no record of (404: not encrypted) and refuses to send into an encrypted one", async () => {
    const hs = await FakeMatrixServer.start();
    const dir = mkdtempSync(join(tmpdir(), "lurk-matrix-gate-"));
    const state = new MatrixState(dir);
    try {
      const gate = new EncryptionGate(new MatrixApi(hs.url, hs.token), state);
      const plain = hs.createRoom({ members: [ANN] });
      const secret = hs.createRoom({ members: [ANN], encrypted: true });
      assert.equal(await gate.isEncrypted(plain), false);
      assert.equal(await gate.isEncrypted(plain), false);
      assert.deepEqual(hs.stateLookups, [plain], "looked up once, then kept");
      assert.equal(state.room(plain).encrypted, false);
      await assert.rejects(gate.assertSendable(secret, "reply"), (err: DeliveryError) => err instanceof DeliveryError && err.opts.permanent === true && /end-to-end encrypted room/.test(err.message));
      assert.equal(state.room(secret).encrypted, true);
      await gate.assertSendable(plain, "reply");
      await state.updateRoom(plain, { encrypted: true });
      await assert.rejects(gate.assertSendable(plain, "typing notification"), /encrypted/, "the record marked by the sync wins");
      assert.deepEqual(hs.stateLookups, [plain, secret]);
      const gone = "!gone:test.local";
      await assert.rejects(gate.assertSendable(gone, "reply"), (err: DeliveryError) => err.opts.permanent === true && /M_FORBIDDEN/.test(err.message), "a room the bot is not in: the homeserver's 403, for good");
    } finally {
      await state.close();
      rmSync(dir, { recursive: true, force: true });
      await hs.close();
    }
  });
});

describe("matrix channel end to end", () => {
  let system: TestSystem;
  let hs: FakeMatrixServer;
  /** a DM that existed, with a message, before the channel's first start */
  let historyRoom: string;
  const OWNER = "@owner:test.local";
  const routing = { dm: { policy: "open" }, groups: { requireMention: true }, commands: { owners: [`matrix:${OWNER}`] } };

  let admin: NatsConnection;
  const receipts: { deliveryId: string; status: string; error?: string }[] = [];
  /** every inbound publish of the channel (JetStream dedup or not): message id and text */
  const published: { id: string; text: string }[] = [];
  const writeConfig = (extra: Record<string, unknown> = {}) => writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({
    channels: { matrix: { enabled: true, homeserverUrl: hs.url, userId: hs.userId, syncTimeoutMs: 2_000, ...extra } },
    routing,
  }));

  before(async () => {
    hs = await FakeMatrixServer.start();
    historyRoom = hs.createRoom({ members: ["@old:test.local"] });
    hs.userMessage(historyRoom, "@old:test.local", { msgtype: "m.text", body: "old history, never answer" });
    system = await TestSystem.start({ fake: { chunkDelayMs: 20 }, config: { routing }, env: { LURKBOT_MATRIX_ACCESS_TOKEN: hs.token } });
    writeConfig();
    admin = await system.nats.connect("admin");
    admin.subscribe(S.eventsOf("channel-matrix"), {
      callback: (_e, m) => {
        const { data } = m.json<{ data: { deliveryId?: string; status?: string; error?: string } }>();
        if (data.deliveryId) receipts.push({ deliveryId: data.deliveryId, status: data.status ?? "", ...(data.error ? { error: data.error } : {}) });
      },
    });
    admin.subscribe(S.inbound("matrix"), { callback: (_e, m) => { const msg = m.json<{ id: string; text: string }>(); published.push({ id: msg.id, text: msg.text }); } });
    await admin.flush();
    await system.startActor("channel-matrix");
  });
  after(async () => {
    await admin?.close();
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
    await waitFor(() => /end-to-end encrypted room/.test(system.actors.get("channel-matrix")!.output()) || undefined, 10_000, "the encrypted-room warning in the log");
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

  /** the texts of the messages LURK_INBOUND holds for `roomId`, in stream order */
  const storedTexts = async (roomId: string): Promise<string[]> => {
    const consumer = await jetstream(admin).consumers.get(STREAMS.inbound, { filter_subjects: S.inbound("matrix") });
    const out: InboundMessage[] = [];
    for await (const m of await consumer.fetch({ max_messages: 5_000, expires: 2_000 })) {
      out.push(inboundMessageSchema.parse(m.json()));
      if (m.info.pending === 0) break;
    }
    return out.filter((m) => roomOf(m.conversation) === roomId).map((m) => m.text);
  };
  const restartWhile = async (during: () => void) => {
    await system.actors.get("channel-matrix")!.stop();
    during();
    await system.startActor("channel-matrix");
  };
  const output = () => system.actors.get("channel-matrix")!.output();

  it("a gap of 120 messages while down is caught up with /messages: all stored in order, nothing older again (with `to`, and by the last event id when the server ignores `to`); beyond catchUpMax the oldest are skipped with a warning", async () => {
    const room = hs.createRoom({ members: [ANN, BOB] });
    hs.userMessage(room, ANN, { msgtype: "m.text", body: "warm-up" });
    await waitFor(async () => (await storedTexts(room)).includes("warm-up") || undefined, 20_000, "the room seen");
    const texts = (prefix: string, from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `${prefix} ${from + i}`);
    const say = (list: string[]) => list.forEach((t) => hs.userMessage(room, t.endsWith("0") ? BOB : ANN, { msgtype: "m.text", body: t }));

    const syncsBefore = hs.syncs.length;
    await restartWhile(() => say(texts("gap", 1, 120)));
    await waitFor(async () => (await storedTexts(room)).includes("gap 120") || undefined, 30_000, "the gap stored");
    assert.deepEqual(await storedTexts(room), ["warm-up", ...texts("gap", 1, 120)], "every message, in order");
    const resumedFrom = hs.syncs[syncsBefore]!.since;
    const pages = hs.messagesCalls.filter((c) => c.roomId === room);
    assert.ok(pages.length >= 1 && pages.every((c) => c.to === resumedFrom), "paged back to the previous sync position (`to`)");

    // a server that ignores `to`: the catch-up stops at the room's last event taken
    hs.ignoreMessagesTo = true;
    const before = published.length;
    try {
      await restartWhile(() => say(texts("again", 1, 120)));
      await waitFor(async () => (await storedTexts(room)).includes("again 120") || undefined, 30_000, "the second gap stored");
    } finally {
      hs.ignoreMessagesTo = false;
    }
    assert.deepEqual(await storedTexts(room), ["warm-up", ...texts("gap", 1, 120), ...texts("again", 1, 120)]);
    assert.deepEqual(published.slice(before).map((p) => p.text), texts("again", 1, 120), "no message from before the gap published again");

    writeConfig({ catchUpMax: 30 });
    try {
      await restartWhile(() => say(texts("third", 1, 120)));
      await waitFor(async () => (await storedTexts(room)).includes("third 120") || undefined, 30_000, "the third gap stored");
    } finally {
      writeConfig();
    }
    // 50 in the sync's timeline, 30 more from /messages
    assert.deepEqual((await storedTexts(room)).slice(241), texts("third", 41, 120));
    await waitFor(() => /more events came into the room during a sync gap than channels\.matrix\.catchUpMax: the older ones were skipped/.test(output()) || undefined, 10_000, "the catch-up warning in the log");
    assert.equal(system.fake.requests.length, 0, "unmentioned group messages: no runs");
  });

  it("a delivery (or typing) into a room that turned encrypted is refused for good and never reaches the homeserver", async () => {
    const room = hs.createRoom({ members: [ANN, BOB] });
    hs.userMessage(room, ANN, { msgtype: "m.text", body: "soon private" });
    await waitFor(async () => (await storedTexts(room)).includes("soon private") || undefined, 20_000, "the room seen");
    hs.enableEncryption(room, ANN);
    await waitFor(() => hs.roomEvents(room).length === 1 || undefined, 20_000, "the one notice");
    const conversation = conversationOf(room);
    const typing = envelope("lurk.outbound.message.v1", { channel: "matrix", conversation, kind: "typing" as const, replyTo: [], attachments: [], text: "" });
    await jetstream(admin).publish(S.outbound("matrix", conversation), JSON.stringify(typing));
    const out = envelope("lurk.outbound.message.v1", { channel: "matrix", conversation, kind: "reply" as const, replyTo: [], attachments: [], text: "this must not go out in clear" });
    await jetstream(admin).publish(S.outbound("matrix", conversation), JSON.stringify(out));
    const failed = await waitFor(() => receipts.find((r) => r.deliveryId === out.id && r.status === "failed"), 20_000, "delivery_failed");
    assert.match(failed.error ?? "", /end-to-end encrypted room/);
    await new Promise((r) => setTimeout(r, 500));
    const sends = hs.sends.filter((s) => s.roomId === room);
    assert.deepEqual(sends.map((s) => s.content.msgtype), ["m.notice"], "only the notice: the reply never reached the homeserver");
    assert.ok(!hs.typing.some((t) => t.roomId === room), "no typing there either");
    assert.equal(receipts.filter((r) => r.deliveryId === out.id).length, 1, "failed once, not retried");
  });

  it("a member's m.room.encrypted event in an unencrypted room does not silence the bot", async () => {
    const room = dmRoom();
    hs.userMessage(room, ANN, { algorithm: "m.megolm.v1.aes-sha2", ciphertext: "AwgAEnAc...", session_id: "s1", device_id: "D1" }, "m.room.encrypted");
    system.fake.enqueue({ kind: "text", text: "still answering", chunks: 1 });
    hs.userMessage(room, ANN, { msgtype: "m.text", body: "can you hear me?" });
    await waitFor(() => hs.roomEvents(room).length === 1 || undefined, 20_000, "the answer");
    assert.deepEqual(hs.roomEvents(room).map((e) => [e.content.msgtype, e.content.body]), [["m.text", "still answering"]], "no encryption notice");
    assert.ok(hs.stateLookups.includes(room), "the room's state was asked");
    assert.ok(!output().split("\n").some((line) => line.includes(room) && line.includes("end-to-end encrypted room")), "no encrypted-room warning for it");
  });

  it("an oversize /sync answer is refused while it streams (the channel hangs up early) and the loop goes on", async () => {
    const room = dmRoom();
    const total = 48 * 1024 * 1024;
    hs.failNext("sync", { status: 200, stream: { bytes: total, chunk: 1024 * 1024, delayMs: 15 } });
    system.fake.enqueue({ kind: "text", text: "after the big one", chunks: 1 });
    // wakes the current long poll; the next /sync answer is the big one
    hs.userMessage(room, ANN, { msgtype: "m.text", body: "hello after a big answer" });
    const big = await waitFor(() => hs.streamed[0], 20_000, "the big answer started");
    await waitFor(() => big.clientClosed || big.finished || undefined, 30_000, "the big answer ended");
    assert.deepEqual([big.clientClosed, big.finished], [true, false], "the channel hung up before the answer was whole");
    assert.ok(big.written < 40 * 1024 * 1024, `${big.written} of ${total} bytes written`);
    await waitFor(() => hs.roomEvents(room).length === 1 || undefined, 30_000, "the answer after the refused batch");
    // the child's log reaches us through its stdout pipe, maybe after the homeserver saw the reply
    await waitFor(() => /the answer is above 32 MB; refused without reading it whole/.test(output()) || undefined, 10_000, "the refusal in the channel's log");
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
    const logged = (re: RegExp) => waitFor(() => re.test(system.actors.get("channel-matrix")!.output()) || undefined, 10_000, `${re} in the log`);
    await logged(/unexpected answer from the homeserver \(next_batch/);
    await logged(/\/sync failed; retrying/);
  });
});
