/**
 * Configuration: one zod schema with defaults; sources, later winning:
 *   defaults < $LURKBOT_HOME/config.json < environment variables.
 * `loadConfig()` is called in an actor's main (or the CLI) only; everything else receives the
 * parsed object. Errors are LurkErrors (CONFIG_INVALID) that name the bad field and the fix.
 */
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { z } from "zod";
import { modelRefSchema, modelsConfigSchema } from "./config-models.js";
import { providerSecrets, providersConfigSchema } from "./config-providers.js";
import { jobsConfigSchema } from "./config-tools-jobs.js";
import { toolsImageConfigSchema } from "./config-tools-image.js";
import { requireApprovalSchema } from "./config-tools-approval.js";
import { heartbeatConfigSchema } from "./config-heartbeat.js";
import { compactionConfigSchema, memoryConfigSchema } from "./config-compaction.js";
import { mediaConfigSchema } from "./config-media.js";
import { ttsConfigSchema, ttsEnvOverrides, ttsSecrets } from "./config-tts.js";
import { browserConfigSchema } from "./config-browser.js";
import { mcpConfigSchema, mcpSecrets } from "./config-mcp.js";
import { subagentsConfigSchema } from "./config-subagents.js";
import { cronConfigSchema } from "./config-cron.js";
import { hooksConfigSchema } from "./config-hooks.js";
import { LEASE_DEFAULTS, leaseConfigShape, leaseRenewRule } from "./config-lease.js";
import { routingConfigSchema } from "./config-routing.js";
import { agentIdSchema, LurkError, promptModeSchema, safeParseJson, sessionTypeSchema, thinkLevelSchema } from "../contract/index.js";
import { channelConfigSecrets, channelEnvOverrides, channelsConfigSchema } from "./config-channels.js";
import { isValidTimeZone } from "./time-zone.js";
import { natsSshConfigSchema } from "./config-ssh.js";
import { isLoopbackHost } from "./loopback-host.js";

const msSchema = z.number().int().positive();

/**
 * The smallest old-generation heap a tool worker gets, MB. With a 2 MB heap, Node 22 and 24 abort
 * the whole process while a worker deserializes its startup snapshot (Node 20 failed that worker
 * alone); 8 and 16 MB start on Node 20, 22 and 24 (measured 2026-11-26), but a 16 MB worker
 * on Node 24 once ran out of memory on a 1 ms task in CI under load, so the floor is 32 MB.
 */
export const MIN_WORKER_MEMORY_MB = 32;

/**
 * Tool policy rules (shared/runtime/tool-policy.ts): entries are tool names (aliases count), groups
 * ("group:fs"), "*" or globs ("sessions_*"). Deny wins; a non-empty allow list narrows.
 */
export const toolRulesSchema = z.object({
  allow: z.array(z.string().min(1)).default([]),
  deny: z.array(z.string().min(1)).default([]),
});
export type ToolRulesConfig = z.infer<typeof toolRulesSchema>;
/** the policy keys of `tools` (the agent's own rules are agents[].tools) */
export const TOOL_POLICY_DEFAULTS = {
  allow: [] as string[],
  deny: [] as string[],
  byProvider: {} as Record<string, ToolRulesConfig>,
  byModel: {} as Record<string, ToolRulesConfig>,
  bySessionType: {} as Partial<Record<z.infer<typeof sessionTypeSchema>, ToolRulesConfig>>,
  sandboxedSessions: ["group", "topic"] as z.infer<typeof sessionTypeSchema>[],
  subagent: { allow: [], deny: [] } as ToolRulesConfig,
};

