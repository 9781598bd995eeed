/**
 * The file tools (write, edit, apply_patch) over a real bus: the tools actor as a child process
 * on a real nats-server. Happy paths checked on disk, the escape table (nothing outside the
 * workspace is written: content, mtime and directory listing unchanged), edit's missing and
 * ambiguous matches, apply_patch's all-or-nothing, and atomic replacement under concurrent
 * reads. Then the confined fs layer directly, for directory swaps between check and write.
 */
import assert from "node:assert/strict";
import { chmodSync, existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { LurkError, type ToolCallReply } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { ConfinedFs } from "../services/tools/fs-confined.js";
import type { ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";
import { startToolsActor, textOf, toolCaller } from "./harness/tools-actor.js";

const SECRET = "TOP-SECRET-OUTSIDE-THE-WORKSPACE\n";
const MAX_WRITE = 400_000;


/** Every file under `dir` with its content and mtime, to prove nothing changed. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, name.name);
      if (name.isDirectory()) walk(p);
      else if (name.isFile()) out[p] = `${statSync(p).mtimeMs}:${readFileSync(p, "utf8")}`;
      else out[p] = "(other)";
    }
  };
  walk(dir);
  return out;
}

describe("file tools over the bus", () => {
  let nats: TestNats;
  let tools: ActorProcess;
  let nc: NatsConnection;
  let client: BusClient;
  let ws: string;
  let outside: string;
  const { call, ok } = toolCaller(() => client);
  const wsFile = (p: string) => readFileSync(join(ws, p), "utf8");

  before(async () => {
    ws = mkdtempSync(join(tmpdir(), "lurk-write-ws-"));
    outside = mkdtempSync(join(tmpdir(), "lurk-write-outside-"));
    writeFileSync(join(outside, "secret.txt"), SECRET);
    writeFileSync(join(outside, "hard-target.txt"), SECRET);
    mkdirSync(join(outside, "d"));
    writeFileSync(join(outside, "d", "secret.txt"), SECRET);
    symlinkSync(join(outside, "secret.txt"), join(ws, "link-out"));
    symlinkSync(join(outside, "nothing-yet.txt"), join(ws, "dangling-out"));
    symlinkSync(join(outside, "d"), join(ws, "dir-link"));
    linkSync(join(outside, "hard-target.txt"), join(ws, "hardlink.txt"));
    writeFileSync(join(ws, "target.txt"), "inside\n");
    symlinkSync("target.txt", join(ws, "link-in"));

    ({ nats, tools, nc, client } = await startToolsActor(ws, { tools: { maxWriteBytes: MAX_WRITE } }));
  });
  after(async () => {
    await nc?.close();
    await tools?.stop();
    await nats?.stop();
    rmSync(ws, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  it("lists write, edit and apply_patch as side-effecting, serial group:fs tools", async () => {
    const reply = await client.call("tools", "list", {});
    for (const name of ["write", "edit", "apply_patch"]) {
      const def = reply.tools.find((t) => t.name === name);
      assert.ok(def, `${name} is listed`);
      assert.equal(def.sideEffects, true);
      assert.equal(def.parallelSafe, false);
      assert.deepEqual(def.groups, ["group:fs"]);
    }
  });

  it("write creates parent directories, replaces files, keeps the mode, and reports the bytes", async () => {
    assert.match(await ok("write", { path: "a/b/c/new.txt", content: "héllo\n" }), /^Created a\/b\/c\/new\.txt \(7 bytes\)$/);
    assert.equal(wsFile("a/b/c/new.txt"), "héllo\n");
    writeFileSync(join(ws, "script.sh"), "old");
    chmodSync(join(ws, "script.sh"), 0o750);
    assert.match(await ok("write", { path: "script.sh", content: "#!/bin/sh\n" }), /^Wrote script\.sh \(10 bytes\)$/);
    assert.equal(wsFile("script.sh"), "#!/bin/sh\n");
    assert.equal(statSync(join(ws, "script.sh")).mode & 0o777, 0o750);
    await ok("write", { path: "empty.txt", content: "" });
    assert.equal(wsFile("empty.txt"), "");
    // a symlink that stays inside is followed: the link stays, its target changes
    await ok("write", { path: "link-in", content: "via link\n" });
    assert.equal(wsFile("target.txt"), "via link\n");
    // no temp files left behind
    assert.deepEqual(readdirSync(join(ws, "a/b/c")), ["new.txt"]);
  });

  it("write refuses content over tools.maxWriteBytes, a directory, and a file used as a directory", async () => {
    const big = await call("write", { path: "big.txt", content: "x".repeat(MAX_WRITE + 1) });
    assert.equal(big.errorCode, "LIMIT_EXCEEDED");
    assert.ok(!existsSync(join(ws, "big.txt")));
    const dir = await call("write", { path: "a/b", content: "x" });
    assert.equal(dir.errorCode, "TOOL_INVALID_ARGS");
    assert.match(textOf(dir), /directory/);
    const under = await call("write", { path: "a/b/c/new.txt/x", content: "x" });
    assert.equal(under.isError, true);
    assert.match(textOf(under), /not a directory/);
  });

  it("edit replaces an exact, unique match and summarises the change", async () => {
    writeFileSync(join(ws, "code.ts"), "const a = 1;\nconst b = 2;\nconst c = 3;\n");
    const text = await ok("edit", { path: "code.ts", oldText: "const b = 2;", newText: "const b = 20;\nconst bb = 21;" });
    assert.equal(wsFile("code.ts"), "const a = 1;\nconst b = 20;\nconst bb = 21;\nconst c = 3;\n");
    assert.match(text, /^Edited code\.ts: replaced 1 occurrence \(first at line 2\)/);
    assert.match(text, /\n- const b = 2;\n\+ const b = 20;\n\+ const bb = 21;$/);
  });

  it("edit fails clearly on a missing or ambiguous oldText and changes nothing; replaceAll replaces all", async () => {
    writeFileSync(join(ws, "dup.txt"), "x = 1\ny = 2\nx = 1\n");
    const before = statSync(join(ws, "dup.txt")).mtimeMs;
    const missing = await call("edit", { path: "dup.txt", oldText: "z = 3", newText: "z = 4" });
    assert.equal(missing.isError, true);
    assert.equal(missing.errorCode, "TOOL_FAILED");
    assert.match(textOf(missing), /not found in "dup\.txt"/);
    const ambiguous = await call("edit", { path: "dup.txt", oldText: "x = 1", newText: "x = 9" });
    assert.equal(ambiguous.errorCode, "TOOL_FAILED");
    assert.match(textOf(ambiguous), /occurs 2 times .* lines 1, 3.*replaceAll/);
    assert.equal(wsFile("dup.txt"), "x = 1\ny = 2\nx = 1\n");
    assert.equal(statSync(join(ws, "dup.txt")).mtimeMs, before);
    assert.match(await ok("edit", { path: "dup.txt", oldText: "x = 1", newText: "x = 9", replaceAll: true }), /replaced 2 occurrences/);
    assert.equal(wsFile("dup.txt"), "x = 9\ny = 2\nx = 9\n");
    const nofile = await call("edit", { path: "nope.txt", oldText: "a", newText: "b" });
    assert.equal(nofile.errorCode, "NOT_FOUND");
    const empty = await call("edit", { path: "dup.txt", oldText: "", newText: "b" });
    assert.equal(empty.errorCode, "TOOL_INVALID_ARGS");
  });

  it("edit matches LF oldText in a CRLF file and keeps CRLF", async () => {
    writeFileSync(join(ws, "crlf.txt"), "one\r\ntwo\r\nthree\r\n");
    await ok("edit", { path: "crlf.txt", oldText: "one\ntwo", newText: "uno\ndos" });
    assert.equal(wsFile("crlf.txt"), "uno\r\ndos\r\nthree\r\n");
  });

  it("apply_patch adds, updates (several hunks, @@ anchors), moves and deletes files", async () => {
    writeFileSync(join(ws, "p1.py"), "def f():\n    return 1\n\n\ndef g():\n    return 2\n\n\ndef h():\n    return 3\n");
    writeFileSync(join(ws, "p2.txt"), "alpha\nbeta\ngamma\n");
    writeFileSync(join(ws, "gone.txt"), "bye\n");
    const patch = [
      "*** Begin Patch",
      "*** Add File: pkg/new.py",
      "+print('new')",
      "+",
      "*** Update File: p1.py",
      "@@ def f():",
      "-    return 1",
      "+    return 10",
      "@@ def h():",
      "-    return 3",
      "+    return 30",
      "+    # done",
      "*** Update File: p2.txt",
      "*** Move to: moved/p2.txt",
      "@@",
      " alpha",
      "-beta",
      "+BETA",
      " gamma",
      "*** Delete File: gone.txt",
      "*** End Patch",
    ].join("\n");
    const text = await ok("apply_patch", { patch });
    assert.equal(wsFile("pkg/new.py"), "print('new')\n\n");
    assert.equal(wsFile("p1.py"), "def f():\n    return 10\n\n\ndef g():\n    return 2\n\n\ndef h():\n    return 30\n    # done\n");
    assert.equal(wsFile("moved/p2.txt"), "alpha\nBETA\ngamma\n");
    assert.ok(!existsSync(join(ws, "p2.txt")));
    assert.ok(!existsSync(join(ws, "gone.txt")));
    assert.match(text, /A pkg\/new\.py \(2 lines\)/);
    assert.match(text, /M p1\.py \(\+3 -2\)/);
    assert.match(text, /M p2\.txt -> moved\/p2\.txt \(\+1 -1\)/);
    assert.match(text, /D gone\.txt/);
  });

  it("apply_patch with one bad hunk changes nothing at all", async () => {
    writeFileSync(join(ws, "q1.txt"), "one\ntwo\nthree\n");
    writeFileSync(join(ws, "q2.txt"), "four\nfive\n");
    writeFileSync(join(ws, "q3.txt"), "keep me\n");
    const before = snapshot(ws);
    const patch = [
      "*** Begin Patch",
      "*** Add File: q-new/added.txt",
      "+added",
      "*** Update File: q1.txt",
      "@@",
      "-two",
      "+TWO",
      "*** Delete File: q3.txt",
      "*** Update File: q2.txt",
      "@@",
      " four",
      "-this line is not in the file",
      "+six",
      "*** End Patch",
    ].join("\n");
    const reply = await call("apply_patch", { patch });
    assert.equal(reply.isError, true);
    assert.equal(reply.errorCode, "TOOL_FAILED");
    assert.match(textOf(reply), /hunk 1 .* of "q2\.txt".*not found.*nothing was changed/);
    assert.deepEqual(snapshot(ws), before);
    assert.ok(!existsSync(join(ws, "q-new")), "not even the parent directory of the added file");
  });

  it("apply_patch refuses malformed patches, adding an existing file, and changing a file twice", async () => {
    const cases: Array<[string, string, RegExp]> = [
      ["no begin", "*** Update File: q1.txt\n@@\n-one\n+1\n*** End Patch", /first line/],
      ["no end", "*** Begin Patch\n*** Update File: q1.txt\n@@\n-one\n+1", /last line/],
      ["bad line", "*** Begin Patch\n*** Update File: q1.txt\n@@\n*one\n*** End Patch", /must start with/],
      ["add without +", "*** Begin Patch\n*** Add File: z.txt\nplain\n*** End Patch", /starts with "\+"/],
    ];
    for (const [name, patch, message] of cases) {
      const reply = await call("apply_patch", { patch });
      assert.equal(reply.errorCode, "TOOL_INVALID_ARGS", name);
      assert.match(textOf(reply), message, name);
    }
    const exists = await call("apply_patch", { patch: "*** Begin Patch\n*** Add File: q1.txt\n+x\n*** End Patch" });
    assert.equal(exists.errorCode, "CONFLICT");
    assert.match(textOf(exists), /already exists/);
    const twice = await call("apply_patch", { patch: "*** Begin Patch\n*** Update File: q1.txt\n@@\n-one\n+1\n*** Delete File: ./q1.txt\n*** End Patch" });
    assert.equal(twice.errorCode, "TOOL_INVALID_ARGS");
    assert.match(textOf(twice), /more than once/);
    assert.equal(wsFile("q1.txt"), "one\ntwo\nthree\n");
  });

  const escapes: Array<[string, () => string, string[]]> = [
    ["..", () => "..", ["PATH_ESCAPE"]],
    ["../<outside>/new.txt", () => `../${basename(outside)}/new.txt`, ["PATH_ESCAPE"]],
    ["../<outside>/secret.txt", () => `../${basename(outside)}/secret.txt`, ["PATH_ESCAPE"]],
    ["sub/../../x", () => "sub/../../x", ["PATH_ESCAPE"]],
    ["absolute path outside", () => join(outside, "secret.txt"), ["PATH_ESCAPE"]],
    ["absolute new path outside", () => join(outside, "new.txt"), ["PATH_ESCAPE"]],
    ["a symlink to a file outside", () => "link-out", ["PATH_ESCAPE"]],
    ["a dangling symlink leading outside", () => "dangling-out", ["PATH_ESCAPE"]],
    ["a symlinked directory leading outside (existing file)", () => "dir-link/secret.txt", ["PATH_ESCAPE"]],
    ["a symlinked directory leading outside (new file)", () => "dir-link/new.txt", ["PATH_ESCAPE"]],
    ["a symlinked directory leading outside (new subdirectory)", () => "dir-link/sub/new.txt", ["PATH_ESCAPE"]],
    ["a hard link to a file outside", () => "hardlink.txt", ["PATH_ESCAPE"]],
    ["a NUL byte", () => "ok.txt\u0000../../x", ["TOOL_INVALID_ARGS"]],
  ];
  const refuses = async (what: string, codes: string[], run: () => Promise<ToolCallReply>) => {
    const before = snapshot(outside);
    const listing = readdirSync(outside).sort();
    const reply = await run();
    assert.equal(reply.isError, true, `${what}: ${textOf(reply)}`);
    assert.ok(codes.includes(reply.errorCode ?? ""), `${what}: ${reply.errorCode} ${textOf(reply)}`);
    assert.ok(!textOf(reply).includes(SECRET.trim()));
    assert.deepEqual(snapshot(outside), before, `${what}: nothing outside changed`);
    assert.deepEqual(readdirSync(outside).sort(), listing);
    assert.equal(readFileSync(join(outside, "secret.txt"), "utf8"), SECRET);
    assert.equal(readFileSync(join(outside, "hard-target.txt"), "utf8"), SECRET);
    return reply;
  };
  for (const [name, path, codes] of escapes) {
    it(`write refuses ${name} and writes nothing outside`, async () => {
      const reply = await refuses(`write ${name}`, codes, () => call("write", { path: path(), content: "PWNED\n" }));
      assert.match(textOf(reply), codes[0] === "PATH_ESCAPE" ? /outside the workspace|hard links/ : /NUL/);
    });
    it(`apply_patch refuses ${name} (add, update, delete) and writes nothing outside`, async () => {
      const p = path();
      await refuses(`add ${name}`, codes, () => call("apply_patch", { patch: `*** Begin Patch\n*** Add File: ${p}\n+PWNED\n*** End Patch` }));
      await refuses(`update ${name}`, codes, () => call("apply_patch", { patch: `*** Begin Patch\n*** Update File: ${p}\n@@\n-${SECRET.trim()}\n+PWNED\n*** End Patch` }));
      await refuses(`delete ${name}`, codes, () => call("apply_patch", { patch: `*** Begin Patch\n*** Delete File: ${p}\n*** End Patch` }));
      await refuses(`move to ${name}`, codes, () => call("apply_patch", { patch: `*** Begin Patch\n*** Update File: target.txt\n*** Move to: ${p}\n@@\n-via link\n+PWNED\n*** End Patch` }));
    });
  }
  it("edit refuses the escapes too", async () => {
    for (const [name, path, codes] of escapes) {
      await refuses(`edit ${name}`, codes, () => call("edit", { path: path(), oldText: SECRET.trim(), newText: "PWNED" }));
    }
    assert.ok(existsSync(join(ws, "link-out")) && existsSync(join(ws, "hardlink.txt")), "the links in the workspace are untouched");
  });

  it("replaces a file atomically: concurrent readers only ever see the old or the new content", async () => {
    const size = 300_000;
    const contents = ["A", "B", "C", "D", "E", "F"].map((c) => c.repeat(size));
    await ok("write", { path: "atomic.txt", content: contents[0]! });
    const fs = await ConfinedFs.create(ws);
    let done = false;
    let reads = 0;
    const reader = (async () => {
      while (!done) {
        const { data } = await fs.readFile("atomic.txt", { maxBytes: size * 2 });
        const text = data.toString("utf8");
        assert.equal(text.length, size, `a read saw ${text.length} bytes`);
        assert.ok(contents.includes(text), `a read saw mixed content starting ${text.slice(0, 3)} ending ${text.slice(-3)}`);
        reads++;
      }
    })();
    // replace the file until the reader has read it a few times in between (a loaded machine reads slowly)
    let last = contents[0]!;
    try {
      for (let i = 1; i <= 200 && (i < contents.length || reads <= 5); i++) {
        last = contents[i % contents.length]!;
        await ok("write", { path: "atomic.txt", content: last });
      }
    } finally {
      done = true;
      await reader;
    }
    assert.ok(reads > 5, `${reads} reads`);
    assert.equal(wsFile("atomic.txt"), last);
  });
});

describe("confined fs layer: writes", () => {
  let ws: string;
  let outside: string;

  before(() => {
    ws = mkdtempSync(join(tmpdir(), "lurk-cfsw-ws-"));
    outside = mkdtempSync(join(tmpdir(), "lurk-cfsw-outside-"));
    mkdirSync(join(outside, "swap"));
    writeFileSync(join(outside, "swap", "file.txt"), SECRET);
  });
  after(() => {
    rmSync(ws, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  const swapDir = (name: string) => {
    renameSync(join(ws, name), join(ws, `${name}-old`));
    symlinkSync(join(outside, "swap"), join(ws, name));
  };

  it("refuses a directory swapped for a symlink between the check and the open", async () => {
    mkdirSync(join(ws, "swap1"));
    writeFileSync(join(ws, "swap1", "file.txt"), "inside");
    const fs = await ConfinedFs.create(ws, { beforeOpen: () => swapDir("swap1") });
    // the pre-open check passes: the path is inside
    assert.equal((await fs.checkWritable("swap1/file.txt")).exists, true);
    await assert.rejects(fs.writeFileAtomic("swap1/file.txt", "PWNED"), (err: unknown) => LurkError.is(err) && err.code === "PATH_ESCAPE");
    assert.equal(readFileSync(join(outside, "swap", "file.txt"), "utf8"), SECRET);
    assert.deepEqual(readdirSync(join(outside, "swap")), ["file.txt"]);
    // the race was real: the same path now leads outside
    assert.equal(readFileSync(join(ws, "swap1", "file.txt"), "utf8"), SECRET);
  });

  it("writes into the verified directory even if its path is swapped for a symlink after the check", async () => {
    mkdirSync(join(ws, "swap2"));
    writeFileSync(join(ws, "swap2", "file.txt"), "inside");
    let swapped = false;
    const fs = await ConfinedFs.create(ws, {
      beforeWrite: () => {
        swapDir("swap2");
        swapped = true;
      },
    });
    const result = await fs.writeFileAtomic("swap2/file.txt", "new content");
    assert.ok(swapped);
    assert.equal(result.bytes, 11);
    // the write went through the pinned directory fd: into the (renamed) real directory
    assert.equal(readFileSync(join(ws, "swap2-old", "file.txt"), "utf8"), "new content");
    assert.equal(readFileSync(join(outside, "swap", "file.txt"), "utf8"), SECRET);
    assert.deepEqual(readdirSync(join(outside, "swap")), ["file.txt"]);
  });

  it("mkdirp and unlink stay inside", async () => {
    symlinkSync(outside, join(ws, "out-link"));
    const fs = await ConfinedFs.create(ws);
    assert.equal(await fs.mkdirp("x/y/z"), "x/y/z");
    assert.ok(statSync(join(ws, "x/y/z")).isDirectory());
    await assert.rejects(fs.mkdirp("out-link/made"), (err: unknown) => LurkError.is(err) && err.code === "PATH_ESCAPE");
    assert.ok(!existsSync(join(outside, "made")));
    await assert.rejects(fs.unlink("out-link/swap/file.txt"), (err: unknown) => LurkError.is(err) && err.code === "PATH_ESCAPE");
    await assert.rejects(fs.unlink("out-link"), (err: unknown) => LurkError.is(err) && err.code === "TOOL_INVALID_ARGS");
    assert.ok(existsSync(join(outside, "swap", "file.txt")));
    writeFileSync(join(ws, "x", "del.txt"), "d");
    assert.equal(await fs.unlink("x/del.txt"), "x/del.txt");
    assert.ok(!existsSync(join(ws, "x", "del.txt")));
  });

  it("refuses a write whose file changed since it was read (ifUnchanged)", async () => {
    writeFileSync(join(ws, "rmw.txt"), "v1");
    const fs = await ConfinedFs.create(ws);
    const read = await fs.readForEdit("rmw.txt", { maxBytes: 100 });
    writeFileSync(join(ws, "rmw.txt"), "v2 by someone else");
    await assert.rejects(fs.writeFileAtomic("rmw.txt", "v1 edited", { ifUnchanged: read.stat }), (err: unknown) => LurkError.is(err) && err.code === "CONFLICT");
    assert.equal(readFileSync(join(ws, "rmw.txt"), "utf8"), "v2 by someone else");
  });
});
