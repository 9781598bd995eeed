/** `lurk.router.<op>`: the router's lanes (one active run per session) and queues. */
import { z } from "zod";
import { queueModeSchema, sessionKeySchema } from "../common.js";
import { defineMessage, idSchema, timestampSchema } from "../envelope.js";

export const laneSchema = z.object({
  sessionKey: sessionKeySchema,
  activeRunId: idSchema.optional(),
  activeSince: timestampSchema.optional(),
  queued: z.number().int().nonnegative(),
  queueMode: queueModeSchema,
});

export const routerStatusRequest = defineMessage("lurk.router.status.v1", {});
export const routerLanesRequest = defineMessage("lurk.router.lanes.v1", { sessionKey: sessionKeySchema.optional() });

export const routerStatusReply = z.object({
  defaultAgentId: z.string(),
  agents: z.array(z.string()),
  activeRuns: z.number().int().nonnegative(),
  queued: z.number().int().nonnegative(),
  processed: z.number().int().nonnegative(),
});
export const routerLanesReply = z.object({ lanes: z.array(laneSchema) });

/** A pairing code given to an unknown DM sender (DM policy "pairing"), valid until `expiresAt`. */
export const pairingPendingSchema = z.object({
  code: z.string().min(4).max(32),
  channel: z.string(),
  senderId: z.string(),
  senderName: z.string().optional(),
  /** where the code was sent; the approval notice goes there too */
  conversation: z.string().optional(),
  createdAt: timestampSchema,
  expiresAt: timestampSchema,
});
/** A sender allowed to DM (approved pairing). */
export const pairingApprovedSchema = z.object({
  channel: z.string(),
  senderId: z.string(),
  senderName: z.string().optional(),
  approvedAt: timestampSchema,
  approvedBy: z.string().optional(),
});
export type PairingPending = z.infer<typeof pairingPendingSchema>;
export type PairingApproved = z.infer<typeof pairingApprovedSchema>;

/** `lurk.router.pairing`: list pending codes and approved senders; approve or deny a code; revoke a sender. */
export const routerPairingRequest = defineMessage("lurk.router.pairing.v1", {
  action: z.enum(["list", "approve", "deny", "revoke"]),
  /** approve, deny */
  code: z.string().min(1).max(32).optional(),
  /** revoke */
  channel: z.string().max(32).optional(),
  senderId: z.string().max(200).optional(),
  decidedBy: z.string().max(200).optional(),
});
export const routerPairingReply = z.object({
  pending: z.array(pairingPendingSchema),
  approved: z.array(pairingApprovedSchema),
  /** approve/deny: the code's request; revoke: the sender removed */
  decided: pairingPendingSchema.optional(),
  revoked: pairingApprovedSchema.optional(),
});
