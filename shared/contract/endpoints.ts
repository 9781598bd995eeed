/**
 * Every request/reply endpoint of the bus: `lurk.<actor>.<op>` -> request schema, reply schema.
 * The runtime serves them from this table and clients call them through it, so a request and
 * its reply are typed from one place.
 */
import { z } from "zod";
import * as A from "./messages/approvals.js";
import * as AP from "./messages/auth-profiles.js";
import * as C from "./messages/cron.js";
import * as E from "./messages/embeddings.js";
import * as H from "./messages/heartbeat.js";
import * as HK from "./messages/hooks.js";
import * as IM from "./messages/image.js";
import * as MC from "./messages/mcp.js";
import * as R from "./messages/router.js";
import * as S from "./messages/sessions.js";
import * as SA from "./messages/subagents.js";
import * as T from "./messages/tools.js";
import * as V from "./messages/tts.js";
import * as U from "./messages/usage.js";
import type { Operation, OperationActor } from "./subjects.js";

type EndpointSpec = { request: z.ZodType; reply: z.ZodType; description: string };

export const ENDPOINTS = {
  router: {
    status: { request: R.routerStatusRequest, reply: R.routerStatusReply, description: "counts of agents, active runs and queued messages" },
    lanes: { request: R.routerLanesRequest, reply: R.routerLanesReply, description: "per-session lanes: active run and queue" },
    pairing: { request: R.routerPairingRequest, reply: R.routerPairingReply, description: "DM pairing codes: list, approve, deny, revoke" },
  },
  sessions: {
    begin: { request: S.sessionsBeginRequest, reply: S.beginReply, description: "start a run: ensure, status, first records and transcript in one call" },
    ensure: { request: S.sessionsEnsureRequest, reply: S.ensureReply, description: "get or create a session entry (and the daily or idle reset it made)" },
    get: { request: S.sessionsGetRequest, reply: S.sessionOrNullReply, description: "one session entry" },
    list: { request: S.sessionsListRequest, reply: S.sessionListReply, description: "session entries, newest first" },
    history: { request: S.sessionsHistoryRequest, reply: S.historyReply, description: "the newest transcript records" },
    transcripts: { request: S.sessionsTranscriptsRequest, reply: S.transcriptsReply, description: "a session's transcripts: the current one and those earlier resets ended (for exports)" },
    append: { request: S.sessionsAppendRequest, reply: S.appendReply, description: "append records (idempotent by record id)" },
    run: { request: S.sessionsRunRequest, reply: S.runRecordsReply, description: "the newest records (truncated when they exceed one reply) and status of one run (statusOnly: the status alone)" },
    usage: { request: S.sessionsUsageRequest, reply: S.usageReply, description: "add token usage (a purpose: turn, compaction, consolidation, tts, embedding) to a session and the usage ledger; idempotent with idempotencyKey" },
    patch: { request: S.sessionsPatchRequest, reply: S.sessionReply, description: "change session settings" },
    reset: { request: S.sessionsResetRequest, reply: S.resetReply, description: "start a fresh transcript (/new, /reset)" },
    delete: { request: S.sessionsDeleteRequest, reply: S.deleteReply, description: "delete a session and its transcript" },
    usage_report: { request: U.sessionsUsageReportRequest, reply: U.usageReportReply, description: "tokens and USD from the usage ledger, summed per day, agent, model, channel, session type or purpose" },
  },
  tools: {
    list: { request: T.toolsListRequest, reply: T.toolsListReply, description: "this tools actor's catalog (scatter-gather)" },
    explain: { request: T.toolsExplainRequest, reply: T.toolsExplainReply, description: "the tool policy's decision per tool, with layer and rule (scatter-gather)" },
  },
  approvals: {
    request: { request: A.approvalsRequestRequest, reply: A.approvalReply, description: "ask a human to approve a tool call" },
    wait: { request: A.approvalsWaitRequest, reply: A.approvalReply, description: "wait for a decision" },
    decide: { request: A.approvalsDecideRequest, reply: A.approvalReply, description: "approve or deny" },
    get: { request: A.approvalsGetRequest, reply: A.approvalReply, description: "one approval" },
    list: { request: A.approvalsListRequest, reply: A.approvalListReply, description: "approvals by status" },
    redeem: { request: A.approvalsRedeemRequest, reply: A.approvalReply, description: "mark an approved call as run (single use across tools instances)" },
  },
  subagents: {
    spawn: { request: SA.subagentsSpawnRequest, reply: SA.subagentSpawnReply, description: "start a child run" },
    list: { request: SA.subagentsListRequest, reply: SA.subagentListReply, description: "children of a session" },
    stop: { request: SA.subagentsStopRequest, reply: SA.subagentStopReply, description: "stop children" },
  },
  heartbeat: {
    status: { request: H.heartbeatStatusRequest, reply: H.heartbeatStatusReply, description: "heartbeat state per agent" },
    last: { request: H.heartbeatLastRequest, reply: H.heartbeatEventReply, description: "the last heartbeat event" },
    run: { request: H.heartbeatRunRequest, reply: H.heartbeatEventReply, description: "run a heartbeat now" },
    enable: { request: H.heartbeatEnableRequest, reply: H.heartbeatStatusReply, description: "enable heartbeats" },
    disable: { request: H.heartbeatDisableRequest, reply: H.heartbeatStatusReply, description: "disable heartbeats" },
  },
  cron: {
    add: { request: C.cronAddRequest, reply: C.cronJobReply, description: "add a job" },
    list: { request: C.cronListRequest, reply: C.cronJobListReply, description: "list jobs" },
    get: { request: C.cronGetRequest, reply: C.cronJobReply, description: "one job" },
    edit: { request: C.cronEditRequest, reply: C.cronJobReply, description: "change a job" },
    rm: { request: C.cronRmRequest, reply: C.cronRmReply, description: "remove a job" },
    run: { request: C.cronRunRequest, reply: C.cronRunReply, description: "run a job now or when due" },
    runs: { request: C.cronRunsRequest, reply: C.cronRunsReply, description: "the run log" },
    status: { request: C.cronStatusRequest, reply: C.cronStatusReply, description: "scheduler state" },
  },
  hooks: {
    reload: { request: HK.hooksReloadRequest, reply: HK.hooksReloadReply, description: "discover hooks again now (folders and config.json's hooks section)" },
    bootstrap: { request: HK.hooksBootstrapRequest, reply: HK.hooksBootstrapReply, description: "a run's bootstrap files through the agent's agent:bootstrap hooks (agent-runner only)" },
  },
  "agent-runner": {
    embed: { request: E.agentRunnerEmbedRequest, reply: E.agentRunnerEmbedReply, description: "embedding vectors of texts (memory_search's hybrid ranking; tools actor only)" },
    speak: { request: V.agentRunnerSpeakRequest, reply: V.agentRunnerSpeakReply, description: "a voice message of a text, stored in the media store (the tts tool; tools actor only)" },
    auth_state: { request: AP.agentRunnerAuthStateRequest, reply: AP.agentRunnerAuthStateReply, description: "auth profiles' cooldowns, disables, failure counts, last use and rate-limit headers, never a secret (every instance answers; cli and router only)" },
    auth_probe: { request: AP.agentRunnerAuthProbeRequest, reply: AP.agentRunnerAuthProbeReply, description: "one cheap real call per auth profile (the provider's models list): ok, auth failed, rate limited, unreachable (cli only)" },
    describe_image: { request: IM.agentRunnerDescribeImageRequest, reply: IM.agentRunnerDescribeImageReply, description: "the image model's answer to a question about a stored image (the image tool; tools actor only)" },
  },
  mcp: {
    status: { request: MC.mcpStatusRequest, reply: MC.mcpStatusReply, description: "the MCP servers: state, tools served, last error (never a secret)" },
  },
} as const satisfies { [A in OperationActor]: { [O in Operation<A>]: EndpointSpec } };

