/**
 * Background jobs across several tools instances. A job lives in the instance that started it
 * (its id names that instance); a `process` call about it that reaches another instance (the
 * call subjects use a queue group) is forwarded, unchanged, to `lurk.tools.job.<instanceId>`,
 * which only the owner serves (no queue group). `list` gathers the session's jobs from every
 * instance on `lurk.tools.jobs.list` (scatter-gather, ~200 ms). An owner that is gone (its jobs
 * were killed with it) makes the call NOT_FOUND.
 */
import {
  envelope, LurkError, toolCallReply, toolCallRequest, toolJobsListReply, toolJobsListRequest,
  type ToolCallRequest, type ToolJobSummary,
} from "../../../shared/contract/index.js";
import type { z } from "zod";
import type { ActorRuntime } from "../../../shared/runtime/actor.js";
import { gatherReplies } from "../../../shared/runtime/gather.js";
import type { ToolCallInfo, ToolResult } from "../tool.js";
import type { JobTable } from "./table.js";
import type { JobOwner } from "./job.js";

const GATHER_MS = 200;

/** What the `process` tool gets (ctx.host.jobs). */
export interface JobHost {
  table: JobTable;
  /** runs the call on the instance that owns the job */
  forward(instanceId: string, call: ToolCallInfo, args: Record<string, unknown>): Promise<ToolResult>;
  /** the session's jobs on the other instances */
  listElsewhere(owner: JobOwner): Promise<ToolJobSummary[]>;
}

/**
 * Serves this instance's job subjects; `handle` runs a forwarded call here (as the `process`
 * tool, with policy checks like any call).
 */
export function serveJobRoutes(rt: ActorRuntime, table: JobTable, handle: (req: ToolCallRequest) => Promise<z.input<typeof toolCallReply>>): JobHost {
  // service endpoints always join a queue group: one of its own makes every instance hear the list
  const own = `jobs-${table.instanceId}`;
  rt.serveSubject("job-forwarded", rt.subjects.toolJob(table.instanceId), toolCallRequest, toolCallReply, (req) => {
    if (req.tool !== "process") throw new LurkError("VALIDATION_FAILED", `${rt.subjects.toolJob(table.instanceId)} takes process calls only`);
    return handle(req);
  }, { queue: own });
  rt.serveSubject("jobs-list", rt.subjects.toolJobsList, toolJobsListRequest, toolJobsListReply, (req) => ({
    instanceId: table.instanceId,
    jobs: table.list({ agentId: req.agentId, sessionKey: req.sessionKey }).map((job) => job.summary()),
  }), { queue: own });

  return {
    table,
    async forward(instanceId, call, args) {
      try {
        const reply = await rt.client.callSubject(rt.subjects.toolJob(instanceId), "lurk.tools.call.v1", {
          toolCallId: call.toolCallId, runId: call.runId, sessionKey: call.sessionKey, agentId: call.agentId, sessionType: call.sessionType,
          tool: "process", args,
        }, toolCallReply, { timeoutMs: rt.config.tools.timeoutMs + 5_000, runId: call.runId }, "tools");
        return {
          content: reply.content,
          ...(reply.isError ? { isError: true } : {}),
          ...(reply.errorCode ? { errorCode: reply.errorCode } : {}),
          ...(reply.truncated ? { truncated: reply.truncated } : {}),
        };
      } catch (err) {
        const e = LurkError.from(err);
        if (e.code === "UNAVAILABLE") {
          throw new LurkError("NOT_FOUND", `the tools instance ${instanceId} that ran this job is no longer running; its jobs were killed when it stopped`);
        }
        throw e;
      }
    },
    async listElsewhere(owner) {
      const request = envelope("lurk.tools.jobs.list.v1", { ...owner });
      const found: ToolJobSummary[] = [];
      try {
        // a malformed reply (one instance) is skipped; the others still count
        const { replies } = await gatherReplies(rt.nc, rt.subjects.toolJobsList, request, toolJobsListReply, { maxWaitMs: GATHER_MS, limits: rt.limits });
        for (const reply of replies) if (reply.instanceId !== table.instanceId) found.push(...reply.jobs);
      } catch (err) {
        rt.log.warn({ err }, "could not gather the jobs of other tools instances");
      }
      return found;
    },
  };
}
