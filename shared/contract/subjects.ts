/**
 * Subject builders: the only place subject strings are assembled.
 *
 * Contract: every dynamic token passes `token()`, which rejects `.`, `*`, `>`, whitespace and
 * empty strings, so no caller can widen a subscription or publish outside its lane. Ids that
 * come from platforms (chat ids, user names) go through `encodeToken()` first.
 */
import { LurkError } from "./errors.js";

export const DEFAULT_PREFIX = "lurk";

const BAD_TOKEN = /[.*>\s\u0000-\u001f\u007f]/u;
const MAX_TOKEN_LENGTH = 128;

/** Validates one subject token; throws BAD_SUBJECT_TOKEN otherwise. */
export function token(value: string, what = "token"): string {
  if (typeof value !== "string" || value.length === 0) {
    throw new LurkError("BAD_SUBJECT_TOKEN", `${what} must be a non-empty string`);
  }
  if (value.length > MAX_TOKEN_LENGTH) {
    throw new LurkError("BAD_SUBJECT_TOKEN", `${what} is longer than ${MAX_TOKEN_LENGTH} characters`);
  }
  if (BAD_TOKEN.test(value)) {
    throw new LurkError("BAD_SUBJECT_TOKEN", `${what} "${value}" contains '.', '*', '>', whitespace or a control character`);
  }
  return value;
}

export function isValidToken(value: string): boolean {
  return typeof value === "string" && value.length > 0 && value.length <= MAX_TOKEN_LENGTH && !BAD_TOKEN.test(value);
}

/**
 * Maps any string to a valid token, reversibly: unreserved characters stay, everything else
 * becomes `~XX` (UTF-8 bytes in hex). `encodeToken("a.b c")` is `a~2Eb~20c`.
 */
