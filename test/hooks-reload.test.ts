/**
 * The hooks actor picking up changes while it runs, and the bundled session-memory hook, end to
 * end: a real nats-server, the sessions, approvals, tools, router and agent-runner actors and the
 * hooks actor as child processes, a fake OpenAI server, a terminal-channel client, the real CLI.
 * A hook folder added to the workspace fires on the next command (fs.watch, no interval);
 * `lurkbot hooks disable` (config.json) stops it; a folder with a HOOK.md and no handler yet is
 * reported, never fatal, and runs once its handler is written; the agent:run_end subscription
 * exists only while a hook wants it (`lurkbot hooks reload --json`); session-memory saves the
 * conversation `/new` ended under memory/ without tool calls, and never overwrites a file.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { actorEventSchema, outboundMessageSchema, safeParseJson, subjects, type ActorEvent, type HooksReloadReply, type OutboundMessage } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { waitFor, type ActorProcess } from "./harness/actors.js";
import { runCli } from "./harness/cli.js";
import { CliClient, TestSystem } from "./harness/system.js";

const S = subjects();
const MAIN_KEY = "agent:main:main";
const RUN_DONE = "lurk.run.evt.*.done";

function writeHookMd(root: string, name: string, events: string[]): void {
  mkdirSync(join(root, name), { recursive: true });
  writeFileSync(join(root, name, "HOOK.md"), `---\nname: ${name}\ndescription: test\nmetadata: {"lurkbot": {"events": ${JSON.stringify(events)}}}\n---\n`);
}

/** a handler that appends `line` (a JS template over event) to <workspace>/<file> and pushes `message` if given */
function handler(file: string, line: string, message?: string): string {
  return [
    "import { appendFile } from 'node:fs/promises';",
    "import { join } from 'node:path';",
    "export default async function (event, ctx) {",
    `  await appendFile(join(ctx.workspace, ${JSON.stringify(file)}), \`${line}\\n\`);`,
    ...(message ? [`  event.messages.push(${JSON.stringify(message)});`] : []),
    "}",
  ].join("\n");
}

const lines = (path: string) => (existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean) : []);

