/** For process tools that talk to other actors: the runtime and the calling session, or a clear failure. */
import { LurkError } from "../../../shared/contract/index.js";
import type { ActorRuntime } from "../../../shared/runtime/actor.js";
import type { ToolCallInfo, ToolContext } from "../tool.js";

export function busOf(ctx: ToolContext): { rt: ActorRuntime; call: ToolCallInfo } {
  const rt = ctx.host?.rt;
  if (!rt) throw new LurkError("TOOL_FAILED", "this tool runs in the tools actor process only (it needs the bus)");
  if (!ctx.call) throw new LurkError("TOOL_FAILED", "this tool needs the calling session");
  return { rt, call: ctx.call };
}
