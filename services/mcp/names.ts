/**
 * Tool names of MCP tools in the catalog: `mcp_<prefix>_<tool>` (prefix: the server's
 * `toolPrefix`, default its name), every character outside `[A-Za-z0-9_-]` replaced by `_`, at most 64
 * characters (the contract's tool name rule, which providers require). A name that had to be cut
 * ends with `_` and 6 hex characters of a hash of the full name, so two long names that share a
 * beginning stay apart. allowTools/denyTools match the server's own tool names (`*` globs).
 * Every name starts with `mcp_`: the contract puts those calls under `lurk.tools.call.mcp.<name>`
 * (subjects.ts toolCall), the only tool calls the mcp actor's NATS user may answer, so it can
 * never answer (impersonate) a built-in tool.
 */
import { createHash } from "node:crypto";
import { MCP_TOOL_PREFIX } from "../../shared/contract/index.js";
import { glob } from "../../shared/runtime/config-tools-approval.js";

export const MAX_TOOL_NAME = 64;

const sanitize = (s: string) => s.replace(/[^A-Za-z0-9_-]/g, "_");

/** `mcp_<toolPrefix or server>`: a configured toolPrefix replaces the server's name, never the `mcp_`. */
export function toolPrefix(server: string, configured?: string): string {
  return `${MCP_TOOL_PREFIX}${sanitize(configured ?? server)}`;
}

/** The catalog name of `tool` of a server with this prefix. */
export function catalogToolName(prefix: string, tool: string): string {
  const full = `${prefix}_${sanitize(tool)}`;
  if (full.length <= MAX_TOOL_NAME) return full;
  const hash = createHash("sha256").update(`${prefix}\0${tool}`).digest("hex").slice(0, 6);
  return `${full.slice(0, MAX_TOOL_NAME - 7)}_${hash}`;
}

/** null: the server's tool is served; otherwise why not (allowTools/denyTools). */
export function filteredOut(tool: string, allow: readonly string[] | undefined, deny: readonly string[]): string | null {
  const hit = deny.find((p) => glob(p, tool));
  if (hit !== undefined) return `denyTools "${hit}"`;
  if (allow && !allow.some((p) => glob(p, tool))) return "not in allowTools";
  return null;
}
