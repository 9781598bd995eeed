/**
 * An MCP tool's catalog entry: its catalog name (names.ts), its description (cut to the
 * contract's 4000 characters), its input schema passed through when it is an object schema of at
 * most `maxSchemaBytes` (a schema without `type` but with `properties` is taken as an object
 * schema; anything else is skipped with the reason, since tools/call arguments are an object),
 * `annotations.readOnlyHint: true` -> no side effects and parallel-safe, otherwise side effects
 * (the agent loop then stores the call before it runs and never repeats it on a resume).
 * Groups: `group:mcp`, `group:mcp_<server>` and the server's configured `groups`.
 */
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import type { ServedTool } from "../../shared/runtime/tool-serve.js";
import { normalizeGroup } from "../../shared/runtime/tool-policy.js";

export interface McpToolEntry {
  /** the catalog name */
  name: string;
  /** the server's own name of the tool */
  serverName: string;
  definition: ServedTool["definition"];
}

export interface DefinitionOptions {
  server: string;
  groups: readonly string[];
  maxSchemaBytes: number;
  needsApproval: boolean;
}

/** The entry, or the reason the tool is skipped. */
export function toolEntry(tool: McpTool, name: string, opts: DefinitionOptions): McpToolEntry | { skipped: string } {
  let schema = tool.inputSchema as Record<string, unknown> | undefined;
  if (!schema || typeof schema !== "object" || Array.isArray(schema)) return { skipped: "it has no input schema" };
  if (schema.type === undefined && (schema.properties === undefined || typeof schema.properties === "object")) schema = { ...schema, type: "object" };
  if (schema.type !== "object") return { skipped: `its input schema is not an object schema (type ${JSON.stringify(schema.type)}); tool arguments are an object` };
  const bytes = Buffer.byteLength(JSON.stringify(schema));
  if (bytes > opts.maxSchemaBytes) return { skipped: `its input schema has ${bytes} bytes, over mcp.maxSchemaBytes (${opts.maxSchemaBytes})` };
  const readOnly = tool.annotations?.readOnlyHint === true;
  const title = tool.title ?? tool.annotations?.title;
  const text = `${tool.description ?? title ?? `the ${tool.name} tool`} (MCP server "${opts.server}")`;
  const groups = [...new Set(["group:mcp", `group:mcp_${opts.server}`, ...opts.groups.map(normalizeGroup)])];
  return {
    name,
    serverName: tool.name,
    definition: {
      name,
      description: text.length > 4000 ? `${text.slice(0, 3990)} …` : text,
      parameters: schema,
      sideEffects: !readOnly,
      parallelSafe: readOnly,
      groups,
      needsApproval: opts.needsApproval,
    },
  };
}
