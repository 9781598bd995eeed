/**
 * Tool names of MCP tools in the catalog: `<prefix>_<tool>` (prefix: the server's `toolPrefix`,
 * default `mcp_<server>`), every character outside `[A-Za-z0-9_-]` replaced by `_`, at most 64
 * characters (the contract's tool name rule, which providers require). A name that had to be cut
 * ends with `_` and 6 hex characters of a hash of the full name, so two long names that share a
 * beginning stay apart. allowTools/denyTools match the server's own tool names (`*` globs).
 */
import { createHash } from "node:crypto";
import { glob } from "../../shared/runtime/config-tools-approval.js";

export const MAX_TOOL_NAME = 64;

const sanitize = (s: string) => s.replace(/[^A-Za-z0-9_-]/g, "_");

export function toolPrefix(server: string, configured?: string): string {
  return sanitize(configured ?? `mcp_${server}`);
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
