/**
 * Tools and approvals, decided by the tools actor's own policy and approval rules
 * (shared/runtime/tool-policy-config.ts, tool-policy.ts, tool-approval-explain.ts: pure functions, reused so
 * the audit cannot disagree with what the actor enforces):
 *  - exec/process that strangers (open DMs, open groups) can call without a human approval;
 *  - tools that let strangers read private data or act in other sessions (read, memory,
 *    sessions_*);
 *  - the exec sandbox: bubblewrap probed on this host (shared/runtime/sandbox.ts bwrapWorks)
 *    against tools.exec.allowUnsandboxed;
 *  - web_fetch allowed to reach private addresses (tools.web.allowPrivateHosts);
 *  - exec running without any approval in the owner's own sessions (info).
 * Groups never get exec, process or the file-writing tools: the policy's built-in group deny
 * list cannot be configured away, so there is no "exec in groups" setting to check.
 */
import type { SessionType } from "../../../shared/contract/index.js";
import type { AgentConfig, LurkConfig } from "../../../shared/runtime/config.js";
import { bwrapWorks } from "../../../shared/runtime/sandbox.js";
import { approvalExplanation } from "../../../shared/runtime/tool-approval-explain.js";
import { decideTool, type PolicyTool } from "../../../shared/runtime/tool-policy.js";
import { policyContext } from "../../../shared/runtime/tool-policy-config.js";
import { configSetCommand, finding, type AuditContext, type AuditFinding } from "./finding.js";
import { exposures } from "./reach.js";

/** The built-in tools the checks ask about, with the names and groups their definitions declare (services/tools/tools/*.ts). */
const TOOL: Record<string, PolicyTool> = {
  exec: { name: "exec", aliases: ["bash"], groups: ["group:runtime"] },
  process: { name: "process", groups: ["group:runtime"] },
  read: { name: "read", groups: ["fs", "read-only"] },
  memory_search: { name: "memory_search", groups: ["group:memory"] },
  memory_get: { name: "memory_get", groups: ["group:memory"] },
  sessions_list: { name: "sessions_list", groups: ["group:sessions"] },
  sessions_history: { name: "sessions_history", groups: ["group:sessions"] },
  sessions_send: { name: "sessions_send", groups: ["group:sessions"] },
  web_fetch: { name: "web_fetch", groups: ["group:web"] },
};
const RUN_TOOLS = ["exec", "process"];
const PRIVATE_DATA_TOOLS = ["read", "memory_search", "memory_get", "sessions_list", "sessions_history", "sessions_send"];
/** the session types of the owner's own and automated runs */
const OWN_SESSIONS: readonly SessionType[] = ["main", "dm", "cron", "subagent"];

export function allowed(config: LurkConfig, agent: AgentConfig, sessionType: SessionType, tool: string): boolean {
  return decideTool(TOOL[tool]!, policyContext(config, agent, { sessionType })).allowed;
}

/** "never" when no rule asks a human for its calls (tool-approval-explain.ts), else "all" or "some" calls. */
function approval(config: LurkConfig, agent: AgentConfig, tool: string): "never" | "all" | "some" {
  return approvalExplanation(config, agent.id, TOOL[tool]!)?.calls ?? "never";
}

/** Tools of `names` an agent may call in a session type, each "tool" or "tool (agent)". */
interface Reach {
  agent: AgentConfig;
  sessionType: SessionType;
  tools: string[];
}

function reachable(config: LurkConfig, agents: readonly AgentConfig[], sessionTypes: readonly SessionType[], names: readonly string[], keep: (agent: AgentConfig, tool: string) => boolean = () => true): Reach[] {
  const out: Reach[] = [];
  for (const agent of agents) {
    for (const sessionType of sessionTypes) {
      const tools = names.filter((t) => allowed(config, agent, sessionType, t) && keep(agent, t));
      if (tools.length) out.push({ agent, sessionType, tools });
    }
  }
  return out;
}

