/**
 * The agent-runner's auth-profile state, for the operator (`lurkbot auth list`, `lurkbot usage
 * --providers`, the router's `/status`):
 *  - `lurk.agent-runner.auth_state`: per provider and profile its cooldowns (per model), disable,
 *    failure counts by reason, last use, last success, session pins, and the rate-limit headers of
 *    the provider's last response. Every agent-runner instance answers (its own queue group): the
 *    cooldown state is in each host's LMDB and the rate-limit windows in each process's memory, so
 *    callers scatter-gather and merge by `stateId` (one per host's store), labelled by `host`.
 *  - `lurk.agent-runner.auth_probe`: one cheap real call per profile (the provider's models list),
 *    answered by one instance.
 * Never a key, token or client secret: profiles are named by provider, id and credential kind.
 * Only the cli and router users may ask for the state, only the cli user for a probe (nats.conf).
 */
import { z } from "zod";
import { defineMessage } from "../envelope.js";

export const authFailureReasonSchema = z.enum(["rate_limit", "overloaded", "auth", "billing", "timeout", "other"]);
export const authCredentialKindSchema = z.enum(["api key", "token", "oauth client_credentials", "oauth refresh_token", "none"]);

const providerNameSchema = z.string().regex(/^(speech:)?[a-z0-9][a-z0-9-]{0,63}$/, "a provider name, e.g. openai or minimax");
const profileIdSchema = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "a profile id: letters, digits, '.', '_', '-'");
const epochMs = z.number().int().nonnegative();
const failureCountsSchema = z.partialRecord(authFailureReasonSchema, z.number().int().nonnegative());

/** One rate-limit window of the provider's last response (Anthropic `anthropic-ratelimit-<name>-*`, OpenAI `x-ratelimit-*-<name>`). */
export const rateLimitWindowSchema = z.object({
  /** requests, tokens, input-tokens, output-tokens */
  name: z.string().max(40),
  limit: z.number().nonnegative().optional(),
  remaining: z.number().optional(),
  /** when the window is full again (epoch ms): Anthropic's RFC 3339 time, OpenAI's duration after the response */
  resetAt: epochMs.optional(),
});

export const rateLimitSnapshotSchema = z.object({
  /** when the response came (epoch ms) */
  at: epochMs,
  /** its HTTP status */
  status: z.number().int(),
  windows: z.array(rateLimitWindowSchema).max(8),
  /** `retry-after`, in ms, when the response had one */
  retryAfterMs: z.number().int().nonnegative().optional(),
});
export type RateLimitSnapshot = z.infer<typeof rateLimitSnapshotSchema>;

export const modelCooldownSchema = z.object({
  model: z.string().max(200),
  /** the cooldown's end (epoch ms); in the past when it ended but no success cleared the streak yet */
  until: epochMs,
  reason: authFailureReasonSchema,
  /** failures in a row */
  consecutive: z.number().int().nonnegative(),
  lastFailureAt: epochMs,
  failureCounts: failureCountsSchema,
});

export const authProfileStateSchema = z.object({
  id: profileIdSchema,
  kind: authCredentialKindSchema,
  lastUsed: epochMs.optional(),
  /** this process's last successful call with the profile (kept in memory: since the runner started) */
  lastSuccess: epochMs.optional(),
  disabledUntil: epochMs.optional(),
  disabledReason: authFailureReasonSchema.optional(),
  /** billing/auth failures in a row */
  disableCount: z.number().int().nonnegative(),
  /** per model (a cooldown is per profile and model) */
  cooldowns: z.array(modelCooldownSchema).max(200),
  /** the cooldowns' failure counts added up, by reason */
  failureCounts: failureCountsSchema,
  /** sessions pinned to the profile */
  pins: z.number().int().nonnegative(),
  rateLimits: rateLimitSnapshotSchema.optional(),
});
export type AuthProfileState = z.infer<typeof authProfileStateSchema>;

export const authProviderStateSchema = z.object({
  /** the model provider (`openai`, a named instance), or `speech:<provider>` for voice replies' own state */
  provider: providerNameSchema,
  profiles: z.array(authProfileStateSchema).max(200),
});
export type AuthProviderState = z.infer<typeof authProviderStateSchema>;

export const agentRunnerAuthStateRequest = defineMessage("lurk.agent-runner.auth_state.v1", {
  /** only this provider (default: every provider with profiles) */
  provider: providerNameSchema.optional(),
});

export const agentRunnerAuthStateReply = z.object({
  host: z.string().max(255),
  pid: z.number().int().nonnegative(),
  /** the same for the runners sharing one LMDB store (one host): merge their cooldowns by it */
  stateId: z.string().max(64),
  /** the runner's clock when it answered (epoch ms) */
  at: epochMs,
  providers: z.array(authProviderStateSchema).max(100),
});
export type AgentRunnerAuthStateReply = z.infer<typeof agentRunnerAuthStateReply>;

export const authProbeOutcomeSchema = z.enum(["ok", "auth_failed", "rate_limited", "billing", "unreachable", "error", "no_credentials"]);
export type AuthProbeOutcome = z.infer<typeof authProbeOutcomeSchema>;

export const agentRunnerAuthProbeRequest = defineMessage("lurk.agent-runner.auth_probe.v1", {
  /** only this provider (default: every model provider) */
  provider: providerNameSchema.optional(),
  /** only this profile of `provider` */
  profile: profileIdSchema.optional(),
  /** per profile; the probes run side by side (default 10 s) */
  timeoutMs: z.number().int().min(100).max(60_000).optional(),
});

export const authProbeResultSchema = z.object({
  provider: providerNameSchema,
  profile: profileIdSchema,
  kind: authCredentialKindSchema,
  outcome: authProbeOutcomeSchema,
  /** what was asked: `GET <host>/v1/models` (a host, never a secret) */
  call: z.string().max(300),
  status: z.number().int().optional(),
  ms: z.number().int().nonnegative(),
  /** the provider's error, secrets redacted */
  message: z.string().max(500).optional(),
  /** an auth failure disables the profile like a real call's (until then) */
  disabledUntil: epochMs.optional(),
});
export type AuthProbeResult = z.infer<typeof authProbeResultSchema>;

export const agentRunnerAuthProbeReply = z.object({
  host: z.string().max(255),
  results: z.array(authProbeResultSchema).max(200),
});
export type AgentRunnerAuthProbeReply = z.infer<typeof agentRunnerAuthProbeReply>;
