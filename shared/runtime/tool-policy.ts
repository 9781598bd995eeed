/**
 * The layered tool policy (seeds 001 §3.4, 000 §4.2-4.3), as pure functions: no I/O, no config
 * loading. The tools actor builds a PolicyContext from the config and the request (agent,
 * session key, model) and asks `decideTool` for each tool it serves, both when it answers
 * `lurk.tools.list` and again on every `lurk.tools.call.<tool>`, so a runner cannot bypass it.
 *
 * Layers, in the seeds' order (each one can only take tools away; deny always wins):
 *   profile   the agent's toolProfile (minimal, coding, messaging, full)
 *   provider  built-in (ollama: no image/canvas) + config tools.byProvider[<provider>]
 *   model     built-in (gpt-3.5: no browser/canvas) + config tools.byModel[<pattern>]
 *   global    config tools.allow / tools.deny
 *   agent     config agents[].tools.allow / deny
 *   session   group/topic/thread sessions lose the seeds' GROUP_DENY_LIST; + tools.bySessionType
 *   sandbox   sandboxed sessions (tools.sandboxedSessions, default group and topic) lose SANDBOX_DENY_LIST
 *   subagent  subagent sessions lose SUBAGENT_DENY_LIST; + tools.subagent
 * (The seeds' layer 5 "agent type" is the per-agent rules here; layer 9, plugin merge, is the
 * caller merging the catalogs of several tools actors, each of which applies this policy.)
 *
 * A rule entry is a tool name (aliases count: "bash" matches exec), a group ("group:fs"), "*",
 * or a glob with "*" ("sessions_*"). Within a layer a deny entry beats an allow entry; an allow
 * list that is present and non-empty narrows (a tool matching none of it is denied there).
 */
import type { SessionType } from "../contract/index.js";
import { glob, toolEntryMatches } from "./config-tools-approval.js";

export type ToolProfile = "minimal" | "coding" | "messaging" | "full";
export type PolicyLayer = "profile" | "provider" | "model" | "global" | "agent" | "session" | "sandbox" | "subagent";
export const POLICY_LAYERS: readonly PolicyLayer[] = ["profile", "provider", "model", "global", "agent", "session", "sandbox", "subagent"];

export interface ToolRules {
  allow?: readonly string[];
  deny?: readonly string[];
}

/** The seeds' TOOL_GROUPS (incl. §4.3's canvas in group:ui), for tools that may not exist yet. */
export const TOOL_GROUPS: Readonly<Record<string, readonly string[]>> = {
  "group:memory": ["memory_search", "memory_get"],
  "group:web": ["web_search", "web_fetch"],
  // media_save: a file a user sent, into the workspace
  "group:fs": ["read", "write", "edit", "apply_patch", "media_save"],
  // process: background jobs, the same sandbox as exec (MoltBot's group:runtime has it too)
  "group:runtime": ["bash", "exec", "process"],
  "group:sessions": ["sessions_spawn", "sessions_send", "sessions_list", "sessions_history", "session_status", "agents_list"],
  "group:ui": ["browser", "canvas"],
  "group:automation": ["cron", "gateway"],
  "group:messaging": ["message"],
  "group:nodes": ["nodes"],
  "group:tts": ["tts"],
  "group:image": ["image"],
};

/** The seeds' TOOL_PROFILES (§3.4; §4.3 adds canvas to coding, full already has "*"). */
export const TOOL_PROFILES: Readonly<Record<ToolProfile, ToolRules>> = {
  minimal: { allow: ["session_status"] },
  coding: { allow: ["group:fs", "group:runtime", "group:sessions", "group:memory", "image", "canvas"] },
  messaging: { allow: ["group:messaging", "sessions_list", "sessions_history", "sessions_send", "session_status"] },
  full: { allow: ["*"] },
};