export type EndpointActor = keyof typeof ENDPOINTS;
export type EndpointOp<A extends EndpointActor> = keyof (typeof ENDPOINTS)[A] & string;
type Spec<A extends EndpointActor, O extends EndpointOp<A>> = (typeof ENDPOINTS)[A][O] extends EndpointSpec ? (typeof ENDPOINTS)[A][O] : never;
/** The request body a caller writes (envelope fields are filled in by the client). */
export type RequestOf<A extends EndpointActor, O extends EndpointOp<A>> = Omit<z.input<Spec<A, O>["request"]>, "type" | "id" | "ts">;
export type ParsedRequestOf<A extends EndpointActor, O extends EndpointOp<A>> = z.output<Spec<A, O>["request"]>;
export type ReplyOf<A extends EndpointActor, O extends EndpointOp<A>> = z.output<Spec<A, O>["reply"]>;

export function endpointSpec<A extends EndpointActor, O extends EndpointOp<A>>(actor: A, op: O): EndpointSpec {
  return (ENDPOINTS[actor] as Record<string, EndpointSpec>)[op]!;
}

/** The versioned `type` of an endpoint's request, e.g. `lurk.sessions.get.v1`. */
export function requestType(actor: EndpointActor, op: string): string {
  return `lurk.${actor}.${op}.v1`;
}
