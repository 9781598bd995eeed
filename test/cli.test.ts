/**
 * The `lurkbot` command as a real process against a real nats-server: `status` lists a running
 * actor with its counters, a stopped bus is exit code 2 with the fix, bad command lines are
 * usage errors, `tail` prints events, `send`/`chat` speak the terminal channel's protocol
 * (inbound through JetStream with its Nats-Msg-Id, replies on lurk.out.cli.<conversation>, run
 * events on lurk.run.evt.<runId>), and `setup` writes the home idempotently.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import {
  encodeToken, inboundMessageSchema, inboundMsgId, passwordEnvName, renderNatsConf, runIdFor, safeParseJson, subjects,
  type Attachment, type InboundMessage,
} from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { MEDIA_DEFAULTS } from "../shared/runtime/config-media.js";
import { MediaStore } from "../shared/runtime/media.js";
import { LURKBOT_VERSION } from "../shared/runtime/version.js";
import { REPO_ROOT } from "../shared/scripts/paths.js";
import { actorEnv, isSecretEnvName, LAUNCHER_ACTORS } from "../services/cli/actors.js";
import { parseArgs, type ParsedCommand } from "../services/cli/args.js";
import { Backoff } from "../services/cli/backoff.js";
import { subjectMatches } from "../services/cli/tail.js";
import { runCli, startCli } from "./harness/cli.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { freePort, TestNats } from "./harness/nats.js";

const s = subjects();


describe("lurkbot command line", () => {
  it("parses commands, options and arguments, and rejects what it does not know", () => {
    const send = parseArgs(["send", "hi there", "--session", "work", "--json", "--timeout=5"]);
    assert.ok(!("global" in send));
    assert.deepEqual(send.args, ["hi there"]);
    assert.deepEqual(send.options, { session: "work", json: true, timeout: 5 });
    assert.throws(() => parseArgs(["frobnicate"]), /unknown command "frobnicate"/);
    assert.throws(() => parseArgs(["status", "--jsn"]), /unknown option "--jsn" for `lurkbot status` \(it takes --json, --ssh\)/);
    assert.deepEqual((parseArgs(["send", "--file", "a.png"]) as ParsedCommand).options, { file: "a.png" }, "a file alone is a message");
    assert.throws(() => parseArgs(["send", "a", "b"]), /quote the text/);
    assert.throws(() => parseArgs(["send", "a", "--timeout", "soon"]), /--timeout must be a positive number, not "soon"/);
    assert.throws(() => parseArgs(["send", "a", "--session"]), /--session needs a value/);
    assert.deepEqual(parseArgs(["--help"]), { global: "help" });
  });

  it("restart backoff: 0.5 s doubling to 30 s, back to 0.5 s after 60 s of health", () => {
    const b = new Backoff();
    assert.deepEqual([0, 0, 0, 0, 0, 0, 0, 0, 0].map((up) => b.next(up)), [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
    assert.equal(b.next(60_000), 500);
    assert.equal(b.next(59_000), 1000);
  });

  it("gives each actor only its own NATS password, and API keys only to agent-runner", () => {
    const credentials = { users: Object.fromEntries(["admin", ...LAUNCHER_ACTORS].map((u) => [u, `pw-${u}-0123456789abcdef`])) };
    const base = {
      PATH: "/usr/bin",
      LURKBOT_MODEL: "openai/gpt-4o-mini",
      OPENAI_API_KEY: "sk-test",
      ANTHROPIC_API_KEY: "ak-test",
      GITHUB_TOKEN: "ghp-test",
      [passwordEnvName("admin")]: "leak",
      [passwordEnvName("router")]: "leak",
    };
    for (const actor of LAUNCHER_ACTORS) {
      const env = actorEnv(actor, base, credentials, "/home/x/.lurkbot");
      const passwords = Object.keys(env).filter((k) => k.startsWith("LURKBOT_NATS_PASS_"));
      assert.deepEqual(passwords, [passwordEnvName(actor)], actor);
      assert.equal(env[passwordEnvName(actor)], credentials.users[actor]);
      assert.equal(env.GITHUB_TOKEN, undefined);
      assert.equal(env.LURKBOT_HOME, "/home/x/.lurkbot");
      assert.equal(env.LURKBOT_MODEL, "openai/gpt-4o-mini");
      const keys = actor === "agent-runner";
      assert.equal(env.OPENAI_API_KEY, keys ? "sk-test" : undefined, actor);
      assert.equal(env.ANTHROPIC_API_KEY, keys ? "ak-test" : undefined, actor);
    }
    assert.ok(isSecretEnvName("SLACK_BOT_TOKEN") && !isSecretEnvName("OPENAI_BASE_URL"));
  });

  it("matches tail filters like NATS subjects", () => {
    assert.ok(subjectMatches("lurk.evt.>", "lurk.evt.router.started"));
    assert.ok(subjectMatches("lurk.evt.*.started", "lurk.evt.router.started"));
    assert.ok(!subjectMatches("lurk.evt.*", "lurk.evt.router.started"));
    assert.ok(!subjectMatches("lurk.evt.>", "lurk.evt"));
  });

  it("unknown subcommand: usage on stderr, exit 64", async () => {
    const r = await runCli(["frobnicate"], { PATH: process.env.PATH ?? "/usr/bin" });
    assert.equal(r.code, 64);
    assert.match(r.stderr, /unknown command "frobnicate"/);
    assert.match(r.stderr, /usage: lurkbot <command>/);
    assert.equal(r.stdout, "");
    const bad = await runCli(["status", "--frob"], { PATH: process.env.PATH ?? "/usr/bin" });
    assert.equal(bad.code, 64);
    assert.match(bad.stderr, /unknown option "--frob"/);
    assert.match(bad.stderr, /usage: lurkbot status/);
  });

  it("setup creates the home, 0600 credentials and nats.conf, idempotently; --systemd writes one env file per actor", async () => {
    const home = mkdtempSync(join(tmpdir(), "lurk-setup-"));
    try {
      const env = { PATH: process.env.PATH ?? "/usr/bin", LURKBOT_HOME: home };
      const first = await runCli(["setup"], env);
      assert.equal(first.code, 0, first.stderr);
      assert.match(first.stdout, /generated NATS credentials/);
      const credFile = join(home, "credentials", "nats.json");
      assert.equal(statSync(credFile).mode & 0o777, 0o600);
      assert.equal(readFileSync(join(home, "nats", "nats.conf"), "utf8"), renderNatsConf("lurk"));
      assert.ok(existsSync(join(home, "workspace")));
      const creds = JSON.parse(readFileSync(credFile, "utf8")) as { users: Record<string, string> };
      const second = await runCli(["setup", "--systemd", join(home, "systemd")], env);
      assert.equal(second.code, 0, second.stderr);
      assert.match(second.stdout, /NATS credentials ok/);
      assert.deepEqual(JSON.parse(readFileSync(credFile, "utf8")), creds, "passwords are kept");
      for (const actor of LAUNCHER_ACTORS) {
        const file = join(home, "systemd", "env", `${actor}.env`);
        assert.equal(statSync(file).mode & 0o777, 0o600);
        const text = readFileSync(file, "utf8");
        const passwords = text.split("\n").filter((l) => l.startsWith("LURKBOT_NATS_PASS_"));
        assert.deepEqual(passwords, [`${passwordEnvName(actor)}=${creds.users[actor]}`], actor);
      }
      const natsEnv = readFileSync(join(home, "systemd", "env", "nats.env"), "utf8");
      assert.match(natsEnv, new RegExp(`${passwordEnvName("admin")}=${creds.users.admin}`));
      const unit = readFileSync(join(home, "systemd", "lurkbot@.service"), "utf8");
      assert.match(unit, /dist\/services\/%i\/main\.js/);
      assert.doesNotMatch(unit, /\{\{[A-Z_]+\}\}/, "every placeholder is filled");
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe("lurkbot status, tail, send and chat on a real bus", () => {
  let nats: TestNats;
  let sessions: ActorProcess;
  let env: Record<string, string>;

  before(async () => {
    nats = await TestNats.start();
    sessions = await startActorProcess("sessions", nats);
    env = nats.env(nats.passwordEnv("cli"));
  });
  after(async () => {
    await sessions?.stop();
    await nats?.stop();
  });

  it("status --json lists the running sessions actor with host, pid, version, endpoints and counters", async () => {
    const nc = await nats.connect("cli");
    try {
      const client = new BusClient(nc);
      await client.call("sessions", "get", { sessionKey: "agent:main:main" });
      await nc.request("lurk.sessions.get", "not json", { timeout: 5000 });
    } finally {
      await nc.close();
    }
    const r = await runCli(["status", "--json"], env);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as { url: string; instances: Array<Record<string, unknown>>; missing: string[] };
    assert.equal(report.url, nats.url);
    const row = report.instances.find((i) => i.name === "sessions");
    assert.ok(row, r.stdout);
    assert.equal(row.pid, sessions.child.pid);
    assert.equal(row.host, hostname());
    assert.equal(row.version, LURKBOT_VERSION);
    assert.ok((row.endpoints as number) >= 10, "one endpoint per sessions operation");
    assert.ok((row.requests as number) >= 2);
    assert.ok((row.errors as number) >= 1);
    assert.equal(typeof row.uptimeSec, "number");
    assert.ok(!report.missing.includes("sessions"));
    assert.ok(report.missing.includes("router"), "absent launcher actors are reported");

    const table = await runCli(["status"], env);
    assert.equal(table.code, 0, table.stderr);
    const esc = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    assert.match(table.stdout, new RegExp(`^sessions\\s+${esc(hostname())}\\s+${sessions.child.pid}\\s+${esc(LURKBOT_VERSION)}`, "m"));
    assert.match(table.stdout, /^router\s.*not running/m);
  });

  it("status with the bus up and no actor on it: every actor not running, and how to start them", async () => {
    const empty = await TestNats.start();
    try {
      const r = await runCli(["status"], empty.env(empty.passwordEnv("cli")));
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /: 0 instances\n/);
      assert.match(r.stdout, /^sessions\s.*not running/m);
      assert.match(r.stdout, /start them with `npx lurkbot start`/);
    } finally {
      await empty.stop();
    }
  });

  it("status with the bus down: exit 2 and how to start it", async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    const started = Date.now();
    const r = await runCli(["status", "--json"], { ...env, LURKBOT_NATS_URL: url });
    assert.equal(r.code, 2, r.stderr);
    assert.ok(r.stderr.includes(`cannot reach NATS at ${url} — is LurkBot running? Start it with \`npx lurkbot start\`.`), r.stderr);
    assert.equal(r.stdout, "");
    assert.ok(Date.now() - started < 10_000, "no reconnect loop");
  });

  it("tail prints actor events, and a subject filter keeps only matching ones", async () => {
    const all = startCli(["tail"], env);
    const filtered = startCli(["tail", "lurk.evt.sessions.wanted"], env);
    const nc = await nats.connect("sessions");
    try {
      await waitFor(() => all.stderr().includes("listening on") && filtered.stderr().includes("listening on"), 15_000, "tail to subscribe");
      const event = (name: string) => JSON.stringify({
        type: "lurk.actor.event.v1", id: `e-${name}`, ts: Date.now(), actor: "sessions", event: name, level: "info",
        instance: { host: "h1", pid: 4242 }, data: { note: `hello ${name}` },
      });
      nc.publish(s.event("sessions", "other"), event("other"));
      nc.publish(s.event("sessions", "wanted"), event("wanted"));
      await nc.flush();
      const line = await waitFor(() => all.stdout().split("\n").find((l) => l.includes("lurk.evt.sessions.wanted")), 10_000, "the event in tail");
      assert.match(line, /^\d\d:\d\d:\d\d\.\d{3} lurk\.evt\.sessions\.wanted wanted sessions@h1:4242 \{"note":"hello wanted"\}$/);
      assert.ok(all.stdout().includes("lurk.evt.sessions.other other"));
      await waitFor(() => filtered.stdout().includes("lurk.evt.sessions.wanted"), 10_000, "the filtered tail");
      assert.ok(!filtered.stdout().includes("lurk.evt.sessions.other"), filtered.stdout());
    } finally {
      await nc.close();
      all.child.kill("SIGINT");
      filtered.child.kill("SIGINT");
    }
    assert.equal(await all.exited, 0);
    assert.equal(await filtered.exited, 0);
  });

  /**
   * Plays the router and agent-runner for the terminal channel, over the bus with their own
   * users: sees the inbound message on lurk.in.cli (as admin), then publishes run events and
   * the reply delivery as agent-runner does.
   */
  async function fakeBot(reply: (m: InboundMessage) => { text: string; kind: "reply" | "error"; attachments?: Attachment[] }) {
    const admin = await nats.connect("admin");
    const runner = await nats.connect("agent-runner");
    const seen: Array<{ message: InboundMessage; msgId: string | undefined }> = [];
    const sub: Subscription = admin.subscribe(s.inbound("cli"), {
      callback: (_err, msg: Msg) => {
        const message = inboundMessageSchema.parse(safeParseJson(msg.data));
        seen.push({ message, msgId: msg.headers?.get("Nats-Msg-Id") });
        const runId = runIdFor("cli", message.id);
        const sessionKey = `agent:main:cli:${encodeToken(message.sessionName ?? "main")}`;
        const { text, kind, attachments = [] } = reply(message);
        const events = kind === "reply"
          ? [
            { kind: "run_start", agentId: "main", trigger: "message" },
            { kind: "message_delta", turn: 1, text: text.slice(0, 3) },
            { kind: "message_delta", turn: 1, text: text.slice(3) },
            { kind: "usage", turn: 1, usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, total: 15 }, model: "m", provider: "p" },
            { kind: "done", text, turns: 1, usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, total: 15 }, silent: false },
          ]
          : [{ kind: "error", code: "NO_MODEL", message: text, retryable: false }];
        events.forEach((event, seq) => runner.publish(s.runEvent(runId, event.kind), JSON.stringify({ type: "lurk.run.event.v1", id: `${runId}:${seq}`, ts: Date.now(), runId, sessionKey, seq, event })));
        runner.publish(s.outbound("cli", message.conversation), JSON.stringify({
          type: "lurk.outbound.message.v1", id: `${runId}:reply:0`, ts: Date.now(), runId, sessionKey,
          channel: "cli", conversation: message.conversation, kind, replyTo: [message.id], text, attachments,
          ...(kind === "error" ? { errorCode: "NO_MODEL" } : {}),
        }));
      },
    });
    await admin.flush();
    return {
      seen,
      async close() {
        sub.unsubscribe();
        await admin.close();
        await runner.close();
      },
    };
  }

  it("send publishes an InboundMessage through JetStream and prints the reply (--json with run id, session key, usage)", async () => {
    const bot = await fakeBot((m) => ({ text: `pong: ${m.text}`, kind: "reply" }));
    try {
      const r = await runCli(["send", "ping me", "--session", "work day", "--json", "--timeout", "20"], env);
      assert.equal(r.code, 0, r.stderr);
      const out = JSON.parse(r.stdout) as Record<string, unknown>;
      const [{ message, msgId }] = bot.seen as [{ message: InboundMessage; msgId: string | undefined }];
      assert.equal(message.channel, "cli");
      assert.equal(message.conversation, encodeToken("work day"));
      assert.equal(message.sessionName, "work day");
      assert.equal(message.peer.kind, "dm");
      assert.equal(msgId, inboundMsgId("cli", message.id), "published through JetStream with its Nats-Msg-Id");
      assert.deepEqual(out, {
        reply: "pong: ping me",
        kind: "reply",
        runId: runIdFor("cli", message.id),
        sessionKey: `agent:main:cli:${encodeToken("work day")}`,
        usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, total: 15 },
      });
      const plain = await runCli(["send", "again"], env);
      assert.equal(plain.code, 0, plain.stderr);
      assert.equal(plain.stdout, "pong: again\n");
      assert.equal(bot.seen[1]!.message.conversation, "main");
      assert.equal(bot.seen[1]!.message.sessionName, undefined);
    } finally {
      await bot.close();
    }
  });

  it("send prints an error reply and exits 1", async () => {
    const bot = await fakeBot(() => ({ text: "No model is configured: set LURKBOT_MODEL", kind: "error" }));
    try {
      const r = await runCli(["send", "hello"], env);
      assert.equal(r.code, 1);
      assert.equal(r.stdout, "No model is configured: set LURKBOT_MODEL\n");
    } finally {
      await bot.close();
    }
  });

  it("send --file stores the file and sends its ref; files in the reply are saved under downloads", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lurk-cli-files-"));
    const tools = await nats.connect("tools");
    try {
      const photo = join(dir, "photo.png");
      writeFileSync(photo, Buffer.from("fake png bytes"));
      const chart = await new MediaStore(tools, MEDIA_DEFAULTS).put(Buffer.from("x,y\n1,2\n"), { mime: "text/csv", name: "chart.csv" });
      const bot = await fakeBot(() => ({ text: "here is the data", kind: "reply", attachments: [{ kind: "file", mime: "text/csv", name: "chart.csv", size: chart.size, ref: chart.ref }] }));
      try {
        const r = await runCli(["send", "what is this?", "--file", photo, "--json"], env);
        assert.equal(r.code, 0, r.stderr);
        const sent = bot.seen[0]!.message;
        assert.deepEqual(sent.attachments.map((a) => [a.kind, a.mime, a.name, a.size]), [["image", "image/png", "photo.png", 14]]);
        const stored = await new MediaStore(tools, MEDIA_DEFAULTS).get(sent.attachments[0]!.ref!);
        assert.equal(Buffer.from(stored.bytes).toString(), "fake png bytes");
        const out = JSON.parse(r.stdout) as { reply: string; files: Array<{ name: string; path: string }> };
        assert.equal(out.reply, "here is the data");
        assert.equal(out.files[0]!.path, join(nats.home, "downloads", "chart.csv"));
        assert.equal(readFileSync(out.files[0]!.path, "utf8"), "x,y\n1,2\n");
        // the same file again: a numbered copy, the first one kept
        const plain = await runCli(["send", "again"], env);
        assert.match(plain.stderr, /file chart\.csv \(text\/csv, 8 bytes\) saved to .*chart \(1\)\.csv/);
        const chat = await runCli(["chat", "--session", "files"], env, { input: `/file "${photo}" describe it\n/exit\n` });
        assert.equal(chat.code, 0, chat.stderr);
        const viaChat = bot.seen.at(-1)!.message;
        assert.equal(viaChat.text, "describe it");
        assert.equal(viaChat.attachments[0]!.ref, sent.attachments[0]!.ref);
        assert.match(chat.stdout, /file chart\.csv .* saved to .*chart \(2\)\.csv/);
      } finally {
        await bot.close();
      }
      const empty = await runCli(["send"], env);
      assert.equal(empty.code, 64);
      assert.match(empty.stderr, /the message is empty; .* or send a file with --file PATH/);
      const missing = await runCli(["send", "hi", "--file", join(dir, "nope.png")], env);
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /cannot read .*nope\.png \(ENOENT\); give the path of a file to send/);
    } finally {
      await tools.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("send without a router: a clear timeout, exit 1", async () => {
    const r = await runCli(["send", "anyone?", "--timeout", "1"], env);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /no reply within 1 s\. Check that the router and agent-runner run/);
  });

  it("chat streams the reply's deltas and quits on /exit", async () => {
    const bot = await fakeBot((m) => ({ text: `echo ${m.text}`, kind: "reply" }));
    try {
      const r = await runCli(["chat", "--session", "pipe"], env, { input: "first\nsecond\n/exit\n" });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /lurkbot> echo first\n/);
      assert.match(r.stdout, /lurkbot> echo second\n/);
      assert.equal(bot.seen.length, 2);
      assert.ok(bot.seen.every((x) => x.message.conversation === "pipe"));
    } finally {
      await bot.close();
    }
  });
});

