/**
 * The approval gate of a tool call (seeds 000 §5, 001 §19.2), for every actor that executes
 * tools: the built-in tools actor (services/tools/approval-gate.ts decides which of its calls
 * need one) and tool actors of their own (shared/runtime/tool-serve.ts). A call that needs a
 * human approval runs only with a valid approval token.
 *
 * With `approvalToken` in the request the token must verify with the public key of one of the
 * approvals instances (the `approvalsPublicKey` in each one's $SRV.INFO metadata; approval-keys.ts),
 * name this tool call id and the sha256 of this call's canonical arguments, be unexpired, and not have been used before: the gate
 * redeems it with the approvals actor (`redeem`, which marks the approval used in its LMDB and
 * refuses a second redeem), so a token runs one call across every instance; a local used-token
 * set answers repeats without a round trip. Without a token the gate asks the approvals actor
 * (`request` with the run's origin, where the notice goes; then `wait` until decided or
 * expired) and checks the token it gets the same way. Denied, expired or invalid: a TOOL_DENIED
 * denial the model sees; the tool does not run. Arguments never bypass the gate.
 * Needs the NATS grants approvals.request/wait/redeem and $SRV.INFO.approvals.
 */
import { LurkError, toolProgressSchema, type ApprovalRecord, type ToolCallRequest } from "../contract/index.js";
import { abortable, sleepUnlessAborted } from "./abortable-sleep.js";
import type { ActorRuntime } from "./actor.js";
import { ApprovalKeys } from "./approval-keys.js";
import { argsHash, type ApprovalTokenPayload } from "./approval-token.js";

/** one `wait` holds this long at most, so a restarted approvals actor is noticed soon */
const WAIT_SLICE_MS = 5_000;

/** how long a first approval request rides over an approvals actor that is not answering */
const REQUEST_RETRY_MS = 30_000;

const DENIED_TEXT = "Tool execution denied";

/**
 * Rethrows `err` unless it is the approvals actor restarting (no responder, no answer in time)
 * and `giveUpAt` has not passed; then pauses a moment (less if `signal` fires) before the
 * caller asks again.
 */
async function pauseIfRestarting(err: unknown, giveUpAt: number, signal: AbortSignal): Promise<void> {
  const code = LurkError.from(err).code;
  if ((code !== "TIMEOUT" && code !== "UNAVAILABLE") || Date.now() > giveUpAt) throw err;
  await sleepUnlessAborted(250, signal);
}

/** Why a gated call may not run (the text goes to the model as an error result). */
export interface ApprovalDenial {
  code: "TOOL_DENIED" | "ABORTED";
  text: string;
}

export class ApprovalGate {
  private readonly keys: ApprovalKeys;
  /** approval ids of tokens used here -> when the token expires */
  private readonly used = new Map<string, number>();

  constructor(private readonly rt: ActorRuntime) {
    this.keys = new ApprovalKeys(rt.nc, rt.config.approvals.tokenTtlMs, rt.signal);
  }

  /**
   * For a call that needs approval (the caller decided): null when it may run, otherwise the
   * denial. The request's own token is checked; without one the gate asks for an approval and,
   * while a human decides, sends heartbeats (approvalHeartbeat) right away and before every
   * wait slice (<= 5 s apart). `signal` (the call's cancellation) ends that wait with ABORTED.
   * `summary` gives what the human is shown next to the tool's name (default: a `command`
   * argument); it is asked only when an approval is asked for.
   */
  async check(tool: string, req: ToolCallRequest, signal: AbortSignal = this.rt.signal, summary?: () => Promise<string | undefined> | string | undefined): Promise<ApprovalDenial | null> {
    const hash = argsHash(req.args);
    let token = req.approvalToken;
    if (token === undefined) {
      let record: ApprovalRecord;
      try {
        ({ approval: record, token } = await this.ask(tool, req, hash, signal, summary));
      } catch (err) {
        const e = LurkError.from(err);
        if (e.code === "ABORTED") return { code: "ABORTED", text: `the tool call was cancelled while it waited for an approval (${e.message})` };
        this.rt.log.warn({ err: e, tool: req.tool, toolCallId: req.toolCallId, runId: req.runId }, "approval could not be asked for");
        return { code: "TOOL_DENIED", text: `${DENIED_TEXT}: this call needs a human approval, and none could be obtained (${e.message}).` };
      }
      if (record.status !== "approved" || !token) {
        const why = record.status === "expired" ? "nobody approved it in time" : record.status === "denied" ? `denied by ${record.decidedBy ?? "a human"}` : "no decision";
        return { code: "TOOL_DENIED", text: `${DENIED_TEXT} (approval ${record.approvalId}: ${why}). Do not retry the same call unless the user asks for it.` };
      }
    }
    const problem = await this.accept(token, req.toolCallId, hash);
    if (!problem) return null;
    this.rt.log.warn({ tool: req.tool, toolCallId: req.toolCallId, runId: req.runId, problem }, "approval token refused");
    return { code: "TOOL_DENIED", text: `${DENIED_TEXT}: the approval token was refused (${problem}).` };
  }

