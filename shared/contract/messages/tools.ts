/** `lurk.tools.list`, `lurk.tools.call.<tool>`: the tool catalog and execution. */
import { z } from "zod";
import { agentIdSchema, imageBlockSchema, originSchema, sessionKeySchema, sessionTypeSchema, textBlockSchema, toolDefinitionSchema } from "../common.js";
import { defineMessage, idSchema } from "../envelope.js";
import { errorCodeSchema } from "../errors.js";

/** Scatter-gather: every tools actor kind answers with its own tools; the caller merges. */
export const toolsListRequest = defineMessage("lurk.tools.list.v1", {
  agentId: agentIdSchema.optional(),
  sessionKey: sessionKeySchema.optional(),
  /** "provider/model" of the run (the tool policy's provider and model layers); default: the agent's */
  model: z.string().max(200).optional(),
});
export const toolsListReply = z.object({ actor: z.string(), tools: z.array(toolDefinitionSchema) });

/**
 * `lurk.tools.catalog`: a tools actor instance announces that its catalog is available or
 * changed (core publish, after its `lurk.tools.list` subscription is live). Agent-runners
 * refresh their cached catalogs in the background; the catalog itself still comes from
 * `lurk.tools.list`.
 */
export const toolsCatalogChangedSchema = defineMessage("lurk.tools.catalog.v1", {
  /** the announcing actor (NATS user), e.g. "tools" or "tools-ext" */
  actor: z.string().min(1).max(64),
  instance: z.object({ host: z.string().max(255), pid: z.number().int().nonnegative() }),
});
export type ToolsCatalogChanged = z.infer<typeof toolsCatalogChangedSchema>;
/** announcements are tiny; anything larger is refused unparsed */
export const TOOLS_CATALOG_CHANGED_MAX_BYTES = 4096;

/**
 * `lurk.tools.cancel`: a caller gives up on tool calls (core publish, every tools instance
 * listens): the calls of `runId` (all of them, or only `toolCallId`) still running or waiting
 * for an approval are cancelled (the worker task aborted, an exec child's process group
 * killed); their replies say ABORTED. Tools instances also cancel a run's calls on its abort
 * control (`lurk.run.ctl.<runId>`) and on its terminal events (`lurk.run.evt.<runId>.done|error`).
 */
export const toolsCancelSchema = defineMessage("lurk.tools.cancel.v1", {
  runId: idSchema,
  toolCallId: idSchema.optional(),
  reason: z.string().max(500).optional(),
});
export type ToolsCancel = z.infer<typeof toolsCancelSchema>;
export const TOOLS_CANCEL_MAX_BYTES = 4096;

export const toolCallRequest = defineMessage("lurk.tools.call.v1", {
  toolCallId: idSchema,
  runId: idSchema,
  sessionKey: sessionKeySchema,
  agentId: agentIdSchema,
  sessionType: sessionTypeSchema.default("main"),
  tool: z.string().min(1).max(64),
  args: z.record(z.string(), z.unknown()),
  /** ms the tool may run once it starts (not counting queue time) */
  timeoutMs: z.number().int().positive().max(3600_000).optional(),
  /** signed by the approvals actor for this exact call (tool call id + args hash) */
  approvalToken: z.string().max(4096).optional(),
  /** "provider/model" of the run (the tool policy's provider and model layers); default: the agent's */
  model: z.string().max(200).optional(),
  /** where the run's trigger came from (the `message` tool's default target); absent for system runs */
  origin: originSchema.optional(),
});
export type ToolCallRequest = z.infer<typeof toolCallRequest>;

export const toolCallReply = z.object({
  toolCallId: idSchema,
  content: z.array(z.discriminatedUnion("type", [textBlockSchema, imageBlockSchema])),
  isError: z.boolean(),
  errorCode: errorCodeSchema.optional(),
  /** the output was cut; the full text is kept at this workspace path for `read` to page */
  truncated: z.object({ fullOutputPath: z.string(), totalBytes: z.number().int() }).optional(),
  durationMs: z.number().nonnegative(),
});
export type ToolCallReply = z.infer<typeof toolCallReply>;

