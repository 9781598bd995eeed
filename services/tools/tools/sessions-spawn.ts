/**
 * `sessions_spawn`: start a subagent (a child run in its own session) for a task and return at
 * once with its session key and run id. The subagents actor (`lurk.subagents.spawn`) runs it in
 * the background and, when it ends, announces the result into the calling session as a system
 * event, so the agent can tell the user. Calls the bus, so it runs in the tools actor's main
 * thread (`runsIn: "process"`). The tool call id goes along as causationId: a retried call
 * names the same child instead of spawning a second one.
 */
import { z } from "zod";
import { LurkError } from "../../../shared/contract/index.js";
import { errorResult } from "../content.js";
import { defineTool, type ToolResult } from "../tool.js";

const parameters = z.object({
  task: z.string().min(1).max(100_000).describe("What the subagent must do, self-contained: it does not see this conversation"),
  label: z.string().min(1).max(200).optional().describe("A short name for the subagent, shown in lists and in its announce"),
  model: z.string().min(1).max(200).optional().describe("provider/model for the subagent (default: this agent's model)"),
  timeoutSeconds: z.number().int().min(1).max(24 * 3600).optional().describe("Stop the subagent after this many seconds (default from config)"),
  cleanup: z.enum(["keep", "delete"]).optional().describe("After the announce: keep the subagent's session, or delete it"),
});

export const sessionsSpawnTool = defineTool({
  name: "sessions_spawn",
  description: "Spawn a subagent that works on a task in the background, in its own session. Returns at once with the subagent's "
    + "session key and run id; do not wait for it. When it finishes, its result arrives in this conversation as a [system event] "
    + "(a background task just completed/failed/timed out, with its findings): then tell the user. Use it for long or parallel "
    + "work that does not need the conversation; give the task every detail it needs.",
  parameters,
  sideEffects: true,
  parallelSafe: true,
  groups: ["group:sessions"],
  runsIn: "process",
  async execute(args, ctx): Promise<ToolResult> {
    const rt = ctx.host?.rt;
    const call = ctx.call;
    if (!rt || !call) return errorResult("TOOL_FAILED", "sessions_spawn is not set up in this tools actor (no bus access or caller)");
    try {
      const reply = await rt.client.call("subagents", "spawn", {
        requesterSessionKey: call.sessionKey,
        agentId: call.agentId,
        task: args.task,
        ...(args.label ? { label: args.label } : {}),
        ...(args.model ? { model: args.model } : {}),
        ...(args.timeoutSeconds ? { timeoutSeconds: args.timeoutSeconds } : {}),
        ...(args.cleanup ? { cleanup: args.cleanup } : {}),
      }, { causationId: `${call.runId}:${call.toolCallId}`, runId: call.runId, timeoutMs: Math.min(ctx.host?.timeoutMs ?? 10_000, 10_000) });
      return {
        content: [{
          type: "text",
          text: JSON.stringify({ status: reply.status, childSessionKey: reply.childSessionKey, runId: reply.runId })
            + "\nThe subagent is running in the background. Its result will arrive in this conversation as a system event; do not poll for it.",
        }],
      };
    } catch (err) {
      const e = LurkError.from(err);
      if (e.code === "UNAVAILABLE") {
        return errorResult("UNAVAILABLE", "subagents are not available: the subagents actor is not running (start it with `npx lurkbot start`, or check `npx lurkbot status`). Do the task yourself instead.");
      }
      return errorResult(e.code, `sessions_spawn failed (${e.code}): ${e.message}`);
    }
  },
});