export function encodeToken(raw: string): string {
  let out = "";
  for (const byte of Buffer.from(raw, "utf8")) {
    const ch = String.fromCharCode(byte);
    out += /[A-Za-z0-9_\-+=@:,]/.test(ch) ? ch : `~${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return token(out, "encoded token");
}

export function decodeToken(encoded: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < encoded.length; i++) {
    if (encoded[i] === "~") {
      bytes.push(parseInt(encoded.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(encoded.charCodeAt(i));
    }
  }
  return Buffer.from(bytes).toString("utf8");
}

/** Request/reply operations, one per endpoint. Actor name -> its operations. */
export const OPERATIONS = {
  router: ["status", "lanes", "pairing"],
  sessions: ["begin", "ensure", "get", "list", "history", "transcripts", "append", "run", "usage", "patch", "reset", "delete", "usage_report"],
  tools: ["list", "explain"],
  approvals: ["request", "wait", "decide", "get", "list", "redeem"],
  subagents: ["spawn", "list", "stop"],
  heartbeat: ["status", "last", "run", "enable", "disable"],
  cron: ["add", "list", "get", "edit", "rm", "run", "runs", "status"],
  /** the hooks actor: discover hooks again now (`lurkbot hooks reload`); a run's bootstrap files through its agent:bootstrap hooks (agent-runner) */
  hooks: ["reload", "bootstrap"],
  /**
   * the agent-runner serves embeddings for memory_search, voice messages for the tts tool and the image tool's
   * vision answers (only the tools user may ask);
   * its auth profiles' state (cli and router) and a live probe of them (cli)
   */
  "agent-runner": ["embed", "speak", "auth_state", "auth_probe", "describe_image"],
  /** the mcp actor: its MCP servers' state and tools (`lurkbot mcp list`) */
  mcp: ["status"],
} as const;

export type OperationActor = keyof typeof OPERATIONS;
export type Operation<A extends OperationActor> = (typeof OPERATIONS)[A][number];

/** The stream names, fixed (prefix-independent names keep operations simple). */
export const STREAMS = {
  inbound: "LURK_INBOUND",
  runs: "LURK_RUNS",
  outbound: "LURK_OUTBOUND",
  deadLetter: "LURK_DEADLETTER",
  /** the sessions actor's change sets, when replicated (`sessions.replication`) */
  sessions: "LURK_SESSIONS",
  /** the events hooks fire on (router commands, sessions reset and created), kept a day for the hooks actor (LURK_HOOK_EVENTS) */
  hookEvents: "LURK_HOOK_EVENTS",
} as const;

/** Tool names starting with this are MCP servers' tools (services/mcp): their calls go to `lurk.tools.call.mcp.<name>`. */
export const MCP_TOOL_PREFIX = "mcp_";

/** All subjects of one bus, under one prefix (default `lurk`). */
export function subjects(prefix: string = DEFAULT_PREFIX) {
  const p = token(prefix, "subject prefix");
  return {
    prefix: p,
    /** channel -> router, durable (INBOUND). */
    inbound: (channel: string) => `${p}.in.${token(channel, "channel")}`,
    inboundAll: `${p}.in.>`,
    /** heartbeat, cron, subagents -> router: system events injected into a session (INBOUND). */
    inject: (agentId: string) => `${p}.inject.${token(agentId, "agentId")}`,
    injectAll: `${p}.inject.>`,
    /** router, cron, subagents -> agent-runner, durable work queue (RUNS). */
    runRequest: (agentId: string) => `${p}.run.req.${token(agentId, "agentId")}`,
    runRequestAll: `${p}.run.req.>`,
    /**
     * agent-runner -> anyone: ephemeral run events, `lurk.run.evt.<runId>.<kind>` (deltas, tools,
     * terminal done/error). The kind token lets lifecycle watchers take only the terminal events.
     */
    runEvent: (runId: string, kind: string) => `${p}.run.evt.${token(runId, "runId")}.${token(kind, "event kind")}`,
    /** every event of one run */
    runEvents: (runId: string) => `${p}.run.evt.${token(runId, "runId")}.>`,
    /** the terminal events (done, error) of every run */
    runTerminalAll: [`${p}.run.evt.*.done`, `${p}.run.evt.*.error`] as const,
    /** the start (`run_start`) of every run: the router holds a session's lane for runs it did not dispatch */
    runStartAll: `${p}.run.evt.*.run_start`,
    runEventAll: `${p}.run.evt.>`,
    /**
     * Between the instances of an actor with one active instance (heartbeat): a standby whose
     * endpoint took a request relays it here; only the lease holder subscribes.
     */
    activeOp: (actor: string, op: string) => `${p}.${token(actor, "actor")}.active.${token(op, "op")}`,
    activeOpAll: (actor: string) => `${p}.${token(actor, "actor")}.active.>`,
    /** router -> agent-runner: steer, follow-up or abort an active run. */
    runControl: (runId: string) => `${p}.run.ctl.${token(runId, "runId")}`,
    runControlAll: `${p}.run.ctl.>`,
    /** router, agent-runner -> channel: deliveries, durable (OUTBOUND). */
    outbound: (channel: string, conversation: string) =>
      `${p}.out.${token(channel, "channel")}.${token(conversation, "conversation")}`,
    outboundChannel: (channel: string) => `${p}.out.${token(channel, "channel")}.>`,
    outboundAll: `${p}.out.>`,
    /** request/reply endpoints: `lurk.<actor>.<op>`. */
    op: <A extends OperationActor>(actor: A, operation: Operation<A>) => `${p}.${actor}.${operation}`,
    opAll: (actor: OperationActor) => `${p}.${actor}.>`,
    /**
     * tool execution, one subject per tool so another actor can serve a tool of its own; the
     * tools of MCP servers (names starting `mcp_`) under `lurk.tools.call.mcp.<name>`, so the
     * mcp actor's NATS user may answer those (toolCallMcpAll) and no other tool's calls.
     */
    toolCall: (tool: string) => `${p}.tools.call.${tool.startsWith(MCP_TOOL_PREFIX) ? "mcp." : ""}${token(tool, "tool name")}`,
    toolCallAll: `${p}.tools.call.>`,
    toolCallMcpAll: `${p}.tools.call.mcp.>`,
    toolProgress: (runId: string) => `${p}.tools.progress.${token(runId, "runId")}`,
    toolProgressAll: `${p}.tools.progress.>`,
    /**
     * background jobs of the `process` tool live in the tools instance that started them: the
     * other instances forward a job's calls to `lurk.tools.job.<instanceId>` (no queue group)
     */
    toolJob: (instanceId: string) => `${p}.tools.job.${token(instanceId, "tools instance id")}`,
    toolJobAll: `${p}.tools.job.>`,
    /** every tools instance answers with its jobs of a session (scatter-gather) */
    toolJobsList: `${p}.tools.jobs.list`,
    /**
     * tools actors -> agent-runners: "my catalog is available or changed" (core publish, on
     * start and on change); runners refresh their cached catalogs in the background
     */
    toolsCatalogChanged: `${p}.tools.catalog`,
    /** agent-runners -> tools actors: cancel a run's in-flight tool calls (core publish, no queue group) */
    toolsCancel: `${p}.tools.cancel`,
    /** monitoring events: `lurk.evt.<actor>.<event>`. */
    event: (actor: string, event: string) => `${p}.evt.${token(actor, "actor")}.${token(event, "event")}`,
    eventsOf: (actor: string) => `${p}.evt.${token(actor, "actor")}.>`,
    eventAll: `${p}.evt.>`,
    /**
     * the events hook handlers fire on, captured by the LURK_HOOK_EVENTS stream from their core
     * publishes (the publishers do not change): chat commands, session resets and creations
     */
    hookEventSubjects: [`${p}.evt.router.command`, `${p}.evt.sessions.reset`, `${p}.evt.sessions.created`] as const,
    /**
     * sessions (active instance) -> sessions (standbys): the change sets of one session, in commit
     * order (SESSIONS stream; `sessions.replication`). The session key is encoded as one token.
     */
    sessionChanges: (sessionKey: string) => `${p}.sesslog.${encodeToken(sessionKey)}`,
    sessionChangesAll: `${p}.sesslog.>`,
    /** dead letters: `lurk.dlq.<stream>.<consumer>` (DEADLETTER). */
    deadLetter: (stream: string, consumer: string) => `${p}.dlq.${token(stream, "stream")}.${token(consumer, "consumer")}`,
    deadLetterAll: `${p}.dlq.>`,
  };
}

export type Subjects = ReturnType<typeof subjects>;

/** Inbox prefix of an actor's NATS user: replies to its requests land only there. */
export function inboxPrefix(user: string): string {
  return `_INBOX_${token(user, "user")}`;
}
