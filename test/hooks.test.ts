/**
 * The hooks actor end to end: a real nats-server, the sessions, approvals, tools, router and
 * agent-runner actors and the hooks actor as child processes, a fake OpenAI server behind the
 * real SDK, a terminal-channel client. boot-md makes the agent run BOOT.md at start; `/new` in a
 * chat runs the workspace hooks in order: one that throws and one that hangs in a busy loop are
 * logged (the second stopped at the time limit) and the next one still writes its file and
 * pushes a message the user receives; command-logger writes one JSON line per command; a
 * malformed HOOK.md is reported in the log and the actor serves on; the actor idles small; without
 * a file watch the reload interval picks up a new hook.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { actorEventSchema, outboundMessageSchema, runEventSchema, safeParseJson, subjects, type ActorEvent, type OutboundMessage, type RunEvent } from "../shared/contract/index.js";
import { messageText } from "./fakes/openai-server.js";
import { waitFor, type ActorProcess } from "./harness/actors.js";
import { CliClient, TestSystem } from "./harness/system.js";

const S = subjects();
const MAIN_KEY = "agent:main:main";
const TIME_LIMIT_MS = 1500;
/** a secret only the a-throws hook gets, through hooks.entries["a-throws"].env */
const HOOK_SECRET = "hook-secret-value-0123456789";

function hook(root: string, name: string, events: string[], handler: string): void {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "HOOK.md"), `---\nname: ${name}\ndescription: test\nmetadata: {"lurkbot": {"events": ${JSON.stringify(events)}}}\n---\n`);
  writeFileSync(join(dir, "handler.js"), handler);
}