export const SUBAGENT_DENY_LIST: readonly string[] = [
  "sessions_list", "sessions_history", "sessions_send", "sessions_spawn", "gateway", "agents_list", "session_status",
  "cron", "memory_search", "memory_get",
];
/** the seeds' lists, plus process (it runs commands like exec) and media_save (it writes a file like write) */
export const SANDBOX_DENY_LIST: readonly string[] = ["bash", "exec", "process", "write", "edit", "apply_patch", "media_save"];
/** the seeds' list, plus process and media_save (as above) and browser (services/browser: a real browser with the owner's logins) */
export const GROUP_DENY_LIST: readonly string[] = ["bash", "exec", "process", "write", "edit", "apply_patch", "media_save", "sessions_spawn", "cron", "browser"];
/** session types the GROUP_DENY_LIST applies to (the seeds' low-trust types; a channel thread is one too) */
export const GROUP_SESSION_TYPES: readonly SessionType[] = ["group", "topic", "thread"];
/** the seeds' security matrix: group and topic sessions are sandboxed */
export const DEFAULT_SANDBOXED_SESSIONS: readonly SessionType[] = ["group", "topic"];
/** the seeds' _filter_by_provider / _filter_by_model */
export const BUILTIN_PROVIDER_RULES: Readonly<Record<string, ToolRules>> = { ollama: { deny: ["image", "canvas"] } };
export const BUILTIN_MODEL_RULES: Readonly<Record<string, ToolRules>> = { "*gpt-3.5*": { deny: ["browser", "canvas"] } };

/** What the policy needs to know about one tool. */
export interface PolicyTool {
  name: string;
  aliases?: readonly string[];
  /** groups from the tool's definition ("fs" and "group:fs" are the same group) */
  groups?: readonly string[];
}

export interface PolicyContext {
  profile: ToolProfile;
  /** "provider/model" in effect, if known */
  model?: string;
  byProvider?: Readonly<Record<string, ToolRules>>;
  byModel?: Readonly<Record<string, ToolRules>>;
  global?: ToolRules;
  agent?: ToolRules;
  sessionType: SessionType;
  bySessionType?: Readonly<Partial<Record<SessionType, ToolRules>>>;
  sandboxedSessions?: readonly SessionType[];
  subagent?: ToolRules;
}

export interface LayerVerdict {
  layer: PolicyLayer;
  effect: "allow" | "deny";
  /** e.g. `deny "group:runtime" (tools.deny)` or `allow "group:fs" (profile coding)` */
  rule: string;
}

export interface ToolDecision {
  tool: string;
  allowed: boolean;
  /** the layer that decided: the first denying one, else the narrowest allow list that let it through */
  layer: PolicyLayer;
  rule: string;
  /** every layer that had something to say, in order */
  trace: LayerVerdict[];
}

/** A rule source within a layer (a layer may combine built-in and configured rules). */
interface RuleSet {
  source: string;
  rules: ToolRules;
}

export function normalizeGroup(group: string): string {
  return group.startsWith("group:") ? group : `group:${group}`;
}

/** Whether a rule entry names this tool (by name, alias, group with this table, "*" or glob). */
function entryMatches(entry: string, tool: PolicyTool): boolean {
  return toolEntryMatches(entry, tool, TOOL_GROUPS);
}

function splitModel(model: string | undefined): { provider?: string; full?: string; bare?: string } {
  if (!model) return {};
  const slash = model.indexOf("/");
  return slash > 0 ? { provider: model.slice(0, slash), full: model, bare: model.slice(slash + 1) } : { full: model, bare: model };
}

