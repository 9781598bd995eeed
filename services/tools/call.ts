/**
 * One `lurk.tools.call.<tool>` request, start to reply: find the agent's workspace, validate
 * the arguments with the tool's schema, run it in the pool with the effective deadline, and
 * build the toolCallReply. Anything that goes wrong with the *tool* (bad arguments, path
 * escapes, deadline, out of memory) is a result with `isError` and an errorCode, so it goes
 * back to the model. Only a malformed request (the runtime) or a request for an agent this
 * install does not have is an error reply.
 *
 * The tool policy (shared/runtime/tool-policy.ts) refuses a denied tool first (TOOL_DENIED, naming the layer);
 * approvals (approval-gate.ts) sit between validation and `pool.run`. Tools
 * with `runsIn: "process"` (exec) run in this thread instead of the pool (process-tools.ts).
 */
import { LurkError, type ToolCallReply, type ToolCallRequest } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { agentWorkspace, type LurkConfig } from "../../shared/runtime/config.js";
import { gateToolCall } from "./approval-gate.js";
import { errorResult, resultFromError } from "./content.js";
import type { MemoryEmbeddings } from "./embeddings/host.js";
import type { ExecHost } from "./exec/sandbox.js";
import type { RunToolOptions, ToolPool } from "./pool.js";
import { deniedMessage } from "../../shared/runtime/tool-policy.js";
import { decideForRequest } from "../../shared/runtime/tool-policy-config.js";
import type { InflightCalls } from "../../shared/runtime/tool-inflight.js";
import { progressPublisher } from "../../shared/runtime/tool-serve.js";
import { runProcessTool, type ProcessHostExtras } from "./process-tools.js";
import { skillRoots } from "./skill-roots.js";
import { describeIssues, type Tool, type ToolLimits, type ToolResult } from "./tool.js";

/** bytes kept free in a reply for the envelope and JSON escaping */
const REPLY_OVERHEAD = 8 * 1024;

/** Byte caps for tools, from config: text from config.tools, images from the bus payload cap. */
export function toolLimits(rt: ActorRuntime): ToolLimits {
  const maxPayload = rt.config.bus.maxPayloadBytes;
  return {
    outputCapBytes: Math.min(rt.config.tools.outputCapBytes, maxPayload - REPLY_OVERHEAD),
    // base64 is 4/3 the size
    imageCapBytes: Math.floor(((maxPayload - REPLY_OVERHEAD) * 3) / 4),
    maxWriteBytes: rt.config.tools.maxWriteBytes,
    bwrapPath: rt.config.tools.exec.bwrapPath,
    ...(rt.config.media.ocr.enabled ? { ocr: { ...rt.config.media.ocr, bwrapPath: rt.config.tools.exec.bwrapPath } } : {}),
  };
}

/** What the actor adds to a call besides the pool: the exec sandbox, jobs, and cancellation. */
export interface CallHost extends ProcessHostExtras {
  /** this instance's in-flight calls: `lurk.tools.cancel`, a run's abort or end cancel them */
  inflight?: InflightCalls;
  /** memory.embeddings is set: vectors for worker tools (memory_search) */
  embeddings?: MemoryEmbeddings;
}

export async function handleToolCall(rt: ActorRuntime, pool: ToolPool, tool: Tool, req: ToolCallRequest, exec?: ExecHost, host: CallHost = {}): Promise<ToolCallReply> {
  const { inflight, embeddings, ...extras } = host;
  if (req.tool !== tool.name && !(tool.aliases ?? []).includes(req.tool)) {
    throw new LurkError("VALIDATION_FAILED", `the request names the tool "${req.tool}" but was sent to ${rt.subjects.toolCall(tool.name)}`);
  }
  const agent = rt.config.agents.find((a) => a.id === req.agentId);
  if (!agent) throw new LurkError("NOT_FOUND", `no agent "${req.agentId}" is configured`);

  const started = Date.now();
  // cancelled by the caller (lurk.tools.cancel), the run's abort or end, or the actor stopping
  const tracked = inflight?.track(req.runId, req.toolCallId, rt.signal);
  const signal = tracked?.signal ?? rt.signal;
  try {
    return fitReply(rt, { ...(await runCall(rt, pool, tool, req, agent, signal, exec, extras, embeddings)), durationMs: Date.now() - started });
  } finally {
    tracked?.done();
  }
}