describe("hooks actor", () => {
  let system: TestSystem;
  let hooks: ActorProcess;
  let client: CliClient;
  let observer: NatsConnection;
  const delivered: OutboundMessage[] = [];
  const hookEvents: ActorEvent[] = [];
  const runEnds: RunEvent[] = [];

  before(async () => {
    system = await TestSystem.start({
      files: { "BOOT.md": "# Boot\n\nSay good morning to the team.\n" },
      config: {
        hooks: {
          timeoutMs: TIME_LIMIT_MS,
          workerIdleMs: 500,
          // no file watch here: the interval alone picks up a new hook (as on a file system without fs.watch)
          watch: false,
          reloadIntervalMs: 1000,
          entries: {
            ...Object.fromEntries(["b-hangs", "c-greeter", "d-run-end", "e-reset", "command-logger", "boot-md"].map((n) => [n, { enabled: true }])),
            // a secret given through the entry's env: the handler sees it, logs and events never do
            "a-throws": { enabled: true, env: { HOOK_API_TOKEN: HOOK_SECRET } },
          },
        },
      },
    });
    const root = join(system.workspace, "hooks");
    // discovery order within the workspace is by name: a, b, c
    hook(root, "a-throws", ["command:new"], "export default async function (event, ctx) { throw new Error('boom from a-throws with ' + ctx.env.HOOK_API_TOKEN); }\n");
    hook(root, "b-hangs", ["command:new"], "export default async function () { for (;;) {} }\n");
    hook(root, "c-greeter", ["command:new"], [
      "import { writeFile } from 'node:fs/promises';",
      "import { join } from 'node:path';",
      "export default async function (event, ctx) {",
      "  await writeFile(join(ctx.workspace, 'hook-ran.json'), JSON.stringify({ name: event.name, sessionKey: event.sessionKey, senderId: event.context.senderId, previousSessionId: event.context.previousSessionId, at: event.timestamp.toISOString(), hook: ctx.hook.name, secretSeen: Boolean(ctx.env.OPENAI_API_KEY || process.env.OPENAI_API_KEY || process.env.LURKBOT_NATS_PASS_HOOKS), pathSeen: Boolean(ctx.env.PATH) }));",
      "  ctx.log.warn('greeted', event.context.senderId);",
      "  event.messages.push(`greeter: a fresh start for ${event.context.senderId}`);",
      "}",
    ].join("\n"));
    hook(root, "d-run-end", ["agent:run_end"], "export default async function (event) { if (event.context.status === 'done' && event.context.text.startsWith('echo:')) event.messages.push(`run ${event.context.status}: ${event.context.text}`); }\n");
    hook(root, "e-reset", ["session:*"], [
      "import { appendFile } from 'node:fs/promises';",
      "import { join } from 'node:path';",
      "export default async function (event, ctx) { await appendFile(join(ctx.workspace, 'resets.log'), `${event.name} ${event.sessionKey} ${event.context.reason}\\n`); }",
    ].join("\n"));
    mkdirSync(join(root, "zz-broken"), { recursive: true });
    writeFileSync(join(root, "zz-broken", "HOOK.md"), "no frontmatter at all\n");

    client = await CliClient.connect(system.nats, "main");
    observer = await system.nats.connect("cli");
    observer.subscribe(S.outboundChannel("cli"), { callback: (_e, msg) => void delivered.push(outboundMessageSchema.parse(safeParseJson(msg.data))) });
    observer.subscribe(S.eventsOf("hooks"), { callback: (_e, msg) => void hookEvents.push(actorEventSchema.parse(safeParseJson(msg.data))) });
    observer.subscribe("lurk.run.evt.*.done", { callback: (_e, msg) => void runEnds.push(runEventSchema.parse(safeParseJson(msg.data))) });
    await observer.flush();
    system.fake.enqueue({ kind: "text", text: "Good morning, team! (BOOT)" });
    hooks = await system.startActor("hooks");
  });

  after(async () => {
    await client?.close();
    await observer?.close();
    await system?.stop();
  });

  it("boot-md: at start the agent runs BOOT.md once, in its main session", async () => {
    const end = await waitFor(() => runEnds.find((e) => e.sessionKey === MAIN_KEY && e.event.kind === "done"), 20_000, "the BOOT.md run to end");
    assert.equal(end.event.kind === "done" && end.event.text, "Good morning, team! (BOOT)");
    const request = system.fake.requests.find((r) => r.body.messages.some((m) => messageText(m).includes("Say good morning to the team.")));
    assert.ok(request, "the model got BOOT.md's content");
    assert.ok(request.body.messages.some((m) => messageText(m).includes("Startup (BOOT.md)")));
    await waitFor(() => hookEvents.find((e) => e.event === "ran" && e.data.hook === "boot-md" && e.data.event === "gateway:startup"), 5_000, "boot-md's ran event");
  });

  it("a malformed HOOK.md is reported in the log; the actor runs the others", () => {
    assert.match(hooks.output(), /hook folder skipped/);
    assert.match(hooks.output(), /zz-broken.*no frontmatter|no frontmatter.*zz-broken/);
  });

  it("/new runs the workspace hooks in order: a throwing and a hanging one are logged, the next still runs and its message reaches the user", async () => {
    await client.send("hello before the reset");
    const started = Date.now();
    const notice = await client.send("/new");
    assert.match(notice.text, /Fresh session started/);
    const greeting = await waitFor(() => delivered.find((m) => m.text.startsWith("greeter:")), 20_000, "the greeter's message");
    assert.equal(greeting.text, "greeter: a fresh start for tester");
    assert.equal(greeting.kind, "notice");
    assert.equal(greeting.sessionKey, MAIN_KEY);
    assert.ok(Date.now() - started >= TIME_LIMIT_MS, "the hanging hook held the next one until its time limit");

    const ran = JSON.parse(readFileSync(join(system.workspace, "hook-ran.json"), "utf8")) as Record<string, string | boolean>;
    assert.equal(ran.name, "command:new");
    assert.equal(ran.sessionKey, MAIN_KEY);
    assert.equal(ran.senderId, "tester");
    assert.equal(ran.hook, "c-greeter");
    assert.match(String(ran.previousSessionId), /^ses_/);
    assert.equal(ran.secretSeen, false, "no API key or NATS password in the handler's ctx.env or process.env");
    assert.equal(ran.pathSeen, true);

    const failed = await waitFor(() => {
      const f = hookEvents.filter((e) => e.event === "failed" && e.data.event === "command:new");
      return f.length >= 2 ? f : undefined;
    }, 5_000, "two failed events");
    assert.deepEqual(failed.map((e) => e.data.hook), ["a-throws", "b-hangs"]);
    assert.match(String(failed[0]!.data.reason), /it threw: boom from a-throws with \[redacted\]/);
    assert.ok(!JSON.stringify(failed).includes(HOOK_SECRET), "the hook's secret is not in its failed event");
    assert.match(String(failed[1]!.data.reason), new RegExp(`^it ran longer than ${TIME_LIMIT_MS} ms`));
    const out = hooks.output();
    assert.match(out, /"hook":"a-throws".*hook failed|hook failed.*"hook":"a-throws"/);
    assert.ok(!out.includes(HOOK_SECRET), "the hook's secret is not in the actor's log");
    assert.match(out, /"hook":"b-hangs"[^\n]*"event":"command:new"/);
    assert.match(out, /"fromHook":true[^\n]*greeted tester/);
  });

  it("session:reset and agent:run_end reach their hooks; a run-end hook's message goes to the session's last conversation", async () => {
    const resets = await waitFor(() => (existsSync(join(system.workspace, "resets.log")) ? readFileSync(join(system.workspace, "resets.log"), "utf8") : undefined), 10_000, "resets.log");
    assert.match(resets, new RegExp(`^session:reset ${MAIN_KEY} new$`, "m"));
    const ended = await waitFor(() => delivered.find((m) => m.text.startsWith("run done: echo: hello before the reset")), 10_000, "the run-end hook's message");
    assert.equal(ended.conversation, "main");
    assert.equal(ended.kind, "notice");
  });

  it("command-logger appends one JSON line per command to $LURKBOT_HOME/logs/commands.log", async () => {
    await client.send("/status");
    const path = join(system.nats.home, "logs", "commands.log");
    const lines = await waitFor(() => {
      if (!existsSync(path)) return undefined;
      const parsed = readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
      return parsed.some((l) => l.action === "status") ? parsed : undefined;
    }, 15_000, "the /status line");
    assert.deepEqual(lines.map((l) => l.action), ["new", "status"]);
    for (const l of lines) {
      assert.equal(l.sessionKey, MAIN_KEY);
      assert.equal(l.senderId, "tester");
      assert.equal(l.source, "cli");
      assert.equal(l.ok, true);
      assert.ok(!Number.isNaN(Date.parse(String(l.timestamp))));
    }
  });

  it("idles under 80 MB RSS once its worker ended and its idle collections ran", { timeout: 60_000 }, async () => {
    // the actor collects 10-20 s after it went quiet and again 6 s later (shared/runtime/memory.ts)
    const rssKb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${hooks.child.pid}/status`, "utf8"))?.[1]);
    const deadline = Date.now() + 40_000;
    while (Date.now() < deadline && !(rssKb() < 80 * 1024)) await new Promise((r) => setTimeout(r, 1_000));
    const kb = rssKb();
    process.stdout.write(`# hooks actor idle RSS: ${Math.round(kb / 1024)} MB\n`);
    assert.ok(kb > 0 && kb < 80 * 1024, `hooks RSS ${Math.round(kb / 1024)} MB after its idle collections`);
  });

  it("without a file watch (hooks.watch false) the reload interval picks up a new hook", async () => {
    const mark = hookEvents.length;
    hook(join(system.workspace, "hooks"), "f-late", ["command:help"], "export default async function (event) { event.messages.push('late hook ran'); }\n");
    writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({ hooks: { watch: false, reloadIntervalMs: 1000, entries: { "f-late": { enabled: true } } } }));
    const e = await waitFor(() => hookEvents.slice(mark).find((x) => x.event === "reloaded" && (x.data.hooks as Array<{ hook: string }>).some((h) => h.hook === "f-late")), 10_000, "an interval reload");
    assert.equal(e.data.reason, "interval");
    await client.send("/help");
    await waitFor(() => delivered.find((m) => m.text === "late hook ran"), 10_000, "the late hook's message");
  });
});