/** `lurk.tools.progress.<runId>`: long tools report progress (core publish). */
export const toolProgressSchema = defineMessage("lurk.tools.progress.v1", {
  runId: idSchema,
  toolCallId: idSchema,
  message: z.string().max(2000),
  fraction: z.number().min(0).max(1).optional(),
  /**
   * the call waits for this human approval: sent again at least every 5 s while it waits, so
   * the caller knows the tools instance holding the call is alive (none for 15 s: it re-sends
   * the same call, which gets the same approval)
   */
  waitingForApproval: idSchema.optional(),
});

/**
 * `lurk.tools.explain`: the tool policy's decision for every tool this actor serves, in the
 * context of an agent and a session (key or type), with the deciding layer and rule
 * (scatter-gather like list; `lurkbot tools --explain`). The tools actor answers for the
 * built-in tools, every actor serving tools through serveTools (shared/runtime/tool-serve.ts)
 * for its own, each in its own queue group.
 */
export const toolsExplainRequest = defineMessage("lurk.tools.explain.v1", {
  agentId: agentIdSchema.optional(),
  sessionKey: sessionKeySchema.optional(),
  /** used when there is no session key */
  sessionType: sessionTypeSchema.optional(),
  model: z.string().max(200).optional(),
});
export const policyLayerSchema = z.enum(["profile", "provider", "model", "global", "agent", "session", "sandbox", "subagent"]);
/**
 * Why calls of a tool wait for a human approval (`lurkbot tools --explain`); absent: they never
 * do. `calls`: "all", or "some" (exec with tools.exec.ask "on-miss": commands outside the
 * allowlist; process: its start action). `source`: the tool's own definition (needsApproval),
 * tools.requireApproval ("global"), the agent's requireApproval, or tools.exec.ask.
 */
export const toolApprovalSchema = z.object({
  calls: z.enum(["all", "some"]),
  reasons: z.array(z.object({ source: z.enum(["tool", "global", "agent", "exec-ask"]), rule: z.string() })),
});
export type ToolApproval = z.infer<typeof toolApprovalSchema>;
/**
 * One tool's decision. `layer`: the policy layer that decided, or "actor" when the actor serving
 * the tool decided without the layered policy (serveTools without a policy, or with one of its
 * own that says only yes or no: `rule` then says which, `trace` is empty).
 */
export const toolDecisionSchema = z.object({
  tool: z.string(),
  allowed: z.boolean(),
  layer: z.union([policyLayerSchema, z.literal("actor")]),
  rule: z.string(),
  groups: z.array(z.string()).default([]),
  aliases: z.array(z.string()).default([]),
  trace: z.array(z.object({ layer: policyLayerSchema, effect: z.enum(["allow", "deny"]), rule: z.string() })).default([]),
  approval: toolApprovalSchema.optional(),
});
export type ToolDecisionReply = z.infer<typeof toolDecisionSchema>;
export const toolsExplainReply = z.object({
  actor: z.string(),
  agentId: z.string(),
  sessionType: sessionTypeSchema,
  profile: z.string(),
  model: z.string().optional(),
  decisions: z.array(toolDecisionSchema),
});

/** One background job of the `process` tool, as `list` shows it. */
export const toolJobSummarySchema = z.object({
  jobId: idSchema,
  command: z.string().max(2000),
  status: z.enum(["running", "exited", "killed", "timed_out", "failed"]),
  exitCode: z.number().int().nullable(),
  startedAt: z.number().int(),
  endedAt: z.number().int().optional(),
  outputBytes: z.number().int().nonnegative(),
});
export type ToolJobSummary = z.infer<typeof toolJobSummarySchema>;

/** `lurk.tools.jobs.list`: every tools instance answers with its jobs of one session (scatter-gather). */
export const toolJobsListRequest = defineMessage("lurk.tools.jobs.list.v1", {
  agentId: agentIdSchema,
  sessionKey: sessionKeySchema,
});
export const toolJobsListReply = z.object({ instanceId: z.string(), jobs: z.array(toolJobSummarySchema) });
