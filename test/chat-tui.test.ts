/**
 * `lurkbot chat`'s own commands on the whole system (nats-server, sessions, approvals, tools,
 * router, agent-runner as processes, the fake OpenAI server; agents main and other): `!command`
 * runs in the operator's shell here and never reaches the bus (asked once on a terminal,
 * refused on piped input without --allow-shell, stopped by Ctrl-C and by the time limit with
 * its process group, and killed with it when chat ends by SIGTERM or SIGHUP), `/agent ID` switches the agent of the next runs (an unknown one is
 * answered by the router and chat goes back), thinking deltas show apart from the answer only
 * with --thinking or /thinking on, and /help shows chat's commands and then the router's.
 * Chat runs as a real `lurkbot chat` process (piped input), or in this process with streams
 * that claim to be a terminal (the y/N question).
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { safeParseJson, subjects } from "../shared/contract/index.js";
import { MediaStore } from "../shared/runtime/media.js";
import { MEDIA_DEFAULTS } from "../shared/runtime/config-media.js";
import { chat } from "../services/cli/chat.js";
import { parseLocalLine } from "../services/cli/chat-local.js";
import { runLocalShell } from "../services/cli/chat-shell.js";
import { waitFor } from "./harness/actors.js";
import { CLI_MAIN, runCli } from "./harness/cli.js";
import { TestSystem } from "./harness/system.js";

const s = subjects();
const ANSI = /\x1b\[[0-9;]*[A-Za-z]/g;

/** true while a process with that pid exists */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** true while that pid runs (a zombie nobody reaped yet counts as ended) */
function running(pid: number): boolean {
  if (!alive(pid)) return false;
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

describe("chat's local lines (parsing) and the local shell runner", () => {
  it("`!` starts a shell line only as the first character and with a command; /agent ids follow the contract", () => {
    assert.deepEqual(parseLocalLine("!ls -l"), { kind: "shell", command: "ls -l" });
    assert.equal(parseLocalLine("!"), undefined, "a lone ! is a message");
    assert.equal(parseLocalLine("!   "), undefined);
    assert.equal(parseLocalLine("  !ls"), undefined, "leading spaces: a message");
    assert.equal(parseLocalLine("wow!"), undefined);
    assert.deepEqual(parseLocalLine("/agent"), { kind: "agent" });
    assert.deepEqual(parseLocalLine("/agent work_2"), { kind: "agent", id: "work_2" });
    const bad = parseLocalLine("/agent Work!");
    assert.equal(bad?.kind, "agent-invalid");
    assert.match((bad as { reason: string }).reason, /lower-case letters, digits/);
    assert.equal(parseLocalLine("/agents"), undefined, "not chat's: goes to the router as text");
    assert.deepEqual(parseLocalLine("/thinking on"), { kind: "thinking", on: true });
    assert.deepEqual(parseLocalLine("/thinking OFF"), { kind: "thinking", on: false });
    assert.deepEqual(parseLocalLine("/thinking maybe"), { kind: "thinking-invalid", value: "maybe" });
    assert.equal(parseLocalLine("/think high"), undefined, "the router's thinking level");
    assert.deepEqual(parseLocalLine("/help"), { kind: "help" });
  });

  it("streams stdout and stderr, reports the exit code, and caps what it prints", async () => {
    let text = "";
    const r = await runLocalShell("echo out; echo err >&2; exit 3", { cwd: tmpdir(), env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, timeoutMs: 10_000, maxOutputBytes: 1000, write: (t) => (text += t) });
    assert.equal(r.code, 3);
    assert.match(text, /out\n/);
    assert.match(text, /err\n/);
    let capped = "";
    const big = await runLocalShell("head -c 5000 /dev/zero | tr '\\0' x", { cwd: tmpdir(), env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, timeoutMs: 10_000, maxOutputBytes: 100, write: (t) => (capped += t) });
    assert.equal(big.code, 0);
    assert.equal(capped, "x".repeat(100));
    assert.equal(big.hiddenBytes, 4900);
  });
});

describe("lurkbot chat: !command, /agent, thinking, /help (whole system, fake LLM)", () => {
  let system: TestSystem;
  let admin: NatsConnection;
  let env: Record<string, string>;
  let dir: string;
  /** every inbound message the terminal channel published (text) */
  const inbound: string[] = [];
  /** every run request the router dispatched */
  const runs: Array<{ agentId: string; sessionKey: string; inputs: string }> = [];

  before(async () => {
    system = await TestSystem.start({
      config: { agents: [{ id: "main", default: true }, { id: "other" }] },
    });
    admin = await system.nats.connect("admin");
    admin.subscribe(s.inbound("cli"), { callback: (_e, m) => void inbound.push((safeParseJson(m.data) as { text: string }).text) });
    admin.subscribe(s.runRequestAll, {
      callback: (_e, m) => {
        const r = safeParseJson(m.data) as { agentId: string; sessionKey: string; inputs: unknown[] };
        runs.push({ agentId: r.agentId, sessionKey: r.sessionKey, inputs: JSON.stringify(r.inputs) });
      },
    });
    await admin.flush();
    env = system.nats.env({ ...system.nats.passwordEnv("cli"), SHELL: "/bin/sh" });
    dir = realpathSync(mkdtempSync(join(tmpdir(), "lurk-chat-tui-")));
  });
  after(async () => {
    await admin?.close();
    await system?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** `lurkbot chat ARGS` in `dir` with piped input, its output read as it comes */
  function startChat(args: string[]) {
    const child: ChildProcess = spawn(process.execPath, [CLI_MAIN, "chat", ...args], { env, cwd: dir, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
    const see = <T>(check: (out: string) => T, what: string, timeoutMs = 20_000) =>
      waitFor(() => check(out), timeoutMs, what).catch((e: Error) => assert.fail(`${e.message}; chat output:\n${out}${err}`));
    return { child, exited, see, out: () => out, err: () => err, write: (text: string) => child.stdin!.write(text), end: (text: string) => child.stdin!.end(text) };
  }

  it("!echo runs in chat's directory and shows its output; nothing reaches the router or the model", async () => {
    const requests = system.fake.requests.length;
    const r = await runCli(["chat", "--session", "shell", "--allow-shell"], env, { input: "!echo hello-$((6*7))\n!echo oops >&2; exit 3\nplain message\n/exit\n" });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^hello-42$/m);
    assert.match(r.stdout, /^exit code 3$/m);
    assert.match(r.stdout, /^oops$/m);
    assert.match(r.stdout, /lurkbot> echo: .*plain message/, "a message after the commands is answered");
    assert.deepEqual(inbound.filter((t) => /echo|pwd|hello|oops/.test(t) && !/plain message/.test(t)), [], "no !command was published");
    assert.ok(!inbound.some((t) => t.startsWith("!")), inbound.join(" | "));
    assert.equal(system.fake.requests.length, requests + 1, "the model saw only the plain message");
  });

  it("!pwd: the command runs where chat was started", async () => {
    const c = startChat(["--session", "shell-dir", "--allow-shell"]);
    try {
      c.end("!pwd\n/exit\n");
      assert.equal(await c.exited, 0, c.err());
      assert.match(c.out(), new RegExp(`^${dir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`, "m"));
    } finally {
      c.child.kill("SIGKILL");
    }
  });

  it("piped input without --allow-shell: a !command is refused with how to enable it, and does not run", async () => {
    const marker = join(dir, "should-not-exist");
    const r = await runCli(["chat", "--session", "noshell"], env, { input: `!touch ${marker}\nstill talking\n/exit\n` });
    assert.equal(r.code, 1, "a refused command is a failure of the piped chat");
    assert.match(r.stdout, /!command refused: .*input is not a terminal.*`lurkbot chat --allow-shell`/);
    assert.match(r.stdout, /lurkbot> echo: .*still talking/);
    assert.equal(existsSync(marker), false);
    assert.ok(!inbound.some((t) => t.includes(marker)));
  });

  it("on a terminal the first !command asks once: no keeps the shell off for the chat, yes runs it and does not ask again", async () => {
    const nc = await system.nats.connect("cli");
    const media = new MediaStore(nc, MEDIA_DEFAULTS);
    /** chat() on streams that say they are a terminal */
    const terminalChat = (session: string) => {
      const input = Object.assign(new PassThrough(), { isTTY: true });
      const output = Object.assign(new PassThrough(), { isTTY: true });
      let text = "";
      output.on("data", (d: Buffer) => (text += d.toString()));
      const done = chat(nc, { prefix: system.nats.prefix, session, timeoutMs: 20_000, media, downloadsDir: join(dir, "downloads"), input, output, cwd: dir, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", SHELL: "/bin/sh" } });
      const plain = () => text.replace(ANSI, "");
      const see = (check: (t: string) => boolean, what: string) => waitFor(() => check(plain()), 20_000, what).catch((e: Error) => assert.fail(`${e.message}; chat output:\n${plain()}`));
      return { done, plain, see, type: (line: string) => input.write(`${line}\r`) };
    };
    const asked = (t: string) => (t.match(/Allow local shell commands for this chat\?/g) ?? []).length;
    try {
      const no = terminalChat("tty-no");
      const first = join(dir, "declined-1");
      const second = join(dir, "declined-2");
      no.type(`!touch ${first}`);
      await no.see((t) => asked(t) === 1, "the question");
      assert.match(no.plain(), /your own shell \(\/bin\/sh\) on this machine, without a sandbox\. \[y\/N\]/);
      no.type("n");
      await no.see((t) => /stay off for this chat/.test(t), "the refusal");
      no.type(`!touch ${second}`);
      await no.see((t) => /off for this chat \(declined\)/.test(t), "still off");
      no.type("/exit");
      assert.equal(await no.done, 0);
      assert.equal(asked(no.plain()), 1, "asked once");
      assert.ok(!existsSync(first) && !existsSync(second), "neither command ran");

      const yes = terminalChat("tty-yes");
      yes.type("!echo first-$((1+1))");
      await yes.see((t) => asked(t) === 1, "the question");
      yes.type("y");
      await yes.see((t) => /^first-2$/m.test(t), "the first command's output");
      yes.type("!echo second-$((1+2))");
      await yes.see((t) => /^second-3$/m.test(t), "the second command's output");
      yes.type("/exit");
      assert.equal(await yes.done, 0);
      assert.equal(asked(yes.plain()), 1, "not asked again");
      assert.ok(!inbound.some((t) => /first-|second-|touch/.test(t)), "nothing was published");
    } finally {
      await nc.close();
    }
  });

  it("Ctrl-C (SIGINT) stops a running !command and its process group, and chat goes on", async () => {
    const c = startChat(["--session", "sigint", "--allow-shell"]);
    try {
      c.write("!sleep 60 & echo bg:$!; echo fg:$$; exec sleep 61\n");
      const bg = Number(await c.see((o) => /^bg:(\d+)$/m.exec(o)?.[1], "the background pid"));
      const fg = Number(await c.see((o) => /^fg:(\d+)$/m.exec(o)?.[1], "the shell's pid"));
      assert.ok(alive(fg) && alive(bg));
      c.child.kill("SIGINT");
      await c.see((o) => /^stopped \(Ctrl-C\)$/m.test(o), "the stop");
      await waitFor(() => !alive(fg) && !alive(bg), 10_000, "the command's group to end");
      c.write("!echo still-here\n");
      await c.see((o) => /^still-here$/m.test(o), "the next command");
      c.end("/exit\n");
      assert.equal(await c.exited, 0, c.err());
    } finally {
      c.child.kill("SIGKILL");
    }
  });

  it("a !command that runs past --shell-timeout is stopped with its group", async () => {
    const c = startChat(["--session", "timeout", "--allow-shell", "--shell-timeout", "1"]);
    try {
      c.write("!sleep 60 & echo bg:$!; echo fg:$$; exec sleep 61\n");
      const bg = Number(await c.see((o) => /^bg:(\d+)$/m.exec(o)?.[1], "the background pid"));
      const fg = Number(await c.see((o) => /^fg:(\d+)$/m.exec(o)?.[1], "the shell's pid"));
      await c.see((o) => /^stopped: the command ran past the 1 s limit \(--shell-timeout SEC\)$/m.test(o), "the time limit");
      await waitFor(() => !alive(fg) && !alive(bg), 10_000, "the command's group to end");
      c.end("/exit\n");
      assert.equal(await c.exited, 0, c.err());
    } finally {
      c.child.kill("SIGKILL");
    }
  });

  it("chat ended by SIGTERM or SIGHUP (a closed terminal) while a !command runs: the command's group is killed, chat ends by the signal", async () => {
    for (const sig of ["SIGTERM", "SIGHUP"] as const) {
      const c = startChat(["--session", `ended-${sig.toLowerCase()}`, "--allow-shell"]);
      try {
        c.write(`!sleep 300 & echo bg:$!; echo fg:$$; echo marker-${sig}; exec sleep 301\n`);
        await c.see((o) => o.includes(`marker-${sig}`), "the command's marker");
        const bg = Number(await c.see((o) => /^bg:(\d+)$/m.exec(o)?.[1], "the background pid"));
        const fg = Number(await c.see((o) => /^fg:(\d+)$/m.exec(o)?.[1], "the shell's pid"));
        assert.ok(alive(fg) && alive(bg));
        c.child.kill(sig);
        await c.exited;
        assert.equal(c.child.signalCode, sig, "chat ends as the signal would end it");
        await waitFor(() => !running(fg) && !running(bg), 10_000, `the command's group to end after ${sig}`);
      } finally {
        c.child.kill("SIGKILL");
      }
    }
  });

  it("/agent other: the next message runs for agent other in its own session; /agent shows the choice", async () => {
    const before = runs.length;
    const r = await runCli(["chat", "--session", "agents"], env, { input: "/agent\nto the default\n/agent other\nto the other one\n/agent\n/agent Other!\n/exit\n" });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /agent: the router's choice \(its bindings, else the default agent\)/);
    assert.match(r.stdout, /agent: other — the next messages go to it/);
    assert.match(r.stdout, /agent: other \(chosen for this chat; \/agent ID switches\)/);
    assert.match(r.stdout, /\/agent Other!: not an agent id \(agent id: lower-case letters, digits, '-' or '_', at most 64\)\./);
    const mine = runs.slice(before);
    const first = mine.find((x) => x.inputs.includes("to the default"));
    const second = mine.find((x) => x.inputs.includes("to the other one"));
    assert.equal(first?.agentId, "main");
    assert.equal(second?.agentId, "other");
    assert.match(second!.sessionKey, /^agent:other:/);
    assert.match(r.stdout, /lurkbot> echo: .*to the other one/);

    // --agent does the same from the start; a malformed one is a usage error
    const flag = await runCli(["chat", "--session", "agents-flag", "--agent", "other"], env, { input: "flagged\n/exit\n" });
    assert.equal(flag.code, 0, flag.stderr);
    assert.equal(runs.find((x) => x.inputs.includes("flagged"))?.agentId, "other");
    const bad = await runCli(["chat", "--agent", "No Such"], env);
    assert.equal(bad.code, 64);
    assert.match(bad.stderr, /--agent "No Such" is not an agent id \(agent id: lower-case letters/);
  });

  it("/agent ghost: the router answers that no such agent exists, and chat goes back to the previous agent", async () => {
    const r = await runCli(["chat", "--session", "ghost"], env, { input: "/agent ghost\nanyone there?\nand now?\n/exit\n" });
    assert.equal(r.code, 1, "the error reply is a failure of the piped chat");
    assert.match(r.stdout, /lurkbot \(error\)> no agent "ghost"; configured agents: main, other\./);
    assert.match(r.stdout, /agent ghost does not exist on the router; this chat goes back to the default agent/);
    assert.match(r.stdout, /lurkbot> echo: .*and now\?/);
    assert.equal(runs.find((x) => x.inputs.includes("and now?"))?.agentId, "main");
    assert.ok(!runs.some((x) => x.inputs.includes("anyone there?")), "no run for the unknown agent");
  });

  it("thinking deltas show in a thinking> block only with --thinking (or /thinking on), never in the answer", async () => {
    system.fake.enqueue({ kind: "text", text: "The answer is 42.", reasoning: "six times seven" });
    const off = await runCli(["chat", "--session", "think-off"], env, { input: "what is six times seven?\n/exit\n" });
    assert.equal(off.code, 0, off.stderr);
    assert.match(off.stdout, /^lurkbot> The answer is 42\.$/m);
    assert.doesNotMatch(off.stdout, /six times seven|thinking>/, "hidden by default");

    system.fake.enqueue({ kind: "text", text: "The answer is 42.", reasoning: "six times seven" });
    const on = await runCli(["chat", "--session", "think-on", "--thinking"], env, { input: "what is six times seven?\n/exit\n" });
    assert.equal(on.code, 0, on.stderr);
    assert.match(on.stdout, /^thinking> six times seven\nlurkbot> The answer is 42\.$/m);

    // toggled in the chat: shown after /thinking on, hidden again after /thinking off
    system.fake.enqueue(
      { kind: "text", text: "First.", reasoning: "thought one" },
      { kind: "text", text: "Second.", reasoning: "thought two" },
      { kind: "text", text: "Third.", reasoning: "thought three" },
    );
    const toggled = await runCli(["chat", "--session", "think-toggle"], env, { input: "one\n/thinking on\ntwo\n/thinking off\nthree\n/exit\n" });
    assert.equal(toggled.code, 0, toggled.stderr);
    assert.match(toggled.stdout, /^lurkbot> First\.$/m);
    assert.match(toggled.stdout, /^thinking> thought two\nlurkbot> Second\.$/m);
    assert.match(toggled.stdout, /^lurkbot> Third\.$/m);
    assert.doesNotMatch(toggled.stdout, /thought one|thought three/);
  });

  it("/help lists chat's own commands, then the router's", async () => {
    const r = await runCli(["chat", "--session", "help"], env, { input: "/help\n/exit\n" });
    assert.equal(r.code, 0, r.stderr);
    const local = r.stdout.indexOf("Chat (handled in this terminal):");
    const router = r.stdout.indexOf("Commands:");
    assert.ok(local >= 0 && router > local, r.stdout);
    assert.match(r.stdout, /!COMMAND — run COMMAND in your own shell/);
    assert.match(r.stdout, /no sandbox, no approval/);
    for (const c of ["/agent \\[ID\\]", "/thinking on\\|off", "/file PATH", "y / n", "/exit"]) assert.match(r.stdout, new RegExp(c));
    assert.match(r.stdout, /\/new, \/reset \[text\]/, "the router's list");
  });
});
