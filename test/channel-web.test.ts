/**
 * The web channel against the whole system (real nats-server, every actor a process, the fake
 * LLM): the HTTP/WebSocket protocol with a `ws` client, then the page itself in Debian's
 * chromium driven by playwright-core (skipped only when /usr/bin/chromium is missing).
 */
import assert from "node:assert/strict";
import { createHash, randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { jetstream } from "@nats-io/jetstream";
import { chromium, type Browser } from "playwright-core";
import { WebSocket } from "ws";
import { envelope, subjects, type Attachment } from "../shared/contract/index.js";
import { MEDIA_DEFAULTS } from "../shared/runtime/config-media.js";
import { MediaStore } from "../shared/runtime/media.js";
import { chatOfSessionKey } from "../services/channel-web/user-scope.js";
import { waitFor } from "./harness/actors.js";
import { lastWebInbound, WebClient, type Frame } from "./harness/web-client.js";
import { freePort } from "./harness/nats.js";
import { BusClient } from "../shared/runtime/client.js";
import { TestSystem } from "./harness/system.js";

const TOKEN = "test-web-token-0123456789abcdef";
const CHROMIUM = "/usr/bin/chromium";
const ARTIFACTS = join(process.cwd(), "test", "artifacts", "web");
const S = subjects();
/** media.maxFileMb of this test: ~51 KB, so an over-cap upload stays small */
const MAX_FILE_MB = 0.05;
const MAX_FILE_BYTES = Math.floor(MAX_FILE_MB * 1024 * 1024);
/** a 1x1 PNG */
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "base64");


/** A protocol client: collects every frame; `next` waits for one that matches. */

/** An outbound message to a web chat, published as the router would. */
async function publishOutbound(system: TestSystem, chat: string, text: string, attachments: Attachment[] = []) {
  const admin = await system.nats.connect("admin");
  try {
    const out = envelope("lurk.outbound.message.v1", { channel: "web", conversation: chat, kind: "reply", replyTo: [], attachments, text });
    await jetstream(admin).publish(S.outbound("web", chat), JSON.stringify(out), { msgID: out.id });
    return out;
  } finally {
    await admin.close();
  }
}


