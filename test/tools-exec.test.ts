/**
 * The `exec` tool over the bus: the tools actor as a real child process on a real nats-server,
 * called as the agent-runner user. In the bubblewrap sandbox: output and exit codes, the
 * workspace is writable and the system is not, no network (not even the nats-server on
 * loopback), no secrets in the environment, the deadline kills the command and everything it
 * started, background jobs and fork bombs leave no process behind, and long output is capped
 * with the whole of it saved for `read`. Without bubblewrap: refused with SANDBOX_UNAVAILABLE,
 * or run unsandboxed when the config opts out.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Svcm } from "@nats-io/services";
import type { ToolCallReply } from "../shared/contract/index.js";
import { waitFor } from "./harness/actors.js";
import { startToolsActor, textOf, toolCaller, type ToolsActorUnderTest } from "./harness/tools-actor.js";

const CAP = 4096;
const FAKE_OPENAI_KEY = "sk-FAKE-exec-test-0123456789abcdef";
const BWRAP = "/usr/bin/bwrap";

/** pids of processes whose cwd is inside `dir` or whose command line mentions `marker` */
function processesIn(dir: string, marker?: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cwd = readlinkSync(`/proc/${entry}/cwd`);
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ");
      if (cwd === dir || cwd.startsWith(`${dir}/`) || (marker && cmdline.includes(marker))) found.push(Number(entry));
    } catch {
      // gone, or a zombie
    }
  }
  return found;
}

interface Fixture extends ToolsActorUnderTest {
  ws: string;
  call(command: string, extra?: Record<string, unknown>, tool?: string): Promise<ToolCallReply>;
  /** any tool with any arguments */
  callTool(tool: string, args: Record<string, unknown>): Promise<ToolCallReply>;
  metadata(): Promise<Record<string, string>>;
}

async function startFixture(exec: Record<string, unknown>, env: Record<string, string> = {}): Promise<Fixture> {
  const ws = realpathSync(mkdtempSync(join(tmpdir(), "lurk-exec-ws-")));
  const sut = await startToolsActor(ws, { tools: { outputCapBytes: CAP, timeoutMs: 20_000, exec } }, env);
  const { call } = toolCaller(() => sut.client, { idPrefix: "exec-call" });
  return {
    ...sut, ws,
    call: (command, extra = {}, tool = "exec") => call(tool, { command }, extra),
    callTool: (tool, args) => call(tool, args),
    async metadata() {
      // `lurkbot status` reads $SRV.INFO; agent-runner may not
      const admin = await sut.nats.connect("admin");
      try {
        for await (const info of await new Svcm(admin).client().info("tools")) return info.metadata ?? {};
        throw new Error("no tools service info");
      } finally {
        await admin.close();
      }
    },
    async stop() {
      await sut.stop();
      rmSync(ws, { recursive: true, force: true });
    },
  };
}

