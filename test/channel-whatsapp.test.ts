/**
 * The WhatsApp channel (Meta's Cloud API): payload mapping, formatting and error mapping (pure),
 * and end to end with the whole system, the fake LLM and a local Graph API
 * (test/fakes/whatsapp-server.ts) that records the channel's calls and serves media; the test
 * posts signed webhooks to the channel's listening address as Meta does.
 */
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { actorGrants, envelope, inboundMessageSchema, STREAMS, subjects, type InboundMessage } from "../shared/contract/index.js";
import { configuredChannelActors } from "../services/cli/actors.js";
import { parseConfig } from "../shared/runtime/config.js";
import { toWhatsAppText } from "../shared/runtime/channel/index.js";
import { whatsappChannelSchema } from "../shared/runtime/config-channels.js";
import { MEDIA_DEFAULTS } from "../shared/runtime/config-media.js";
import { MediaStore } from "../shared/runtime/media.js";
import { GraphError, mayCarryToken, toDeliveryError } from "../services/channel-whatsapp/graph.js";
import { conversationOf, takeMessage, targetOf, valuesOf, type WaPayload } from "../services/channel-whatsapp/inbound.js";
import { messageText, type ChatRequestBody } from "./fakes/openai-server.js";
import { ALICE, FakeWhatsAppServer } from "./fakes/whatsapp-server.js";
import { startActorProcess, waitFor } from "./harness/actors.js";
import { flatImage } from "./harness/images.js";
import { freePort } from "./harness/nats.js";
import { TestSystem } from "./harness/system.js";

