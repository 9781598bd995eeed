/**
 * Users' reactions on Matrix and Signal reach the agent. Pure: the platform mappings (Matrix
 * m.reaction annotations and redactions, Signal's dataMessage.reaction). End to end (the whole
 * system, the fake LLM, the local homeserver and signal-cli daemon): a reaction to the assistant's
 * message is a system event in the next run's prompt and starts no run; its removal (a Matrix
 * redaction, Signal's isRemove) is reported; Matrix "own" (the default) drops a reaction to the
 * user's own message, Signal "all" keeps it; a reaction to the assistant's answer in a Matrix
 * thread goes to the thread's session; a duplicate (a Matrix batch taken again, a Signal event
 * replayed) is recorded once; a reaction in an encrypted Matrix room is not taken; malformed
 * reactions are dropped while the channels keep answering.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { inboundMessageSchema, STREAMS, subjects, type InboundMessage } from "../shared/contract/index.js";
import { matrixChannelSchema, signalChannelSchema } from "../shared/runtime/config-channels.js";
import { conversationOf as matrixConversation, roomOf } from "../services/channel-matrix/inbound.js";
import { annotationOf, reactionEvent as matrixReaction, redactedOf } from "../services/channel-matrix/reactions.js";
import { conversationOf as signalConversation } from "../services/channel-signal/inbound.js";
import { reactionOf as signalReaction } from "../services/channel-signal/reactions.js";
import type { RoomEvent } from "../services/channel-matrix/wire.js";
import { FakeMatrixServer } from "./fakes/matrix-server.js";
import { messageText, type ChatRequestBody } from "./fakes/openai-server.js";
import { FakeSignalCli } from "./fakes/signal-cli-server.js";
import { waitFor } from "./harness/actors.js";
import { collectActorEvents, type SeenActorEvent } from "./harness/events.js";
import { TestSystem } from "./harness/system.js";

const S = subjects();
const ANN = "@ann:test.local";
const BOB = "@bob:test.local";
const CAT = "@cat:test.local";
const ROOM = "!room1:test.local";
const GROUP = "Pmpi+EfPWmsxiomLe9Nx2XF9HOE483p6iKiFj65iMwI=";
const SIGNAL_BOT = { number: "+15550001111", uuid: "a1b2c3d4-0000-4000-8000-00000000b07a" };
const ALICE = { number: "+15550002222", uuid: "c0ffee00-1111-4111-8111-00000000a11c" };

describe("reactions on Matrix and Signal: platform mappings", () => {
  it("Matrix: an annotation gives its event and key; a redaction its target (content or top level); the room's peer, a thread's from the ledger's conversation", () => {
    const ev = (content: Record<string, unknown>, over: Partial<RoomEvent> = {}): RoomEvent => ({ type: "m.reaction", event_id: "$r1", sender: ANN, content, ...over });
    assert.deepEqual(annotationOf(ev({ "m.relates_to": { rel_type: "m.annotation", event_id: "$target", key: "👍" } })), { target: "$target", key: "👍" });
    for (const bad of [{}, { "m.relates_to": { rel_type: "m.annotation", event_id: "$t" } }, { "m.relates_to": { rel_type: "m.reference", event_id: "$t", key: "x" } }, { "m.relates_to": { rel_type: "m.annotation", event_id: "not an id", key: "x" } }]) {
      assert.equal(annotationOf(ev(bad)), undefined, JSON.stringify(bad));
    }
    assert.equal(redactedOf(ev({ redacts: "$r1" }, { type: "m.room.redaction" })), "$r1", "room version 11: in the content");
    assert.equal(redactedOf(ev({}, { type: "m.room.redaction", redacts: "$r2" })), "$r2", "older rooms: at the top level");
    assert.equal(redactedOf(ev({}, { type: "m.room.redaction" })), undefined);

    const group = matrixReaction({ roomId: ROOM, direct: false, eventId: "$r1", action: "added", target: "$target", key: "👍", sender: ANN, senderName: "Ann", ts: 1_700_000_000_000 });
    assert.deepEqual([group.eventId, group.action, group.emoji, group.messageId, group.conversation, group.ts], ["$r1", "added", "👍", "$target", matrixConversation(ROOM), 1_700_000_000_000]);
    assert.deepEqual([group.peer, group.sender], [{ kind: "group", id: ROOM }, { id: ANN, name: "Ann" }]);
    assert.deepEqual(group.peerOf?.(matrixConversation(ROOM, "$root")), { kind: "group", id: ROOM, topicId: "$root" }, "the thread the ledger knows: its topic session");
    assert.equal(group.peerOf?.(matrixConversation("!other:test.local", "$root")), undefined, "another room is not this one");
    const dm = matrixReaction({ roomId: ROOM, direct: true, eventId: "$r2", action: "removed", target: "$target", key: "👍", sender: ANN });
    assert.deepEqual([dm.peer, dm.peerOf?.(matrixConversation(ROOM, "$root")), dm.sender], [{ kind: "dm", id: ANN }, { kind: "dm", id: ANN }, { id: ANN }], "a DM's thread keeps the DM's session");
    assert.equal(matrixChannelSchema.parse({}).reactionNotifications, "own");
    assert.ok(!matrixChannelSchema.safeParse({ reactionNotifications: "some" }).success);
  });

  it("Signal: the target's author and timestamp as the channel names messages (the bot's by its number), the event id <sender>:<timestamp>, isRemove; malformed ones and sync messages", () => {
    const receive = (reaction: unknown, over: Record<string, unknown> = {}, data: Record<string, unknown> = {}) => ({
      envelope: { source: ALICE.number, sourceNumber: ALICE.number, sourceUuid: ALICE.uuid, sourceName: "Alice", timestamp: 1_700_000_000_500, dataMessage: { timestamp: 1_700_000_000_500, message: null, reaction, ...data }, ...over },
      account: SIGNAL_BOT.number,
    });
    const toBot = signalReaction(receive({ emoji: "👍", targetAuthor: SIGNAL_BOT.number, targetAuthorNumber: SIGNAL_BOT.number, targetAuthorUuid: SIGNAL_BOT.uuid, targetSentTimestamp: 1_700_000_000_100, isRemove: false }), SIGNAL_BOT);
    assert.ok(toBot && toBot !== "malformed");
    assert.deepEqual([toBot.eventId, toBot.action, toBot.emoji, toBot.messageId, toBot.ts, toBot.fromBot], [`${ALICE.uuid}:1700000000500`, "added", "👍", `${SIGNAL_BOT.number}:1700000000100`, 1_700_000_000_500, false]);
    assert.deepEqual([toBot.peer, toBot.sender, toBot.conversation], [{ kind: "dm", id: ALICE.uuid }, { id: ALICE.uuid, name: "Alice" }, signalConversation({ kind: "dm", recipient: ALICE.uuid })]);
    // the bot known by its uuid only in the event
    const byUuid = signalReaction(receive({ emoji: "👍", targetAuthorUuid: SIGNAL_BOT.uuid, targetSentTimestamp: 5 }), SIGNAL_BOT);
    assert.equal(byUuid !== "malformed" && byUuid?.messageId, `${SIGNAL_BOT.number}:5`);
    const removed = signalReaction(receive({ emoji: "🎉", targetAuthor: ALICE.number, targetAuthorNumber: ALICE.number, targetAuthorUuid: ALICE.uuid, targetSentTimestamp: 7, isRemove: true }, {}, { groupInfo: { groupId: GROUP } }), SIGNAL_BOT);
    assert.ok(removed && removed !== "malformed");
    assert.deepEqual([removed.action, removed.messageId, removed.peer, removed.conversation], ["removed", `${ALICE.uuid}:7`, { kind: "group", id: GROUP }, signalConversation({ kind: "group", groupId: GROUP })]);
    const own = signalReaction(receive({ emoji: "👍", targetAuthorUuid: ALICE.uuid, targetSentTimestamp: 7 }, { source: SIGNAL_BOT.number, sourceNumber: SIGNAL_BOT.number, sourceUuid: SIGNAL_BOT.uuid }), SIGNAL_BOT);
    assert.equal(own !== "malformed" && own?.fromBot, true, "the bot's own: the kit ignores it");

    for (const bad of [{ targetAuthorUuid: ALICE.uuid, targetSentTimestamp: 7 }, { emoji: "👍", targetSentTimestamp: 7 }, { emoji: "👍", targetAuthorUuid: ALICE.uuid }, { emoji: "👍", targetAuthorUuid: ALICE.uuid, targetSentTimestamp: "7" }, "👍"]) {
      assert.equal(signalReaction(receive(bad), SIGNAL_BOT), "malformed", JSON.stringify(bad));
    }
    assert.equal(signalReaction(receive({ emoji: "👍", targetAuthorUuid: ALICE.uuid, targetSentTimestamp: 7 }, { syncMessage: {} }), SIGNAL_BOT), undefined, "the account's other devices");
    assert.equal(signalReaction(receive(undefined, {}, { message: "hi" }), SIGNAL_BOT), undefined, "a message");
    assert.equal(signalReaction({} as never, SIGNAL_BOT), undefined);
    assert.equal(signalChannelSchema.parse({}).reactionNotifications, "own");
  });
});

describe("reactions on Matrix (own) and Signal (all) end to end", () => {
  let system: TestSystem;
  let hs: FakeMatrixServer;
  let signal: FakeSignalCli;
  let admin: NatsConnection;
  let routerEvents: SeenActorEvent[];
  /** the channels' delivery receipts: platform message id -> session key */
  const delivered = new Map<string, string>();
  const routing = { dm: { policy: "open" }, groups: { requireMention: true }, dmScope: "per-channel-peer" };

  before(async () => {
    hs = await FakeMatrixServer.start();
    signal = await FakeSignalCli.start();
    system = await TestSystem.start({ config: { routing }, env: { LURKBOT_MATRIX_ACCESS_TOKEN: hs.token } });
    writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({
      channels: {
        matrix: { enabled: true, homeserverUrl: hs.url, userId: hs.userId, syncTimeoutMs: 2_000 },
        signal: { enabled: true, url: signal.url, account: signal.account, reactionNotifications: "all" },
      },
      routing,
    }));
    admin = await system.nats.connect("admin");
    routerEvents = await collectActorEvents(admin, "router");
    for (const actor of ["channel-matrix", "channel-signal"]) {
      admin.subscribe(S.eventsOf(actor), {
        callback: (_e, m) => {
          const { data } = m.json<{ data: { platformMessageId?: string; sessionKey?: string; status?: string } }>();
          if (data.status === "delivered" && data.platformMessageId && data.sessionKey) delivered.set(data.platformMessageId, data.sessionKey);
        },
      });
    }
    await admin.flush();
    await system.startActor("channel-matrix");
    await system.startActor("channel-signal");
    await waitFor(() => signal.openStreams > 0 || undefined, 10_000, "the signal event stream");
  });
  after(async () => {
    await admin?.close();
    for (const actor of ["channel-signal", "channel-matrix"]) await system?.actors.get(actor)?.stop();
    await system?.stop();
    await hs?.close();
    await signal?.close();
  });
  beforeEach(() => system.fake.reset());

  const recorded = (channel: string) => routerEvents.filter((e) => e.event === "reaction_recorded" && e.data.channel === channel);
  const eventNotes = (body: ChatRequestBody) => body.messages.filter((m) => m.role === "user" && messageText(m).startsWith("[system event] Reaction")).map((m) => messageText(m));
  const requestWith = (text: string) => waitFor(() => system.fake.requests.map((r) => r.body).findLast((b) => messageText(b.messages.filter((m) => m.role === "user").at(-1)).includes(text)), 30_000, `the model request with ${text}`);
  const output = (actor: string) => system.actors.get(actor)!.output();
  /** the reactions LURK_INBOUND holds for a Matrix room */
  const storedReactions = async (roomId: string): Promise<InboundMessage[]> => {
    const consumer = await jetstream(admin).consumers.get(STREAMS.inbound, { filter_subjects: S.inbound("matrix") });
    const out: InboundMessage[] = [];
    for await (const m of await consumer.fetch({ max_messages: 5_000, expires: 2_000 })) {
      out.push(inboundMessageSchema.parse(m.json()));
      if (m.info.pending === 0) break;
    }
    return out.filter((m) => m.reaction && roomOf(m.conversation) === roomId);
  };
  /** the bot's m.room.message in `roomId` with `text` */
  const botSaid = (roomId: string, text: string) => waitFor(() => hs.roomEvents(roomId).find((e) => e.content.body === text), 30_000, `the answer "${text}"`);

  it("Matrix: a reaction to the assistant's message is a system event of the next run, never a run; its redaction is reported removed; one to the user's own message is dropped (own); the sync filter asks for reactions and redactions", async () => {
    await waitFor(() => hs.syncs.at(-1), 10_000, "a sync");
    const types = (hs.syncs.at(-1)!.filter as { room: { timeline: { types: string[] } } }).room.timeline.types;
    assert.ok(types.includes("m.reaction") && types.includes("m.room.redaction"), JSON.stringify(types));
    const room = hs.createRoom({ members: [ANN] });
    system.fake.enqueue({ kind: "text", text: "Sure, the meeting is at noon." });
    const asked = hs.userMessage(room, ANN, { msgtype: "m.text", body: "when is the meeting? [m1]" });
    const answer = await botSaid(room, "Sure, the meeting is at noon.");
    await waitFor(() => delivered.get(answer.event_id), 30_000, "the answer's receipt");

    const runsBefore = system.fake.requests.length;
    hs.userReaction(room, ANN, asked, "🔥"); // the user's own message: "own" drops it
    const thumbs = hs.userReaction(room, ANN, answer.event_id, "👍");
    await waitFor(() => recorded("matrix").length === 1 || undefined, 30_000, "the reaction recorded");
    hs.userRedact(room, ANN, thumbs);
    await waitFor(() => recorded("matrix").length === 2 || undefined, 30_000, "the removal recorded");
    assert.deepEqual(recorded("matrix").map((e) => e.data.action), ["added", "removed"]);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(system.fake.requests.length, runsBefore, "a reaction starts no run");
    assert.equal(hs.roomEvents(room).length, 1, "and is never answered");

    system.fake.enqueue({ kind: "text", text: "yes" });
    hs.userMessage(room, ANN, { msgtype: "m.text", body: "did you see? [m2]" });
    const body = await requestWith("[m2]");
    assert.deepEqual(eventNotes(body), [
      `[system event] Reaction added on matrix: 👍 by "ann" (id ${ANN}) on msg ${answer.event_id}, your message "Sure, the meeting is at noon."`,
      `[system event] Reaction removed on matrix: 👍 by "ann" (id ${ANN}) on msg ${answer.event_id}, your message "Sure, the meeting is at noon."`,
    ]);
    assert.ok(!JSON.stringify(body.messages).includes("🔥"), "the reaction to the user's own message never reached the model");
    await botSaid(room, "yes");
  });

  it("Matrix: a reaction to the assistant's answer in a thread goes to the thread's session", async () => {
    const room = hs.createRoom({ members: [ANN, BOB] });
    const root = hs.userMessage(room, ANN, { msgtype: "m.text", body: "a topic" });
    system.fake.enqueue({ kind: "text", text: "in the thread" });
    hs.userMessage(room, ANN, { msgtype: "m.text", body: "Lurk: what about it? [m3]", "m.relates_to": { rel_type: "m.thread", event_id: root, is_falling_back: true, "m.in_reply_to": { event_id: root } } });
    const answer = await botSaid(room, "in the thread");
    assert.equal((answer.content["m.relates_to"] as { rel_type?: string }).rel_type, "m.thread");
    const threadSession = await waitFor(() => delivered.get(answer.event_id), 30_000, "the answer's receipt");
    assert.match(threadSession, /:topic:/);
    const before = recorded("matrix").length;
    hs.userReaction(room, BOB, answer.event_id, "👀");
    const rec = await waitFor(() => recorded("matrix")[before], 30_000, "the reaction recorded");
    assert.equal(rec.data.sessionKey, threadSession, "the thread's session, which the reaction itself does not name");
  });

  it("Matrix: a batch taken again records its reaction once; a reaction in an encrypted room is not taken; malformed reactions are dropped and the channel keeps answering", async () => {
    const dm = hs.createRoom({ members: [CAT] });
    system.fake.enqueue({ kind: "text", text: "first answer" });
    hs.userMessage(dm, CAT, { msgtype: "m.text", body: "hi [m4]" });
    const dmAnswer = await botSaid(dm, "first answer");
    const secret = hs.createRoom({ members: [CAT] });
    system.fake.enqueue({ kind: "text", text: "second answer" });
    hs.userMessage(secret, CAT, { msgtype: "m.text", body: "hi [m5]" });
    const secretAnswer = await botSaid(secret, "second answer");
    await waitFor(() => delivered.get(secretAnswer.event_id), 30_000, "the answer's receipt");

    // one batch: the DM's reaction stored, then the other room turns encrypted and its notice
    // fails (a 500): the batch is taken again, the reaction published again
    const before = recorded("matrix").length;
    hs.failNext("send", { status: 500 });
    const dmReaction = hs.userReaction(dm, CAT, dmAnswer.event_id, "🙏");
    hs.enableEncryption(secret, CAT);
    hs.userReaction(secret, CAT, secretAnswer.event_id, "🤫");
    await waitFor(() => hs.sends.find((s) => s.roomId === secret && s.status === 200 && s.content.msgtype === "m.notice"), 30_000, "the encryption notice, on the second try");
    assert.deepEqual(hs.sends.filter((s) => s.roomId === secret && s.content.msgtype === "m.notice").map((s) => s.status), [500, 200], "the batch was taken twice");
    await waitFor(() => recorded("matrix").length > before || undefined, 30_000, "the DM's reaction recorded");
    assert.deepEqual((await storedReactions(dm)).map((m) => m.id), [`reaction:${dmReaction}`], "stored once");
    assert.deepEqual(await storedReactions(secret), [], "the encrypted room's reaction is not taken");

    hs.userMessage(dm, CAT, { "m.relates_to": { rel_type: "m.annotation", event_id: dmAnswer.event_id } }, "m.reaction"); // no key
    hs.userReaction(dm, CAT, dmAnswer.event_id, ""); // an empty key: the kit refuses it
    system.fake.enqueue({ kind: "text", text: "still here" });
    hs.userMessage(dm, CAT, { msgtype: "m.text", body: "still there? [m6]" });
    const body = await requestWith("[m6]");
    assert.deepEqual(eventNotes(body), [`[system event] Reaction added on matrix: 🙏 by "cat" (id ${CAT}) on msg ${dmAnswer.event_id}, your message "first answer"`], "once, though published twice");
    await botSaid(dm, "still here");
    assert.equal(recorded("matrix").length, before + 1);
    assert.deepEqual((await storedReactions(dm)).length, 1);
    assert.match(output("channel-matrix"), /a malformed m\.reaction/);
    assert.match(output("channel-matrix"), /a reaction cannot be stored \(malformed\); dropped/);
  });

  it("Signal (all): reactions to the assistant's and to the user's own message are system events of the next run, never a run; removal reported; a replay recorded once; malformed ones dropped", async () => {
    system.fake.enqueue({ kind: "text", text: "Signal answer here." });
    const asked = signal.userMessage({ text: "hello signal [s1]" });
    const answerTs = await waitFor(() => [...signal.botMessages].find(([, m]) => m.text === "Signal answer here.")?.[0], 30_000, "the answer");
    const botMessageId = `${signal.account}:${answerTs}`;
    await waitFor(() => delivered.get(botMessageId), 30_000, "the answer's receipt");

    const runsBefore = system.fake.requests.length;
    const sendsBefore = signal.sends().length;
    const thumbs = signal.userReaction({ emoji: "👍", target: "bot", targetTimestamp: answerTs });
    signal.userReaction({ emoji: "🎉", target: signal.alice, targetTimestamp: asked.timestamp }); // the user's own message: "all" keeps it
    signal.emit({ envelope: thumbs.envelope, account: signal.account }); // the same event again
    signal.emit({ envelope: { ...thumbs.envelope, timestamp: signal.nextTimestamp(), dataMessage: { reaction: { emoji: "👍", targetAuthorUuid: signal.alice.uuid } } }, account: signal.account }); // no timestamp: malformed
    signal.userReaction({ emoji: "", target: "bot", targetTimestamp: answerTs }); // empty: the kit refuses it
    signal.userReaction({ emoji: "👍", target: "bot", targetTimestamp: answerTs, remove: true });
    await waitFor(() => recorded("signal").length === 3 || undefined, 30_000, "three reactions recorded");
    // as after a signal-cli restart: every kept event again
    signal.forgetIds();
    signal.dropConnections();
    await waitFor(() => signal.connects.length >= 2 && signal.openStreams > 0 || undefined, 30_000, "the stream again");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(system.fake.requests.length, runsBefore, "a reaction starts no run");
    assert.equal(signal.sends().length, sendsBefore, "and is never answered");

    system.fake.enqueue({ kind: "text", text: "ok" });
    signal.userMessage({ text: "anything? [s2]" });
    const body = await requestWith("[s2]");
    const by = `by "Alice" (id ${signal.alice.uuid})`;
    assert.deepEqual(eventNotes(body), [
      `[system event] Reaction added on signal: 👍 ${by} on msg ${botMessageId}, your message "Signal answer here."`,
      `[system event] Reaction added on signal: 🎉 ${by} on msg ${signal.alice.uuid}:${asked.timestamp}`,
      `[system event] Reaction removed on signal: 👍 ${by} on msg ${botMessageId}, your message "Signal answer here."`,
    ]);
    assert.equal(recorded("signal").length, 3, "the replays recorded nothing more");
    await waitFor(() => [...signal.botMessages.values()].find((m) => m.text === "ok"), 30_000, "the channel still answers");
    assert.match(output("channel-signal"), /a malformed Signal reaction/);
    assert.match(output("channel-signal"), /a reaction cannot be stored \(malformed\); dropped/);
  });
});
