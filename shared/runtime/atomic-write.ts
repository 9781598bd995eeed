/**
 * Replacing a file in one step, for files that hold secrets or configuration (config.json,
 * credentials/secrets.json, credentials/nats.json, credentials/channels.json): the text goes to
 * a new temporary file next to it (a random name, created with O_CREAT|O_EXCL, so a file or
 * symlink planted under a predictable name is never followed or reused), with its mode set at
 * creation; the file is fsynced, renamed over the target (a reader sees the old file or the new
 * one, never half of one; a symlink at the target is replaced, not followed) and the directory
 * fsynced so the rename survives a crash. On any failure the temporary file is removed and the
 * target is as it was.
 */
import { randomBytes } from "node:crypto";
import { closeSync, fchmodSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";

/** Writes `text` to `path` atomically with `mode` (default 0600); the directory is made (0700) when missing. */
export function writeFileAtomicSync(path: string, text: string | Uint8Array, mode = 0o600): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = join(dir, `.${basename(path)}.tmp-${randomBytes(8).toString("hex")}`);
  // "wx": fails on anything already at that name, a symlink included (never followed)
  const fd = openSync(tmp, "wx", mode);
  let renamed = false;
  try {
    try {
      // the umask may have narrowed the mode at creation (never widened it): make it exact
      fchmodSync(fd, mode);
      writeFileSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
    renamed = true;
  } finally {
    if (!renamed) rmSync(tmp, { force: true });
  }
  syncDirectory(dir);
}

/** fsync of a directory (the rename's entry); some file systems refuse it, which is not an error here. */
function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, "r");
    fsyncSync(fd);
  } catch {
    // e.g. EISDIR/EINVAL on platforms without directory fsync
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
