/**
 * Users' reactions in the web chat, against the whole system (real nats-server, every actor a
 * process, the fake LLM; `ws` clients speaking the page's protocol; `channels.web.users` alice
 * and bob): a reaction to the assistant's line is a system event of the chat's session in the
 * next run's prompt and starts no run; the same add twice is one event; a removal is reported;
 * "own" (the default) drops a reaction to the user's own message but still shows it; reactions
 * are kept in the history (a restart and a reload show them); another user can name none of
 * alice's lines and sees nothing of hers; malformed `react` frames get a typed error and the
 * socket keeps serving; "off" drops every one. The served page carries the picker under its CSP;
 * in Debian's chromium (skipped when /usr/bin/chromium is missing) the picker works from the
 * keyboard (the focus stays on the line when it is redrawn), the user's reaction shows on the
 * line, is taken back with a click and survives a reload. Without the system: each change has an
 * event id of its own (also after one whose store answer was lost), and the kit's publishReaction
 * drops the session name when its ledger moves the event to another conversation.
 */
import assert from "node:assert/strict";
import { createHash, randomUUID } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { chromium, type Browser } from "playwright-core";
import type { Hub } from "../services/channel-web/hub.js";
import type { ChatEntry } from "../services/channel-web/protocol.js";
import { UserReactions } from "../services/channel-web/reactions.js";
import { publishReaction, type ChannelContext, type InboundInput, type ReactionEvent } from "../shared/runtime/channel/index.js";
import type { WebChannelConfig } from "../shared/runtime/config-channels.js";
import { messageText, type ChatRequestBody } from "./fakes/openai-server.js";
import { waitFor } from "./harness/actors.js";
import { collectActorEvents, type SeenActorEvent } from "./harness/events.js";
import { freePort } from "./harness/nats.js";
import { WebClient, type Frame } from "./harness/web-client.js";
import { TestSystem } from "./harness/system.js";

const ALICE = { id: "alice", name: "Alice", token: "alice-react-token-0123456789" };
const BOB = { id: "bob", token: "bob-react-token-0123456789-xyz" };
const ANSWER = "Sure, I'll book the table for eight.";
const CHROMIUM = "/usr/bin/chromium";

