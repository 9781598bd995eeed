/** The worker's answer as the actor accepts it (task.ts): validated, never trusted. */
import { z } from "zod";
import { sessionKeySchema } from "../../shared/contract/index.js";
import { OUTCOME_LIMITS } from "./task.js";

export const hookOutcomeSchema = z.object({
  messages: z.array(z.string().max(OUTCOME_LIMITS.messageChars)).max(OUTCOME_LIMITS.messages),
  runs: z.array(z.object({ text: z.string().min(1).max(OUTCOME_LIMITS.runChars), sessionKey: sessionKeySchema.optional() })).max(OUTCOME_LIMITS.runs),
  logs: z.array(z.object({ level: z.enum(["info", "warn", "error"]), msg: z.string().max(OUTCOME_LIMITS.logChars) })).max(OUTCOME_LIMITS.logs),
  error: z.object({ kind: z.enum(["threw", "stopped"]), message: z.string().max(2000), stack: z.string().max(4000).optional() }).optional(),
  dropped: z.number().int().nonnegative(),
  /** agent:bootstrap: validated against the contract's file list by bootstrap.ts */
  bootstrapFiles: z.array(z.unknown()).max(1000).optional(),
});
export type ValidOutcome = z.infer<typeof hookOutcomeSchema>;