describe("web channel", () => {
  let system: TestSystem;
  let port: number;

  before(async () => {
    // the router reads this at start: the browser's user may decide approvals from chat
    const routing = { commands: { owners: ["web:web-user"] } };
    const media = { maxFileMb: MAX_FILE_MB };
    system = await TestSystem.start({ fake: { chunkDelayMs: 40 }, files: { "notes.txt": "the treasure is under the oak" }, config: { routing, media } });
    port = await freePort();
    writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({
      channels: { web: { enabled: true, port, token: TOKEN } },
      routing,
      media,
    }));
    await system.startActor("channel-web");
  });
  after(async () => {
    await system?.actors.get("channel-web")?.stop();
    await system?.stop();
  });
  beforeEach(() => system.fake.reset());

  it("serves the page without secrets and refuses API calls and sockets without the token", async () => {
    const page = await fetch(`http://127.0.0.1:${port}/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get("content-security-policy") ?? "", /script-src 'sha256-/);
    const html = await page.text();
    assert.ok(html.includes('id="composer"') && !html.includes(TOKEN), "the page, without the token");
    assert.ok(!/src="http|href="http/.test(html), "no external resources");

    assert.equal((await fetch(`http://127.0.0.1:${port}/api/sessions`)).status, 401);
    const wrong = await fetch(`http://127.0.0.1:${port}/api/sessions`, { headers: { authorization: "Bearer wrong-token-wrong-token" } });
    assert.equal(wrong.status, 401);
    const ok = await fetch(`http://127.0.0.1:${port}/api/sessions`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(ok.status, 200);
    assert.ok(Array.isArray(((await ok.json()) as { sessions: unknown[] }).sessions));

    const bad = await WebClient.connect(port, "not-the-token-at-all");
    await waitFor(() => bad.closed, 5_000, "close after a bad token");
    assert.equal(bad.closed!.code, 4401);
    assert.ok(!bad.frames.some((f) => f.type === "ready"));

    const silent = await WebClient.connect(port, null);
    silent.send({ type: "send", id: randomUUID(), chat: "main", text: "sneaking in" });
    await waitFor(() => silent.closed, 5_000, "close when the first frame is not hello");
    assert.equal(silent.closed!.code, 4401);

    const cross = new WebSocket(`ws://127.0.0.1:${port}/ws`, { headers: { origin: "http://evil.example" } });
    const status = await new Promise<number | undefined>((resolve) => {
      cross.once("unexpected-response", (_req, res) => resolve(res.statusCode));
      cross.once("error", () => resolve(undefined));
    });
    assert.equal(status, 403, "a cross-site browser socket is refused");
  });

  it("streams deltas, then delivers the final reply; malformed frames get an error and the socket keeps serving", async () => {
    const text = "Here is a reply that arrives in several streamed pieces, one after the other.";
    system.fake.enqueue({ kind: "text", text, chunks: 6 });
    const c = await WebClient.connect(port, TOKEN);
    await c.next((f) => f.type === "ready", "ready");
    c.send({ type: "open", chat: "chat-stream", since: 0 });
    await c.next((f) => f.type === "history", "history");

    c.ws.send("{not json");
    await c.next((f) => f.type === "error" && f.code === "VALIDATION_FAILED", "error for a malformed frame");
    c.send({ type: "send", id: "x", chat: "bad chat!", text: "" });
    await c.next((f) => f.type === "error" && /chat|id/.test(f.message), "error for an invalid frame");

    const id = randomUUID();
    c.send({ type: "send", id, chat: "chat-stream", text: "tell me something" });
    const ack = await c.next((f) => f.type === "ack" && f.id === id, "ack");
    assert.equal(ack.duplicate, false);
    const reply = await c.next((f) => f.type === "entry" && f.entry.role === "assistant", "final reply");
    assert.equal(reply.entry.text, text);
    assert.equal(reply.entry.runId, ack.runId);
    const deltas = c.frames.filter((f) => f.type === "delta" && f.runId === ack.runId);
    assert.ok(deltas.length >= 2, `streamed in ${deltas.length} deltas`);
    assert.equal(deltas.map((d) => d.text).join(""), text);
    assert.ok(c.frames.findIndex((f) => f.type === "delta") < c.frames.indexOf(reply), "deltas come before the final reply");
    const stored = await lastWebInbound(system);
    assert.equal(stored?.id, id);
    assert.equal(stored?.sessionName, "chat-stream");
    assert.deepEqual(stored?.peer, { kind: "dm", id: "web-user" });
    c.close();
  });

  it("processes a message resent after a reconnect once, and replays what was delivered meanwhile", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    system.fake.responder = async () => {
      await held;
      return { kind: "text", text: "answer to the resent message", chunks: 2 };
    };
    try {
      const id = randomUUID();
      const first = await WebClient.connect(port, TOKEN);
      await first.next((f) => f.type === "ready", "ready");
      first.send({ type: "open", chat: "chat-resend", since: 0 });
      first.send({ type: "send", id, chat: "chat-resend", text: "only once please" });
      await first.next((f) => f.type === "ack" && f.id === id, "first ack");
      first.ws.terminate();

      // the reply is delivered while no browser is connected
      release();
      await waitFor(() => system.fake.requests.length >= 1, 20_000, "the LLM call");
      await new Promise((r) => setTimeout(r, 1_500));

      const second = await WebClient.connect(port, TOKEN);
      await second.next((f) => f.type === "ready", "ready again");
      second.send({ type: "send", id, chat: "chat-resend", text: "only once please" });
      const again = await second.next((f) => f.type === "ack" && f.id === id, "second ack");
      assert.equal(again.duplicate, true, "the resend is recognised");
      second.send({ type: "open", chat: "chat-resend", since: 1 });
      const history = await second.next((f) => f.type === "history" && f.chat === "chat-resend", "history since seq 1");
      await waitFor(async () => {
        if (history.entries.some((e: any) => e.role === "assistant")) return true;
        const more = second.frames.filter((f) => f.type === "entry" && f.chat === "chat-resend");
        return more.some((f) => f.entry.role === "assistant") || undefined;
      }, 20_000, "the reply delivered while offline");
      const all = [...history.entries, ...second.frames.filter((f) => f.type === "entry").map((f) => f.entry)];
      assert.equal(all.find((e: any) => e.role === "assistant")!.text, "answer to the resent message");
      assert.ok(!all.some((e: any) => e.role === "user"), "seq 1 (the user's line) is not sent again");
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(system.fake.requests.filter((r) => JSON.stringify(r.body.messages).includes("only once please")).length, 1, "one run");
      second.close();
    } finally {
      system.fake.responder = undefined;
    }
  });

  const upload = (body: Buffer, name: string, mime: string, token: string | null = TOKEN) => fetch(`http://127.0.0.1:${port}/upload?name=${encodeURIComponent(name)}`, {
    method: "POST", body, headers: { "content-type": mime, ...(token ? { authorization: `Bearer ${token}` } : {}) },
  });
  const media = (ref: string, token: string | null = TOKEN) => fetch(`http://127.0.0.1:${port}/media/${ref}`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  const readStore = async (ref: string) => {
    const nc = await system.nats.connect("channel-web");
    try {
      return await new MediaStore(nc, { ...MEDIA_DEFAULTS, maxFileMb: MAX_FILE_MB }).get(ref);
    } finally {
      await nc.close();
    }
  };

  it("uploads a file (token needed, media.maxFileMb cap) and sends it by ref: the inbound message carries the ref of the stored bytes", async () => {
    const bytes = Buffer.from(`%PDF-1.4 report ${randomUUID()}\n`.repeat(20));
    assert.equal((await upload(bytes, "report.pdf", "application/pdf", null)).status, 401, "no token");
    assert.equal((await upload(bytes, "report.pdf", "application/pdf", "wrong-token-wrong-token")).status, 401, "a wrong token");
    const big = await upload(Buffer.alloc(MAX_FILE_BYTES + 1, 7), "big.bin", "application/octet-stream");
    assert.equal(big.status, 413);
    const bigError = ((await big.json()) as { error: { code: string; message: string } }).error;
    assert.equal(bigError.code, "PAYLOAD_TOO_LARGE");
    assert.match(bigError.message, /big\.bin.*media\.maxFileMb/);

    const res = await upload(bytes, "Quartalsbericht Ü.pdf", "application/pdf");
    assert.equal(res.status, 200);
    const { attachment } = (await res.json()) as { attachment: { ref: string; name: string; mime: string; size: number; kind: string } };
    assert.deepEqual(attachment, { ref: createHash("sha256").update(bytes).digest("hex"), name: "Quartalsbericht Ü.pdf", mime: "application/pdf", size: bytes.length, kind: "file" });

    const c = await WebClient.connect(port, TOKEN);
    await c.next((f) => f.type === "ready", "ready");
    assert.equal(c.frames.find((f) => f.type === "ready")!.maxFileBytes, MAX_FILE_BYTES, "the page learns the cap");
    c.send({ type: "open", chat: "chat-files", since: 0 });
    // only refs this channel took in; at most a few; text or a file
    const stranger = randomUUID();
    c.send({ type: "send", id: stranger, chat: "chat-files", text: "", attachments: [{ ref: "a".repeat(64) }] });
    assert.match((await c.next((f) => f.type === "nack" && f.id === stranger, "nack for an unknown ref")).message, /not uploaded/);
    const refused = async (frame: object, what: string) => {
      c.frames.length = 0;
      c.send({ type: "send", id: randomUUID(), chat: "chat-files", ...frame });
      return (await c.next((f) => f.type === "error" || f.type === "ack", what)) as Frame;
    };
    const tooMany = await refused({ text: "x", attachments: Array.from({ length: 9 }, () => ({ ref: attachment.ref })) }, "too many files");
    assert.equal(tooMany.type, "error");
    assert.match(tooMany.message, /attachments/);
    const extra = await refused({ text: "x", attachments: [{ ref: attachment.ref, name: "evil.html", mime: "text/html" }] }, "fields besides the ref");
    assert.equal(extra.type, "error");
    assert.match(extra.message, /attachments/);
    const empty = await refused({ text: "" }, "an empty message");
    assert.equal(empty.type, "error");
    assert.match(empty.message, /text or a file/);

    const id = randomUUID();
    c.send({ type: "send", id, chat: "chat-files", text: "here is the report", attachments: [{ ref: attachment.ref }] });
    const ack = await c.next((f) => f.type === "ack" && f.id === id, "ack");
    assert.equal(ack.duplicate, false);
    const stored = await lastWebInbound(system);
    assert.equal(stored?.id, id);
    assert.equal(stored?.text, "here is the report");
    assert.deepEqual(stored?.attachments, [{ kind: "file", mime: "application/pdf", name: "Quartalsbericht Ü.pdf", size: bytes.length, ref: attachment.ref }]);
    assert.ok(!JSON.stringify(stored).includes(bytes.toString("base64").slice(0, 40)), "no bytes on the bus");
    assert.deepEqual(Buffer.from((await readStore(attachment.ref)).bytes), bytes, "the store holds the uploaded bytes");
    const line = await c.next((f) => f.type === "entry" && f.entry.id === id, "the user's line");
    assert.equal(line.entry.attachments[0].ref, attachment.ref);
    // the uploader may download it again
    const back = await media(attachment.ref);
    assert.equal(back.status, 200);
    assert.deepEqual(Buffer.from(await back.arrayBuffer()), bytes);
    assert.equal(back.headers.get("content-disposition"), `attachment; filename="Quartalsbericht _.pdf"; filename*=UTF-8''${encodeURIComponent("Quartalsbericht Ü.pdf")}`);
    c.close();
  });

  it("delivers the agent's files as chat lines, downloadable with the token from /media/<ref>, and replays them from history", async () => {
    const nc = await system.nats.connect("channel-web");
    const store = new MediaStore(nc, { ...MEDIA_DEFAULTS, maxFileMb: MAX_FILE_MB });
    const image = await store.put(PNG, { mime: "image/png", name: "dot.png" });
    const csvBytes = Buffer.from(`a,b\n1,${randomUUID()}\n`);
    const csv = await store.put(csvBytes, { mime: "text/csv", name: "data.csv" });
    await nc.close();
    const chat = `chat-out-${randomUUID().slice(0, 8)}`;
    const c = await WebClient.connect(port, TOKEN);
    await c.next((f) => f.type === "ready", "ready");
    c.send({ type: "open", chat, since: 0 });
    await c.next((f) => f.type === "history" && f.chat === chat, "history");

    const gone = "e".repeat(64);
    const out = await publishOutbound(system, chat, "Two files for you.", [
      { kind: "image", mime: "image/png", name: "dot.png", size: image.size, ref: image.ref },
      { kind: "file", mime: "text/csv", name: "data.csv", size: csv.size, ref: csv.ref },
      { kind: "file", mime: "application/pdf", name: "expired.pdf", size: 10, ref: gone },
    ]);
    const lines = await waitFor(() => {
      const got = c.frames.filter((f) => f.type === "entry" && f.entry.id.startsWith(`${out.id}:`)).map((f) => f.entry);
      return got.length === 4 ? got : undefined;
    }, 20_000, "the text and three file lines");
    assert.equal(lines[0].text, "Two files for you.");
    assert.deepEqual(lines[1].attachments, [{ ref: image.ref, name: "dot.png", mime: "image/png", size: PNG.length, kind: "image" }]);
    assert.equal(lines[1].text, "");
    assert.deepEqual(lines[2].attachments, [{ ref: csv.ref, name: "data.csv", mime: "text/csv", size: csvBytes.length, kind: "file" }]);
    assert.equal(lines[3].attachments, undefined, "a file that is not in the store…");
    assert.match(lines[3].text, /^\[file: expired\.pdf could not be sent: .*not in the media store/, "…is a text line saying so");

    const png = await media(image.ref);
    assert.equal(png.status, 200);
    assert.equal(png.headers.get("content-type"), "image/png");
    assert.equal(png.headers.get("content-disposition"), `inline; filename="dot.png"; filename*=UTF-8''dot.png`);
    assert.equal(png.headers.get("x-content-type-options"), "nosniff");
    assert.deepEqual(Buffer.from(await png.arrayBuffer()), PNG);
    const file = await media(csv.ref);
    assert.equal(file.headers.get("content-type"), "text/csv");
    assert.match(file.headers.get("content-disposition") ?? "", /^attachment; filename="data\.csv"/);
    assert.deepEqual(Buffer.from(await file.arrayBuffer()), csvBytes);

    assert.equal((await media(image.ref, null)).status, 401, "not without the token");
    assert.equal((await media(image.ref, "wrong-token-wrong-token")).status, 401);
    const missing = await media("0".repeat(64));
    assert.equal(missing.status, 404);
    assert.equal(((await missing.json()) as { error: { code: string } }).error.code, "NOT_FOUND");
    assert.equal((await media("not-a-ref")).status, 404);

    // a reload: the chat's history has the file lines
    const later = await WebClient.connect(port, TOKEN);
    await later.next((f) => f.type === "ready", "ready");
    later.send({ type: "open", chat, since: 0 });
    const history = await later.next((f) => f.type === "history" && f.chat === chat, "history");
    assert.deepEqual(history.entries.map((e: any) => e.attachments?.[0]?.ref ?? null), [null, image.ref, csv.ref, null]);
    c.close();
    later.close();
  });

  it("maps session keys to chats", () => {
    assert.equal(chatOfSessionKey("agent:main:main"), "main");
    assert.equal(chatOfSessionKey("agent:main:web:dm:chat-1a2b"), "chat-1a2b");
    assert.equal(chatOfSessionKey("agent:main:telegram:dm:555"), undefined);
    assert.equal(chatOfSessionKey("agent:main:web:group:x"), undefined);
  });

  it("works in a real browser: streaming, tool progress, Approve and Deny buttons, sessions", { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (apt-get install chromium)` }, async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    let browser: Browser | undefined;
    try {
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      const page = await browser.newPage({ viewport: { width: 1100, height: 720 } });
      const consoleErrors: string[] = [];
      page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });
      page.on("pageerror", (e) => consoleErrors.push(e.message));

      // a bad token shows the sign-in form
      await page.goto(`http://127.0.0.1:${port}/?token=wrong-token-wrong-token`);
      await page.locator("#login.shown").waitFor({ timeout: 10_000 });
      assert.equal(new URL(page.url()).search, "", "the token is removed from the address bar");
      await page.fill("#token", TOKEN);
      await page.click("#login button");
      await page.locator("#status.online").waitFor({ timeout: 10_000 });

      await page.click("#new-chat");
      const chat = (await page.textContent("#chat-title"))!;
      assert.match(chat, /^chat-[0-9a-f]{8}$/);

      // streaming reply
      const text = "Hello from the **fake model**, written slowly so the page shows it growing piece by piece.";
      system.fake.enqueue({ kind: "text", text, chunks: 12 });
      await page.fill("#input", "hello browser");
      await page.press("#input", "Enter");
      await page.locator(".msg.assistant.streaming").waitFor({ timeout: 15_000 });
      await page.screenshot({ path: join(ARTIFACTS, "streaming.png") });
      await page.locator(".msg.assistant:not(.streaming) strong", { hasText: "fake model" }).waitFor({ timeout: 15_000 });
      assert.equal(await page.locator(".msg.user", { hasText: "hello browser" }).count(), 1);
      assert.equal(await page.locator(".msg.user.pending").count(), 0, "acknowledged");

      // tool progress (auto mode: "read <path>" calls the read tool)
      await page.fill("#input", "please read notes.txt");
      await page.click("#send");
      await page.locator(".tool-line.done", { hasText: "read" }).waitFor({ timeout: 20_000 });
      await page.locator(".msg.assistant", { hasText: "treasure" }).waitFor({ timeout: 20_000 });

      // an approval notice, as the approvals actor would send it
      const approvalId = `appr-${randomUUID().slice(0, 8)}`;
      const admin = await system.nats.connect("admin");
      const out = envelope("lurk.outbound.message.v1", {
        channel: "web", conversation: chat, kind: "approval", replyTo: [], attachments: [],
        text: "The agent wants to run a command. Approve?",
        approval: { approvalId, tool: "exec", command: "rm -rf build/", expiresAt: Date.now() + 600_000 },
      });
      await jetstream(admin).publish(S.outbound("web", chat), JSON.stringify(out), { msgID: out.id });
      await page.locator(".approval button.approve").waitFor({ timeout: 15_000 });
      assert.equal(await page.locator(".approval button.deny").count(), 1);
      assert.equal(await page.locator(".approval .what").textContent(), "rm -rf build/");
      await page.screenshot({ path: join(ARTIFACTS, "approval.png") });
      await page.click(".approval button.approve");
      const stored = await waitFor(async () => {
        const m = await lastWebInbound(system);
        return m?.text === `/approve ${approvalId}` ? m : undefined;
      }, 10_000, "the /approve message in LURK_INBOUND");
      await admin.close();
      assert.equal(stored.conversation, chat);
      assert.equal(stored.sender.id, "web-user");
      assert.ok(await page.locator(".approval button.approve").isDisabled());

      // a real pending approval (asked of the approvals actor as the tools actor does), denied by a click
      const tools = await system.nats.connect("tools");
      const { approval: pending } = await new BusClient(tools).call("approvals", "request", {
        toolCallId: `call-${randomUUID()}`, tool: "exec", argsHash: "b".repeat(64), command: "git push --force", sessionKey: `agent:main:web:dm:${chat}`, agentId: "main",
      });
      const denyOut = envelope("lurk.outbound.message.v1", {
        channel: "web", conversation: chat, kind: "approval", replyTo: [], attachments: [],
        text: "The agent wants to force-push. Approve?",
        approval: { approvalId: pending.approvalId, tool: "exec", command: "git push --force", expiresAt: pending.expiresAt },
      });
      const admin2 = await system.nats.connect("admin");
      await jetstream(admin2).publish(S.outbound("web", chat), JSON.stringify(denyOut), { msgID: denyOut.id });
      await admin2.close();
      const denyCard = page.locator(".approval", { hasText: "git push --force" });
      await denyCard.locator("button.deny").waitFor({ timeout: 15_000 });
      await denyCard.locator("button.deny").click();
      const decided = await waitFor(async () => {
        const { approval: a } = await new BusClient(tools).call("approvals", "get", { approvalId: pending.approvalId });
        return a.status !== "pending" ? a : undefined;
      }, 15_000, "the approval decided");
      await tools.close();
      assert.equal(decided.status, "denied", "the Deny button denied it");
      assert.equal(decided.decidedBy, "web:web-user");
      assert.equal(await denyCard.locator(".decided").textContent(), "denied");
      await page.screenshot({ path: join(ARTIFACTS, "denied.png") });

      // the session list shows this chat; choosing another chat switches the conversation
      await page.locator(`#sessions li[data-chat="${chat}"] .meta`, { hasText: "records" }).waitFor({ timeout: 15_000 });
      await page.screenshot({ path: join(ARTIFACTS, "chat.png") });
      await page.click('#sessions li[data-chat="main"]');
      assert.equal(await page.textContent("#chat-title"), "Main session");
      assert.equal(await page.locator(".msg", { hasText: "hello browser" }).count(), 0, "another chat's lines are not shown");
      await page.click(`#sessions li[data-chat="${chat}"]`);
      await page.locator(".msg.user", { hasText: "hello browser" }).waitFor({ timeout: 10_000 });
      assert.deepEqual(consoleErrors.filter((e) => !/4401|WebSocket/.test(e)), [], "no script errors");
    } finally {
      await browser?.close();
    }
  });
  it("in a real browser: attaches a file to a message; shows the agent's image inline and its other file as a download", { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (apt-get install chromium)` }, async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    let browser: Browser | undefined;
    try {
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      const page = await browser.newPage({ viewport: { width: 1100, height: 720 }, acceptDownloads: true });
      const consoleErrors: string[] = [];
      page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });
      page.on("pageerror", (e) => consoleErrors.push(e.message));
      await page.goto(`http://127.0.0.1:${port}/?token=${TOKEN}`);
      await page.locator("#status.online").waitFor({ timeout: 10_000 });
      await page.click("#new-chat");
      const chat = (await page.textContent("#chat-title"))!;

      // the file button: uploaded at once, sent by ref with the message
      await page.setInputFiles("#file", { name: "dot.png", mimeType: "image/png", buffer: PNG });
      await page.locator("#attached .chip:not(.uploading)", { hasText: "dot.png" }).waitFor({ timeout: 10_000 });
      await page.fill("#input", "look at this dot");
      await page.press("#input", "Enter");
      const stored = await waitFor(async () => {
        const m = await lastWebInbound(system);
        return m?.text === "look at this dot" ? m : undefined;
      }, 10_000, "the message with the file in LURK_INBOUND");
      assert.equal(stored.conversation, chat);
      assert.deepEqual(stored.attachments, [{ kind: "image", mime: "image/png", name: "dot.png", size: PNG.length, ref: createHash("sha256").update(PNG).digest("hex") }]);
      await page.locator(".msg.user:not(.pending) .file img[src^='blob:']").waitFor({ timeout: 10_000 });
      assert.equal(await page.locator("#attached .chip").count(), 0, "the chips are gone once sent");

      // a file above media.maxFileMb is refused before uploading
      await page.setInputFiles("#file", { name: "huge.bin", mimeType: "application/octet-stream", buffer: Buffer.alloc(MAX_FILE_BYTES + 10) });
      await page.locator(".msg.error", { hasText: "huge.bin" }).waitFor({ timeout: 5_000 });

      // the agent's files: the image inline, the CSV as a download with its name
      const nc = await system.nats.connect("channel-web");
      const csvBytes = Buffer.from(`x,y\n${randomUUID()},2\n`);
      const csv = await new MediaStore(nc, { ...MEDIA_DEFAULTS, maxFileMb: MAX_FILE_MB }).put(csvBytes, { mime: "text/csv", name: "table.csv" });
      await nc.close();
      await publishOutbound(system, chat, "Here you go.", [
        { kind: "image", mime: "image/png", name: "back.png", ref: stored.attachments[0]!.ref! },
        { kind: "file", mime: "text/csv", name: "table.csv", ref: csv.ref },
      ]);
      const shown = page.locator(".msg.assistant .file img[alt='back.png']");
      await shown.waitFor({ timeout: 15_000 });
      await waitFor(async () => (await shown.evaluate((img: any) => img.complete && img.naturalWidth)) === 1 || undefined, 10_000, "the image decoded (1x1)");
      const [download] = await Promise.all([page.waitForEvent("download"), page.click(".msg.assistant .file a:text('table.csv')")]);
      assert.equal(download.suggestedFilename(), "table.csv");
      assert.deepEqual(readFileSync((await download.path())!), csvBytes);
      await page.screenshot({ path: join(ARTIFACTS, "files.png") });
      assert.deepEqual(consoleErrors.filter((e) => !/4401|WebSocket/.test(e)), [], "no script errors");
    } finally {
      await browser?.close();
    }
  });
});

