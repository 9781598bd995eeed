/**
 * `lurkbot mcp list [--tools] [--json]`: the mcp actor's MCP servers over `lurk.mcp.status` as
 * the `cli` user: each server's transport, state, tool count, connections and last error (with
 * `--tools` also each tool's catalog name and the server's own name). No mcp actor answering is
 * exit 1 with what to do. Never shows a secret (the reply holds none).
 */
import type { McpStatusReply } from "../../shared/contract/index.js";
import { loadConfig, type Env } from "../../shared/runtime/config.js";
import type { ParsedCommand } from "./args.js";
import { withCliBus } from "./bus.js";
import { EXIT, UsageError } from "./errors.js";
import { oneLine, table } from "./format.js";

export interface McpIo {
  out(line: string): void;
}

export async function cmdMcp(p: ParsedCommand, env: Env, io: McpIo): Promise<number> {
  const [sub = "list", extra] = p.args;
  if (sub !== "list") throw new UsageError(`unknown subcommand "${sub}": lurkbot mcp list.`, "mcp");
  if (extra !== undefined) throw new UsageError(`\`lurkbot mcp list\` takes no argument; unexpected "${extra}".`, "mcp");
  const cfg = loadConfig(env);
  return withCliBus(cfg, env, async (bus) => {
    const reply = await bus.call("mcp", "status", {});
    if (p.options.json) io.out(JSON.stringify(reply, null, 2));
    else io.out(formatMcpStatus(reply, p.options.tools === true).trimEnd());
    return EXIT.ok;
  });
}

export function formatMcpStatus(reply: McpStatusReply, tools: boolean): string {
  if (reply.servers.length === 0) return `no MCP server is configured (mcp.servers in config.json; mcp actor on ${reply.host} pid ${reply.pid})\n`;
  const rows = reply.servers.map((s) => [s.name, s.transport, s.state, String(s.tools.length), String(s.skipped), String(s.connects), s.lastError ? oneLine(s.lastError, 80) : ""]);
  let text = table(["SERVER", "TRANSPORT", "STATE", "TOOLS", "SKIPPED", "CONNECTS", "LAST ERROR"], rows, [3, 4, 5]);
  if (tools) {
    for (const s of reply.servers.filter((x) => x.tools.length)) {
      text += `\n${s.name}${s.serverInfo ? ` (${s.serverInfo.name} ${s.serverInfo.version})` : ""}:\n`;
      text += table(["TOOL", "SERVER'S NAME", "SIDE EFFECTS"], s.tools.map((t) => [t.name, t.serverName, t.sideEffects ? "yes" : "no"]));
    }
  }
  return text;
}
