/**
 * The SSH tunnel's local port taken by another process (Linux): a "stranger" binds
 * 127.0.0.1:<tunnel port> right after the tunnel's ssh is killed, before the restart, and greets
 * every connection like a NATS server. Neither the tunnel's own NATS client, nor `lurkbot tail`,
 * nor the actors of `lurkbot start --ssh` send it a CONNECT (user and password); they stop with
 * "another process listens on 127.0.0.1:P: the tunnel will not use it". Also: the guard of the
 * launcher's actors (LURKBOT_NATS_TUNNEL_PARENT), and a leftover ssh of a SIGKILLed launcher
 * stopped by the next start. Real sshd (test/harness/sshd.ts), real bus; skipped without sshd.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createConnection, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { connect } from "@nats-io/transport-node";
import { inboxPrefix, passwordEnvName } from "../shared/contract/index.js";
import { guardedAuthenticator, TUNNEL_PARENT_ENV, tunnelGuard } from "../shared/runtime/port-owner.js";
import { SshTunnel, type TunnelEvent } from "../shared/runtime/ssh-tunnel.js";
import { CLI_MAIN, startCli } from "./harness/cli.js";
import { waitFor } from "./harness/actors.js";
import { SSHD_MISSING, sshPids, TestSshd } from "./harness/sshd.js";
import { TestSystem } from "./harness/system.js";

const NOT_LINUX = process.platform !== "linux" ? "the listener check reads /proc (Linux only)" : false;

interface Stranger {
  server: Server;
  /** every line it received */
  lines: string[];
  connections: number;
  close(): Promise<void>;
}

/** Binds 127.0.0.1:port as soon as it is free (polling every 2 ms), greeting every connection with a NATS INFO. */
async function squat(port: number, timeoutMs = 3_000): Promise<Stranger> {
  const lines: string[] = [];
  const sockets = new Set<import("node:net").Socket>();
  const server = createServer((socket) => {
    stranger.connections++;
    sockets.add(socket);
    socket.on("error", () => undefined);
    socket.on("close", () => sockets.delete(socket));
    socket.write(`INFO {"server_id":"stranger","version":"2.10.0","proto":1,"headers":true,"max_payload":1048576,"auth_required":true}\r\n`);
    let buf = "";
    socket.on("data", (d: Buffer) => {
      buf += d.toString();
      for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
        lines.push(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
    });
  });
  const stranger: Stranger = {
    server, lines, connections: 0,
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, "127.0.0.1", () => {
          server.off("error", reject);
          resolve();
        });
      });
      return stranger;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EADDRINUSE" || Date.now() > deadline) {
        throw new Error(`could not bind 127.0.0.1:${port} before the restarted ssh (${(err as Error).message}); rerun`);
      }
      await new Promise((r) => setTimeout(r, 2));
    }
  }
}

const noConnect = (s: Stranger) => assert.ok(!s.lines.some((l) => l.startsWith("CONNECT")), `the stranger received: ${JSON.stringify(s.lines)}`);