describe("lurkbot streams", () => {
  it("creates the JetStream streams as admin, and waits for a server that is not up yet", async () => {
    const nats = await TestNats.start({ streams: false });
    try {
      const r = await runCli(["streams"], nats.env(nats.passwordEnv("admin")));
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /JetStream streams ready on nats:\/\/127\.0\.0\.1:\d+ \(replicas 1\)/);
      const admin = await nats.connect("admin");
      try {
        const { jetstreamManager } = await import("@nats-io/jetstream");
        const names: string[] = [];
        for await (const si of (await jetstreamManager(admin)).streams.list()) names.push(si.config.name);
        assert.deepEqual(names.sort(), ["KV_lurk_approvals", "KV_lurk_auth", "KV_lurk_cron_fires", "KV_lurk_cron_jobs", "KV_lurk_heartbeat", "KV_lurk_hooks", "KV_lurk_leases", "KV_lurk_router", "KV_lurk_subagents", "LURK_DEADLETTER", "LURK_HOOK_EVENTS", "LURK_INBOUND", "LURK_OUTBOUND", "LURK_RUNS", "LURK_SESSIONS", "OBJ_lurk_media"], "the streams (the hooks' events too), the lease bucket, the cron buckets, the approvals, heartbeat, subagents, router, auth and hooks buckets, the media store");
      } finally {
        await admin.close();
      }
      const down = await runCli(["streams", "--wait", "1"], { ...nats.env(nats.passwordEnv("admin")), LURKBOT_NATS_URL: `nats://127.0.0.1:${await freePort()}` });
      assert.equal(down.code, 2);
      assert.match(down.stderr, /cannot reach NATS/);
    } finally {
      await nats.stop();
    }
  });
});
