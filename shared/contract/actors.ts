/**
 * The NATS users of LurkBot, one per actor, and the subjects each may publish and subscribe.
 * nats.conf is rendered from this table (shared/contract/nats-conf.ts) and a test fails when the
 * committed nats.conf drifts from it. Everything not listed here is refused by the server.
 */
import { inboxPrefix, STREAMS, subjects, token } from "./subjects.js";

export interface DurableConsumerGrant {
  stream: string;
  consumer: string;
}

export interface ActorGrant {
  /** NATS user name == actor (service) name */
  user: string;
  description: string;
  publish: string[];
  subscribe: string[];
  /** may answer requests (services framework, request/reply) */
  responder: boolean;
  /** durable JetStream pull consumers this actor reads */
  consumers: DurableConsumerGrant[];
  /** JetStream KV buckets it reads and writes (leases) */
  kvBuckets: string[];
}

export const CHANNELS = ["cli", "web", "telegram", "discord", "slack", "webhook", "openai-http", "matrix", "signal", "whatsapp"] as const;
export type ChannelName = (typeof CHANNELS)[number];

/** The lease bucket stateful actors use to keep one active instance. */
export const LEASE_BUCKET = "lurk_leases";
/** The cron actor's replicated jobs (key: job id, history 1) and fire claims (key: `<jobId>.<scheduledAtMs>`, max age a few days). */
export const CRON_JOBS_BUCKET = "lurk_cron_jobs";
export const CRON_FIRES_BUCKET = "lurk_cron_fires";
/** The heartbeat actor's state, written by the active instance for the next one (key: `agent.<agentId>`, `alert.<agentId>.<hash>`). */
export const HEARTBEAT_BUCKET = "lurk_heartbeat";
/** The subagents actor's child records, written by the active instance for the next one (key: the child's run id). */
export const SUBAGENTS_BUCKET = "lurk_subagents";
/** The approvals actor's records, written by the active instance for the next one (key: `approval.<approvalId>`). */
export const APPROVALS_BUCKET = "lurk_approvals";
/** The router's state, written by the active instance for the next one: active runs (`run.<runId>`) and DM pairing (`pending.<code>`, `approved.<channel>.<sender>`). */
export const ROUTER_BUCKET = "lurk_router";

/**
 * The hooks actor's announcements (key `bootstrap.<agentId>`: that agent's `agent:bootstrap` hooks
 * run), watched by agent-runners so a run asks `lurk.hooks.bootstrap` only when a hook wants it.
 */
export const HOOKS_BUCKET = "lurk_hooks";

/** Tokens of auth profiles with a refresh_token OAuth client (key: `<provider>.<profileId>`; auth-state.ts). */
export const AUTH_BUCKET = "lurk_auth";

/** The media store: a JetStream object store of files, named by their SHA-256 (mediaRefSchema). */
export const MEDIA_BUCKET = "lurk_media";

/** The tools the browser actor serves (its NATS user may answer these calls only). */
export const BROWSER_TOOLS = ["browser", "browser_evaluate"] as const;

/** The tools the web channel serves (services/channel-web: the canvas next to the chat); its NATS user may answer these calls only. */
export const WEB_TOOLS = ["canvas"] as const;

/** JetStream consumer names of the contract. */
export const CONSUMERS = {
  router: "router",
  /** the router's consumer of the agent-runners' dead letters in LURK_DEADLETTER (run requests they gave up on) */
  routerGaveUp: "router-gave-up",
  agentRunner: "agent-runner",
  /** the hooks actor's consumer of LURK_HOOK_EVENTS (one per bus: each event to one hooks instance) */
  hooks: "hooks",
  channel: (name: string) => `channel-${token(name, "channel")}`,
} as const;

