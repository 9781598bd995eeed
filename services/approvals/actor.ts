/**
 * The approvals actor: human-in-the-loop decisions on tool calls (seeds 000 §5, 001 §19.2).
 * Serves `lurk.approvals.request|wait|decide|get|redeem|list` from its LMDB store under
 * `<dataDir>/approvals`. An approved record comes with a token signed by this actor's ed25519
 * key (generated on first start, `<dataDir>/approvals/signing-key.pem`, mode 0600) and bound
 * to the approval, the tool call id, the args hash and an expiry; the public key is the
 * service metadata `approvalsPublicKey`, so the tools actor verifies tokens without a secret.
 * Pending records expire (= denied) after `approvals.timeoutMs` (default 5 min).
 * A request with an origin gets an OutboundMessage of kind "approval" in that conversation.
 * Several instances may run (on several hosts); one is active, through the lease `approvals` in
 * lurk_leases (`approvals.leaseTtlMs`/`leaseRenewMs`; shared/runtime/active-instance.ts). Only it
 * answers requests (a standby relays them to it), sends notices, holds the `wait` long-polls and
 * sweeps expiries. It writes every record change to the KV bucket lurk_approvals (replica.ts)
 * before answering; an instance taking the lease loads it first. Each instance signs with its
 * own key and publishes it; the tools side accepts a token of any of them (approval-keys.ts).
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { LurkError, outboundMessageSchema, type ApprovalRecord } from "../../shared/contract/index.js";
import { ActiveInstance } from "../../shared/runtime/active-instance.js";
import type { ActorDefinition, ActorRuntime } from "../../shared/runtime/actor.js";
import { signApprovalToken } from "../../shared/runtime/approval-token.js";
import type { LurkConfig } from "../../shared/runtime/config.js";
import { deadLocalHolder } from "../../shared/runtime/dead-holder.js";
import { LURKBOT_VERSION } from "../../shared/runtime/version.js";
import { loadOrCreateSigningKey } from "./keys.js";
import { ApprovalReplica } from "./replica.js";
import { ApprovalStore } from "./store.js";

const SWEEP_INTERVAL_MS = 250;
/** a standby waits this much longer than a relayed `wait` holds */
const WAIT_RELAY_MARGIN_MS = 1_000;

export function approvalsDir(config: LurkConfig): string {
  return join(config.dataDir, "approvals");
}

const newApprovalId = () => `apr-${randomBytes(5).toString("hex")}`;