describe("web chat: users' reactions", () => {
  let system: TestSystem;
  let port: number;
  let watcher: NatsConnection;
  let routerEvents: SeenActorEvent[];
  /** alice's "main" chat: her message's seq and the assistant's answer's */
  let userSeq = 0;
  let answerSeq = 0;

  const writeConfig = (web: Record<string, unknown>) =>
    writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({ channels: { web: { enabled: true, port, users: [ALICE, BOB], ...web } } }));
  const recorded = () => routerEvents.filter((e) => e.event === "reaction_recorded" && e.data.channel === "web");
  const eventNotes = (body: ChatRequestBody) => body.messages.filter((m) => m.role === "user" && messageText(m).startsWith("[system event] Reaction")).map((m) => messageText(m));
  const requestWith = (text: string) => waitFor(() => system.fake.requests.map((r) => r.body).findLast((b) => messageText(b.messages.filter((m) => m.role === "user").at(-1)).includes(text)), 30_000, `the model request with ${text}`);
  const reacted = (c: WebClient, from: number, emoji: string, seq: number) =>
    c.next((f) => c.frames.indexOf(f) >= from && f.type === "reacted" && f.emoji === emoji && f.seq === seq, `reacted ${emoji} on ${seq}`);
  const updateAfter = (c: WebClient, from: number, seq: number, what: string) =>
    waitFor(() => c.frames.slice(from).findLast((f) => f.type === "update" && f.entry.seq === seq), 20_000, what);
  /** one message of alice's in `chat` and the answer's entry */
  const chatTurn = async (c: WebClient, chat: string, text: string): Promise<{ user: Frame; answer: Frame }> => {
    const id = randomUUID();
    const from = c.frames.length;
    c.send({ type: "send", id, chat, text });
    await c.next((f) => f.type === "ack" && f.id === id, "ack");
    const user = await c.next((f) => c.frames.indexOf(f) >= from && f.type === "entry" && f.entry.id === id, "the user's line");
    const answer = await c.next((f) => c.frames.indexOf(f) >= from && f.type === "entry" && f.entry.role === "assistant", "the answer");
    return { user, answer };
  };

  before(async () => {
    port = await freePort();
    system = await TestSystem.start({ config: { channels: { web: { enabled: true, port, users: [ALICE, BOB] } } } });
    watcher = await system.nats.connect("cli");
    routerEvents = await collectActorEvents(watcher, "router");
    await system.startActor("channel-web");
  });
  after(async () => {
    await watcher?.close();
    await system?.actors.get("channel-web")?.stop();
    await system?.stop();
  });
  beforeEach(() => system.fake.reset());

  it("own (default): a reaction to the answer is a system event of the next run, never a run; the same add twice is one event; the removal is reported; one to the user's own message is shown but dropped", async () => {
    const alice = await WebClient.open(port, ALICE.token, "main");
    system.fake.enqueue({ kind: "text", text: ANSWER });
    const turn = await chatTurn(alice, "main", "book a table [w1]");
    userSeq = turn.user.entry.seq;
    answerSeq = turn.answer.entry.seq;
    const runsBefore = system.fake.requests.length;

    let from = alice.frames.length;
    alice.send({ type: "react", chat: "main", seq: answerSeq, emoji: "👍" });
    alice.send({ type: "react", chat: "main", seq: answerSeq, emoji: "👍" }); // a double click
    alice.send({ type: "react", chat: "main", seq: userSeq, emoji: "🎉" }); // her own message: "own" drops it
    const outcomes = await waitFor(() => {
      const got = alice.frames.slice(from).filter((f) => f.type === "reacted");
      return got.length === 3 ? got.map((f) => `${f.emoji}@${f.seq}:${f.outcome}`) : undefined;
    }, 20_000, "three answers");
    assert.deepEqual(outcomes, [`👍@${answerSeq}:stored`, `👍@${answerSeq}:unchanged`, `🎉@${userSeq}:ignored`]);
    assert.deepEqual((await updateAfter(alice, from, answerSeq, "the answer's update")).entry.userReactions, ["👍"]);
    const own = await updateAfter(alice, from, userSeq, "the user line's update");
    assert.deepEqual(own.entry.userReactions, ["🎉"], "shown on the page though not sent to the agent");
    assert.equal(own.entry.text, "book a table [w1]");
    await waitFor(() => recorded().length === 1 || undefined, 30_000, "the reaction recorded");

    from = alice.frames.length;
    alice.send({ type: "react", chat: "main", seq: answerSeq, emoji: "👍", remove: true });
    assert.equal((await reacted(alice, from, "👍", answerSeq)).outcome, "stored");
    assert.deepEqual((await updateAfter(alice, from, answerSeq, "the removal's update")).entry.userReactions, []);
    await waitFor(() => recorded().length === 2 || undefined, 30_000, "the removal recorded");
    // a remove of what is not there: nothing
    alice.send({ type: "react", chat: "main", seq: answerSeq, emoji: "😂", remove: true });
    assert.equal((await reacted(alice, from, "😂", answerSeq)).outcome, "unchanged");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(system.fake.requests.length, runsBefore, "a reaction starts no run");
    assert.equal(recorded().length, 2, "the double click and the empty remove recorded nothing");

    system.fake.enqueue({ kind: "text", text: "noted" });
    await chatTurn(alice, "main", "did you see? [w2]");
    const body = await requestWith("[w2]");
    assert.deepEqual(eventNotes(body), [
      `[system event] Reaction added on web: 👍 by "Alice" (id alice) on msg alice+main:${answerSeq}, your message "${ANSWER}"`,
      `[system event] Reaction removed on web: 👍 by "Alice" (id alice) on msg alice+main:${answerSeq}, your message "${ANSWER}"`,
    ]);
    assert.ok(!JSON.stringify(body.messages).includes("🎉"), "the reaction to her own message never reached the model");
    alice.close();
  });

  it("a reaction in a named chat reaches that chat's session", async () => {
    const alice = await WebClient.open(port, ALICE.token, "chat-trip");
    system.fake.enqueue({ kind: "text", text: "Paris it is." });
    const turn = await chatTurn(alice, "chat-trip", "plan a trip [n1]");
    const from = alice.frames.length;
    alice.send({ type: "react", chat: "chat-trip", seq: turn.answer.entry.seq, emoji: "❤️" });
    assert.equal((await reacted(alice, from, "❤️", turn.answer.entry.seq)).outcome, "stored");
    const rec = await waitFor(() => recorded().find((e) => e.data.sessionKey === "agent:main:web:dm:alice+chat-trip"), 30_000, "recorded in the chat's session");
    assert.equal(rec.data.action, "added");
    system.fake.enqueue({ kind: "text", text: "ok" });
    await chatTurn(alice, "chat-trip", "and then? [n2]");
    assert.deepEqual(eventNotes(await requestWith("[n2]")), [`[system event] Reaction added on web: ❤️ by "Alice" (id alice) on msg alice+chat-trip:${turn.answer.entry.seq}, your message "Paris it is."`]);
    alice.close();
  });

  it("another user names only their own chats' lines: bob cannot react to alice's, and sees none of hers", async () => {
    const alice = await WebClient.open(port, ALICE.token, "main");
    const bob = await WebClient.open(port, BOB.token, "main");
    const aliceFrom = alice.frames.length;
    const before = recorded().length;
    bob.send({ type: "react", chat: "main", seq: answerSeq, emoji: "👎" });
    const refused = await bob.next((f) => f.type === "error" && f.about === "react", "bob's refusal");
    assert.equal(refused.code, "NOT_FOUND");
    bob.send({ type: "ping" });
    await bob.next((f) => f.type === "pong", "bob's socket still serves");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(recorded().length, before, "nothing recorded");
    assert.ok(!alice.frames.slice(aliceFrom).some((f) => f.type === "update"), "alice's pages got no change");
    assert.ok(!JSON.stringify(bob.frames).includes("🎉"), "bob sees none of alice's reactions");
    alice.close();
    bob.close();
  });

  it("malformed react frames get a typed error and the socket keeps serving", async () => {
    const alice = await WebClient.open(port, ALICE.token, "main");
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ emoji: "abc" }, /emoji only/],
      [{ emoji: "1" }, /emoji only/],
      [{ emoji: "<b>👍</b>" }, /emoji only/],
      [{ emoji: "" }, /emoji/],
      [{ emoji: "👍".repeat(17) }, /emoji/],
      [{ seq: -1 }, /seq/],
      [{ seq: "2" }, /seq/],
      [{ chat: "bad chat!" }, /chat/],
      [{ extra: true }, /extra|unrecognized/i],
    ];
    for (const [over, message] of bad) {
      const from = alice.frames.length;
      alice.send({ type: "react", chat: "main", seq: answerSeq, emoji: "👍", ...over });
      const err = await waitFor(() => alice.frames.slice(from).find((f) => f.type === "error"), 20_000, `error for ${JSON.stringify(over)}`);
      assert.deepEqual([err.code, err.about], ["VALIDATION_FAILED", "react"], JSON.stringify(err));
      assert.match(err.message, message, JSON.stringify(over));
    }
    let from = alice.frames.length;
    alice.send({ type: "react", chat: "main", seq: 99_999, emoji: "👍" });
    const missing = await waitFor(() => alice.frames.slice(from).find((f) => f.type === "error"), 20_000, "not found");
    assert.deepEqual([missing.code, missing.about], ["NOT_FOUND", "react"]);
    alice.ws.send("{not json");
    await waitFor(() => alice.frames.slice(from).find((f) => f.type === "error" && f.message.includes("JSON")), 20_000, "an error for bad JSON");
    from = alice.frames.length;
    alice.send({ type: "ping" });
    await waitFor(() => alice.frames.slice(from).find((f) => f.type === "pong"), 20_000, "still serving");
    alice.send({ type: "react", chat: "main", seq: answerSeq, emoji: "🙏" });
    assert.equal((await reacted(alice, from, "🙏", answerSeq)).outcome, "stored", "a good frame after the bad ones");
    await waitFor(() => recorded().length >= 4 || undefined, 30_000, "recorded");
    alice.close();
  });

  it("reactions are kept over a restart; with reactionNotifications off none reaches the agent, though the page shows it", async () => {
    await system.actors.get("channel-web")!.stop();
    writeConfig({ reactionNotifications: "off" });
    await system.startActor("channel-web");
    const alice = await WebClient.connect(port, ALICE.token);
    await alice.next((f) => f.type === "ready", "ready");
    alice.send({ type: "open", chat: "main", since: 0 });
    const history = await alice.next((f) => f.type === "history", "history after the restart");
    const bySeq = new Map<number, any>(history.entries.map((e: any) => [e.seq, e]));
    assert.deepEqual(bySeq.get(userSeq).userReactions, ["🎉"], "a reload shows her reaction");
    assert.deepEqual(bySeq.get(answerSeq).userReactions, ["🙏"]);

    const before = recorded().length;
    const from = alice.frames.length;
    alice.send({ type: "react", chat: "main", seq: answerSeq, emoji: "😂" });
    assert.equal((await reacted(alice, from, "😂", answerSeq)).outcome, "ignored");
    assert.deepEqual((await updateAfter(alice, from, answerSeq, "shown")).entry.userReactions, ["🙏", "😂"]);
    system.fake.enqueue({ kind: "text", text: "fine" });
    await chatTurn(alice, "main", "anything new? [w3]");
    const body = await requestWith("[w3]");
    assert.ok(!JSON.stringify(body.messages).includes("😂"), "off: the model never sees it");
    assert.equal(recorded().length, before);
    alice.close();
  });

  it("the served page has the reaction picker, its script and style allowed by hash only", async () => {
    const res = await fetch(`http://127.0.0.1:${port}/`);
    const html = await res.text();
    const csp = res.headers.get("content-security-policy") ?? "";
    const script = html.slice(html.indexOf("<script>") + "<script>".length, html.lastIndexOf("</script>"));
    const style = html.slice(html.indexOf("<style>") + "<style>".length, html.indexOf("</style>"));
    const hash = (t: string) => `'sha256-${createHash("sha256").update(t, "utf8").digest("base64")}'`;
    assert.ok(csp.includes(`script-src ${hash(script)}`) && csp.includes(`style-src ${hash(style)}`), csp);
    assert.ok(!/unsafe-inline|unsafe-eval/.test(csp), "no inline exceptions");
    assert.ok(script.includes('type: "react"') && script.includes("react-picker") && script.includes("aria-expanded"), "the picker and its frame");
    assert.ok(style.includes(".react-picker"), "its style");
    assert.ok(!/src="http|href="http/.test(html), "no external resources");
  });

  it("in a real browser: the picker opens and picks from the keyboard, Escape closes it, a click takes the reaction back, a reload keeps one", { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (apt-get install chromium)` }, async () => {
    let browser: Browser | undefined;
    try {
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      const page = await browser.newPage({ viewport: { width: 1100, height: 720 } });
      const cspErrors: string[] = [];
      page.on("console", (m) => { if (/Content Security Policy|Refused to/i.test(m.text())) cspErrors.push(m.text()); });
      await page.goto(`http://127.0.0.1:${port}/?token=${BOB.token}`);
      await page.locator("#status.online").waitFor({ timeout: 10_000 });
      system.fake.enqueue({ kind: "text", text: "Browser answer." });
      await page.fill("#input", "hello from the browser [b1]");
      await page.press("#input", "Enter");
      const answer = page.locator(".msg.assistant", { hasText: "Browser answer." });
      await answer.waitFor({ timeout: 20_000 });
      await page.locator(".msg.user:not(.pending) .react-add").waitFor({ timeout: 10_000 });

      await answer.locator(".react-add").focus();
      await page.keyboard.press("Enter");
      await answer.locator(".react-picker").waitFor({ timeout: 5_000 });
      assert.equal(await answer.locator(".react-add").getAttribute("aria-expanded"), "true");
      assert.equal(await page.evaluate(() => (globalThis as any).document.activeElement?.textContent), "👍", "the first emoji has the focus");
      await page.keyboard.press("ArrowRight");
      await page.keyboard.press("ArrowRight");
      await page.keyboard.press("Enter");
      await answer.locator("button.reaction.mine", { hasText: "❤️" }).waitFor({ timeout: 10_000 });
      assert.equal(await answer.locator(".react-picker").count(), 0, "the picker closed");
      // the line is redrawn from its update: the keyboard user keeps the focus on the line's picker button
      assert.equal(await page.evaluate(() => (globalThis as any).document.activeElement?.className), "react-add", "the focus stays on the line after the redraw");
      await page.keyboard.press("Enter");
      await answer.locator(".react-picker").waitFor({ timeout: 5_000 });
      await page.keyboard.press("Escape");

      await answer.locator(".react-add").focus();
      await page.keyboard.press("Enter");
      await answer.locator(".react-picker").waitFor({ timeout: 5_000 });
      await page.keyboard.press("Escape");
      assert.equal(await answer.locator(".react-picker").count(), 0, "Escape closes it");
      assert.equal(await page.evaluate(() => (globalThis as any).document.activeElement?.className), "react-add", "the focus goes back to its button");

      await answer.locator("button.reaction.mine", { hasText: "❤️" }).click();
      await waitFor(async () => (await answer.locator("button.reaction.mine").count()) === 0 || undefined, 10_000, "taken back");
      await answer.locator(".react-add").click();
      await answer.locator(".react-picker button", { hasText: "🎉" }).click();
      await answer.locator("button.reaction.mine", { hasText: "🎉" }).waitFor({ timeout: 10_000 });

      await page.reload();
      await page.locator(".msg.assistant", { hasText: "Browser answer." }).locator("button.reaction.mine", { hasText: "🎉" }).waitFor({ timeout: 10_000 });
      assert.deepEqual(cspErrors, [], "nothing refused by the page's CSP");
    } finally {
      await browser?.close();
    }
  });
});

