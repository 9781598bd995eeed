/**
 * The mcp actor: the tools of MCP (Model Context Protocol) servers, served on the bus like any
 * tool actor's (shared/runtime/tool-serve.ts serveToolSet, queue group "mcp"): in the catalog
 * as `mcp_<server>_<tool>` (names.ts), under the built-in layered tool policy (profiles,
 * allow/deny, groups: `group:mcp`, `group:mcp_<server>`), approvals, cancellation and
 * `lurk.tools.catalog` announcements whenever a server's tools change. One connection per
 * configured server (server.ts; config-mcp.ts `mcp.servers`), connected at start and again after
 * a failure. `lurk.mcp.status` lists the servers (`lurkbot mcp list`).
 * With no server enabled the actor serves no tool and never loads the MCP SDK (`lurkbot start`
 * runs it only when one is; `--only mcp` runs it anyway).
 */
import { hostname } from "node:os";
import type { McpServerStatus } from "../../shared/contract/index.js";
import type { ActorDefinition } from "../../shared/runtime/actor.js";
import { anyMcpServerEnabled, mcpTransportOf } from "../../shared/runtime/config-mcp.js";
import { serveToolSet } from "../../shared/runtime/tool-serve.js";
import { layeredToolPolicy } from "../../shared/runtime/tool-serve-policy.js";
import { LURKBOT_VERSION } from "../../shared/runtime/version.js";
import type { McpServerConnection } from "./server.js";
import { mcpTools } from "./tools.js";

export const MCP_QUEUE = "mcp";

/** distinct tool names served (each keeps its call endpoint) at most while the actor runs */
const MAX_CALL_ENDPOINTS = 5_000;

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
    // call endpoints are never dropped (tool-serve.ts): a server renaming its tools on every list_changed must not grow them without end
    const endpoints = new Set<string>();
    let capWarned = false;
    // a server's tools changed: serve the new list at once, announce once per burst
    const changed = () => {
      const tools = mcpTools(rt, servers).filter(({ definition: { name } }) => {
        if (endpoints.has(name)) return true;
        if (endpoints.size >= MAX_CALL_ENDPOINTS) {
          if (!capWarned) log.warn({ tool: name, max: MAX_CALL_ENDPOINTS }, "MCP servers have named too many different tools since the actor started: new names are not served until it restarts");
          capWarned = true;
          return false;
        }
        endpoints.add(name);
        return true;
      });
      set.set(tools);
      clearTimeout(timer);
      timer = setTimeout(() => void set.announce(), 50);
    };
    const configured = Object.entries(rt.config.mcp.servers);
    // the SDK (and its dependencies) is loaded only when there is a server to connect to: an actor without one stays small
    if (anyMcpServerEnabled(rt.config.mcp)) {
      const { McpServerConnection } = await import("./server.js");
      servers = configured.map(([name, config]) => new McpServerConnection(name, config, rt.config.mcp, log.child({ mcpServer: name }), changed));
    }
    const statuses = (): McpServerStatus[] => servers.length
      ? servers.map((s) => s.status())
      : configured.map(([name, config]) => ({ name, transport: mcpTransportOf(config), state: "disabled", tools: [], skipped: 0, connects: 0 }));
    rt.serve("mcp", "status", () => ({ host: hostname(), pid: process.pid, servers: statuses() }), { queue: MCP_QUEUE });
    if (servers.length === 0) log.info("no MCP server is enabled (mcp.servers): no MCP tools are served");
    for (const server of servers) server.start();
    return {
      stop: async () => {
        clearTimeout(timer);
        await Promise.all(servers.map((s) => s.stop()));
      },
    };
  },
};
