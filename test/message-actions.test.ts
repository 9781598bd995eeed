/**
 * The `message` tool's react, edit and delete, end to end: the whole system (real bus, every
 * actor a process), the fake LLM calling `message` with each action, and the channels against
 * their fake platforms (Telegram Bot API, Discord REST + gateway, Slack Web API + Socket Mode,
 * the web chat's socket; the webhook channel, which can do none of them). Markdown tables: the
 * kit's conversion (code, bullets, off) and the chunker keeping a table whole, then per channel
 * setting through the platforms and `lurkbot send`.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { chunkText } from "../shared/runtime/channel/chunk.js";
import { convertTables, tableSpans } from "../shared/runtime/channel/tables.js";
import { toTelegramHtml } from "../shared/runtime/channel/markdown.js";
import { FakeDiscordServer } from "./fakes/discord-server.js";
import { messageText } from "./fakes/openai-server.js";
import { FakeSlackServer } from "./fakes/slack-server.js";
import { FakeTelegramServer } from "./fakes/telegram-server.js";
import { waitFor } from "./harness/actors.js";
import { runCli } from "./harness/cli.js";
import { freePort } from "./harness/nats.js";
import { TestSystem } from "./harness/system.js";
import { WebClient } from "./harness/web-client.js";

const TABLE = ["| Name | Qty | Note |", "| --- | ---: | :-- |", "| **Apple** | 3 | red |", "| Kiwi | 12 | `green` |"].join("\n");

describe("markdown tables (channel kit)", () => {
  it("code: one padded monospace block, inline markup reduced to text; bullets: one item per row; off: as written", () => {
    const md = `Stock:\n\n${TABLE}\n\nThat is all.`;
    assert.equal(convertTables(md, "code"), [
      "Stock:", "", "```", "Name  | Qty | Note", "------+-----+------", "Apple | 3   | red", "Kiwi  | 12  | green", "```", "", "That is all.",
    ].join("\n"));
    assert.equal(convertTables(md, "bullets"), [
      "Stock:", "", "- **Apple**", "  - Qty: 3", "  - Note: red", "- **Kiwi**", "  - Qty: 12", "  - Note: `green`", "", "That is all.",
    ].join("\n"));
    assert.equal(convertTables("| k | v |\n|---|---|\n| a | 1 |\n| b | 2 |", "bullets"), "- **a**: 1\n- **b**: 2", "two columns: label and value");
    assert.equal(convertTables(md, "off"), md);
    const fenced = `\`\`\`\n${TABLE}\n\`\`\``;
    assert.equal(convertTables(fenced, "code"), fenced, "a table inside a code block is code");
    assert.equal(convertTables("a | b, and c | d", "code"), "a | b, and c | d", "pipes without a delimiter row are no table");
    assert.match(toTelegramHtml(convertTables(TABLE, "code")), /^<pre>Name {2}\| Qty \| Note\n/, "Telegram shows it as <pre>");
    assert.deepEqual(tableSpans(`x\n${TABLE}\ny`), [{ start: 2, end: 2 + TABLE.length }]);
  });

  it("never splits a table that fits in one chunk: it starts the next chunk; a longer one is cut at a row's end", () => {
    const intro = "Here are the numbers you asked for.";
    const text = `${intro}\n${TABLE}\nAnd a closing line.`;
    const limit = TABLE.length + 10;
    for (const mode of ["paragraph", "sentence", "length"] as const) {
      const chunks = chunkText(text, limit, mode);
      assert.ok(chunks.some((c) => c.includes(TABLE)), `${mode}: the table is whole in one chunk: ${JSON.stringify(chunks)}`);
      assert.ok(chunks.every((c) => c.length <= limit));
    }
    const code = convertTables(text, "code");
    const codeBlock = code.slice(code.indexOf("```"), code.lastIndexOf("```") + 3);
    const codeChunks = chunkText(code, codeBlock.length + 8);
    assert.ok(codeChunks.some((c) => c.includes(codeBlock)), `the code block is whole: ${JSON.stringify(codeChunks)}`);

    const long = ["| a | b |", "|---|---|", ...Array.from({ length: 30 }, (_, i) => `| row ${i} | value ${i} |`)].join("\n");
    const pieces = chunkText(long, 120);
    assert.ok(pieces.length > 1);
    for (const p of pieces) assert.match(p, /\|$/, "each piece ends at a row's end");
  });
});

describe("message tool actions and tables through the channels", () => {
  let system: TestSystem;
  let telegram: FakeTelegramServer;
  let discord: FakeDiscordServer;
  let slack: FakeSlackServer;
  let webPort: number;
  const WEB_TOKEN = "web-token-0123456789abcdefghij";

  before(async () => {
    telegram = await FakeTelegramServer.start();
    discord = await FakeDiscordServer.start();
    slack = await FakeSlackServer.start();
    // each chat its own session: no memory consolidation of a long shared one takes the fake's queued replies
    const routing = { dm: { policy: "open" }, dmScope: "per-channel-peer" };
    // the messaging profile has the message tool (the default, coding, has not)
    const agents = [{ id: "main", default: true, toolProfile: "messaging" }];
    system = await TestSystem.start({ fake: { chunkDelayMs: 20 }, config: { routing, agents } });
    webPort = await freePort();
    const hookPort = await freePort();
    writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({
      channels: {
        telegram: { enabled: true, botToken: telegram.token, apiRoot: telegram.url, pollTimeoutSec: 1, streaming: "off" },
        discord: { enabled: true, botToken: discord.token, apiRoot: discord.apiRoot, streaming: "off", markdown: { tables: "off" } },
        slack: { enabled: true, botToken: slack.botToken, appToken: slack.appToken, apiUrl: slack.apiUrl, streaming: "off", markdown: { tables: "bullets" } },
        web: { enabled: true, port: webPort, token: WEB_TOKEN },
        webhook: { enabled: true, port: hookPort, secret: "webhook-secret-0123456789abcdef", callbackUrl: "http://127.0.0.1:9/none" },
      },
      routing,
      agents,
    }));
    for (const name of ["channel-telegram", "channel-discord", "channel-slack", "channel-web", "channel-webhook"]) await system.startActor(name);
  });
  after(async () => {
    for (const name of ["channel-webhook", "channel-web", "channel-slack", "channel-discord", "channel-telegram"]) await system?.actors.get(name)?.stop();
    await system?.stop();
    await telegram?.close();
    await discord?.close();
    await slack?.close();
  });
  beforeEach(() => system.fake.reset());

  /** the tool results of the current turn (after the last user message; every DM shares the main session) the model was given in its newest request */
  const toolResults = () => {
    const messages = system.fake.requests.at(-1)?.body.messages ?? [];
    const turn = messages.slice(messages.findLastIndex((m) => m.role === "user") + 1);
    return turn.filter((m) => m.role === "tool").map((m) => messageText(m));
  };
  const call = (id: string, args: Record<string, unknown>) => ({ kind: "tool_calls" as const, calls: [{ id, name: "message", arguments: args }] });
  /** waits for the run's last answer (the fake's "tool said: …" after the last tool call) */
  const results = (count: number) => waitFor(() => (toolResults().length >= count && system.fake.requests.at(-1)?.reply.kind === "text" ? toolResults() : undefined), 40_000, `${count} tool results`);

  it("react puts the emoji on the user's message (messageId current) on Telegram, Discord, Slack and the web chat", async () => {
    system.fake.enqueue(call("call_tg_react", { action: "react", emoji: "👍" }));
    const tgId = telegram.userMessage({ chatId: 4001, text: "thumbs up please" });
    await waitFor(() => telegram.reactions.get(`4001:${tgId}`)?.[0] === "👍", 30_000, "the Telegram reaction");
    assert.match((await results(1))[0]!, new RegExp(`^reacted 👍 to message 4001:${tgId} in telegram/4001`));

    system.fake.reset();
    system.fake.enqueue(call("call_dc_react", { action: "react", emoji: "🎉" }));
    const dcId = discord.userMessage({ channelId: "4002", content: "party?" });
    await waitFor(() => discord.reactions.find((r) => r.messageId === dcId), 30_000, "the Discord reaction");
    assert.deepEqual(discord.reactions.find((r) => r.messageId === dcId), { method: "PUT", channelId: "4002", messageId: dcId, emoji: "🎉" });
    await results(1);

    system.fake.reset();
    system.fake.enqueue(call("call_sl_react", { action: "react", emoji: "👀" }));
    const { ts } = slack.userMessage({ channel: "D4003", channelType: "im", text: "look at this" });
    await waitFor(() => slack.reactions.has(`D4003:${ts}:eyes`), 30_000, "the Slack reaction (by its name)");
    await results(1);

    system.fake.reset();
    system.fake.enqueue(call("call_web_react", { action: "react", emoji: "❤️" }));
    const web = await WebClient.open(webPort, WEB_TOKEN, "main");
    try {
      const id = randomUUID();
      web.send({ type: "send", id, chat: "main", text: "love it" });
      const update = await web.next((f) => f.type === "update" && f.entry.id === id, "the update of the user's line");
      assert.deepEqual(update.entry.reactions, ["❤️"]);
      await results(1);
      // kept: a page opened later shows it
      const later = await WebClient.open(webPort, WEB_TOKEN, "main");
      const history = await later.next((f) => f.type === "history", "history");
      assert.deepEqual(history.entries.find((e: { id: string }) => e.id === id)?.reactions, ["❤️"]);
      later.close();
    } finally {
      web.close();
    }
  });

  it("edit and delete the assistant's own message by the delivery id its send returned (Telegram, Discord, Slack, web)", async () => {
    const steps = (p: string) => [
      call(`call_${p}_s1`, { text: "first version" }),
      call(`call_${p}_e1`, { action: "edit", messageId: `msg-call_${p}_s1`, text: "second **version**" }),
      call(`call_${p}_s2`, { text: "to be deleted" }),
      call(`call_${p}_d2`, { action: "delete", messageId: `msg-call_${p}_s2` }),
    ];
    system.fake.enqueue(...steps("tg"));
    telegram.userMessage({ chatId: 4011, text: "write and fix" });
    const tg = await results(4);
    assert.match(tg[0]!, /^sent to telegram\/4011 \(delivery id msg-call_tg_s1\)/);
    assert.match(tg[1]!, /^edited message msg-call_tg_s1 in telegram\/4011/);
    assert.match(tg[3]!, /^deleted message msg-call_tg_s2/);
    const first = telegram.sent.find((m) => m.chatId === 4011 && m.method === "sendMessage" && m.text === "first version")!;
    assert.equal(telegram.messages.get(`4011:${first.messageId}`), "second <b>version</b>", "edited in place, as Telegram HTML");
    const second = telegram.sent.find((m) => m.chatId === 4011 && m.text === "to be deleted")!;
    assert.ok(telegram.sent.some((m) => m.method === "deleteMessage" && m.messageId === second.messageId), "deleteMessage of the second");

    system.fake.reset();
    system.fake.enqueue(...steps("dc"));
    discord.userMessage({ channelId: "4012", content: "write and fix" });
    const dc = await results(4);
    assert.match(dc[1]!, /^edited/);
    assert.match(dc[3]!, /^deleted/);
    const dFirst = discord.sent.find((m) => m.channelId === "4012" && m.method === "POST" && m.content === "first version")!;
    assert.equal(discord.messages.get(`4012:${dFirst.messageId}`), "second **version**");
    const dSecond = discord.sent.find((m) => m.channelId === "4012" && m.content === "to be deleted")!;
    assert.ok(discord.sent.some((m) => m.method === "DELETE" && m.messageId === dSecond.messageId));

    system.fake.reset();
    system.fake.enqueue(...steps("sl"));
    slack.userMessage({ channel: "D4013", channelType: "im", text: "write and fix" });
    const sl = await results(4);
    assert.match(sl[1]!, /^edited/);
    assert.match(sl[3]!, /^deleted/);
    const sFirst = slack.sent.find((m) => m.channel === "D4013" && m.method === "chat.postMessage" && m.text === "first version")!;
    assert.equal(slack.messages.get(`D4013:${sFirst.ts}`), "second *version*", "chat.update with mrkdwn");
    assert.ok(slack.sent.some((m) => m.channel === "D4013" && m.method === "chat.delete"));

    system.fake.reset();
    system.fake.enqueue(...steps("web"));
    const web = await WebClient.open(webPort, WEB_TOKEN, "fixes");
    try {
      web.send({ type: "send", id: randomUUID(), chat: "fixes", text: "write and fix" });
      const edited = await web.next((f) => f.type === "update" && f.entry.edited, "the edited line");
      assert.equal(edited.entry.text, "second **version**");
      assert.equal(edited.entry.id, "msg-call_web_s1:0");
      const deleted = await web.next((f) => f.type === "update" && f.entry.deleted, "the deleted line");
      assert.equal(deleted.entry.id, "msg-call_web_s2:0");
      assert.equal(deleted.entry.text, "");
      await results(4);
    } finally {
      web.close();
    }
  });

  it("refuses to edit or delete a user's message, or a message of another conversation: the model reads why", async () => {
    const userMid = telegram.userMessage({ chatId: 4021, text: "first, a message of mine" });
    await waitFor(() => telegram.sent.some((m) => m.chatId === 4021), 30_000, "the first answer");
    system.fake.reset();
    system.fake.enqueue(
      call("call_ref_e", { action: "edit", messageId: `4021:${userMid}`, text: "hijacked" }),
      call("call_ref_d", { action: "delete", messageId: `4021:${userMid}` }),
      // the assistant's own message, but of another conversation (sent in the previous test)
      call("call_ref_x", { action: "delete", messageId: "msg-call_tg_s1" }),
    );
    telegram.userMessage({ chatId: 4021, text: "now edit what I wrote" });
    const out = await results(3);
    for (const r of out) assert.match(r, /telegram refused the (edit|delete): message .* is not a message the assistant sent in this conversation/);
    assert.ok(!telegram.sent.some((m) => m.chatId === 4021 && (m.method === "editMessageText" || m.method === "deleteMessage")), "nothing edited or deleted");
    assert.equal(telegram.messages.get(`4011:${telegram.sent.find((m) => m.chatId === 4011 && m.text === "first version")!.messageId}`), "second <b>version</b>", "the other conversation's message is untouched");
  });

  it("an action the channel cannot do answers a clear error: the webhook channel, the terminal, an emoji Telegram refuses", async () => {
    system.fake.enqueue(
      call("call_un_hook", { action: "react", emoji: "👍", messageId: "m-1", channel: "webhook", conversation: "demo" }),
      call("call_un_cli", { action: "edit", messageId: "x", text: "y", channel: "cli", conversation: "main" }),
      call("call_un_emoji", { action: "react", emoji: "🦄" }),
    );
    telegram.userMessage({ chatId: 4031, text: "try things" });
    const out = await results(3);
    assert.match(out[0]!, /webhook refused the react: react is not supported by webhook/);
    assert.match(out[1]!, /edit is not supported by cli/);
    assert.match(out[2]!, /telegram refused the react: Telegram refused the message \(400\): Bad Request: REACTION_INVALID/);
  });

  it("tables go out as each channel's setting says: Telegram a code block (default), Slack bullets, Discord as written; the terminal a code block", async () => {
    const reply = `Stock:\n\n${TABLE}`;
    system.fake.enqueue({ kind: "text", text: reply, chunks: 1 });
    telegram.userMessage({ chatId: 4041, text: "stock?" });
    const tg = await waitFor(() => telegram.sent.find((m) => m.chatId === 4041), 30_000, "Telegram reply");
    assert.match(tg.text, /<pre>Name {2}\| Qty \| Note\n------\+-----\+------\nApple \| 3 {3}\| red\n/);

    system.fake.enqueue({ kind: "text", text: reply, chunks: 1 });
    slack.userMessage({ channel: "D4042", channelType: "im", text: "stock?" });
    const sl = await waitFor(() => slack.sent.find((m) => m.channel === "D4042"), 30_000, "Slack reply");
    assert.match(sl.text, /• \*Kiwi\*|- \*Kiwi\*/);
    assert.match(sl.text, /Qty: 12/);
    assert.doesNotMatch(sl.text, /\| ---/);

    system.fake.enqueue({ kind: "text", text: reply, chunks: 1 });
    discord.userMessage({ channelId: "4043", content: "stock?" });
    const dc = await waitFor(() => discord.sent.find((m) => m.channelId === "4043"), 30_000, "Discord reply");
    assert.ok(dc.content.includes(TABLE), "markdown.tables off: as written");

    system.fake.enqueue({ kind: "text", text: reply, chunks: 1 });
    const cli = await runCli(["send", "stock?", "--session", "tables"], system.nats.env(system.nats.passwordEnv("cli")));
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, /```\nName {2}\| Qty \| Note\n------\+-----\+------\n/, "lurkbot send prints the table as a padded code block");
  });
});