  private async ask(tool: string, req: ToolCallRequest, hash: string, signal: AbortSignal, summary?: () => Promise<string | undefined> | string | undefined): Promise<{ approval: ApprovalRecord; token?: string | undefined }> {
    const client = this.rt.client;
    const heartbeat = approvalHeartbeat(this.rt, req);
    // what the human is shown next to the tool's name: the tool's summary, else the `command` argument (exec's)
    const shown = (await summary?.()) ?? req.args.command;
    const command = typeof shown === "string" ? shown.slice(0, 20_000) : undefined;
    // the notice goes where the run came from (not where the session last heard from); a
    // system run without an origin has no notice: `lurkbot approvals list` shows it
    const body = {
      toolCallId: req.toolCallId,
      tool,
      argsHash: hash,
      ...(command !== undefined ? { command } : {}),
      sessionKey: req.sessionKey,
      agentId: req.agentId,
      ...(req.origin ? { origin: req.origin } : {}),
    };
    // a request that meets the approvals actor restarting is asked again (it answers a repeated
    // request for the same call with the same approval) for up to REQUEST_RETRY_MS
    const giveUpAt = Date.now() + REQUEST_RETRY_MS;
    let answer;
    for (;;) {
      try {
        answer = await abortable(client.call("approvals", "request", body, { causationId: req.id, runId: req.runId }), signal, abortError);
        break;
      } catch (err) {
        await pauseIfRestarting(err, giveUpAt, signal);
      }
    }
    const { approvalId, expiresAt } = answer.approval;
    while (answer.approval.status === "pending") {
      if (signal.aborted) throw abortError(signal);
      heartbeat(approvalId);
      const waitMs = Math.max(0, Math.min(WAIT_SLICE_MS, expiresAt - Date.now() + 100));
      try {
        answer = await abortable(client.call("approvals", "wait", { approvalId, waitMs }, { timeoutMs: waitMs + 2_000, causationId: req.id }), signal, abortError);
      } catch (err) {
        // the approvals actor restarting (its records are on disk): keep asking until well past the expiry
        await pauseIfRestarting(err, expiresAt + 10_000, signal);
      }
    }
    return answer;
  }

  /** A problem with the token, or null when it is valid for this call (it is then marked used). */
  private async accept(token: string, toolCallId: string, hash: string): Promise<string | null> {
    let payload: ApprovalTokenPayload | null;
    try {
      payload = await this.keys.verify(token);
    } catch (err) {
      return `the approvals actor's public key is not available: ${LurkError.from(err).message}`;
    }
    if (!payload) return "bad signature or malformed token";
    if (payload.decision !== "approve") return "not an approval";
    if (payload.toolCallId !== toolCallId) return "it was issued for another tool call";
    if (payload.argsHash !== hash) return "it was issued for other arguments";
    const now = Date.now();
    if (payload.expiresAt <= now) return "it has expired";
    for (const [id, expiresAt] of this.used) if (expiresAt <= now) this.used.delete(id);
    if (this.used.has(payload.approvalId)) return "it was used already";
    this.used.set(payload.approvalId, payload.expiresAt);
    try {
      await this.rt.client.call("approvals", "redeem", { approvalId: payload.approvalId, toolCallId, argsHash: hash }, { timeoutMs: 5_000 });
    } catch (err) {
      const e = LurkError.from(err);
      if (e.code === "CONFLICT") return e.message.includes("used already") ? "it was used already" : e.message;
      // not known to be unused: let a later attempt try again
      this.used.delete(payload.approvalId);
      return `it could not be redeemed with the approvals actor (${e.code}: ${e.message})`;
    }
    return null;
  }
}

/** The ABORTED error a cancelled gated call ends with (the signal's reason as its message). */
function abortError(signal: AbortSignal): LurkError {
  return new LurkError("ABORTED", signal.reason instanceof Error ? signal.reason.message : "the call was cancelled");
}

/**
 * The heartbeat of a call waiting for a human: `lurk.tools.progress.<runId>` with
 * `waitingForApproval`, which tells the caller the instance holding the call is alive (the
 * agent-runner re-sends a call whose heartbeat stops). Never throws.
 */
function approvalHeartbeat(rt: ActorRuntime, req: ToolCallRequest): (approvalId: string) => void {
  return (approvalId) => {
    const now = Date.now();
    const parsed = toolProgressSchema.safeParse({
      type: "lurk.tools.progress.v1", id: `${req.toolCallId}-wait-${now}`, ts: now, runId: req.runId, sessionKey: req.sessionKey, causationId: req.id,
      toolCallId: req.toolCallId, message: `waiting for approval ${approvalId}`, waitingForApproval: approvalId,
    });
    if (!parsed.success) return;
    try {
      rt.nc.publish(rt.subjects.toolProgress(req.runId), JSON.stringify(parsed.data));
    } catch (err) {
      rt.log.warn({ err }, "could not publish an approval heartbeat");
    }
  };
}

const gates = new WeakMap<ActorRuntime, ApprovalGate>();

/** The gate of one actor runtime (its public keys and used-token set). */
export function approvalGateFor(rt: ActorRuntime): ApprovalGate {
  let gate = gates.get(rt);
  if (!gate) gates.set(rt, (gate = new ApprovalGate(rt)));
  return gate;
}
