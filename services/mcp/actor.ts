/**
 * The mcp actor: the tools of MCP (Model Context Protocol) servers, served on the bus like any
 * tool actor's (shared/runtime/tool-serve.ts serveToolSet, queue group "mcp"): in the catalog
 * as `mcp_<server>_<tool>` (names.ts), under the built-in layered tool policy (profiles,
 * allow/deny, groups: `group:mcp`, `group:mcp_<server>`), approvals, cancellation and
 * `lurk.tools.catalog` announcements whenever a server's tools change. One connection per
 * configured server (server.ts; config-mcp.ts `mcp.servers`), connected at start and again after
 * a failure. `lurk.mcp.status` lists the servers (`lurkbot mcp list`).
 * With no server configured the actor runs and serves no tool.
 */
import { hostname } from "node:os";
import type { ActorDefinition } from "../../shared/runtime/actor.js";
import { serveToolSet } from "../../shared/runtime/tool-serve.js";
import { layeredToolPolicy } from "../../shared/runtime/tool-serve-policy.js";
import { LURKBOT_VERSION } from "../../shared/runtime/version.js";
import type { McpServerConnection } from "./server.js";
import { mcpTools } from "./tools.js";

export const MCP_QUEUE = "mcp";

export const definition: ActorDefinition = {
  name: "mcp",
  version: LURKBOT_VERSION,
  description: "MCP servers' tools, served as tools of the catalog",
  /** `$SRV.INFO` metadata: how many servers are configured and enabled (their state: lurk.mcp.status) */
  metadata(config) {
    const servers = Object.values(config.mcp.servers);
    return { mcpServers: String(servers.length), mcpServersEnabled: String(servers.filter((s) => s.enabled).length) };
  },
  async start(rt) {
    const log = rt.log;
    let servers: McpServerConnection[] = [];
    let timer: NodeJS.Timeout | undefined;
    const set = serveToolSet(rt, [], { queue: MCP_QUEUE, policy: layeredToolPolicy(rt.config) });
    // a server's tools changed: serve the new list at once, announce once per burst
    const changed = () => {
      set.set(mcpTools(rt, servers));
      clearTimeout(timer);
      timer = setTimeout(() => void set.announce(), 50);
    };
    const configured = Object.entries(rt.config.mcp.servers);
    // the SDK is loaded only when there is a server to talk to (an idle actor without servers stays small)
    if (configured.length) {
      const { McpServerConnection } = await import("./server.js");
      servers = configured.map(([name, config]) => new McpServerConnection(name, config, rt.config.mcp, log.child({ mcpServer: name }), changed));
    }
    rt.serve("mcp", "status", () => ({ host: hostname(), pid: process.pid, servers: servers.map((s) => s.status()) }), { queue: MCP_QUEUE });
    if (servers.length === 0) log.info("no MCP server is configured (mcp.servers): no MCP tools are served");
    for (const server of servers) server.start();
    return {
      stop: async () => {
        clearTimeout(timer);
        await Promise.all(servers.map((s) => s.stop()));
      },
    };
  },
};
