/**
 * The browser actor's configuration (`browser`, shared/runtime/config-browser.ts;
 * services/browser/README.md), decided by the rules the actor enforces, reused: its tool policy
 * (shared/runtime/tool-serve-policy.ts, as services/browser/policy.ts passes it), the Chromium
 * sandbox rule (shared/runtime/chromium-sandbox.ts) and who reaches which agent (reach.ts):
 *  - strangers (open DMs) who can drive the browser without a human approving each call: it
 *    is the owner's browser, with the owner's logins when the profile is persistent;
 *  - the egress rule relaxed: tools.web.allowPrivateHosts lets the browser (and any script of
 *    any page it opens) reach private and loopback addresses;
 *  - Chromium without its sandbox (browser.sandbox false, or the actor running as root);
 *  - uploads of workspace files to pages without a human approval (browser.uploads.requireApproval).
 * Nothing when browser.enabled is false. Not checks, because no setting can change them: group,
 * topic and thread sessions never get the browser (the policy's built-in group deny list), and
 * every browser_evaluate call needs an approval (its definition's needsApproval; configuration
 * can only add approvals). Files (the profile's mode, the binary): browser-files.ts.
 */
import type { SessionType } from "../../../shared/contract/index.js";
import { chromiumSandboxOn } from "../../../shared/runtime/chromium-sandbox.js";
import type { AgentConfig, LurkConfig } from "../../../shared/runtime/config.js";
import type { ServedTool } from "../../../shared/runtime/tool-serve.js";
import { servedApproval } from "../../../shared/runtime/tool-serve-explain.js";
import { layeredToolPolicy } from "../../../shared/runtime/tool-serve-policy.js";
import { configSetCommand, finding, type AuditContext, type AuditFinding } from "./finding.js";
import { exposures, GROUP_SESSION_TYPES } from "./reach.js";

/** the `browser` tool as its definition declares it (services/browser/tools.ts): what the policy reads */
const BROWSER: ServedTool["definition"] = {
  name: "browser", description: "", parameters: {}, sideEffects: true, parallelSafe: false, groups: ["group:ui", "group:browser"], needsApproval: false,
};
/** the session types of the owner's own and automated runs */
const OWN_SESSIONS: readonly SessionType[] = ["main", "dm", "cron", "subagent"];

/** Whether `agent` gets the browser tools in `sessionType` (the browser actor's own policy). */
export function browserAllowed(config: LurkConfig, agent: AgentConfig, sessionType: SessionType): boolean {
  if (!config.browser.enabled) return false;
  return layeredToolPolicy(config, { requires: ["browser"] }).explain(BROWSER, { agentId: agent.id, sessionType }).allowed;
}

/** Whether any agent may use the browser in any session (its settings matter then). */
export function browserUsed(config: LurkConfig): boolean {
  return config.agents.some((agent) => [...OWN_SESSIONS, ...GROUP_SESSION_TYPES].some((t) => browserAllowed(config, agent, t)));
}

export function browserChecks({ config }: AuditContext): AuditFinding[] {
  if (!config.browser.enabled) return [];
  const used = browserUsed(config);
  return [...strangerChecks(config), ...egressChecks(config, used), ...sandboxChecks(config, used), ...uploadChecks(config, used)];
}

function strangerChecks(config: LurkConfig): AuditFinding[] {
  const reach = exposures(config).filter((e) => e.open).flatMap((e) => e.agents.flatMap((agent) =>
    // a browser call that waits for a human (tools.requireApproval, the agent's) is the owner's decision
    servedApproval(config, agent.id, BROWSER) ? [] : e.sessionTypes.filter((t) => browserAllowed(config, agent, t)).map((sessionType) => ({ e, agent, sessionType }))));
  if (reach.length === 0) return [];
  const logins = config.browser.persistentProfile;
  const types = [...new Set(reach.map((r) => r.sessionType))];
  const denies = types.map((t) => `tools.bySessionType.${t}.deny ["group:browser"]`).join(", ");
  return [finding({
    id: "browser.reachable-by-strangers", level: logins ? "critical" : "warning",
    title: "strangers can drive the agent's browser",
    detail: `${reach.map((r) => `${r.e.channel} DMs → agent ${r.agent.id}, ${r.sessionType} session`).join("; ")}: anyone who can DM the bot can have the agent open pages, fill in forms and click in Chromium${logins ? ", which keeps your logins and cookies (browser.persistentProfile): your mail, accounts and intranet as you are signed in to them" : ""}, and read back what it shows.`,
    fix: `close the DMs (routing.dm.policy "pairing" or "allowlist"), or deny the browser there: ${denies}${types.includes("main") ? ' (strangers in the main session: first set routing.dmScope to "per-channel-peer", then deny it for dm sessions)' : ""}, or make every browser call ask you: tools.requireApproval ["group:browser"], or set browser.enabled to false`,
  })];
}