const S = subjects();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("whatsapp payload mapping, formatting and errors", () => {
  const wamid = (n: number) => `wamid.HBgLMTU1NTAwMDIyMjIVAgASGBQz${n}`;
  const value = (message: Record<string, unknown>) => ({ metadata: { phone_number_id: "1065" }, contacts: [{ wa_id: ALICE.waId, profile: { name: "Alice" } }], messages: [{ from: ALICE.waId, id: wamid(1), timestamp: "1700000000", ...message }] });
  const take = (message: Record<string, unknown>) => { const v = value(message); return takeMessage(v.messages[0]!, v); };

  it("maps text, media, replies and reactions; skips groups, unknown types and senders without a number", () => {
    const text = take({ type: "text", text: { body: "hello" }, context: { from: "15550009999", id: wamid(0) } });
    assert.equal(text.kind, "message");
    if (text.kind !== "message") return;
    assert.deepEqual({ id: text.inbound.id, peer: text.inbound.peer, sender: text.inbound.sender, text: text.inbound.text, mentioned: text.inbound.mentioned, replyTo: text.inbound.replyToMessageId, ts: text.inbound.ts },
      { id: wamid(1), peer: { kind: "dm", id: ALICE.waId }, sender: { id: ALICE.waId, name: "Alice" }, text: "hello", mentioned: true, replyTo: wamid(0), ts: 1700000000000 });
    assert.equal(targetOf(text.inbound.conversation), ALICE.waId);

    const voice = take({ type: "audio", audio: { id: "123456", mime_type: "audio/ogg; codecs=opus", voice: true } });
    assert.deepEqual(voice.kind === "message" && [voice.files, voice.inbound.text], [[{ mediaId: "123456", kind: "audio", mime: "audio/ogg" }], ""]);
    const doc = take({ type: "document", document: { id: "77", mime_type: "application/pdf", filename: "a.pdf", caption: "read this" } });
    assert.deepEqual(doc.kind === "message" && [doc.files, doc.inbound.text], [[{ mediaId: "77", kind: "file", mime: "application/pdf", name: "a.pdf" }], "read this"]);
    const sticker = take({ type: "sticker", sticker: { id: "88", mime_type: "image/webp", animated: false } });
    assert.deepEqual(sticker.kind === "message" && sticker.files, [{ mediaId: "88", kind: "image", mime: "image/webp", name: "sticker.webp" }]);
    const video = take({ type: "video", video: { id: "99", mime_type: "video/mp4" } });
    assert.deepEqual(video.kind === "message" && video.files[0]?.kind, "video");

    assert.deepEqual(take({ type: "reaction", reaction: { message_id: wamid(0), emoji: "👍" } }), { kind: "reaction", id: wamid(1), from: ALICE.waId, name: "Alice", messageId: wamid(0), emoji: "👍", ts: 1700000000000 });
    assert.equal((take({ type: "reaction", reaction: { message_id: wamid(0) } }) as { emoji: string }).emoji, "", "removed");
    assert.equal(take({ type: "text", text: { body: "x" }, group_id: "G1" }).kind, "skipped");
    assert.equal(take({ type: "unsupported" }).kind, "skipped");
    assert.equal(take({ type: "text", text: { body: "x" }, from: undefined }).kind, "skipped");
    assert.equal(take({ type: "text", text: { body: "x" }, id: "not-a-wamid" }).kind, "skipped");
    assert.throws(() => targetOf("web-user"), /not a WhatsApp conversation/);
    assert.equal(conversationOf(ALICE.waId), ALICE.waId);
    const payload: WaPayload = { entry: [{ changes: [{ field: "account_update", value: {} }, { field: "messages", value: { statuses: [] } }] }, { changes: null } as never] };
    assert.equal(valuesOf(payload).length, 1, "only messages changes");
    // contacts that are no list: taken without a name (a throw would make Meta redeliver it for a week)
    const odd = { contacts: "nobody", messages: [{ from: ALICE.waId, id: wamid(2), type: "text", text: { body: "x" } }] } as unknown as Parameters<typeof takeMessage>[1];
    const oddTaken = takeMessage(odd.messages![0]!, odd);
    assert.deepEqual(oddTaken.kind === "message" && oddTaken.inbound.sender, { id: ALICE.waId });
    const two = { contacts: [{ wa_id: "15550003333", profile: { name: "Bob" } }, { wa_id: "15550004444", profile: { name: "Carol" } }], messages: [{ from: ALICE.waId, id: wamid(3), type: "text", text: { body: "x" } }] };
    const twoTaken = takeMessage(two.messages[0]!, two);
    assert.deepEqual(twoTaken.kind === "message" && twoTaken.inbound.sender, { id: ALICE.waId }, "not another contact's name");
  });

  it("sends the access token only to Meta's hosts over https or to the configured apiBaseUrl", () => {
    const meta = "https://graph.facebook.com";
    assert.equal(mayCarryToken("https://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=1&ext=2&hash=3", meta), true);
    assert.equal(mayCarryToken("http://127.0.0.1:4000/download/1", "http://127.0.0.1:4000"), true, "the test server");
    assert.equal(mayCarryToken("http://lookaside.fbsbx.com/a", meta), false, "not over plain http");
    assert.equal(mayCarryToken("https://evil.example/a", meta), false);
    assert.equal(mayCarryToken("https://lookaside.fbsbx.com.evil.example/a", meta), false);
    assert.equal(mayCarryToken("https://evilfbsbx.com/a", meta), false);
    assert.equal(mayCarryToken("https://127.0.0.1:4000/a", "http://127.0.0.1:4000"), false, "another origin of the same host");
    assert.equal(mayCarryToken("not a url", meta), false);
  });

  it("renders markdown as WhatsApp formatting", () => {
    assert.equal(toWhatsAppText("# Title\n**bold** and *it* and ~~gone~~, `x`, [docs](https://example.org)\n```js\nconst a = 1;\n```"),
      "*Title*\n*bold* and _it_ and ~gone~, `x`, docs (https://example.org)\n```\nconst a = 1;\n```");
  });

  it("maps Graph errors: throttling and 5xx are retried, 131047/131026/190 are permanent with what to do", () => {
    const rate = toDeliveryError(new GraphError("(#130429) Rate limit hit", 400, 130429, undefined, 2000));
    assert.deepEqual([rate.opts.permanent, rate.opts.retryAfterMs], [undefined, 2000]);
    assert.equal(toDeliveryError(new GraphError("busy", 429)).opts.permanent, undefined);
    assert.equal(toDeliveryError(new GraphError("oops", 503)).opts.permanent, undefined);
    assert.equal(toDeliveryError(new GraphError("(#131000) Something went wrong", 500, 131000)).opts.permanent, undefined);
    const window = toDeliveryError(new GraphError("(#131047) Re-engagement message", 400, 131047));
    assert.equal(window.opts.permanent, true);
    assert.match(window.message, /24 hours/);
    assert.match(window.message, /user writes again/);
    assert.match(toDeliveryError(new GraphError("(#131026) Message Undeliverable", 400, 131026)).message, /could not deliver/);
    const token = toDeliveryError(new GraphError("Invalid OAuth access token", 401, 190));
    assert.equal(token.opts.permanent, true);
    assert.match(token.message, /WHATSAPP_ACCESS_TOKEN/);
    assert.equal(toDeliveryError(new GraphError("(#100) Invalid parameter", 400, 100)).opts.permanent, true);
    assert.equal(toDeliveryError(new TypeError("fetch failed")).opts.permanent, undefined);
  });

  it("validates the settings and keeps the defaults; an enabled channel is a launcher actor with its own NATS user", () => {
    const s = whatsappChannelSchema.parse({ enabled: true });
    assert.deepEqual([s.host, s.port, s.path, s.apiBaseUrl, s.reactionNotifications, s.typingIndicator], ["127.0.0.1", 8791, "/whatsapp/webhook", "https://graph.facebook.com", "own", true]);
    assert.match(s.apiVersion, /^v\d+\.0$/);
    assert.throws(() => whatsappChannelSchema.parse({ phoneNumberId: "+15550009999" }), /digits only/);
    assert.throws(() => whatsappChannelSchema.parse({ verifyToken: "short" }), /at least 16/);
    const config = parseConfig({ channels: { whatsapp: { enabled: true } } }, { LURKBOT_HOME: "/tmp/x", WHATSAPP_APP_SECRET: "0123456789abcdef0123" }, "/tmp/x");
    assert.deepEqual(configuredChannelActors(config), ["channel-whatsapp"]);
    assert.equal(config.channels.whatsapp?.appSecret, "0123456789abcdef0123", "from the environment");
    assert.ok(actorGrants().some((g) => g.user === "channel-whatsapp" && g.publish.includes(S.inbound("whatsapp"))));
  });
});

