/**
 * The tools actor as a real child process on a real nats-server, called over the bus as the
 * agent-runner user: the catalog, `read` (paging, caps, images), the path-escape table, and
 * invalid arguments as model-readable errors. Then the confined fs layer directly, for what
 * cannot be staged over the bus: a directory swapped for a symlink between check and open.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { linkSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { LurkError, toolCallReply, toolDefinitionSchema } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { ConfinedFs } from "../services/tools/fs-confined.js";
import type { ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";
import { startToolsActor, textOf } from "./harness/tools-actor.js";

const SECRET = "TOP-SECRET-OUTSIDE-THE-WORKSPACE";
const CAP = 4096;
const PNG_1x1 = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "base64");

describe("tools actor over the bus", () => {
  let nats: TestNats;
  let tools: ActorProcess;
  let nc: NatsConnection;
  let client: BusClient;
  let ws: string;
  let outside: string;
  let n = 0;

  const call = (args: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    client.callSubject("lurk.tools.call.read", "lurk.tools.call.v1", {
      toolCallId: `call-${++n}`,
      runId: "run-1",
      sessionKey: "agent:main:main",
      agentId: "main",
      tool: "read",
      args,
      ...extra,
    }, toolCallReply, { timeoutMs: 30_000 });

  before(async () => {
    ws = mkdtempSync(join(tmpdir(), "lurk-tools-ws-"));
    outside = mkdtempSync(join(tmpdir(), "lurk-tools-outside-"));
    writeFileSync(join(outside, "secret.txt"), `${SECRET}\n`);
    writeFileSync(join(ws, "notes.txt"), "first\nsecond\r\nthird");
    writeFileSync(join(ws, "big.txt"), Array.from({ length: 5000 }, (_, i) => `line ${i + 1}`).join("\n") + "\n");
    writeFileSync(join(ws, "long.txt"), `${"x".repeat(100_000)}\nshort\n`);
    writeFileSync(join(ws, "empty.txt"), "");
    writeFileSync(join(ws, "pic.png"), PNG_1x1);
    writeFileSync(join(ws, "huge.png"), Buffer.concat([PNG_1x1.subarray(0, 16), Buffer.alloc(600 * 1024)]));
    writeFileSync(join(ws, "blob.bin"), Buffer.from([1, 2, 0, 3]));
    mkdirSync(join(ws, "sub"));
    writeFileSync(join(ws, "sub", "inner.txt"), "inner\n");
    symlinkSync(join(outside, "secret.txt"), join(ws, "link-out"));
    symlinkSync(outside, join(ws, "dir-link"));
    symlinkSync("notes.txt", join(ws, "link-in"));
    // a hard link in the workspace to the file outside (same filesystem: both under tmpdir)
    linkSync(join(outside, "secret.txt"), join(ws, "hardlink-out"));
    execFileSync("mkfifo", [join(ws, "pipe")]);

    ({ nats, tools, nc, client } = await startToolsActor(ws, { tools: { outputCapBytes: CAP } }));
  });
  after(async () => {
    await nc?.close();
    await tools?.stop();
    await nats?.stop();
    rmSync(ws, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  it("lists read in the catalog with a JSON Schema of its arguments", async () => {
    const reply = await client.call("tools", "list", {});
    assert.equal(reply.actor, "tools");
    const read = reply.tools.find((t) => t.name === "read");
    assert.ok(read, "read is listed");
    toolDefinitionSchema.parse(read);
    assert.equal(read.actor, "tools");
    assert.equal(read.sideEffects, false);
    assert.equal(read.parallelSafe, true);
    const schema = read.parameters as { type: string; properties: Record<string, { type: string }>; required: string[] };
    assert.equal(schema.type, "object");
    assert.equal(schema.properties.path?.type, "string");
    assert.equal(schema.properties.offset?.type, "integer");
    assert.deepEqual(schema.required, ["path"]);
    assert.equal((read.parameters as Record<string, unknown>).$schema, undefined);
  });

  it("reads a file as numbered lines", async () => {
    const reply = await call({ path: "notes.txt" });
    assert.equal(reply.isError, false);
    assert.equal(reply.toolCallId, `call-${n}`);
    assert.equal(textOf(reply), "     1\tfirst\n     2\tsecond\n     3\tthird\n");
    assert.equal(reply.truncated, undefined);
    assert.ok(reply.durationMs >= 0);
  });

  it("pages with offset and limit, and says where to go on", async () => {
    const reply = await call({ path: "big.txt", offset: 10, limit: 3 });
    assert.equal(reply.isError, false);
    const text = textOf(reply);
    assert.match(text, /^ {4}10\tline 10\n {4}11\tline 11\n {4}12\tline 12\n\[limit of 3 lines reached: showed lines 10-12 .*offset=13\]$/);
    assert.deepEqual(reply.truncated, { fullOutputPath: "big.txt", totalBytes: readFileSync(join(ws, "big.txt")).length });
    const last = await call({ path: "big.txt", offset: 4999 });
    assert.equal(textOf(last), "  4999\tline 4999\n  5000\tline 5000\n");
    assert.equal(last.truncated, undefined);
  });

  it("caps the output at config.tools.outputCapBytes, and following the offsets reads every line once", async () => {
    const seen: number[] = [];
    let offset = 1;
    for (let page = 0; page < 100; page++) {
      const reply = await call({ path: "big.txt", offset });
      assert.equal(reply.isError, false);
      const text = textOf(reply);
      assert.ok(Buffer.byteLength(text) <= CAP, `page ${page} is ${Buffer.byteLength(text)} bytes`);
      for (const m of text.matchAll(/^ *(\d+)\tline (\d+)$/gm)) {
        assert.equal(m[1], m[2]);
        seen.push(Number(m[1]));
      }
      const next = /offset=(\d+)\]$/.exec(text);
      if (!next) {
        assert.equal(reply.truncated, undefined);
        break;
      }
      assert.match(text, /output capped at 4096 bytes/);
      assert.ok(reply.truncated);
      offset = Number(next[1]);
    }
    assert.deepEqual(seen, Array.from({ length: 5000 }, (_, i) => i + 1));
  });

  it("cuts very long lines and keeps going", async () => {
    const reply = await call({ path: "long.txt" });
    const text = textOf(reply);
    assert.match(text, /^ {5}1\tx{2000} \[\.\.\. line cut at 2000 characters\]\n {5}2\tshort\n$/);
  });

  it("returns an image block for a PNG, refuses one over the image cap, and refuses other binaries", async () => {
    const reply = await call({ path: "pic.png" });
    assert.equal(reply.isError, false);
    const image = reply.content.find((b) => b.type === "image");
    assert.ok(image && image.type === "image");
    assert.equal(image.mime, "image/png");
    assert.equal(image.dataBase64, PNG_1x1.toString("base64"));
    const huge = await call({ path: "huge.png" });
    assert.equal(huge.isError, true);
    assert.equal(huge.errorCode, "LIMIT_EXCEEDED");
    const blob = await call({ path: "blob.bin" });
    assert.equal(blob.isError, true);
    assert.match(textOf(blob), /binary/);
  });

  it("handles empty files, offsets past the end, directories, FIFOs and missing files as results", async () => {
    assert.match(textOf(await call({ path: "empty.txt" })), /empty/);
    const past = await call({ path: "notes.txt", offset: 10 });
    assert.equal(past.errorCode, "TOOL_INVALID_ARGS");
    assert.match(textOf(past), /past the end .* 3 lines/);
    const dir = await call({ path: "sub" });
    assert.equal(dir.errorCode, "TOOL_INVALID_ARGS");
    assert.match(textOf(dir), /directory/);
    const fifo = await call({ path: "pipe" });
    assert.equal(fifo.errorCode, "TOOL_INVALID_ARGS");
    assert.match(textOf(fifo), /not a regular file/);
    const missing = await call({ path: "nope.txt" });
    assert.equal(missing.errorCode, "NOT_FOUND");
  });

  it("follows paths that stay inside the workspace", async () => {
    for (const path of ["link-in", "sub/../notes.txt", "./sub/inner.txt", join(ws, "notes.txt")]) {
      const reply = await call({ path });
      assert.equal(reply.isError, false, `${path}: ${textOf(reply)}`);
    }
  });

  const escapes: Array<[string, () => string, string]> = [
    ["..", () => "..", "PATH_ESCAPE"],
    ["../x", () => "../x", "PATH_ESCAPE"],
    ["../<outside>/secret.txt", () => `../${basename(outside)}/secret.txt`, "PATH_ESCAPE"],
    ["sub/../../x", () => "sub/../../x", "PATH_ESCAPE"],
    ["absolute /etc/passwd", () => "/etc/passwd", "PATH_ESCAPE"],
    ["absolute path of the outside file", () => join(outside, "secret.txt"), "PATH_ESCAPE"],
    ["a symlink to a file outside", () => "link-out", "PATH_ESCAPE"],
    ["a symlinked directory in the middle", () => "dir-link/secret.txt", "PATH_ESCAPE"],
    ["a hard link to a file outside", () => "hardlink-out", "PATH_ESCAPE"],
    ["a NUL byte", () => "notes.txt\u0000../../etc/passwd", "TOOL_INVALID_ARGS"],
  ];
  for (const [name, path, code] of escapes) {
    it(`refuses ${name} (${code}) without reading anything outside`, async () => {
      const reply = await call({ path: path() });
      assert.equal(reply.isError, true);
      assert.equal(reply.errorCode, code, textOf(reply));
      const text = textOf(reply);
      assert.ok(!text.includes(SECRET) && !text.includes("root:"), text);
      assert.match(text, code === "PATH_ESCAPE" ? /outside the workspace/ : /NUL/);
    });
  }

  it("answers invalid arguments with isError TOOL_INVALID_ARGS and a message naming the field", async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{}, /path/],
      [{ path: 42 }, /path/],
      [{ path: "" }, /path/],
      [{ path: "notes.txt", offset: 0 }, /offset/],
      [{ path: "notes.txt", limit: "ten" }, /limit/],
    ];
    for (const [args, field] of cases) {
      const reply = await call(args);
      assert.equal(reply.isError, true, JSON.stringify(args));
      assert.equal(reply.errorCode, "TOOL_INVALID_ARGS");
      assert.match(textOf(reply), field);
      assert.match(textOf(reply), /invalid arguments for read/);
    }
    // and the actor still serves
    assert.equal((await call({ path: "notes.txt" })).isError, false);
  });

  it("gives malformed requests typed error replies (tool/subject mismatch, unknown agent)", async () => {
    await assert.rejects(call({ path: "notes.txt" }, { tool: "write" }), (err: unknown) => LurkError.is(err) && err.code === "VALIDATION_FAILED");
    await assert.rejects(call({ path: "notes.txt" }, { agentId: "ghost" }), (err: unknown) => LurkError.is(err) && err.code === "NOT_FOUND");
  });
});

// async fs calls (the actor's own thread) and synchronous ones (tool workers: `syncIo`)
for (const syncIo of [false, true]) describe(`confined fs layer${syncIo ? " (syncIo, as in tool workers)" : ""}`, () => {
  let ws: string;
  let outside: string;

  before(() => {
    ws = mkdtempSync(join(tmpdir(), "lurk-cfs-ws-"));
    outside = mkdtempSync(join(tmpdir(), "lurk-cfs-outside-"));
    mkdirSync(join(outside, "swap"));
    writeFileSync(join(outside, "swap", "file.txt"), SECRET);
    writeFileSync(join(outside, "secret.txt"), SECRET);
  });
  after(() => {
    rmSync(ws, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  it("refuses a directory swapped for a symlink between the check and the open", async () => {
    mkdirSync(join(ws, "swap"));
    writeFileSync(join(ws, "swap", "file.txt"), "inside");
    let swapped = false;
    const fs = await ConfinedFs.create(ws, {
      syncIo,
      beforeOpen: () => {
        renameSync(join(ws, "swap"), join(ws, "swap-old"));
        symlinkSync(join(outside, "swap"), join(ws, "swap"));
        swapped = true;
      },
    });
    await assert.rejects(fs.readFile("swap/file.txt", { maxBytes: 1024 }), (err: unknown) => {
      assert.ok(LurkError.is(err));
      assert.equal(err.code, "PATH_ESCAPE");
      assert.match(err.message, /changed while it was opened/);
      assert.ok(!err.message.includes(SECRET));
      return true;
    });
    assert.ok(swapped, "the swap happened after the pre-check");
    // the race was real: the same path now leads outside
    assert.equal(readFileSync(join(ws, "swap", "file.txt"), "utf8"), SECRET);
  });

  it("refuses a file swapped for a symlink between the check and the open", async () => {
    writeFileSync(join(ws, "plain.txt"), "inside");
    const fs = await ConfinedFs.create(ws, {
      syncIo,
      beforeOpen: () => {
        rmSync(join(ws, "plain.txt"));
        symlinkSync(join(outside, "secret.txt"), join(ws, "plain.txt"));
      },
    });
    await assert.rejects(fs.readFile("plain.txt", { maxBytes: 1024 }), (err: unknown) => LurkError.is(err) && err.code === "PATH_ESCAPE");
  });

  it("reads inside the workspace with a byte cap", async () => {
    writeFileSync(join(ws, "ten.txt"), "0123456789");
    const fs = await ConfinedFs.create(ws, { syncIo });
    const capped = await fs.readFile("ten.txt", { maxBytes: 4 });
    assert.equal(capped.data.toString(), "0123");
    assert.equal(capped.truncated, true);
    assert.equal(capped.size, 10);
    const whole = await fs.readFile("ten.txt", { maxBytes: 100 });
    assert.equal(whole.data.toString(), "0123456789");
    assert.equal(whole.truncated, false);
  });

  it("refuses hard-linked files by default (reads and writes alike)", async () => {
    linkSync(join(outside, "secret.txt"), join(ws, "hardlink.txt"));
    writeFileSync(join(ws, "single.txt"), "one link");
    const fs = await ConfinedFs.create(ws, { syncIo });
    for (const opts of [{}, { hardlinks: "refuse" as const }]) {
      await assert.rejects(fs.openRead("hardlink.txt", opts), (err: unknown) => LurkError.is(err) && err.code === "PATH_ESCAPE" && /hard links/.test(err.message));
    }
    await assert.rejects(fs.readFile("hardlink.txt", { maxBytes: 100 }), (err: unknown) => LurkError.is(err) && err.code === "PATH_ESCAPE");
    const single = await fs.openRead("single.txt");
    await single.close();
  });

  it("refuses a workspace that does not exist", async () => {
    await assert.rejects(ConfinedFs.create(join(ws, "missing"), { syncIo }), (err: unknown) => LurkError.is(err) && err.code === "NOT_FOUND");
  });
});
