/**
 * `lurkbot subagents list [--session KEY] | stop <runId|--all --session KEY>`: the subagents
 * actor's children over `lurk.subagents.list|stop` as the `cli` user.
 */
import type { SubagentRecord } from "../../shared/contract/index.js";
import { loadConfig, type Env } from "../../shared/runtime/config.js";
import type { ParsedCommand } from "./args.js";
import { withCliBus } from "./bus.js";
import { EXIT, UsageError } from "./errors.js";
import { oneLine, table } from "./format.js";

export interface SubagentsIo {
  out(line: string): void;
}

type Checked = { sub: "list"; session?: string } | { sub: "stop"; runId?: string; session?: string; all: boolean };

export function checkSubagentsArgs(p: ParsedCommand): Checked {
  const [sub, target, extra] = p.args;
  const session = typeof p.options.session === "string" ? p.options.session : undefined;
  const all = p.options.all === true;
  if (sub === "list") {
    if (target !== undefined) throw new UsageError(`\`lurkbot subagents list\` takes no argument; unexpected "${target}" (filter with --session KEY).`, "subagents");
    if (all) throw new UsageError("--all applies to `lurkbot subagents stop` only.", "subagents");
    return { sub, ...(session ? { session } : {}) };
  }
  if (sub === "stop") {
    if (extra !== undefined) throw new UsageError(`\`lurkbot subagents stop\` takes one run id; unexpected "${extra}".`, "subagents");
    if (all && target !== undefined) throw new UsageError("give either a run id or --all --session KEY, not both.", "subagents");
    if (all && !session) throw new UsageError("--all needs --session KEY: the session whose subagents to stop (see `lurkbot subagents list`).", "subagents");
    if (!all && target === undefined) throw new UsageError("`lurkbot subagents stop` needs a run id, or --all --session KEY (see `lurkbot subagents list`).", "subagents");
    return { sub, ...(target !== undefined ? { runId: target } : {}), ...(session ? { session } : {}), all };
  }
  throw new UsageError(`${sub ? `unknown subcommand "${sub}"` : "a subcommand is needed"}: lurkbot subagents list|stop.`, "subagents");
}

export async function cmdSubagents(p: ParsedCommand, env: Env, io: SubagentsIo): Promise<number> {
  const args = checkSubagentsArgs(p);
  const cfg = loadConfig(env);
  return withCliBus(cfg, env, async (bus) => {
    if (args.sub === "list") {
      const { children } = await bus.call("subagents", "list", args.session ? { requesterSessionKey: args.session } : {});
      io.out(p.options.json ? JSON.stringify(children, null, 2) : formatSubagentList(children).trimEnd());
      return EXIT.ok;
    }
    const { stopped } = await bus.call("subagents", "stop", {
      ...(args.runId ? { runId: args.runId } : {}),
      ...(args.session ? { requesterSessionKey: args.session } : {}),
      all: args.all,
    });
    io.out(p.options.json ? JSON.stringify({ stopped }) : `stopped ${stopped} subagent${stopped === 1 ? "" : "s"}`);
    return EXIT.ok;
  });
}

export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

export function formatSubagentList(children: SubagentRecord[], now = Date.now()): string {
  if (children.length === 0) return "no subagents\n";
  const rows = children.map((c) => [
    c.runId,
    c.status === "done" ? `done (${c.outcome ?? "unknown"})` : c.status,
    c.label ?? "-",
    formatDuration((c.endedAt ?? now) - c.startedAt),
    c.requesterSessionKey,
    oneLine(c.task, 50),
  ]);
  return table(["RUN", "STATUS", "LABEL", "DURATION", "REQUESTER", "TASK"], rows);
}
