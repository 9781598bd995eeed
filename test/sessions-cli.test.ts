/**
 * `lurkbot sessions list|show|reset|delete` as a real process against a real nats-server and
 * the real sessions actor; sessions are created through the bus as the agent-runner does.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import type { AssistantMessage, SessionEntry, TranscriptRecord } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { parseArgs } from "../services/cli/args.js";
import { checkSessionsArgs } from "../services/cli/sessions.js";
import { runCli } from "./harness/cli.js";
import { startActorProcess, type ActorProcess } from "./harness/actors.js";
import { freePort, TestNats } from "./harness/nats.js";

const MAIN = "agent:main:main";
const DM = "agent:main:telegram:dm:42";
const OPS = "agent:ops:main";

const user = (id: string, runId: string, text: string): TranscriptRecord => ({ id, ts: Date.now(), runId, kind: "message", message: { role: "user", content: [{ type: "text", text }] } });
const assistant = (id: string, runId: string, content: AssistantMessage["content"], stopReason: AssistantMessage["stopReason"] = "end_turn"): TranscriptRecord => ({
  id, ts: Date.now(), runId, kind: "message", message: { role: "assistant", content, provider: "openai", model: "gpt-test", stopReason },
});
const toolResult = (id: string, runId: string, text: string): TranscriptRecord => ({
  id, ts: Date.now(), runId, kind: "message", message: { role: "tool_result", toolCallId: "c1", toolName: "read", content: [{ type: "text", text }], isError: false },
});

describe("lurkbot sessions: command line checks", () => {
  const check = (argv: string[]) => {
    const p = parseArgs(argv);
    assert.ok(!("global" in p));
    return checkSessionsArgs(p);
  };
  it("knows its subcommands, keys and which options apply", () => {
    assert.deepEqual(check(["sessions", "list", "--agent", "main", "--json"]), { sub: "list" });
    assert.deepEqual(check(["sessions", "show", MAIN, "--limit", "5"]), { sub: "show", key: MAIN });
    assert.throws(() => check(["sessions", "frob"]), /unknown subcommand "frob"/);
    assert.throws(() => check(["sessions", "show"]), /needs a session KEY/);
    assert.throws(() => check(["sessions", "list", MAIN]), /takes no argument/);
    assert.throws(() => check(["sessions", "reset", MAIN, "--yes"]), /--yes does not apply to `lurkbot sessions reset`/);
    assert.throws(() => check(["sessions", "show", "not a key"]), /is not a session key/);
    assert.throws(() => check(["sessions", "list", "--type", "weird"]), /--type must be one of main, dm/);
  });
});

describe("lurkbot sessions on a real bus", () => {
  let nats: TestNats;
  let actor: ActorProcess;
  let env: Record<string, string>;
  let nc: NatsConnection;
  let bus: BusClient;

  before(async () => {
    nats = await TestNats.start();
    actor = await startActorProcess("sessions", nats);
    env = nats.env(nats.passwordEnv("cli"));
    nc = await nats.connect("agent-runner");
    bus = new BusClient(nc);
    await bus.call("sessions", "begin", {
      sessionKey: MAIN, agentId: "main", sessionType: "main", runId: "r1", historyLimit: 10,
      origin: { channel: "cli", conversation: "main", messageIds: [] }, channel: "cli",
      records: [
        { id: "r1:started", ts: Date.now(), runId: "r1", kind: "run_marker", runStatus: "started" },
        user("r1:u", "r1", "please read the notes\nfile for me"),
        assistant("r1:a0", "r1", [{ type: "text", text: "Reading it." }, { type: "tool_call", id: "c1", name: "read", args: { path: "notes.md" } }], "tool_use"),
        toolResult("r1:t0", "r1", "# Notes\nbuy milk"),
        assistant("r1:a1", "r1", [{ type: "text", text: "Your notes say: buy milk." }]),
      ],
    });
    await bus.call("sessions", "usage", { sessionKey: MAIN, usage: { input: 100, output: 20, cacheRead: 0, cacheWrite: 0, total: 120 }, model: "openai/gpt-test", provider: "openai" });
    await bus.call("sessions", "begin", { sessionKey: DM, agentId: "main", sessionType: "dm", runId: "r2", historyLimit: 10, channel: "telegram", records: [user("r2:u", "r2", "hi")] });
    await bus.call("sessions", "begin", { sessionKey: OPS, agentId: "ops", sessionType: "main", runId: "r3", historyLimit: 10, records: [user("r3:u", "r3", "status?")] });
  });
  after(async () => {
    await nc?.close();
    await actor?.stop();
    await nats?.stop();
  });

  it("list: a table, --json, and the --agent and --type filters", async () => {
    const json = await runCli(["sessions", "list", "--json"], env);
    assert.equal(json.code, 0, json.stderr);
    const all = JSON.parse(json.stdout) as SessionEntry[];
    assert.deepEqual(all.map((s) => s.sessionKey).sort(), [DM, MAIN, OPS].sort());
    const main = all.find((s) => s.sessionKey === MAIN)!;
    assert.equal(main.records, 5);
    assert.equal(main.usage.total, 120);

    const mine = JSON.parse((await runCli(["sessions", "list", "--json", "--agent", "main"], env)).stdout) as SessionEntry[];
    assert.deepEqual(mine.map((s) => s.sessionKey).sort(), [DM, MAIN].sort());
    const dms = JSON.parse((await runCli(["sessions", "list", "--json", "--type", "dm"], env)).stdout) as SessionEntry[];
    assert.deepEqual(dms.map((s) => s.sessionKey), [DM]);

    const table = await runCli(["sessions", "list"], env);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^KEY\s+TYPE\s+CHANNEL\s+RECORDS\s+TOKENS\s+MODEL\s+UPDATED/m);
    assert.match(table.stdout, /^agent:main:main\s+main\s+cli\s+5\s+120\s+openai\/gpt-test\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/m);
    assert.match(table.stdout, /^agent:main:telegram:dm:42\s+dm\s+telegram\s+1\s+0\s+-\s/m);
  });

  it("show: the entry and the transcript rendered readably; --limit and --json", async () => {
    const r = await runCli(["sessions", "show", MAIN], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^session  agent:main:main$/m);
    assert.match(r.stdout, /^tokens   120 \(in 100, out 20/m);
    assert.match(r.stdout, /^#0 \S+ run started r1$/m);
    assert.match(r.stdout, /^#1 \S+ user: please read the notes file for me$/m, "whitespace flattened");
    assert.match(r.stdout, /^#2 \S+ assistant: Reading it\.$/m);
    assert.match(r.stdout, /^ {4}→ read\(\{"path":"notes\.md"\}\)$/m);
    assert.match(r.stdout, /^#3 \S+ tool_result read: # Notes buy milk$/m);
    assert.match(r.stdout, /^#4 \S+ assistant: Your notes say: buy milk\.$/m);

    const limited = await runCli(["sessions", "show", MAIN, "--limit", "2"], env);
    assert.match(limited.stdout, /newest 2 of 5 records:/);
    assert.doesNotMatch(limited.stdout, /user: please/);

    const json = JSON.parse((await runCli(["sessions", "show", MAIN, "--json"], env)).stdout) as { session: SessionEntry; records: TranscriptRecord[] };
    assert.equal(json.session.sessionKey, MAIN);
    assert.deepEqual(json.records.map((x) => x.id), ["r1:started", "r1:u", "r1:a0", "r1:t0", "r1:a1"]);
  });

  it("reset: a fresh transcript, the previous id reported and its records kept", async () => {
    const before = (await bus.call("sessions", "get", { sessionKey: MAIN })).session!;
    const r = await runCli(["sessions", "reset", MAIN], env);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.includes(`(the previous one, ${before.sessionId}, stays on disk)`), r.stdout);
    const history = await bus.call("sessions", "history", { sessionKey: MAIN });
    assert.deepEqual(history.records, []);
    assert.notEqual(history.session!.sessionId, before.sessionId);
    assert.match(r.stdout, new RegExp(`new transcript ${history.session!.sessionId}`));
    assert.deepEqual((await bus.call("sessions", "run", { sessionKey: MAIN, runId: "r1" })).records.length, 5, "the old transcript is still on disk");

    const json = await runCli(["sessions", "reset", MAIN, "--json"], env);
    assert.equal(json.code, 0, json.stderr);
    assert.equal((JSON.parse(json.stdout) as { previousSessionId: string }).previousSessionId, history.session!.sessionId);
  });

  it("delete: refuses without --yes when not on a terminal, deletes with --yes", async () => {
    const refused = await runCli(["sessions", "delete", DM], env);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /refusing to delete agent:main:telegram:dm:42 without confirmation: not on a terminal\. Add --yes/);
    assert.ok((await bus.call("sessions", "get", { sessionKey: DM })).session, "still there");

    const r = await runCli(["sessions", "delete", DM, "--yes"], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^deleted agent:main:telegram:dm:42$/m);
    assert.equal((await bus.call("sessions", "get", { sessionKey: DM })).session, null);
  });

  it("unknown keys: exit 1 with a message, for show, reset and delete", async () => {
    for (const sub of ["show", "reset", "delete"]) {
      const r = await runCli(["sessions", sub, "agent:main:nope", ...(sub === "delete" ? ["--yes"] : [])], env);
      assert.equal(r.code, 1, `${sub}: ${r.stderr}`);
      assert.match(r.stderr, new RegExp(`lurkbot sessions: no session agent:main:nope`), sub);
      assert.equal(r.stdout, "");
    }
  });

  it("usage errors: exit 64 with the command's help", async () => {
    const r = await runCli(["sessions", "frob"], env);
    assert.equal(r.code, 64);
    assert.match(r.stderr, /unknown subcommand "frob"/);
    assert.match(r.stderr, /usage: lurkbot sessions list\|show\|reset\|delete\|export \[KEY\]/);
  });

  it("bus down: exit 2 and how to start it", async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    const r = await runCli(["sessions", "list"], { ...env, LURKBOT_NATS_URL: url });
    assert.equal(r.code, 2, r.stderr);
    assert.ok(r.stderr.includes(`cannot reach NATS at ${url} — is LurkBot running?`), r.stderr);
    assert.equal(r.stdout, "");
  });
});
