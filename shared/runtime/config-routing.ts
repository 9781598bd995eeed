/**
 * `routing` config (services/router): bindings (which agent answers), DM scope (session keys of
 * direct messages), DM and group policies, pairing, broadcast groups, queue modes, inbound
 * debounce and the senders allowed to use owner commands (/approve, /deny, group commands).
 *
 * Sender lists hold "*" (anyone), "<channel>:<senderId>" (one channel) or "<senderId>" (any
 * channel). Group lists hold "<channel>:<groupId>" or "<groupId>". The terminal channel `cli`
 * is always the owner.
 */
import { z } from "zod";
import { leaseConfigShape, leaseRenewRule } from "./config-lease.js";
import { agentIdSchema, queueDropPolicySchema, queueModeSchema } from "../contract/index.js";

const entryListSchema = z.array(z.string().min(1).max(300)).max(10_000);

export const dmPolicySchema = z.enum(["pairing", "allowlist", "open", "disabled"]);
export const groupPolicySchema = z.enum(["open", "allowlist", "disabled"]);
export const dmScopeSchema = z.enum(["main", "per-peer", "per-channel-peer"]);

/**
 * A binding sends matching messages to an agent. Every field given must match; the most
 * specific field decides the binding's tier: peer > guild > team > account > channel.
 */
export const bindingSchema = z.object({
  agentId: agentIdSchema,
  match: z.object({
    channel: z.string().min(1).max(32).optional(),
    accountId: z.string().min(1).max(200).optional(),
    /** a DM partner or a group/channel id (kind optional: any kind) */
    peer: z.object({ kind: z.enum(["dm", "group", "channel"]).optional(), id: z.string().min(1).max(200) }).optional(),
    /** Discord server */
    guildId: z.string().min(1).max(200).optional(),
    /** Slack workspace */
    teamId: z.string().min(1).max(200).optional(),
  }).refine((m) => Object.values(m).some((v) => v !== undefined), "a binding needs at least one of channel, accountId, peer, guildId, teamId"),
});
export type Binding = z.infer<typeof bindingSchema>;

const dmRulesSchema = z.object({ policy: dmPolicySchema.optional(), allowFrom: entryListSchema.optional() });
const groupRulesSchema = z.object({ policy: groupPolicySchema.optional(), allowFrom: entryListSchema.optional(), requireMention: z.boolean().optional() });

export const routingConfigSchema = z.object({
  bindings: z.array(bindingSchema).max(10_000).default([]),
  /** direct-message sessions: one shared main session, one per sender, or one per channel and sender */
  dmScope: dmScopeSchema.default("main"),
  /**
   * with dmScope "per-peer": one person on several channels, one DM session. Canonical name ->
   * "<channel>:<peerId>" entries, e.g. { "alice": ["telegram:123456", "discord:987654321"] }
   * (agent:<a>:dm:alice for both); each entry at most once.
   */
  identityLinks: z.record(
    z.string(),
    z.array(z.string().regex(/^[a-z0-9-]+:.+$/, "\"<channel>:<peerId>\", e.g. telegram:123456")).min(1).max(50),
  ).default({}).superRefine((links, ctx) => {
    const owner = new Map<string, string>();
    for (const [name, entries] of Object.entries(links)) {
      if (!/^[A-Za-z0-9_.-]{1,64}$/.test(name)) ctx.addIssue({ code: "custom", path: [name], message: `"${name}": a canonical name is 1-64 letters, digits, _, . or -, e.g. alice` });
      entries.forEach((entry, i) => {
        const first = owner.get(entry);
        if (first !== undefined) ctx.addIssue({ code: "custom", path: [name, i], message: `"${entry}" is linked to "${first}" already; a sender has one identity` });
        else owner.set(entry, name);
      });
    }
  }),
  dm: z.object({
    /** open: anyone; allowlist: allowFrom and paired senders; pairing: unknown senders get a code; disabled: no DMs */
    policy: dmPolicySchema.default("open"),
    allowFrom: entryListSchema.default([]),
    /** per-channel overrides, e.g. { "telegram": { "policy": "pairing" } } */
    byChannel: z.record(z.string(), dmRulesSchema).default({}),
  }).prefault({}),
  pairing: z.object({
    /** how long a pairing code stays valid */
    ttlMs: z.number().int().min(1000).max(7 * 24 * 3600_000).default(3600_000),
    /** pending codes per channel at most; further unknown senders are ignored until one expires or is decided */
    maxPending: z.number().int().min(1).max(100).default(3),
  }).prefault({}),
  groups: z.object({
    policy: groupPolicySchema.default("open"),
    /** allowed groups for policy "allowlist" */
    allowFrom: entryListSchema.default([]),
    /** answer in groups only when the bot is mentioned (owners' commands pass anyway) */
    requireMention: z.boolean().default(false),
    /** with requireMention: how many of the messages not addressed to the bot are kept per group and shown to it with the next one that is (0: none) */
    historyLimit: z.number().int().min(0).max(500).default(50),
    byChannel: z.record(z.string(), groupRulesSchema).default({}),
  }).prefault({}),
  /** one message to several agents: peer id ("<channel>:<peerId>" or "<peerId>") -> agent ids */
  broadcast: z.object({
    strategy: z.enum(["parallel", "sequential"]).default("parallel"),
    peers: z.record(z.string(), z.array(agentIdSchema).min(1).max(32)).default({}),
  }).prefault({}),
  /** what happens to a message that arrives while its session has an active run (a session's /queue wins) */
  queue: z.object({
    mode: queueModeSchema.default("queue"),
    /** queued messages wait this long after the last arrival before their run starts */
    debounceMs: z.number().int().min(0).max(60_000).default(0),
    /** waiting messages per session at most; beyond it the drop policy applies */
    cap: z.number().int().min(1).max(1000).default(20),
    drop: queueDropPolicySchema.default("old"),
    /** how long a steer/follow-up waits for the agent-runner holding the run to take it */
    controlTimeoutMs: z.number().int().min(50).max(30_000).default(1000),
    /** per-channel defaults, e.g. { "telegram": { "mode": "collect", "debounceMs": 1500 } } (a session's /queue still wins) */
    byChannel: z.record(z.string(), z.object({
      mode: queueModeSchema.optional(),
      debounceMs: z.number().int().min(0).max(60_000).optional(),
      cap: z.number().int().min(1).max(1000).optional(),
      drop: queueDropPolicySchema.optional(),
    })).default({}),
  }).prefault({}),
  /** messages of one sender to one session within this window become one run (0: off) */
  debounceMs: z.number().int().min(0).max(60_000).default(0),
  commands: z.object({
    /**
     * senders who may use /approve, /deny and state-changing commands in groups; the terminal
     * channel always may. The web chat's user (it holds the web token) is an owner by default.
     */
    owners: entryListSchema.default(["web:web-user"]),
  }).prefault({}),
  /** one active router on several hosts (config-lease.ts) */
  ...leaseConfigShape,
}).refine(...leaseRenewRule("routing"));
export type RoutingConfig = z.infer<typeof routingConfigSchema>;
