/**
 * MCP servers for the mcp actor's tests, built with the SDK's own server classes.
 * - Run as a script (`node mcp-server.js`): an McpServer over stdio with the tools
 *   echo (readOnlyHint), fail (isError), picture (an image, a text and an embedded resource),
 *   slow (held until cancelled or `ms`; appends `started <id>` / `cancelled <id>` / `finished <id>`
 *   to MCP_EVENTS_FILE), crash (the process exits mid-call), env (its own environment as JSON),
 *   add_tool (registers `late_tool`: the SDK sends notifications/tools/list_changed) and
 *   hidden (for denyTools). At start it writes `starting pid <pid> key <MCP_SECRET>` to stderr
 *   (the actor must log it redacted) and `start <pid>` to MCP_EVENTS_FILE.
 * - `startHttpMcpServer(token)`: a low-level Server over streamable HTTP (stateless: one server
 *   and transport per request) on a free loopback port, whose tools/list pages (two tools per
 *   page, cursor = the next index) and which refuses requests without `Authorization: Bearer <token>`.
 * - `startSseMcpServer()`: an McpServer over the old SSE transport only (GET /sse, POST
 *   /messages); a POST to /sse (a streamable HTTP connect) is refused with 405, so a client
 *   has to fall back to SSE. One tool: sse_ping.
 */
import { appendFileSync } from "node:fs";
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema, type Tool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

/** a 1x1 PNG */
export const PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

function note(line: string): void {
  const file = process.env.MCP_EVENTS_FILE;
  if (file) appendFileSync(file, `${line}\n`);
}

async function stdioMain(): Promise<void> {
  const server = new McpServer({ name: "lurkbot-test-stdio", version: "1.2.3" });
  server.registerTool("echo", { description: "Echoes the text back.", inputSchema: { text: z.string() }, annotations: { readOnlyHint: true } },
    async ({ text }) => ({ content: [{ type: "text", text: `echo: ${text} (pid ${process.pid})` }] }));
  server.registerTool("fail", { description: "Always fails.", inputSchema: { why: z.string().optional() } },
    async ({ why }) => ({ content: [{ type: "text", text: `failed on purpose: ${why ?? "no reason"}` }], isError: true }));
  server.registerTool("picture", { description: "A picture, a caption and a resource.", inputSchema: {} }, async () => ({
    content: [
      { type: "text", text: "a red dot" },
      { type: "image", data: PNG_BASE64, mimeType: "image/png" },
      { type: "resource", resource: { uri: "file:///notes/dot.txt", mimeType: "text/plain", text: "the dot is 1x1" } },
    ],
  }));
  server.registerTool("slow", { description: "Waits until cancelled or ms pass.", inputSchema: { id: z.string(), ms: z.number().optional() } }, async ({ id, ms }, extra) => {
    note(`started ${id}`);
    const cancelled = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), ms ?? 60_000);
      extra.signal.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve(true);
      }, { once: true });
    });
    note(`${cancelled ? "cancelled" : "finished"} ${id}`);
    return { content: [{ type: "text", text: `slow ${id} done` }] };
  });
  server.registerTool("crash", { description: "Exits the server process mid-call.", inputSchema: {} }, async () => {
    note(`crash ${process.pid}`);
    setTimeout(() => process.exit(3), 20);
    return new Promise(() => undefined);
  });
  server.registerTool("env", { description: "Its environment.", inputSchema: {}, annotations: { readOnlyHint: true } },
    async () => ({ content: [{ type: "text", text: JSON.stringify(process.env) }] }));
  server.registerTool("hidden", { description: "Denied by config.", inputSchema: {} }, async () => ({ content: [{ type: "text", text: "should not run" }] }));
  server.registerTool("add_tool", { description: "Adds late_tool.", inputSchema: {} }, async () => {
    server.registerTool("late_tool", { description: "Added at run time.", inputSchema: { n: z.number() } },
      async ({ n }) => ({ content: [{ type: "text", text: `late ${n * 2}` }] }));
    return { content: [{ type: "text", text: "added late_tool" }] };
  });
  process.stderr.write(`starting pid ${process.pid} key ${process.env.MCP_SECRET ?? "none"}\n`);
  note(`start ${process.pid}`);
  await server.connect(new StdioServerTransport());
}

export interface HttpMcpServer {
  url: string;
  /** Authorization headers seen */
  authorizations: string[];
  close(): Promise<void>;
}

const HTTP_TOOLS: Tool[] = ["page_one", "page_two", "page_three", "page_four", "page_five"].map((name) => ({
  name, description: `the ${name} tool`, inputSchema: { type: "object", properties: { x: { type: "string" } } },
  annotations: { readOnlyHint: name !== "page_five" },
}));

export async function startHttpMcpServer(token: string): Promise<HttpMcpServer> {
  const authorizations: string[] = [];
  const build = () => {
    const server = new Server({ name: "lurkbot-test-http", version: "0.9.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async (req) => {
      const at = Number(req.params?.cursor ?? 0);
      const next = at + 2;
      return { tools: HTTP_TOOLS.slice(at, next), ...(next < HTTP_TOOLS.length ? { nextCursor: String(next) } : {}) };
    });
    server.setRequestHandler(CallToolRequestSchema, async (req) => ({ content: [{ type: "text", text: `${req.params.name} over http: ${JSON.stringify(req.params.arguments ?? {})}` }] }));
    return server;
  };
  const http: HttpServer = createServer((req, res) => {
    authorizations.push(String(req.headers.authorization ?? ""));
    if (req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: "unauthorized" }));
      return;
    }
    if (req.method !== "POST") {
      res.writeHead(405).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void (async () => {
        const server = build();
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
        res.on("close", () => void transport.close().then(() => server.close()));
        await server.connect(transport);
        await transport.handleRequest(req, res, JSON.parse(Buffer.concat(chunks).toString("utf8")));
      })().catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    authorizations,
    close: () => new Promise<void>((resolve) => {
      http.closeAllConnections();
      http.close(() => resolve());
    }),
  };
}

export async function startSseMcpServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sessions = new Map<string, SSEServerTransport>();
  const http: HttpServer = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (req.method === "GET" && url.pathname === "/sse") {
      const server = new McpServer({ name: "lurkbot-test-sse", version: "0.1.0" });
      server.registerTool("sse_ping", { description: "Pong over SSE.", inputSchema: {}, annotations: { readOnlyHint: true } }, async () => ({ content: [{ type: "text", text: "pong over sse" }] }));
      const transport = new SSEServerTransport("/messages", res);
      sessions.set(transport.sessionId, transport);
      res.on("close", () => sessions.delete(transport.sessionId));
      void server.connect(transport);
      return;
    }
    if (req.method === "POST" && url.pathname === "/messages") {
      const transport = sessions.get(url.searchParams.get("sessionId") ?? "");
      if (!transport) return void res.writeHead(404).end();
      void transport.handlePostMessage(req, res);
      return;
    }
    res.writeHead(405).end();
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/sse`,
    close: () => new Promise<void>((resolve) => {
      http.closeAllConnections();
      http.close(() => resolve());
    }),
  };
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split("/").pop()!) && process.argv.includes("--stdio")) {
  stdioMain().catch((err) => {
    process.stderr.write(`mcp test server failed: ${(err as Error).message}\n`);
    process.exit(1);
  });
}
