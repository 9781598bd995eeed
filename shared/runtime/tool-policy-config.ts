/**
 * The tool policy's context from the configuration and a request: which agent (its profile,
 * its own rules, its model), which session type (from the session key when there is one), and
 * the global, provider, model, session and subagent rules of `config.tools`. `explainTools`
 * also says which tools need a human approval and why.
 */
import { LurkError, parseSessionKey, type SessionType } from "../contract/index.js";
import type { AgentConfig, LurkConfig } from "./config.js";
import { approvalExplanation, type ExplainedTool } from "./tool-approval-explain.js";
import { decideTool, decideTools, type PolicyContext, type PolicyTool, type ToolDecision } from "./tool-policy.js";

export interface PolicyRequest {
  agentId?: string | undefined;
  sessionKey?: string | undefined;
  /** used when there is no (parseable) session key */
  sessionType?: SessionType | undefined;
  /** "provider/model" of the run, when the caller knows it */
  model?: string | undefined;
}

export function policyAgent(config: LurkConfig, agentId: string | undefined): AgentConfig | undefined {
  if (agentId !== undefined) return config.agents.find((a) => a.id === agentId);
  return config.agents.find((a) => a.default) ?? config.agents[0];
}

/** The session type a request is in: the key's (it is authoritative) or the stated one. */
export function requestSessionType(req: PolicyRequest): SessionType {
  const parsed = req.sessionKey ? parseSessionKey(req.sessionKey) : null;
  return parsed?.type ?? req.sessionType ?? "main";
}

export function policyContext(config: LurkConfig, agent: AgentConfig, req: PolicyRequest): PolicyContext {
  const t = config.tools;
  const model = req.model ?? agent.model ?? config.model;
  return {
    profile: agent.toolProfile,
    ...(model ? { model } : {}),
    byProvider: t.byProvider,
    byModel: t.byModel,
    global: { allow: t.allow, deny: t.deny },
    ...(agent.tools ? { agent: agent.tools } : {}),
    sessionType: requestSessionType(req),
    bySessionType: t.bySessionType,
    sandboxedSessions: t.sandboxedSessions,
    subagent: t.subagent,
  };
}

/** The decision for one tool in one request's context. */
export function decideForRequest(config: LurkConfig, agent: AgentConfig, req: PolicyRequest, tool: PolicyTool): ToolDecision {
  return decideTool(tool, policyContext(config, agent, req));
}

/** `lurk.tools.list`: the catalog entries the policy allows for this request (none for an unknown agent). */
export function allowedCatalog<D extends { name: string }>(config: LurkConfig, tools: readonly PolicyTool[], catalog: readonly D[], req: PolicyRequest): D[] {
  const agent = policyAgent(config, req.agentId);
  if (!agent) return [];
  const ctx = policyContext(config, agent, req);
  const allowed = new Set(decideTools(tools, ctx).filter((d) => d.allowed).map((d) => d.tool));
  return catalog.filter((d) => allowed.has(d.name));
}

/**
 * A `lurk.tools.explain` reply: the request's agent, session type, profile and model around the
 * decisions `decide` makes for that agent and context; NOT_FOUND for an unknown agent.
 */
export function explainReply<D>(config: LurkConfig, actor: string, req: PolicyRequest, decide: (agentId: string, ctx: PolicyContext) => D[]) {
  const agent = policyAgent(config, req.agentId);
  if (!agent) throw new LurkError("NOT_FOUND", `no agent "${req.agentId}" is configured`);
  const ctx = policyContext(config, agent, req);
  return { actor, agentId: agent.id, sessionType: ctx.sessionType, profile: ctx.profile, ...(ctx.model ? { model: ctx.model } : {}), decisions: decide(agent.id, ctx) };
}

/** `lurk.tools.explain`: every tool's decision in this request's context. */
export function explainTools(config: LurkConfig, actor: string, tools: readonly ExplainedTool[], req: PolicyRequest) {
  return explainReply(config, actor, req, (agentId, ctx) => decideTools(tools, ctx).map((d, i) => {
    // which calls of it wait for a human, and why (approval-explain.ts)
    const approval = approvalExplanation(config, agentId, tools[i]!);
    return { ...d, groups: [...(tools[i]!.groups ?? [])], aliases: [...(tools[i]!.aliases ?? [])], ...(approval ? { approval } : {}) };
  }));
}