export const agentConfigSchema = z.object({
  id: agentIdSchema,
  name: z.string().max(100).optional(),
  default: z.boolean().default(false),
  /** defaults to the global workspace for the default agent, `<home>/workspace-<id>` otherwise */
  workspace: z.string().optional(),
  model: z.string().optional(),
  fallbacks: z.array(z.string()).default([]),
  /** the vision model of this agent's `image` tool (wins over tools.image.model; config-tools-image.ts) */
  imageModel: modelRefSchema.optional(),
  toolProfile: z.enum(["minimal", "coding", "messaging", "full"]).default("coding"),
  thinking: thinkLevelSchema.optional(),
  /** sampling temperature of this agent's model calls (a run's option wins; unset: the model's default from models.entries, else none is sent) */
  temperature: z.number().min(0).max(2).optional(),
  promptMode: promptModeSchema.default("full"),
  /** this agent's tool policy layer (narrows the profile and the global rules) */
  tools: toolRulesSchema.optional(),
  /** tools whose calls by this agent need a human approval, added to tools.requireApproval (config-tools-approval.ts) */
  requireApproval: requireApprovalSchema.optional(),
});
export type AgentConfig = z.infer<typeof agentConfigSchema>;

/** The `exec` tool (services/tools/exec/): its sandbox and the resource limits of a command. */
export const EXEC_DEFAULTS = {
  bwrapPath: "/usr/bin/bwrap",
  allowUnsandboxed: false,
  maxProcesses: 256,
  maxFileSizeMb: 1024,
  cpuSeconds: 300,
  memoryMb: 4096,
  maxOpenFiles: 1024,
  maxOutputFileMb: 32,
  /** when exec asks for a human approval: never, for commands not on the allowlist, or always */
  ask: "off" as "off" | "on-miss" | "always",
  allowlist: ["ls", "cat", "echo", "pwd"] as string[],
};
export const execConfigSchema = z.object({
  /** the bubblewrap binary; a missing one makes exec SANDBOX_UNAVAILABLE (unless allowUnsandboxed) */
  bwrapPath: z.string().min(1).default(EXEC_DEFAULTS.bwrapPath),
  /** without a working bubblewrap, run commands as plain children (env scrubbed, limits, group kill) */
  allowUnsandboxed: z.boolean().default(EXEC_DEFAULTS.allowUnsandboxed),
  /** processes/threads a command may have at once (pids cgroup when available, else RLIMIT_NPROC) */
  maxProcesses: z.number().int().min(8).max(100_000).default(EXEC_DEFAULTS.maxProcesses),
  /** largest file a command may write (RLIMIT_FSIZE), MB */
  maxFileSizeMb: z.number().int().min(1).max(1024 * 1024).default(EXEC_DEFAULTS.maxFileSizeMb),
  /** CPU seconds per process (RLIMIT_CPU); the wall-clock deadline is tools.timeoutMs */
  cpuSeconds: z.number().int().min(1).max(86_400).default(EXEC_DEFAULTS.cpuSeconds),
  /** address space per process (RLIMIT_AS), MB; 0 = no limit */
  memoryMb: z.number().int().min(0).max(1024 * 1024).default(EXEC_DEFAULTS.memoryMb),
  /** open files per process (RLIMIT_NOFILE) */
  maxOpenFiles: z.number().int().min(16).max(1_048_576).default(EXEC_DEFAULTS.maxOpenFiles),
  /** output beyond outputCapBytes is saved to .lurkbot/outputs/ up to this size, MB */
  maxOutputFileMb: z.number().int().min(1).max(4096).default(EXEC_DEFAULTS.maxOutputFileMb),
  /** approvals (services/approvals): "off", "on-miss" (a command not on the allowlist asks), "always" */
  ask: z.enum(["off", "on-miss", "always"]).default(EXEC_DEFAULTS.ask),
  /** command names that run without asking in on-miss mode (a simple command: no pipes, lists, redirections, substitutions) */
  allowlist: z.array(z.string().min(1).max(200)).default(EXEC_DEFAULTS.allowlist),
});
export type ExecConfig = z.infer<typeof execConfigSchema>;

