/**
 * The ACP agent side of `lurkbot acp`: answers initialize, session/new, session/load and
 * session/prompt, takes session/cancel, and keeps the ACP sessions of this process (each a
 * LurkBot session of its own, session.ts). Every request's params are validated (-32602 with
 * the issues when they do not match); an unknown method is -32601. The bus connection is made on
 * the first session request, so an editor gets initialize answered and a readable error (start
 * LurkBot) rather than a process that exits when the bus is down. session/load takes only
 * names with this process's session prefix (sessions an ACP server made), never e.g. a
 * `lurkbot chat --session NAME` transcript. A prompt's images and embedded files are decoded
 * and checked (prompt-files.ts: -32602 naming the block) before its session is looked up, so a
 * bad one sends nothing.
 */
import { randomUUID } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import type { z } from "zod";
import { MB, type MediaConfig } from "../../../shared/runtime/config-media.js";
import type { Logger } from "../../../shared/runtime/logger.js";
import { MediaStore } from "../../../shared/runtime/media.js";
import { LURKBOT_VERSION } from "../../../shared/runtime/version.js";
import { toCliError } from "../errors.js";
import { RPC, RpcError, type RpcHandler } from "./jsonrpc.js";
import { replayHistory } from "./history.js";
import { promptFiles, promptFilesMaxBytes } from "./prompt-files.js";
import {
  ACP_PROTOCOL_VERSION, initializeParams, issuesOf, sessionCancelParams, sessionLoadParams, sessionNewParams, sessionPromptParams,
} from "./schema.js";
import { AcpSession, type AcpClientLink } from "./session.js";

export interface AgentDeps {
  /** the bus connection (made once, on first use) */
  bus: () => Promise<NatsConnection>;
  prefix: string;
  /** the agent of every message (`--agent`), else the router's bindings decide */
  agentId?: string;
  /** the agent whose sessions session/load reads: `--agent`, else the configured default */
  loadAgentId: string;
  sessionPrefix: string;
  requestTimeoutMs: number;
  log: Logger;
  promptTimeoutMs: number;
  cancelGraceMs: number;
  /** the `media` config: the store's caps (a prompt's file at most media.maxFileMb) */
  media: MediaConfig;
  /** where files the agent sends are saved (`lurkbot chat`'s $LURKBOT_HOME/downloads) */
  downloadsDir: string;
}

/** A session id this process makes or loads: also the LurkBot session name and conversation token. */
export const SESSION_ID = /^[A-Za-z0-9_-]{1,128}$/;

function parse<S extends z.ZodType>(schema: S, params: unknown): z.output<S> {
  const r = schema.safeParse(params ?? {});
  if (!r.success) throw new RpcError(RPC.invalidParams, `invalid params: ${r.error.issues[0]?.path.join(".") || "params"}: ${r.error.issues[0]?.message ?? "do not match"}`, issuesOf(r.error));
  return r.data;
}

export class AcpAgent implements RpcHandler {
  private readonly sessions = new Map<string, AcpSession>();
  private client: AcpClientLink | undefined;
  /** the media store on the bus connection (one connection per process) */
  private media: MediaStore | undefined;

  constructor(private readonly deps: AgentDeps) {}

  /** the client connection this agent notifies and asks */
  attach(client: AcpClientLink): void {
    this.client = client;
  }

  async request(method: string, params: unknown): Promise<unknown> {
    switch (method) {
      case "initialize":
        return this.initialize(parse(initializeParams, params));
      case "authenticate":
        // no auth methods are advertised: the process uses the operator's own LurkBot credentials
        return {};
      case "session/new": {
        const p = parse(sessionNewParams, params);
        this.ignoredMcp(p.mcpServers.length);
        const session = await this.open(`${this.deps.sessionPrefix}${randomUUID()}`, p.cwd);
        return { sessionId: session.id };
      }
      case "session/load": {
        const p = parse(sessionLoadParams, params);
        if (!SESSION_ID.test(p.sessionId)) throw new RpcError(RPC.invalidParams, "invalid params: sessionId: letters, digits, '-' and '_' only");
        // only the sessions an ACP server made: not the transcript of any `lurkbot chat --session NAME`
        if (!p.sessionId.startsWith(this.deps.sessionPrefix) || p.sessionId.length === this.deps.sessionPrefix.length) {
          throw new RpcError(RPC.invalidParams, `invalid params: sessionId: session/load takes only the sessions an ACP server made (names starting with "${this.deps.sessionPrefix}", the --session-prefix); ${p.sessionId} is not one of them`, { sessionPrefix: this.deps.sessionPrefix });
        }
        this.ignoredMcp(p.mcpServers.length);
        return this.load(p.sessionId, p.cwd);
      }
      case "session/prompt": {
        const p = parse(sessionPromptParams, params);
        const files = promptFiles(p.prompt, Math.floor(this.deps.media.maxFileMb * MB), promptFilesMaxBytes(this.deps.media));
        return this.session(p.sessionId).prompt(p.prompt, files);
      }
      default:
        throw new RpcError(RPC.methodNotFound, `method not found: ${method}`);
    }
  }