describe("the actors' guard of a launcher's tunnel (LURKBOT_NATS_TUNNEL_PARENT)", { skip: NOT_LINUX }, () => {
  it("passes for a listener held by a child of the named launcher, throws naming the port for any other", async () => {
    // a child of this process listens: as the launcher's ssh would
    const child = spawn(process.execPath, ["-e", "const s=require('net').createServer().listen(0,'127.0.0.1',()=>console.log(s.address().port))"], { stdio: ["ignore", "pipe", "inherit"] });
    const server = createServer();
    try {
      const childPort = Number(await new Promise<string>((resolve) => child.stdout!.once("data", (d: Buffer) => resolve(d.toString().trim()))));
      const env = { [TUNNEL_PARENT_ENV]: String(process.pid) };
      tunnelGuard(`nats://127.0.0.1:${childPort}`, env)!();
      // this process itself is not a child of the "launcher": a stranger
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const port = (server.address() as { port: number }).port;
      assert.throws(() => tunnelGuard(`nats://127.0.0.1:${port}`, env)!(), (e: Error) => e.message.startsWith(`another process listens on 127.0.0.1:${port}: the tunnel will not use it`));
      // nothing listens: no password either
      await new Promise((resolve) => server.close(resolve));
      assert.throws(() => tunnelGuard(`nats://127.0.0.1:${port}`, env)!(), /nothing listens on 127\.0\.0\.1:\d+ any more/);
      assert.equal(tunnelGuard(`nats://127.0.0.1:${port}`, {}), undefined, "no guard outside a launcher's tunnel");
    } finally {
      child.kill("SIGKILL");
      if (server.listening) server.close();
    }
  });

  it("a stranger that accepted a connection and gave the port back before the launcher's child bound it is still caught", async () => {
    const env = { [TUNNEL_PARENT_ENV]: String(process.pid) };
    const accepted: import("node:net").Socket[] = [];
    const stranger = createServer((s) => accepted.push(s));
    await new Promise<void>((resolve) => stranger.listen(0, "127.0.0.1", resolve));
    const port = (stranger.address() as { port: number }).port;
    const client = createConnection({ host: "127.0.0.1", port });
    let child: ChildProcess | undefined;
    try {
      await waitFor(() => accepted.length === 1, 5_000, "the stranger to accept");
      // the listener closes; the accepted connection stays, and a child of the "launcher" binds the port
      stranger.close(); // stops listening at once; its callback would wait for the accepted connection
      child = spawn(process.execPath, ["-e", `require('net').createServer().listen(${port},'127.0.0.1',()=>console.log('up'))`], { stdio: ["ignore", "pipe", "inherit"] });
      await new Promise((resolve) => child!.stdout!.once("data", resolve));
      assert.throws(() => tunnelGuard(`nats://127.0.0.1:${port}`, env)!(), (e: Error) => e.message.startsWith(`another process listens on 127.0.0.1:${port}: the tunnel will not use it`));
      // once the stranger's connection is gone, the child's port passes
      accepted[0]!.destroy();
      client.destroy();
      await waitFor(() => {
        try {
          tunnelGuard(`nats://127.0.0.1:${port}`, env)!();
          return true;
        } catch {
          return false;
        }
      }, 5_000, "the guard to pass");
    } finally {
      client.destroy();
      for (const s of accepted) s.destroy();
      child?.kill("SIGKILL");
    }
  });
});

