/**
 * `lurkbot pairing list|approve|deny|revoke`: the router's DM pairing codes over
 * `lurk.router.pairing` as the `cli` user; decisions are made by `cli:<os user>`.
 */
import type { PairingApproved, PairingPending } from "../../shared/contract/index.js";
import { loadConfig, type Env } from "../../shared/runtime/config.js";
import { cliDecider } from "./approvals.js";
import type { ParsedCommand } from "./args.js";
import { withCliBus } from "./bus.js";
import { EXIT, UsageError } from "./errors.js";

export interface PairingIo {
  out(line: string): void;
}

type Sub = "list" | "approve" | "deny" | "revoke";

export function checkPairingArgs(p: ParsedCommand): { sub: Sub; arg?: string } {
  const [sub, arg] = p.args;
  if (sub !== "list" && sub !== "approve" && sub !== "deny" && sub !== "revoke") {
    throw new UsageError(`${sub ? `unknown subcommand "${sub}"` : "a subcommand is needed"}: lurkbot pairing list|approve CODE|deny CODE|revoke CHANNEL:SENDER.`, "pairing");
  }
  if (sub === "list" && arg !== undefined) throw new UsageError(`\`lurkbot pairing list\` takes no argument; unexpected "${arg}".`, "pairing");
  if ((sub === "approve" || sub === "deny") && !arg) throw new UsageError(`\`lurkbot pairing ${sub}\` needs the CODE the sender was given (see \`lurkbot pairing list\`).`, "pairing");
  if (sub === "revoke" && !/^[^:]+:.+$/.test(arg ?? "")) throw new UsageError("`lurkbot pairing revoke` needs CHANNEL:SENDER, e.g. telegram:12345 (see `lurkbot pairing list`).", "pairing");
  return { sub, ...(arg !== undefined ? { arg } : {}) };
}

export async function cmdPairing(p: ParsedCommand, env: Env, io: PairingIo): Promise<number> {
  const { sub, arg } = checkPairingArgs(p);
  const cfg = loadConfig(env);
  return withCliBus(cfg, env, async (bus) => {
    let request;
    if (sub === "revoke") {
      const [channel, ...rest] = arg!.split(":");
      request = { action: sub, channel: channel!, senderId: rest.join(":") };
    } else {
      request = { action: sub, ...(arg ? { code: arg } : {}), decidedBy: cliDecider() };
    }
    const reply = await bus.call("router", "pairing", request);
    if (p.options.json) {
      io.out(JSON.stringify(reply, null, 2));
      return EXIT.ok;
    }
    if (reply.decided) io.out(`${reply.decided.code}: ${sub === "approve" ? "approved" : "denied"} ${reply.decided.channel}:${reply.decided.senderId}${reply.decided.senderName ? ` (${reply.decided.senderName})` : ""}`);
    else if (reply.revoked) io.out(`revoked ${reply.revoked.channel}:${reply.revoked.senderId}`);
    else io.out(formatPairing(reply.pending, reply.approved).trimEnd());
    return EXIT.ok;
  });
}

export function formatPairing(pending: PairingPending[], approved: PairingApproved[], now = Date.now()): string {
  const lines: string[] = [];
  if (pending.length === 0) lines.push("no pending pairing codes");
  else {
    lines.push("PENDING");
    for (const p of pending) lines.push(`  ${p.code}  ${p.channel}:${p.senderId}${p.senderName ? ` (${p.senderName})` : ""}  expires in ${Math.max(0, Math.round((p.expiresAt - now) / 60_000))} min`);
  }
  if (approved.length > 0) {
    lines.push("APPROVED");
    for (const a of approved) lines.push(`  ${a.channel}:${a.senderId}${a.senderName ? ` (${a.senderName})` : ""}  since ${new Date(a.approvedAt).toISOString()}${a.approvedBy ? ` by ${a.approvedBy}` : ""}`);
  }
  return lines.join("\n") + "\n";
}