export function actorGrants(prefix?: string): ActorGrant[] {
  const s = subjects(prefix);
  const p = s.prefix;
  const ops = (actor: string) => `${p}.${actor}.>`;
  const grant = (g: Omit<ActorGrant, "consumers" | "kvBuckets"> & Partial<Pick<ActorGrant, "consumers" | "kvBuckets">>): ActorGrant => ({
    consumers: [],
    kvBuckets: [],
    ...g,
  });
  const channel = (name: ChannelName, extraPublish: string[] = [], extraSubscribe: string[] = []) =>
    grant({
      user: `channel-${name}`,
      description: `the ${name} channel: platform <-> bus`,
      // the media store: files users send are stored, files the agent sends are read
      publish: [s.inbound(name), ops("approvals"), ops("sessions"), ops("router"), ...mediaSubjects("write"), ...extraPublish],
      subscribe: [s.runEventAll, s.toolProgressAll, ...extraSubscribe],
      responder: true,
      consumers: [{ stream: STREAMS.outbound, consumer: CONSUMERS.channel(name) }],
    });

  return [
    grant({
      user: "router",
      description: "bindings, session keys, lanes (one run per session), queue modes, commands; one active instance through a lease",
      // a standby relays requests to the active instance (lurk.router.active.<op>); loading the replica lists the bucket's keys;
      // $SRV.PING.router.<id>: whether a lease holder of this host that died still answers (dead-holder.ts);
      // lurk.agent-runner.auth_state: /status names the providers whose profiles are cooling down;
      // RUNS' messages, read one by one when a term starts and by the status check: the runs stored and not ended (stored-runs.ts)
      publish: [
        s.runRequestAll, s.runControlAll, s.outboundAll, ops("sessions"), ops("approvals"), ops("subagents"), s.activeOpAll("router"), "$SRV.PING.router.>",
        ...kvWatchSubjects(ROUTER_BUCKET), s.op("agent-runner", "auth_state"), `$JS.API.STREAM.MSG.GET.${STREAMS.runs}`,
      ],
      // run starts and ends: lanes of the runs it dispatched, and of those other actors store in RUNS (a child run, a cron agentTurn);
      // run requests as they are stored: another actor's run holds its lane from then (run-requests.ts)
      subscribe: [...s.runTerminalAll, s.runStartAll, s.runRequestAll],
      responder: true,
      // INBOUND; and the run requests the agent-runners dead-lettered (gave up), kept in DEADLETTER
      // while no router is active: their ends are recorded, their lanes freed (run-gave-up.ts)
      consumers: [{ stream: STREAMS.inbound, consumer: CONSUMERS.router }, { stream: STREAMS.deadLetter, consumer: CONSUMERS.routerGaveUp }],
      kvBuckets: [LEASE_BUCKET, ROUTER_BUCKET],
    }),
    grant({
      user: "sessions",
      description: "session entries and transcripts (LMDB); replicated: one active instance through a lease, standbys follow its change sets",
      // sessions.replication: change sets to the SESSIONS stream (sessionChangesSubjects), a standby relays
      // requests to the active instance (lurk.sessions.active.<op>); $SRV.PING.sessions.<id>: whether a lease holder of this host that died still answers
      publish: [s.sessionChangesAll, ...sessionChangesSubjects(), s.activeOpAll("sessions"), "$SRV.PING.sessions.>"],
      subscribe: [],
      responder: true,
      kvBuckets: [LEASE_BUCKET],
    }),
    grant({
      user: "agent-runner",
      description: "the agent loop: prompt, LLM, tools over the bus, checkpoints",
      // the media store: a transcript's images go to the model as bytes; voice replies (tts) are stored
      // the auth bucket: OAuth tokens refreshed with a compare-and-set, logins watched (auth-state.ts)
      // lurk.hooks.bootstrap for the agents the lurk_hooks bucket lists (read and watched, never written)
      publish: [s.runEventAll, s.outboundAll, ops("sessions"), ops("tools"), ...mediaSubjects("write"), ...kvWatchSubjects(AUTH_BUCKET), s.op("hooks", "bootstrap"), ...kvReadSubjects(HOOKS_BUCKET), ...kvWatchSubjects(HOOKS_BUCKET)],
      subscribe: [s.runControlAll, s.toolProgressAll, s.toolsCatalogChanged],
      responder: true,
      consumers: [{ stream: STREAMS.runs, consumer: CONSUMERS.agentRunner }],
      kvBuckets: [AUTH_BUCKET],
    }),
    grant({
      user: "tools",
      description: "tool catalog and execution (piscina workers, bubblewrap)",
      // $SRV.INFO.approvals: the approvals actor's public key, to verify approval tokens
      // toolJobAll, toolJobsList: a background job's calls go to the instance that owns it
      // the media store: media_save reads a user's file, message stores the files it sends
      // lurk.agent-runner.embed: memory_search's vectors (memory.embeddings); .speak: the tts tool's audio;
      // .describe_image: the image tool's answer from the vision model; no other user may ask for them
      publish: [s.toolProgressAll, ops("approvals"), "$SRV.INFO.approvals", ops("sessions"), ops("subagents"), ops("cron"), s.outboundAll, s.injectAll, s.toolJobAll, s.toolJobsList, s.toolsCatalogChanged, s.op("agent-runner", "embed"), s.op("agent-runner", "speak"), s.op("agent-runner", "describe_image"), ...mediaSubjects("write")],
      // a run's in-flight calls are cancelled on lurk.tools.cancel, on its abort control and when it ends;
      // the channels' delivery receipts: the message tool's react/edit/delete wait for their answer
      subscribe: [s.toolsCancel, s.runControlAll, ...s.runTerminalAll, ...channelReceiptSubjects(prefix)],
      responder: true,
    }),
    // a tool actor of your own (test/fixtures/ext-tools-actor.ts shows one): it answers
    // `lurk.tools.list` and `lurk.tools.explain` in its own queue group, announces itself on
    // `lurk.tools.catalog` and serves `lurk.tools.call.<its tools>` (shared/runtime/tool-serve.ts).
    // Its credentials are as trusted as the tools actor's: it could answer any tool's calls.
    grant({
      user: "tools-ext",
      description: "extra tool actors: their own tools in the catalog, their calls",
      // approvals request/wait/redeem and $SRV.INFO.approvals: a tool that needs approval runs only
      // with a valid token (shared/runtime/tool-serve.ts); never decide, list or get
      publish: [s.toolProgressAll, s.toolsCatalogChanged, s.op("approvals", "request"), s.op("approvals", "wait"), s.op("approvals", "redeem"), "$SRV.INFO.approvals"],
      // a call's cancellation (shared/runtime/tool-serve.ts): lurk.tools.cancel, its run's abort and end
      subscribe: [s.op("tools", "list"), s.op("tools", "explain"), s.toolCallAll, s.toolsCancel, s.runControlAll, ...s.runTerminalAll],
      responder: true,
    }),
    // the browser actor (services/browser): its own tools only (browser, browser_evaluate), the
    // same approval and cancellation grants as tools-ext, and no other tool's call subject;
    // lurk.tools.explain: serveTools answers `lurkbot tools --explain` for its two tools
    grant({
      user: "browser",
      description: "the browser tools: a Chromium driven by playwright-core",
      publish: [s.toolProgressAll, s.toolsCatalogChanged, s.op("approvals", "request"), s.op("approvals", "wait"), s.op("approvals", "redeem"), "$SRV.INFO.approvals"],
      subscribe: [s.op("tools", "list"), s.op("tools", "explain"), ...BROWSER_TOOLS.map((t) => s.toolCall(t)), s.toolsCancel, s.runControlAll, ...s.runTerminalAll],
      responder: true,
    }),
    // the mcp actor (services/mcp): MCP servers' tools as tools of the catalog (`mcp_<server>_<tool>`).
    // Their names come from config and the servers at run time, but always start with `mcp_`, whose
    // calls are `lurk.tools.call.mcp.<name>` (subjects.ts toolCall): it may answer those and no other
    // tool's calls (it subscribes only to its own tools' names, in queue group "mcp");
    // the same approval and cancellation grants as tools-ext; lurk.mcp.status for `lurkbot mcp list`
    grant({
      user: "mcp",
      description: "MCP servers' tools: stdio children and remote servers, served as tools of the catalog (names mcp_*: it may answer only lurk.tools.call.mcp.>, never a built-in tool's calls)",
      publish: [s.toolProgressAll, s.toolsCatalogChanged, s.op("approvals", "request"), s.op("approvals", "wait"), s.op("approvals", "redeem"), "$SRV.INFO.approvals"],
      subscribe: [s.op("tools", "list"), s.op("tools", "explain"), s.toolCallMcpAll, s.toolsCancel, s.runControlAll, ...s.runTerminalAll],
      responder: true,
    }),
    grant({
      user: "approvals",
      description: "human approvals and signed decision tokens (LMDB, replicated through KV), one active instance through a lease",
      // a standby relays requests to the active instance (lurk.approvals.active.<op>); loading the replica lists the bucket's keys;
      // $SRV.PING.approvals.<id>: whether a lease holder of this host that died still answers (dead-holder.ts)
      publish: [s.outboundAll, ops("sessions"), s.activeOpAll("approvals"), "$SRV.PING.approvals.>", ...kvWatchSubjects(APPROVALS_BUCKET)],
      subscribe: [],
      responder: true,
      kvBuckets: [LEASE_BUCKET, APPROVALS_BUCKET],
    }),
    grant({
      user: "subagents",
      description: "child runs, waiting, announcing results (LMDB, replicated through KV), one active instance through a lease",
      // a standby relays requests to the active instance; loading the replica lists the bucket's keys
      publish: [s.runRequestAll, s.runControlAll, s.injectAll, ops("sessions"), s.activeOpAll("subagents"), ...kvWatchSubjects(SUBAGENTS_BUCKET)],
      subscribe: [...s.runTerminalAll],
      responder: true,
      kvBuckets: [LEASE_BUCKET, SUBAGENTS_BUCKET],
    }),
    grant({
      user: "heartbeat",
      description: "periodic HEARTBEAT.md checks per agent (LMDB, replicated through KV), one active instance through a lease",
      // a standby relays requests to the active instance (lurk.heartbeat.active.<op>)
      // (it serves lurk.heartbeat.>, which covers them); loading the replica lists the bucket's keys
      publish: [s.injectAll, s.outboundAll, ops("sessions"), ops("router"), s.activeOpAll("heartbeat"), ...kvWatchSubjects(HEARTBEAT_BUCKET)],
      subscribe: [...s.runTerminalAll],
      responder: true,
      kvBuckets: [LEASE_BUCKET, HEARTBEAT_BUCKET],
    }),
    grant({
      user: "cron",
      description: "scheduled jobs (LMDB, replicated through KV), one active instance through a lease",
      // watching the jobs bucket: an ordered push consumer (create, info, delete, flow control)
      publish: [s.injectAll, s.runRequestAll, ops("sessions"), ...kvWatchSubjects(CRON_JOBS_BUCKET)],
      subscribe: [...s.runTerminalAll],
      responder: true,
      kvBuckets: [LEASE_BUCKET, CRON_JOBS_BUCKET, CRON_FIRES_BUCKET],
    }),
    // the hooks actor (services/hooks): user scripts run on chat commands, session resets, run ends
    // and its own start; what they push goes to the session's conversation (OUTBOUND) or to the
    // agent as a system event (INBOUND); sessions.get finds a session's last origin, sessions.history
    // the ended transcript of /new and /reset for hooks that ask for it (context previousMessages);
    // it answers lurk.hooks.reload and lurk.hooks.bootstrap (responder); commands, resets and new
    // sessions come from the LURK_HOOK_EVENTS stream (durable: kept while it is down), run ends
    // by core subscription while a hook wants them; lurk_hooks: which agents have agent:bootstrap hooks
    grant({
      user: "hooks",
      description: "event hooks: user scripts (HOOK.md + handler) run in a worker on commands, sessions, run ends, bootstrap files and start-up",
      publish: [s.outboundAll, s.injectAll, s.op("sessions", "get"), s.op("sessions", "history")],
      subscribe: [...s.runTerminalAll],
      responder: true,
      consumers: [{ stream: STREAMS.hookEvents, consumer: CONSUMERS.hooks }],
      kvBuckets: [HOOKS_BUCKET],
    }),
    // the terminal channel is also the operator's console: status, tail and admin commands
    grant({
      user: "cli",
      description: "the terminal channel and the operator console (status, tail, admin commands)",
      // reading the leases: which instance of cron, heartbeat, subagents, approvals and router is active (status);
      // the media store: files sent from the terminal and files received there;
      // the auth bucket: `lurkbot auth login|import|logout|list` (auth-state.ts);
      // the agent-runners' auth profile state and probes (`lurkbot auth list|probe`, `lurkbot usage --providers`), never embed or speak
      publish: [s.inbound("cli"), "$SRV.>", ...["router", "sessions", "tools", "approvals", "subagents", "heartbeat", "cron", "hooks", "mcp"].map(ops), ...kvReadSubjects(LEASE_BUCKET), ...mediaSubjects("write"), s.op("agent-runner", "auth_state"), s.op("agent-runner", "auth_probe")],
      subscribe: [s.outboundChannel("cli"), s.runEventAll, s.toolProgressAll, s.eventAll],
      responder: false,
      kvBuckets: [AUTH_BUCKET],
    }),
    // the web channel also serves the `canvas` tool (services/channel-web/canvas-tool.ts): the catalog
    // (lurk.tools.list, its announcement, lurk.tools.explain), its own call subject only, cancellation,
    // progress, and the approval request/wait/redeem a tool that needs approval uses (shared/runtime/tool-serve.ts);
    // a session's reset and deletion events: its canvas is forgotten
    channel("web",
      [s.toolProgressAll, s.toolsCatalogChanged, "$SRV.INFO.approvals"],
      [s.op("tools", "list"), s.op("tools", "explain"), ...WEB_TOOLS.map((t) => s.toolCall(t)), s.toolsCancel, s.event("sessions", "reset"), s.event("sessions", "delete")]),
    channel("telegram"),
    channel("discord"),
    channel("slack"),
    channel("webhook"),
    channel("openai-http"),
    channel("matrix"),
    channel("signal"),
    channel("whatsapp"),
  ];
}

