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
import { checkSubcommand, type SubcommandSpec } from "./subcommands.js";

export interface PairingIo {
  out(line: string): void;
}

type Sub = "list" | "approve" | "deny" | "revoke";

const SUBCOMMANDS: Record<Sub, SubcommandSpec> = {
  list: { arg: "none", options: ["json"] },
  approve: { arg: "required", options: ["json"] },
  deny: { arg: "required", options: ["json"] },
  // its CHANNEL:SENDER is checked below, with its own message
  revoke: { arg: "optional", options: ["json"] },
};

function checkPairingArgs(p: ParsedCommand): { sub: Sub; arg?: string } {
  const { sub, arg } = checkSubcommand(p, "pairing", SUBCOMMANDS, "the CODE the sender was given");
  if (sub === "revoke" && !/^[^:]+:.+$/.test(arg ?? "")) throw new UsageError("`lurkbot pairing revoke` needs CHANNEL:SENDER, e.g. telegram:12345 (see `lurkbot pairing list`).", "pairing");
  return { sub: sub as Sub, ...(arg !== undefined ? { arg } : {}) };
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
