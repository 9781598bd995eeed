/**
 * Any tool can be marked as needing a human approval, over a real bus (nats-server, the
 * approvals and tools actors and two extension tool actors as processes):
 * - by config: `tools.requireApproval` (a built-in group, an extension tool by name) and
 *   `agents[].requireApproval` (web_fetch for agent main);
 * - by an extension tool's own definition (`needsApproval: true`, test/fixtures/ext-tools);
 * a marked call waits for a decision; approve -> it runs; deny -> the model gets TOOL_DENIED and
 * nothing ran. The approval notice goes to the run's origin (the request's `origin`), the
 * catalog shows `needsApproval`, exec `on-miss` runs an allowlisted command without asking and
 * asks for another, and a successful `lurkbot approvals deny` from the CLI.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { outboundMessageSchema, STREAMS, subjects, toolCallReply, toolsListReply, type ApprovalRecord, type Origin } from "../shared/contract/index.js";
import type { BusClient } from "../shared/runtime/client.js";
import { waitFor } from "./harness/actors.js";
import { ApprovalRig } from "./harness/approval-rig.js";
import { runCli } from "./harness/cli.js";
import { TestNats } from "./harness/nats.js";
import { pendingApproval, textOf } from "./harness/tools-actor.js";

const BWRAP = "/usr/bin/bwrap";

describe("approvals: tools marked by config or by their definition", () => {
  const rig = new ApprovalRig();
  let nats: TestNats;
  let runner: NatsConnection;
  let runnerBus: BusClient;
  let cli: BusClient;
  let ws: string;
  let n = 0;

  const call = (tool: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
    const toolCallId = `mark-${++n}`;
    const reply = runnerBus.callSubject(`lurk.tools.call.${tool}`, "lurk.tools.call.v1", {
      toolCallId, runId: "run-mark", sessionKey: "agent:main:main", agentId: "main", tool, args, ...extra,
    }, toolCallReply, { timeoutMs: 60_000 });
    return { toolCallId, reply };
  };
  const pendingFor = (toolCallId: string) => pendingApproval(cli, toolCallId);
  const decide = (record: ApprovalRecord, decision: "approve" | "deny") => cli.call("approvals", "decide", { approvalId: record.approvalId, decision, decidedBy: "cli:test" });

  before(async () => {
    await rig.start({
      agents: [{ id: "main", default: true, toolProfile: "full", requireApproval: ["web_fetch"] }],
      tools: {
        timeoutMs: 20_000,
        requireApproval: ["group:fs", "weather_lookup"],
        exec: { ask: "on-miss", allowlist: ["echo"], ...(existsSync(BWRAP) ? {} : { allowUnsandboxed: true }) },
      },
      approvals: { timeoutMs: 30_000 },
    });
    await rig.startModule("test/fixtures/ext-tools/main.js", "tools-ext");
    await rig.startModule("test/fixtures/ext-tools/main.js", "tools-ext", { EXT_TOOL_NAME: "secret_lookup", EXT_TOOL_NEEDS_APPROVAL: "1", EXT_TOOL_QUEUE: "tools-ext-secret" });
    ({ nats, runnerNc: runner, runnerBus, cli, ws } = rig);
    writeFileSync(join(ws, "notes.txt"), "the secret plan\n");
  });
  after(() => rig.stop());

  it("the catalog says which tools need approval (config and definition)", async () => {
    const replies = await runner.requestMany("lurk.tools.list", JSON.stringify({ type: "lurk.tools.list.v1", id: "list-mark", ts: Date.now(), agentId: "main" }), { strategy: "timer", maxWait: 500 });
    const byName = new Map<string, boolean>();
    for await (const msg of replies) for (const t of toolsListReply.parse(msg.json()).tools) byName.set(t.name, t.needsApproval);
    assert.equal(byName.get("weather_lookup"), true, "marked by tools.requireApproval");
    assert.equal(byName.get("secret_lookup"), true, "marked by its own definition");
  });

  it("a built-in tool marked by a group waits; approve -> it runs; the notice goes to the run's origin", async () => {
    const origin: Origin = { channel: "cli", conversation: "run-origin-read", messageIds: ["in-7"] };
    const { toolCallId, reply } = call("read", { path: "notes.txt" }, { origin });
    const record = await pendingFor(toolCallId);
    assert.equal(record.tool, "read");
    assert.deepEqual(record.origin?.conversation, "run-origin-read");
    const admin = await nats.connect("admin");
    try {
      const jsm = await jetstreamManager(admin);
      const msg = await waitFor(() => jsm.streams.getMessage(STREAMS.outbound, { last_by_subj: subjects().outbound("cli", "run-origin-read") }).catch(() => null), 5_000, "the notice");
      const out = outboundMessageSchema.parse(msg.json());
      assert.equal(out.kind, "approval");
      assert.equal(out.approval?.approvalId, record.approvalId);
    } finally {
      await admin.close();
    }
    await decide(record, "approve");
    const answer = await reply;
    assert.equal(answer.isError, false, textOf(answer));
    assert.match(textOf(answer), /the secret plan/);
  });

  it("deny -> TOOL_DENIED and the marked write did not happen (via `lurkbot approvals deny`)", async () => {
    const { toolCallId, reply } = call("write", { path: "denied.txt", content: "x" });
    const record = await pendingFor(toolCallId);
    const denied = await runCli(["approvals", "deny", record.approvalId], nats.env(nats.passwordEnv("cli")));
    assert.equal(denied.code, 0, denied.stderr);
    assert.match(denied.stdout, /denied by cli:/);
    const answer = await reply;
    assert.equal(answer.isError, true);
    assert.equal(answer.errorCode, "TOOL_DENIED");
    assert.match(textOf(answer), /Tool execution denied.*denied by cli:/);
    assert.equal(existsSync(join(ws, "denied.txt")), false);
    const { approval } = await cli.call("approvals", "get", { approvalId: record.approvalId });
    assert.equal(approval.status, "denied");
  });

  it("agents[].requireApproval marks web_fetch for that agent: denied without fetching", async () => {
    const { toolCallId, reply } = call("web_fetch", { url: "http://example.invalid/" });
    const record = await pendingFor(toolCallId);
    assert.equal(record.tool, "web_fetch");
    await decide(record, "deny");
    const answer = await reply;
    assert.equal(answer.errorCode, "TOOL_DENIED", textOf(answer));
  });

  it("an extension tool marked by config waits; approve -> the extension runs it", async () => {
    const { toolCallId, reply } = call("weather_lookup", { city: "Oslo" });
    const record = await pendingFor(toolCallId);
    assert.equal(record.tool, "weather_lookup");
    await decide(record, "approve");
    const answer = await reply;
    assert.equal(answer.isError, false, textOf(answer));
    assert.match(textOf(answer), /weather in Oslo/);
  });

  it("an extension tool marked by its own definition: deny -> TOOL_DENIED; a stolen token is refused", async () => {
    const { toolCallId, reply } = call("secret_lookup", { city: "Rome" });
    const record = await pendingFor(toolCallId);
    await decide(record, "deny");
    const answer = await reply;
    assert.equal(answer.errorCode, "TOOL_DENIED", textOf(answer));
    assert.doesNotMatch(textOf(answer), /weather in/);

    // approve one call, then replay its token on another call id: refused by the extension
    const first = call("secret_lookup", { city: "Rome" });
    const approved = await pendingFor(first.toolCallId);
    const { token } = await decide(approved, "approve");
    assert.match(textOf(await first.reply), /weather in Rome/);
    const replay = call("secret_lookup", { city: "Rome" }, { approvalToken: token });
    const refused = await replay.reply;
    assert.equal(refused.errorCode, "TOOL_DENIED");
    assert.match(textOf(refused), /another tool call/);
    // an `approved: true` argument is just an argument: still asks
    const sneaky = call("secret_lookup", { city: "Rome", approved: true });
    await decide(await pendingFor(sneaky.toolCallId), "deny");
    assert.equal((await sneaky.reply).errorCode, "TOOL_DENIED");
  });

  it("exec on-miss: an allowlisted command runs without asking, another one asks", async () => {
    const listed = call("exec", { command: "echo allowlisted-ran" });
    const ran = await listed.reply;
    assert.equal(ran.isError, false, textOf(ran));
    assert.match(textOf(ran), /allowlisted-ran/);
    const { approvals: asked } = await cli.call("approvals", "list", {});
    assert.equal(asked.some((a) => a.toolCallId === listed.toolCallId), false, "no approval was asked for");

    const other = call("exec", { command: "echo hi > onmiss.txt" });
    const record = await pendingFor(other.toolCallId);
    assert.equal(record.command, "echo hi > onmiss.txt");
    assert.equal(existsSync(join(ws, "onmiss.txt")), false);
    await decide(record, "approve");
    assert.equal((await other.reply).isError, false);
    assert.equal(readFileSync(join(ws, "onmiss.txt"), "utf8"), "hi\n");
  });
});