/** The web tools (services/tools/web/): web_fetch's private-address exceptions and caps, web_search's API. */
export const webConfigSchema = z.object({
  /**
   * hosts web_fetch may reach although they resolve to private addresses ("127.0.0.1", "intranet.lan",
   * "10.0.0.5:8080" for one port only); a redirect to any other private address is still refused
   */
  allowPrivateHosts: z.array(z.string().min(1)).default([]),
  /** bytes of a response body web_fetch reads at most (the rest is not downloaded) */
  maxBodyBytes: z.number().int().min(1024).max(64 * 1024 * 1024).default(2 * 1024 * 1024),
  /** ms one fetch or search may take (capped by tools.timeoutMs) */
  timeoutMs: msSchema.default(30_000),
  /** web_search's API: "none" makes web_search explain how to configure one */
  search: z.object({
    provider: z.enum(["brave", "searxng", "none"]).default("none"),
    /** Brave: the X-Subscription-Token; never shown in results or logs */
    apiKey: z.string().min(1).optional(),
    /** Brave: https://api.search.brave.com by default; SearXNG: required (the instance's URL) */
    baseUrl: z.url({ protocol: /^https?$/ }).optional(),
  }).default({ provider: "none" }),
});
export type WebConfig = z.infer<typeof webConfigSchema>;

const SESSIONS_REPLICATION_DEFAULTS = { enabled: false, ...LEASE_DEFAULTS, ackTimeoutMs: 5_000 };
const SESSIONS_USAGE_DEFAULTS = { retentionDays: 400 };

