/**
 * The approval gate of `lurk.tools.call.<tool>` (seeds 000 §5, 001 §19.2): a call that needs a
 * human approval runs only with a valid approval token. Needs approval: a tool marked
 * `needsApproval`, and exec by `tools.exec.ask` ("off"; "on-miss": a command that is not one
 * simple command named in `tools.exec.allowlist`; "always").
 *
 * With `approvalToken` in the request the token must verify with the approvals actor's public
 * key ($SRV.INFO metadata `approvalsPublicKey`, cached), name this tool call id and the sha256
 * of this call's canonical arguments, be unexpired, and not have been used before: the gate
 * redeems it with the approvals actor (`redeem`, which marks the approval used in its LMDB and
 * refuses a second redeem), so a token runs one call across every tools instance; a local
 * used-token set answers repeats here without a round trip. No approvals actor: refused. Without one, the gate asks the approvals actor
 * (`request`, then `wait` until decided or expired) and checks the token it gets the same way.
 * Denied, expired or invalid: a TOOL_DENIED result the model sees; the tool does not run.
 * Arguments never bypass the gate (an `approved: true` argument is just an argument).
 */
import type { KeyObject } from "node:crypto";
import { Svcm } from "@nats-io/services";
import { LurkError, type ApprovalRecord, type Origin, type ToolCallRequest } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { argsHash, publicKeyFromBase64, verifyApprovalToken } from "../../shared/runtime/approval-token.js";
import type { LurkConfig } from "../../shared/runtime/config.js";
import { errorResult } from "./content.js";
import type { Tool, ToolResult } from "./tool.js";

