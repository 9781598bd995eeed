/**
 * `--fix`: applies the findings' repairs and nothing else: chmod of LurkBot's own directories
 * (700) and secret files (600), each a local change `chmod` can undo. A path that became a
 * symlink since the audit is skipped (lstat right before the change; chmod would follow it).
 * Config changes (a channel's bind address, policies) are never written: their findings say
 * the exact change to make.
 */
import { chmodSync, lstatSync } from "node:fs";
import type { AuditFinding } from "./finding.js";

export interface AppliedFix {
  id: string;
  path: string;
  /** modes as octal strings, e.g. "644" -> "600" */
  from: string;
  to: string;
  /** set when the change could not be made */
  error?: string;
}

/** a mode's permission bits as the octal string chmod takes, e.g. "644" */
export const octal = (mode: number) => (mode & 0o777).toString(8).padStart(3, "0");

export function applyFixes(findings: readonly AuditFinding[]): AppliedFix[] {
  const out: AppliedFix[] = [];
  const done = new Set<string>();
  for (const f of findings) {
    const r = f.repair;
    if (!r || done.has(r.path)) continue;
    done.add(r.path);
    const to = octal(r.mode);
    try {
      const st = lstatSync(r.path);
      if (st.isSymbolicLink()) {
        out.push({ id: f.id, path: r.path, from: "symlink", to, error: "it is a symlink now; not followed" });
        continue;
      }
      chmodSync(r.path, r.mode);
      out.push({ id: f.id, path: r.path, from: octal(st.mode), to });
    } catch (err) {
      out.push({ id: f.id, path: r.path, from: "?", to, error: `${(err as NodeJS.ErrnoException).code ?? (err as Error).message}: run \`chmod ${to} ${r.path}\` as its owner` });
    }
  }
  return out;
}
