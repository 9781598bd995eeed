/** For process tools that talk to other actors: the runtime and the calling session, or a clear failure; where their messages go. */
import { LurkError, type Origin } from "../../../shared/contract/index.js";
import type { ActorRuntime } from "../../../shared/runtime/actor.js";
import type { ToolCallInfo, ToolContext } from "../tool.js";

export function busOf(ctx: ToolContext): { rt: ActorRuntime; call: ToolCallInfo } {
  const rt = ctx.host?.rt;
  if (!rt) throw new LurkError("TOOL_FAILED", "this tool runs in the tools actor process only (it needs the bus)");
  if (!ctx.call) throw new LurkError("TOOL_FAILED", "this tool needs the calling session");
  return { rt, call: ctx.call };
}

/** Where a message of this call goes by default: the run's origin, else the session's last one. */
export async function defaultTarget(rt: ActorRuntime, call: ToolCallInfo): Promise<Pick<Origin, "channel" | "conversation" | "accountId" | "peer">> {
  const origin = call.origin ?? (await rt.client.call("sessions", "get", { sessionKey: call.sessionKey }, { timeoutMs: 5_000 })).session?.lastOrigin;
  if (!origin) throw new LurkError("NOT_FOUND", "this run has no conversation to answer (it was not started from a chat); give channel and conversation");
  return origin;
}