/** The delivery receipts of every kit channel (`lurk.evt.channel-<name>.delivered|delivery_failed`). */
export function channelReceiptSubjects(prefix?: string): string[] {
  const s = subjects(prefix);
  return CHANNELS.filter((c) => c !== "cli").flatMap((c) => [s.event(`channel-${c}`, "delivered"), s.event(`channel-${c}`, "delivery_failed")]);
}

/**
 * The media store's subjects: reading an object (its meta by direct get, its chunks through an
 * ordered consumer) and, for "write", storing one (chunks and meta; a failed put purges its chunks).
 */
export function mediaSubjects(access: "read" | "write"): string[] {
  const stream = `OBJ_${MEDIA_BUCKET}`;
  const read = [
    "$JS.API.INFO", `$JS.API.STREAM.INFO.${stream}`, `$JS.API.DIRECT.GET.${stream}.>`, `$JS.API.STREAM.MSG.GET.${stream}`,
    `$JS.API.CONSUMER.CREATE.${stream}`, `$JS.API.CONSUMER.CREATE.${stream}.>`, `$JS.API.CONSUMER.INFO.${stream}.>`, `$JS.API.CONSUMER.DELETE.${stream}.>`, `$JS.FC.${stream}.>`,
  ];
  return access === "read" ? read : [...read, `$O.${MEDIA_BUCKET}.C.>`, `$O.${MEDIA_BUCKET}.M.>`, `$JS.API.STREAM.PURGE.${stream}`];
}