export const definition: ActorDefinition = {
  name: "approvals",
  version: LURKBOT_VERSION,
  description: "human approvals of tool calls and signed decision tokens (LMDB)",
  metadata(config) {
    return { approvalsPublicKey: loadOrCreateSigningKey(approvalsDir(config)).publicKeyBase64 };
  },
  async start(rt) {
    const dir = approvalsDir(rt.config);
    const { privateKey } = loadOrCreateSigningKey(dir);
    const store = new ApprovalStore(join(dir, "store"));
    const replica = await ApprovalReplica.open(rt.nc, store, rt.log);
    store.onChange = (record) => replica.write(record);
    const cfg = rt.config.approvals;
    const waiters = new Map<string, Set<() => void>>();
    const instance = await ActiveInstance.open(rt, "approvals", {
      ttlMs: cfg.leaseTtlMs,
      renewMs: cfg.leaseRenewMs,
      takeOver: async () => rt.log.info(await replica.load(), "approval records loaded from the replica bucket"),
      standBy: () => undefined, // long-polls under way end at their time; the callers ask again
      // a restart after a crash on this host answers at once, not after leaseTtlMs (a single instance is the common case)
      holderGone: deadLocalHolder(rt.nc, "approvals"),
    });

    const decided = (record: ApprovalRecord) => {
      for (const wake of waiters.get(record.approvalId) ?? []) wake();
      waiters.delete(record.approvalId);
      rt.emit("decided", {
        approvalId: record.approvalId, toolCallId: record.toolCallId, tool: record.tool, status: record.status,
        decision: record.status === "approved" ? "approve" : record.status === "expired" ? "timeout" : "deny",
        decidedBy: record.decidedBy, sessionKey: record.sessionKey,
      });
    };
    /** The record now (expiring it when overdue), or NOT_FOUND. */
    const current = async (approvalId: string): Promise<ApprovalRecord> => {
      const expired: ApprovalRecord[] = [];
      const record = await store.get(approvalId, expired);
      expired.forEach(decided);
      if (!record) throw new LurkError("NOT_FOUND", `no approval ${approvalId} (see \`lurkbot approvals list\`)`);
      return record;
    };
    const reply = (approval: ApprovalRecord) => {
      if (approval.status !== "approved") return { approval };
      const token = signApprovalToken(privateKey, {
        approvalId: approval.approvalId,
        toolCallId: approval.toolCallId,
        argsHash: approval.argsHash,
        decision: "approve",
        expiresAt: (approval.decidedAt ?? Date.now()) + cfg.tokenTtlMs,
      });
      return { approval, token };
    };

    const sweeper = setInterval(() => {
      if (!instance.isActive()) return;
      store.sweep().then((done) => done.forEach(decided), (err) => rt.log.warn({ err }, "approval sweep failed"));
    }, SWEEP_INTERVAL_MS);
    sweeper.unref();

    const relay = instance.relay;
    relay.serve("request", async (req) => {
      // a retried request for the same call (its tools actor or agent-runner restarted) gets the
      // same approval: still pending, or decided and not yet used while its token is valid (so
      // a decision made while the caller was away still reaches the run)
      const now = Date.now();
      const same = store.newest((r) => r.toolCallId === req.toolCallId && r.argsHash === req.argsHash && (r.status === "pending"
        ? r.expiresAt > now
        : (r.status === "approved" || r.status === "denied") && r.usedAt === undefined && (r.decidedAt ?? 0) + cfg.tokenTtlMs > now));
      if (same) return reply(same);
      const record: ApprovalRecord = {
        approvalId: newApprovalId(),
        toolCallId: req.toolCallId,
        tool: req.tool,
        argsHash: req.argsHash,
        ...(req.command !== undefined ? { command: req.command } : {}),
        sessionKey: req.sessionKey,
        agentId: req.agentId,
        ...(req.origin ? { origin: req.origin } : {}),
        ...(req.reason !== undefined ? { reason: req.reason } : {}),
        createdAt: now,
        expiresAt: now + Math.min(req.timeoutMs ?? cfg.timeoutMs, cfg.timeoutMs),
        status: "pending",
      };
      await store.create(record);
      rt.emit("requested", { approvalId: record.approvalId, toolCallId: record.toolCallId, tool: record.tool, sessionKey: record.sessionKey, expiresAt: record.expiresAt });
      if (record.origin) await deliverNotice(rt, record);
      return { approval: record };
    });

    relay.serve("wait", async (req) => {
      let record = await current(req.approvalId);
      if (record.status !== "pending" || req.waitMs === 0) return reply(record);
      await new Promise<void>((resolve) => {
        const set = waiters.get(req.approvalId) ?? new Set<() => void>();
        waiters.set(req.approvalId, set);
        const done = () => {
          clearTimeout(timer);
          set.delete(done);
          rt.signal.removeEventListener("abort", done);
          resolve();
        };
        // wake at the expiry too, so the answer is "expired" and not "still pending"
        const timer = setTimeout(done, Math.max(0, Math.min(req.waitMs, record.expiresAt - Date.now() + 20)));
        set.add(done);
        rt.signal.addEventListener("abort", done);
      });
      record = await current(req.approvalId);
      return reply(record);
    }, { relayTimeoutMs: (req) => req.waitMs + WAIT_RELAY_MARGIN_MS });

    relay.serve("decide", async (req) => {
      const record = await current(req.approvalId);
      if (record.status !== "pending") throw new LurkError("CONFLICT", `approval ${req.approvalId} is ${record.status} already; only pending approvals can be decided`);
      const updated = await store.decide(req.approvalId, req.decision === "approve" ? "approved" : "denied", req.decidedBy);
      if (!updated) {
        const now = await current(req.approvalId);
        throw new LurkError("CONFLICT", `approval ${req.approvalId} is ${now.status} already; only pending approvals can be decided`);
      }
      decided(updated);
      return reply(updated);
    });

    relay.serve("get", async (req) => reply(await current(req.approvalId)));

    // single use across tools instances: the gate redeems a token before the call runs
    relay.serve("redeem", async (req) => {
      const outcome = await store.redeem(req.approvalId, req.toolCallId, req.argsHash);
      if (outcome === "missing") throw new LurkError("NOT_FOUND", `no approval ${req.approvalId}`);
      if (outcome === "mismatch") throw new LurkError("CONFLICT", `approval ${req.approvalId} is not an approval of this tool call`);
      if (outcome === "used") throw new LurkError("CONFLICT", `approval ${req.approvalId} was used already`);
      rt.emit("redeemed", { approvalId: outcome.approvalId, toolCallId: outcome.toolCallId, tool: outcome.tool });
      return { approval: outcome };
    });

    relay.serve("list", async (req) => {
      (await store.sweep()).forEach(decided);
      return { approvals: store.list(req.status, req.limit) };
    });

    // the first try decides before the actor reports started: active (records loaded) or standby
    await instance.start();

    return {
      stop: async () => {
        clearInterval(sweeper);
        await replica.drain();
        await instance.stop(); // released: a standby takes over at once
        await store.close();
      },
    };
  },
};

/** The "approval" notice in the origin conversation (OUTBOUND stream, msgID = the approval id). */
async function deliverNotice(rt: ActorRuntime, record: ApprovalRecord): Promise<void> {
  const origin = record.origin!;
  const minutes = Math.max(1, Math.round((record.expiresAt - record.createdAt) / 60_000));
  const what = record.command !== undefined ? `${record.tool}: ${record.command.length > 500 ? `${record.command.slice(0, 500)}…` : record.command}` : record.tool;
  const parsed = outboundMessageSchema.safeParse({
    type: "lurk.outbound.message.v1",
    id: `approval-${record.approvalId}`,
    ts: Date.now(),
    channel: origin.channel,
    conversation: origin.conversation,
    ...(origin.accountId ? { accountId: origin.accountId } : {}),
    ...(origin.peer ? { peer: origin.peer } : {}),
    kind: "approval",
    replyTo: origin.messageIds,
    text: `Approval needed — ${what}\nReply /approve ${record.approvalId} or /deny ${record.approvalId} (expires in ${minutes} min; no answer = denied).`,
    approval: { approvalId: record.approvalId, tool: record.tool, ...(record.command !== undefined ? { command: record.command } : {}), expiresAt: record.expiresAt, toolCallId: record.toolCallId },
  });
  if (!parsed.success) {
    rt.log.warn({ approvalId: record.approvalId, issues: parsed.error.issues.slice(0, 3) }, "approval notice does not match the contract");
    return;
  }
  try {
    await rt.js.publish(rt.subjects.outbound(origin.channel, origin.conversation), JSON.stringify(parsed.data), { msgID: record.approvalId });
  } catch (err) {
    rt.log.warn({ err, approvalId: record.approvalId }, "could not deliver the approval notice");
  }
}
