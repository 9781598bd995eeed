/**
 * A pending approval survives a restart of the tools actor and of the agent-runner, and the
 * decision still reaches the run (real nats-server, approvals and tools actors as processes,
 * the agent-runner's own ToolsClient on an agent-runner connection; `write` is marked by
 * tools.requireApproval):
 * - tools actor SIGKILLed while a call waits: its approval heartbeats stop, the ToolsClient
 *   sends the same call again to the restarted instance, which gets the same approval; the
 *   human approves it (here: while no tools actor held the call) and the write runs once;
 * - agent-runner gone while a call waits (its connection closed): the resumed run sends the
 *   same call (same toolCallId), the tools actor supersedes the orphaned one, the same approval
 *   is reused, and the approval reaches the new runner; the write runs once.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { outboundMessageSchema, subjects, toolProgressSchema, type OutboundMessage } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { createLogger } from "../shared/runtime/logger.js";
import { ToolsClient } from "../services/agent-runner/tools-client.js";
import { waitFor, type ActorProcess } from "./harness/actors.js";
import { ApprovalRig } from "./harness/approval-rig.js";
import { runCli } from "./harness/cli.js";
import { CliClient, TestSystem } from "./harness/system.js";
import { messageText } from "./fakes/openai-server.js";

const S = subjects();
const log = createLogger("test", "silent");
const textOf = (r: { content: Array<{ type: string; text?: string }> }) => r.content.map((b) => b.text ?? "").join("");

describe("pending approvals across restarts of the tools actor and the agent-runner", () => {
  const rig = new ApprovalRig();
  let tools: ActorProcess;
  let cliNc: NatsConnection;
  let cli: BusClient;
  let ws: string;

  const runnerClient = async () => {
    const nc = await rig.connect("agent-runner");
    return { nc, tools: new ToolsClient(nc, new BusClient(nc), S, log, 120_000) };
  };
  const ctx = (runId: string) => ({ runId, sessionKey: "agent:main:main", agentId: "main", sessionType: "main" });
  const approvalsOf = async (toolCallId: string) => (await cli.call("approvals", "list", {})).approvals.filter((a) => a.toolCallId === toolCallId);

  before(async () => {
    await rig.start({ tools: { requireApproval: ["write"] }, approvals: { timeoutMs: 90_000 } });
    ({ tools, cliNc, cli, ws } = rig);
  });
  after(() => rig.stop());

  it("the tools actor restarts while a call waits; the approval still reaches the run", async () => {
    const runner = await runnerClient();
    // the runner knows the call is held once it heard the tools instance's first heartbeat: the
    // kill comes after it (a kill between the approval record and that heartbeat is the known
    // window in which the run waits out its call timeout instead, see services/tools/README.md)
    let heartbeats = 0;
    const watcher = cliNc.subscribe(S.toolProgress("run-rs-1"), { callback: (_e, m) => void (toolProgressSchema.safeParse(m.json()).data?.waitingForApproval && heartbeats++) });
    await cliNc.flush();
    const pending = runner.tools.call(ctx("run-rs-1"), "rs-call-1", "write", { path: "after-tools-restart.txt", content: "once" });
    const [record] = await waitFor(async () => {
      const list = await approvalsOf("rs-call-1");
      return list.length > 0 && heartbeats > 0 ? list : null;
    }, 15_000, "the pending approval and its first heartbeat");
    watcher.unsubscribe();
    await tools.kill();
    await cli.call("approvals", "decide", { approvalId: record!.approvalId, decision: "approve", decidedBy: "cli:test" });
    tools = await rig.startActor("tools");
    const result = await pending;
    assert.equal(result.isError, false, textOf(result));
    assert.equal(readFileSync(join(ws, "after-tools-restart.txt"), "utf8"), "once");
    const records = await approvalsOf("rs-call-1");
    assert.equal(records.length, 1, "the re-sent call reused the approval");
    assert.ok(records[0]!.usedAt, "and redeemed it");
  });

  it("the agent-runner restarts while a call waits; the resumed run gets the approval", async () => {
    const first = await runnerClient();
    const orphan = first.tools.call(ctx("run-rs-2"), "rs-call-2", "write", { path: "after-runner-restart.txt", content: "once" });
    const [record] = await waitFor(async () => {
      const list = await approvalsOf("rs-call-2");
      return list.length > 0 ? list : null;
    }, 15_000, "the pending approval");
    // the runner dies: its request has nobody waiting any more
    first.tools.close();
    await first.nc.close();
    void orphan.catch(() => undefined);
    // the resumed run sends the same call again (the result was never checkpointed)
    const second = await runnerClient();
    const resumed = second.tools.call(ctx("run-rs-2"), "rs-call-2", "write", { path: "after-runner-restart.txt", content: "once" });
    await new Promise((r) => setTimeout(r, 500));
    assert.equal((await approvalsOf("rs-call-2")).length, 1, "the same approval, not a second one");
    await cli.call("approvals", "decide", { approvalId: record!.approvalId, decision: "approve", decidedBy: "cli:test" });
    const result = await resumed;
    assert.equal(result.isError, false, textOf(result));
    assert.equal(readFileSync(join(ws, "after-runner-restart.txt"), "utf8"), "once");
    second.tools.close();
  });
});

/**
 * The whole system (every actor a process, the fake OpenAI server): the model calls exec with a
 * command that needs an approval (`tools.exec.ask: "always"`); while the approval is pending the
 * agent-runner, the router, the sessions actor and the approvals actor are SIGKILLed and
 * restarted; then a human approves through `lurkbot approvals approve ID`. The command runs exactly once,
 * its output reaches the model, the user gets exactly one reply and the approval is listed as
 * approved (and redeemed).
 */
