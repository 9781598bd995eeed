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
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { subjects } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { createLogger } from "../shared/runtime/logger.js";
import { ToolsClient } from "../services/agent-runner/tools-client.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";

const S = subjects();
const log = createLogger("test", "silent");
const textOf = (r: { content: Array<{ type: string; text?: string }> }) => r.content.map((b) => b.text ?? "").join("");

describe("pending approvals across restarts of the tools actor and the agent-runner", () => {
  let nats: TestNats;
  let approvals: ActorProcess;
  let tools: ActorProcess;
  let cliNc: NatsConnection;
  let cli: BusClient;
  let ws: string;
  const conns: NatsConnection[] = [];

  const runnerClient = async () => {
    const nc = await nats.connect("agent-runner");
    conns.push(nc);
    return { nc, tools: new ToolsClient(nc, new BusClient(nc), S, log, 120_000) };
  };
  const ctx = (runId: string) => ({ runId, sessionKey: "agent:main:main", agentId: "main", sessionType: "main" });
  const approvalsOf = async (toolCallId: string) => (await cli.call("approvals", "list", {})).approvals.filter((a) => a.toolCallId === toolCallId);

  before(async () => {
    ws = realpathSync(mkdtempSync(join(tmpdir(), "lurk-restart-ws-")));
    nats = await TestNats.start();
    writeFileSync(join(nats.home, "config.json"), JSON.stringify({ tools: { requireApproval: ["write"] }, approvals: { timeoutMs: 90_000 } }));
    approvals = await startActorProcess("approvals", nats);
    tools = await startActorProcess("tools", nats, { LURKBOT_WORKSPACE: ws });
    cliNc = await nats.connect("cli");
    cli = new BusClient(cliNc);
  });
  after(async () => {
    for (const nc of conns) await nc.close().catch(() => undefined);
    await cliNc?.close();
    await tools?.stop();
    await approvals?.stop();
    await nats?.stop();
    rmSync(ws, { recursive: true, force: true });
  });

  it("the tools actor restarts while a call waits; the approval still reaches the run", async () => {
    const runner = await runnerClient();
    const pending = runner.tools.call(ctx("run-rs-1"), "rs-call-1", "write", { path: "after-tools-restart.txt", content: "once" });
    const [record] = await waitFor(async () => {
      const list = await approvalsOf("rs-call-1");
      return list.length > 0 ? list : null;
    }, 15_000, "the pending approval");
    await tools.kill();
    await cli.call("approvals", "decide", { approvalId: record!.approvalId, decision: "approve", decidedBy: "cli:test" });
    tools = await startActorProcess("tools", nats, { LURKBOT_WORKSPACE: ws });
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