export async function toolChecks({ config }: AuditContext): Promise<AuditFinding[]> {
  const out: AuditFinding[] = [];
  const open = exposures(config).filter((e) => e.open);

  const runs = open.flatMap((e) => reachable(config, e.agents, e.sessionTypes, RUN_TOOLS, (a, t) => approval(config, a, t) === "never").map((r) => ({ e, r })));
  const strangersRun = runs.map(({ e, r }) => `${e.channel} ${e.kind === "dm" ? "DMs" : "groups"} → agent ${r.agent.id}, ${r.sessionType} session: ${r.tools.join(", ")}`);
  if (strangersRun.length) {
    const types = [...new Set(runs.map(({ r }) => r.sessionType))];
    out.push(finding({
      id: "tools.exec.open-dm-without-approval", level: "critical",
      title: "strangers can make the agent run shell commands without your approval",
      detail: `${strangersRun.join("; ")}. Anyone who can DM the bot can talk it into running commands (in the exec sandbox at best: the workspace, its files and MEMORY.md are theirs), and no human is asked first.`,
      fix: `close the DMs (routing.dm.policy \"pairing\" or \"allowlist\"), or make every exec ask: tools.exec.ask \"always\" (or tools.requireApproval [\"group:runtime\"]), or deny it there: ${types.map((t) => `tools.bySessionType.${t}.deny [\"group:runtime\"]`).join(", ")}`,
    }));
  }

  const strangersRead = open.flatMap((e) => {
    const reach = reachable(config, e.agents, e.sessionTypes, PRIVATE_DATA_TOOLS);
    // one line per (channel, kind, agent): the union of its session types' tools
    return e.agents.flatMap((agent) => {
      const mine = reach.filter((r) => r.agent === agent);
      const tools = PRIVATE_DATA_TOOLS.filter((t) => mine.some((r) => r.tools.includes(t)));
      return tools.length ? [{ line: `${e.channel} ${e.kind === "dm" ? "DMs" : "groups"} → agent ${agent.id} (${mine.map((r) => r.sessionType).join(", ")} sessions): ${tools.join(", ")}`, types: mine.map((r) => r.sessionType) }] : [];
    });
  });
  if (strangersRead.length) {
    const types = [...new Set(strangersRead.flatMap((x) => x.types))];
    out.push(finding({
      id: "tools.untrusted-private-data", level: "warning",
      title: "strangers can reach your other sessions and files through tools",
      detail: `${strangersRead.map((x) => x.line).join("; ")}. A message there can have the model read the workspace (MEMORY.md included), search memory, read other sessions' transcripts, or send messages into them (where tools such as exec may run).`,
      fix: `deny them where strangers are: ${types.map((t) => `tools.bySessionType.${t}.deny ["read", "group:memory", "group:sessions"]`).join(", ")} (or close the open DMs and groups)`,
    }));
  }

  out.push(...await sandboxChecks(config));
  out.push(...webChecks(config));

  const unasked = reachable(config, config.agents, ["main"], ["exec"], (a) => approval(config, a, "exec") === "never");
  if (unasked.length) {
    out.push(finding({
      id: "approvals.exec-without-approval", level: "info",
      title: "exec runs without asking anyone",
      detail: `${unasked.length === 1 ? "The agent" : "The agents"} ${unasked.map((r) => r.agent.id).join(", ")} ${unasked.length === 1 ? "runs" : "run"} shell commands in ${unasked.length === 1 ? "its main session" : "their main sessions"} without a human approval (tools.exec.ask is "${config.tools.exec.ask}"${config.tools.requireApproval.length ? ", and tools.requireApproval does not name exec" : ""}); text the model reads (a fetched page, a file, a forwarded message) can steer which commands.`,
      fix: "set tools.exec.ask to \"on-miss\" (commands outside tools.exec.allowlist wait for `lurkbot approvals approve ID` or /approve) or \"always\"",
      fixCommand: configSetCommand("tools.exec.ask", "on-miss"),
    }));
  }
  return out;
}

/** Whether any agent may call exec or process in its own sessions (the sandbox matters then). */
export function execEnabled(config: LurkConfig): boolean {
  return reachable(config, config.agents, OWN_SESSIONS, RUN_TOOLS).length > 0;
}

async function sandboxChecks(config: LurkConfig): Promise<AuditFinding[]> {
  const exec = config.tools.exec;
  const execUsed = execEnabled(config);
  const works = await bwrapWorks(exec.bwrapPath);
  if (!works && exec.allowUnsandboxed) {
    return [finding({
      id: "tools.exec.unsandboxed", level: execUsed ? "critical" : "info",
      title: "exec runs commands without a sandbox on this host",
      detail: `bubblewrap at ${exec.bwrapPath} does not work here and tools.exec.allowUnsandboxed is set, so a tools actor on this host runs commands as plain children: they read and write whatever this user can (credentials/nats.json, config.json, the data directory) and reach the network.${execUsed ? "" : " No agent may call exec or process now, so this matters once one may."}`,
      fix: "install bubblewrap (`sudo apt-get install bubblewrap`) or point tools.exec.bwrapPath at it, and set tools.exec.allowUnsandboxed to false; then restart the tools actor",
    })];
  }
  if (works && exec.allowUnsandboxed) {
    return [finding({
      id: "tools.exec.unsandboxed-fallback", level: execUsed ? "warning" : "info",
      title: "exec falls back to no sandbox if bubblewrap stops working",
      detail: `bubblewrap works here, but tools.exec.allowUnsandboxed is set: on a host (or after an update) where it does not, commands run with this user's full rights instead of being refused. \`lurkbot status\` shows each tools actor's mode.`,
      fix: "set tools.exec.allowUnsandboxed to false",
      fixCommand: configSetCommand("tools.exec.allowUnsandboxed", false),
    })];
  }
  if (!works && execUsed) {
    return [finding({
      id: "tools.exec.sandbox-unavailable", level: "info",
      title: "exec is refused on this host: no working bubblewrap",
      detail: `bubblewrap at ${exec.bwrapPath} is missing or cannot create its namespaces, so a tools actor here answers exec and process with SANDBOX_UNAVAILABLE (safe, but the tools do not work).`,
      fix: "install bubblewrap (`sudo apt-get install bubblewrap`; on Ubuntu 24.04+ also allow unprivileged user namespaces) or set tools.exec.bwrapPath",
    })];
  }
  return [];
}

function webChecks(config: LurkConfig): AuditFinding[] {
  const hosts = config.tools.web.allowPrivateHosts;
  if (hosts.length === 0) return [];
  const used = reachable(config, config.agents, [...OWN_SESSIONS, "group", "topic", "thread"], ["web_fetch"]).length > 0;
  // an entry without a port opens every port of that host
  const loopback = hosts.filter((h) => /^(localhost|127\.[\d.]+|\[::1\]|::1)$/i.test(h));
  return [finding({
    id: "tools.web.private-hosts", level: used ? "warning" : "info",
    title: "web_fetch may reach private addresses",
    detail: `tools.web.allowPrivateHosts lets web_fetch reach ${hosts.join(", ")}${loopback.length ? " — on this host that includes nats-server's port and the channels' HTTP APIs" : ""}: a page or message the model reads can make it request internal services and read their answers.${used ? "" : " No agent may call web_fetch now."}`,
    fix: "remove the entries you do not need from tools.web.allowPrivateHosts, and give each remaining one its port (\"10.0.0.5:8080\")",
  })];
}