/** The rule sets of each layer for a context (built-in seeds' lists plus configuration). */
export function layerRules(ctx: PolicyContext): Record<PolicyLayer, RuleSet[]> {
  const { provider, full, bare } = splitModel(ctx.model);
  const byPattern = (table: Readonly<Record<string, ToolRules>> | undefined, source: string): RuleSet[] =>
    Object.entries(table ?? {}).filter(([pattern]) => (full !== undefined && glob(pattern, full)) || (bare !== undefined && glob(pattern, bare)))
      .map(([pattern, rules]) => ({ source: `${source}["${pattern}"]`, rules }));
  const providerSets: RuleSet[] = [];
  if (provider) {
    if (BUILTIN_PROVIDER_RULES[provider]) providerSets.push({ source: `built-in rules for provider ${provider}`, rules: BUILTIN_PROVIDER_RULES[provider] });
    if (ctx.byProvider?.[provider]) providerSets.push({ source: `tools.byProvider.${provider}`, rules: ctx.byProvider[provider] });
  }
  const sessionSets: RuleSet[] = [];
  if (GROUP_SESSION_TYPES.includes(ctx.sessionType)) sessionSets.push({ source: `built-in rules for ${ctx.sessionType} sessions`, rules: { deny: GROUP_DENY_LIST } });
  const bySession = ctx.bySessionType?.[ctx.sessionType];
  if (bySession) sessionSets.push({ source: `tools.bySessionType.${ctx.sessionType}`, rules: bySession });
  const sandboxed = (ctx.sandboxedSessions ?? DEFAULT_SANDBOXED_SESSIONS).includes(ctx.sessionType);
  const subagent = ctx.sessionType === "subagent";
  return {
    profile: [{ source: `profile ${ctx.profile}`, rules: TOOL_PROFILES[ctx.profile] }],
    provider: providerSets,
    model: [...byPattern(BUILTIN_MODEL_RULES, "built-in model rules"), ...byPattern(ctx.byModel, "tools.byModel")],
    global: ctx.global ? [{ source: "tools", rules: ctx.global }] : [],
    agent: ctx.agent ? [{ source: "agent tools", rules: ctx.agent }] : [],
    session: sessionSets,
    sandbox: sandboxed ? [{ source: `sandboxed ${ctx.sessionType} session`, rules: { deny: SANDBOX_DENY_LIST } }] : [],
    subagent: subagent ? [{ source: "subagent session", rules: { deny: SUBAGENT_DENY_LIST } }, ...(ctx.subagent ? [{ source: "tools.subagent", rules: ctx.subagent }] : [])] : [],
  };
}

/** One layer's verdict on a tool: deny beats allow; a non-empty allow list narrows. */
function judgeLayer(layer: PolicyLayer, sets: RuleSet[], tool: PolicyTool): LayerVerdict | undefined {
  for (const { source, rules } of sets) {
    const deny = (rules.deny ?? []).find((e) => entryMatches(e, tool));
    if (deny !== undefined) return { layer, effect: "deny", rule: `deny "${deny}" (${source})` };
  }
  let allowed: LayerVerdict | undefined;
  for (const { source, rules } of sets) {
    const allow = rules.allow ?? [];
    if (allow.length === 0) continue;
    const hit = allow.find((e) => entryMatches(e, tool));
    if (hit === undefined) return { layer, effect: "deny", rule: `not in the allow list [${allow.join(", ")}] (${source})` };
    allowed = { layer, effect: "allow", rule: `allow "${hit}" (${source})` };
  }
  return allowed;
}

/** Runs every layer over one tool. Deny wins: the first denying layer decides. */
export function decideTool(tool: PolicyTool, ctx: PolicyContext): ToolDecision {
  return decideWithRules(tool, layerRules(ctx), ctx.profile);
}

/** The decisions for many tools, in their order (the layers' rules are built once). */
export function decideTools(tools: readonly PolicyTool[], ctx: PolicyContext): ToolDecision[] {
  const sets = layerRules(ctx);
  return tools.map((t) => decideWithRules(t, sets, ctx.profile));
}

function decideWithRules(tool: PolicyTool, sets: Record<PolicyLayer, RuleSet[]>, profile: ToolProfile): ToolDecision {
  const trace: LayerVerdict[] = [];
  for (const layer of POLICY_LAYERS) {
    const verdict = judgeLayer(layer, sets[layer], tool);
    if (verdict) trace.push(verdict);
  }
  const denied = trace.find((v) => v.effect === "deny");
  if (denied) return { tool: tool.name, allowed: false, layer: denied.layer, rule: denied.rule, trace };
  const narrowest = [...trace].reverse().find((v) => v.effect === "allow");
  return {
    tool: tool.name,
    allowed: true,
    layer: narrowest?.layer ?? "profile",
    rule: narrowest?.rule ?? `no rule denies it (profile ${profile})`,
    trace,
  };
}

/** The model-readable text of a refused call. */
export function deniedMessage(decision: ToolDecision, calledAs: string): string {
  return `The tool "${calledAs}" is not available in this session: denied by the ${decision.layer} layer of the tool policy (${decision.rule}). Do not call it again; use another tool or tell the user.`;
}