describe("whatsapp channel end to end", () => {
  let system: TestSystem;
  let wa: FakeWhatsAppServer;
  let admin: NatsConnection;
  let port: number;
  const STRANGER = "15559998888";
  const receipts: { deliveryId: string; status: string; error?: string; platformMessageId?: string; attempts?: number }[] = [];
  // pairing: Alice is allowed, anyone else gets a code
  const routing = { dm: { policy: "pairing", allowFrom: [`whatsapp:${ALICE.waId}`] }, dmScope: "per-channel-peer" };
  // the messaging profile has the message tool
  const agents = [{ id: "main", default: true, toolProfile: "messaging" }];
  const target = () => `http://127.0.0.1:${port}/whatsapp/webhook`;
  const writeConfig = (extra: Record<string, unknown> = {}) => writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({
    channels: { whatsapp: { enabled: true, phoneNumberId: wa.phoneNumberId, apiBaseUrl: wa.url, apiVersion: wa.version, port, ...extra } },
    routing, agents,
  }));
  const env = () => ({ WHATSAPP_ACCESS_TOKEN: wa.token, WHATSAPP_APP_SECRET: wa.appSecret, WHATSAPP_VERIFY_TOKEN: wa.verifyToken });

  before(async () => {
    wa = await FakeWhatsAppServer.start();
    port = await freePort();
    system = await TestSystem.start({ fake: { chunkDelayMs: 40 }, config: { routing, agents }, env: env() });
    writeConfig();
    admin = await system.nats.connect("admin");
    admin.subscribe(S.eventsOf("channel-whatsapp"), {
      callback: (_e, m) => {
        const { data } = m.json<{ data: { deliveryId?: string; status?: string; error?: string; platformMessageId?: string; attempts?: number } }>();
        if (data.deliveryId) receipts.push({ deliveryId: data.deliveryId, status: data.status ?? "", ...(data.error ? { error: data.error } : {}), ...(data.platformMessageId ? { platformMessageId: data.platformMessageId } : {}), attempts: data.attempts ?? 0 });
      },
    });
    await admin.flush();
    await system.startActor("channel-whatsapp");
  });
  after(async () => {
    await admin?.close();
    await system?.actors.get("channel-whatsapp")?.stop();
    await system?.stop();
    await wa?.close();
  });
  beforeEach(() => system.fake.reset());

  const output = () => system.actors.get("channel-whatsapp")!.output();
  const texts = (waId = ALICE.waId) => wa.sentTo(waId).filter((m) => m.type === "text").map((m) => m.body.text.body as string);
  const requestsWith = (text: string) => system.fake.requests.filter((r) => messageText(r.body.messages.at(-1)).includes(text)).length;
  const lastInbound = async (): Promise<InboundMessage | undefined> => {
    const m = await (await jetstreamManager(admin)).streams.getMessage(STREAMS.inbound, { last_by_subj: S.inbound("whatsapp") }).catch(() => null);
    return m ? inboundMessageSchema.parse(m.json()) : undefined;
  };
  const publishOut = async (fields: Record<string, unknown>) => {
    const conversation = conversationOf(ALICE.waId);
    const out = envelope("lurk.outbound.message.v1", { channel: "whatsapp", conversation, kind: "reply" as const, replyTo: [], attachments: [], text: "", ...fields });
    await jetstream(admin).publish(S.outbound("whatsapp", conversation), JSON.stringify(out));
    return out;
  };
  const receiptOf = (id: string, status: string) => waitFor(() => receipts.find((r) => r.deliveryId === id && r.status === status), 30_000, `${status} for ${id}`);

  it("answers Meta's verification GET with the challenge for the right token, 403 for a wrong one", async () => {
    assert.deepEqual(await wa.verify(target(), wa.verifyToken, "challenge-42"), { status: 200, text: "challenge-42" });
    assert.equal((await wa.verify(target(), `${wa.verifyToken}x`)).status, 403);
    assert.equal((await wa.verify(target(), "wrong")).status, 403);
    assert.equal((await wa.verify(target().replace("/webhook", "/other"), wa.verifyToken)).status, 404);
    assert.ok(!output().includes(wa.verifyToken), "the verify token is not logged");
  });

  it("answers a text DM end to end: stored before the 200, typing shown, the reply in WhatsApp formatting", async () => {
    system.fake.enqueue({ kind: "text", text: "Hi **Alice**, see [the docs](https://example.org).", chunks: 6 });
    const { payload, id } = wa.userMessage({ text: "hello bot" });
    assert.equal(await wa.deliver(target(), payload), 200);
    const stored = await lastInbound();
    assert.deepEqual([stored?.id, stored?.text, stored?.sender], [id, "hello bot", { id: ALICE.waId, name: "Alice" }], "stored before Meta got its 200");
    await waitFor(() => texts().includes("Hi *Alice*, see the docs (https://example.org)."), 20_000, "the reply");
    const reply = wa.sentTo(ALICE.waId).at(-1)!;
    assert.equal(reply.body.recipient_type, "individual");
    assert.equal(reply.body.text.preview_url, false);
    const typing = wa.typings.find((t) => t.messageId === id);
    assert.ok(typing && typing.at <= reply.at, "the message marked read with a typing indicator before the reply");
    const logs = output();
    for (const secret of [wa.token, wa.appSecret, wa.verifyToken]) assert.ok(!logs.includes(secret), "no secret in the log");
  });

  it("runs a duplicate delivery once: twice at the same time and again later", async () => {
    system.fake.enqueue({ kind: "text", text: "said once", chunks: 1 });
    const { payload } = wa.userMessage({ text: "deliver me twice" });
    assert.deepEqual(await Promise.all([wa.deliver(target(), payload), wa.deliver(target(), payload)]), [200, 200]);
    await waitFor(() => texts().includes("said once"), 20_000, "the reply");
    assert.equal(await wa.deliver(target(), payload), 200, "Meta's retry later");
    await sleep(800);
    assert.equal(requestsWith("deliver me twice"), 1, "one run");
    assert.equal(texts().filter((t) => t === "said once").length, 1);
  });

  it("refuses a missing or wrong signature (401) and a malformed body (400) before anything runs, and keeps serving", async () => {
    const before = await lastInbound();
    const { payload } = wa.userMessage({ text: "forged" });
    assert.equal(await wa.deliver(target(), payload, { signature: null }), 401, "no signature");
    assert.equal(await wa.deliver(target(), payload, { secret: "not-the-app-secret" }), 401, "signed with another secret");
    assert.equal(await wa.deliver(target(), payload, { signature: "sha256=00" }), 401);
    const body = JSON.stringify(payload);
    assert.equal(await wa.deliver(target(), undefined, { body: `${body} `, signature: `sha256=${createHmac("sha256", wa.appSecret).update(body).digest("hex")}` }), 401, "the signature of other bytes");
    assert.equal(await wa.deliver(target(), undefined, { body: "{ not json" }), 400, "signed, not JSON");
    assert.equal(await wa.deliver(target(), undefined, { body: JSON.stringify({ object: "whatsapp_business_account" }) }), 400, "no entry list");
    assert.equal(await wa.deliver(target(), undefined, { body: "[1,2]" }), 400);
    assert.equal(await wa.deliver(target(), undefined, { body: JSON.stringify({ entry: [{ changes: [{ field: "messages", value: { messages: [{ id: 5 }, null] } }] }] }) }), 200, "a well-formed payload with unusable messages: taken, skipped");
    assert.equal(await wa.deliver(target(), undefined, { body: JSON.stringify({ entry: [{ changes: [{ field: "messages", value: { statuses: { id: 1 }, errors: 5, messages: [] } }] }] }) }), 200, "statuses and errors that are no lists: skipped, not a 500 Meta would redeliver for a week");
    assert.equal(await wa.deliver(target(), undefined, { body: JSON.stringify({ entry: [], pad: "x".repeat(1024 * 1024) }) }), 413);
    assert.equal(await wa.deliver(target(), payload, { method: "PUT" }), 405);
    await sleep(300);
    assert.equal((await lastInbound())?.id, before?.id, "nothing stored");
    assert.equal(system.fake.requests.length, 0, "no run");
    system.fake.enqueue({ kind: "text", text: "still here", chunks: 1 });
    assert.equal(await wa.deliver(target(), wa.userMessage({ text: "are you alive?" }).payload), 200);
    await waitFor(() => texts().includes("still here"), 20_000, "the answer after the bad requests");
  });

  it("an image reaches the model: fetched by its media id with the token, into the media store", async () => {
    const png = await flatImage(16, 16).png().toBuffer();
    const mediaId = wa.addMedia(png, "image/png");
    system.fake.enqueue({ kind: "text", text: "a pink square", chunks: 1 });
    assert.equal(await wa.deliver(target(), wa.userMessage({ image: { mediaId, mime: "image/png", caption: "what is this?" } }).payload), 200);
    await waitFor(() => texts().includes("a pink square"), 20_000, "the answer");
    assert.deepEqual(wa.downloads, [mediaId]);
    const last = system.fake.requests.at(-1)!.body.messages.at(-1)!;
    assert.match(messageText(last), /what is this\?/);
    const parts = (Array.isArray(last.content) ? last.content : []) as { type: string; image_url?: { url: string } }[];
    const images = parts.filter((p) => p.type === "image_url");
    assert.equal(images.length, 1, JSON.stringify(parts.map((p) => p.type)));
    assert.match(images[0]!.image_url!.url, /^data:image\/\w+;base64,/);
  });

  it("a media url off Meta's hosts is never fetched, nor a redirect there: the message runs with the file's error", async () => {
    let connections = 0;
    const elsewhere = createServer((_req, res) => res.end("secret"));
    elsewhere.on("connection", () => connections++);
    await new Promise<void>((resolve) => elsewhere.listen(0, "127.0.0.1", () => resolve()));
    const away = (elsewhere.address() as { port: number }).port;
    try {
      const png = await flatImage(8, 8).png().toBuffer();
      const offHost = wa.addMedia(png, "image/png", { url: `https://127.0.0.1:${away}/steal` });
      system.fake.enqueue({ kind: "text", text: "no picture 1", chunks: 1 });
      assert.equal(await wa.deliver(target(), wa.userMessage({ image: { mediaId: offHost, mime: "image/png", caption: "off host [m1]" } }).payload), 200);
      await waitFor(() => texts().includes("no picture 1"), 20_000, "the answer");
      const redirected = wa.addMedia(png, "image/png", { redirectTo: `http://127.0.0.1:${away}/steal` });
      system.fake.enqueue({ kind: "text", text: "no picture 2", chunks: 1 });
      assert.equal(await wa.deliver(target(), wa.userMessage({ image: { mediaId: redirected, mime: "image/png", caption: "redirected [m2]" } }).payload), 200);
      await waitFor(() => texts().includes("no picture 2"), 20_000, "the answer");
      assert.ok(wa.downloads.includes(redirected), "the fake's redirect was asked");
      assert.equal(connections, 0, "nothing reached the other host");
      const seen = system.fake.requests.map((r) => messageText(r.body.messages.at(-1))).filter((t) => /\[m[12]\]/.test(t));
      assert.equal(seen.length, 2);
      for (const t of seen) assert.match(t, /could not be received: .*not on a Meta host/);
    } finally {
      await new Promise((resolve) => elsewhere.close(resolve));
    }
  });

  it("chunks a long reply at 4096 characters", async () => {
    const paragraphs = Array.from({ length: 30 }, (_, i) => `Paragraph ${i}: ${"lorem ipsum ".repeat(25).trim()}.`);
    system.fake.enqueue({ kind: "text", text: paragraphs.join("\n\n"), chunks: 4 });
    const before = texts().length;
    assert.equal(await wa.deliver(target(), wa.userMessage({ text: "tell me a lot" }).payload), 200);
    const parts = await waitFor(() => (texts().slice(before).some((t) => t.includes("Paragraph 29:")) ? texts().slice(before) : undefined), 30_000, "the whole reply");
    assert.ok(parts.length >= 3, `${parts.length} messages`);
    for (const p of parts) assert.ok(p.length <= 4096, `${p.length} characters`);
    for (const p of paragraphs) assert.ok(parts.some((t) => t.includes(p)), "no paragraph lost or split");
  });

  it("sends a reply's files: each uploaded to /media, then a message of its type with the media id, after the text; OGG as a voice message", async () => {
    const nc = await system.nats.connect("channel-whatsapp");
    try {
      const png = await flatImage(8, 8).png().toBuffer();
      const stored = await new MediaStore(nc, MEDIA_DEFAULTS).put(png, { mime: "image/png", name: "chart.png" });
      const pdf = Buffer.from("%PDF-1.4 test");
      const storedPdf = await new MediaStore(nc, MEDIA_DEFAULTS).put(pdf, { mime: "application/pdf", name: "report.pdf" });
      const ogg = Buffer.concat([Buffer.from("OggS"), Buffer.alloc(200, 7)]);
      const storedOgg = await new MediaStore(nc, MEDIA_DEFAULTS).put(ogg, { mime: "audio/ogg", name: "reply.ogg" });
      const out = await publishOut({ text: "Here you go:", attachments: [
        { kind: "image", mime: "image/png", name: "chart.png", size: png.length, ref: stored.ref },
        { kind: "file", mime: "application/pdf", name: "report.pdf", size: pdf.length, ref: storedPdf.ref },
        { kind: "audio", mime: "audio/ogg", name: "reply.ogg", size: ogg.length, ref: storedOgg.ref },
      ] });
      await receiptOf(out.id, "delivered");
      const sent = wa.sentTo(ALICE.waId).slice(-4);
      assert.deepEqual(sent.map((m) => m.type), ["text", "image", "document", "audio"]);
      assert.equal(sent[0]!.body.text.body, "Here you go:");
      const [img, doc, voice] = wa.uploads.slice(-3);
      assert.deepEqual([img!.type, img!.name, Buffer.compare(img!.bytes, png)], ["image/png", "chart.png", 0]);
      assert.equal(sent[1]!.body.image.id, img!.id);
      assert.deepEqual(sent[2]!.body.document, { id: doc!.id, filename: "report.pdf" });
      assert.deepEqual(sent[3]!.body.audio, { id: voice!.id, voice: true }, "a voice reply as a voice message");
    } finally {
      await nc.close();
    }
  });

  it("the message tool's react puts the emoji on the user's message; edit is answered not supported", async () => {
    system.fake.enqueue({ kind: "tool_calls", calls: [{ id: "call_wa_react", name: "message", arguments: { action: "react", emoji: "👍" } }] });
    const { payload, id } = wa.userMessage({ text: "thumbs up please" });
    assert.equal(await wa.deliver(target(), payload), 200);
    const reaction = await waitFor(() => wa.sentTo(ALICE.waId).find((m) => m.type === "reaction" && m.body.reaction.message_id === id), 30_000, "the reaction");
    assert.equal(reaction.body.reaction.emoji, "👍");
    const edit = await publishOut({ kind: "action", action: { op: "edit", messageId: reaction.id, text: "x" } });
    assert.match((await receiptOf(edit.id, "failed")).error ?? "", /edit is not supported by whatsapp/);
  });

  it("a 429 is waited out and the reply delivered once", async () => {
    wa.failNext(429, { message: "(#130429) Rate limit hit", type: "OAuthException", code: 130429 }, { "retry-after": "1" });
    const out = await publishOut({ text: "after the rate limit" });
    await receiptOf(out.id, "delivered");
    assert.equal(wa.attempts.filter((a) => a.text?.body === "after the rate limit").length, 2, "one refused attempt, one accepted");
    assert.equal(texts().filter((t) => t === "after the rate limit").length, 1);
  });

  it("131047 (outside the 24-hour window) fails the delivery for good with what it means", async () => {
    wa.failNext(400, { message: "(#131047) Re-engagement message", type: "OAuthException", code: 131047, error_data: { messaging_product: "whatsapp", details: "Message failed to send because more than 24 hours have passed since the customer last replied to this number." } });
    const out = await publishOut({ text: "too late" });
    const failed = await receiptOf(out.id, "failed");
    assert.match(failed.error ?? "", /more than 24 hours have passed since the user's last message/);
    assert.match(failed.error ?? "", /templates?/);
    assert.equal(failed.attempts, 1, "not retried");
    assert.equal(wa.attempts.filter((a) => a.text?.body === "too late").length, 1);
  });

  it("a user's reaction to the assistant's message reaches the next run as a system event, never a run; its removal too", async () => {
    system.fake.enqueue({ kind: "text", text: "An answer to react to.", chunks: 1 });
    assert.equal(await wa.deliver(target(), wa.userMessage({ text: "say something [r1]" }).payload), 200);
    const answer = await waitFor(() => wa.sentTo(ALICE.waId).find((m) => m.type === "text" && m.body.text.body === "An answer to react to."), 20_000, "the answer");
    await waitFor(() => receipts.find((r) => r.platformMessageId === answer.id), 20_000, "its receipt (in the sent-ledger)");
    const runs = system.fake.requests.length;
    const thumbs = wa.userReaction({ messageId: answer.id, emoji: "👍" });
    assert.equal(await wa.deliver(target(), thumbs.payload), 200);
    assert.equal(await wa.deliver(target(), thumbs.payload), 200, "a redelivery");
    assert.equal(await wa.deliver(target(), wa.userReaction({ messageId: answer.id, emoji: "" }).payload), 200, "taken back");
    await sleep(800);
    assert.equal(system.fake.requests.length, runs, "a reaction starts no run");
    system.fake.enqueue({ kind: "text", text: "ok", chunks: 1 });
    assert.equal(await wa.deliver(target(), wa.userMessage({ text: "anything new? [r2]" }).payload), 200);
    const body = await waitFor(() => system.fake.requests.map((r) => r.body).findLast((b: ChatRequestBody) => messageText(b.messages.filter((m) => m.role === "user").at(-1)).includes("[r2]")), 20_000, "the next run");
    const notes = body.messages.filter((m) => m.role === "user" && messageText(m).startsWith("[system event] Reaction")).map((m) => messageText(m));
    const by = `by "Alice" (id ${ALICE.waId})`;
    assert.deepEqual(notes, [
      `[system event] Reaction added on whatsapp: 👍 ${by} on msg ${answer.id}, your message "An answer to react to."`,
      `[system event] Reaction removed on whatsapp: 👍 ${by} on msg ${answer.id}, your message "An answer to react to."`,
    ]);
  });

  it("a stranger is refused per the DM policy (pairing): a code, no run", async () => {
    assert.equal(await wa.deliver(target(), wa.userMessage({ from: STRANGER, name: "Mallory", text: "let me in" }).payload), 200);
    const code = await waitFor(() => texts(STRANGER).find((t) => /pairing code/i.test(t)), 20_000, "the pairing code");
    assert.match(code, /Your pairing code: \S+/);
    await sleep(500);
    assert.equal(requestsWith("let me in"), 0, "no run for a stranger");
  });

  it("refuses to start without the app secret or verify token, naming what to set", async () => {
    await system.actors.get("channel-whatsapp")!.stop();
    try {
      await assert.rejects(startActorProcess("channel-whatsapp", system.nats, { ...system.env, WHATSAPP_APP_SECRET: "", WHATSAPP_VERIFY_TOKEN: "" }, 10_000),
        /channels\.whatsapp\.appSecret is not set: set WHATSAPP_APP_SECRET[\s\S]*forged[\s\S]*channels\.whatsapp\.verifyToken is not set/);
    } finally {
      await system.startActor("channel-whatsapp");
    }
  });
});
