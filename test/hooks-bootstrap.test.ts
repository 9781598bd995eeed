/**
 * agent:bootstrap, session:start and the durable hook events, end to end: a real nats-server, the
 * sessions, approvals, tools, router and agent-runner actors and the hooks actor as child
 * processes, a fake OpenAI server, a terminal-channel client. An agent:bootstrap hook that swaps
 * SOUL.md's content changes the system prompt the model gets; without such a hook no
 * `lurk.hooks.bootstrap` request is made; disabling it stops it; hooks that throw, hang or leave
 * an oversize list leave the prompt as configured and the run answers; replies out of the
 * contract are refused. session:start fires once per new session. A `/new` handled while the
 * hooks actor is stopped fires command:new once it is back; an event older than
 * hooks.replayMaxAgeMs is skipped.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  actorEventSchema, bootstrapHooksKey, HOOKS_BUCKET, safeParseJson, subjects, type ActorEvent, type BootstrapHookFile,
} from "../shared/contract/index.js";
import { messageText } from "./fakes/openai-server.js";
import { waitFor, type ActorProcess } from "./harness/actors.js";
import { CliClient, TestSystem } from "./harness/system.js";

const S = subjects();
const SOUL = "You are a calm owl who speaks softly.";
const BOOTSTRAP_TIMEOUT_MS = 2000;

function hook(root: string, name: string, events: string[], handler: string): void {
  mkdirSync(join(root, name), { recursive: true });
  writeFileSync(join(root, name, "HOOK.md"), `---\nname: ${name}\ndescription: test\nmetadata: {"lurkbot": {"events": ${JSON.stringify(events)}}}\n---\n`);
  writeFileSync(join(root, name, "handler.js"), handler);
}

/** lets the agent-runner's watch of the lurk_hooks bucket see a change the test just saw (a push, normally well under this) */
const settle = () => new Promise((r) => setTimeout(r, 300));
const lines = (path: string) => (existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean) : []);

