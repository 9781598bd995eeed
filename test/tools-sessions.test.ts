/**
 * The session and messaging tools over a real bus: the sessions and tools actors as processes
 * on a real nats-server with JetStream. sessions_list / sessions_history / session_status read
 * the sessions actor; agents_list the config; sessions_send puts a system event on
 * `lurk.inject.<agentId>` (INBOUND, deduplicated by the tool call id); `message` puts a notice
 * on `lurk.out.<channel>.<conversation>` (OUTBOUND), by default in the run's origin or the
 * session's last origin. The policy groups: the messaging profile gets message and the
 * session tools but not exec; subagent sessions lose the session tools. And `read` opens the
 * skill folders outside the workspace read-only, while write/edit stay in the workspace.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  outboundMessageSchema, STREAMS, subjects, systemInjectSchema, toolCallReply, toolsListReply, type ToolCallReply,
} from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { BUNDLED_SKILLS_ROOT } from "../services/tools/skill-roots.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";
import { textOf } from "./harness/tools-actor.js";

const MAIN = "agent:main:main";
const DM = "agent:main:dm:alice";
const origin = { channel: "cli", conversation: "conv-1", messageIds: ["in-1"] };

describe("session and messaging tools", () => {
  let nats: TestNats;
  let sessions: ActorProcess;
  let tools: ActorProcess;
  let runnerNc: NatsConnection;
  let adminNc: NatsConnection;
  let runner: BusClient;
  let ws: string;
  let n = 0;

  const call = (tool: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<ToolCallReply> =>
    runner.callSubject(`lurk.tools.call.${tool}`, "lurk.tools.call.v1", {
      toolCallId: `sess-${++n}`, runId: "run-sess", sessionKey: MAIN, agentId: "main", tool, args, ...extra,
    }, toolCallReply, { timeoutMs: 20_000 });
  const ok = async (tool: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
    const reply = await call(tool, args, extra);
    assert.equal(reply.isError, false, textOf(reply));
    return textOf(reply);
  };
  const lastOn = async (stream: string, subject: string) => {
    const jsm = await jetstreamManager(adminNc);
    return waitFor(() => jsm.streams.getMessage(stream, { last_by_subj: subject }).catch(() => null), 5_000, subject);
  };

  before(async () => {
    ws = realpathSync(mkdtempSync(join(tmpdir(), "lurk-sess-ws-")));
    nats = await TestNats.start();
    writeFileSync(join(nats.home, "config.json"), JSON.stringify({
      model: "openai/gpt-4o-mini",
      agents: [
        { id: "main", default: true, toolProfile: "full", name: "Main" },
        { id: "helper", toolProfile: "messaging", model: "openai/gpt-4o" },
      ],
    }));
    sessions = await startActorProcess("sessions", nats);
    tools = await startActorProcess("tools", nats, { LURKBOT_WORKSPACE: ws });
    runnerNc = await nats.connect("agent-runner");
    adminNc = await nats.connect("admin");
    runner = new BusClient(runnerNc);
    // two sessions of main with a little history, one of helper
    await runner.call("sessions", "ensure", { sessionKey: MAIN, agentId: "main", sessionType: "main", channel: "cli", origin: { ...origin, conversation: "last-conv" } });
    await runner.call("sessions", "ensure", { sessionKey: DM, agentId: "main", sessionType: "dm", label: "alice chat" });
    await runner.call("sessions", "ensure", { sessionKey: "agent:helper:main", agentId: "helper", sessionType: "main" });
    await runner.call("sessions", "append", {
      sessionKey: MAIN,
      records: [
        { id: "r1", ts: Date.now(), runId: "run-0", kind: "message", message: { role: "user", content: [{ type: "text", text: "what is the capital of France?" }] } },
        {
          id: "r2", ts: Date.now(), runId: "run-0", kind: "message",
          message: { role: "assistant", content: [{ type: "text", text: "Paris." }], provider: "openai", model: "gpt-4o-mini", stopReason: "end_turn" },
        },
      ],
      usage: { usage: { input: 120, output: 30 }, model: "gpt-4o-mini", provider: "openai" },
    });
  });
  after(async () => {
    await runnerNc?.close();
    await adminNc?.close();
    await tools?.stop();
    await sessions?.stop();
    await nats?.stop();
    rmSync(ws, { recursive: true, force: true });
  });

  it("sessions_list lists the agent's sessions, the current one marked", async () => {
    const text = await ok("sessions_list", {});
    assert.match(text, /^\* agent:main:main\s+type main/m);
    assert.match(text, /^ {2}agent:main:dm:alice\s+type dm.*label "alice chat"/m);
    assert.doesNotMatch(text, /agent:helper/);
    assert.match(await ok("sessions_list", { agentId: "helper" }), /agent:helper:main/);
    assert.doesNotMatch(await ok("sessions_list", { sessionType: "dm" }), /agent:main:main/);
    assert.equal((await call("sessions_list", { agentId: "nobody" })).errorCode, "NOT_FOUND");
  });

  it("sessions_history shows the messages, oldest first", async () => {
    const text = await ok("sessions_history", { sessionKey: MAIN });
    assert.match(text, /user: what is the capital of France\?[\s\S]*assistant: Paris\./);
    assert.equal((await call("sessions_history", { sessionKey: "agent:main:dm:nobody" })).errorCode, "NOT_FOUND");
  });

  it("session_status: model, tokens, records", async () => {
    const text = await ok("session_status", {});
    assert.match(text, /session agent:main:main \(main\), agent main/);
    assert.match(text, /model: gpt-4o-mini \(provider openai\)/);
    assert.match(text, /tokens: 150 \(input 120, output 30/);
    assert.match(text, /records: 2/);
  });

  it("agents_list: the configured agents", async () => {
    const text = await ok("agents_list", {});
    assert.match(text, /^\* main\s+"Main"\s+model openai\/gpt-4o-mini\s+profile full\s+default$/m);
    assert.match(text, /^ {2}helper\s+model openai\/gpt-4o\s+profile messaging$/m);
  });

  it("sessions_send injects a system event into the other session, once per tool call", async () => {
    const text = await ok("sessions_send", { sessionKey: "agent:helper:main", message: "please check the build" }, { toolCallId: "send-call-1" });
    assert.match(text, /^sent to agent:helper:main/);
    const msg = await lastOn(STREAMS.inbound, subjects().inject("helper"));
    const inject = systemInjectSchema.parse(msg.json());
    assert.equal(inject.source, "system");
    assert.equal(inject.sessionKey, "agent:helper:main");
    assert.equal(inject.wake, "now");
    assert.match(inject.text, /Message from session agent:main:main:\nplease check the build/);
    assert.equal(msg.header?.get("Nats-Msg-Id"), "send-send-call-1");
    // a repeated call (a resumed run) does not send twice
    assert.match(await ok("sessions_send", { sessionKey: "agent:helper:main", message: "please check the build" }, { toolCallId: "send-call-1" }), /^already sent/);
    assert.equal((await call("sessions_send", { sessionKey: MAIN, message: "x" })).errorCode, "TOOL_INVALID_ARGS");
    assert.equal((await call("sessions_send", { sessionKey: "agent:helper:dm:nobody", message: "x" })).errorCode, "NOT_FOUND");
  });

  it("message goes to the run's origin, else the session's last origin, else where it is told", async () => {
    assert.match(await ok("message", { text: "working on it" }, { toolCallId: "msg-call-1", origin }), /^sent to cli\/conv-1/);
    const first = await lastOn(STREAMS.outbound, subjects().outbound("cli", "conv-1"));
    const out = outboundMessageSchema.parse(first.json());
    assert.equal(out.kind, "notice");
    assert.equal(out.text, "working on it");
    assert.equal(out.sessionKey, MAIN);
    assert.equal(first.header?.get("Nats-Msg-Id"), "msg-msg-call-1");
    assert.match(await ok("message", { text: "working on it" }, { toolCallId: "msg-call-1", origin }), /^already sent/);

    assert.match(await ok("message", { text: "to the last origin", kind: "reply" }), /^sent to cli\/last-conv/);
    const last = outboundMessageSchema.parse((await lastOn(STREAMS.outbound, subjects().outbound("cli", "last-conv"))).json());
    assert.equal(last.kind, "reply");

    assert.match(await ok("message", { text: "elsewhere", channel: "slack", conversation: "C123" }), /^sent to slack\/C123/);
    assert.equal(outboundMessageSchema.parse((await lastOn(STREAMS.outbound, subjects().outbound("slack", "C123"))).json()).text, "elsewhere");

    const half = await call("message", { text: "x", channel: "slack" });
    assert.equal(half.errorCode, "TOOL_INVALID_ARGS");
    const nowhere = await call("message", { text: "x" }, { sessionKey: DM });
    assert.equal(nowhere.errorCode, "NOT_FOUND");
  });

  it("policy: the messaging profile has message and the session tools, not exec; subagents lose the session tools", async () => {
    const list = async (agentId: string, sessionKey: string) => {
      const reply = toolsListReply.parse(safeJson(await runnerNc.request("lurk.tools.list", JSON.stringify({ type: "lurk.tools.list.v1", id: `l-${++n}`, ts: Date.now(), agentId, sessionKey }))));
      return reply.tools.map((t) => t.name);
    };
    const helper = await list("helper", "agent:helper:main");
    for (const name of ["message", "sessions_list", "sessions_history", "sessions_send", "session_status"]) assert.ok(helper.includes(name), name);
    for (const name of ["exec", "process", "agents_list", "read"]) assert.ok(!helper.includes(name), name);
    const sub = await list("main", "agent:main:subagent:abc");
    for (const name of ["sessions_list", "sessions_history", "sessions_send", "session_status", "agents_list"]) assert.ok(!sub.includes(name), name);
    assert.ok(sub.includes("process") && sub.includes("message"));
    const group = await list("main", "agent:main:telegram:group:g1");
    assert.ok(!group.includes("process") && !group.includes("exec"));
    // and at call time
    const denied = await call("sessions_list", {}, { agentId: "main", sessionKey: "agent:main:subagent:abc", sessionType: "subagent" });
    assert.equal(denied.errorCode, "TOOL_DENIED");
  });

  describe("read opens the skill folders outside the workspace, read-only", () => {
    let skill: string;
    before(() => {
      const dir = join(nats.home, "skills", "demo");
      mkdirSync(join(dir, "references"), { recursive: true });
      skill = join(dir, "SKILL.md");
      writeFileSync(skill, "---\nname: demo\ndescription: a demo skill\n---\nStep one.\n");
      writeFileSync(join(dir, "references", "more.md"), "more details\n");
      symlinkSync("/etc/hostname", join(dir, "escape.md"));
      writeFileSync(join(nats.home, "secret.txt"), "not for the model\n");
    });

    it("reads a user skill's SKILL.md and its folder by absolute path", async () => {
      assert.match(await ok("read", { path: skill }), /1\t---\n[\s\S]*Step one\./);
      assert.match(await ok("read", { path: join(nats.home, "skills", "demo", "references", "more.md") }), /more details/);
    });

    it("reads a bundled skill", async () => {
      const bundled = join(BUNDLED_SKILLS_ROOT, "lurkbot-self-help", "SKILL.md");
      const expected = readFileSync(bundled, "utf8").split("\n")[0]!;
      assert.ok((await ok("read", { path: bundled })).includes(expected));
    });

    it("refuses what is not under a skill root, symlinks out of it, and writes", async () => {
      for (const path of [join(nats.home, "secret.txt"), join(nats.home, "skills", "..", "secret.txt"), join(nats.home, "skills", "demo", "escape.md")]) {
        const reply = await call("read", { path });
        assert.equal(reply.errorCode, "PATH_ESCAPE", `${path}: ${textOf(reply)}`);
      }
      const write = await call("write", { path: skill, content: "hijacked" });
      assert.equal(write.errorCode, "PATH_ESCAPE");
      const edit = await call("edit", { path: skill, oldText: "Step one.", newText: "Step two." });
      assert.equal(edit.isError, true);
      assert.match(readFileSync(skill, "utf8"), /Step one\./);
    });
  });
});

function safeJson(msg: { data: Uint8Array }): unknown {
  return JSON.parse(Buffer.from(msg.data).toString("utf8"));
}