/**
 * The sessions actor's own stream: its info, following it with an ordered consumer (create,
 * next, info, delete, flow control) and purging a deleted session's subject.
 */
export function sessionChangesSubjects(): string[] {
  const stream = STREAMS.sessions;
  return [
    `$JS.API.STREAM.INFO.${stream}`, `$JS.API.STREAM.PURGE.${stream}`, `$JS.API.CONSUMER.CREATE.${stream}`, `$JS.API.CONSUMER.CREATE.${stream}.>`,
    `$JS.API.CONSUMER.MSG.NEXT.${stream}.>`, `$JS.API.CONSUMER.INFO.${stream}.>`, `$JS.API.CONSUMER.DELETE.${stream}.>`, `$JS.FC.${stream}.>`,
  ];
}

/** Reading single keys of a bucket, nothing else (the operator console reads the leases). */
export function kvReadSubjects(bucket: string): string[] {
  const stream = `KV_${bucket}`;
  return [`$JS.API.STREAM.INFO.${stream}`, `$JS.API.DIRECT.GET.${stream}.>`, `$JS.API.STREAM.MSG.GET.${stream}`];
}

/** What a KV watcher on `bucket` publishes (ordered consumer: create, info, delete, flow control replies). */
export function kvWatchSubjects(bucket: string): string[] {
  const stream = `KV_${bucket}`;
  return [`$JS.API.CONSUMER.CREATE.${stream}`, `$JS.API.CONSUMER.CREATE.${stream}.>`, `$JS.API.CONSUMER.INFO.${stream}.>`, `$JS.API.CONSUMER.DELETE.${stream}.>`, `$JS.FC.${stream}.>`];
}

