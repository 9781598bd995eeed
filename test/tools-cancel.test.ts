/**
 * Cancelling in-flight tool calls over a real bus: an exec `sleep` runs in the tools actor (a
 * process, bubblewrap when present); the child is found by its unique argument in /proc.
 * - `lurk.run.ctl.<runId>` abort (what the router sends for /stop): the call answers ABORTED
 *   ("cancelled") and the child is gone within seconds;
 * - `lurk.tools.cancel` naming one toolCallId stops that call only; the run's terminal event
 *   (`lurk.run.evt.<runId>.error`, e.g. the runner's own run timeout) stops the rest;
 * - the agent-runner's ToolsClient publishes `lurk.tools.cancel` when it gives up on a call;
 * - a call waiting for a human approval is cancelled too (the approval stays pending, nothing runs);
 * - a whole system: the model calls exec `sleep`, the user sends /stop, the child is gone.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { envelope, subjects, toolCallReply } from "../shared/contract/index.js";
import { ToolsClient } from "../services/agent-runner/tools-client.js";
import type { BusClient } from "../shared/runtime/client.js";
import { createLogger } from "../shared/runtime/logger.js";
import { waitFor } from "./harness/actors.js";
import { ApprovalRig } from "./harness/approval-rig.js";
import { CliClient, TestSystem } from "./harness/system.js";
import { pendingApproval, textOf } from "./harness/tools-actor.js";

const BWRAP = "/usr/bin/bwrap";
const s = subjects();

/** pids whose command line is exactly `sleep <seconds>` */
function sleepers(seconds: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8") === `sleep\0${seconds}\0`) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}
const running = (seconds: string) => waitFor(() => (sleepers(seconds).length > 0 ? sleepers(seconds) : null), 15_000, `sleep ${seconds} running`);
const gone = (seconds: string) => waitFor(() => sleepers(seconds).length === 0, 5_000, `sleep ${seconds} gone`);

describe("tool call cancellation over the bus", () => {
  const rig = new ApprovalRig();
  let runner: NatsConnection;
  let router: NatsConnection;
  let bus: BusClient;
  let cli: BusClient;
  let ws: string;

  const call = (runId: string, toolCallId: string, tool: string, args: Record<string, unknown>) => bus.callSubject(`lurk.tools.call.${tool}`, "lurk.tools.call.v1", {
    toolCallId, runId, sessionKey: "agent:main:main", agentId: "main", tool, args,
  }, toolCallReply, { timeoutMs: 60_000 });

  before(async () => {
    await rig.start({
      tools: { timeoutMs: 60_000, requireApproval: ["write"], exec: existsSync(BWRAP) ? {} : { allowUnsandboxed: true } },
    });
    router = await rig.connect("router");
    ({ runnerNc: runner, runnerBus: bus, cli, ws } = rig);
  });
  after(() => rig.stop());

  it("a run abort (what /stop sends) cancels its exec call and kills the child", async () => {
    const started = Date.now();
    const reply = call("run-abort-1", "c-abort-1", "exec", { command: "sleep 41.25" });
    await running("41.25");
    router.publish(s.runControl("run-abort-1"), JSON.stringify(envelope("lurk.run.control.v1", { runId: "run-abort-1", action: "abort", reason: "/stop" })));
    const answer = await reply;
    assert.equal(answer.isError, true);
    assert.equal(answer.errorCode, "ABORTED", textOf(answer));
    assert.match(textOf(answer), /cancelled/);
    await gone("41.25");
    assert.ok(Date.now() - started < 30_000, "well before the 60 s deadline");
  });

  it("lurk.tools.cancel stops only the named call; the run's end stops the rest", async () => {
    const a = call("run-cancel-2", "c-two-a", "exec", { command: "sleep 42.25" });
    const b = call("run-cancel-2", "c-two-b", "exec", { command: "sleep 43.25" });
    await running("42.25");
    await running("43.25");
    runner.publish(s.toolsCancel, JSON.stringify(envelope("lurk.tools.cancel.v1", { runId: "run-cancel-2", toolCallId: "c-two-a", reason: "gave up" })));
    const first = await a;
    assert.equal(first.errorCode, "ABORTED", textOf(first));
    assert.match(textOf(first), /gave up/);
    await gone("42.25");
    assert.equal(sleepers("43.25").length, 1, "the other call still runs");
    // a malformed cancel is ignored; the actor keeps serving
    runner.publish(s.toolsCancel, "{not json");
    runner.publish(s.runEvent("run-cancel-2", "error"), JSON.stringify({ anything: true }));
    const second = await b;
    assert.equal(second.errorCode, "ABORTED", textOf(second));
    await gone("43.25");
  });

  it("the agent-runner's ToolsClient gives up at its timeout and cancels the call", async () => {
    const client = new ToolsClient(runner, bus, s, createLogger("test", "silent"), 1_500);
    try {
      const result = await client.call({ runId: "run-timeout-4", sessionKey: "agent:main:main", agentId: "main", sessionType: "main" }, "c-timeout-4", "exec", { command: "sleep 45.25" });
      assert.equal(result.isError, true);
      assert.match(result.content.map((b) => (b.type === "text" ? b.text : "")).join(""), /did not answer within 1500 ms/);
      await gone("45.25");
    } finally {
      client.close();
    }
  });

  it("a call waiting for an approval is cancelled by the run's abort; nothing runs", async () => {
    const reply = call("run-cancel-3", "c-wait-3", "write", { path: "never.txt", content: "x" });
    const pending = await pendingApproval(cli, "c-wait-3");
    router.publish(s.runControl("run-cancel-3"), JSON.stringify(envelope("lurk.run.control.v1", { runId: "run-cancel-3", action: "abort" })));
    const answer = await reply;
    assert.equal(answer.errorCode, "ABORTED", textOf(answer));
    // approving it now runs nothing: nobody waits for it any more
    await cli.call("approvals", "decide", { approvalId: pending.approvalId, decision: "approve", decidedBy: "cli:test" });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(existsSync(join(ws, "never.txt")), false);
  });
});

describe("a whole run: /stop kills the exec child of the running tool call", () => {
  let system: TestSystem;
  let cli: CliClient;

  before(async () => {
    // info logs: the test reads the tools actor's "tool calls cancelled" line
    system = await TestSystem.start({ env: { LURKBOT_LOG_LEVEL: "info" }, config: { tools: { timeoutMs: 60_000, exec: existsSync(BWRAP) ? {} : { allowUnsandboxed: true } } } });
    cli = await CliClient.connect(system.nats, "cancel-run");
  });
  after(async () => {
    await cli?.close();
    await system?.stop();
  });

  it("the child is gone within seconds and the tools actor cancelled the call", async () => {
    system.fake.enqueue({ kind: "tool_calls", calls: [{ name: "exec", arguments: { command: "sleep 44.25" } }] });
    const { runId } = await cli.publish("run a long command");
    await running("44.25");
    await cli.publish("/stop");
    await gone("44.25");
    const tools = system.actors.get("tools")!;
    await waitFor(() => tools.output().includes("tool calls cancelled") && tools.output().includes(runId), 5_000, "the tools actor's cancel log line").catch((e) => { throw new Error(`${e}: ${runId}\n${tools.output().split("\n").filter((l) => /cancel/.test(l)).join("\n")}`); });
  });
});