describe("web chat: a user's reaction change and its event id", () => {
  /** one kept answer line; the bus stores each event but the first answer is lost (a timeout) */
  const setup = () => {
    let line: ChatEntry = { seq: 3, ts: 1, role: "assistant", kind: "reply", id: "d1:0", text: "hi" };
    const stored: ReactionEvent[] = [];
    let lose = 1;
    const hub = {
      entry: (_c: unknown, seq: number) => (seq === line.seq ? line : undefined),
      change: async (_c: unknown, seq: number, change: (e: ChatEntry) => ChatEntry | undefined) => {
        const next = seq === line.seq ? change(line) : undefined;
        if (next) line = next;
        return next;
      },
    } as unknown as Hub;
    const ctx = {
      log: { debug: () => undefined },
      publishReaction: async (ev: ReactionEvent) => {
        const duplicate = stored.some((s) => s.eventId === ev.eventId);
        if (!duplicate) stored.push(ev);
        if (lose-- > 0) throw new Error("TIMEOUT: no answer from the bus");
        return duplicate ? "duplicate" : "stored";
      },
    } as unknown as ChannelContext<WebChannelConfig>;
    return { reactions: new UserReactions(ctx, hub), stored, line: () => line };
  };
  const alice = { id: "alice", name: "Alice", scope: "alice" };

  it("a change stored whose answer was lost, then another change: the agent gets both (the bug: one event id for both, the second a duplicate)", async () => {
    const { reactions, stored, line } = setup();
    await assert.rejects(reactions.react(alice, { type: "react", chat: "main", seq: 3, emoji: "👍", remove: false }), /TIMEOUT/);
    assert.equal(line().userReactions, undefined, "not shown: the user was told it failed");
    const other = await reactions.react(alice, { type: "react", chat: "main", seq: 3, emoji: "❤️", remove: false });
    assert.equal(other.outcome, "stored");
    assert.deepEqual(stored.map((e) => `${e.action} ${e.emoji}`), ["added 👍", "added ❤️"]);
    assert.deepEqual(line().userReactions, ["❤️"]);
  });

  it("the same change tried again after a lost answer is one event (a duplicate); every later change has an id of its own", async () => {
    const { reactions, stored, line } = setup();
    const frame = { type: "react" as const, chat: "main", seq: 3, emoji: "👍", remove: false };
    await assert.rejects(reactions.react(alice, frame), /TIMEOUT/);
    assert.equal((await reactions.react(alice, frame)).outcome, "duplicate");
    assert.equal((await reactions.react(alice, { ...frame, remove: true })).outcome, "stored");
    assert.equal((await reactions.react(alice, frame)).outcome, "stored", "added again later: a new event");
    assert.deepEqual(stored.map((e) => `${e.action} ${e.emoji}`), ["added 👍", "removed 👍", "added 👍"]);
    assert.equal(new Set(stored.map((e) => e.eventId)).size, 3);
    assert.deepEqual(line().userReactions, ["👍"]);
    assert.equal(stored[0]!.sessionName, "alice", "alice's main chat names her session");
  });
});

describe("the kit's publishReaction: the event's session name", () => {
  const quiet = { debug: () => undefined, warn: () => undefined } as never;
  const ev: ReactionEvent = {
    eventId: "e1", action: "added", emoji: "👍", messageId: "m1", conversation: "c1",
    peer: { kind: "dm", id: "u1" }, sender: { id: "u1" }, sessionName: "s1", botMessage: true,
    peerOf: (conversation) => ({ kind: "dm", id: `u1-${conversation}` }),
  };
  const published = async (sentConversation: string | undefined): Promise<InboundInput> => {
    let got: InboundInput | undefined;
    await publishReaction({
      mode: "all", log: quiet,
      ledger: { sentMessage: () => (sentConversation ? { conversation: sentConversation } : undefined) } as never,
      publish: async (input) => { got = input; return { duplicate: false } as never; },
    }, ev);
    return got!;
  };

  it("is carried with the event's conversation, and dropped when the ledger moves the event to another conversation (it named the first one's session)", async () => {
    assert.deepEqual([(await published(undefined)).sessionName, (await published("c1")).sessionName], ["s1", "s1"]);
    const moved = await published("c2");
    assert.deepEqual([moved.conversation, moved.sessionName], ["c2", undefined]);
  });
});