function egressChecks(config: LurkConfig, used: boolean): AuditFinding[] {
  const hosts = config.tools.web.allowPrivateHosts;
  if (hosts.length === 0) return [];
  // the egress proxy's reading of an entry (public-address.ts isAllowedPrivateHost): "host:port", else a host with every port
  const parsed = hosts.map((entry) => {
    const e = entry.trim().toLowerCase();
    const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(e);
    return { entry, host: (m ? m[1]! : e).replace(/^\[|\]$/g, ""), portless: m === null };
  });
  const loopback = parsed.filter((p) => /^(localhost|127\.[\d.]+|::1)$/.test(p.host)).map((p) => p.entry);
  const portless = parsed.filter((p) => p.portless).map((p) => p.entry);
  return [finding({
    id: "browser.egress.private-hosts", level: used ? "warning" : "info",
    title: "the browser may reach private addresses",
    detail: `tools.web.allowPrivateHosts (shared with web_fetch) lets the browser's egress proxy connect to ${hosts.join(", ")}${loopback.length ? ` — loopback: nats-server's ports and the channels' HTTP APIs on this host (${loopback.join(", ")})` : ""}${portless.length ? `; ${portless.join(", ")} without a port: every port` : ""}. Unlike web_fetch, not only the model's requests go there: any script of any page the browser opens can send requests to them (fetch, forms, redirects) from inside your network.${used ? "" : " No agent may use the browser now."}`,
    fix: "remove the entries the browser and web_fetch do not need from tools.web.allowPrivateHosts, and give each remaining one its port (\"10.0.0.5:8080\"); never list loopback",
  })];
}

function sandboxChecks(config: LurkConfig, used: boolean): AuditFinding[] {
  if (chromiumSandboxOn(config.browser.sandbox)) return [];
  const explicit = config.browser.sandbox === false;
  return [finding({
    id: "browser.sandbox-off", level: used ? "warning" : "info",
    title: "Chromium runs without its sandbox",
    detail: `${explicit ? "browser.sandbox is false" : "browser.sandbox is not set and this runs as root, so a browser actor started here (as root) turns Chromium's sandbox off (Chromium refuses it as root)"}: a bug in Chromium's renderer that any page the agent opens can reach runs code with the browser actor's user rights — LurkBot's home, credentials/nats.json with every actor's password, the workspace — instead of in Chromium's sandbox.${used ? "" : " No agent may use the browser now."}`,
    fix: explicit
      ? "remove browser.sandbox from config.json (or set it to true) and restart the browser actor; if Chromium then cannot start its sandbox, allow unprivileged user namespaces (Ubuntu 24.04+: an AppArmor profile for chromium, or sysctl kernel.apparmor_restrict_unprivileged_userns=0)"
      : "run LurkBot as an unprivileged user (the systemd units of `lurkbot setup --systemd DIR` set User=), not as root",
  })];
}

function uploadChecks(config: LurkConfig, used: boolean): AuditFinding[] {
  const uploads = config.browser.uploads;
  if (!uploads.enabled || uploads.requireApproval) return [];
  return [finding({
    id: "browser.uploads.without-approval", level: used ? "warning" : "info",
    title: "the browser uploads workspace files to pages without asking",
    detail: `browser.uploads.requireApproval is false: the model can set any workspace file (MEMORY.md, notes, what users sent) on any page's file input, and a page or message it reads can ask it to, with no human asked first.${used ? "" : " No agent may use the browser now."}`,
    fix: "set browser.uploads.requireApproval to true (every upload then waits for `lurkbot approvals approve ID` or /approve), or browser.uploads.enabled to false",
    fixCommand: configSetCommand("browser.uploads.requireApproval", true),
  })];
}
