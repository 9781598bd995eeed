/**
 * The tool policy of the browser tools: the built-in layered policy (shared/runtime/tool-policy.ts,
 * the same profiles, groups, provider/model rules, tools.allow/deny, agent rules, session and
 * subagent layers the tools actor applies; `browser` is in group:ui and in the group-session deny
 * list), for the catalog, again on every call and for `lurkbot tools --explain`
 * (shared/runtime/tool-serve-policy.ts). `browser_evaluate` is offered only where `browser` itself
 * is allowed too, so every rule that keeps the browser out keeps it out.
 */
import type { LurkConfig } from "../../shared/runtime/config.js";
import type { ServedToolPolicy } from "../../shared/runtime/tool-serve.js";
import { layeredToolPolicy } from "../../shared/runtime/tool-serve-policy.js";

export function browserPolicy(config: LurkConfig): ServedToolPolicy {
  return layeredToolPolicy(config, { requires: ["browser"] });
}