describe("hooks reload and session-memory", () => {
  let system: TestSystem;
  let hooks: ActorProcess;
  let client: CliClient;
  let observer: NatsConnection;
  let cliEnv: Record<string, string>;
  let wsHooks: string;
  const delivered: OutboundMessage[] = [];
  const hookEvents: ActorEvent[] = [];

  /** the first `reloaded` event after `mark` whose running hooks satisfy `check` */
  const reloaded = (mark: number, check: (names: string[], e: ActorEvent) => boolean, what: string) =>
    waitFor(() => hookEvents.slice(mark).find((e) => e.event === "reloaded" && check((e.data.hooks as Array<{ hook: string }>).map((h) => h.hook), e)), 10_000, what);
  const reload = async (): Promise<HooksReloadReply> => {
    const r = await runCli(["hooks", "reload", "--json"], cliEnv);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as HooksReloadReply;
  };
  const probe = () => lines(join(system.workspace, "probe.log")).length;
  /** /status, then wait until the user hook z-probe (which runs after every workspace hook of the event) saw it */
  const status = async () => {
    const before = probe();
    await client.send("/status");
    await waitFor(() => probe() > before, 10_000, "z-probe to see /status");
  };

  before(async () => {
    system = await TestSystem.start({
      files: { "secret-notes.txt": "TOOL-RESULT-MARKER-42\n" },
      config: {
        hooks: {
          // no interval: only the file watch reloads here
          reloadIntervalMs: 0,
          entries: Object.fromEntries(["session-memory", "w-new", "w-half", "w-run-end"].map((n) => [n, { enabled: true }])),
        },
      },
    });
    wsHooks = join(system.workspace, "hooks");
    // a user hook ($LURKBOT_HOME/hooks, on by default): runs after the workspace hooks of /status
    const userHooks = join(system.nats.home, "hooks");
    writeHookMd(userHooks, "z-probe", ["command:status"]);
    writeFileSync(join(userHooks, "z-probe", "handler.js"), handler("probe.log", "${event.name}"));
    cliEnv = system.nats.env({ ...system.env, ...system.nats.passwordEnv("cli") });

    client = await CliClient.connect(system.nats, "main");
    observer = await system.nats.connect("cli");
    observer.subscribe(S.outboundChannel("cli"), { callback: (_e, msg) => void delivered.push(outboundMessageSchema.parse(safeParseJson(msg.data))) });
    observer.subscribe(S.eventsOf("hooks"), { callback: (_e, msg) => void hookEvents.push(actorEventSchema.parse(safeParseJson(msg.data))) });
    await observer.flush();
    hooks = await system.startActor("hooks");
  });

  after(async () => {
    await client?.close();
    await observer?.close();
    await system?.stop();
  });

  it("a hook folder added to the workspace while the actor runs fires on the next command, without a restart", async () => {
    await status();
    const mark = hookEvents.length;
    writeHookMd(wsHooks, "w-new", ["command:status"]);
    writeFileSync(join(wsHooks, "w-new", "handler.js"), handler("w-new.log", "${event.name}", "w-new ran"));
    const e = await reloaded(mark, (names) => names.includes("w-new"), "a reload that runs w-new");
    assert.equal(e.data.reason, "watch");
    assert.ok(Number(e.data.running) >= 3, "session-memory, w-new and z-probe run");
    await client.send("/status");
    const msg = await waitFor(() => delivered.find((m) => m.text === "w-new ran"), 10_000, "w-new's message");
    assert.equal(msg.sessionKey, MAIN_KEY);
    assert.deepEqual(lines(join(system.workspace, "w-new.log")), ["command:status"]);
  });

  it("`lurkbot hooks disable` (config.json) stops it in the running actor", async () => {
    const mark = hookEvents.length;
    const off = await runCli(["hooks", "disable", "w-new"], cliEnv);
    assert.equal(off.code, 0, off.stderr);
    assert.match(off.stdout, /disabled: w-new/);
    assert.match(off.stdout, /A running hooks actor applies it/);
    await reloaded(mark, (names) => !names.includes("w-new") && names.includes("z-probe"), "a reload without w-new");
    await status();
    assert.equal(lines(join(system.workspace, "w-new.log")).length, 1, "w-new did not run again");
  });

  it("a half-written hook folder (HOOK.md, no handler yet) is reported, never fatal, and runs once completed", async () => {
    const mark = hookEvents.length;
    writeHookMd(wsHooks, "w-half", ["command:status"]);
    await reloaded(mark, (names, e) => !names.includes("w-half") && Number(e.data.problems) >= 1, "a reload that reports w-half");
    await waitFor(() => /"dir":"[^"]*w-half"[^\n]*no handler module|no handler module[^\n]*w-half/.test(hooks.output()), 5_000, "the skipped folder in the log");
    await status(); // the actor serves on
    assert.equal(hooks.child.exitCode, null);

    const mark2 = hookEvents.length;
    writeFileSync(join(wsHooks, "w-half", "handler.js"), handler("w-half.log", "${event.name}"));
    const e = await reloaded(mark2, (names) => names.includes("w-half"), "a reload that runs w-half");
    assert.equal(e.data.problems, 0);
    await status();
    assert.deepEqual(lines(join(system.workspace, "w-half.log")), ["command:status"]);
  });

  it("the agent:run_end subscription exists only while a running hook wants it", async () => {
    const none = await reload();
    assert.ok(!none.subjects.includes(RUN_DONE), `no run-end subscription yet: ${none.subjects.join(", ")}`);
    assert.ok(none.subjects.includes(S.event("router", "command")));
    assert.equal(none.hooksEnabled, true);
    assert.ok(none.agents.find((a) => a.agentId === "main")!.running.includes("w-half"));

    const mark = hookEvents.length;
    writeHookMd(wsHooks, "w-run-end", ["agent:run_end"]);
    writeFileSync(join(wsHooks, "w-run-end", "handler.js"), handler("run-end.log", "${event.context.status} ${event.context.text}"));
    await reloaded(mark, (names) => names.includes("w-run-end"), "a reload that runs w-run-end");
    const some = await reload();
    assert.equal(some.changed, false, "the watch had reloaded already");
    assert.ok(some.subjects.includes(RUN_DONE) && some.subjects.includes("lurk.run.evt.*.error"));
    await client.send("ping one");
    await waitFor(() => lines(join(system.workspace, "run-end.log")).includes("done echo: ping one"), 10_000, "w-run-end to see the run end");

    const mark2 = hookEvents.length;
    rmSync(join(wsHooks, "w-run-end"), { recursive: true });
    await reloaded(mark2, (names) => !names.includes("w-run-end"), "a reload without w-run-end");
    const gone = await reload();
    assert.ok(!gone.subjects.includes(RUN_DONE), "unsubscribed from run ends");
  });

  it("session-memory saves the conversation /new ended to memory/YYYY-MM-DD-<slug>.md: session key and id, text only, never overwriting", async () => {
    const memory = join(system.workspace, "memory");
    const saved = (re: RegExp) => (existsSync(memory) ? readdirSync(memory).filter((f) => re.test(f)) : []);
    // the pings so far end here, in their own file
    await client.send("/new");
    await waitFor(() => saved(/^\d{4}-\d\d-\d\d-ping-one\.md$/).length === 1, 10_000, "the pings' memory file");

    const bus = new BusClient(observer, system.nats.prefix);
    system.fake.enqueue(
      { kind: "tool_calls", calls: [{ name: "read", arguments: { path: "secret-notes.txt" } }] },
      { kind: "text", text: "Lisbon in May sounds great." },
    );
    const first = await client.send("Plan the trip to Lisbon please");
    assert.equal(first.text, "Lisbon in May sounds great.");
    await client.send("Which museums?");
    const { session } = await bus.call("sessions", "get", { sessionKey: MAIN_KEY });
    const sessionId = session!.sessionId;

    await client.send("/new");
    const [file] = await waitFor(() => {
      const f = saved(/^\d{4}-\d\d-\d\d-plan-the-trip-to-lisbon\.md$/);
      return f.length ? f : undefined;
    }, 10_000, "session-memory's file");
    const text = readFileSync(join(memory, file!), "utf8");
    assert.equal(file!.slice(0, 10), new Date().toISOString().slice(0, 10));
    assert.match(text, new RegExp(`^- \\*\\*Session key\\*\\*: ${MAIN_KEY}$`, "m"));
    assert.match(text, new RegExp(`^- \\*\\*Session id\\*\\*: ${sessionId}$`, "m"));
    assert.match(text, /^\*\*user\*\* \(\d\d:\d\d\): Plan the trip to Lisbon please$/m);
    assert.match(text, /^\*\*assistant\*\* \(\d\d:\d\d\): Lisbon in May sounds great\.$/m);
    assert.match(text, /^\*\*assistant\*\* \(\d\d:\d\d\): echo: Which museums\?$/m);
    assert.ok(!text.includes("TOOL-RESULT-MARKER"), "no tool result");
    assert.ok(!text.includes("secret-notes.txt"), "no tool call");
    assert.ok(!text.includes("ping one"), "only the conversation that ended");
    assert.equal((text.match(/^\*\*(user|assistant)\*\*/gm) ?? []).length, 4);

    // the same first words again: a new file beside it, the first untouched
    await client.send("Plan the trip to Lisbon again");
    await client.send("/new");
    const second = await waitFor(() => saved(/-plan-the-trip-to-lisbon-2\.md$/)[0], 10_000, "the second file");
    assert.match(readFileSync(join(memory, second), "utf8"), /Plan the trip to Lisbon again/);
    assert.equal(readFileSync(join(memory, file!), "utf8"), text, "the first file was not overwritten");
    // `ran` is published once the worker's outcome is back, which can be after the file is visible
    const ran = () => hookEvents.filter((e) => e.event === "ran" && e.data.hook === "session-memory");
    await waitFor(() => ran().length >= 3 || undefined, 10_000, "three session-memory runs reported");
    assert.ok(ran().length >= 3);
    assert.ok(!hookEvents.some((e) => e.event === "failed" && e.data.hook === "session-memory"), "session-memory never failed");
  });
});
