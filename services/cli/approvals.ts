/**
 * `lurkbot approvals list|approve|deny`: the approvals actor's records over
 * `lurk.approvals.<op>` as the `cli` user; decisions are made by `cli:<os user>`.
 */
import { userInfo } from "node:os";
import { approvalRecordSchema, type ApprovalRecord } from "../../shared/contract/index.js";
import { loadConfig, type Env } from "../../shared/runtime/config.js";
import type { ParsedCommand } from "./args.js";
import { withCliBus } from "./bus.js";
import { EXIT, UsageError } from "./errors.js";
import { oneLine, table } from "./format.js";
import { checkSubcommand, type SubcommandSpec } from "./subcommands.js";

export interface ApprovalsIo {
  out(line: string): void;
}

const SUBCOMMANDS: Record<string, SubcommandSpec> = {
  list: { arg: "none", options: ["status", "json", "limit"] },
  approve: { arg: "required", options: ["json"] },
  deny: { arg: "required", options: ["json"] },
};

export function checkApprovalsArgs(p: ParsedCommand): { sub: string; id?: string } {
  const { sub, arg: id } = checkSubcommand(p, "approvals", SUBCOMMANDS, "an approval ID");
  const status = p.options.status;
  if (typeof status === "string" && !approvalRecordSchema.shape.status.safeParse(status).success) {
    throw new UsageError(`--status must be one of ${approvalRecordSchema.shape.status.options.join(", ")}, not "${status}".`, "approvals");
  }
  if (typeof p.options.limit === "number" && !Number.isInteger(p.options.limit)) throw new UsageError("--limit must be a whole number.", "approvals");
  return { sub, ...(id !== undefined ? { id } : {}) };
}

export function cliDecider(): string {
  let name = "unknown";
  try {
    name = userInfo().username || name;
  } catch {
    name = process.env.USER ?? name;
  }
  return `cli:${name}`;
}

export async function cmdApprovals(p: ParsedCommand, env: Env, io: ApprovalsIo): Promise<number> {
  const { sub, id } = checkApprovalsArgs(p);
  const cfg = loadConfig(env);
  return withCliBus(cfg, env, async (bus) => {
    if (sub === "list") {
      const status = p.options.status as ApprovalRecord["status"] | undefined;
      const { approvals } = await bus.call("approvals", "list", {
        ...(status ? { status } : {}),
        limit: Math.min(1000, (p.options.limit as number | undefined) ?? 100),
      });
      if (p.options.json) io.out(JSON.stringify(approvals, null, 2));
      else io.out(formatApprovalList(approvals).trimEnd());
      return EXIT.ok;
    }
    const { approval } = await bus.call("approvals", "decide", { approvalId: id!, decision: sub === "approve" ? "approve" : "deny", decidedBy: cliDecider() });
    if (p.options.json) io.out(JSON.stringify(approval, null, 2));
    else io.out(`${approval.approvalId}: ${approval.status} by ${approval.decidedBy ?? "?"} (${approval.tool}${approval.command !== undefined ? `: ${oneLine(approval.command, 80)}` : ""})`);
    return EXIT.ok;
  });
}

export function formatApprovalList(approvals: ApprovalRecord[], now = Date.now()): string {
  if (approvals.length === 0) return "no approvals\n";
  const rows = approvals.map((a) => {
    const when = a.status === "pending" ? `expires in ${Math.max(0, Math.round((a.expiresAt - now) / 1000))}s` : `${a.status} by ${a.decidedBy ?? "?"}`;
    return [a.approvalId, a.status, a.tool, a.sessionKey, when, a.command !== undefined ? oneLine(a.command, 60) : ""];
  });
  return table(["ID", "STATUS", "TOOL", "SESSION", "DECISION", "COMMAND"], rows);
}
