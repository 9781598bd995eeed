/**
 * The Signal channel: event mapping and the SSE parser (pure), and end to end with the whole
 * system, the fake LLM and a local signal-cli HTTP daemon (test/fakes/signal-cli-server.ts:
 * JSON-RPC over POST, server-sent events with ids and replay).
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { actorGrants, envelope, subjects } from "../shared/contract/index.js";
import { configuredChannelActors, selectActors } from "../services/cli/actors.js";
import { parseConfig } from "../shared/runtime/config.js";
import { DeliveryError } from "../shared/runtime/channel/index.js";
import { signalChannelSchema } from "../shared/runtime/config-channels.js";
import { MEDIA_DEFAULTS } from "../shared/runtime/config-media.js";
import { MediaStore } from "../shared/runtime/media.js";
import { SseParser } from "../services/channel-signal/events.js";
import { conversationOf, quoteOf, receiveToInbound, targetOf, type SignalReceive } from "../services/channel-signal/inbound.js";
import { storeMessageFiles } from "../services/channel-signal/files.js";
import { checkSendResults, SignalRpc, SignalRpcError, toDeliveryError } from "../services/channel-signal/rpc.js";
import { createLogger } from "../shared/runtime/logger.js";
import { messageText } from "./fakes/openai-server.js";
import { FakeSignalCli } from "./fakes/signal-cli-server.js";
import { startActorProcess, waitFor } from "./harness/actors.js";
import { flatImage } from "./harness/images.js";
import { TestSystem } from "./harness/system.js";

const S = subjects();
const BOT = { number: "+15550001111", uuid: "a1b2c3d4-0000-4000-8000-00000000b07a" };
const ALICE = { sourceNumber: "+15550002222", source: "+15550002222", sourceUuid: "c0ffee00-1111-4111-8111-00000000a11c", sourceName: "Alice" };
const GROUP = "Pmpi+EfPWmsxiomLe9Nx2XF9HOE483p6iKiFj65iMwI=";
const receive = (dataMessage: Record<string, unknown>, over: Record<string, unknown> = {}): SignalReceive => ({ account: BOT.number, envelope: { ...ALICE, timestamp: 1700000000123, dataMessage: { timestamp: 1700000000123, message: "hi", ...dataMessage }, ...over } as SignalReceive["envelope"] });

describe("signal event mapping", () => {
  it("maps DMs, groups, mentions and quotes; ignores its own, sync, receipts, typing, reactions and empty messages", () => {
    const dm = receiveToInbound(receive({}), BOT)!;
    assert.deepEqual({ id: dm.inbound.id, peer: dm.inbound.peer, sender: dm.inbound.sender, mentioned: dm.inbound.mentioned, text: dm.inbound.text },
      { id: `${ALICE.sourceUuid}:1700000000123`, peer: { kind: "dm", id: ALICE.sourceUuid }, sender: { id: ALICE.sourceUuid, name: "Alice" }, mentioned: true, text: "hi" });
    assert.deepEqual(targetOf(dm.inbound.conversation), { kind: "dm", recipient: ALICE.sourceUuid });
    const byNumber = receiveToInbound(receive({}, { sourceUuid: null }), BOT)!;
    assert.equal(byNumber.inbound.peer.id, ALICE.sourceNumber, "no uuid: the number");

    const group = receiveToInbound(receive({ message: "lunch?", groupInfo: { groupId: GROUP, type: "DELIVER" } }), BOT)!;
    assert.deepEqual(group.inbound.peer, { kind: "group", id: GROUP });
    assert.equal(group.inbound.mentioned, false);
    assert.deepEqual(targetOf(group.inbound.conversation), { kind: "group", groupId: GROUP });
    assert.ok(!group.inbound.conversation.includes("/") && !group.inbound.conversation.includes("."), "a subject token");

    const mention = receiveToInbound(receive({ message: "\uFFFC /new", groupInfo: { groupId: GROUP }, mentions: [{ number: BOT.number, uuid: BOT.uuid, start: 0, length: 1 }] }), BOT)!;
    assert.deepEqual([mention.inbound.mentioned, mention.inbound.text], [true, "/new"], "its own mention is cut");
    const byUuid = receiveToInbound(receive({ message: "hey \uFFFC", groupInfo: { groupId: GROUP }, mentions: [{ number: null, uuid: BOT.uuid.toUpperCase(), start: 4, length: 1 }] }), BOT)!;
    assert.equal(byUuid.inbound.mentioned, true, "a mention by uuid");
    const other = receiveToInbound(receive({ message: "ask \uFFFC", groupInfo: { groupId: GROUP }, mentions: [{ number: "+15550003333", uuid: "u", start: 4, length: 1 }] }), BOT)!;
    assert.deepEqual([other.inbound.mentioned, other.inbound.text], [false, "ask @+15550003333"]);

    const quoted = receiveToInbound(receive({ message: "and this?", groupInfo: { groupId: GROUP }, quote: { id: 1699999999000, author: BOT.number, authorNumber: BOT.number, authorUuid: BOT.uuid, text: "the earlier answer" } }), BOT)!;
    assert.equal(quoted.inbound.mentioned, true, "quoting the bot addresses it");
    assert.equal(quoted.inbound.replyToMessageId, `${BOT.uuid}:1699999999000`);
    assert.equal(quoted.inbound.text, "[replying to you: \"the earlier answer\"]\nand this?");

    const file = receiveToInbound(receive({ message: null, attachments: [{ id: "abc.jpg", contentType: "image/jpeg", filename: null, size: 12 }, { id: "v.aac", contentType: "audio/aac", size: 40 }] }), BOT)!;
    assert.deepEqual(file.inbound.attachments, [{ kind: "image", mime: "image/jpeg", size: 12 }, { kind: "audio", mime: "audio/aac", size: 40 }], "no bytes: the actor fetches and stores them");
    assert.deepEqual(file.files.map((f) => f.id), ["abc.jpg", "v.aac"]);

    assert.equal(receiveToInbound(receive({}, { sourceNumber: BOT.number, source: BOT.number, sourceUuid: BOT.uuid }), BOT), undefined, "its own messages");
    assert.equal(receiveToInbound(receive({}, { syncMessage: { sentMessage: { message: "x" } } }), BOT), undefined, "sync messages");
    assert.equal(receiveToInbound({ account: BOT.number, envelope: { ...ALICE, timestamp: 1, receiptMessage: { isRead: true, timestamps: [1] } } }, BOT), undefined, "receipts");
    assert.equal(receiveToInbound({ account: BOT.number, envelope: { ...ALICE, timestamp: 1, typingMessage: { action: "STARTED" } } }, BOT), undefined, "typing");
    assert.equal(receiveToInbound(receive({ message: null, reaction: { emoji: "👍", targetSentTimestamp: 1 } }), BOT), undefined, "reactions");
    assert.equal(receiveToInbound(receive({ message: null, groupInfo: { groupId: GROUP, type: "UPDATE" } }), BOT), undefined, "group updates");
    assert.throws(() => targetOf("web-1"), /not a Signal conversation/);
    assert.deepEqual(quoteOf(`${ALICE.sourceNumber}:42`), { author: ALICE.sourceNumber, timestamp: 42 });
    assert.equal(quoteOf("slack:1.2"), undefined);
    assert.deepEqual(targetOf(conversationOf({ kind: "group", groupId: GROUP })), { kind: "group", groupId: GROUP });
  });

  it("parses server-sent events across chunks: ids, CRLF, comments, multi-line data", () => {
    const p = new SseParser();
    assert.deepEqual(p.push(":\nid:1\nevent:rece"), []);
    assert.deepEqual(p.push("ive\ndata:{\"a\":\r\ndata: 1}\r\n\r\n:\n"), [{ id: "1", event: "receive", data: "{\"a\":\n1}" }]);
    assert.deepEqual(p.push("data:x\n\n"), [{ id: "1", event: "message", data: "x" }], "the last id stays");
  });

  it("drops a server-sent event or line above the cap (resyncing at the next blank line) and parses the next one", () => {
    const p = new SseParser(1000);
    const big = "x".repeat(700);
    // an event whose data lines pass the cap together
    assert.deepEqual(p.push(`id:7\nevent:receive\ndata:${big}\ndata:${big}\ndata:more\n\nid:8\nevent:receive\ndata:ok\n\n`), [
      { id: "7", event: "receive", data: "", dropped: 1407 },
      { id: "8", event: "receive", data: "ok" },
    ]);
    // one line over the cap, arriving in pieces: dropped before it ends, the rest of it skipped
    assert.deepEqual(p.push("id:9\nevent:receive\ndata:"), []);
    for (let i = 0; i < 5; i++) assert.deepEqual(p.push("y".repeat(400)), []);
    assert.deepEqual(p.push("yyy\r"), []);
    const out = p.push("\n\r\nid:10\nevent:receive\ndata:after\n\n");
    assert.equal(out.length, 2);
    assert.deepEqual({ ...out[0], dropped: out[0]!.dropped! > 1000 }, { id: "9", event: "receive", data: "", dropped: true });
    assert.deepEqual(out[1], { id: "10", event: "receive", data: "after" });
  });

  it("maps signal-cli errors: rate limits and I/O are retried, unregistered recipients and bad requests are not", () => {
    const rate = toDeliveryError(new SignalRpcError("send", -5, "Failed to send message due to rate limiting", { response: { results: [{ type: "RATE_LIMIT_FAILURE", retryAfterSeconds: 3 }] } }));
    assert.deepEqual([rate.opts.permanent, rate.opts.retryAfterMs], [undefined, 3000]);
    assert.match(rate.message, /rate limit/i);
    const unregistered = toDeliveryError(new SignalRpcError("send", -1, "The user +15559999999 is not registered."));
    assert.equal(unregistered.opts.permanent, true);
    assert.match(unregistered.message, /not a registered Signal user/);
    assert.equal(toDeliveryError(new SignalRpcError("send", -3, "Failed to send message: timeout")).opts.permanent, false);
    assert.equal(toDeliveryError(new SignalRpcError("send", -32602, "Invalid params")).opts.permanent, true);
    assert.equal(toDeliveryError(new SignalRpcError("send", -4, "Untrusted identity")).opts.permanent, true);
    assert.throws(() => checkSendResults([{ recipientAddress: { number: "+1555" }, type: "UNREGISTERED_FAILURE" }]), (e: DeliveryError) => e.opts.permanent === true);
    assert.throws(() => checkSendResults([{ recipientAddress: { number: "+1555" }, type: "NETWORK_FAILURE" }]), (e: DeliveryError) => !e.opts.permanent);
    assert.doesNotThrow(() => checkSendResults([{ type: "SUCCESS" }, { type: "NETWORK_FAILURE" }]), "a group send that reached someone");
    assert.doesNotThrow(() => checkSendResults([]));
  });

  it("validates the account number and keeps the defaults; an enabled channel is a launcher actor", () => {
    const s = signalChannelSchema.parse({ enabled: true, account: "+15550001111" });
    assert.deepEqual([s.url, s.allowRemote, s.sendReadReceipts, s.typingIndicator], ["http://127.0.0.1:8080", false, false, true]);
    assert.throws(() => signalChannelSchema.parse({ account: "5550001111" }), /E\.164/);
    const config = parseConfig({ channels: { signal: { enabled: true, account: "+15550001111" } } }, { LURKBOT_HOME: "/tmp/x" }, "/tmp/x");
    assert.deepEqual(configuredChannelActors(config), ["channel-signal"]);
    assert.deepEqual(selectActors("router,channel-signal"), ["router", "channel-signal"]);
    assert.ok(actorGrants().some((g) => g.user === "channel-signal" && g.publish.includes(S.inbound("signal"))), "its own NATS user");
  });
});

describe("signal channel end to end", () => {
  let system: TestSystem;
  let signal: FakeSignalCli;
  let admin: NatsConnection;
  const receipts: { deliveryId: string; status: string; error?: string }[] = [];
  const routing = { dm: { policy: "open" }, groups: { requireMention: true } };
  const writeConfig = (extra: Record<string, unknown> = {}) => writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({
    channels: { signal: { enabled: true, url: signal.url, account: signal.account, ...extra } },
    routing,
  }));

  before(async () => {
    signal = await FakeSignalCli.start();
    system = await TestSystem.start({ fake: { chunkDelayMs: 60 }, config: { routing } });
    writeConfig();
    await system.startActor("channel-signal");
    admin = await system.nats.connect("admin");
    admin.subscribe(S.eventsOf("channel-signal"), {
      callback: (_e, m) => {
        const { data } = m.json<{ data: { deliveryId?: string; status?: string; error?: string } }>();
        if (data.deliveryId) receipts.push({ deliveryId: data.deliveryId, status: data.status ?? "", ...(data.error ? { error: data.error } : {}) });
      },
    });
    await waitFor(() => signal.openStreams > 0 || undefined, 10_000, "the event stream");
  });
  after(async () => {
    await admin?.close();
    await system?.actors.get("channel-signal")?.stop();
    await system?.stop();
    await signal?.close();
  });
  beforeEach(() => system.fake.reset());

  const sendsTo = (key: "recipient" | "groupId", value: string) => signal.sends().filter((c) => (key === "recipient" ? (c.params.recipient as string[] | undefined)?.includes(value) : c.params.groupId === value));
  const requestsWith = (text: string) => system.fake.requests.filter((r) => messageText(r.body.messages.at(-1)).includes(text)).length;
  const output = () => system.actors.get("channel-signal")!.output();

  it("answers a DM: the reply is sent to the sender's uuid, quoting the message, with typing shown while the run writes", async () => {
    system.fake.enqueue({ kind: "text", text: "Hi **Alice**, see [the docs](https://example.org).", chunks: 6 });
    const { timestamp } = signal.userMessage({ text: "hello bot" });
    const sent = await waitFor(() => sendsTo("recipient", signal.alice.uuid)[0], 20_000, "the reply");
    assert.equal(sent.params.message, "Hi Alice, see the docs (https://example.org).", "markdown as plain text");
    assert.deepEqual([sent.params.quoteTimestamp, sent.params.quoteAuthor], [timestamp, signal.alice.uuid], "quotes the message it answers");
    assert.equal(sent.params.account, signal.account);
    const typing = signal.calls.filter((c) => c.method === "sendTyping" && (c.params.recipient as string[] | undefined)?.[0] === signal.alice.uuid);
    assert.ok(typing.length >= 1 && typing[0]!.params.stop === undefined, "typing started");
    assert.ok(typing[0]!.at <= sent.at, "before the reply");
    await waitFor(() => signal.calls.some((c) => c.method === "sendTyping" && c.params.stop === true) || undefined, 10_000, "typing stopped at the run's end");
    assert.ok(!signal.calls.some((c) => c.method === "sendReceipt"), "no read receipts unless asked");
  });

  it("ignores an unmentioned group message when groups require a mention, and answers a mention into the group", async () => {
    const groupId = "R3JvdXBPbmVUZXN0SWQrL3dpdGhTbGFzaGVzPT0xMjM0NTY=";
    system.fake.enqueue({ kind: "text", text: "group answer", chunks: 1 });
    signal.userMessage({ groupId, text: "lunch anyone?" });
    signal.userMessage({ groupId, text: "\uFFFC what's for lunch", mentions: [{ number: signal.account, uuid: signal.accountUuid, start: 0, length: 1 }] });
    const sent = await waitFor(() => sendsTo("groupId", groupId)[0], 20_000, "the group answer");
    assert.equal(sent.params.message, "group answer");
    assert.equal(sent.params.recipient, undefined, "to the group, not a person");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(system.fake.requests.length, 1, "one run: the unmentioned message started none");
    assert.match(messageText(system.fake.requests[0]!.body.messages.at(-1)), /what's for lunch/);
    assert.doesNotMatch(messageText(system.fake.requests[0]!.body.messages.at(-1)), /\uFFFC/, "the mention placeholder is cut");
    assert.equal(sendsTo("groupId", groupId).length, 1);
  });

  it("an image reaches the model as an image part, fetched with getAttachment", async () => {
    const png = await flatImage(16, 16).png().toBuffer();
    const file = signal.addAttachment(png, "image/png", "dot.png");
    system.fake.enqueue({ kind: "text", text: "a pink square", chunks: 1 });
    signal.userMessage({ text: "what is this?", attachments: [file] });
    await waitFor(() => sendsTo("recipient", signal.alice.uuid).find((c) => c.params.message === "a pink square"), 20_000, "the answer");
    assert.ok(signal.calls.some((c) => c.method === "getAttachment" && c.params.id === file.id), "fetched through JSON-RPC");
    const content = system.fake.requests.at(-1)!.body.messages.at(-1)!.content;
    const parts = (Array.isArray(content) ? content : []) as { type: string; image_url?: { url: string } }[];
    const images = parts.filter((p) => p.type === "image_url");
    assert.equal(images.length, 1, JSON.stringify(parts.map((p) => p.type)));
    assert.match(images[0]!.image_url!.url, /^data:image\/\w+;base64,/);
  });

  it("reconnects after a dropped stream, receives what came meanwhile, and does not answer a replayed event twice", async () => {
    system.fake.enqueue({ kind: "text", text: "first answer", chunks: 1 }, { kind: "text", text: "second answer", chunks: 1 });
    signal.userMessage({ text: "count me once" });
    await waitFor(() => signal.sends().find((c) => c.params.message === "first answer"), 20_000, "the first answer");
    const connects = signal.connects.length;
    signal.dropConnections();
    signal.userMessage({ text: "sent while the stream was down" });
    await waitFor(() => signal.sends().find((c) => c.params.message === "second answer"), 20_000, "the message sent while disconnected");
    assert.ok(signal.connects.length > connects, "reconnected");
    assert.match(signal.connects.at(-1)!.lastEventId ?? "", /^\d+$/, "resumed with Last-Event-ID");
    // signal-cli restarted: it no longer knows the id and replays every event it kept (the image
    // message of the test before included: fetching its file again would show a replay not skipped)
    const fetches = signal.calls.filter((c) => c.method === "getAttachment").length;
    signal.forgetIds();
    signal.dropConnections();
    await waitFor(() => signal.connects.length > connects + 1 || undefined, 20_000, "the second reconnect");
    system.fake.enqueue({ kind: "text", text: "third answer", chunks: 1 });
    signal.userMessage({ text: "after the replay" });
    // events are handled in order: once this is answered, the replay before it was handled
    await waitFor(() => signal.sends().find((c) => c.params.message === "third answer"), 20_000, "the message after the replay");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(requestsWith("count me once"), 1, "one run for the replayed message");
    assert.equal(requestsWith("sent while the stream was down"), 1);
    assert.equal(signal.calls.filter((c) => c.method === "getAttachment").length, fetches, "the replayed messages were skipped by the seen ledger before their files were fetched");
    assert.equal(signal.sends().filter((c) => c.params.message === "first answer").length, 1, "answered once");
  });

  it("a JSON-RPC I/O error is retried with the kit's backoff; an unregistered recipient fails the delivery for good, with a clear error", async () => {
    signal.failNext("send", { code: -3, message: "Failed to send message: Connection reset (IOException)" });
    system.fake.enqueue({ kind: "text", text: "after one failure", chunks: 1 });
    signal.userMessage({ text: "retry me" });
    await waitFor(() => signal.sends().filter((c) => c.params.message === "after one failure").length >= 2 || undefined, 30_000, "delivered on the retry");
    assert.equal(signal.sends().filter((c) => c.params.message === "after one failure").length, 2, "one failed attempt, one accepted");
    await waitFor(() => receipts.find((r) => r.status === "delivered" && output().includes("Connection reset")), 10_000, "the failed attempt logged, the delivery reported");

    const stranger = "+15559999999";
    const conversation = conversationOf({ kind: "dm", recipient: stranger });
    signal.failNext("send", { code: -1, message: `The user ${stranger} is not registered.` });
    const out = envelope("lurk.outbound.message.v1", { channel: "signal", conversation, kind: "reply" as const, replyTo: [], attachments: [], text: "hello?" });
    await jetstream(admin).publish(S.outbound("signal", conversation), JSON.stringify(out));
    const failed = await waitFor(() => receipts.find((r) => r.deliveryId === out.id && r.status === "failed"), 20_000, "delivery_failed");
    assert.match(failed.error ?? "", /not a registered Signal user/);
    assert.equal(sendsTo("recipient", stranger).length, 1, "not retried");
  });

  it("logs and skips malformed event data, and keeps serving", async () => {
    system.fake.enqueue({ kind: "text", text: "still here", chunks: 1 });
    signal.emitRaw("event:receive\ndata:{this is not json\n\n");
    signal.emit({ account: signal.account, envelope: { source: "+15550002222", timestamp: 5 } });
    signal.userMessage({ text: "are you alive?" });
    await waitFor(() => signal.sends().find((c) => c.params.message === "still here"), 20_000, "the answer after the malformed event");
    await waitFor(() => /malformed signal event \(not JSON\): skipped/.test(output()) || undefined, 10_000, "malformed signal event \(not  in the log");
  });

  it("drops an event above the 1 MiB cap with a warning and answers the next one", async () => {
    system.fake.enqueue({ kind: "text", text: "after the big one", chunks: 1 });
    const big = { account: signal.account, envelope: { source: signal.alice.number, sourceNumber: signal.alice.number, sourceUuid: signal.alice.uuid, sourceDevice: 1, timestamp: signal.nextTimestamp(), dataMessage: { timestamp: 1, message: "z".repeat(1_200_000) } } };
    signal.emitRaw(`event:receive\ndata:${JSON.stringify(big)}\n\n`);
    signal.userMessage({ text: "the next message" });
    await waitFor(() => signal.sends().find((c) => c.params.message === "after the big one"), 20_000, "the answer to the next message");
    await waitFor(() => /a signal event above the size cap was dropped/.test(output()) || undefined, 10_000, "a signal event above the size in the log");
    assert.equal(requestsWith("zzzz"), 0, "the big message never reached the model");
    assert.equal(system.fake.requests.length, 1);
  });

  it("an attachment whose answer passes the media cap is refused while it streams (getAttachment read with a byte limit)", async () => {
    const mediaNc = await system.nats.connect("channel-signal");
    signal.slowAnswers = 5;
    try {
      const media = new MediaStore(mediaNc, { ...MEDIA_DEFAULTS, maxFileMb: 1 });
      const rpc = new SignalRpc(signal.url, signal.account, 30_000);
      // signal-cli announced no size: only the answer's length can tell
      const file = signal.addAttachment(Buffer.alloc(4 * 1024 * 1024, 1), "application/octet-stream", "big.bin");
      const [stored] = await storeMessageFiles(media, rpc, [{ id: file.id, mime: "application/octet-stream", name: "big.bin" }], createLogger("test", "silent"));
      assert.match(stored!.error ?? "", /above the 1\.0 MB cap/);
      assert.equal(stored!.ref, undefined);
      const answer = signal.streamed.at(-1)!;
      await waitFor(() => answer.clientClosed || answer.finished || undefined, 10_000, "the answer ended");
      assert.deepEqual([answer.clientClosed, answer.finished], [true, false], "the channel hung up before the answer was whole");
      assert.ok(answer.written < answer.total / 2, `${answer.written} of ${answer.total} bytes written`);
    } finally {
      signal.slowAnswers = 0;
      await mediaNc.close();
    }
  });

  it("sends a reply's file as a data URI attachment after its text", async () => {
    const mediaNc = await system.nats.connect("channel-signal");
    try {
      const media = new MediaStore(mediaNc, MEDIA_DEFAULTS);
      const ogg = Buffer.concat([Buffer.from("OggS"), Buffer.alloc(200, 7)]);
      const stored = await media.put(ogg, { mime: "audio/ogg", name: "reply.ogg" });
      const conversation = conversationOf({ kind: "dm", recipient: signal.alice.number });
      const out = envelope("lurk.outbound.message.v1", { channel: "signal", conversation, kind: "reply" as const, replyTo: [], text: "Listen:", attachments: [{ kind: "audio" as const, mime: "audio/ogg", name: "reply.ogg", size: ogg.length, ref: stored.ref }] });
      await jetstream(admin).publish(S.outbound("signal", conversation), JSON.stringify(out));
      await waitFor(() => receipts.find((r) => r.deliveryId === out.id && r.status === "delivered"), 20_000, "delivered");
      const sends = sendsTo("recipient", signal.alice.number);
      assert.deepEqual(sends.map((c) => c.params.message), ["Listen:", ""]);
      assert.deepEqual(sends[1]!.params.attachments, [`data:audio/ogg;filename=reply.ogg;base64,${ogg.toString("base64")}`]);
    } finally {
      await mediaNc.close();
    }
  });

  it("refuses to start with a url off this machine unless allowRemote, saying why", async () => {
    writeConfig({ url: "http://10.20.30.40:8080" });
    try {
      await assert.rejects(startActorProcess("channel-signal", system.nats, system.env, 10_000), /not on this machine[\s\S]*no authentication[\s\S]*allowRemote/);
    } finally {
      writeConfig();
    }
  });
});
