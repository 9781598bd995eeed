/**
 * `lurkbot tools [--explain] [--json]` lists the tools other actors serve (serveTools) next to
 * the built-in ones, each once with the actor serving it, through the CLI against real processes
 * on a real nats-server: the tools actor, the browser actor (its layered policy; no Chromium
 * needed) and the ext-tools fixture three times (no policy, the shared layered policy, a policy
 * of its own). Proves: each served tool's decision with its layer and rule (a denied one names
 * the layer that denied it: global, profile, session; "actor" for an actor's own policy or
 * none), the approval rules of served tools, the --json shape complete and valid, the plain list
 * with the actor column, the catalog and calls agreeing with the explanation (TOOL_DENIED by the
 * same layer), an unknown agent's error naming the configured agents; and, without processes,
 * the merge: each name once, the tools actor's decision first, a name served twice noted.
 */
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import { toolCallReply, toolsExplainReply } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { formatTools, mergeExplained } from "../services/cli/tools.js";
import { startActorProcess, startModuleActor, type ActorProcess } from "./harness/actors.js";
import { runCli } from "./harness/cli.js";
import { TestNats } from "./harness/nats.js";
import { textOf } from "./harness/tools-actor.js";

const EXT = "test/fixtures/ext-tools/main.js";
const GROUP_KEY = "agent:main:telegram:group:-100123";

const layer = z.enum(["profile", "provider", "model", "global", "agent", "session", "sandbox", "subagent"]);
const reportedTool = z.object({
  tool: z.string().min(1),
  actor: z.string().min(1),
  allowed: z.boolean(),
  layer: z.union([layer, z.literal("actor")]),
  rule: z.string().min(1),
  groups: z.array(z.string()),
  aliases: z.array(z.string()),
  trace: z.array(z.object({ layer, effect: z.enum(["allow", "deny"]), rule: z.string().min(1) }).strict()),
  approval: z.object({ calls: z.enum(["all", "some"]), reasons: z.array(z.object({ source: z.enum(["tool", "global", "agent", "exec-ask"]), rule: z.string() }).strict()).min(1) }).strict().optional(),
  alsoServedBy: z.array(z.string()).optional(),
}).strict();
const explainReport = z.object({
  agentId: z.string(),
  sessionType: z.string(),
  profile: z.string(),
  model: z.string().nullable(),
  actors: z.array(z.string()),
  tools: z.array(reportedTool),
  errors: z.array(z.string()).optional(),
}).strict();