export const configSchema = z.object({
  home: z.string(),
  workspace: z.string(),
  dataDir: z.string(),
  nats: z.object({
    url: z.string().default("nats://127.0.0.1:4222"),
    prefix: z.string().regex(/^[A-Za-z0-9_-]+$/).default("lurk"),
    /** credentials file written by `lurkbot setup` ({ users: { <user>: <password> } }) */
    credentialsFile: z.string(),
    /** path of the nats.conf the launcher starts nats-server with */
    serverConfig: z.string().optional(),
    /** reach the bus of another host through an SSH tunnel (config-ssh.ts); nats.url must then be loopback */
    ssh: natsSshConfigSchema.optional(),
  }),
  /** `provider/model`, e.g. `openai/gpt-4o-mini`; unset means: reply how to configure one */
  model: z.string().regex(/^[a-z0-9-]+\/.+$/, "model: provider/model, e.g. openai/gpt-4o-mini").optional(),
  /** endpoints, keys and auth profiles per provider (shared/runtime/config-providers.ts) */
  providers: providersConfigSchema,
  /** model table additions/overrides and aliases (shared/runtime/models.ts) */
  models: modelsConfigSchema,
  agents: z.array(agentConfigSchema).min(1).default([{ id: "main", default: true, fallbacks: [], toolProfile: "coding", promptMode: "full" }]),
  bus: z.object({
    /** requests and durable messages above this are refused (nats-server's own cap is 1 MiB) */
    maxPayloadBytes: z.number().int().positive().max(1024 * 1024).default(512 * 1024),
    maxDepth: z.number().int().positive().max(512).default(64),
    requestTimeoutMs: msSchema.default(10_000),
    /** JetStream ack wait: a message unacked this long is redelivered */
    ackWaitMs: msSchema.default(30_000),
    /** deliveries before a message goes to the dead-letter stream */
    maxDeliver: z.number().int().min(1).max(100).default(5),
    /** nak delays for failed handlers, by delivery number (the last one repeats) */
    backoffMs: z.array(msSchema).min(1).default([1_000, 5_000, 15_000, 60_000]),
  }).prefault({}),
  runs: z.object({
    maxIterations: z.number().int().min(1).max(100).default(10),
    /** concurrent runs per agent-runner instance */
    concurrency: z.number().int().min(1).max(1000).default(64),
    historyLimit: z.number().int().min(1).max(10_000).default(200),
    llmTimeoutMs: msSchema.default(120_000),
    /** a run stops (with its text so far) after the tool turn that brings its tokens, in + out, to this */
    maxTokensPerRun: z.number().int().positive().optional(),
  }).prefault({}),
  tools: z.object({
    /** workers kept when idle (0: none, the first call after idle starts one, ~0.1-0.3 s) */
    minThreads: z.number().int().min(0).max(64).default(0),
    maxThreads: z.number().int().min(1).max(64).default(2),
    /** a worker above minThreads idle this long is stopped (each costs ~15 MB of memory) */
    workerIdleMs: msSchema.default(15_000),
    /** old-generation heap cap of each worker, MB */
    workerMemoryMb: z.number().int().min(MIN_WORKER_MEMORY_MB).max(8192).default(128),
    timeoutMs: msSchema.default(60_000),
    outputCapBytes: z.number().int().min(1024).max(10 * 1024 * 1024).default(64 * 1024),
    /** the most a file tool (write, edit, apply_patch) writes to one file, bytes */
    maxWriteBytes: z.number().int().min(1024).max(1024 * 1024 * 1024).default(5 * 1024 * 1024),
    exec: execConfigSchema.prefault({}),
    web: webConfigSchema.prefault({}),
    /** background jobs of the `process` tool (config-tools-jobs.ts) */
    jobs: jobsConfigSchema.prefault({}),
    /** the `image` tool's vision model (config-tools-image.ts) */
    image: toolsImageConfigSchema.prefault({}),
    /** tools (names, aliases, "group:x", globs) whose calls need a human approval (config-tools-approval.ts) */
    requireApproval: requireApprovalSchema,
    /** tool policy, global layer: every agent and session */
    allow: z.array(z.string().min(1)).default(TOOL_POLICY_DEFAULTS.allow),
    deny: z.array(z.string().min(1)).default(TOOL_POLICY_DEFAULTS.deny),
    /** provider and model layers, keyed by provider name / model pattern ("gpt-4o*", "openai/gpt-4o") */
    byProvider: z.record(z.string(), toolRulesSchema).default(TOOL_POLICY_DEFAULTS.byProvider),
    byModel: z.record(z.string(), toolRulesSchema).default(TOOL_POLICY_DEFAULTS.byModel),
    /** session layer, added to the built-in group/topic/thread restrictions */
    bySessionType: z.partialRecord(sessionTypeSchema, toolRulesSchema).default(TOOL_POLICY_DEFAULTS.bySessionType),
    /** session types in sandbox mode (the sandbox layer denies bash, exec, write, edit, apply_patch) */
    sandboxedSessions: z.array(sessionTypeSchema).default(TOOL_POLICY_DEFAULTS.sandboxedSessions),
    /** subagent layer, added to the built-in subagent deny list */
    subagent: toolRulesSchema.default(TOOL_POLICY_DEFAULTS.subagent),
  }).prefault({}),
  /** human approvals of tool calls (services/approvals) */
  approvals: z.object({
    /** a pending approval expires (= denied) after this long */
    timeoutMs: msSchema.max(24 * 3600_000).default(5 * 60_000),
    /** how long an approval token stays valid after the decision */
    tokenTtlMs: msSchema.max(24 * 3600_000).default(5 * 60_000),
    /** one active instance on several hosts (config-lease.ts) */
    ...leaseConfigShape,
  }).refine(...leaseRenewRule("approvals")).prefault({}),
  log: z.object({
    level: z.enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"]).default("info"),
    /** the launcher rotates a file under `$LURKBOT_HOME/logs` once it holds this many MB */
    maxFileMb: z.number().min(0.01).max(100_000).default(20),
    /** rotated copies kept per log file (`<name>.log.1` the newest); 0 keeps none */
    keepFiles: z.number().int().min(0).max(100).default(3),
    /** how often the launcher checks the log files' sizes */
    checkEverySec: z.number().min(1).max(3600).default(10),
  }).prefault({}),
  security: z.object({
    /** allow a non-loopback nats:// URL without TLS (only on a trusted private network) */
    allowPlaintextRemoteNats: z.boolean().default(false),
  }).default({ allowPlaintextRemoteNats: false }),
  /** child runs (services/subagents): limits and defaults */
  subagents: subagentsConfigSchema,
  /** channel actors (`channel-<name>`), each off unless enabled (shared/runtime/config-channels.ts) */
  channels: channelsConfigSchema,
  /** automatic session resets, applied by the sessions actor when a run begins; both off by default */
  sessions: z.object({
    /** local hour (0-23) of a daily reset: a session last active before it starts a fresh transcript */
    dailyResetHour: z.number().int().min(0).max(23).optional(),
    /** a session inactive this many minutes starts a fresh transcript */
    idleResetMinutes: z.number().int().positive().max(525_600).optional(),
    /** IANA time zone of dailyResetHour (default: the host's) */
    timeZone: z.string().refine(isValidTimeZone, "unknown time zone, e.g. Europe/Berlin").optional(),
    /**
     * Replication for several hosts (services/sessions/replication.ts): every write also goes to the
     * SESSIONS stream before it is answered, one instance is active through a lease and the others
     * follow the stream and take over. Off: one instance, this host's LMDB only.
     */
    replication: z.object({
      enabled: z.boolean().default(false),
      ...leaseConfigShape,
      /** how long a write waits for JetStream's ack before it is answered anyway (it stays queued for replication) */
      ackTimeoutMs: z.number().int().min(100).max(60_000).default(SESSIONS_REPLICATION_DEFAULTS.ackTimeoutMs),
    }).refine(...leaseRenewRule("sessions.replication")).default(SESSIONS_REPLICATION_DEFAULTS),
    /** the usage ledger (services/sessions/usage-ledger.ts, `lurkbot usage`): days kept, pruned in the background */
    usage: z.object({ retentionDays: z.number().int().min(1).max(36_600).default(SESSIONS_USAGE_DEFAULTS.retentionDays) }).default(SESSIONS_USAGE_DEFAULTS),
  }).default({ replication: SESSIONS_REPLICATION_DEFAULTS, usage: SESSIONS_USAGE_DEFAULTS }),
  /** periodic HEARTBEAT.md checks per agent (services/heartbeat) */
  heartbeat: heartbeatConfigSchema,
  /** scheduled jobs (services/cron): lease timing, run-log cap */
  cron: cronConfigSchema,
  /** event hooks (services/hooks): on/off, per-hook entries (enabled, env), the worker's limits (config-hooks.ts) */
  hooks: hooksConfigSchema,
  /** context compaction of long sessions (config-compaction.ts) */
  compaction: compactionConfigSchema,
  /** consolidation of old messages into MEMORY.md and memory/HISTORY.md, and memory_search's embeddings (config-compaction.ts, config-embeddings.ts) */
  memory: memoryConfigSchema,
  /** bindings, DM/group policies, pairing, broadcast, queue modes, commands (config-routing.ts) */
  routing: routingConfigSchema.prefault({}),
  /** the media store: size caps and retention of the files users and the agent send (config-media.ts) */
  media: mediaConfigSchema,
  /** voice replies: text-to-speech of the agent's replies and the tts tool (config-tts.ts) */
  tts: ttsConfigSchema,
  /** the browser actor's Chromium: path, profile, idle stop, timeouts, caps (config-browser.ts) */
  browser: browserConfigSchema.prefault({}),
  /** MCP servers whose tools the mcp actor serves (config-mcp.ts) */
  mcp: mcpConfigSchema,
  /** skills (services/agent-runner/skills.ts) */
  skills: z.object({
    /** workspace skills whose `always: true` is honoured (the agent can write its workspace; user and bundled skills need no entry) */
    alwaysAllow: z.array(z.string().regex(/^[\w.-]{1,64}$/, "a skill name: letters, digits, '_', '.' or '-'")).max(200).default([]),
  }).prefault({}),
});
export type LurkConfig = z.infer<typeof configSchema>;

