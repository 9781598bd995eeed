/**
 * Chat access, from `routing` (shared/runtime/config-routing.ts) and the enabled channels:
 *  - open DMs on a platform channel (anyone who finds the bot talks to the agent);
 *  - several senders in the one main session (routing.dmScope "main"): they read each other's
 *    history and the owner's MEMORY.md; critical when strangers are among them (seed §9);
 *  - groups the bot answers anywhere (policy "open") or on every message (no requireMention);
 *  - owners: "*" makes everyone an owner (they approve tool calls and pass every DM policy);
 *    an entry without "<channel>:" matches that id on every channel.
 */
import { dmRules, groupRules } from "../../../shared/runtime/access-policy.js";
import { configSetCommand, finding, type AuditContext, type AuditFinding } from "./finding.js";
import { exposures } from "./reach.js";

export function accessChecks({ config }: AuditContext): AuditFinding[] {
  const out: AuditFinding[] = [];
  const all = exposures(config);
  const dms = all.filter((e) => e.kind === "dm");
  for (const e of dms.filter((x) => x.open)) {
    out.push(finding({
      id: `routing.dm.${e.channel}.open`, level: "warning",
      title: `anyone on ${e.channel} can DM the agent`,
      detail: `The ${e.channel} DM policy is "${e.policy}"${e.policy === "open" ? "" : " with \"*\" among the allowed senders or the owners"}: whoever finds the bot gets runs of ${e.agents.map((a) => a.id).join(", ")} with their tools, and spends your model budget.`,
      fix: `set routing.dm.byChannel.${e.channel}.policy (or routing.dm.policy) to "pairing" (unknown senders get a code you approve with \`lurkbot pairing approve CODE\`) or "allowlist" with routing.dm.allowFrom`,
      // "*" among the allowed senders stays open under pairing too: only the policy "open" is one key
      ...(e.policy === "open" ? { fixCommand: configSetCommand(`routing.dm.byChannel.${e.channel}.policy`, "pairing") } : {}),
    }));
  }
  if (config.routing.dmScope === "main") {
    // senders of every DM channel together (a person on two channels counts twice: their sessions merge anyway)
    const senders = dms.reduce((n, e) => n + (e.open || e.policy === "pairing" ? Infinity : allowedSenders(config, e.channel)), 0);
    if (senders > 1) {
      const open = dms.filter((e) => e.open);
      out.push(finding({
        id: "routing.dm.shared-main-session", level: open.length > 0 ? "critical" : "warning",
        title: open.length > 0 ? "strangers' DMs run in the owner's main session" : "several DM senders share one main session",
        detail: `routing.dmScope is "main": DMs on ${dms.map((e) => `${e.channel} (${e.policy})`).join(", ")} all run in agent:<id>:main, the session \`lurkbot chat\` uses too. Each sender sees the others' conversation, the model gets MEMORY.md, and one sender's messages steer the others' runs.${open.length ? ` On ${open.map((e) => e.channel).join(", ")} the senders are anyone.` : ""}`,
        fix: "set routing.dmScope to \"per-channel-peer\" (one session per channel and sender), or \"per-peer\" with routing.identityLinks for people on several channels",
        fixCommand: configSetCommand("routing.dmScope", "per-channel-peer"),
      }));
    }
  }
  for (const e of all.filter((x) => x.kind === "group")) {
    const { requireMention } = groupRules(e.channel, config);
    if (e.open) {
      out.push(finding({
        id: `routing.groups.${e.channel}.open`, level: "warning",
        title: `the agent answers in any ${e.channel} group it is added to`,
        detail: `The ${e.channel} group policy is "${e.policy}"${e.policy === "open" ? "" : " with \"*\" among the allowed groups"}: anyone can add the bot to a group of theirs and talk to ${e.agents.map((a) => a.id).join(", ")} there.`,
        fix: `set routing.groups.byChannel.${e.channel}.policy (or routing.groups.policy) to "allowlist" and list your groups in routing.groups.allowFrom ("${e.channel}:<groupId>")`,
      }));
    }
    if (!requireMention) {
      out.push(finding({
        id: `routing.groups.${e.channel}.no-mention`, level: e.open ? "warning" : "info",
        title: `the agent answers every message in ${e.channel} groups`,
        detail: `routing.groups.requireMention is off for ${e.channel}: every message any member writes starts a run (every member's text reaches the model as an instruction, and each one costs a model call).`,
        fix: `set routing.groups.requireMention (or routing.groups.byChannel.${e.channel}.requireMention) to true; unmentioned messages are then kept as context (routing.groups.historyLimit)`,
        fixCommand: configSetCommand(`routing.groups.byChannel.${e.channel}.requireMention`, true),
      }));
    }
  }
  out.push(...ownerChecks(config.routing.commands.owners));
  return out;
}

/** Senders a DM allowlist names for `channel` (its own allowFrom and the owners); Infinity with "*". */
function allowedSenders(config: AuditContext["config"], channel: string): number {
  const entries = [...dmRules(channel, config).allowFrom, ...config.routing.commands.owners].filter((e) => e === "*" || !e.includes(":") || e.startsWith(`${channel}:`));
  return entries.includes("*") ? Infinity : new Set(entries).size;
}

function ownerChecks(owners: readonly string[]): AuditFinding[] {
  const out: AuditFinding[] = [];
  if (owners.includes("*")) {
    out.push(finding({
      id: "routing.owners.wildcard", level: "critical",
      title: "everyone is an owner",
      detail: "routing.commands.owners contains \"*\": any sender on any channel may /approve tool calls that wait for a human, use the owner commands in groups, and passes every DM policy (pairing and allowlists included).",
      fix: "replace \"*\" in routing.commands.owners with your own ids, each as \"<channel>:<senderId>\" (e.g. \"telegram:123456789\")",
    }));
  }
  const unscoped = owners.filter((o) => o !== "*" && !o.includes(":"));
  if (unscoped.length > 0) {
    out.push(finding({
      id: "routing.owners.unscoped", level: "info",
      title: "owner entries without a channel",
      detail: `${unscoped.map((o) => `"${o}"`).join(", ")} in routing.commands.owners match that sender id on every channel; ids are per platform, so on another channel the same id can be someone else.`,
      fix: `write each as "<channel>:<senderId>", e.g. "telegram:${unscoped[0]}"`,
    }));
  }
  return out;
}
