/**
 * The channel kit (shared/runtime/channel/): chunking, markdown dialects, reply tags and silent
 * replies as tables; and the delivery side over a real bus with the webhook channel as a real
 * process: a delivery whose first part the platform accepted is, after the channel was killed
 * (SIGKILL) before its ack and restarted, resumed at the second part (the first is never sent
 * twice); a redelivered, fully sent delivery is not sent again ("duplicate" receipt); a silent
 * reply is never delivered; a reply tag becomes replyToMessageId; a delivery out of attempts
 * (retryable errors, or a platform that keeps answering 429 with a short Retry-After) ends in
 * one delivery_failed event and an error log.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { actorEventSchema, safeParseJson, subjects, type OutboundMessage } from "../shared/contract/index.js";
import {
  chunkText, DeliveryError, deliveryTarget, DraftMessages, ExpiringDb, isSilentReply, watchRun, mayBecomeSilent, parseReplyTags, toDiscordMarkdown, toPlainText, toSlackMrkdwn, toTelegramHtml, toTelegramMarkdownV2,
  type DraftPlatform,
} from "../shared/runtime/channel/index.js";
import { RunStreamStore } from "../shared/runtime/channel/run-streams.js";
import { createLogger } from "../shared/runtime/logger.js";
import { configSecrets, parseConfig } from "../shared/runtime/config.js";
import { actorEnv, configuredChannelActors, selectActors } from "../services/cli/actors.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { freePort, TestNats } from "./harness/nats.js";
import { WebhookReceiver } from "./fakes/webhook-receiver.js";

const fenceBalanced = (chunk: string) => (chunk.match(/^ {0,3}```/gm) ?? []).length % 2 === 0;

describe("channel kit: chunking", () => {
  const para = "First paragraph is here.\n\nSecond paragraph goes on. It has two sentences.\n\nThird.";
  const cases: Array<{ name: string; text: string; limit: number; mode?: "length" | "paragraph" | "sentence"; expect: string[] }> = [
    { name: "fits: one chunk", text: "short", limit: 100, expect: ["short"] },
    { name: "paragraph breaks first", text: para, limit: 60, expect: ["First paragraph is here.", "Second paragraph goes on. It has two sentences.\n\nThird."] },
    { name: "sentence inside a long paragraph", text: para, limit: 40, expect: ["First paragraph is here.", "Second paragraph goes on.", "It has two sentences.\n\nThird."] },
    { name: "sentence mode", text: "One two three. Four five six. Seven eight nine.", limit: 32, mode: "sentence", expect: ["One two three. Four five six.", "Seven eight nine."] },
    { name: "length mode: at a space", text: "aaaa bbbb cccc dddd eeee ffff", limit: 16, mode: "length", expect: ["aaaa bbbb cccc", "dddd eeee ffff"] },
    { name: "no space: hard cut", text: "x".repeat(40), limit: 16, expect: ["x".repeat(16), "x".repeat(16), "x".repeat(8)] },
    { name: "break before a fence rather than inside", text: `${"intro words ".repeat(4)}\n\`\`\`\ncode line one\ncode line two\n\`\`\`\ntail`, limit: 60, expect: ["intro words intro words intro words intro words", "```\ncode line one\ncode line two\n```\ntail"] },
  ];
  for (const c of cases) {
    it(c.name, () => assert.deepEqual(chunkText(c.text, c.limit, c.mode), c.expect));
  }

  it("a fence longer than the limit is closed and reopened; every chunk within the limit", () => {
    const code = "Intro.\n\n```js\n" + Array.from({ length: 30 }, (_, i) => `const v${i} = ${i};`).join("\n") + "\n```\nAfter.";
    const chunks = chunkText(code, 120);
    assert.ok(chunks.length > 3);
    for (const chunk of chunks) {
      assert.ok(chunk.length <= 120, `chunk of ${chunk.length}`);
      assert.ok(fenceBalanced(chunk), `unbalanced fence in ${JSON.stringify(chunk)}`);
    }
    assert.ok(chunks.slice(1, -1).every((c) => c.startsWith("```js\n")), "reopened with the info string");
    const lines = chunks.join("\n").split("\n").filter((l) => l.startsWith("const "));
    assert.equal(lines.length, 30, "no code line lost or duplicated");
  });

  it("surrogate pairs are not split", () => {
    const chunks = chunkText("😀".repeat(20), 17);
    for (const c of chunks) assert.ok(!/[\ud800-\udbff]$/.test(c) && !/^[\udc00-\udfff]/.test(c));
    assert.equal(chunks.join(""), "😀".repeat(20));
  });
});

describe("channel kit: markdown dialects", () => {
  const md = "# Title\nSome **bold**, *it*, ~~gone~~ and [a link](https://x.y/a_b) with `co<de>` 1.5!\n```py\nprint('a*b')\n```";
  const table: Array<[string, (s: string) => string, string]> = [
    ["plain", toPlainText, "Title\nSome bold, it, gone and a link (https://x.y/a_b) with co<de> 1.5!\nprint('a*b')"],
    ["telegram html", toTelegramHtml, "<b>Title</b>\nSome <b>bold</b>, <i>it</i>, <s>gone</s> and <a href=\"https://x.y/a_b\">a link</a> with <code>co&lt;de&gt;</code> 1.5!\n<pre><code class=\"language-py\">print('a*b')</code></pre>"],
    ["telegram markdownv2", toTelegramMarkdownV2, "*Title*\nSome *bold*, _it_, ~gone~ and [a link](https://x.y/a_b) with `co<de>` 1\\.5\\!\n```py\nprint('a*b')\n```"],
    ["slack mrkdwn", toSlackMrkdwn, "*Title*\nSome *bold*, _it_, ~gone~ and <https://x.y/a_b|a link> with `co&lt;de&gt;` 1.5!\n```\nprint('a*b')\n```"],
    ["discord", toDiscordMarkdown, md],
  ];
  for (const [name, fn, expected] of table) it(name, () => assert.equal(fn(md), expected));
  it("telegram escapes in prose, not in code", () => {
    assert.equal(toTelegramHtml("a < b & c"), "a &lt; b &amp; c");
    assert.equal(toTelegramMarkdownV2("x_y (1) `a\\b`"), "x\\_y \\(1\\) `a\\\\b`");
  });
  it("discord defuses mass mentions", () => assert.equal(toDiscordMarkdown("hi @everyone and @here"), "hi @\u200beveryone and @\u200bhere"));
});

describe("channel kit: reply tags and silent replies", () => {
  it("reply tags", () => {
    assert.deepEqual(parseReplyTags("[[reply_to_current]] Hello", ["m1", "m2"]), { text: "Hello", replyToMessageId: "m2" });
    assert.deepEqual(parseReplyTags("Sure [[ reply_to: abc-1 ]]"), { text: "Sure", replyToMessageId: "abc-1" });
    assert.deepEqual(parseReplyTags("no tags [[other]]"), { text: "no tags [[other]]" });
    assert.deepEqual(parseReplyTags("[[reply_to_current]] x", []), { text: "x" });
  });
  const silent: Array<[string | undefined, boolean]> = [["NO_REPLY", true], ["  NO_REPLY\n", true], ["done. NO_REPLY", true], ["/NO_REPLY because", true], ["NO_REPLY is a token", false], ["", false], [undefined, false]];
  for (const [text, expected] of silent) it(`silent(${JSON.stringify(text)}) = ${expected}`, () => assert.equal(isSilentReply(text), expected));
  it("a streamed prefix of NO_REPLY is held back", () => {
    assert.equal(mayBecomeSilent("NO_"), true);
    assert.equal(mayBecomeSilent("No problem"), false);
  });
});

describe("channel kit: delivery targets", () => {
  const parse = (conversation: string) => {
    const [kind, id] = conversation.split(":");
    if (kind !== "dm" || !id) throw new Error(`not a DM conversation: ${conversation}`);
    return { id };
  };
  it("gives the parsed target, and ends a delivery for good when the conversation does not parse", () => {
    assert.deepEqual(deliveryTarget(parse, "dm:42"), { id: "42" });
    assert.throws(() => deliveryTarget(parse, "room:7"), (err) => err instanceof DeliveryError && err.opts.permanent === true && err.message === "not a DM conversation: room:7");
  });
});

describe("channel kit: expiring LMDB stores", () => {
  it("a sweep removes the entries older than keepMs in one go and keeps the rest; they survive a reopen", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lurk-expiring-"));
    let now = 1_000_000;
    try {
      const open = () => new ExpiringDb<{ at: number }>(dir, "t", { keepMs: 1_000, sweepEveryMs: 3_600_000, stampOf: (e) => e.at, now: () => now });
      const store = open();
      assert.equal(await store.sweep(), 0, "a new store has nothing to sweep");
      await Promise.all([store.db.put("old-1", { at: now - 5_000 }), store.db.put("old-2", { at: now - 1_001 }), store.db.put("fresh", { at: now - 10 })]);
      assert.equal(store.expired({ at: now - 5_000 }), true);
      assert.equal(store.expired({ at: now - 10 }), false);
      assert.equal(await store.sweep(), 2);
      assert.deepEqual([...store.db.getKeys()], ["fresh"]);
      await store.close();
      now += 2_000;
      const reopened = open();
      await waitFor(() => reopened.db.get("fresh") === undefined, 5_000, "swept when opened");
      await reopened.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("channel kit: drafts left by an earlier process", () => {
  it("deletes the drafts of runs that ended silent or aborted, keeps the others, and retries a failed delete", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lurk-drafts-"));
    const store = new RunStreamStore(dir);
    try {
      const removed: string[] = [];
      let failOnce = true;
      const platform: DraftPlatform<{ chat: number }> = {
        maxChars: 100,
        send: async () => "new",
        edit: async () => undefined,
        remove: async (target, id) => {
          if (id === "d-flaky" && failOnce) {
            failOnce = false;
            throw new Error("platform down");
          }
          removed.push(`${target.chat}/${id}`);
        },
      };
      // what the sessions actor says of each run
      const runs: Record<string, { status: string; silent: boolean }> = {
        silent: { status: "done", silent: true }, aborted: { status: "aborted", silent: false }, replied: { status: "done", silent: false },
        running: { status: "running", silent: false }, failed: { status: "error", silent: false }, flaky: { status: "aborted", silent: false },
      };
      for (const run of Object.keys(runs)) await store.setDraft(run, `d-${run}`, { chat: 7 }, "agent:main:main");
      await store.setDraft("taken", "d-taken", { chat: 7 }, "agent:main:main");
      await store.takeDraft("taken", "delivery-1");
      await store.setDraft("legacy", "d-legacy"); // recorded before drafts kept their target: left alone
      const drafts = new DraftMessages(platform, createLogger("test", "silent"), store);
      const asked: string[] = [];
      const runEnd = async (_sessionKey: string, runId: string) => {
        asked.push(runId);
        return runs[runId] ?? { status: "done", silent: true };
      };
      assert.equal(await drafts.removeOrphans(runEnd), 2);
      assert.deepEqual(removed.sort(), ["7/d-aborted", "7/d-silent"]);
      assert.ok(!asked.includes("taken") && !asked.includes("legacy"), "a taken draft and one without a target are not looked at");
      assert.equal(store.get("silent")?.draftId, undefined, "a deleted draft is forgotten");
      assert.equal(store.get("replied")?.draftId, "d-replied", "the reply's delivery will take it");
      assert.equal(await drafts.removeOrphans(runEnd), 1, "the failed delete is tried again");
      assert.ok(removed.includes("7/d-flaky"));
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("channel kit: config and launcher wiring", () => {
  it("enabled channels become launcher actors; their secrets are redacted and passed only to them", () => {
    const config = parseConfig({ channels: { webhook: { enabled: true, secret: "file-secret-0123456789" }, "openai-http": { enabled: false } } }, { LURKBOT_HOME: "/tmp/x", LURKBOT_OPENAI_HTTP_TOKEN: "env-token-0123456789abc" }, "/tmp/x");
    assert.deepEqual(configuredChannelActors(config), ["channel-webhook"]);
    assert.equal(config.channels["openai-http"]?.token, "env-token-0123456789abc");
    assert.equal(config.channels.webhook?.port, 8788);
    assert.ok(configSecrets(config).includes("file-secret-0123456789") && configSecrets(config).includes("env-token-0123456789abc"));
    assert.deepEqual(configuredChannelActors(parseConfig({}, { LURKBOT_HOME: "/tmp/x" }, "/tmp/x")), []);
    assert.deepEqual(selectActors("router,channel-webhook"), ["router", "channel-webhook"]);
    assert.throws(() => parseConfig({ channels: { webhook: { enabled: true, secret: "short" } } }, { LURKBOT_HOME: "/tmp/x" }, "/tmp/x"), /channels\.webhook\.secret/);
    const credentials = { users: { "channel-webhook": "pw-channel-webhook-0123456789", router: "pw-router-0123456789abcdef" } };
    const base = { LURKBOT_WEBHOOK_SECRET: "s3cret-0123456789abcdef", LURKBOT_OPENAI_HTTP_TOKEN: "t0ken-0123456789abcdef" };
    assert.equal(actorEnv("channel-webhook", base, credentials, "/h").LURKBOT_WEBHOOK_SECRET, base.LURKBOT_WEBHOOK_SECRET);
    assert.equal(actorEnv("channel-webhook", base, credentials, "/h").LURKBOT_OPENAI_HTTP_TOKEN, undefined);
    assert.equal(actorEnv("router", base, credentials, "/h").LURKBOT_WEBHOOK_SECRET, undefined);
  });
});

describe("channel kit: delivery over the bus (webhook channel process)", () => {
  let nats: TestNats;
  let receiver: WebhookReceiver;
  let channel: ActorProcess;
  let admin: NatsConnection;
  const receipts: Array<{ event: string; data: any }> = [];
  const s = subjects();
  const env = { LURKBOT_ACK_WAIT_MS: "1500" };

  const outbound = (id: string, text: string, extra: Partial<OutboundMessage> = {}): OutboundMessage => ({
    type: "lurk.outbound.message.v1", id, ts: Date.now(), runId: `run-${id}`, channel: "webhook", conversation: "conv-1",
    kind: "reply", replyTo: ["req-1"], text, attachments: [], ...extra,
  });
  const publish = (msg: OutboundMessage, msgID = msg.id) => jetstream(admin).publish(s.outbound("webhook", msg.conversation), JSON.stringify(msg), { msgID });
  const receiptFor = (deliveryId: string, status: string) => waitFor(() => receipts.find((r) => r.data.deliveryId === deliveryId && r.data.status === status), 20_000, `${status} receipt of ${deliveryId}`);

  before(async () => {
    nats = await TestNats.start();
    receiver = await WebhookReceiver.start();
    writeFileSync(join(nats.home, "config.json"), JSON.stringify({
      channels: { webhook: { enabled: true, port: await freePort(), secret: "kit-test-secret-0123456789", callbackUrl: receiver.url, textLimit: 64, concurrency: 1, maxAttempts: 3 } },
      bus: { backoffMs: [300], maxDeliver: 3 },
    }));
    admin = await nats.connect("admin");
    admin.subscribe(s.eventsOf("channel-webhook"), {
      callback: (_e, m) => {
        const ev = actorEventSchema.parse(safeParseJson(m.data));
        receipts.push({ event: ev.event, data: ev.data });
      },
    });
    await admin.flush();
    channel = await startActorProcess("channel-webhook", nats, env);
  });

  after(async () => {
    await channel?.stop();
    await admin?.close();
    await receiver?.close();
    await nats?.stop();
  });

  it("a part the platform accepted is not sent again after a kill before the ack", async () => {
    const first = "Alpha paragraph that is long enough to need a chunk of its own.";
    const second = "Beta paragraph, the second part of the same delivery.";
    receiver.answer = (body) => (body?.deliveryId === "d-kill" && body.part.index === 1 && receiver.matching((b) => b?.deliveryId === "d-kill" && b.part.index === 1).length === 0 ? "hang" : 200);
    await publish(outbound("d-kill", `${first}\n\n${second}`));
    await waitFor(() => receiver.matching((b) => b?.deliveryId === "d-kill" && b.part.index === 1).length === 1, 15_000, "part 1 reached the receiver");
    await channel.kill();
    receiver.releaseHung();
    channel = await startActorProcess("channel-webhook", nats, env);
    await receiptFor("d-kill", "delivered");
    const parts = receiver.matching((b) => b?.deliveryId === "d-kill");
    assert.deepEqual(parts.filter((p) => p.body.part.index === 0).map((p) => p.body.text), [first], "part 0 sent exactly once");
    const againPart1 = parts.filter((p) => p.body.part.index === 1);
    assert.equal(againPart1.length, 2, "part 1 (never accepted) was sent again");
    assert.equal(againPart1[1]!.body.text, second);
    assert.equal(againPart1[1]!.status, 200);
  });

  it("a delivery whose every attempt was interrupted (the channel killed while sending it) is given up: delivery_failed, not sent again", async () => {
    receiver.answer = (body) => (body?.deliveryId === "d-poison" ? "hang" : 200);
    await publish(outbound("d-poison", "a message that takes the channel down"));
    for (const attempt of [1, 2, 3]) {
      await waitFor(() => receiver.matching((b) => b?.deliveryId === "d-poison").length === attempt, 15_000, `attempt ${attempt} reached the receiver`);
      await channel.kill();
      channel = await startActorProcess("channel-webhook", nats, env);
    }
    const failed = await receiptFor("d-poison", "failed");
    assert.equal(failed.event, "delivery_failed");
    assert.equal(failed.data.attempts, 3);
    assert.match(failed.data.error, /stopped while sending it, on each of its 3 attempts/);
    receiver.releaseHung();
    await publish(outbound("d-after-poison", "the next one goes out"));
    await receiptFor("d-after-poison", "delivered");
    assert.equal(receiver.matching((b) => b?.deliveryId === "d-poison").length, 3, "no fourth attempt");
  });

  it("a delivery whose channel stops on its last delivery (during a platform's retry-after) is given up: delivery_failed, not a dead letter", async () => {
    receiver.answer = (body) => {
      if (body?.deliveryId !== "d-stop") return 200;
      return receiver.matching((b) => b?.deliveryId === "d-stop").length < 2 ? 500 : { status: 429, headers: { "retry-after": "20" } };
    };
    await publish(outbound("d-stop", "a message sent while the channel stops"));
    await waitFor(() => receiver.matching((b) => b?.deliveryId === "d-stop").length === 3, 15_000, "the third attempt reached the receiver");
    await new Promise((r) => setTimeout(r, 200)); // the kit waits out the retry-after
    await channel.stop();
    channel = await startActorProcess("channel-webhook", nats, env);
    const failed = await receiptFor("d-stop", "failed");
    assert.match(failed.data.error, /stopped while sending it, on its last attempt \(3\)/);
    assert.equal(receipts.filter((r) => r.event === "dead_letter").length, 0, "not dead-lettered");
  });

  it("a delivery already sent is not sent again when redelivered", async () => {
    await publish(outbound("d-once", "Only once."));
    await receiptFor("d-once", "delivered");
    await publish(outbound("d-once", "Only once."), "d-once-republished"); // past the stream's dedup (new Nats-Msg-Id)
    const dup = await receiptFor("d-once", "duplicate");
    assert.equal(dup.data.platformMessageId, "d-once:0");
    assert.equal(receiver.matching((b) => b?.deliveryId === "d-once").length, 1);
  });

  it("silent replies are never delivered; reply tags become replyToMessageId", async () => {
    await publish(outbound("d-silent", "nothing to add. NO_REPLY"));
    await publish(outbound("d-tag", "[[reply_to_current]] Tagged answer", { replyTo: ["req-7"] }));
    await receiptFor("d-tag", "delivered");
    const tagged = receiver.matching((b) => b?.deliveryId === "d-tag");
    assert.equal(tagged.length, 1);
    assert.equal(tagged[0]!.body.text, "Tagged answer");
    assert.equal(tagged[0]!.body.replyToMessageId, "req-7");
    // concurrency 1: the silent delivery, published first, was handled before the tagged one
    assert.equal(receiver.matching((b) => b?.deliveryId === "d-silent").length, 0);
    assert.equal(receipts.some((r) => r.data.deliveryId === "d-silent"), false);
  });

  it("watchRun: drafts are coalesced, a NO_REPLY prefix is held back, the end is reported", async () => {
    const runId = "run-draft-test";
    const drafts: string[] = [];
    const appended: string[] = [];
    const watch = watchRun(admin, "lurk", runId, { onDraft: (t) => { drafts.push(t); }, onAppend: (d) => appended.push(d), draftIntervalMs: 200 });
    await admin.flush();
    let seq = 0;
    const emit = (event: Record<string, unknown>) => admin.publish(s.runEvent(runId, String(event.kind)), JSON.stringify({
      type: "lurk.run.event.v1", id: `e${seq}`, ts: Date.now(), runId, sessionKey: "agent:main:main", seq: seq++, event,
    }));
    emit({ kind: "turn_start", turn: 1 });
    emit({ kind: "message_delta", turn: 1, text: "NO_" });
    await admin.flush();
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(drafts, [], "a possible NO_REPLY is not shown");
    const words = ["PROBLEM", " here", " is", " the", " answer", " in", " many", " small", " pieces"];
    for (const w of words) emit({ kind: "message_delta", turn: 1, text: w });
    emit({ kind: "turn_end", turn: 1, stopReason: "stop" });
    const full = `NO_${words.join("")}`;
    await waitFor(() => drafts.at(-1) === full, 5_000, "the full draft");
    assert.ok(drafts.length < words.length, `coalesced: ${drafts.length} drafts for ${words.length} deltas`);
    emit({ kind: "done", text: full, turns: 1, usage: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0, total: 3 }, silent: false });
    const end = await watch.ended;
    assert.equal(end.status, "done");
    assert.equal(appended.join(""), full, "the appended stream is the whole text once");
  });

  it("a permanent platform refusal is reported once as delivery_failed", async () => {
    receiver.answer = (body) => (body?.deliveryId === "d-refused" ? 400 : 200);
    await publish(outbound("d-refused", "refused"));
    const failed = await receiptFor("d-refused", "failed");
    const event = receipts.find((r) => r.data.deliveryId === "d-refused" && r.data.status === "failed")!;
    assert.equal(event.event, "delivery_failed");
    assert.match(failed.data.error, /400/);
    assert.equal(receiver.matching((b) => b?.deliveryId === "d-refused").length, 1, "not retried");
  });

  it("a delivery out of attempts (retryable errors every time) is reported once as delivery_failed and logged", async () => {
    receiver.answer = (body) => (body?.deliveryId === "d-exhaust" ? 503 : 200);
    await publish(outbound("d-exhaust", "never accepted"));
    const failed = await receiptFor("d-exhaust", "failed");
    assert.equal(failed.event, "delivery_failed");
    assert.equal(failed.data.attempts, 3);
    assert.match(failed.data.error, /503/);
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(receiver.matching((b) => b?.deliveryId === "d-exhaust").length, 3, "one POST per attempt, maxAttempts 3");
    assert.equal(receipts.filter((r) => r.data.deliveryId === "d-exhaust").length, 1, "reported once");
    assert.match(channel.output(), /"deliveryId":"d-exhaust".*"delivery failed for good"|"delivery failed for good".*"deliveryId":"d-exhaust"/);
  });

  it("a platform that keeps answering 429 with a short Retry-After is not retried forever: delivery_failed", async () => {
    receiver.answer = (body) => (body?.deliveryId === "d-429" ? { status: 429, headers: { "retry-after": "0.2" } } : 200);
    await publish(outbound("d-429", "rate limited forever"));
    const failed = await receiptFor("d-429", "failed");
    assert.equal(failed.data.attempts, 3);
    assert.match(failed.data.error, /429/);
    await new Promise((r) => setTimeout(r, 1_000));
    // per attempt: the first POST and 3 in-process retries after the platform's Retry-After
    assert.equal(receiver.matching((b) => b?.deliveryId === "d-429").length, 12);
    assert.equal(receipts.filter((r) => r.data.deliveryId === "d-429").length, 1, "reported once");
  });
});