/** Characters that make a command more than one simple command (lists, pipes, redirections, substitutions, globs of other commands). */
const SHELL_SYNTAX = /[;&|`$<>(){}\n\r\\!*?[\]~'"#=]/;
/** one `wait` holds this long at most, so a restarted approvals actor is noticed soon */
const WAIT_SLICE_MS = 5_000;

export function execCommandAllowlisted(command: string, allowlist: readonly string[]): boolean {
  const trimmed = command.trim();
  if (!trimmed || SHELL_SYNTAX.test(trimmed)) return false;
  const name = trimmed.split(/\s+/)[0]!;
  return allowlist.includes(name);
}

/** Whether this call must be approved by a human first. */
export function callNeedsApproval(config: LurkConfig, tool: Tool, args: Record<string, unknown>): boolean {
  if (tool.needsApproval) return true;
  // a background job (`process` start) runs a command like exec does, under the same rule
  const runsCommand = tool.name === "exec" || (tool.name === "process" && args.action === "start");
  if (!runsCommand) return false;
  const ask = config.tools.exec.ask;
  if (ask === "always") return true;
  if (ask === "off") return false;
  return !execCommandAllowlisted(typeof args.command === "string" ? args.command : "", config.tools.exec.allowlist);
}

export const DENIED_TEXT = "Tool execution denied";

export class ApprovalGate {
  private publicKey: { key: KeyObject; fetchedAt: number } | undefined;
  /** approval ids of tokens used here -> when the token expires */
  private readonly used = new Map<string, number>();

  constructor(private readonly rt: ActorRuntime) {}

  /** null: the call may run; otherwise the result to answer with. */
  async check(tool: Tool, req: ToolCallRequest): Promise<ToolResult | null> {
    if (!callNeedsApproval(this.rt.config, tool, req.args)) return null;
    const hash = argsHash(req.args);
    if (req.approvalToken !== undefined) {
      const problem = await this.accept(req.approvalToken, req.toolCallId, hash);
      if (problem) {
        this.rt.log.warn({ tool: req.tool, toolCallId: req.toolCallId, problem }, "approval token refused");
        return errorResult("TOOL_DENIED", `${DENIED_TEXT}: the approval token was refused (${problem}).`);
      }
      return null;
    }
    let record: ApprovalRecord;
    let token: string | undefined;
    try {
      ({ approval: record, token } = await this.ask(tool, req, hash));
    } catch (err) {
      const e = LurkError.from(err);
      this.rt.log.warn({ err: e, tool: req.tool, toolCallId: req.toolCallId }, "approval could not be asked for");
      return errorResult("TOOL_DENIED", `${DENIED_TEXT}: this call needs a human approval, and none could be obtained (${e.message}).`);
    }
    if (record.status !== "approved" || !token) {
      const why = record.status === "expired" ? "nobody approved it in time" : record.status === "denied" ? `denied by ${record.decidedBy ?? "a human"}` : "no decision";
      return errorResult("TOOL_DENIED", `${DENIED_TEXT} (approval ${record.approvalId}: ${why}). Do not retry the same call unless the user asks for it.`);
    }
    const problem = await this.accept(token, req.toolCallId, hash);
    if (problem) return errorResult("TOOL_DENIED", `${DENIED_TEXT}: the approval token was refused (${problem}).`);
    return null;
  }

  private async ask(tool: Tool, req: ToolCallRequest, hash: string): Promise<{ approval: ApprovalRecord; token?: string | undefined }> {
    const client = this.rt.client;
    const origin = await this.originOf(req.sessionKey);
    const command = typeof req.args.command === "string" ? req.args.command.slice(0, 20_000) : undefined;
    let answer = await client.call("approvals", "request", {
      toolCallId: req.toolCallId,
      tool: tool.name,
      argsHash: hash,
      ...(command !== undefined ? { command } : {}),
      sessionKey: req.sessionKey,
      agentId: req.agentId,
      ...(origin ? { origin } : {}),
    }, { causationId: req.id, runId: req.runId });
    const { approvalId, expiresAt } = answer.approval;
    while (answer.approval.status === "pending") {
      if (this.rt.signal.aborted) throw new LurkError("ABORTED", "the tools actor is stopping");
      const waitMs = Math.max(0, Math.min(WAIT_SLICE_MS, expiresAt - Date.now() + 100));
      try {
        answer = await client.call("approvals", "wait", { approvalId, waitMs }, { timeoutMs: waitMs + 2_000, causationId: req.id });
      } catch (err) {
        // the approvals actor restarting (its records are on disk): keep asking until well past the expiry
        const code = LurkError.from(err).code;
        if ((code !== "TIMEOUT" && code !== "UNAVAILABLE") || Date.now() > expiresAt + 10_000) throw err;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    return answer;
  }

  /** Where the session last heard from (the approval notice goes there); none when unknown. */
  private async originOf(sessionKey: string): Promise<Origin | undefined> {
    try {
      const { session } = await this.rt.client.call("sessions", "get", { sessionKey }, { timeoutMs: 3_000 });
      return session?.lastOrigin;
    } catch {
      return undefined;
    }
  }

  /** A problem with the token, or null when it is valid for this call (it is then marked used). */
  private async accept(token: string, toolCallId: string, hash: string): Promise<string | null> {
    let key: KeyObject;
    try {
      key = await this.key(false);
    } catch (err) {
      return `the approvals actor's public key is not available: ${LurkError.from(err).message}`;
    }
    let payload = verifyApprovalToken(key, token);
    if (!payload) {
      // the approvals actor may have a new key (a new data dir): ask again, at most once a minute
      const fresh = await this.key(true).catch(() => undefined);
      if (fresh && fresh !== key) payload = verifyApprovalToken(fresh, token);
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

  private async key(refresh: boolean): Promise<KeyObject> {
    const cached = this.publicKey;
    if (cached && (!refresh || Date.now() - cached.fetchedAt < 60_000)) return cached.key;
    const client = new Svcm(this.rt.nc).client({ strategy: "stall", maxWait: 2_000, stall: 300 });
    for await (const info of await client.info("approvals")) {
      const b64 = info.metadata?.approvalsPublicKey;
      if (!b64) continue;
      const key = publicKeyFromBase64(b64);
      this.publicKey = { key, fetchedAt: Date.now() };
      return key;
    }
    if (cached) return cached.key;
    throw new LurkError("UNAVAILABLE", "no approvals service answered $SRV.INFO (is the approvals actor running?)");
  }
}

const gates = new WeakMap<ActorRuntime, ApprovalGate>();

/** The gate of one tools actor runtime (its public key cache and used-token set). */
export function approvalGateFor(rt: ActorRuntime): ApprovalGate {
  let gate = gates.get(rt);
  if (!gate) gates.set(rt, (gate = new ApprovalGate(rt)));
  return gate;
}
