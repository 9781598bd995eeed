/**
 * `lurkbot sessions export` as a real process against the real sessions actor (real LMDB, real
 * nats-server): a session with an earlier transcript (ended by a reset) and a current one of
 * more than one page, whose records are large enough that a page does not fit one bus reply
 * (the `truncated` path). JSON Lines round-trips to the stored records; Markdown holds the turns.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import type { AssistantMessage, TranscriptRecord } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { readHistory } from "../shared/runtime/session-history.js";
import { EXPORT_PAGE } from "../services/cli/sessions-export.js";
import { runCli } from "./harness/cli.js";
import { startActorProcess, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";

const KEY = "agent:main:telegram:dm:77";
const BIG = 1_300; // records of the current transcript: three windows of EXPORT_PAGE
const FILLER = "x".repeat(2_500); // 500 such records are more than one bus message (1 MB)

const user = (id: string, runId: string, text: string, ts = Date.now()): TranscriptRecord => ({ id, ts, runId, kind: "message", message: { role: "user", content: [{ type: "text", text }] } });
const assistant = (id: string, runId: string, content: AssistantMessage["content"], stopReason: AssistantMessage["stopReason"] = "end_turn"): TranscriptRecord => ({
  id, ts: Date.now(), runId, kind: "message", message: { role: "assistant", content, provider: "openai", model: "gpt-test", stopReason },
});

describe("lurkbot sessions export (real sessions actor)", () => {
  let nats: TestNats;
  let actor: ActorProcess;
  let nc: NatsConnection;
  let bus: BusClient;
  let env: Record<string, string>;
  let dir: string;
  let oldId: string;
  let stored: TranscriptRecord[];

  before(async () => {
    nats = await TestNats.start();
    actor = await startActorProcess("sessions", nats);
    env = nats.env(nats.passwordEnv("cli"));
    dir = mkdtempSync(join(tmpdir(), "lurk-export-"));
    nc = await nats.connect("agent-runner");
    bus = new BusClient(nc);
    const begun = await bus.call("sessions", "begin", {
      sessionKey: KEY, agentId: "main", sessionType: "dm", runId: "r1", historyLimit: 10, channel: "telegram",
      records: [
        { id: "r1:started", ts: Date.now(), runId: "r1", kind: "run_marker", runStatus: "started" },
        user("r1:u", "r1", "please read my notes"),
        assistant("r1:a0", "r1", [{ type: "text", text: "Reading them." }, { type: "tool_call", id: "c1", name: "read", args: { path: "notes.md" } }], "tool_use"),
        { id: "r1:t0", ts: Date.now(), runId: "r1", kind: "message", message: { role: "tool_result", toolCallId: "c1", toolName: "read", content: [{ type: "text", text: "# Notes\nbuy milk" }], isError: false } },
        assistant("r1:a1", "r1", [{ type: "text", text: "Your notes say: **buy milk**." }]),
        { id: "r1:done", ts: Date.now(), runId: "r1", kind: "run_marker", runStatus: "done" },
      ],
    });
    oldId = begun.session.sessionId;
    await bus.call("sessions", "reset", { sessionKey: KEY, reason: "test" });
    await bus.call("sessions", "ensure", { sessionKey: KEY, agentId: "main", sessionType: "dm" });
    const records = Array.from({ length: BIG }, (_, i) => i % 2 === 0
      ? user(`r2:u${i}`, "r2", `question ${i} ${FILLER}`)
      : assistant(`r2:a${i}`, "r2", [{ type: "text", text: `answer ${i} ${FILLER}` }]));
    for (let i = 0; i < records.length; i += 150) await bus.call("sessions", "append", { sessionKey: KEY, records: records.slice(i, i + 150) });
    const current = (await bus.call("sessions", "get", { sessionKey: KEY })).session!;
    const old = await readHistory(bus, { sessionKey: KEY, sessionId: oldId, limit: 10_000 });
    const now = await readHistory(bus, { sessionKey: KEY, sessionId: current.sessionId, limit: 10_000 });
    assert.equal(now.records.length, BIG);
    stored = [...old.records, ...now.records];
  });
  after(async () => {
    await nc?.close();
    await actor?.stop();
    await nats?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("sessions.transcripts lists the earlier transcript first, then the current one", async () => {
    const { transcripts } = await bus.call("sessions", "transcripts", { sessionKey: KEY });
    assert.deepEqual(transcripts.map((t) => [t.sessionId === oldId, t.records, t.current]), [[true, 6, false], [false, BIG, true]]);
    assert.ok(transcripts[0]!.firstTs! <= transcripts[1]!.firstTs!);
    assert.deepEqual((await bus.call("sessions", "transcripts", { sessionKey: "agent:main:nobody" })), { session: null, transcripts: [] });
  });

  it("JSON Lines on stdout: every record of every transcript, as stored, in order", async () => {
    assert.ok(BIG > EXPORT_PAGE * 2, "more than two windows");
    const window = await bus.call("sessions", "history", { sessionKey: KEY, limit: EXPORT_PAGE });
    assert.equal(window.truncated, true, "one window does not fit one bus reply: the export asks again for its older part");
    const r = await runCli(["sessions", "export", KEY], env, { timeoutMs: 60_000 });
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split("\n");
    assert.equal(lines.pop(), "", "ends with a newline");
    assert.deepEqual(lines.map((l) => JSON.parse(l) as TranscriptRecord), stored);
    assert.match(r.stderr, /^exported 6 of 1306 records\nexported 506 of 1306 records\nexported 1006 of 1306 records\n/m, "progress on stderr");
    assert.match(r.stderr, /^exported 1306 of 1306 records$/m);
  });

  it("--out FILE: the same records in a file of mode 600; --session-id: one transcript", async () => {
    const file = join(dir, "export.jsonl");
    const r = await runCli(["sessions", "export", KEY, "--out", file], env, { timeoutMs: 60_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "");
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.deepEqual(readFileSync(file, "utf8").trimEnd().split("\n").map((l) => JSON.parse(l) as TranscriptRecord), stored);
    assert.match(r.stderr, new RegExp(`wrote 1306 records of ${KEY} \\(2 transcripts\\) to ${file} \\(mode 600\\)`));

    const one = await runCli(["sessions", "export", KEY, "--session-id", oldId], env);
    assert.equal(one.code, 0, one.stderr);
    assert.deepEqual(one.stdout.trimEnd().split("\n").map((l) => (JSON.parse(l) as TranscriptRecord).id), ["r1:started", "r1:u", "r1:a0", "r1:t0", "r1:a1", "r1:done"]);
    assert.equal(one.stderr, "", "no progress for a short export");
  });

  it("Markdown: the session, each transcript, user and assistant text, tool calls as short lines", async () => {
    const file = join(dir, "export.md");
    const r = await runCli(["sessions", "export", KEY, "--format", "md", "--out", file], env, { timeoutMs: 60_000 });
    assert.equal(r.code, 0, r.stderr);
    const md = readFileSync(file, "utf8");
    assert.match(md, /^# Session agent:main:telegram:dm:77\n\n- agent: main \(dm\), channel telegram\n/);
    assert.match(md, /^- transcripts: 2, 1306 records$/m);
    assert.match(md, new RegExp(`^## Transcript ${oldId}\\n\\n_6 records, \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC to .*; ended by a reset_$`, "m"));
    assert.match(md, /^## Transcript \S+ \(current\)$/m);
    assert.match(md, /^\*\*User\*\* · \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\n\nplease read my notes\n/m);
    assert.match(md, /^\*\*Assistant\*\* · .* UTC · gpt-test\n\nReading them\.\n\n- → `read` \{"path":"notes\.md"\}\n/m);
    assert.match(md, /^- ← `read`: # Notes buy milk$/m);
    assert.match(md, /^Your notes say: \*\*buy milk\*\*\.$/m);
    assert.match(md, /^question 1298 x+$/m, "the last window of the current transcript");
    assert.ok(md.indexOf("please read my notes") < md.indexOf("question 0 "), "the earlier transcript first");
    assert.doesNotMatch(md, /run started|run_marker/, "run markers of finished runs are left out");
  });

  it("bad input: an unknown session or transcript is exit 1 naming what exists; a bad --format exit 64", async () => {
    const none = await runCli(["sessions", "export", "agent:main:nobody"], env);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /no session agent:main:nobody/);
    const wrong = await runCli(["sessions", "export", KEY, "--session-id", "nope"], env);
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, new RegExp(`has no transcript nope; its transcripts: ${oldId}, `));
    const format = await runCli(["sessions", "export", KEY, "--format", "csv"], env);
    assert.equal(format.code, 64);
    assert.match(format.stderr, /--format must be jsonl or md, not "csv"/);
    const out = await runCli(["sessions", "export", KEY, "--out", join(dir, "no-such-dir", "x.jsonl")], env);
    assert.equal(out.code, 1);
    assert.match(out.stderr, /cannot write .*no-such-dir\/x\.jsonl: ENOENT/);
  });
});