export type Env = Record<string, string | undefined>;

export function defaultHome(env: Env = process.env): string {
  return resolve(env.LURKBOT_HOME ?? join(homedir(), ".lurkbot"));
}

export function configFilePath(home: string): string {
  return join(home, "config.json");
}

/** Reads the config file (if any), applies env overrides, validates. */
export function loadConfig(env: Env = process.env): LurkConfig {
  const home = defaultHome(env);
  const file = configFilePath(home);
  let fromFile: Record<string, unknown> = {};
  if (existsSync(file)) {
    try {
      const parsed = safeParseJson(readFileSync(file), { maxBytes: 4 * 1024 * 1024 });
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("the top level must be a JSON object");
      fromFile = parsed as Record<string, unknown>;
    } catch (err) {
      throw new LurkError("CONFIG_INVALID", `cannot read ${file}: ${(err as Error).message}. Fix the file or move it away.`);
    }
  }
  return parseConfig(fromFile, env, home, file);
}

/** Builds the config from a parsed file object and the environment (exported for tests). */
export function parseConfig(fromFile: Record<string, unknown>, env: Env, home = defaultHome(env), source = "config"): LurkConfig {
  const raw = structuredClone(fromFile) as Record<string, any>;
  const resolveIn = (path: string) => (isAbsolute(path) ? path : resolve(home, path));
  raw.home = home;
  raw.workspace = resolveIn(env.LURKBOT_WORKSPACE ?? raw.workspace ?? "workspace");
  raw.dataDir = resolveIn(raw.dataDir ?? "data");
  raw.nats = { ...(raw.nats ?? {}) };
  if (env.LURKBOT_NATS_URL) raw.nats.url = env.LURKBOT_NATS_URL;
  if (env.LURKBOT_NATS_PREFIX) raw.nats.prefix = env.LURKBOT_NATS_PREFIX;
  raw.nats.credentialsFile = resolveIn(env.LURKBOT_NATS_CREDENTIALS ?? raw.nats.credentialsFile ?? "credentials/nats.json");
  sshEnvOverride(raw.nats, env, resolveIn);
  if (env.LURKBOT_MODEL !== undefined) raw.model = env.LURKBOT_MODEL === "" ? undefined : env.LURKBOT_MODEL;
  if (env.LURKBOT_TRANSCRIPTION_MODEL) {
    raw.media = { ...(raw.media ?? {}) };
    raw.media.transcription = { ...(raw.media.transcription ?? {}), model: env.LURKBOT_TRANSCRIPTION_MODEL };
  }
  if (env.LURKBOT_EMBEDDING_MODEL) {
    raw.memory = { ...(raw.memory ?? {}) };
    raw.memory.embeddings = { ...(raw.memory.embeddings ?? {}), model: env.LURKBOT_EMBEDDING_MODEL };
  }
  raw.providers = { ...(raw.providers ?? {}) };
  const provider = (name: string) => (raw.providers[name] = { ...(raw.providers[name] ?? {}) });
  if (env.OPENAI_BASE_URL) provider("openai").baseUrl = env.OPENAI_BASE_URL;
  if (env.OPENAI_API_KEY) provider("openai").apiKey = env.OPENAI_API_KEY;
  if (env.ANTHROPIC_BASE_URL) provider("anthropic").baseUrl = env.ANTHROPIC_BASE_URL;
  if (env.ANTHROPIC_API_KEY) provider("anthropic").apiKey = env.ANTHROPIC_API_KEY;
  if (env.OLLAMA_HOST) provider("ollama").host = env.OLLAMA_HOST;
  if (env.LURKBOT_LOG_LEVEL) raw.log = { ...(raw.log ?? {}), level: env.LURKBOT_LOG_LEVEL };
  if (env.LURKBOT_ACK_WAIT_MS) raw.bus = { ...(raw.bus ?? {}), ackWaitMs: Number(env.LURKBOT_ACK_WAIT_MS) };
  channelEnvOverrides(raw, env);
  ttsEnvOverrides(raw, env);

  const result = configSchema.safeParse(raw);
  if (!result.success) {
    const issues = result.error.issues.map((i) => `${i.path.join(".") || "(top)"}: ${i.message}`).join("; ");
    throw new LurkError("CONFIG_INVALID", `invalid configuration (${source}): ${issues}`);
  }
  const config = result.data;
  const defaults = config.agents.filter((a) => a.default);
  if (defaults.length > 1) {
    throw new LurkError("CONFIG_INVALID", `agents: ${defaults.map((a) => a.id).join(", ")} are all marked default; mark exactly one`);
  }
  const ids = new Set<string>();
  for (const agent of config.agents) {
    if (ids.has(agent.id)) throw new LurkError("CONFIG_INVALID", `agents: the id "${agent.id}" is used twice`);
    ids.add(agent.id);
  }
  if (defaults.length === 0) config.agents[0]!.default = true;
  checkSshUrl(config);
  return config;
}

