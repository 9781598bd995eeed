/** `lurk.approvals.<op>`: human-in-the-loop decisions, signed tokens bound to one tool call. */
import { z } from "zod";
import { agentIdSchema, originSchema, sessionKeySchema } from "../common.js";
import { defineMessage, idSchema, timestampSchema } from "../envelope.js";

export const approvalDecisionSchema = z.enum(["approve", "deny", "timeout"]);

export const approvalRecordSchema = z.object({
  approvalId: idSchema,
  toolCallId: idSchema,
  tool: z.string(),
  /** sha256 of the canonical JSON of the arguments */
  argsHash: z.string().regex(/^[0-9a-f]{64}$/),
  command: z.string().max(20_000).optional(),
  sessionKey: sessionKeySchema,
  agentId: agentIdSchema,
  origin: originSchema.optional(),
  reason: z.string().max(1000).optional(),
  createdAt: timestampSchema,
  expiresAt: timestampSchema,
  status: z.enum(["pending", "approved", "denied", "expired"]),
  decidedAt: timestampSchema.optional(),
  decidedBy: z.string().max(200).optional(),
  /** when a tools instance ran the approved call (`redeem`): the token cannot be used again */
  usedAt: timestampSchema.optional(),
});
export type ApprovalRecord = z.infer<typeof approvalRecordSchema>;

export const approvalsRequestRequest = defineMessage("lurk.approvals.request.v1", {
  toolCallId: idSchema,
  tool: z.string(),
  argsHash: approvalRecordSchema.shape.argsHash,
  command: z.string().max(20_000).optional(),
  sessionKey: sessionKeySchema,
  agentId: agentIdSchema,
  origin: originSchema.optional(),
  reason: z.string().max(1000).optional(),
  timeoutMs: z.number().int().positive().max(24 * 3600_000).optional(),
});
export const approvalsWaitRequest = defineMessage("lurk.approvals.wait.v1", {
  approvalId: idSchema,
  /** how long to hold the request open; answer is the record as it is then */
  waitMs: z.number().int().nonnegative().max(60_000).default(30_000),
});
export const approvalsDecideRequest = defineMessage("lurk.approvals.decide.v1", {
  approvalId: idSchema,
  decision: z.enum(["approve", "deny"]),
  decidedBy: z.string().min(1).max(200),
});
export const approvalsGetRequest = defineMessage("lurk.approvals.get.v1", { approvalId: idSchema });
export const approvalsListRequest = defineMessage("lurk.approvals.list.v1", {
  status: approvalRecordSchema.shape.status.optional(),
  limit: z.number().int().min(1).max(1000).default(100),
});

/**
 * Marks an approved record as used, once: a tools instance calls it before running the approved
 * call, so one token runs one call across every tools instance. A second redeem is CONFLICT;
 * a record that is not approved, or was approved for another call, is CONFLICT too.
 */
export const approvalsRedeemRequest = defineMessage("lurk.approvals.redeem.v1", {
  approvalId: idSchema,
  toolCallId: idSchema,
  argsHash: approvalRecordSchema.shape.argsHash,
});

/** A decision token: `base64url(JSON payload).base64url(ed25519 signature)`. */
export const approvalTokenPayloadSchema = z.object({
  approvalId: idSchema,
  toolCallId: idSchema,
  argsHash: approvalRecordSchema.shape.argsHash,
  decision: z.literal("approve"),
  expiresAt: timestampSchema,
});

export const approvalReply = z.object({ approval: approvalRecordSchema, token: z.string().optional() });
export const approvalListReply = z.object({ approvals: z.array(approvalRecordSchema) });