describe("web channel with several users (channels.web.users)", () => {
  const ALICE = { id: "alice", name: "Alice", token: "alice-token-0123456789abcdef" };
  const BOB = { id: "bob", token: "bob-token-0123456789abcdef-xyz" };
  /** set too, but not used once `users` is set */
  const UNUSED = "single-token-not-used-0123456789";
  let system: TestSystem;
  let port: number;
  const api = (path: string, token: string | null) => fetch(`http://127.0.0.1:${port}${path}`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  const sessionsOf = async (token: string) => {
    const res = await api("/api/sessions", token);
    assert.equal(res.status, 200);
    return ((await res.json()) as { sessions: Array<{ chat: string; sessionKey: string }> }).sessions;
  };
  /** a socket signed in with `token`, showing `chat` */
  const openChat = async (token: string, chat: string) => {
    const c = await WebClient.connect(port, token);
    await c.next((f) => f.type === "ready", "ready");
    c.send({ type: "open", chat, since: 0 });
    await c.next((f) => f.type === "history" && f.chat === chat, `history of ${chat}`);
    return c;
  };
  const texts = (c: WebClient) => JSON.stringify(c.frames);

  before(async () => {
    port = await freePort();
    system = await TestSystem.start({ fake: { chunkDelayMs: 40 }, config: { channels: { web: { enabled: true, port, token: UNUSED, users: [ALICE, BOB] } } } });
    await system.startActor("channel-web");
  });
  after(async () => {
    await system?.actors.get("channel-web")?.stop();
    await system?.stop();
  });
  beforeEach(() => system.fake.reset());

  it("two users chat at the same time: each gets only their own replies, history and sessions", async () => {
    // both runs must be in flight at once (one shared session would run them one after the other)
    const inFlight = new Set<string>();
    let bothAtOnce = false;
    system.fake.responder = async (body) => {
      const last = JSON.stringify(body.messages[body.messages.length - 1] ?? "");
      const who = last.includes("from alice") ? "alice" : last.includes("from bob") ? "bob" : undefined;
      if (!who) return undefined;
      inFlight.add(who);
      if (inFlight.size === 2) bothAtOnce = true;
      await waitFor(() => bothAtOnce || undefined, 15_000, "both runs in flight").catch(() => undefined);
      return undefined; // auto: "echo: <text>", streamed
    };
    try {
      const alice = await openChat(ALICE.token, "main");
      const bob = await openChat(BOB.token, "main");
      const aliceId = randomUUID();
      const bobId = randomUUID();
      alice.send({ type: "send", id: aliceId, chat: "main", text: "hello from alice, the secret is apples" });
      bob.send({ type: "send", id: bobId, chat: "main", text: "hello from bob, the secret is bananas" });
      const aliceAck = await alice.next((f) => f.type === "ack" && f.id === aliceId, "alice's ack");
      const bobAck = await bob.next((f) => f.type === "ack" && f.id === bobId, "bob's ack");
      assert.notEqual(aliceAck.runId, bobAck.runId);
      const aliceReply = await alice.next((f) => f.type === "entry" && f.entry.role === "assistant", "alice's reply");
      const bobReply = await bob.next((f) => f.type === "entry" && f.entry.role === "assistant", "bob's reply");
      assert.ok(bothAtOnce, "the two runs were in flight at the same time");
      assert.match(aliceReply.entry.text, /^echo: hello from alice.*apples/);
      assert.match(bobReply.entry.text, /^echo: hello from bob.*bananas/);
      assert.ok(alice.frames.some((f) => f.type === "delta" && f.runId === aliceAck.runId), "alice saw her reply stream");
      // nothing of the other user: no line, no streamed text, no tool line, no run end
      assert.ok(!texts(alice).includes("bananas") && !texts(alice).includes(bobAck.runId), "alice sees nothing of bob's chat or run");
      assert.ok(!texts(bob).includes("apples") && !texts(bob).includes(aliceAck.runId), "bob sees nothing of alice's chat or run");
      // separate sessions: the model never saw the other user's words
      for (const r of system.fake.requests) {
        const sent = JSON.stringify(r.body.messages);
        assert.ok(!(sent.includes("apples") && sent.includes("bananas")), "one transcript holds both users' messages");
      }

      // the history of "main" is per user
      const aliceAgain = await WebClient.connect(port, ALICE.token);
      await aliceAgain.next((f) => f.type === "ready", "ready");
      assert.equal(aliceAgain.frames.find((f) => f.type === "ready")!.userId, "alice");
      aliceAgain.send({ type: "open", chat: "main", since: 0 });
      const aliceHistory = await aliceAgain.next((f) => f.type === "history", "alice's history");
      assert.deepEqual(aliceHistory.entries.map((e: any) => e.role), ["user", "assistant"]);
      assert.ok(JSON.stringify(aliceHistory.entries).includes("apples") && !JSON.stringify(aliceHistory.entries).includes("bananas"));

      // each message is a DM from its user, in that user's own session (a chat of the same name too)
      const chatId = randomUUID();
      bob.send({ type: "open", chat: "chat-same", since: 0 });
      bob.send({ type: "send", id: chatId, chat: "chat-same", text: "bob in a named chat" });
      await bob.next((f) => f.type === "entry" && f.chat === "chat-same" && f.entry.role === "assistant", "bob's named chat reply");
      const stored = await lastWebInbound(system);
      assert.equal(stored?.id, `bob+${chatId}`);
      assert.deepEqual(stored?.peer, { kind: "dm", id: "bob" });
      assert.deepEqual(stored?.sender, { id: "bob", name: "bob" });
      assert.equal(stored?.conversation, "bob+chat-same");
      assert.equal(stored?.sessionName, "bob+chat-same");
      const aliceNamed = await openChat(ALICE.token, "chat-same");
      const namedId = randomUUID();
      aliceNamed.send({ type: "send", id: namedId, chat: "chat-same", text: "alice in a named chat" });
      await aliceNamed.next((f) => f.type === "entry" && f.entry.role === "assistant", "alice's named chat reply");
      assert.deepEqual((await lastWebInbound(system))?.sender, { id: "alice", name: "Alice" });
      assert.ok(!texts(aliceNamed).includes("bob in a named chat"), "a chat of the same name is another user's own chat");

      const aliceSessions = await sessionsOf(ALICE.token);
      const bobSessions = await sessionsOf(BOB.token);
      assert.deepEqual(aliceSessions.map((s) => [s.chat, s.sessionKey]).sort(), [["chat-same", "agent:main:web:dm:alice+chat-same"], ["main", "agent:main:web:dm:alice"]]);
      assert.deepEqual(bobSessions.map((s) => [s.chat, s.sessionKey]).sort(), [["chat-same", "agent:main:web:dm:bob+chat-same"], ["main", "agent:main:web:dm:bob"]]);
      bob.send({ type: "sessions" });
      const frame = await bob.next((f) => f.type === "sessions", "bob's sessions frame");
      assert.ok(!JSON.stringify(frame.sessions).includes("alice"), "the socket lists bob's sessions only");
      for (const c of [alice, bob, aliceAgain, aliceNamed]) c.close();
    } finally {
      system.fake.responder = undefined;
    }
  });

  it("a user's token reads neither another user's media nor their chats' deliveries; a reused message id is the user's own message", async () => {
    const bytes = Buffer.from(`alice's private notes ${randomUUID()}\n`);
    const up = await fetch(`http://127.0.0.1:${port}/upload?name=notes.txt`, { method: "POST", body: bytes, headers: { "content-type": "text/plain", authorization: `Bearer ${ALICE.token}` } });
    assert.equal(up.status, 200);
    const { attachment } = (await up.json()) as { attachment: { ref: string } };
    assert.equal((await api(`/media/${attachment.ref}`, ALICE.token)).status, 200, "the uploader downloads it");
    const stranger = await api(`/media/${attachment.ref}`, BOB.token);
    const unknown = await api(`/media/${"0".repeat(64)}`, BOB.token);
    assert.equal(stranger.status, 404, "another user's upload is not found");
    assert.deepEqual(await stranger.json(), await unknown.json(), "…exactly like a file that does not exist");

    const bob = await openChat(BOB.token, "main");
    const alice = await openChat(ALICE.token, "main");
    const refused = randomUUID();
    bob.send({ type: "send", id: refused, chat: "main", text: "", attachments: [{ ref: attachment.ref }] });
    assert.match((await bob.next((f) => f.type === "nack" && f.id === refused, "nack for alice's file")).message, /not uploaded/);

    // a delivery to alice's chat (with a file) reaches alice's sockets only; conversations of no configured user reach nobody
    const nc = await system.nats.connect("channel-web");
    const image = await new MediaStore(nc, MEDIA_DEFAULTS).put(Buffer.concat([PNG, Buffer.from(randomUUID())]), { mime: "image/png", name: "for-alice.png" });
    await nc.close();
    await publishOutbound(system, "main", "to the single user that is not configured");
    await publishOutbound(system, "mallory+main", "to a user that does not exist");
    const out = await publishOutbound(system, "alice+main", "only for alice", [{ kind: "image", mime: "image/png", name: "for-alice.png", ref: image.ref }]);
    await alice.next((f) => f.type === "entry" && f.entry.id === `${out.id}:1`, "alice's file line");
    assert.equal((await api(`/media/${image.ref}`, ALICE.token)).status, 200, "alice downloads the file of her chat");
    assert.equal((await api(`/media/${image.ref}`, BOB.token)).status, 404, "bob does not");
    await new Promise((r) => setTimeout(r, 500));
    for (const c of [alice, bob]) assert.ok(!/not configured|does not exist/.test(texts(c)), "nobody gets another conversation's deliveries");
    assert.ok(!texts(bob).includes("only for alice"), "bob's socket showing his own main chat gets nothing of alice's");

    // bob naming alice's message id sends his own message (its own run), never joins her run
    const aliceId = randomUUID();
    alice.send({ type: "send", id: aliceId, chat: "main", text: "alice writes once" });
    const aliceAck = await alice.next((f) => f.type === "ack" && f.id === aliceId, "alice's ack");
    bob.send({ type: "send", id: aliceId, chat: "main", text: "bob reuses the id" });
    const bobAck = await bob.next((f) => f.type === "ack" && f.id === aliceId, "bob's ack");
    assert.equal(bobAck.duplicate, false, "a new message of bob");
    assert.notEqual(bobAck.runId, aliceAck.runId);
    await bob.next((f) => f.type === "entry" && f.entry.role === "assistant" && /bob reuses/.test(f.entry.text), "bob's reply");
    await alice.next((f) => f.type === "entry" && f.entry.role === "assistant" && /alice writes once/.test(f.entry.text), "alice's reply");
    assert.ok(!texts(bob).includes("alice writes once") && !texts(alice).includes("bob reuses"));
    alice.close();
    bob.close();
  });

  it("in a real browser: another user signing in on the same browser starts afresh, without the previous user's unsent messages", { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (apt-get install chromium)` }, async () => {
    let browser: Browser | undefined;
    try {
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      const page = await browser.newPage();
      await page.goto(`http://127.0.0.1:${port}/?token=${ALICE.token}`);
      await page.locator("#status.online").waitFor({ timeout: 10_000 });
      await page.click("#new-chat");
      // a message of alice's that was never acknowledged (her connection dropped)
      await page.evaluate(() => (globalThis as any).localStorage.setItem("lurkbot.web.pending", JSON.stringify({ "0b0e6a1c-1111-4222-8333-444455556666": { chat: "main", text: "alice's unsent words", files: [] } })));
      await page.goto(`http://127.0.0.1:${port}/?token=${BOB.token}`);
      await waitFor(async () => (await page.evaluate(() => (globalThis as any).localStorage.getItem("lurkbot.web.user"))) === "bob" || undefined, 10_000, "bob signed in");
      await page.locator("#status.online").waitFor({ timeout: 10_000 });
      assert.equal(await page.textContent("#chat-title"), "Main session", "bob starts in his main chat, not in alice's last chat");
      await new Promise((r) => setTimeout(r, 500));
      assert.ok(!(await page.evaluate(() => (globalThis as any).localStorage.getItem("lurkbot.web.pending")) ?? "").includes("unsent"), "alice's unsent message is dropped");
      assert.notEqual((await lastWebInbound(system))?.text, "alice's unsent words", "…never sent as bob's");
      assert.equal(await page.locator(".msg", { hasText: "unsent" }).count(), 0);
    } finally {
      await browser?.close();
    }
  });

  it("maps a user's session keys to that user's chats only", () => {
    const alice = { id: "alice", name: "Alice", scope: "alice" };
    assert.equal(chatOfSessionKey("agent:main:web:dm:alice", alice), "main");
    assert.equal(chatOfSessionKey("agent:work:web:dm:alice+chat-1a2b", alice), "chat-1a2b");
    for (const other of ["agent:main:web:dm:bob+chat-1a2b", "agent:main:web:dm:bob", "agent:main:web:dm:alicex", "agent:main:main", "agent:main:web:dm:chat-1a2b", "agent:main:dm:alice", "agent:main:telegram:dm:alice"]) {
      assert.equal(chatOfSessionKey(other, alice), undefined, other);
    }
  });

  it("refuses a wrong token as before, the same way whichever token was wrong; the single token is not used", async () => {
    const nearMiss = `${ALICE.token.slice(0, -1)}x`;
    const bodies = new Set<string>();
    for (const token of [null, "wrong-token-wrong-token", nearMiss, UNUSED]) {
      for (const path of ["/api/sessions", `/media/${"1".repeat(64)}`]) {
        const res = await api(path, token);
        assert.equal(res.status, 401, `${path} with ${token ? "a wrong token" : "no token"}`);
        bodies.add(await res.text());
      }
      const upload = await fetch(`http://127.0.0.1:${port}/upload?name=x.txt`, { method: "POST", body: "x", headers: token ? { authorization: `Bearer ${token}` } : {} });
      assert.equal(upload.status, 401);
      bodies.add(await upload.text());
      if (token) {
        const c = await WebClient.connect(port, token);
        await waitFor(() => c.closed, 5_000, "close after a bad token");
        assert.equal(c.closed!.code, 4401);
        assert.ok(!c.frames.some((f) => f.type === "ready"));
      }
    }
    assert.equal(bodies.size, 1, "one answer for every refused token");
    assert.match([...bodies][0]!, /channels\.web\.users/);
    const log = system.actors.get("channel-web")!.output();
    for (const secret of [ALICE.token, BOB.token, UNUSED]) assert.ok(!log.includes(secret), "no token in the channel's log");
  });
});
