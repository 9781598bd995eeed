/** What a web tool needs from the tools actor: the web settings and a signal with its deadline. */
import { LurkError } from "../../../shared/contract/index.js";
import type { ToolContext } from "../tool.js";

export function webContext(ctx: ToolContext, tool: string) {
  const web = ctx.host?.web;
  if (!ctx.host || !web) throw new LurkError("TOOL_FAILED", `${tool} runs in the tools actor process only`);
  const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(Math.min(web.timeoutMs, ctx.host.timeoutMs))]);
  return { web, signal };
}