describe("lurkbot tools --explain: tools other actors serve", () => {
  let nats: TestNats;
  const actors: ActorProcess[] = [];
  let env: Record<string, string>;
  let runner: NatsConnection;

  const explain = async (...args: string[]) => {
    const r = await runCli(["tools", "--explain", "--json", ...args], env);
    assert.equal(r.code, 0, r.stderr);
    const report = explainReport.parse(JSON.parse(r.stdout));
    return { report, byName: new Map(report.tools.map((t) => [t.tool, t])) };
  };
  const row = (text: string, tool: string) => text.split("\n").find((l) => l.trim().split(/\s+/)[0] === tool) ?? "";

  before(async () => {
    nats = await TestNats.start();
    writeFileSync(join(nats.home, "config.json"), JSON.stringify({
      agents: [{ id: "main", default: true, toolProfile: "full" }, { id: "coder", toolProfile: "coding" }, { id: "guest", toolProfile: "full" }],
      tools: { deny: ["secret_lookup"], requireApproval: ["weather_lookup"], ...(existsSync("/usr/bin/bwrap") ? {} : { exec: { allowUnsandboxed: true } }) },
      // no Chromium is needed: the actor serves (and explains) its tools without one
      browser: { executablePath: "/nonexistent/chromium" },
    }));
    actors.push(await startActorProcess("tools", nats));
    actors.push(await startActorProcess("browser", nats));
    actors.push(await startModuleActor(EXT, "tools-ext", nats));
    actors.push(await startModuleActor(EXT, "tools-ext", nats, { EXT_TOOL_NAME: "secret_lookup", EXT_TOOL_QUEUE: "tools-ext-secret", EXT_TOOL_POLICY: "layered" }));
    actors.push(await startModuleActor(EXT, "tools-ext", nats, { EXT_TOOL_NAME: "guest_lookup", EXT_TOOL_QUEUE: "tools-ext-own", EXT_TOOL_POLICY: "own" }));
    env = nats.env(nats.passwordEnv("cli"));
    runner = await nats.connect("agent-runner");
  });
  after(async () => {
    await runner?.close().catch(() => undefined);
    for (const a of actors.reverse()) await a.stop();
    await nats?.stop();
  });

  it("--json: the built-in and the served tools, each once with its actor and its decision, approvals included", async () => {
    const { report, byName } = await explain();
    assert.equal(report.agentId, "main");
    assert.equal(report.profile, "full");
    assert.deepEqual(report.actors, ["tools", "browser", "tools-ext"]);
    assert.equal(report.errors, undefined);
    assert.equal(new Set(report.tools.map((t) => t.tool)).size, report.tools.length, "each tool once");
    assert.equal(byName.get("read")?.actor, "tools");
    assert.equal(byName.get("exec")?.actor, "tools");

    const browser = byName.get("browser")!;
    assert.deepEqual({ actor: browser.actor, allowed: browser.allowed, layer: browser.layer, rule: browser.rule, approval: browser.approval },
      { actor: "browser", allowed: true, layer: "profile", rule: 'allow "*" (profile full)', approval: undefined });
    assert.deepEqual(browser.groups, ["group:ui", "group:browser"]);
    const evaluate = byName.get("browser_evaluate")!;
    assert.equal(evaluate.allowed, true);
    assert.deepEqual(evaluate.approval, { calls: "all", reasons: [{ source: "tool", rule: "the tool's own definition (needsApproval)" }] });

    // no policy: every request gets it; tools.requireApproval still gates its calls
    const weather = byName.get("weather_lookup")!;
    assert.deepEqual({ actor: weather.actor, allowed: weather.allowed, layer: weather.layer }, { actor: "tools-ext", allowed: true, layer: "actor" });
    assert.match(weather.rule, /tools-ext applies no tool policy/);
    assert.deepEqual(weather.approval, { calls: "all", reasons: [{ source: "global", rule: 'tools.requireApproval: "weather_lookup"' }] });
    // the shared layered policy: denied by the global layer, as the built-in tools are
    const secret = byName.get("secret_lookup")!;
    assert.deepEqual({ allowed: secret.allowed, layer: secret.layer, rule: secret.rule }, { allowed: false, layer: "global", rule: 'deny "secret_lookup" (tools)' });
    assert.deepEqual(secret.trace.filter((v) => v.effect === "deny").map((v) => v.layer), ["global"]);
    // an actor's own policy: yes or no, layer "actor"
    assert.deepEqual({ allowed: byName.get("guest_lookup")!.allowed, layer: byName.get("guest_lookup")!.layer }, { allowed: true, layer: "actor" });
    assert.match(byName.get("guest_lookup")!.rule, /allowed by tools-ext's own tool policy/);
  });

  it("a denied served tool names the layer that denied it: session (group sessions), profile (coding), actor (its own policy)", async () => {
    const group = await explain("--session", GROUP_KEY);
    assert.equal(group.report.sessionType, "group");
    const b = group.byName.get("browser")!;
    assert.deepEqual({ allowed: b.allowed, layer: b.layer, rule: b.rule }, { allowed: false, layer: "session", rule: 'deny "browser" (built-in rules for group sessions)' });
    const e = group.byName.get("browser_evaluate")!;
    assert.deepEqual({ allowed: e.allowed, layer: e.layer }, { allowed: false, layer: "session" });
    assert.match(e.rule, /^deny "browser" \(built-in rules for group sessions\); offered only where browser is$/);
    assert.ok(e.trace.some((v) => v.effect === "deny" && v.rule.startsWith("browser: ")), JSON.stringify(e.trace));

    const coder = await explain("--agent", "coder");
    assert.equal(coder.byName.get("browser")?.layer, "profile");
    assert.match(coder.byName.get("browser")!.rule, /^not in the allow list \[group:fs, .*\] \(profile coding\)$/);
    assert.equal(coder.byName.get("browser")?.allowed, false);

    const guest = await explain("--agent", "guest");
    const g = guest.byName.get("guest_lookup")!;
    assert.deepEqual({ allowed: g.allowed, layer: g.layer }, { allowed: false, layer: "actor" });
    assert.match(g.rule, /^tools-ext's own tool policy: guest_lookup is not offered to guests$/);

    // the text table: name, actor, decision, layer, rule
    const text = await runCli(["tools", "--explain", "--session", GROUP_KEY], env);
    assert.equal(text.code, 0, text.stderr);
    assert.match(row(text.stdout, "browser"), /^\s+browser\s+browser\s+DENIED\s+session\s+deny "browser" \(built-in rules for group sessions\)$/);
    assert.match(row(text.stdout, "secret_lookup"), /^\s+secret_lookup\s+tools-ext\s+DENIED\s+global\s+deny "secret_lookup" \(tools\)$/);
    assert.match(row(text.stdout, "exec"), /^\s+exec\s+tools\s+DENIED\s+session\s+/);
    assert.match(text.stdout, /\ntools by actor: tools \(\d+\), browser \(2\), tools-ext \(3\)\n/);
  });

  it("the catalog and the calls agree with the explanation", async () => {
    const bus = new BusClient(runner);
    const call = (tool: string, sessionKey: string, agentId = "main") => bus.callSubject(`lurk.tools.call.${tool}`, "lurk.tools.call.v1", {
      toolCallId: `x-${tool}-${Date.now()}`, runId: "run-explain", sessionKey, agentId, tool, args: { action: "status", city: "Oslo" },
    }, toolCallReply, { timeoutMs: 20_000 });
    const inGroup = await call("browser", GROUP_KEY);
    assert.equal(inGroup.errorCode, "TOOL_DENIED");
    assert.match(textOf(inGroup), /session layer .*deny "browser" \(built-in rules for group sessions\)/);
    const secret = await call("secret_lookup", "agent:main:main");
    assert.equal(secret.errorCode, "TOOL_DENIED");
    assert.match(textOf(secret), /global layer .*deny "secret_lookup" \(tools\)/);
    const guest = await call("guest_lookup", "agent:guest:main", "guest");
    assert.equal(guest.errorCode, "TOOL_DENIED");
  });

  it("plain list: the allowed tools with their actor; --json too", async () => {
    const plain = await runCli(["tools"], env);
    assert.equal(plain.code, 0, plain.stderr);
    assert.match(row(plain.stdout, "browser"), /^\s+browser\s+browser$/);
    assert.match(row(plain.stdout, "exec"), /^\s+exec \(bash\)\s+tools$/);
    assert.equal(row(plain.stdout, "secret_lookup"), "", "a denied tool is not in the plain list");
    const coder = await runCli(["tools", "--agent", "coder", "--json"], env);
    assert.equal(coder.code, 0, coder.stderr);
    const listed = (JSON.parse(coder.stdout) as { tools: { name: string; actor: string }[] }).tools;
    assert.ok(listed.some((t) => t.name === "read" && t.actor === "tools"));
    assert.ok(listed.some((t) => t.name === "weather_lookup" && t.actor === "tools-ext"), "no policy: every agent gets it");
    assert.ok(!listed.some((t) => t.name === "browser"));
  });

  it("an unknown agent: exit 1, saying which agents there are", async () => {
    const r = await runCli(["tools", "--explain", "--agent", "nobody"], env);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /no agent "nobody" is configured; the agents in config\.json are main, coder, guest/);
  });
});

describe("lurkbot tools: merging the actors' answers", () => {
  const decision = (tool: string, allowed = true) => ({ tool, allowed, layer: "profile" as const, rule: 'allow "*" (profile full)', groups: [], aliases: [], trace: [] });
  const reply = (actor: string, tools: string[]) => toolsExplainReply.parse({ actor, agentId: "main", sessionType: "main", profile: "full", decisions: tools.map((t) => decision(t)) });

  it("each name once: the tools actor's first, then by actor name; a name served twice is noted", () => {
    const merged = mergeExplained([reply("zeta", ["read", "z_tool"]), reply("browser", ["browser"]), reply("tools", ["read", "exec"])]);
    assert.deepEqual(merged.actors, ["tools", "browser", "zeta"]);
    assert.deepEqual(merged.tools.map((t) => `${t.tool}@${t.actor}`), ["browser@browser", "exec@tools", "read@tools", "z_tool@zeta"]);
    assert.deepEqual(merged.tools.find((t) => t.tool === "read")?.alsoServedBy, ["zeta"]);
    const text = formatTools({ ...merged }, true);
    assert.match(text, /\ntools by actor: tools \(2\), browser \(1\), zeta \(1\)\n/);
    assert.match(text, /\nnote: read is served by tools and zeta: each call of it runs in every one of them/);
  });
});
