/**
 * One configured MCP server: the SDK's Client over stdio (a child process) or a remote URL
 * (streamable HTTP, falling back to SSE when that connect fails, as the SDK recommends), and its
 * tools. Connects at start; when the connection fails or is lost (a stdio child exits, a remote
 * call fails at the transport) it connects again after a delay doubling from
 * `mcp.reconnectMinMs` to `mcp.reconnectMaxMs` (a stdio child is started again), forever, until
 * the actor stops; a server's death never takes the actor down. Tools are listed with
 * pagination at each connect and again on `notifications/tools/list_changed`; `onTools` tells
 * the actor the list changed. A call waits for a reconnect in progress (up to its timeout), then
 * runs with the call's timeout and signal: the SDK sends `notifications/cancelled` when either
 * ends it.
 */
import type { Readable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ToolListChangedNotificationSchema, type Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { LurkError, type McpServerStatus } from "../../shared/contract/index.js";
import { isStdioServer, mcpTransportOf, type McpConfig, type McpServerConfig } from "../../shared/runtime/config-mcp.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { LURKBOT_VERSION } from "../../shared/runtime/version.js";
import { toolEntry, type McpToolEntry } from "./definitions.js";
import { catalogToolName, filteredOut, toolPrefix } from "./names.js";
import { childEnv, resolveValues } from "./secrets.js";

/** list pages read at most per listing (a server that pages forever is cut here) */
const MAX_LIST_PAGES = 50;
/** a connection that lasted this long resets the reconnect delay */
const STABLE_MS = 30_000;
const MAX_STDERR_LINE = 1000;

type Waiter = { resolve(client: Client): void; reject(err: Error): void };

export class McpServerConnection {
  private client: Client | undefined;
  private state: McpServerStatus["state"];
  private transportKind: McpServerStatus["transport"];
  private tools: McpToolEntry[] = [];
  private skipped = 0;
  private lastError: string | undefined;
  private connectedAt: number | undefined;
  private connects = 0;
  private attempts = 0;
  private serverInfo: McpServerStatus["serverInfo"];
  private retry: NodeJS.Timeout | undefined;
  private stopped = false;
  private waiters: Waiter[] = [];
  private listing: Promise<void> = Promise.resolve();

  constructor(
    readonly name: string,
    private readonly config: McpServerConfig,
    private readonly global: McpConfig,
    private readonly log: Logger,
    private readonly onTools: () => void,
  ) {
    this.state = config.enabled ? "connecting" : "disabled";
    this.transportKind = mcpTransportOf(config);
  }

  get timeoutMs(): number {
    return this.config.timeoutMs ?? this.global.timeoutMs;
  }

  /** The tools served now (catalog names). */
  served(): readonly McpToolEntry[] {
    return this.tools;
  }

  start(): void {
    if (this.config.enabled) void this.connect();
  }

  status(): McpServerStatus {
    return {
      name: this.name, transport: this.transportKind, state: this.state,
      tools: this.tools.map((t) => ({ name: t.name, serverName: t.serverName.slice(0, 200), sideEffects: t.definition.sideEffects })),
      skipped: this.skipped, connects: this.connects,
      ...(this.lastError ? { lastError: this.lastError.slice(0, 2000) } : {}),
      ...(this.connectedAt ? { connectedAt: this.connectedAt } : {}),
      ...(this.serverInfo ? { serverInfo: this.serverInfo } : {}),
    };
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    this.state = "connecting";
    let opened: Client | undefined;
    try {
      const client = await this.open();
      if (this.stopped) {
        await client.close().catch(() => undefined);
        return;
      }
      this.client = opened = client;
      await this.list(client);
      // lost while listing (a stdio child that exited): failed() already scheduled the next connect
      if (this.client !== client) return;
      this.state = "connected";
      this.connects++;
      this.connectedAt = Date.now();
      this.lastError = undefined;
      const info = client.getServerVersion();
      this.serverInfo = info ? { name: String(info.name).slice(0, 200), version: String(info.version).slice(0, 100) } : undefined;
      this.log.info({ server: this.name, transport: this.transportKind, tools: this.tools.length, skipped: this.skipped }, "MCP server connected");
      for (const w of this.waiters.splice(0)) w.resolve(client);
    } catch (err) {
      // a connection lost meanwhile was reported (and its reconnect scheduled) by its close
      if (opened && this.client !== opened) return;
      this.failed(err, "could not connect");
    }
  }

  /** Schedules the next connect after the backoff delay (the current client, if any, is closed). */
  private failed(err: unknown, what: string): void {
    if (this.stopped) return;
    const message = err instanceof Error ? err.message : String(err);
    this.lastError = `${what}: ${message}`;
    this.state = "failed";
    const client = this.client;
    this.client = undefined;
    if (client) void client.close().catch(() => undefined);
    if (this.connectedAt && Date.now() - this.connectedAt >= STABLE_MS) this.attempts = 0;
    this.connectedAt = undefined;
    const delay = Math.min(this.global.reconnectMaxMs, this.global.reconnectMinMs * 2 ** Math.min(this.attempts++, 20));
    this.log.warn({ server: this.name, err: message, retryInMs: delay }, `MCP server ${what}; connecting again later`);
    clearTimeout(this.retry);
    this.retry = setTimeout(() => void this.connect(), delay);
  }

  private async open(): Promise<Client> {
    const timeout = this.global.connectTimeoutMs;
    if (isStdioServer(this.config)) {
      const env = childEnv(resolveValues(this.name, "env", this.config.env));
      const transport = new StdioClientTransport({ command: this.config.command, args: this.config.args, env, ...(this.config.cwd ? { cwd: this.config.cwd } : {}), stderr: "pipe" });
      this.followStderr(transport.stderr as Readable | null);
      return this.handshake(transport, timeout);
    }
    const headers = resolveValues(this.name, "headers", this.config.headers);
    const url = new URL(this.config.url);
    if (this.config.type === "sse") {
      const client = await this.handshake(new SSEClientTransport(url, { requestInit: { headers } }), timeout);
      this.transportKind = "sse";
      return client;
    }
    try {
      const client = await this.handshake(new StreamableHTTPClientTransport(url, { requestInit: { headers } }), timeout);
      this.transportKind = "streamable-http";
      return client;
    } catch (err) {
      if (this.stopped) throw err;
      this.log.info({ server: this.name, err: err instanceof Error ? err.message : String(err) }, "streamable HTTP connect failed: trying the SSE transport");
      const client = await this.handshake(new SSEClientTransport(url, { requestInit: { headers } }), timeout);
      this.transportKind = "sse";
      return client;
    }
  }

  /** A client connected (initialized) over `transport`, its close and list_changed followed. */
  private async handshake(transport: Transport, timeout: number): Promise<Client> {
    const client = new Client({ name: "lurkbot", version: LURKBOT_VERSION }, { capabilities: {} });
    client.onerror = (err) => this.log.debug({ server: this.name, err: err.message }, "MCP transport error");
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      if (this.client !== client) return;
      this.log.info({ server: this.name }, "MCP server says its tools changed: listing them again");
      void this.list(client).catch((err) => this.failed(err, "could not list its tools"));
    });
    try {
      await client.connect(transport, { timeout });
    } catch (err) {
      await client.close().catch(() => undefined);
      throw err;
    }
    // set after connect: a failed handshake is reported by connect() itself
    client.onclose = () => {
      if (this.client === client) this.failed(new Error(isStdioServer(this.config) ? "the server process exited or closed its output" : "the connection closed"), "connection lost");
    };
    return client;
  }

  private followStderr(stream: Readable | null): void {
    if (!stream) return;
    let rest = "";
    stream.on("data", (d: Buffer) => {
      const lines = (rest + d.toString("utf8")).split("\n");
      rest = lines.pop()!.slice(-MAX_STDERR_LINE);
      for (const line of lines) if (line.trim()) this.log.info({ server: this.name, stderr: line.slice(0, MAX_STDERR_LINE) }, "MCP server stderr");
    });
  }

  /** tools/list, every page; replaces the served tools and tells the actor (serialized). */
  private list(client: Client): Promise<void> {
    const run = async () => {
      const all: McpTool[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const res = await client.listTools(cursor === undefined ? undefined : { cursor }, { timeout: this.global.connectTimeoutMs });
        all.push(...res.tools);
        cursor = res.nextCursor;
        if (!cursor) break;
      }
      if (this.client !== client) return;
      this.setTools(all);
    };
    this.listing = this.listing.then(run, run);
    return this.listing;
  }

  private setTools(all: readonly McpTool[]): void {
    const prefix = toolPrefix(this.name, this.config.toolPrefix);
    const entries: McpToolEntry[] = [];
    const names = new Set<string>();
    let skipped = 0;
    for (const tool of all) {
      const out = filteredOut(tool.name, this.config.allowTools, this.config.denyTools);
      if (out) {
        skipped++;
        this.log.debug({ server: this.name, tool: tool.name, reason: out }, "MCP tool not served");
        continue;
      }
      const name = catalogToolName(prefix, tool.name);
      const entry = toolEntry(tool, name, { server: this.name, groups: this.config.groups, maxSchemaBytes: this.global.maxSchemaBytes, needsApproval: this.config.approval === "always" });
      const reason = "skipped" in entry ? entry.skipped : names.has(name) ? `its name ${name} is taken by another of the server's tools` : entries.length >= this.global.maxToolsPerServer ? `the server has more than mcp.maxToolsPerServer (${this.global.maxToolsPerServer}) tools` : null;
      if (reason !== null || "skipped" in entry) {
        skipped++;
        this.log.warn({ server: this.name, tool: tool.name.slice(0, 200), reason }, "MCP tool skipped");
        continue;
      }
      names.add(name);
      entries.push(entry);
    }
    this.tools = entries;
    this.skipped = skipped;
    this.onTools();
  }

  /** The connected client; waits for a connect in progress up to `waitMs`. */
  private ready(waitMs: number, signal: AbortSignal): Promise<Client> {
    if (this.client && this.state === "connected") return Promise.resolve(this.client);
    if (this.state === "disabled" || this.stopped) return Promise.reject(new LurkError("UNAVAILABLE", `the MCP server "${this.name}" is disabled`));
    return new Promise<Client>((resolve, reject) => {
      const notConnected = () => new LurkError("UNAVAILABLE", `the MCP server "${this.name}" is not connected (it is being connected again${this.lastError ? `; last error: ${this.lastError.slice(0, 500)}` : ""}); try again later`);
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        this.waiters = this.waiters.filter((w) => w !== waiter);
      };
      const onAbort = () => {
        done();
        reject(signal.reason instanceof Error ? signal.reason : new LurkError("ABORTED"));
      };
      const waiter: Waiter = { resolve: (c) => (done(), resolve(c)), reject: (e) => (done(), reject(e)) };
      const timer = setTimeout(() => waiter.reject(notConnected()), waitMs);
      signal.addEventListener("abort", onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /**
   * tools/call of the server's tool `serverName`. Throws LurkErrors: UNAVAILABLE (not
   * connected), TIMEOUT, TOOL_FAILED (the server failed or the connection broke); the signal's
   * reason when it fired. A transport failure starts a reconnect.
   */
  async call(serverName: string, args: Record<string, unknown>, timeoutMs: number, signal: AbortSignal): Promise<{ content?: unknown; structuredContent?: unknown; isError?: unknown }> {
    const started = Date.now();
    const client = await this.ready(Math.min(timeoutMs, this.global.connectTimeoutMs), signal);
    const left = Math.max(1, timeoutMs - (Date.now() - started));
    try {
      const result = await client.callTool({ name: serverName, arguments: args }, undefined, { signal, timeout: left });
      // an old server's `toolResult` (protocol 2024-10-07) is its structured content
      const r = result as { content?: unknown; structuredContent?: unknown; isError?: unknown; toolResult?: unknown };
      return r.content === undefined && r.toolResult !== undefined ? { structuredContent: r.toolResult } : r;
    } catch (err) {
      if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new LurkError("ABORTED");
      const code = (err as { code?: unknown }).code;
      const message = err instanceof Error ? err.message : String(err);
      if (code === -32001) throw new LurkError("TIMEOUT", `the MCP server "${this.name}" did not answer within ${left} ms; the request was cancelled`);
      if (code === -32602) throw new LurkError("TOOL_INVALID_ARGS", `the MCP server "${this.name}" refused the arguments: ${message.slice(0, 2000)}`);
      const lost = code === -32000 || typeof code !== "number";
      if (lost && this.client === client) this.failed(err, "connection lost during a call");
      throw new LurkError("TOOL_FAILED", lost
        ? `the connection to the MCP server "${this.name}" broke while the call ran (${message.slice(0, 500)}); it is being restarted: the call may or may not have taken effect`
        : `the MCP server "${this.name}" failed: ${message.slice(0, 2000)}`);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    for (const w of this.waiters.splice(0)) w.reject(new LurkError("UNAVAILABLE", "the mcp actor is stopping"));
    const client = this.client;
    this.client = undefined;
    if (client) await client.close().catch(() => undefined);
  }
}