describe("exec in the bubblewrap sandbox", { skip: existsSync(BWRAP) ? false : "bubblewrap is not installed" }, () => {
  let f: Fixture;
  let meta: Record<string, string>;

  before(async () => {
    f = await startFixture({ maxProcesses: 64, cpuSeconds: 77, maxOpenFiles: 333, maxFileSizeMb: 1, memoryMb: 2048 }, { OPENAI_API_KEY: FAKE_OPENAI_KEY, ANTHROPIC_API_KEY: "sk-ant-FAKE-exec-test" });
    meta = await f.metadata();
  });
  after(async () => {
    await f?.stop();
  });

  it("exports the sandbox mode as service metadata and lists exec in the catalog", async () => {
    assert.equal(meta.sandbox, "bwrap");
    assert.match(meta.execPids ?? "", /^(cgroup|rlimit)$/);
    const list = await f.client.call("tools", "list", {});
    const exec = list.tools.find((t) => t.name === "exec");
    assert.ok(exec, "exec is listed");
    assert.equal(exec.sideEffects, true);
    assert.equal(exec.parallelSafe, false);
    assert.deepEqual(exec.groups, ["group:runtime"]);
    assert.equal(list.tools.find((t) => t.name === "bash"), undefined, "the alias is not a second catalog entry");
  });

  it("runs a command and reports its output and exit code", async () => {
    const ok = await f.call("echo hello; echo oops >&2; echo bye");
    assert.equal(ok.isError, false, textOf(ok));
    assert.equal(textOf(ok), "hello\noops\nbye\n[exit code 0]");
    const failed = await f.call("echo partial; exit 3");
    assert.equal(failed.isError, true);
    assert.equal(failed.errorCode, "TOOL_FAILED");
    assert.equal(textOf(failed), "partial\n[exit code 3]");
    const alias = await f.call("echo via-bash", {}, "bash");
    assert.equal(textOf(alias), "via-bash\n[exit code 0]");
    const empty = await f.call("true");
    assert.equal(textOf(empty), "(no output)\n[exit code 0]");
  });

  it("works in the workspace: files written there are visible outside", async () => {
    const reply = await f.call("pwd; echo made-inside > inside.txt; mkdir -p sub && echo deeper > sub/file.txt; echo $HOME");
    assert.equal(reply.isError, false, textOf(reply));
    assert.equal(textOf(reply), `${f.ws}\n${f.ws}\n[exit code 0]`);
    assert.equal(readFileSync(join(f.ws, "inside.txt"), "utf8"), "made-inside\n");
    assert.equal(readFileSync(join(f.ws, "sub", "file.txt"), "utf8"), "deeper\n");
  });

  it("cannot write to the system, and does not see /etc/shadow", async () => {
    const marker = `lurk-exec-${process.pid}-${Date.now()}`;
    const reply = await f.call(`touch /usr/${marker} || echo usr-refused; echo x >> /etc/passwd || echo etc-refused; `
      + `touch /etc/${marker} || echo etc-new-refused; touch /${marker} || echo root-refused; cat /etc/shadow >/dev/null 2>&1 || echo no-shadow; echo tmp > /tmp/t && cat /tmp/t`);
    const text = textOf(reply);
    for (const expected of ["usr-refused", "etc-refused", "etc-new-refused", "root-refused", "no-shadow", "tmp\n"]) assert.ok(text.includes(expected), `${expected} in ${text}`);
    assert.ok(!existsSync(`/usr/${marker}`));
    assert.ok(!existsSync(`/etc/${marker}`));
    assert.match(readFileSync("/etc/passwd", "utf8"), /^root:/);
  });

  it("has no network: neither the nats-server on loopback nor any outside address", async () => {
    const probe = (host: string, port: number) => `(exec 3<>/dev/tcp/${host}/${port}) 2>/dev/null && echo CONNECTED-${host} || echo REFUSED-${host}`;
    const reply = await f.call([probe("127.0.0.1", f.nats.port), probe("1.1.1.1", 53), probe("8.8.8.8", 443)].join("; "));
    const text = textOf(reply);
    assert.ok(!text.includes("CONNECTED"), text);
    for (const host of ["127.0.0.1", "1.1.1.1", "8.8.8.8"]) assert.ok(text.includes(`REFUSED-${host}`), text);
    // and the same port is reachable from outside the sandbox, so the refusal is the sandbox's
    const { createConnection } = await import("node:net");
    await new Promise<void>((resolve, reject) => {
      const socket = createConnection(f.nats.port, "127.0.0.1", () => {
        socket.destroy();
        resolve();
      });
      socket.once("error", reject);
    });
  });

  it("runs with a clean environment: no secrets, no LURKBOT_* variables", async () => {
    const reply = await f.call("env");
    const text = textOf(reply);
    assert.equal(reply.isError, false);
    assert.match(text, /^PATH=/m);
    assert.match(text, new RegExp(`^HOME=${f.ws}$`, "m"));
    assert.ok(!/LURKBOT_|_API_KEY|NATS/.test(text), text);
    for (const secret of [FAKE_OPENAI_KEY, "sk-ant-FAKE-exec-test", f.nats.password("tools")]) assert.ok(!text.includes(secret), "a secret leaked");
    // nor through /proc of the actor (a separate pid namespace)
    const proc = await f.call(`cat /proc/${f.tools.child.pid}/environ 2>/dev/null | tr '\\0' '\\n' | grep -c API_KEY || true; ls /proc | grep -c '^[0-9]'`);
    assert.ok(!textOf(proc).includes(FAKE_OPENAI_KEY));
    assert.ok(Number(textOf(proc).split("\n")[1]) <= 5, `only the sandbox's own processes are visible: ${textOf(proc)}`);
  });

  it("applies the configured resource limits", async () => {
    const reply = await f.call("ulimit -t; ulimit -n; ulimit -v; ulimit -f; head -c 2000000 /dev/zero > big.bin; echo rc=$?; stat -c %s big.bin");
    assert.match(textOf(reply), /^77\n333\n2097152\n1024\n(.*File size limit exceeded.*\n)?rc=(153|1)\n1048576\n\[exit code 0\]$/s);
  });

  it("kills a command at the deadline, in about the deadline", async () => {
    const started = Date.now();
    const reply = await f.call("echo before; sleep 30; echo after", { timeoutMs: 1_000 });
    const took = Date.now() - started;
    assert.equal(reply.isError, true);
    assert.equal(reply.errorCode, "TIMEOUT");
    assert.match(textOf(reply), /^before\n\[the (command|exec tool) ran longer than 1000 ms and was (killed|stopped)\]$/);
    assert.ok(took < 3_000, `took ${took} ms`);
    await waitFor(() => processesIn(f.ws).length === 0, 3_000, "no process left in the workspace");
    const viaArgs = await f.callTool("exec", { command: "sleep 30", timeoutSeconds: 1 });
    assert.equal(viaArgs.errorCode, "TIMEOUT");
    assert.ok(viaArgs.durationMs < 3_000);
  });

  it("leaves no background child behind", async () => {
    const marker = `lurkbg${process.pid}`;
    const started = Date.now();
    const reply = await f.call(`(exec -a ${marker} sleep 300) & (setsid sleep 301 &) ; nohup sleep 302 >/dev/null 2>&1 & echo started`);
    assert.equal(textOf(reply), "started\n[exit code 0]");
    assert.ok(Date.now() - started < 5_000);
    await waitFor(() => processesIn(f.ws, marker).length === 0, 3_000, "the background sleeps are gone");
  });

  it("bounds a fork bomb by the process limit and kills all of it at the deadline", async (t) => {
    if (meta.execPids !== "cgroup" && process.getuid?.() === 0) {
      t.skip("as root without a pids cgroup the kernel ignores RLIMIT_NPROC; a fork bomb would be bounded by the deadline only");
      return;
    }
    const started = Date.now();
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, processesIn(f.ws).length)), 100);
    const reply = await f.call(":(){ :|:& };:; sleep 5", { timeoutMs: 2_000 }).finally(() => clearInterval(sampler));
    assert.ok(Date.now() - started < 6_000, `took ${Date.now() - started} ms`);
    assert.ok(peak > 8 && peak <= 64 + 4, `at most maxProcesses (64) at once, saw ${peak}`);
    assert.equal(reply.isError, true);
    await waitFor(() => processesIn(f.ws).length === 0, 5_000, "every fork is gone");
    // and the actor still serves
    assert.equal(textOf(await f.call("echo alive")), "alive\n[exit code 0]");
  });

  it("caps long output, saves all of it in the workspace, and read pages through it", async () => {
    const expected = Array.from({ length: 20_000 }, (_, i) => `${i + 1}\n`).join("");
    const reply = await f.call("seq 1 20000");
    const text = textOf(reply);
    assert.equal(reply.isError, false);
    assert.ok(Buffer.byteLength(text) <= CAP, `${Buffer.byteLength(text)} bytes`);
    assert.ok(text.startsWith("1\n2\n3\n"), text.slice(0, 50));
    assert.match(text, /19999\n20000\n\[exit code 0\]$/);
    assert.ok(reply.truncated, "truncated is set");
    assert.equal(reply.truncated.fullOutputPath, `.lurkbot/outputs/exec-call-${/exec-call-(\d+)/.exec(reply.toolCallId)![1]}.txt`);
    assert.equal(reply.truncated.totalBytes, Buffer.byteLength(expected));
    assert.match(text, new RegExp(`saved in ${reply.truncated.fullOutputPath.replaceAll(".", "\\.")}`));
    assert.equal(readFileSync(join(f.ws, reply.truncated.fullOutputPath), "utf8"), expected);

    const read = await f.callTool("read", { path: reply.truncated.fullOutputPath, offset: 12_345, limit: 2 });
    assert.match(textOf(read), /^ 12345\t12345\n 12346\t12346\n/);
  });

  it("does not follow a symlink planted where outputs are saved", async () => {
    const outside = mkdtempSync(join(tmpdir(), "lurk-exec-outside-"));
    try {
      const reply = await f.call(`rm -rf .lurkbot && mkdir .lurkbot && ln -s ${outside} .lurkbot/outputs && seq 1 5000`);
      assert.equal(reply.truncated, undefined);
      assert.match(textOf(reply), /could not be saved/);
      assert.deepEqual(readdirSync(outside), []);
    } finally {
      rmSync(outside, { recursive: true, force: true });
      rmSync(join(f.ws, ".lurkbot"), { recursive: true, force: true });
    }
  });
});