/** LURKBOT_NATS_SSH=user@host sets nats.ssh.target ("" turns nats.ssh off); key paths resolve in the home. */
function sshEnvOverride(nats: Record<string, any>, env: Env, resolveIn: (path: string) => string): void {
  if (env.LURKBOT_NATS_SSH !== undefined) {
    if (env.LURKBOT_NATS_SSH === "") delete nats.ssh;
    else nats.ssh = { ...(nats.ssh ?? {}), target: env.LURKBOT_NATS_SSH };
  }
  if (!nats.ssh || typeof nats.ssh !== "object") return;
  nats.ssh = { ...nats.ssh };
  const inHome = (p: unknown) => (typeof p === "string" && p !== "" && !p.startsWith("~") && !p.startsWith("-") ? resolveIn(p) : p);
  if (nats.ssh.identityFile !== undefined) nats.ssh.identityFile = inHome(nats.ssh.identityFile);
  if (nats.ssh.knownHostsFile !== undefined) nats.ssh.knownHostsFile = inHome(nats.ssh.knownHostsFile);
}

/** With nats.ssh the tunnel replaces nats.url, so a remote (or a list of) nats.url would be a contradiction. */
function checkSshUrl(config: LurkConfig): void {
  if (!config.nats.ssh) return;
  const url = config.nats.url.trim();
  let host = "";
  try {
    host = new URL(url.includes("://") ? url : `nats://${url}`).hostname.replace(/^\[|\]$/g, "");
  } catch {
    // checkTransportSecurity names a malformed URL
  }
  if (url.includes(",") || !isLoopbackHost(host)) {
    throw new LurkError("CONFIG_INVALID",
      `nats.ssh (${config.nats.ssh.target}) is set together with nats.url ${url}: with nats.ssh the bus is reached through the SSH tunnel, whose ` +
      `far end is nats.ssh.remoteHost:remotePort (${config.nats.ssh.remoteHost}:${config.nats.ssh.remotePort}) as seen from the ssh server. ` +
      "Unset nats.url / LURKBOT_NATS_URL (keep it loopback), or remove nats.ssh (LURKBOT_NATS_SSH=\"\") to connect to that URL directly.");
  }
}

export function defaultAgent(config: LurkConfig): AgentConfig {
  return config.agents.find((a) => a.default) ?? config.agents[0]!;
}

export function agentWorkspace(config: LurkConfig, agent: AgentConfig): string {
  if (agent.workspace) return isAbsolute(agent.workspace) ? agent.workspace : resolve(config.home, agent.workspace);
  return agent.default ? config.workspace : join(config.home, `workspace-${agent.id}`);
}

/** The secret values of a config, for log and event redaction. */
export function configSecrets(config: LurkConfig): string[] {
  return [...providerSecrets(config.providers), config.tools.web.search.apiKey, config.media.transcription?.apiKey, ...ttsSecrets(config.tts), ...channelConfigSecrets(config.channels), ...mcpSecrets(config.mcp)].filter((s): s is string => typeof s === "string" && s.length >= 8);
}
