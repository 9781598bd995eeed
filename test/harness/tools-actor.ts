/** The tools actor as a process on its own nats-server, with a config.json, called as the agent-runner. */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { subjects, toolCallReply, type ApprovalRecord, type ToolCallReply } from "../../shared/contract/index.js";
import { BusClient } from "../../shared/runtime/client.js";
import { startActorProcess, waitFor, type ActorProcess } from "./actors.js";
import { TestNats } from "./nats.js";

export interface ToolsActorUnderTest {
  nats: TestNats;
  tools: ActorProcess;
  nc: NatsConnection;
  client: BusClient;
  stop(): Promise<void>;
}

export async function startToolsActor(workspace: string, config: Record<string, unknown> = {}, env: Record<string, string> = {}): Promise<ToolsActorUnderTest> {
  const nats = await TestNats.start({ streams: false });
  writeFileSync(join(nats.home, "config.json"), JSON.stringify(config));
  const tools = await startActorProcess("tools", nats, { LURKBOT_WORKSPACE: workspace, ...env });
  const nc = await nats.connect("agent-runner");
  return {
    nats, tools, nc, client: new BusClient(nc),
    async stop() {
      await nc.close();
      await tools.stop();
      await nats.stop();
    },
  };
}

/** The text of a tool reply (images shown as `[image]`). */
export const textOf = (reply: ToolCallReply) => reply.content.map((b) => (b.type === "text" ? b.text : `[${b.type}]`)).join("");

/**
 * Calls tools as the agent-runner would for `agent:main:main`; `ok` also asserts success.
 * toolCallIds are `<idPrefix>-<n>` (default `call`); `extra` adds request fields (e.g. timeoutMs).
 */
export function toolCaller(client: () => BusClient, { idPrefix = "call" }: { idPrefix?: string } = {}) {
  let n = 0;
  const call = (tool: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    client().callSubject(subjects().toolCall(tool), "lurk.tools.call.v1", {
      toolCallId: `${idPrefix}-${++n}`, runId: "run-1", sessionKey: "agent:main:main", agentId: "main", tool, args, ...extra,
    }, toolCallReply, { timeoutMs: 30_000 });
  const ok = async (tool: string, args: Record<string, unknown>) => {
    const reply = await call(tool, args);
    assert.equal(reply.isError, false, textOf(reply));
    return textOf(reply);
  };
  return { call, ok };
}

/** The pending approval of a tool call, once the approvals actor lists it (`cli`: a bus client as the cli user). */
export function pendingApproval(cli: BusClient, toolCallId: string, timeoutMs = 15_000): Promise<ApprovalRecord> {
  return waitFor(async () => {
    const { approvals } = await cli.call("approvals", "list", { status: "pending" });
    return approvals.find((a) => a.toolCallId === toolCallId);
  }, timeoutMs, `a pending approval for ${toolCallId}`);
}