describe("hooks: agent:bootstrap, session:start, durable events", () => {
  let system: TestSystem;
  let hooks: ActorProcess;
  let client: CliClient;
  let observer: NatsConnection;
  /** as the hooks user: sees every lurk.hooks.bootstrap request, reads the lurk_hooks bucket */
  let hooksUser: NatsConnection;
  let kv: KV;
  let userHooks: string;
  const hookEvents: ActorEvent[] = [];
  const bootstrapRequests: Array<{ agentId: string; files: BootstrapHookFile[] }> = [];

  /** the system prompt of the model request that carried `text` */
  const systemPromptFor = (text: string) => {
    const req = system.fake.requests.find((r) => r.body.messages.some((m) => m.role === "user" && messageText(m).includes(text)));
    assert.ok(req, `a model request with "${text}"`);
    return messageText(req.body.messages.find((m) => m.role === "system"));
  };
  const announced = async () => (await kv.get(bootstrapHooksKey("main")))?.operation === "PUT";
  const writeConfig = (entries: Record<string, unknown>) => writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({ hooks: { bootstrapTimeoutMs: BOOTSTRAP_TIMEOUT_MS, reloadIntervalMs: 0, entries } }));

  before(async () => {
    system = await TestSystem.start({ files: { "SOUL.md": `${SOUL}\n`, "AGENTS.md": "Be brief.\n" }, config: { hooks: { bootstrapTimeoutMs: BOOTSTRAP_TIMEOUT_MS, reloadIntervalMs: 0 } } });
    userHooks = join(system.nats.home, "hooks");
    // user hooks ($LURKBOT_HOME/hooks) are on by default
    hook(userHooks, "s-start", ["session:start"], [
      "import { appendFile } from 'node:fs/promises';",
      "import { join } from 'node:path';",
      "export default async function (event, ctx) { await appendFile(join(ctx.workspace, 'start.log'), `${event.name} ${event.sessionKey} ${event.context.sessionId} ${event.context.sessionType} ${event.context.channel}\\n`); }",
    ].join("\n"));
    hook(userHooks, "n-new", ["command:new"], [
      "import { appendFile } from 'node:fs/promises';",
      "import { join } from 'node:path';",
      "export default async function (event, ctx) { await appendFile(join(ctx.workspace, 'new.log'), `${event.name} [${event.context.args}] ${event.context.messageId}\\n`); }",
    ].join("\n"));
    hook(userHooks, "p-probe", ["command:status"], [
      "import { appendFile } from 'node:fs/promises';",
      "import { join } from 'node:path';",
      "export default async function (event, ctx) { await appendFile(join(ctx.workspace, 'probe.log'), `${event.name} ${event.sessionKey}\\n`); }",
    ].join("\n"));
    client = await CliClient.connect(system.nats, "main");
    observer = await system.nats.connect("cli");
    observer.subscribe(S.eventsOf("hooks"), { callback: (_e, msg) => void hookEvents.push(actorEventSchema.parse(safeParseJson(msg.data))) });
    await observer.flush();
    hooksUser = await system.nats.connect("hooks");
    hooksUser.subscribe(S.op("hooks", "bootstrap"), { callback: (_e, msg) => void bootstrapRequests.push(safeParseJson(msg.data) as (typeof bootstrapRequests)[number]) });
    await hooksUser.flush();
    kv = await new Kvm(hooksUser).open(HOOKS_BUCKET);
    hooks = await system.startActor("hooks");
  });

  after(async () => {
    await client?.close();
    await observer?.close();
    await hooksUser?.close();
    await system?.stop();
  });

  it("without an agent:bootstrap hook a run asks nothing and its prompt has the workspace's SOUL.md", async () => {
    const reply = await client.send("first hello");
    assert.equal(reply.text, "echo: first hello");
    assert.match(systemPromptFor("first hello"), /## SOUL\.md\n\nYou are a calm owl/);
    assert.equal(bootstrapRequests.length, 0, "no lurk.hooks.bootstrap request");
    assert.equal(await announced(), false, "no bootstrap.main key");
  });

  it("an enabled agent:bootstrap hook that swaps SOUL.md (and adds a file) changes what the model gets", async () => {
    hook(userHooks, "soul-swap", ["agent:bootstrap"], [
      "export default async function (event) {",
      "  event.context.bootstrapFiles = event.context.bootstrapFiles.map((f) => f.name === 'SOUL.md' ? { ...f, content: 'You are a cheerful parrot.' } : f);",
      "  event.context.bootstrapFiles.push({ name: 'EXTRA.md', content: 'Extra notes from a hook.' });",
      "}",
    ].join("\n"));
    await waitFor(announced, 10_000, "bootstrap.main in the lurk_hooks bucket");
    await settle();
    const reply = await client.send("second hello");
    assert.equal(reply.text, "echo: second hello");
    const prompt = systemPromptFor("second hello");
    assert.match(prompt, /## SOUL\.md\n\nYou are a cheerful parrot\./);
    assert.match(prompt, /## EXTRA\.md\n\nExtra notes from a hook\./);
    assert.ok(!prompt.includes("calm owl"), "the configured SOUL.md content was replaced");
    assert.match(prompt, /## AGENTS\.md\n\nBe brief\./, "the other files stay");
    const req = bootstrapRequests.at(-1)!;
    assert.equal(req.agentId, "main");
    assert.deepEqual(req.files.filter((f) => !f.missing).map((f) => f.name), ["SOUL.md", "AGENTS.md"]);
    assert.ok(req.files.some((f) => f.name === "USER.md" && f.missing && f.content === ""), "files the workspace lacks go as missing");
    await waitFor(() => hookEvents.find((e) => e.event === "ran" && e.data.hook === "soul-swap" && e.data.event === "agent:bootstrap"), 5_000, "soul-swap's ran event");
  });

  it("disabling the hook (a reload) stops it: the prompt is as configured and no request is made", async () => {
    writeConfig({ "soul-swap": { enabled: false } });
    await waitFor(async () => !(await announced()), 10_000, "bootstrap.main deleted");
    await settle();
    const asked = bootstrapRequests.length;
    await client.send("third hello");
    assert.match(systemPromptFor("third hello"), /## SOUL\.md\n\nYou are a calm owl/);
    assert.equal(bootstrapRequests.length, asked, "no lurk.hooks.bootstrap request after the hook was disabled");
  });

  it("hooks that throw, leave an oversize file or hang leave the prompt as configured, and the run answers", async () => {
    rmSync(join(userHooks, "soul-swap"), { recursive: true });
    hook(userHooks, "a-throws", ["agent:bootstrap"], "export default async function (event) { event.context.bootstrapFiles[0].content = 'THROWN AWAY'; throw new Error('boom in bootstrap'); }\n");
    hook(userHooks, "b-oversize", ["agent:bootstrap"], "export default async function (event) { event.context.bootstrapFiles[0].content = 'x'.repeat(30000); }\n");
    hook(userHooks, "c-hangs", ["agent:bootstrap"], "export default async function () { for (;;) {} }\n");
    writeConfig({});
    await waitFor(async () => (await kv.get(bootstrapHooksKey("main")))?.string().includes("c-hangs"), 10_000, "the three hooks announced");
    await settle();
    const mark = hookEvents.length;
    const reply = await client.send("fourth hello", { timeoutMs: 30_000 });
    assert.equal(reply.text, "echo: fourth hello");
    const prompt = systemPromptFor("fourth hello");
    assert.match(prompt, /## SOUL\.md\n\nYou are a calm owl/);
    assert.ok(!prompt.includes("THROWN AWAY") && !prompt.includes("xxxxxxxxxx"));
    const failed = await waitFor(() => {
      const f = hookEvents.slice(mark).filter((e) => e.event === "failed" && e.data.event === "agent:bootstrap");
      return f.length >= 3 ? f : undefined;
    }, 10_000, "three failed events");
    assert.deepEqual(failed.map((e) => e.data.hook), ["a-throws", "b-oversize", "c-hangs"]);
    assert.match(String(failed[0]!.data.reason), /it threw: boom in bootstrap/);
    assert.match(String(failed[1]!.data.reason), /refused.*at most 20000 characters/);
    assert.match(String(failed[2]!.data.reason), /hooks\.bootstrapTimeoutMs/);
    for (const name of ["a-throws", "b-oversize", "c-hangs"]) rmSync(join(userHooks, name), { recursive: true });
    await waitFor(async () => !(await announced()), 10_000, "bootstrap.main deleted once they are gone");
  });

  it("session:start fires once for a new session and not for its later messages", async () => {
    const log = join(system.workspace, "start.log");
    const probe = join(system.workspace, "probe.log");
    await client.send("hello new session", { sessionName: "fresh-peer" });
    const [line] = await waitFor(() => {
      const mine = lines(log).filter((l) => l.includes("fresh-peer"));
      return mine.length ? mine : undefined;
    }, 10_000, "session:start for the new session");
    assert.match(line!, /^session:start agent:main:\S*fresh-peer ses_\w+ dm cli$/);
    await client.send("again in that session", { sessionName: "fresh-peer" });
    // the stream is dispatched in order: once p-probe saw this /status, every event before it was handled
    await client.send("/status", { sessionName: "fresh-peer" });
    await waitFor(() => lines(probe).find((l) => l.includes("fresh-peer")), 10_000, "p-probe to see /status");
    assert.equal(lines(log).filter((l) => l.includes("fresh-peer")).length, 1, "one session:start for the session");
    // the main session, created by the first message of this file: one line too
    assert.equal(lines(log).filter((l) => l.includes("agent:main:main ")).length, 1);
  });

  it("a /new handled while the hooks actor is stopped fires command:new once it runs again", async () => {
    const log = join(system.workspace, "new.log");
    const before = lines(log).length;
    await hooks.stop();
    const notice = await client.send("/new while-down");
    assert.match(notice.text, /Fresh session started/);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(lines(log).length, before, "nothing ran while the actor was down");
    hooks = await system.startActor("hooks");
    const added = await waitFor(() => (lines(log).length > before ? lines(log).slice(before) : undefined), 15_000, "command:new after the restart");
    assert.equal(added.length, 1);
    assert.match(added[0]!, /^command:new \[while-down\] /);
  });

  it("an event older than hooks.replayMaxAgeMs is skipped with a log line", async () => {
    const log = join(system.workspace, "new.log");
    const before = lines(log).length;
    const router = await system.nats.connect("router");
    const ts = Date.now() - 2 * 3600_000;
    const data = {
      command: "new", args: "too-old", ok: true, sessionKey: "agent:main:main", agentId: "main", channel: "cli", conversation: "main",
      peer: { kind: "dm", id: "tester" }, sender: { id: "tester" }, messageId: "old-message-1",
    };
    router.publish(S.event("router", "command"), JSON.stringify({ type: "lurk.actor.event.v1", id: "old-event-1", ts, actor: "router", event: "command", level: "info", instance: { host: "h", pid: 1 }, data }));
    await router.flush();
    await router.close();
    await waitFor(() => /hook event skipped/.test(hooks.output()) || undefined, 10_000, "the skip in the log");
    assert.match(hooks.output(), /"event":"command:new"[^\n]*hook event skipped|hook event skipped[^\n]*"event":"command:new"/);
    await waitFor(() => hookEvents.find((e) => e.event === "skipped" && e.data.event === "command:new"), 5_000, "the skipped event");
    // a later command still runs (the stream goes on) and the old one never did
    await client.send("/new after-old");
    await waitFor(() => lines(log).slice(before).find((l) => l.includes("[after-old]")), 10_000, "the next /new");
    assert.ok(!lines(log).some((l) => l.includes("too-old")), "the old event fired no hook");
  });

  it("bootstrap replies out of the contract (oversize, a path, malformed) are refused and the original files used", async () => {
    // the real hooks actor away: this connection answers lurk.hooks.bootstrap instead
    await hooks.stop();
    await kv.put(bootstrapHooksKey("main"), JSON.stringify({ hooks: ["fake"], at: Date.now() }));
    const replies = [
      JSON.stringify({ files: [{ name: "SOUL.md", content: "y".repeat(20_001) }], ran: [], failed: [] }),
      JSON.stringify({ files: [{ name: "../SOUL.md", content: "You are a sly fox." }], ran: [], failed: [] }),
      "{ not json",
      JSON.stringify({ files: Array.from({ length: 10 }, (_, i) => ({ name: `F${i}.md`, content: "z".repeat(19_000) })), ran: [], failed: [] }),
    ];
    let answered = 0;
    const fake = hooksUser.subscribe(S.op("hooks", "bootstrap"), { queue: "q", callback: (_e, msg) => void msg.respond(replies[answered++]!) });
    await hooksUser.flush();
    await waitFor(async () => (await kv.get(bootstrapHooksKey("main")))?.operation === "PUT", 5_000, "the fake announcement");
    await settle();
    try {
      for (const [i] of replies.entries()) {
        const text = `refused reply ${i}`;
        const reply = await client.send(text);
        assert.equal(reply.text, `echo: ${text}`);
        const prompt = systemPromptFor(text);
        assert.match(prompt, /## SOUL\.md\n\nYou are a calm owl/, `reply ${i} was refused`);
        assert.ok(!prompt.includes("sly fox") && !prompt.includes("yyyyyyyyyy") && !prompt.includes("zzzzzzzzzz"));
      }
      assert.equal(answered, replies.length, "each run asked once");
      const runner = system.actors.get("agent-runner")!.output();
      assert.match(runner, /agent:bootstrap hooks gave no usable answer/);
    } finally {
      fake.unsubscribe();
      await kv.delete(bootstrapHooksKey("main"));
    }
  });
});