/** The full publish/subscribe allow lists of a grant, JetStream and services plumbing included. */
export function expandGrant(grant: ActorGrant, prefix?: string): { publish: string[]; subscribe: string[] } {
  const s = subjects(prefix);
  const publish = new Set<string>(grant.publish);
  const subscribe = new Set<string>(grant.subscribe);
  subscribe.add(`${inboxPrefix(grant.user)}.>`);
  publish.add(s.eventsOf(grant.user));
  if (grant.responder) subscribe.add("$SRV.>");
  // an actor with operations (`lurk.<actor>.<op>`) serves them
  if (grant.responder && !grant.user.startsWith("channel-")) subscribe.add(`${s.prefix}.${grant.user}.>`);
  const usesJetStream = grant.consumers.length > 0 || grant.kvBuckets.length > 0 || grant.publish.some((x) => isStreamSubject(x, s.prefix));
  if (usesJetStream) publish.add("$JS.API.INFO");
  for (const { stream, consumer } of grant.consumers) {
    publish.add(`$JS.API.STREAM.INFO.${stream}`);
    publish.add(`$JS.API.CONSUMER.INFO.${stream}.${consumer}`);
    publish.add(`$JS.API.CONSUMER.CREATE.${stream}.${consumer}`);
    publish.add(`$JS.API.CONSUMER.CREATE.${stream}.${consumer}.>`);
    publish.add(`$JS.API.CONSUMER.DURABLE.CREATE.${stream}.${consumer}`);
    publish.add(`$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`);
    publish.add(`$JS.ACK.${stream}.${consumer}.>`);
    publish.add(s.deadLetter(stream, consumer));
  }
  for (const bucket of grant.kvBuckets) {
    for (const subject of kvReadSubjects(bucket)) publish.add(subject);
    publish.add(`$KV.${bucket}.>`);
  }
  return { publish: [...publish].sort(), subscribe: [...subscribe].sort() };
}

function isStreamSubject(subject: string, prefix: string): boolean {
  return ["in", "inject", "run.req", "out", "sesslog"].some((part) => subject.startsWith(`${prefix}.${part}.`) || subject === `${prefix}.${part}`);
}

/** Environment variable that carries an actor's NATS password to nats-server and the actor. */
export function passwordEnvName(user: string): string {
  return `LURKBOT_NATS_PASS_${user.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`;
}

export const ADMIN_USER = "admin";