  notify(method: string, params: unknown): void {
    if (method !== "session/cancel") {
      this.deps.log.debug({ method }, "a notification LurkBot does not take; ignored");
      return;
    }
    const p = sessionCancelParams.safeParse(params);
    if (!p.success) {
      this.deps.log.warn({ issues: issuesOf(p.error) }, "session/cancel with invalid params; ignored");
      return;
    }
    this.sessions.get(p.data.sessionId)?.cancel();
  }

  close(): void {
    for (const s of this.sessions.values()) s.close();
    this.sessions.clear();
  }

  private initialize(p: z.output<typeof initializeParams>): unknown {
    this.deps.log.info({ protocolVersion: p.protocolVersion, client: p.clientInfo?.name }, "initialize");
    return {
      // the client's version when we speak it, else ours (the only one)
      protocolVersion: ACP_PROTOCOL_VERSION,
      agentCapabilities: {
        loadSession: true,
        promptCapabilities: { image: true, audio: false, embeddedContext: true },
        mcpCapabilities: { http: false, sse: false },
      },
      authMethods: [],
      agentInfo: { name: "lurkbot", title: "LurkBot", version: LURKBOT_VERSION },
    };
  }

  private ignoredMcp(count: number): void {
    if (count > 0) this.deps.log.info({ count }, "the client's MCP servers are not connected: LurkBot's tools come from its own actors");
  }

  private session(id: string): AcpSession {
    const s = this.sessions.get(id);
    if (!s) throw new RpcError(RPC.resourceNotFound, `no session ${id} in this process: create one with session/new (or session/load it)`);
    return s;
  }

  private async connection(): Promise<NatsConnection> {
    try {
      return await this.deps.bus();
    } catch (err) {
      throw new RpcError(RPC.internalError, toCliError(err).message);
    }
  }

  private async open(id: string, cwd: string): Promise<AcpSession> {
    if (!this.client) throw new RpcError(RPC.internalError, "the agent is not attached to a client");
    const nc = await this.connection();
    const session = new AcpSession(id, cwd, {
      nc, prefix: this.deps.prefix, client: this.client, log: this.deps.log.child({ sessionId: id }),
      promptTimeoutMs: this.deps.promptTimeoutMs, cancelGraceMs: this.deps.cancelGraceMs,
      media: (this.media ??= new MediaStore(nc, this.deps.media)), downloadsDir: this.deps.downloadsDir,
      ...(this.deps.agentId ? { agentId: this.deps.agentId } : {}),
    });
    await session.open();
    this.sessions.set(id, session);
    this.deps.log.info({ sessionId: id, cwd }, "session opened");
    return session;
  }

  /** session/load: the LurkBot session named by the id, its conversation replayed first. */
  private async load(id: string, cwd: string): Promise<unknown> {
    const live = this.sessions.get(id);
    if (live?.busy) throw new RpcError(RPC.invalidRequest, `session ${id} is answering a prompt`);
    const nc = await this.connection();
    const found = await replayHistory(nc, { prefix: this.deps.prefix, timeoutMs: this.deps.requestTimeoutMs, agentId: this.deps.loadAgentId, sessionName: id });
    if (!found && !live) throw new RpcError(RPC.resourceNotFound, `no LurkBot session ${id} (agent ${this.deps.loadAgentId}): create one with session/new`);
    const session = live ?? (await this.open(id, cwd));
    session.setCwd(cwd);
    for (const u of found?.updates ?? []) session.update(u);
    return {};
  }
}
