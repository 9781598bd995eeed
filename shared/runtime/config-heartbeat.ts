/**
 * The `heartbeat` key of the configuration (services/heartbeat, seeds 001 §3.7): a periodic
 * HEARTBEAT.md check per agent. Global settings, and per-agent overrides under `agents.<agentId>`
 * (any field but `agents`). `resolveHeartbeatConfig` merges them for one agent.
 */
import { z } from "zod";
import { agentIdSchema, sessionKeySchema } from "../contract/index.js";
import { modelRefSchema } from "./config-models.js";
import { LEASE_DEFAULTS, leaseConfigShape, leaseRenewRule } from "./config-lease.js";
import { isValidTimeZone } from "./time-zone.js";

/** seeds: DEFAULT_HEARTBEAT_ACK_MAX_CHARS */
export const DEFAULT_HEARTBEAT_ACK_MAX_CHARS = 100;
export const DEFAULT_HEARTBEAT_INTERVAL_MINUTES = 30;

const HHMM = /^([01]\d|2[0-3]):[0-5]\d$|^24:00$/;


export const activeHoursSchema = z.object({
  /** "HH:MM", local to timeZone */
  start: z.string().regex(HHMM, "activeHours.start: HH:MM, e.g. 08:00").default("08:00"),
  /** "HH:MM" or "24:00"; an end before the start is a window across midnight (22:00-06:00) */
  end: z.string().regex(HHMM, "activeHours.end: HH:MM or 24:00, e.g. 22:00").default("22:00"),
  /** IANA time zone (default: the host's) */
  timeZone: z.string().refine(isValidTimeZone, "unknown time zone, e.g. Europe/Berlin").optional(),
}).refine((w) => w.start !== w.end, "activeHours: start and end are equal (an empty window); leave activeHours out to run at any hour");
export type ActiveHours = z.infer<typeof activeHoursSchema>;

const heartbeatFields = {
  enabled: z.boolean(),
  /** minutes between two heartbeats of one agent (fractions allowed, at least one second) */
  intervalMinutes: z.number().min(1 / 60).max(7 * 24 * 60),
  /** outside this window no heartbeat runs (no LLM call); absent = always */
  activeHours: activeHoursSchema.optional(),
  /**
   * where the run happens and the alert goes: "main" = the agent's main session, delivered to its
   * last origin; "last" = the agent's most recently active session with an origin (else main)
   */
  target: z.enum(["main", "last"]),
  /** a reply with HEARTBEAT_OK and at most this many other characters is an acknowledgement, not delivered */
  ackMaxChars: z.number().int().min(0).max(10_000),
  /** replaces the default heartbeat prompt (which quotes HEARTBEAT.md) */
  prompt: z.string().min(1).max(20_000).optional(),
  /** how long to wait for a heartbeat run's end before it counts as failed */
  runTimeoutMs: z.number().int().positive().max(24 * 3600_000),
  /** seeds `model`: the model of heartbeat runs (`provider/model` or an alias, e.g. a cheaper one); absent: the agent's */
  model: modelRefSchema.optional(),
  /**
   * seeds `session`: the session key heartbeat runs happen in (one of the agent's, e.g.
   * agent:main:cron:heartbeat, keeping the checks out of the conversation); absent: the target's
   * session. The alert still goes to the target's last origin.
   */
  session: sessionKeySchema.optional(),
  /** seeds `include_reasoning`: an alert is preceded by the run's reasoning (the model's thinking) as its own message */
  includeReasoning: z.boolean(),
};

export const heartbeatAgentOverrideSchema = z.object(heartbeatFields).partial();
export type HeartbeatAgentOverride = z.infer<typeof heartbeatAgentOverrideSchema>;

export const HEARTBEAT_DEFAULTS = {
  enabled: true,
  intervalMinutes: DEFAULT_HEARTBEAT_INTERVAL_MINUTES,
  target: "main" as const,
  ackMaxChars: DEFAULT_HEARTBEAT_ACK_MAX_CHARS,
  runTimeoutMs: 5 * 60_000,
  includeReasoning: false,
  ...LEASE_DEFAULTS,
  agents: {} as Record<string, HeartbeatAgentOverride>,
};

export const heartbeatConfigSchema = z.object({
  enabled: heartbeatFields.enabled.default(HEARTBEAT_DEFAULTS.enabled),
  intervalMinutes: heartbeatFields.intervalMinutes.default(HEARTBEAT_DEFAULTS.intervalMinutes),
  activeHours: heartbeatFields.activeHours,
  target: heartbeatFields.target.default(HEARTBEAT_DEFAULTS.target),
  ackMaxChars: heartbeatFields.ackMaxChars.default(HEARTBEAT_DEFAULTS.ackMaxChars),
  prompt: heartbeatFields.prompt,
  runTimeoutMs: heartbeatFields.runTimeoutMs.default(HEARTBEAT_DEFAULTS.runTimeoutMs),
  model: heartbeatFields.model,
  session: heartbeatFields.session,
  includeReasoning: heartbeatFields.includeReasoning.default(HEARTBEAT_DEFAULTS.includeReasoning),
  /** one heartbeat instance is active (config-lease.ts); not per agent */
  ...leaseConfigShape,
  /** per-agent overrides keyed by agent id */
  agents: z.record(agentIdSchema, heartbeatAgentOverrideSchema).default(HEARTBEAT_DEFAULTS.agents),
}).refine(...leaseRenewRule("heartbeat")).default(HEARTBEAT_DEFAULTS);
export type HeartbeatConfig = z.infer<typeof heartbeatConfigSchema>;

/** One agent's effective heartbeat settings. */
export type AgentHeartbeatConfig = Omit<HeartbeatConfig, "agents" | "leaseTtlMs" | "leaseRenewMs"> & { everyMs: number };

export function resolveHeartbeatConfig(config: HeartbeatConfig, agentId: string): AgentHeartbeatConfig {
  const { agents, leaseTtlMs: _ttl, leaseRenewMs: _renew, ...global } = config;
  const override = agents[agentId] ?? {};
  const merged = { ...global, ...Object.fromEntries(Object.entries(override).filter(([, v]) => v !== undefined)) } as Omit<HeartbeatConfig, "agents">;
  return { ...merged, everyMs: Math.round(merged.intervalMinutes * 60_000) };
}