describe("exec without bubblewrap", () => {
  it("is refused with SANDBOX_UNAVAILABLE and says how to fix it", async () => {
    const f = await startFixture({ bwrapPath: "/nonexistent/bwrap" });
    try {
      assert.equal((await f.metadata()).sandbox, "unavailable");
      const reply = await f.call("echo should-not-run > ran.txt");
      assert.equal(reply.isError, true);
      assert.equal(reply.errorCode, "SANDBOX_UNAVAILABLE");
      assert.match(textOf(reply), /\/nonexistent\/bwrap/);
      assert.match(textOf(reply), /apt-get install bubblewrap/);
      assert.match(textOf(reply), /allowUnsandboxed/);
      assert.ok(!existsSync(join(f.ws, "ran.txt")));
    } finally {
      await f.stop();
    }
  });

  it("is refused when bwrap is there but cannot create its sandbox", async () => {
    const f = await startFixture({ bwrapPath: "/bin/false" });
    try {
      assert.equal((await f.metadata()).sandbox, "unavailable");
      const reply = await f.call("echo hi");
      assert.equal(reply.errorCode, "SANDBOX_UNAVAILABLE");
      assert.match(textOf(reply), /cannot create its sandbox/);
    } finally {
      await f.stop();
    }
  });

  it("runs unsandboxed with allowUnsandboxed: clean env, deadline and group kill still apply", async () => {
    const f = await startFixture({ bwrapPath: "/nonexistent/bwrap", allowUnsandboxed: true }, { OPENAI_API_KEY: FAKE_OPENAI_KEY });
    try {
      assert.equal((await f.metadata()).sandbox, "none");
      const reply = await f.call("pwd; env");
      const text = textOf(reply);
      assert.equal(reply.isError, false, text);
      assert.ok(text.startsWith(`${f.ws}\n`), text);
      assert.ok(!/LURKBOT_|_API_KEY/.test(text) && !text.includes(FAKE_OPENAI_KEY), text);
      assert.match(text, /ran WITHOUT a sandbox/);

      const marker = `lurkbgnone${process.pid}`;
      const bg = await f.call(`(exec -a ${marker} sleep 300) & echo started`);
      assert.match(textOf(bg), /^started\n/);
      await waitFor(() => processesIn(f.ws, marker).length === 0, 3_000, "the background sleep is gone");

      const started = Date.now();
      const slow = await f.call("sleep 30", { timeoutMs: 1_000 });
      assert.equal(slow.errorCode, "TIMEOUT");
      assert.ok(Date.now() - started < 3_000);
      await waitFor(() => processesIn(f.ws).length === 0, 3_000, "no process left in the workspace");
    } finally {
      await f.stop();
    }
  });
});
