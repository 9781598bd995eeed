/**
 * Reaching the bus over SSH (shared/runtime/ssh-tunnel.ts, nats.ssh, `--ssh TARGET`), against a
 * REAL sshd on a loopback port (test/harness/sshd.ts) and a real LurkBot bus (nats-server and the
 * core actors): status and send from "a laptop" (another LURKBOT_HOME holding only the cli
 * password), the errors of a wrong key, an unreachable ssh server and a stopped bus, the tunnel
 * reopened after its ssh is killed, `lurkbot start` on "a second host" through one tunnel with no
 * nats-server of its own, and the argument-injection guard. Skipped when /usr/sbin/sshd is missing.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { passwordEnvName } from "../shared/contract/index.js";
import { parseConfig } from "../shared/runtime/config.js";
import { BusClient } from "../shared/runtime/client.js";
import { parseTunnelOptions, sshArgs, SshTunnel } from "../shared/runtime/ssh-tunnel.js";
import { connectCli } from "../services/cli/bus.js";
import { CLI_MAIN, runCli } from "./harness/cli.js";
import { waitFor } from "./harness/actors.js";
import { freePort } from "./harness/nats.js";
import { SSHD_MISSING, sshPids, TestSshd } from "./harness/sshd.js";
import { TestSystem } from "./harness/system.js";

describe("nats.ssh settings", () => {
  it("an option-looking or spaced target is refused by validation before ssh is spawned", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lurk-ssh-guard-"));
    try {
      // a fake "ssh" that would leave a mark if it ever ran
      const fakeSsh = join(dir, "ssh");
      const mark = join(dir, "ran");
      writeFileSync(fakeSsh, `#!/bin/sh\ntouch '${mark}'\n`, { mode: 0o755 });
      for (const target of ["-oProxyCommand=touch /tmp/x", "me@host -oProxyCommand=sh", "me@host\nProxyCommand sh", "ssh://me@host:22", "me@-oProxyCommand=sh", ""]) {
        assert.throws(() => new SshTunnel({ target, sshPath: fakeSsh }), (e: Error) => /invalid ssh tunnel settings: target: /.test(e.message), JSON.stringify(target));
      }
      assert.throws(() => new SshTunnel({ target: "me@host", identityFile: "-oProxyCommand=sh", sshPath: fakeSsh }), /identityFile/);
      assert.throws(() => new SshTunnel({ target: "me@host", strictHostKeyChecking: "no" as never, sshPath: fakeSsh }), /strictHostKeyChecking/);
      assert.ok(!existsSync(mark), "ssh was never spawned");

      // the same through the CLI: exit 78, the reason, and the ProxyCommand never runs
      const home = join(dir, "home");
      const pwned = join(dir, "pwned");
      for (const args of [["status", "--ssh", `-oProxyCommand=touch ${pwned}`], ["send", "hi", `--ssh=-oProxyCommand=touch ${pwned}`]]) {
        const r = await runCli(args, { PATH: `${dir}:${process.env.PATH ?? "/usr/bin:/bin"}`, LURKBOT_HOME: home, [passwordEnvName("cli")]: "p0123456789abcdefghij" });
        assert.equal(r.code, 78, r.stderr);
        assert.match(r.stderr, /nats\.ssh\.target: an ssh target must not start with "-"/);
      }
      assert.ok(!existsSync(pwned) && !existsSync(mark), "nothing was spawned");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("nats.ssh with a remote or listed nats.url is a config error that says why; LURKBOT_NATS_SSH sets the target", () => {
    const home = mkdtempSync(join(tmpdir(), "lurk-ssh-cfg-"));
    try {
      for (const url of ["tls://bus.example.com:4222", "nats://127.0.0.1:4222,nats://127.0.0.2:4222"]) {
        assert.throws(() => parseConfig({ nats: { url, ssh: { target: "me@home" } } }, {}, home),
          (e: Error) => e.message.includes(`nats.ssh (me@home) is set together with nats.url ${url}`) && e.message.includes("Unset nats.url"));
      }
      const cfg = parseConfig({ nats: { ssh: { target: "old@host", identityFile: "keys/id", port: 2222 } } }, { LURKBOT_NATS_SSH: "me@home" }, home);
      assert.deepEqual(cfg.nats.ssh, { target: "me@home", port: 2222, identityFile: join(home, "keys/id"), remoteHost: "127.0.0.1", remotePort: 4222, connectTimeoutMs: 10_000 });
      assert.equal(parseConfig({ nats: { ssh: { target: "me@home" } } }, { LURKBOT_NATS_SSH: "" }, home).nats.ssh, undefined, "an empty LURKBOT_NATS_SSH turns it off");
      assert.throws(() => parseConfig({}, { LURKBOT_NATS_SSH: "-F/tmp/x" }, home), /nats\.ssh\.target: an ssh target must not start with "-"/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it("ssh runs in batch mode with exit on forward failure, keepalives, its own connection, no agent or X11 forwarding, and ssh's host key checking unless set", () => {
    const args = sshArgs(parseTunnelOptions({ target: "me@home", remotePort: 4333, connectTimeoutMs: 4_500 }), 40_001);
    assert.deepEqual(args.slice(0, 6), ["-N", "-T", "-a", "-x", "-L", "127.0.0.1:40001:127.0.0.1:4333"]);
    for (const o of ["ExitOnForwardFailure=yes", "BatchMode=yes", "ServerAliveInterval=15", "ServerAliveCountMax=3", "ConnectTimeout=5", "ControlPath=none", "ForwardAgent=no", "ForwardX11=no", "PermitLocalCommand=no"]) {
      assert.ok(args.some((a, i) => a === o && args[i - 1] === "-o"), o);
    }
    assert.ok(!args.some((a) => a.startsWith("StrictHostKeyChecking")), "ssh's own host key policy by default");
    assert.deepEqual(args.slice(-2), ["--", "me@home"], "the target after --");
    const strict = sshArgs(parseTunnelOptions({ target: "me@home", strictHostKeyChecking: "accept-new", port: 2222, identityFile: "/k", knownHostsFile: "/kh" }), 1);
    for (const pair of [["-o", "StrictHostKeyChecking=accept-new"], ["-p", "2222"], ["-i", "/k"], ["-o", "UserKnownHostsFile=\"/kh\""]]) {
      assert.ok(strict.some((a, i) => a === pair[0] && strict[i + 1] === pair[1]), pair.join(" "));
    }
  });
});

describe("the bus over a real ssh tunnel", { skip: SSHD_MISSING }, () => {
  let sshd: TestSshd;
  let system: TestSystem;
  let laptop: string;
  /** the laptop's environment: its own home, only the cli password (copied from the server), no NATS URL */
  let laptopEnv: Record<string, string>;

  const writeLaptopConfig = (ssh: Record<string, unknown>) => {
    const { target: _target, ...rest } = ssh;
    writeFileSync(join(laptop, "config.json"), JSON.stringify({ nats: { ssh: rest } }));
  };

  before(async () => {
    sshd = await TestSshd.start();
    system = await TestSystem.start();
    laptop = mkdtempSync(join(tmpdir(), "lurk-laptop-"));
    laptopEnv = { PATH: process.env.PATH ?? "/usr/bin:/bin", LURKBOT_HOME: laptop, LURKBOT_LOG_LEVEL: "warn", [passwordEnvName("cli")]: system.nats.password("cli") };
  });
  after(async () => {
    await system?.stop();
    await sshd?.stop();
    if (laptop) rmSync(laptop, { recursive: true, force: true });
  });

  it("status and send with --ssh reach the bus on the other host; the reply arrives and no ssh is left", async () => {
    writeLaptopConfig(sshd.sshConfig(system.nats.port));
    const status = await runCli(["status", "--json", "--ssh", sshd.target], laptopEnv, { timeoutMs: 30_000 });
    assert.equal(status.code, 0, `${status.stderr}\n${sshd.log}`);
    const report = JSON.parse(status.stdout) as { url: string; instances: Array<{ name: string; pid: number }> };
    assert.equal(report.url, `nats://127.0.0.1:${system.nats.port} on ${sshd.target} (through ssh)`);
    for (const name of ["sessions", "router", "agent-runner"]) {
      assert.equal(report.instances.find((i) => i.name === name)?.pid, system.actors.get(name)!.child.pid, name);
    }
    assert.deepEqual(sshPids(sshd.port), [], "status left no ssh behind");

    const send = await runCli(["send", "hello over ssh", "--json", "--timeout", "30", "--ssh", sshd.target], laptopEnv, { timeoutMs: 60_000 });
    assert.equal(send.code, 0, send.stderr);
    const out = JSON.parse(send.stdout) as { reply: string; kind: string };
    assert.equal(out.kind, "reply");
    assert.equal(out.reply, "echo: hello over ssh");
    assert.deepEqual(sshPids(sshd.port), [], "send left no ssh behind");
  });

  it("a key the ssh server does not accept: a non-zero exit naming the authentication failure and the fix, without hanging", async () => {
    writeLaptopConfig(sshd.sshConfig(system.nats.port, { identityFile: sshd.wrongIdentityFile }));
    const r = await runCli(["status", "--ssh", sshd.target], laptopEnv, { timeoutMs: 30_000 });
    assert.equal(r.code, 78, r.stderr);
    assert.match(r.stderr, /cannot reach the bus through ssh .*: ssh authentication to .* failed/);
    assert.match(r.stderr, /authorized_keys/);
    assert.match(r.stderr, /Permission denied \(publickey\)/, "ssh's own words");
    assert.equal(r.stdout, "");
    assert.deepEqual(sshPids(sshd.port), []);
  });

  it("an ssh port nobody listens on: exit 2 with ssh's reason within the connect timeout", async () => {
    const port = await freePort();
    writeLaptopConfig(sshd.sshConfig(system.nats.port, { port, connectTimeoutMs: 5_000 }));
    const started = Date.now();
    const r = await runCli(["status", "--ssh", sshd.target], laptopEnv, { timeoutMs: 30_000 });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`cannot reach the ssh server .* port ${port}: check the address, that sshd runs there and the firewall\\. ssh said: .*Connection refused`));
    assert.ok(Date.now() - started < 5_000 + 5_000, "within the connect timeout (plus node's start-up)");
  });

  it("a working ssh login but no bus behind it: says that nothing listens there", async () => {
    writeLaptopConfig(sshd.sshConfig(await freePort()));
    const r = await runCli(["status", "--ssh", sshd.target], laptopEnv, { timeoutMs: 30_000 });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /the ssh login to .* works, but nothing accepts connections at 127\.0\.0\.1:\d+ on that host: is LurkBot/);
  });

  it("ssh killed mid-session: the tunnel reopens on the same port, the connection comes back and a later request works", async () => {
    const config = parseConfig({ nats: { ssh: sshd.sshConfig(system.nats.port) }, log: { level: "silent" } }, { LURKBOT_HOME: laptop }, laptop);
    const env = { [passwordEnvName("cli")]: system.nats.password("cli") };
    const nc: NatsConnection = await connectCli(config, env, { reconnect: true });
    try {
      const bus = new BusClient(nc, config.nats.prefix);
      await bus.call("sessions", "get", { sessionKey: "agent:main:main" });
      const [first] = sshPids(sshd.port, process.pid);
      assert.ok(first, "this process runs one ssh");
      const server = nc.getServer();
      const reconnected = (async () => {
        for await (const s of nc.status()) if (s.type === "reconnect") return true;
        return false;
      })();
      process.kill(first, "SIGKILL");
      assert.equal(await Promise.race([reconnected, new Promise((r) => setTimeout(() => r("timeout"), 20_000))]), true, "the NATS client reconnected");
      const [second] = sshPids(sshd.port, process.pid);
      assert.ok(second && second !== first, "a new ssh");
      assert.equal(nc.getServer(), server, "the same local port");
      const reply = await bus.call("sessions", "get", { sessionKey: "agent:main:main" });
      assert.ok(reply);
    } finally {
      await nc.close();
    }
    await waitFor(() => sshPids(sshd.port, process.pid).length === 0, 5_000, "the tunnel to close with its last connection");
  });

  it("lurkbot start --ssh on a second host: one tunnel, no nats-server of its own, the actor joins the remote bus; stop closes the tunnel", async () => {
    const host2 = mkdtempSync(join(tmpdir(), "lurk-host2-"));
    try {
      // the second host has a copy of the server's NATS credentials (mode 600)
      mkdirSync(join(host2, "credentials"), { recursive: true, mode: 0o700 });
      copyFileSync(join(system.nats.home, "credentials", "nats.json"), join(host2, "credentials", "nats.json"));
      chmodSync(join(host2, "credentials", "nats.json"), 0o600);
      const { target: _t, ...ssh } = sshd.sshConfig(system.nats.port);
      writeFileSync(join(host2, "config.json"), JSON.stringify({ nats: { ssh } }));
      const child = spawn(process.execPath, [CLI_MAIN, "start", "--only", "heartbeat", "--ssh", sshd.target], {
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LURKBOT_HOME: host2, LURKBOT_LOG_LEVEL: "warn" }, stdio: ["ignore", "pipe", "pipe"],
      });
      let output = "";
      child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
      child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
      try {
        await waitFor(() => {
          if (child.exitCode !== null) throw new Error(`the launcher exited with ${child.exitCode}`);
          return output.includes("LurkBot is running");
        }, 60_000, "the launcher").catch((err: Error) => {
          throw new Error(`${err.message}\n${output}`);
        });
        assert.match(output, new RegExp(`ssh tunnel to ${sshd.target.replace(/\./g, "\\.")} open: the bus at 127\\.0\\.0\\.1:${system.nats.port} there is nats://127\\.0\\.0\\.1:\\d+ here \\(ssh pid \\d+\\); no local nats-server`));
        assert.doesNotMatch(output, /nats-server ready/);
        assert.ok(!existsSync(join(host2, "nats", "nats-server.pid")), "no nats-server was started");
        assert.equal(sshPids(sshd.port, child.pid).length, 1, "one tunnel for every actor");
        const pid = Number(/^heartbeat ready \(pid (\d+)\)$/m.exec(output)?.[1]);
        assert.ok(pid > 0, output);
        // the server's own status sees the second host's actor
        const status = await runCli(["status", "--json"], system.nats.env(system.nats.passwordEnv("cli")));
        assert.equal(status.code, 0, status.stderr);
        const rows = (JSON.parse(status.stdout) as { instances: Array<{ name: string; pid: number }> }).instances;
        assert.ok(rows.some((i) => i.name === "heartbeat" && i.pid === pid), status.stdout);
      } finally {
        child.kill("SIGTERM");
      }
      assert.equal(await exited, 0, output);
      assert.match(output, /ssh tunnel closed/);
      assert.deepEqual(sshPids(sshd.port), [], "no ssh left");
    } finally {
      rmSync(host2, { recursive: true, force: true });
    }
  });
});
