/**
 * Size-based rotation of the log files the launcher's children write (`$LURKBOT_HOME/logs/*.log`:
 * each actor's, nats-server's). The writers keep their files open in append mode (a forked
 * actor's stdout/stderr, nats-server's `-l` file, a hosted actor's stream), so a file cannot be
 * renamed under them: it is copied and truncated in place ("copytruncate"). An append-mode
 * writer's next line then lands at the start of the emptied file.
 * A file at or over `maxBytes` moves to `<file>.1`, older copies shift to `.2` … `.<keep>`, and
 * the oldest beyond `keep` is deleted; with `keep` 0 the file is only emptied. The copy and the
 * truncate are synchronous and back to back, so only a line written in the microseconds between
 * the copy's last read and the truncate is lost (as with logrotate's copytruncate).
 */
import { closeSync, existsSync, ftruncateSync, fstatSync, openSync, readdirSync, readSync, renameSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";

const CHUNK_BYTES = 1 << 20;

/** `<file>.<n>`: the n-th newest rotated copy */
export const rotatedName = (file: string, n: number) => `${file}.${n}`;

/** Rotates `file` when it holds at least `maxBytes`; returns whether it did. Throws on fs errors. */
export function rotateIfLarge(file: string, maxBytes: number, keep: number): boolean {
  let fd: number;
  try {
    fd = openSync(file, "r+");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw err;
  }
  try {
    if (fstatSync(fd).size < maxBytes) return false;
    if (keep > 0) {
      rmSync(rotatedName(file, keep), { force: true });
      for (let n = keep - 1; n >= 1; n--) if (existsSync(rotatedName(file, n))) renameSync(rotatedName(file, n), rotatedName(file, n + 1));
      copyToEnd(fd, rotatedName(file, 1));
    }
    ftruncateSync(fd, 0);
    return true;
  } finally {
    closeSync(fd);
  }
}

/** Copies everything `fd` holds, up to what was appended while copying, into a new file. */
function copyToEnd(fd: number, target: string): void {
  const out = openSync(target, "w", 0o600);
  try {
    const buf = Buffer.allocUnsafe(CHUNK_BYTES);
    for (let position = 0; ;) {
      const n = readSync(fd, buf, 0, buf.length, position);
      if (n === 0) return;
      writeSync(out, buf, 0, n);
      position += n;
    }
  } finally {
    closeSync(out);
  }
}

export interface LogRotationOptions {
  /** the directory whose `*.log` files are rotated */
  dir: string;
  maxBytes: number;
  keep: number;
  checkEveryMs: number;
  /** told about each rotation and each failure */
  onRotated?: (file: string) => void;
  onError?: (file: string, err: Error) => void;
}

/** Checks the directory's `*.log` files every `checkEveryMs` until stopped (the timer does not hold the process). */
export class LogRotator {
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: LogRotationOptions) {}

  start(): void {
    this.timer ??= setInterval(() => this.checkNow(), this.opts.checkEveryMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One pass over the directory; returns the files rotated. Never throws. */
  checkNow(): string[] {
    const { dir, maxBytes, keep } = this.opts;
    let names: string[];
    try {
      names = readdirSync(dir).filter((n) => n.endsWith(".log"));
    } catch (err) {
      this.opts.onError?.(dir, err as Error);
      return [];
    }
    const rotated: string[] = [];
    for (const name of names) {
      const file = join(dir, name);
      try {
        if (rotateIfLarge(file, maxBytes, keep)) {
          rotated.push(file);
          this.opts.onRotated?.(file);
        }
      } catch (err) {
        this.opts.onError?.(file, err as Error);
      }
    }
    return rotated;
  }
}
