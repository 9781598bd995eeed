/**
 * `lurkbot heartbeat [status|last|run|enable|disable] [--agent ID] [--json]`: the heartbeat
 * actor's state over `lurk.heartbeat.<op>` as the `cli` user. Without --agent, status, enable
 * and disable cover every agent; last and run the default agent.
 */
import type { z } from "zod";
import { agentIdSchema, type HeartbeatEvent, type heartbeatAgentStatusSchema } from "../../shared/contract/index.js";
import { loadConfig, type Env } from "../../shared/runtime/config.js";
import { resolveHeartbeatConfig } from "../../shared/runtime/config-heartbeat.js";
import type { ParsedCommand } from "./args.js";
import { withCliBus } from "./bus.js";
import { EXIT, UsageError } from "./errors.js";
import { oneLine, table } from "./format.js";

type AgentStatus = z.infer<typeof heartbeatAgentStatusSchema>;

export interface HeartbeatIo {
  out(line: string): void;
}

const SUBCOMMANDS = ["status", "last", "run", "enable", "disable"] as const;
type Sub = (typeof SUBCOMMANDS)[number];

export function checkHeartbeatArgs(p: ParsedCommand): { sub: Sub; agentId?: string } {
  const [sub = "status", extra] = p.args;
  if (!(SUBCOMMANDS as readonly string[]).includes(sub)) {
    throw new UsageError(`unknown subcommand "${sub}": lurkbot heartbeat ${SUBCOMMANDS.join("|")}.`, "heartbeat");
  }
  if (extra !== undefined) throw new UsageError(`\`lurkbot heartbeat ${sub}\` takes no argument; unexpected "${extra}" (use --agent ID for an agent).`, "heartbeat");
  const agent = p.options.agent;
  if (agent !== undefined && !agentIdSchema.safeParse(agent).success) {
    throw new UsageError(`--agent must be an agent id (lower-case letters, digits, '-' or '_'), not "${String(agent)}".`, "heartbeat");
  }
  return { sub: sub as Sub, ...(typeof agent === "string" ? { agentId: agent } : {}) };
}

export async function cmdHeartbeat(p: ParsedCommand, env: Env, io: HeartbeatIo): Promise<number> {
  const { sub, agentId } = checkHeartbeatArgs(p);
  const cfg = loadConfig(env);
  return withCliBus(cfg, env, async (bus) => {
    const body = agentId ? { agentId } : {};
    if (sub === "last" || sub === "run") {
      // a run waits for the heartbeat's LLM run: allow its whole time limit
      const timeoutMs = sub === "run" ? resolveHeartbeatConfig(cfg.heartbeat, agentId ?? "main").runTimeoutMs + 15_000 : undefined;
      const { event } = await bus.call("heartbeat", sub, body, timeoutMs ? { timeoutMs } : {});
      if (p.options.json) io.out(JSON.stringify(event, null, 2));
      else io.out(event ? formatEvent(event) : "no heartbeat yet");
      return EXIT.ok;
    }
    const { agents } = await bus.call("heartbeat", sub, body);
    if (p.options.json) io.out(JSON.stringify(agents, null, 2));
    else io.out(formatStatus(agents).trimEnd());
    return EXIT.ok;
  });
}

const time = (ts: number) => new Date(ts).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
const every = (ms: number) => (ms % 60_000 === 0 ? `${ms / 60_000}m` : `${Math.round(ms / 1000)}s`);

export function formatEvent(e: HeartbeatEvent): string {
  const parts = [`${time(e.ts)} ${e.agentId}: ${e.status}`];
  if (e.reason) parts.push(`(${e.reason})`);
  if (e.channel && e.to) parts.push(`to ${e.channel}/${e.to}`);
  if (e.durationMs !== undefined) parts.push(`in ${e.durationMs} ms`);
  if (e.usage) parts.push(`${e.usage.total || e.usage.input + e.usage.output} tokens`);
  if (e.preview) parts.push(`: ${oneLine(e.preview, 80)}`);
  return parts.join(" ");
}

export function formatStatus(agents: AgentStatus[]): string {
  if (agents.length === 0) return "no agents\n";
  const rows = agents.map((a) => [
    a.agentId, a.enabled ? "on" : "off", every(a.everyMs), a.nextDueAt !== undefined ? time(a.nextDueAt) : "-",
    String(a.tokensSpent), a.last ? `${a.last.status}${a.last.reason ? ` (${a.last.reason})` : ""} ${time(a.last.ts)}` : "-",
  ]);
  return table(["AGENT", "ENABLED", "EVERY", "NEXT", "TOKENS", "LAST"], rows);
}
