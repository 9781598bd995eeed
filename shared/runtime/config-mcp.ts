/**
 * The `mcp` key of the configuration: MCP (Model Context Protocol) servers whose tools the `mcp`
 * actor (services/mcp/) serves on the bus like any tool actor. The shape of Claude Desktop's and
 * nanobot's `mcpServers`, one entry per server name:
 *   "mcp": { "servers": {
 *     "files": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"] },
 *     "github": { "url": "https://api.githubcopilot.com/mcp/", "headers": { "Authorization": "Bearer ${LURKBOT_MCP_GITHUB_TOKEN}" } }
 *   } }
 * A server is stdio (`command`, `args`, `env`, `cwd`: a child process of the actor) or remote
 * (`url`, `headers`: streamable HTTP, falling back to the older SSE transport).
 * Secrets: a value of `env` or `headers` may name environment variables as `${NAME}`; the actor
 * fills them in from its own environment, where the launcher puts every `LURKBOT_MCP_*` variable
 * (and `lurkbot config set-secret LURKBOT_MCP_…` stores one). Every value of `env` and `headers`,
 * literal or filled in, is redacted in logs.
 * Tool names: `mcp_<toolPrefix>_<tool>` (toolPrefix defaults to the server's name), characters outside
 * `[A-Za-z0-9_-]` replaced by `_`, cut to 64 characters (the catalog's rule) with a short hash
 * keeping cut names apart.
 */
import { z } from "zod";

export const MCP_DEFAULTS = {
  enabled: true,
  /** the most one tools/call may take (a run's own tool timeout may be shorter) */
  timeoutMs: 60_000,
  /** the most connecting and tools/list may take */
  connectTimeoutMs: 30_000,
  /** reconnect delays after a failure: doubling from min to max */
  reconnectMinMs: 500,
  reconnectMaxMs: 30_000,
  /** bytes of one tool's JSON Schema at most; a larger one is skipped with a warning */
  maxSchemaBytes: 64 * 1024,
  /** tools of one server at most (the rest are skipped with a warning) */
  maxTools: 200,
};

/** A server name: also a token of tool names and log fields. */
export const mcpServerNameSchema = z.string().regex(/^[A-Za-z0-9_-]{1,40}$/, "an MCP server name: letters, digits, '_' or '-', at most 40 characters");

const stringMap = z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_.-]{0,127}$/, "a variable or header name"), z.string().max(8192)).default({});

const commonShape = {
  /** false: configured but not connected */
  enabled: z.boolean().default(MCP_DEFAULTS.enabled),
  /** the most one call may take (ms); the call's own timeout wins when shorter */
  timeoutMs: z.number().int().min(100).max(3600_000).optional(),
  /** tool names are `mcp_<toolPrefix>_<tool>`; default the server's name (every MCP tool name starts `mcp_`: the mcp actor may answer only those calls) */
  toolPrefix: z.string().regex(/^[A-Za-z0-9_-]{1,40}$/, "a tool name prefix: letters, digits, '_' or '-'").optional(),
  /** only these of the server's tools (its own names; `*` globs) */
  allowTools: z.array(z.string().min(1).max(200)).max(500).optional(),
  /** never these of the server's tools (its own names; `*` globs); wins over allowTools */
  denyTools: z.array(z.string().min(1).max(200)).max(500).default([]),
  /** "always": every call of this server's tools waits for a human approval; "never" (or absent): only what tools.requireApproval / agents[].requireApproval say */
  approval: z.enum(["always", "never"]).optional(),
  /** groups the server's tools declare besides `group:mcp` and `group:mcp_<server>` (e.g. "group:web" puts them where a profile or rule names that group) */
  groups: z.array(z.string().regex(/^(group:)?[A-Za-z0-9_-]{1,60}$/)).max(20).default([]),
};

export const mcpStdioServerSchema = z.object({
  ...commonShape,
  /** optional, as other clients' configs write it */
  type: z.literal("stdio").optional(),
  /** the program (PATH is searched); it runs as the actor's user, with the actor's rights */
  command: z.string().min(1).max(4096),
  args: z.array(z.string().max(8192)).max(200).default([]),
  /** the child's environment besides PATH, HOME, LANG (and the SDK's LOGNAME, SHELL, TERM, USER); `${NAME}` is filled in */
  env: stringMap,
  /** the child's working directory (default: the actor's) */
  cwd: z.string().min(1).max(4096).optional(),
}).strict();

export const mcpRemoteServerSchema = z.object({
  ...commonShape,
  /** optional: "sse" connects with the SSE transport at once; "http"/"streamable-http" (or absent) tries streamable HTTP first */
  type: z.enum(["http", "streamable-http", "sse"]).optional(),
  /** http(s) URL of a streamable HTTP (or SSE) MCP endpoint */
  url: z.url({ protocol: /^https?$/ }),
  /** sent with every request; `${NAME}` is filled in */
  headers: stringMap,
}).strict();

export const mcpServerSchema = z.union([mcpStdioServerSchema, mcpRemoteServerSchema]);
export type McpServerConfig = z.infer<typeof mcpServerSchema>;
export type McpStdioServerConfig = z.infer<typeof mcpStdioServerSchema>;

export const mcpConfigSchema = z.object({
  /** the servers by name */
  servers: z.record(mcpServerNameSchema, mcpServerSchema).default({}),
  /** default per-call limit (ms) for servers without their own timeoutMs */
  timeoutMs: z.number().int().min(100).max(3600_000).default(MCP_DEFAULTS.timeoutMs),
  connectTimeoutMs: z.number().int().min(100).max(600_000).default(MCP_DEFAULTS.connectTimeoutMs),
  reconnectMinMs: z.number().int().min(10).max(600_000).default(MCP_DEFAULTS.reconnectMinMs),
  reconnectMaxMs: z.number().int().min(10).max(3600_000).default(MCP_DEFAULTS.reconnectMaxMs),
  maxSchemaBytes: z.number().int().min(256).max(1024 * 1024).default(MCP_DEFAULTS.maxSchemaBytes),
  maxToolsPerServer: z.number().int().min(1).max(2000).default(MCP_DEFAULTS.maxTools),
}).prefault({});
export type McpConfig = z.infer<typeof mcpConfigSchema>;

export const isStdioServer = (s: McpServerConfig): s is McpStdioServerConfig => "command" in s;

/** Whether any server is enabled: only then does `lurkbot start` run the mcp actor (services/cli/actors.ts) and the actor load the MCP SDK. */
export const anyMcpServerEnabled = (config: McpConfig): boolean => Object.values(config.servers).some((s) => s.enabled);

/** The transport a server is reached over as configured (a remote one may fall back to SSE once connected). */
export const mcpTransportOf = (s: McpServerConfig): "stdio" | "streamable-http" | "sse" => (isStdioServer(s) ? "stdio" : s.type === "sse" ? "sse" : "streamable-http");

/** The literal values of the servers' env and headers (redacted in logs; `${NAME}` references are not secrets themselves). */
export function mcpSecrets(config: McpConfig): string[] {
  return Object.values(config.servers).flatMap((s) => Object.values(isStdioServer(s) ? s.env : s.headers)).filter((v) => !/^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(v));
}