async function runCall(rt: ActorRuntime, pool: ToolPool, tool: Tool, req: ToolCallRequest, agent: LurkConfig["agents"][number], signal: AbortSignal,
  exec: ExecHost | undefined, extras: ProcessHostExtras, embeddings?: MemoryEmbeddings): Promise<Omit<ToolCallReply, "durationMs">> {
  let result: ToolResult;
  let gated: ToolResult | null;
  // the tool policy, again at call time: a runner cannot call what the list left out
  const decision = decideForRequest(rt.config, agent, req, tool);
  const parsed = tool.parameters.safeParse(req.args);
  if (!decision.allowed) {
    rt.log.info({ tool: req.tool, agentId: req.agentId, sessionKey: req.sessionKey, layer: decision.layer, rule: decision.rule }, "tool call denied by policy");
    result = errorResult("TOOL_DENIED", deniedMessage(decision, req.tool));
  } else if (!parsed.success) {
    result = errorResult("TOOL_INVALID_ARGS", `invalid arguments for ${tool.name}: ${describeIssues(parsed.error)}. Fix them and call ${tool.name} again.`);
  } else if ((gated = await gateToolCall(rt, tool, req, signal))) {
    // needs a human approval (approval-gate.ts) and has none: denied, expired or a bad token
    result = gated;
  } else {
    const configured = rt.config.tools.timeoutMs;
    const timeoutMs = Math.min(req.timeoutMs ?? configured, configured);
    try {
      const opts: RunToolOptions = {
        args: parsed.data as Record<string, unknown>,
        workspace: agentWorkspace(rt.config, agent),
        timeoutMs,
        limits: toolLimits(rt),
        call: {
          toolCallId: req.toolCallId, runId: req.runId, agentId: req.agentId, sessionKey: req.sessionKey, sessionType: req.sessionType,
          ...(req.origin ? { origin: req.origin } : {}),
        },
        readOnlyRoots: skillRoots(rt.config),
        signal,
        onProgress: progressPublisher(rt, req),
        web: rt.config.tools.web,
        ...(embeddings && tool.usesEmbeddings && tool.runsIn !== "process" ? { vectors: embeddings.forCall(timeoutMs, { sessionKey: req.sessionKey, agentId: req.agentId, runId: req.runId }) } : {}),
      };
      result = tool.runsIn === "process" ? await runProcessTool(tool, opts, exec, { rt, ...extras }) : await pool.run(tool.name, opts);
    } catch (err) {
      result = resultFromError(err);
    }
  }
  return {
    toolCallId: req.toolCallId,
    content: result.content,
    isError: result.isError ?? false,
    ...(result.errorCode ? { errorCode: result.errorCode } : {}),
    ...(result.truncated ? { truncated: result.truncated } : {}),
  };
}

/** A reply over the bus payload cap would not be delivered at all: say so instead. */
function fitReply(rt: ActorRuntime, reply: ToolCallReply): ToolCallReply {
  const size = Buffer.byteLength(JSON.stringify(reply), "utf8");
  if (size <= rt.config.bus.maxPayloadBytes - 1024) return reply;
  return {
    toolCallId: reply.toolCallId,
    content: [{ type: "text", text: `the result (${size} bytes) is larger than the bus allows (${rt.config.bus.maxPayloadBytes} bytes); ask for less (e.g. read with offset and limit)` }],
    isError: true,
    errorCode: "LIMIT_EXCEEDED",
    durationMs: reply.durationMs,
  };
}

