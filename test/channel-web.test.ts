/**
 * The web channel against the whole system (real nats-server, every actor a process, the fake
 * LLM): the HTTP/WebSocket protocol with a `ws` client, then the page itself in Debian's
 * chromium driven by playwright-core (skipped only when /usr/bin/chromium is missing).
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { chromium, type Browser } from "playwright-core";
import { WebSocket } from "ws";
import { envelope, inboundMessageSchema, STREAMS, subjects } from "../shared/contract/index.js";
import { chatOfSessionKey } from "../services/channel-web/hub.js";
import { waitFor } from "./harness/actors.js";
import { freePort } from "./harness/nats.js";
import { BusClient } from "../shared/runtime/client.js";
import { TestSystem } from "./harness/system.js";

const TOKEN = "test-web-token-0123456789abcdef";
const CHROMIUM = "/usr/bin/chromium";
const ARTIFACTS = join(process.cwd(), "test", "artifacts", "web");
const S = subjects();

type Frame = Record<string, any> & { type: string };

/** A protocol client: collects every frame; `next` waits for one that matches. */
class Client {
  readonly frames: Frame[] = [];
  closed: { code: number; reason: string } | undefined;
  private constructor(readonly ws: WebSocket) {
    ws.on("message", (d) => this.frames.push(JSON.parse(String(d)) as Frame));
    ws.on("close", (code, reason) => (this.closed = { code, reason: String(reason) }));
  }
  static async connect(port: number, token: string | null = TOKEN): Promise<Client> {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
    await new Promise<void>((resolve, reject) => { ws.once("open", () => resolve()); ws.once("error", reject); });
    const client = new Client(ws);
    if (token !== null) client.send({ type: "hello", token });
    return client;
  }
  send(frame: object): void {
    this.ws.send(JSON.stringify(frame));
  }
  next(pred: (f: Frame) => boolean, what: string, timeoutMs = 20_000): Promise<Frame> {
    return waitFor(() => this.frames.find(pred), timeoutMs, what);
  }
  close(): void {
    this.ws.close();
  }
}

async function lastInbound(system: TestSystem) {
  const admin = await system.nats.connect("admin");
  try {
    const m = await (await jetstreamManager(admin)).streams.getMessage(STREAMS.inbound, { last_by_subj: S.inbound("web") });
    return inboundMessageSchema.parse(m!.json());
  } catch {
    return undefined;
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
    system = await TestSystem.start({ fake: { chunkDelayMs: 40 }, files: { "notes.txt": "the treasure is under the oak" }, config: { routing } });
    port = await freePort();
    writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({
      channels: { web: { enabled: true, port, token: TOKEN } },
      routing,
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

    const bad = await Client.connect(port, "not-the-token-at-all");
    await waitFor(() => bad.closed, 5_000, "close after a bad token");
    assert.equal(bad.closed!.code, 4401);
    assert.ok(!bad.frames.some((f) => f.type === "ready"));

    const silent = await Client.connect(port, null);
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
    const c = await Client.connect(port);
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
    const stored = await lastInbound(system);
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
      const first = await Client.connect(port);
      await first.next((f) => f.type === "ready", "ready");
      first.send({ type: "open", chat: "chat-resend", since: 0 });
      first.send({ type: "send", id, chat: "chat-resend", text: "only once please" });
      await first.next((f) => f.type === "ack" && f.id === id, "first ack");
      first.ws.terminate();

      // the reply is delivered while no browser is connected
      release();
      await waitFor(() => system.fake.requests.length >= 1, 20_000, "the LLM call");
      await new Promise((r) => setTimeout(r, 1_500));

      const second = await Client.connect(port);
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
        const m = await lastInbound(system);
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
});