describe("a pending approval inside a real run survives restarts of the runner, the router, the sessions and the approvals actor", () => {
  const CONVERSATION = "approval-restarts";
  let system: TestSystem;
  let client: CliClient;
  let cliNc: NatsConnection;
  let cli: BusClient;
  const delivered: OutboundMessage[] = [];

  before(async () => {
    system = await TestSystem.start({
      // redeliver an unacknowledged run soon after its runner died
      env: { LURKBOT_ACK_WAIT_MS: "3000" },
      config: {
        tools: { timeoutMs: 5_000, exec: { ask: "always", ...(existsSync("/usr/bin/bwrap") ? {} : { allowUnsandboxed: true }) } },
        approvals: { timeoutMs: 90_000 },
      },
    });
    client = await CliClient.connect(system.nats, CONVERSATION);
    cliNc = await system.nats.connect("cli");
    cli = new BusClient(cliNc);
    cliNc.subscribe(subjects().outbound("cli", CONVERSATION), { callback: (_e, m) => void delivered.push(outboundMessageSchema.parse(m.json())) });
    await cliNc.flush();
  });
  after(async () => {
    await client?.close();
    await cliNc?.close();
    await system?.stop();
  });

  const restart = async (name: string) => {
    await system.actors.get(name)!.kill();
    await system.startActor(name);
  };

  it("the command runs once, its output reaches the model, one reply, the approval is decided", async () => {
    const marker = join(system.workspace, "marker.log");
    const markerLines = () => (existsSync(marker) ? readFileSync(marker, "utf8").split("\n").filter(Boolean) : []);
    system.fake.enqueue({ kind: "tool_calls", calls: [{ id: "call-restart-1", name: "exec", arguments: { command: "echo ok >> marker.log && echo marker-written" } }] });
    const { id: messageId } = await client.publish("append to the marker");
    const pending = await waitFor(async () => (await cli.call("approvals", "list", { status: "pending" })).approvals[0], 20_000, "the pending approval");
    assert.equal(pending.tool, "exec");
    assert.equal(pending.command, "echo ok >> marker.log && echo marker-written");

    await restart("agent-runner");
    await restart("router");
    await restart("sessions");
    await restart("approvals");
    // the redelivered run asks again: still the one pending approval, nothing ran
    await new Promise((r) => setTimeout(r, 5_000));
    const stillPending = (await cli.call("approvals", "list", {})).approvals;
    assert.equal(stillPending.length, 1, JSON.stringify(stillPending));
    assert.equal(stillPending[0]!.status, "pending");
    assert.deepEqual(markerLines(), [], "nothing ran before the approval");

    const env = system.nats.env(system.nats.passwordEnv("cli"));
    const approved = await runCli(["approvals", "approve", pending.approvalId], env);
    assert.equal(approved.code, 0, approved.stderr);
    assert.match(approved.stdout, /approved by cli:/);

    const reply = await waitFor(() => delivered.find((m) => m.kind === "reply"), 30_000, "the run's reply");
    assert.match(reply.text, /^tool said: marker-written/);
    assert.ok(reply.replyTo.includes(messageId));
    // a late duplicate (a second run, a redelivered reply) would show up within a few seconds.
    // Counted by id, as the OUTBOUND stream (what channels read) keeps them: this core
    // subscription also sees a reply re-published by a run redelivered under load after it
    // finished, which the stream drops as a duplicate.
    await new Promise((r) => setTimeout(r, 4_000));
    const replyIds = new Set(delivered.filter((m) => m.kind === "reply").map((m) => m.id));
    assert.equal(replyIds.size, 1, JSON.stringify(delivered.map((m) => [m.kind, m.id, m.text])));
    assert.deepEqual(markerLines(), ["ok"], "the command ran exactly once");

    const toolResults = system.fake.requests.flatMap((r) => r.body.messages.filter((m) => m.role === "tool"));
    assert.ok(toolResults.some((m) => m.tool_call_id === "call-restart-1" && /marker-written/.test(messageText(m))), "the tool's result reached the model");
    // the resumed run did not ask the model again for the call: the tool call, then its result
    assert.equal(system.fake.requests.length, 2, JSON.stringify(system.fake.requests.map((r) => r.body.messages.at(-1))));
    assert.equal(system.fake.requests[1]!.body.messages.at(-1)?.role, "tool");

    const listed = await runCli(["approvals", "list", "--json"], env);
    assert.equal(listed.code, 0, listed.stderr);
    const records = JSON.parse(listed.stdout) as Array<{ approvalId: string; status: string; usedAt?: number }>;
    assert.equal(records.length, 1);
    assert.equal(records[0]!.approvalId, pending.approvalId);
    assert.equal(records[0]!.status, "approved");
    assert.ok(records[0]!.usedAt, "the token was redeemed");
  });
});