describe("another process on the ssh tunnel's port", { skip: SSHD_MISSING || NOT_LINUX }, () => {
  let sshd: TestSshd;
  let system: TestSystem;
  let laptop: string;

  before(async () => {
    sshd = await TestSshd.start();
    system = await TestSystem.start();
    laptop = mkdtempSync(join(tmpdir(), "lurk-laptop-"));
  });
  after(async () => {
    await system?.stop();
    await sshd?.stop();
    if (laptop) rmSync(laptop, { recursive: true, force: true });
  });

  it("taken while ssh restarts: the tunnel breaks naming it, the NATS client is closed and no CONNECT reaches it", async () => {
    const events: TunnelEvent[] = [];
    const tunnel = await new SshTunnel({ ...(sshd.sshConfig(system.nats.port) as { target: string }), expectGreeting: true }, (e) => events.push(e)).open();
    const port = tunnel.localPort;
    const password = system.nats.password("cli");
    const auth = guardedAuthenticator("cli", password, () => tunnel.verifyListener());
    let stranger: Stranger | undefined;
    const nc = await connect({ servers: [tunnel.natsUrl], authenticator: auth, ignoreClusterUpdates: true, reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 100, inboxPrefix: inboxPrefix("cli") });
    try {
      await nc.flush();
      const [first] = sshPids(sshd.port, process.pid);
      assert.ok(first, "one ssh");
      process.kill(first, "SIGKILL");
      stranger = await squat(port);
      const broken = await waitFor(() => events.find((e) => e.type === "broken"), 15_000, "the broken event");
      assert.match(broken.error.message, new RegExp(`^another process listens on 127\\.0\\.0\\.1:${port}: the tunnel will not use it`));
      assert.equal(broken.error.kind, "foreign-listener");
      // the tunnel's users close their connections on that event (ssh-bus.ts, the launcher); nats.js's own reconnects are refused by the guard
      await nc.close();
      // a fresh connection with the guard: it reaches the stranger and is closed before CONNECT
      const before = stranger.connections;
      await assert.rejects(connect({ servers: [tunnel.natsUrl], authenticator: auth, timeout: 3_000 }), (e: Error) => e.message.startsWith(`another process listens on 127.0.0.1:${port}`));
      assert.ok(stranger.connections > before, "the guarded client did connect to the stranger");
      noConnect(stranger);
      await waitFor(() => sshPids(sshd.port, process.pid).length === 0, 5_000, "no ssh left");
    } finally {
      await nc.close().catch(() => undefined);
      await tunnel.close();
      await stranger?.close();
    }
  });

  it("lurkbot tail --ssh: exits 2 with the error, and its password never reaches the stranger", async () => {
    const { target, ...ssh } = sshd.sshConfig(system.nats.port);
    writeFileSync(join(laptop, "config.json"), JSON.stringify({ nats: { ssh } }));
    const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", LURKBOT_HOME: laptop, LURKBOT_LOG_LEVEL: "warn", [passwordEnvName("cli")]: system.nats.password("cli") };
    const tail = startCli(["tail", "--ssh", String(target)], env);
    let stranger: Stranger | undefined;
    try {
      await waitFor(() => {
        if (tail.child.exitCode !== null) throw new Error(`tail exited: ${tail.stderr()}`);
        return tail.stderr().includes("listening on");
      }, 30_000, "tail to listen");
      const [ssh1] = sshPids(sshd.port, tail.child.pid);
      assert.ok(ssh1, "tail runs one ssh");
      const ssh1Args = readFileSync(`/proc/${ssh1}/cmdline`, "utf8").split("\0");
      const port = Number(/^127\.0\.0\.1:(\d+):/.exec(ssh1Args[ssh1Args.indexOf("-L") + 1]!)?.[1]);
      assert.ok(port > 0, ssh1Args.join(" "));
      process.kill(ssh1, "SIGKILL");
      stranger = await squat(port);
      const code = await Promise.race([tail.exited, new Promise((r) => setTimeout(() => r("still running"), 20_000))]);
      assert.equal(code, 2, tail.stderr());
      assert.match(tail.stderr(), new RegExp(`lurkbot: cannot reach the bus through ssh .*: another process listens on 127\\.0\\.0\\.1:${port}: the tunnel will not use it`));
      noConnect(stranger);
      assert.deepEqual(sshPids(sshd.port), [], "no ssh left");
    } finally {
      tail.child.kill("SIGKILL");
      await stranger?.close();
    }
  });

  /** A second host's launcher: its own home with the server's credentials, one actor, through the tunnel. */
  function startLauncher(home: string): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
    if (!existsSync(join(home, "credentials"))) {
      mkdirSync(join(home, "credentials"), { recursive: true, mode: 0o700 });
      copyFileSync(join(system.nats.home, "credentials", "nats.json"), join(home, "credentials", "nats.json"));
      chmodSync(join(home, "credentials", "nats.json"), 0o600);
      const { target: _t, ...ssh } = sshd.sshConfig(system.nats.port);
      writeFileSync(join(home, "config.json"), JSON.stringify({ nats: { ssh } }));
    }
    const child = spawn(process.execPath, [CLI_MAIN, "start", "--only", "heartbeat", "--ssh", sshd.target], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LURKBOT_HOME: home, LURKBOT_LOG_LEVEL: "warn" }, stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
    return { child, output: () => output, exited };
  }

  async function running(l: ReturnType<typeof startLauncher>): Promise<{ port: number; actorPid: number }> {
    await waitFor(() => {
      if (l.child.exitCode !== null) throw new Error(`the launcher exited with ${l.child.exitCode}\n${l.output()}`);
      return l.output().includes("LurkBot is running");
    }, 60_000, "the launcher");
    const port = Number(/there is nats:\/\/127\.0\.0\.1:(\d+) here/.exec(l.output())?.[1]);
    const actorPid = Number(/^heartbeat ready \(pid (\d+)\)$/m.exec(l.output())?.[1]);
    assert.ok(port > 0 && actorPid > 0, l.output());
    return { port, actorPid };
  }

  it("lurkbot start --ssh: the actors send no CONNECT to the stranger; the launcher stops with the error", async () => {
    const home = mkdtempSync(join(tmpdir(), "lurk-host2-"));
    const launcher = startLauncher(home);
    let stranger: Stranger | undefined;
    try {
      const { port } = await running(launcher);
      const [ssh1] = sshPids(sshd.port, launcher.child.pid);
      assert.ok(ssh1, launcher.output());
      process.kill(ssh1, "SIGKILL");
      stranger = await squat(port);
      const code = await Promise.race([launcher.exited, new Promise((r) => setTimeout(() => r("still running"), 40_000))]);
      assert.notEqual(code, "still running", launcher.output());
      assert.notEqual(code, 0, launcher.output());
      assert.match(launcher.output(), new RegExp(`another process listens on 127\\.0\\.0\\.1:${port}: the tunnel will not use it`));
      assert.match(launcher.output(), /LurkBot stopped/);
      noConnect(stranger);
      assert.deepEqual(sshPids(sshd.port), [], "no ssh left");
      assert.ok(!existsSync(join(home, "ssh-tunnel.pid")), "the tunnel record is removed");
    } finally {
      launcher.child.kill("SIGKILL");
      await stranger?.close();
      rmSync(home, { recursive: true, force: true });
    }
  });

  it("a launcher killed with SIGKILL leaves its ssh; the next start of that home stops it", async () => {
    const home = mkdtempSync(join(tmpdir(), "lurk-host2-"));
    const first = startLauncher(home);
    let second: ReturnType<typeof startLauncher> | undefined;
    let actorPid = 0;
    try {
      ({ actorPid } = await running(first));
      const [orphan] = sshPids(sshd.port, first.child.pid);
      assert.ok(orphan, first.output());
      const record = JSON.parse(readFileSync(join(home, "ssh-tunnel.pid"), "utf8")) as { pid: number; launcher: number };
      assert.deepEqual([record.pid, record.launcher], [orphan, first.child.pid]);
      first.child.kill("SIGKILL");
      await first.exited;
      process.kill(actorPid, "SIGKILL");
      assert.deepEqual(sshPids(sshd.port), [orphan], "the ssh outlived its launcher");

      second = startLauncher(home);
      await running(second);
      assert.match(second.output(), new RegExp(`stopping the ssh tunnel \\(pid ${orphan}\\) an earlier launcher of .* left running`));
      const now = sshPids(sshd.port);
      assert.ok(!now.includes(orphan), "the leftover ssh is gone");
      assert.equal(sshPids(sshd.port, second.child.pid).length, 1, "the new launcher's own tunnel");
      second.child.kill("SIGTERM");
      assert.equal(await second.exited, 0, second.output());
      assert.deepEqual(sshPids(sshd.port), [], "no ssh left");
    } finally {
      first.child.kill("SIGKILL");
      second?.child.kill("SIGKILL");
      try {
        if (actorPid) process.kill(actorPid, "SIGKILL");
      } catch {
        // already gone
      }
      rmSync(home, { recursive: true, force: true });
    }
  });
});
