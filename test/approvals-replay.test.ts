/**
 * Approval tokens are single-use across tools instances: the gate redeems a token with the
 * approvals actor (`lurk.approvals.redeem`, which marks the approval used in its LMDB) before
 * the call runs. A token used on one tools instance is refused on another one that never saw
 * it; redeeming twice is CONFLICT; the mark survives a restart of the approvals actor.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { toolCallReply, type ToolCallReply } from "../shared/contract/index.js";
import { argsHash } from "../shared/runtime/approval-token.js";
import type { BusClient } from "../shared/runtime/client.js";
import type { ActorProcess } from "./harness/actors.js";
import { ApprovalRig } from "./harness/approval-rig.js";
import { pendingApproval, textOf } from "./harness/tools-actor.js";

const BWRAP = "/usr/bin/bwrap";

describe("approval tokens are single-use across tools instances", () => {
  const rig = new ApprovalRig();
  let approvals: ActorProcess;
  let first: ActorProcess;
  let runner: BusClient;
  let cli: BusClient;
  let ws: string;

  const call = (toolCallId: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<ToolCallReply> =>
    runner.callSubject("lurk.tools.call.exec", "lurk.tools.call.v1", {
      toolCallId, runId: "run-replay", sessionKey: "agent:main:main", agentId: "main", tool: "exec", args, ...extra,
    }, toolCallReply, { timeoutMs: 40_000 });
  const ran = () => (existsSync(join(ws, "ran.log")) ? readFileSync(join(ws, "ran.log"), "utf8").split("\n").filter(Boolean).length : 0);

  before(async () => {
    await rig.start({
      tools: { timeoutMs: 20_000, exec: { ask: "always", ...(existsSync(BWRAP) ? {} : { allowUnsandboxed: true }) } },
    }); // with the streams and buckets: the approvals actor keeps its lease and records in KV
    ({ approvals, tools: first, runnerBus: runner, cli, ws } = rig);
  });
  after(() => rig.stop());

  it("a token used on one instance is refused on another", async () => {
    const args = { command: "echo once >> ran.log" };
    const pending = call("replay-1", args);
    const record = await pendingApproval(cli, "replay-1");
    const { token } = await cli.call("approvals", "decide", { approvalId: record.approvalId, decision: "approve", decidedBy: "cli:test" });
    assert.ok(token);
    const reply = await pending;
    assert.equal(reply.isError, false, textOf(reply));
    assert.equal(ran(), 1);
    const used = (await cli.call("approvals", "get", { approvalId: record.approvalId })).approval;
    assert.ok(used.usedAt !== undefined, "the approvals actor marked it used");

    // a second tools instance that never saw the token; the first one goes away
    await rig.startActor("tools");
    await first.stop();
    const replayed = await call("replay-1", args, { approvalToken: token });
    assert.equal(replayed.isError, true);
    assert.equal(replayed.errorCode, "TOOL_DENIED");
    assert.match(textOf(replayed), /used already/);
    assert.equal(ran(), 1, "the replay did not run");

    // the mark is on disk: it holds after the approvals actor restarts
    await approvals.kill();
    approvals = await rig.startActor("approvals");
    const again = await call("replay-1", args, { approvalToken: token });
    assert.equal(again.errorCode, "TOOL_DENIED");
    assert.equal(ran(), 1);
  });

  it("a token decided but not yet used runs once, on whichever instance gets it", async () => {
    const args = { command: "echo direct >> ran.log" };
    const pending = call("replay-2", args);
    const record = await pendingApproval(cli, "replay-2");
    const { token } = await cli.call("approvals", "decide", { approvalId: record.approvalId, decision: "approve", decidedBy: "cli:test" });
    assert.equal((await pending).isError, false);
    assert.equal(ran(), 2);
    // two concurrent replays: neither runs
    const replies = await Promise.all([call("replay-2", args, { approvalToken: token }), call("replay-2", args, { approvalToken: token })]);
    for (const r of replies) assert.equal(r.errorCode, "TOOL_DENIED", textOf(r));
    assert.equal(ran(), 2);
  });

  it("redeem: once, for the approved call only", async () => {
    const hash = argsHash({ command: "ls /" });
    const { approval } = await cli.call("approvals", "request", { toolCallId: "redeem-1", tool: "exec", argsHash: hash, sessionKey: "agent:main:main", agentId: "main" });
    await assert.rejects(cli.call("approvals", "redeem", { approvalId: approval.approvalId, toolCallId: "redeem-1", argsHash: hash }), /not an approval of this tool call/);
    await cli.call("approvals", "decide", { approvalId: approval.approvalId, decision: "approve", decidedBy: "cli:test" });
    await assert.rejects(cli.call("approvals", "redeem", { approvalId: approval.approvalId, toolCallId: "other", argsHash: hash }), /not an approval of this tool call/);
    const redeemed = await cli.call("approvals", "redeem", { approvalId: approval.approvalId, toolCallId: "redeem-1", argsHash: hash });
    assert.ok(redeemed.approval.usedAt);
    assert.equal(redeemed.token, undefined);
    await assert.rejects(cli.call("approvals", "redeem", { approvalId: approval.approvalId, toolCallId: "redeem-1", argsHash: hash }), /used already/);
    await assert.rejects(cli.call("approvals", "redeem", { approvalId: "apr-nope", toolCallId: "redeem-1", argsHash: hash }), /no approval/);
  });
});
