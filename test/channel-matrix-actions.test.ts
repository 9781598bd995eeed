/**
 * The Matrix channel's message actions (the `message` tool's react, edit, delete) and threads:
 * thread mapping and event content (pure), then end to end with the whole system, the fake LLM
 * and the local homeserver (test/fakes/matrix-server.ts): actions published as outbound messages
 * of kind "action" (as the tool does), answered by the kit's receipts; m.thread messages routed
 * to a topic session and answered in the thread; `threads: "room"` keeping the room.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { buildSessionKey, envelope, inboundMessageSchema, STREAMS, subjects, type InboundMessage, type MessageAction } from "../shared/contract/index.js";
import { MEDIA_DEFAULTS } from "../shared/runtime/config-media.js";
import { MediaStore } from "../shared/runtime/media.js";
import { matrixChannelSchema } from "../shared/runtime/config-channels.js";
import { conversationOf, eventToInbound, roomOf, targetOf } from "../services/channel-matrix/inbound.js";
import { editContent, fileContent, reactionContent, textContent } from "../services/channel-matrix/send.js";
import type { RoomEvent } from "../services/channel-matrix/wire.js";
import { FakeMatrixServer } from "./fakes/matrix-server.js";
import { waitFor } from "./harness/actors.js";
import { TestSystem } from "./harness/system.js";

const S = subjects();
const BOT = { userId: "@lurk:test.local", displayName: "Lurk" };
const ANN = "@ann:test.local";
const BOB = "@bob:test.local";
const ROOM = "!abc123:test.local";
const ROOT = "$root_AbC-123";
const ev = (content: Record<string, unknown>, over: Partial<RoomEvent> = {}): RoomEvent => ({ type: "m.room.message", event_id: "$e1", sender: ANN, origin_server_ts: 1_700_000_000_000, content, ...over });
const inThread = (root: string, last = root, body = "in the thread") => ({ msgtype: "m.text", body, "m.relates_to": { rel_type: "m.thread", event_id: root, is_falling_back: true, "m.in_reply_to": { event_id: last } } });

describe("matrix threads and action content", () => {
  it("a thread message is the thread's conversation and a topic peer (no reply: the fallback); \"room\" mode and DMs keep the room's session", () => {
    const group = eventToInbound(ev(inThread(ROOT, "$last")), ROOM, false, BOT)!.inbound;
    assert.deepEqual(targetOf(group.conversation), { roomId: ROOM, threadRoot: ROOT });
    assert.equal(roomOf(group.conversation), ROOM);
    assert.ok(!/[.\s*>]/.test(group.conversation), "a subject token");
    assert.deepEqual(group.peer, { kind: "group", id: ROOM, topicId: ROOT });
    assert.equal(group.replyToMessageId, undefined, "is_falling_back: not a reply");
    const realReply = eventToInbound(ev({ ...inThread(ROOT), "m.relates_to": { rel_type: "m.thread", event_id: ROOT, is_falling_back: false, "m.in_reply_to": { event_id: "$quoted" } } }), ROOM, false, BOT)!.inbound;
    assert.equal(realReply.replyToMessageId, "$quoted", "a real reply in the thread");
    const odd = eventToInbound(ev({ ...inThread(ROOT), "m.relates_to": { rel_type: "m.thread", event_id: ROOT, is_falling_back: "yes", "m.in_reply_to": { event_id: "$quoted" } } }), ROOM, false, BOT);
    assert.deepEqual(odd && targetOf(odd.inbound.conversation), { roomId: ROOM, threadRoot: ROOT }, "a malformed is_falling_back does not drop the message");

    const dm = eventToInbound(ev(inThread(ROOT)), ROOM, true, BOT)!.inbound;
    assert.deepEqual([dm.peer, targetOf(dm.conversation)], [{ kind: "dm", id: ANN }, { roomId: ROOM, threadRoot: ROOT }], "a DM's thread: the DM's session, answered in the thread");

    const room = eventToInbound(ev(inThread(ROOT, "$last")), ROOM, false, BOT, undefined, { threads: "room" })!.inbound;
    assert.deepEqual([room.conversation, room.peer, room.replyToMessageId], [conversationOf(ROOM), { kind: "group", id: ROOM }, "$last"], "room mode: as before threads");

    const tooLong = eventToInbound(ev(inThread(`$${"x".repeat(120)}`)), ROOM, false, BOT)!.inbound;
    assert.deepEqual([tooLong.conversation, tooLong.peer], [conversationOf(ROOM), { kind: "group", id: ROOM }], "a root the conversation cannot hold: the room");
    assert.throws(() => targetOf(conversationOf(ROOM, "not-an-event")), /not a Matrix room/);
    assert.equal(matrixChannelSchema.parse({}).threads, "thread");
    assert.ok(!matrixChannelSchema.safeParse({ threads: "sometimes" }).success);
  });

  it("thread relations on text and files, edits with a \"* \" fallback, reactions as annotations", () => {
    assert.deepEqual(textContent("hi", { thread: ROOT, replyTo: "$asked" })["m.relates_to"], { rel_type: "m.thread", event_id: ROOT, is_falling_back: true, "m.in_reply_to": { event_id: "$asked" } });
    assert.deepEqual(textContent("hi", { thread: ROOT })["m.relates_to"], { rel_type: "m.thread", event_id: ROOT, is_falling_back: true, "m.in_reply_to": { event_id: ROOT } }, "a later part: the root as fallback");
    assert.deepEqual(textContent("hi", { thread: ROOT, replyTo: "$tagged", realReply: true })["m.relates_to"], { rel_type: "m.thread", event_id: ROOT, is_falling_back: false, "m.in_reply_to": { event_id: "$tagged" } });
    const file = fileContent({ bytes: Buffer.alloc(3), name: "a.txt", mime: "text/plain", kind: "file" }, "mxc://s/a", { thread: ROOT, replyTo: "$asked" });
    assert.equal((file["m.relates_to"] as { rel_type: string }).rel_type, "m.thread");

    assert.deepEqual(editContent("$mine", "now **bold**", false), {
      msgtype: "m.text", body: "* now bold", format: "org.matrix.custom.html", formatted_body: "* now <strong>bold</strong>", "m.mentions": {},
      "m.new_content": { msgtype: "m.text", body: "now bold", format: "org.matrix.custom.html", formatted_body: "now <strong>bold</strong>", "m.mentions": {} },
      "m.relates_to": { rel_type: "m.replace", event_id: "$mine" },
    });
    assert.deepEqual(editContent("$note", "plain", true), { msgtype: "m.notice", body: "* plain", "m.mentions": {}, "m.new_content": { msgtype: "m.notice", body: "plain", "m.mentions": {} }, "m.relates_to": { rel_type: "m.replace", event_id: "$note" } });
    assert.deepEqual(reactionContent("$x", "👍"), { "m.relates_to": { rel_type: "m.annotation", event_id: "$x", key: "👍" } });
  });
});

describe("matrix message actions and threads end to end", () => {
  let system: TestSystem;
  let hs: FakeMatrixServer;
  let admin: NatsConnection;
  const routing = { dm: { policy: "open" }, groups: { requireMention: true } };
  const receipts: { deliveryId: string; status: string; error?: string; platformMessageId?: string; sessionKey?: string }[] = [];
  const writeConfig = (extra: Record<string, unknown> = {}) => writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({
    channels: { matrix: { enabled: true, homeserverUrl: hs.url, userId: hs.userId, syncTimeoutMs: 2_000, ...extra } },
    routing,
  }));

  before(async () => {
    hs = await FakeMatrixServer.start();
    system = await TestSystem.start({ fake: { chunkDelayMs: 20 }, config: { routing }, env: { LURKBOT_MATRIX_ACCESS_TOKEN: hs.token } });
    writeConfig();
    admin = await system.nats.connect("admin");
    admin.subscribe(S.eventsOf("channel-matrix"), {
      callback: (_e, m) => {
        const { data } = m.json<{ data: { deliveryId?: string; status?: string; error?: string; platformMessageId?: string; sessionKey?: string } }>();
        if (data.deliveryId) receipts.push({ deliveryId: data.deliveryId, status: data.status ?? "", ...(data.error ? { error: data.error } : {}), ...(data.platformMessageId ? { platformMessageId: data.platformMessageId } : {}), ...(data.sessionKey ? { sessionKey: data.sessionKey } : {}) });
      },
    });
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

  const publish = async (conversation: string, fields: Record<string, unknown>) => {
    const out = envelope("lurk.outbound.message.v1", { channel: "matrix", conversation, replyTo: [], attachments: [], text: "", kind: "reply" as const, ...fields });
    await jetstream(admin).publish(S.outbound("matrix", conversation), JSON.stringify(out));
    return out;
  };
  const act = (conversation: string, action: MessageAction) => publish(conversation, { kind: "action", action });
  const receiptOf = (id: string, status: string) => waitFor(() => receipts.find((r) => r.deliveryId === id && r.status === status), 30_000, `${status} for ${id}`);
  /** a reply of the assistant in `conversation`, delivered: its delivery id and event id */
  const assistantSays = async (conversation: string, text: string) => {
    const out = await publish(conversation, { text });
    const r = await receiptOf(out.id, "delivered");
    return { deliveryId: out.id, eventId: r.platformMessageId! };
  };
  const groupRoom = () => hs.createRoom({ members: [ANN, BOB] });
  const stored = async (roomId: string): Promise<InboundMessage[]> => {
    const consumer = await jetstream(admin).consumers.get(STREAMS.inbound, { filter_subjects: S.inbound("matrix") });
    const out: InboundMessage[] = [];
    for await (const m of await consumer.fetch({ max_messages: 5_000, expires: 2_000 })) {
      out.push(inboundMessageSchema.parse(m.json()));
      if (m.info.pending === 0) break;
    }
    return out.filter((m) => roomOf(m.conversation) === roomId);
  };

  it("react: an m.reaction annotation on a user's message, once across a lost answer and a redelivery; taken back by redacting it (also one made elsewhere); an event of another room is refused", async () => {
    const room = groupRoom();
    const conversation = conversationOf(room);
    const asked = hs.userMessage(room, ANN, { msgtype: "m.text", body: "nice idea" });
    hs.failNext("send", { status: 502, afterStore: true, body: { errcode: "M_UNKNOWN", error: "bad gateway" } });
    const react = await act(conversation, { op: "react", messageId: asked, emoji: "👍" });
    await receiptOf(react.id, "delivered");
    const sends = hs.sends.filter((s) => s.roomId === room && s.type === "m.reaction");
    assert.deepEqual(sends.map((s) => s.status), [502, 200], "the answer was lost once, then the action was retried");
    assert.equal(sends[0]!.txnId, sends[1]!.txnId, "with the same transaction id");
    assert.deepEqual(sends[1]!.content, { "m.relates_to": { rel_type: "m.annotation", event_id: asked, key: "👍" } });
    assert.deepEqual(hs.reactions(room).map((r) => [r.eventId, r.key]), [[asked, "👍"]], "one reaction");

    // the same action delivered again: the ledger answers, the homeserver is not asked
    await jetstream(admin).publish(S.outbound("matrix", conversation), JSON.stringify(react));
    await receiptOf(react.id, "duplicate");
    assert.equal(hs.sends.filter((s) => s.roomId === room && s.type === "m.reaction").length, 2);
    // another delivery of the same reaction: the homeserver's M_DUPLICATE_ANNOTATION is success
    const again = await act(conversation, { op: "react", messageId: asked, emoji: "👍" });
    await receiptOf(again.id, "delivered");
    assert.equal(hs.reactions(room).length, 1);

    const remove = await act(conversation, { op: "react", messageId: asked, emoji: "👍", remove: true });
    await receiptOf(remove.id, "delivered");
    assert.deepEqual(hs.reactions(room), [], "taken back");
    assert.deepEqual(hs.redactions.filter((r) => r.roomId === room).map((r) => [r.eventId, r.status]), [[sends[1]!.eventId, 200]], "the reaction event redacted");

    // a reaction the bot's account made elsewhere (another client): found among the annotations
    const elsewhere = hs.userMessage(room, hs.userId, { "m.relates_to": { rel_type: "m.annotation", event_id: asked, key: "🎉" } }, "m.reaction");
    const removeOther = await act(conversation, { op: "react", messageId: asked, emoji: "🎉", remove: true });
    await receiptOf(removeOther.id, "delivered");
    assert.ok(hs.redactions.some((r) => r.eventId === elsewhere && r.status === 200));
    assert.deepEqual(hs.reactions(room), []);

    const otherRoom = groupRoom();
    const foreign = hs.userMessage(otherRoom, ANN, { msgtype: "m.text", body: "elsewhere" });
    const wrong = await act(conversation, { op: "react", messageId: foreign, emoji: "👍" });
    assert.match((await receiptOf(wrong.id, "failed")).error ?? "", /not in this conversation/);
    assert.equal(hs.reactions(otherRoom).length, 0);
  });

  it("edit: an m.replace of the assistant's message (\"* \" fallback), once across a lost answer; delete redacts every part; a user's message cannot be edited", async () => {
    const room = groupRoom();
    const conversation = conversationOf(room);
    const mine = await assistantSays(conversation, "first **version**");
    hs.failNext("send", { status: 502, afterStore: true, body: { errcode: "M_UNKNOWN", error: "bad gateway" } });
    const edit = await act(conversation, { op: "edit", messageId: mine.deliveryId, text: "second *version*" });
    await receiptOf(edit.id, "delivered");
    const edits = hs.sends.filter((s) => s.roomId === room && (s.content["m.relates_to"] as { rel_type?: string } | undefined)?.rel_type === "m.replace");
    assert.deepEqual(edits.map((s) => s.status), [502, 200]);
    assert.equal(edits[0]!.txnId, edits[1]!.txnId);
    assert.equal(edits[0]!.eventId, edits[1]!.eventId, "one edit event");
    assert.equal(edits[1]!.content.body, "* second version");
    assert.deepEqual(hs.shown(room, mine.eventId), { msgtype: "m.text", body: "second version", format: "org.matrix.custom.html", formatted_body: "second <em>version</em>", "m.mentions": {} });
    // by its event id too
    const edit2 = await act(conversation, { op: "edit", messageId: mine.eventId, text: "third" });
    await receiptOf(edit2.id, "delivered");
    assert.equal(hs.shown(room, mine.eventId)!.body, "third");

    const users = hs.userMessage(room, ANN, { msgtype: "m.text", body: "my own words" });
    const notMine = await act(conversation, { op: "edit", messageId: users, text: "hijacked" });
    assert.match((await receiptOf(notMine.id, "failed")).error ?? "", /not a message the assistant sent in this conversation/);
    assert.equal(hs.shown(room, users)!.body, "my own words");

    const long = await assistantSays(conversation, `${"a".repeat(5_000)}\n\n${"b".repeat(5_000)}`);
    const parts = hs.roomEvents(room).filter((e) => /^(a+|b+)$/.test(String(e.content.body)));
    assert.equal(parts.length, 2, "sent as two messages");
    hs.failNext("redact", { status: 502, afterStore: true, body: { errcode: "M_UNKNOWN", error: "bad gateway" } });
    const del = await act(conversation, { op: "delete", messageId: long.deliveryId });
    await receiptOf(del.id, "delivered");
    assert.deepEqual(parts.map((p) => hs.shown(room, p.event_id)), [{}, {}], "both parts redacted");
    const redactions = hs.redactions.filter((r) => r.roomId === room);
    assert.deepEqual(redactions.map((r) => r.status), [502, 200, 200], "the first answer lost, the retry gave the same redaction");
    assert.equal(redactions[0]!.redactionId, redactions[1]!.redactionId);
    assert.equal(hs.shown(room, mine.eventId)!.body, "third", "the other message untouched");
  });

  it("an encrypted room refuses every action: nothing reaches the homeserver", async () => {
    const room = groupRoom();
    const conversation = conversationOf(room);
    const mine = await assistantSays(conversation, "said in the clear");
    const asked = hs.userMessage(room, ANN, { msgtype: "m.text", body: "going private" });
    hs.enableEncryption(room, ANN);
    await waitFor(() => hs.roomEvents(room).some((e) => e.content.msgtype === "m.notice") || undefined, 20_000, "the encryption notice");
    const sendsBefore = hs.sends.filter((s) => s.roomId === room).length;
    const actions: MessageAction[] = [{ op: "react", messageId: asked, emoji: "👍" }, { op: "edit", messageId: mine.deliveryId, text: "changed" }, { op: "delete", messageId: mine.deliveryId }];
    for (const action of actions) {
      const out = await act(conversation, action);
      assert.match((await receiptOf(out.id, "failed")).error ?? "", /end-to-end encrypted room/, action.op);
    }
    assert.equal(hs.sends.filter((s) => s.roomId === room).length, sendsBefore, "no send");
    assert.equal(hs.redactions.filter((r) => r.roomId === room).length, 0, "no redaction");
  });

  it("a thread message is a topic session of its own, answered in the thread (files too); a gap's catch-up keeps the thread", async () => {
    const room = groupRoom();
    const root = hs.userMessage(room, ANN, { msgtype: "m.text", body: "topic: the picnic" });
    system.fake.enqueue({ kind: "text", text: "answer in the thread", chunks: 2 });
    const asked = hs.userMessage(room, BOB, { ...inThread(root, root, "Lurk: when is it?"), "m.mentions": { user_ids: [hs.userId] } });
    const reply = await waitFor(() => hs.roomEvents(room).find((e) => e.content.body === "answer in the thread"), 20_000, "the answer");
    assert.deepEqual(reply.content["m.relates_to"], { rel_type: "m.thread", event_id: root, is_falling_back: true, "m.in_reply_to": { event_id: asked } });
    const topicKey = buildSessionKey({ type: "topic", agentId: "main", channel: "matrix", groupId: room, topicId: root });
    const delivered = await waitFor(() => receipts.find((r) => r.platformMessageId === reply.event_id), 10_000, "the reply's receipt");
    assert.equal(delivered.sessionKey, topicKey, "the thread's own session");
    assert.ok(hs.typing.some((t) => t.roomId === room && t.typing), "typing shown in the room");
    const inbound = (await stored(room)).find((m) => m.id === asked)!;
    assert.deepEqual([inbound.peer, inbound.replyToMessageId, targetOf(inbound.conversation)], [{ kind: "group", id: room, topicId: root }, undefined, { roomId: room, threadRoot: root }]);

    const mediaNc = await system.nats.connect("channel-matrix");
    try {
      const media = new MediaStore(mediaNc, MEDIA_DEFAULTS);
      const bytes = Buffer.from("notes for the picnic\n");
      const { ref } = await media.put(bytes, { mime: "text/plain", name: "notes.txt" });
      const out = await publish(inbound.conversation, { text: "the list:", replyTo: [asked], attachments: [{ kind: "file", mime: "text/plain", name: "notes.txt", size: bytes.length, ref }] });
      await receiptOf(out.id, "delivered");
    } finally {
      await mediaNc.close();
    }
    const [text, file] = hs.roomEvents(room).slice(-2);
    assert.deepEqual([text!.content.body, file!.content.msgtype], ["the list:", "m.file"]);
    assert.deepEqual(file!.content["m.relates_to"], { rel_type: "m.thread", event_id: root, is_falling_back: true, "m.in_reply_to": { event_id: root } }, "the file in the thread");

    // 80 thread messages while the channel is down: 50 come with the sync, 30 from /messages
    await system.actors.get("channel-matrix")!.stop();
    for (let i = 1; i <= 80; i++) hs.userMessage(room, ANN, inThread(root, root, `gap ${i}`));
    await system.startActor("channel-matrix");
    const gap = await waitFor(async () => { const all = await stored(room); return all.some((m) => m.text === "gap 80") ? all.filter((m) => m.text.startsWith("gap ")) : undefined; }, 30_000, "the gap stored");
    assert.equal(gap.length, 80);
    assert.ok(hs.messagesCalls.some((c) => c.roomId === room), "paged back with /messages");
    assert.ok(gap.every((m) => m.conversation === inbound.conversation && m.peer.topicId === root), "each in the thread");
  });

  it("threads: \"room\" answers a thread message in the room, in the room's session (as before threads)", async () => {
    await system.actors.get("channel-matrix")!.stop();
    writeConfig({ threads: "room" });
    try {
      await system.startActor("channel-matrix");
      const room = groupRoom();
      const root = hs.userMessage(room, ANN, { msgtype: "m.text", body: "topic: the budget" });
      system.fake.enqueue({ kind: "text", text: "answer in the room", chunks: 1 });
      const asked = hs.userMessage(room, BOB, { ...inThread(root, root, "Lurk: how much?"), "m.mentions": { user_ids: [hs.userId] } });
      const reply = await waitFor(() => hs.roomEvents(room).find((e) => e.content.body === "answer in the room"), 20_000, "the answer");
      assert.deepEqual(reply.content["m.relates_to"], { "m.in_reply_to": { event_id: asked } });
      const delivered = await waitFor(() => receipts.find((r) => r.platformMessageId === reply.event_id), 10_000, "the reply's receipt");
      assert.equal(delivered.sessionKey, buildSessionKey({ type: "group", agentId: "main", channel: "matrix", groupId: room }));
    } finally {
      await system.actors.get("channel-matrix")!.stop();
      writeConfig();
      await system.startActor("channel-matrix");
    }
  });
});
