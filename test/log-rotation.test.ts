/**
 * Log rotation (services/cli/log-rotation.ts) on real files, with a real child process that
 * writes its numbered lines through an inherited append-mode fd, the way a forked actor writes
 * its log: rotated copies shift and the oldest goes; the writer's next lines land at the start
 * of the emptied file (no hole of NUL bytes); the lines stay in order across the copies; a file
 * under the limit, a missing file and a `.log` that is not a file are handled.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { LogRotator, rotatedName, rotateIfLarge } from "../services/cli/log-rotation.js";
import { waitFor } from "./harness/actors.js";

/** the numbers of the `line N` lines of a file, in file order */
function lineNumbers(file: string): number[] {
  const text = readFileSync(file, "utf8");
  assert.ok(!text.includes("\0"), `${file} has NUL bytes: a writer wrote past the truncated end`);
  return text.split("\n").filter(Boolean).map((l) => {
    const m = /^line (\d+) x+$/.exec(l);
    assert.ok(m, `unexpected line in ${file}: ${JSON.stringify(l.slice(0, 80))}`);
    return Number(m[1]);
  });
}

describe("log rotation", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "lurk-logrot-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("rotates under a live append-mode writer: copies shift, the oldest goes, lines stay in order", async () => {
    const file = join(dir, "writer.log");
    const fd = openSync(file, "a", 0o600);
    // ~100 bytes a line, a line every millisecond or so, until killed
    const child = spawn(process.execPath, ["-e", `let n = 0; setInterval(() => { for (let i = 0; i < 5; i++) process.stdout.write("line " + n++ + " " + "x".repeat(90) + "\\n"); }, 2);`], { stdio: ["ignore", fd, "inherit"] });
    closeSync(fd);
    try {
      let rotations = 0;
      while (rotations < 4) {
        await waitFor(() => existsSync(file) && statSync(file).size >= 20_000, 10_000, "the writer to fill the log");
        assert.equal(rotateIfLarge(file, 20_000, 2), true);
        rotations++;
      }
      await waitFor(() => statSync(file).size > 2_000, 10_000, "the writer to go on in the emptied file");
    } finally {
      child.kill("SIGKILL");
      await new Promise((resolve) => child.once("exit", resolve));
    }
    assert.equal(existsSync(rotatedName(file, 3)), false, "only `keep` copies are kept");
    const older = lineNumbers(rotatedName(file, 2));
    const newer = lineNumbers(rotatedName(file, 1));
    const current = lineNumbers(file);
    assert.ok(older.length >= 150 && newer.length >= 150 && current.length > 0, `${older.length} / ${newer.length} / ${current.length} lines`);
    const all = [...older, ...newer, ...current];
    for (let i = 1; i < all.length; i++) assert.ok(all[i]! > all[i - 1]!, `line ${all[i]} follows line ${all[i - 1]}`);
    // the copy and the truncate are back to back: at most a few lines fall between them
    assert.ok(newer[0]! - older[older.length - 1]! <= 20, `lines ${older[older.length - 1]}..${newer[0]} between .2 and .1`);
    assert.ok(current[0]! - newer[newer.length - 1]! <= 20, `lines ${newer[newer.length - 1]}..${current[0]} between .1 and the file`);
  });

  it("leaves a file under the limit and a missing one alone; keep 0 only empties the file", () => {
    const file = join(dir, "small.log");
    writeFileSync(file, "a".repeat(999));
    assert.equal(rotateIfLarge(file, 1_000, 3), false);
    assert.equal(statSync(file).size, 999);
    assert.equal(rotateIfLarge(join(dir, "missing.log"), 1_000, 3), false);
    writeFileSync(file, "a".repeat(1_000));
    assert.equal(rotateIfLarge(file, 1_000, 0), true);
    assert.equal(statSync(file).size, 0);
    assert.equal(existsSync(rotatedName(file, 1)), false);
  });

  it("a pass rotates every large *.log in the directory, reports what it could not rotate, and goes on", () => {
    const logs = join(dir, "logs");
    mkdirSync(join(logs, "a-directory.log"), { recursive: true });
    writeFileSync(join(logs, "router.log"), "r".repeat(5_000));
    writeFileSync(join(logs, "nats-server.log"), "n".repeat(5_000));
    writeFileSync(join(logs, "notes.txt"), "t".repeat(5_000));
    writeFileSync(join(logs, "tools.log"), "t".repeat(10));
    const rotated: string[] = [];
    const failed: string[] = [];
    const rotator = new LogRotator({ dir: logs, maxBytes: 4_096, keep: 1, checkEveryMs: 60_000, onRotated: (f) => rotated.push(f), onError: (f, err) => failed.push(`${f}: ${err.message}`) });
    const returned = rotator.checkNow();
    assert.deepEqual(returned.sort(), [join(logs, "nats-server.log"), join(logs, "router.log")]);
    assert.deepEqual(rotated.sort(), returned);
    assert.equal(failed.length, 1, failed.join("\n"));
    assert.match(failed[0]!, /a-directory\.log: .*EISDIR/);
    assert.equal(readFileSync(rotatedName(join(logs, "router.log"), 1), "utf8"), "r".repeat(5_000));
    assert.equal(statSync(join(logs, "router.log")).size, 0);
    assert.equal(statSync(join(logs, "notes.txt")).size, 5_000, "only *.log files are rotated");
    assert.equal(statSync(join(logs, "tools.log")).size, 10);
    // a second pass with nothing large rotates nothing; a directory that is gone is reported
    assert.deepEqual(rotator.checkNow(), []);
    const gone = new LogRotator({ dir: join(dir, "no-such-dir"), maxBytes: 1, keep: 1, checkEveryMs: 60_000, onError: (f) => failed.push(f) });
    assert.deepEqual(gone.checkNow(), []);
    assert.equal(failed.at(-1), join(dir, "no-such-dir"));
  });
});
