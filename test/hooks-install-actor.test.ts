/**
 * An installed hook in the running hooks actor, end to end: a real nats-server, the sessions,
 * approvals, tools, router and agent-runner actors and the hooks actor as child processes, the
 * real CLI. `lurkbot hooks install` of a pack (.tgz made by `npm pack`) asks the running actor to
 * reload and says so; the hook runs on the next /status and its message reaches the user;
 * `lurkbot hooks uninstall` takes it out of the running actor.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { actorEventSchema, outboundMessageSchema, safeParseJson, subjects, type ActorEvent, type OutboundMessage } from "../shared/contract/index.js";
import { waitFor } from "./harness/actors.js";
import { runCli } from "./harness/cli.js";
import { CliClient, TestSystem } from "./harness/system.js";

const S = subjects();

describe("an installed hook in the running hooks actor", () => {
  let system: TestSystem;
  let client: CliClient;
  let observer: NatsConnection;
  let cliEnv: Record<string, string>;
  let tarball: string;
  const delivered: OutboundMessage[] = [];
  const hookEvents: ActorEvent[] = [];
  const log = () => join(system.workspace, "installed.log");
  const read = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : []);
  const lines = () => read(log());
  /** /status, then wait until the user hook z-probe (which runs after i-status: by name) saw it */
  const status = async () => {
    const seen = read(join(system.workspace, "probe.log")).length;
    await client.send("/status");
    await waitFor(() => read(join(system.workspace, "probe.log")).length > seen, 15_000, "z-probe to see /status");
  };

  before(async () => {
    system = await TestSystem.start({ config: { hooks: { reloadIntervalMs: 0 } } });
    // a pack with one hook: appends the event to <workspace>/installed.log and answers
    const pack = join(system.nats.dir, "pack");
    mkdirSync(join(pack, "hooks", "i-status"), { recursive: true });
    writeFileSync(join(pack, "package.json"), JSON.stringify({ name: "status-pack", version: "2.0.0", type: "module", lurkbot: { hooks: ["./hooks/i-status"] } }));
    writeFileSync(join(pack, "hooks", "i-status", "HOOK.md"), `---\nname: i-status\ndescription: test\nmetadata: {"lurkbot": {"events": ["command:status"]}}\n---\n`);
    writeFileSync(join(pack, "hooks", "i-status", "handler.js"), [
      "import { appendFile } from 'node:fs/promises';",
      "import { join } from 'node:path';",
      "export default async function (event, ctx) {",
      "  await appendFile(join(ctx.workspace, 'installed.log'), `${event.name} ${ctx.hook.source}\\n`);",
      "  event.messages.push('installed hook ran');",
      "}",
    ].join("\n"));
    // a hook put in $LURKBOT_HOME/hooks by hand: runs after i-status on every /status
    mkdirSync(join(system.nats.home, "hooks", "z-probe"), { recursive: true });
    writeFileSync(join(system.nats.home, "hooks", "z-probe", "HOOK.md"), `---\nname: z-probe\ndescription: test\nmetadata: {"lurkbot": {"events": ["command:status"]}}\n---\n`);
    writeFileSync(join(system.nats.home, "hooks", "z-probe", "handler.js"), "import { appendFile } from 'node:fs/promises';\nimport { join } from 'node:path';\nexport default async function (event, ctx) { await appendFile(join(ctx.workspace, 'probe.log'), event.name + '\\n'); }\n");
    const packed = spawnSync("npm", ["pack", "--pack-destination", system.nats.dir, "--ignore-scripts", "--json"], { cwd: pack, encoding: "utf8", env: { ...process.env, npm_config_cache: join(system.nats.dir, "npm-cache") } });
    assert.equal(packed.status, 0, packed.stderr);
    tarball = join(system.nats.dir, (JSON.parse(packed.stdout) as Array<{ filename: string }>)[0]!.filename);
    cliEnv = system.nats.env({ ...system.env, ...system.nats.passwordEnv("cli") });
    client = await CliClient.connect(system.nats, "main");
    observer = await system.nats.connect("cli");
    observer.subscribe(S.outboundChannel("cli"), { callback: (_e, msg) => void delivered.push(outboundMessageSchema.parse(safeParseJson(msg.data))) });
    observer.subscribe(S.eventsOf("hooks"), { callback: (_e, msg) => void hookEvents.push(actorEventSchema.parse(safeParseJson(msg.data))) });
    await observer.flush();
    await system.startActor("hooks");
  });

  after(async () => {
    await client?.close();
    await observer?.close();
    await system?.stop();
  });

  it("install: the running actor reloads, and the hook runs on the next event", async () => {
    const r = await runCli(["hooks", "install", tarball], cliEnv, { timeoutMs: 60_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /installed i-status 2\.0\.0 from archive/);
    assert.match(r.stdout, /The running hooks actor reloaded: 2 hook\(s\) run\./);
    await waitFor(() => hookEvents.find((e) => e.event === "reloaded" && (e.data.hooks as Array<{ hook: string }>).some((h) => h.hook === "i-status")), 10_000, "a reload that runs i-status");
    await status();
    const msg = await waitFor(() => delivered.find((m) => m.text === "installed hook ran"), 15_000, "the installed hook's message");
    assert.equal(msg.kind, "notice");
    assert.deepEqual(lines(), ["command:status user"]);
  });

  it("uninstall: the running actor reloads without it", async () => {
    const mark = hookEvents.length;
    const r = await runCli(["hooks", "uninstall", "i-status"], cliEnv);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /The running hooks actor reloaded: 1 hook\(s\) run\./);
    await waitFor(() => hookEvents.slice(mark).find((e) => e.event === "reloaded" && !(e.data.hooks as Array<{ hook: string }>).some((h) => h.hook === "i-status")), 10_000, "a reload without i-status");
    await status();
    assert.deepEqual(lines(), ["command:status user"], "i-status did not run again");
  });
});
