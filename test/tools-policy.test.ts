/**
 * The layered tool policy (seeds 001 §3.4): tables of cases over the pure functions (profiles,
 * groups, every layer, deny-wins conflicts, subagent and group sessions, wildcards), then over
 * a real bus: the tools actor filters `lurk.tools.list` per session and refuses denied calls
 * with TOOL_DENIED, and `lurkbot tools --explain --json` shows the deciding layer per tool.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { toolCallReply, type SessionType } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { parseConfig } from "../shared/runtime/config.js";
import { decideTool, type PolicyContext, type PolicyLayer, type PolicyTool, SUBAGENT_DENY_LIST } from "../shared/runtime/tool-policy.js";
import { allowedCatalog, policyContext } from "../shared/runtime/tool-policy-config.js";
import { BUILTIN_TOOLS } from "../services/tools/registry.js";
import { policyTablesMarkdown } from "../services/tools/policy-doc.js";
import { REPO_ROOT } from "../shared/scripts/paths.js";
import type { ActorProcess } from "./harness/actors.js";
import { runCli } from "./harness/cli.js";
import { TestNats } from "./harness/nats.js";
import { startToolsActor } from "./harness/tools-actor.js";

/** a tool as the policy sees it: the seeds' names; groups only where the definition declares them */
const t = (name: string, groups: string[] = [], aliases: string[] = []): PolicyTool => ({ name, groups, aliases });
const TOOLS: Record<string, PolicyTool> = {
  read: t("read", ["fs", "read-only"]),
  write: t("write"),
  exec: t("exec", ["group:runtime"], ["bash"]),
  web_fetch: t("web_fetch"),
  sessions_spawn: t("sessions_spawn"),
  sessions_list: t("sessions_list"),
  session_status: t("session_status"),
  message: t("message"),
  memory_search: t("memory_search"),
  cron: t("cron"),
  image: t("image"),
  canvas: t("canvas"),
  browser: t("browser"),
  custom_thing: t("custom_thing", ["custom"]),
};

interface Case {
  name: string;
  ctx: Partial<PolicyContext>;
  tool: keyof typeof TOOLS;
  allowed: boolean;
  layer?: PolicyLayer;
  /** a substring of the deciding rule */
  rule?: string;
}

const CASES: Case[] = [
  // layer 1: profiles
  { name: "coding allows group:fs", ctx: { profile: "coding" }, tool: "read", allowed: true, layer: "profile", rule: "group:fs" },
  { name: "coding allows group:runtime", ctx: { profile: "coding" }, tool: "exec", allowed: true, layer: "profile" },
  { name: "coding allows image", ctx: { profile: "coding" }, tool: "image", allowed: true },
  { name: "coding allows canvas (§4.3)", ctx: { profile: "coding" }, tool: "canvas", allowed: true },
  { name: "coding leaves out message", ctx: { profile: "coding" }, tool: "message", allowed: false, layer: "profile", rule: "not in the allow list" },
  { name: "coding leaves out web_fetch", ctx: { profile: "coding" }, tool: "web_fetch", allowed: false, layer: "profile" },
  { name: "minimal is session_status only", ctx: { profile: "minimal" }, tool: "session_status", allowed: true },
  { name: "minimal leaves out read", ctx: { profile: "minimal" }, tool: "read", allowed: false, layer: "profile" },
  { name: "messaging allows message", ctx: { profile: "messaging" }, tool: "message", allowed: true, rule: "group:messaging" },
  { name: "messaging allows sessions_list", ctx: { profile: "messaging" }, tool: "sessions_list", allowed: true },
  { name: "messaging leaves out exec", ctx: { profile: "messaging" }, tool: "exec", allowed: false, layer: "profile" },
  { name: "full allows anything", ctx: { profile: "full" }, tool: "custom_thing", allowed: true, rule: "\"*\"" },
  // groups: a definition's own groups ("custom" = "group:custom") and the seeds' fixed lists
  { name: "a definition's group names it", ctx: { profile: "full", global: { allow: ["group:custom"] } }, tool: "custom_thing", allowed: true, layer: "global" },
  { name: "the seeds' group names a tool without declared groups", ctx: { profile: "full", global: { deny: ["group:web"] } }, tool: "web_fetch", allowed: false, layer: "global" },
  { name: "an alias in a group counts (bash in group:runtime)", ctx: { profile: "full", global: { deny: ["bash"] } }, tool: "exec", allowed: false, layer: "global", rule: "\"bash\"" },
  // the seeds' other groups as rule entries: group:sessions, group:memory, group:automation
  { name: "group:sessions denies sessions_list", ctx: { profile: "full", global: { deny: ["group:sessions"] } }, tool: "sessions_list", allowed: false, layer: "global", rule: "group:sessions" },
  { name: "group:sessions denies session_status and sessions_spawn", ctx: { profile: "full", agent: { deny: ["group:sessions"] } }, tool: "session_status", allowed: false, layer: "agent", rule: "group:sessions" },
  { name: "group:sessions leaves message alone", ctx: { profile: "full", global: { deny: ["group:sessions"] } }, tool: "message", allowed: true },
  { name: "group:memory denies memory_search", ctx: { profile: "full", global: { deny: ["group:memory"] } }, tool: "memory_search", allowed: false, layer: "global", rule: "group:memory" },
  { name: "an allow of group:memory narrows: cron is out", ctx: { profile: "full", agent: { allow: ["group:memory"] } }, tool: "cron", allowed: false, layer: "agent" },
  { name: "group:automation denies cron", ctx: { profile: "full", global: { deny: ["group:automation"] } }, tool: "cron", allowed: false, layer: "global", rule: "group:automation" },
  { name: "an allow of group:automation lets cron in", ctx: { profile: "full", agent: { allow: ["group:automation"] } }, tool: "cron", allowed: true, layer: "agent", rule: "group:automation" },
  { name: "an allow of group:automation keeps memory_search out", ctx: { profile: "full", agent: { allow: ["group:automation"] } }, tool: "memory_search", allowed: false, layer: "agent" },
  // layers 2-3: provider and model
  { name: "built-in: ollama has no image", ctx: { profile: "full", model: "ollama/llama3" }, tool: "image", allowed: false, layer: "provider" },
  { name: "built-in: gpt-3.5 has no browser", ctx: { profile: "full", model: "openai/gpt-3.5-turbo" }, tool: "browser", allowed: false, layer: "model" },
  { name: "byProvider deny", ctx: { profile: "full", model: "openai/gpt-4o", byProvider: { openai: { deny: ["read"] } } }, tool: "read", allowed: false, layer: "provider" },
  { name: "byProvider of another provider does not apply", ctx: { profile: "full", model: "anthropic/claude", byProvider: { openai: { deny: ["read"] } } }, tool: "read", allowed: true },
  { name: "byModel glob deny", ctx: { profile: "full", model: "openai/gpt-4o-mini", byModel: { "gpt-4o*": { deny: ["group:fs"] } } }, tool: "read", allowed: false, layer: "model" },
  { name: "byModel allow narrows", ctx: { profile: "full", model: "openai/gpt-4o", byModel: { "openai/gpt-4o": { allow: ["read"] } } }, tool: "exec", allowed: false, layer: "model" },
  // layer 4: global
  { name: "global deny by name", ctx: { profile: "coding", global: { deny: ["read"] } }, tool: "read", allowed: false, layer: "global", rule: "deny \"read\"" },
  { name: "global allow narrows", ctx: { profile: "coding", global: { allow: ["read"] } }, tool: "exec", allowed: false, layer: "global" },
  { name: "global allow cannot widen the profile", ctx: { profile: "minimal", global: { allow: ["read"] } }, tool: "read", allowed: false, layer: "profile" },
  { name: "deny wins within a layer", ctx: { profile: "full", global: { allow: ["read"], deny: ["read"] } }, tool: "read", allowed: false, layer: "global" },
  { name: "deny * denies everything", ctx: { profile: "full", global: { deny: ["*"] } }, tool: "read", allowed: false, layer: "global" },
  { name: "prefix wildcard deny", ctx: { profile: "full", global: { deny: ["sessions_*"] } }, tool: "sessions_list", allowed: false, layer: "global", rule: "sessions_*" },
  { name: "prefix wildcard leaves others", ctx: { profile: "full", global: { deny: ["sessions_*"] } }, tool: "session_status", allowed: true },
  // layer 5: agent
  { name: "agent deny", ctx: { profile: "coding", agent: { deny: ["exec"] } }, tool: "exec", allowed: false, layer: "agent" },
  { name: "agent allow beats nothing: a global deny still wins", ctx: { profile: "coding", global: { deny: ["read"] }, agent: { allow: ["read"] } }, tool: "read", allowed: false, layer: "global" },
  { name: "an allowed tool names the narrowest allow", ctx: { profile: "coding", agent: { allow: ["group:fs"] } }, tool: "read", allowed: true, layer: "agent" },
  // layer 6: session type
  { name: "group session loses exec", ctx: { profile: "coding", sessionType: "group" }, tool: "exec", allowed: false, layer: "session" },
  { name: "topic session loses sessions_spawn", ctx: { profile: "coding", sessionType: "topic" }, tool: "sessions_spawn", allowed: false, layer: "session" },
  { name: "thread session loses write", ctx: { profile: "coding", sessionType: "thread" }, tool: "write", allowed: false, layer: "session" },
  { name: "group session keeps read", ctx: { profile: "coding", sessionType: "group" }, tool: "read", allowed: true },
  { name: "dm session keeps exec", ctx: { profile: "coding", sessionType: "dm" }, tool: "exec", allowed: true },
  { name: "bySessionType deny", ctx: { profile: "coding", sessionType: "dm", bySessionType: { dm: { deny: ["read"] } } }, tool: "read", allowed: false, layer: "session" },
  // layer 7: sandbox
  { name: "sandboxed dm (configured) loses exec", ctx: { profile: "coding", sessionType: "dm", sandboxedSessions: ["dm"] }, tool: "exec", allowed: false, layer: "sandbox" },
  { name: "sandbox keeps sessions_spawn", ctx: { profile: "coding", sessionType: "dm", sandboxedSessions: ["dm"] }, tool: "sessions_spawn", allowed: true },
  // layer 8: subagent
  ...SUBAGENT_DENY_LIST.filter((n) => n in TOOLS).map((n): Case => ({ name: `subagent loses ${n}`, ctx: { profile: "full", sessionType: "subagent" }, tool: n, allowed: false, layer: "subagent" })),
  { name: "subagent keeps read and exec", ctx: { profile: "coding", sessionType: "subagent" }, tool: "exec", allowed: true },
  { name: "tools.subagent adds to the list", ctx: { profile: "coding", sessionType: "subagent", subagent: { deny: ["exec"] } }, tool: "exec", allowed: false, layer: "subagent", rule: "tools.subagent" },
  { name: "main session is not a subagent", ctx: { profile: "full", sessionType: "main" }, tool: "sessions_spawn", allowed: true },
  // deny wins across layers: the first denying layer in order is named
  { name: "profile and subagent both deny: profile is named", ctx: { profile: "minimal", sessionType: "subagent" }, tool: "cron", allowed: false, layer: "profile" },
  { name: "profile allows, session denies", ctx: { profile: "full", sessionType: "group", global: { allow: ["*"] } }, tool: "cron", allowed: false, layer: "session" },
];

describe("tool policy tables", () => {
  for (const c of CASES) {
    it(c.name, () => {
      const ctx: PolicyContext = { profile: "coding", sessionType: "main" as SessionType, ...c.ctx };
      const d = decideTool(TOOLS[c.tool]!, ctx);
      assert.equal(d.allowed, c.allowed, `${c.tool}: ${d.layer} ${d.rule}`);
      if (c.layer) assert.equal(d.layer, c.layer, d.rule);
      if (c.rule) assert.ok(d.rule.includes(c.rule), `rule "${d.rule}" mentions ${c.rule}`);
      if (!d.allowed) assert.ok(d.trace.some((v) => v.effect === "deny" && v.layer === d.layer));
    });
  }

  it("services/tools/README.md shows the profile, group and deny-list tables the code has", () => {
    const readme = readFileSync(join(REPO_ROOT, "services", "tools", "README.md"), "utf8");
    const block = /<!-- policy-tables:begin -->\n([\s\S]*?)\n<!-- policy-tables:end -->/.exec(readme)?.[1];
    assert.ok(block, "the README has the policy-tables block");
    assert.equal(block, policyTablesMarkdown(), "regenerate it with: node dist/services/tools/policy-doc.js");
  });

  it("builds the context from config: agent profile and rules, session type from the key", () => {
    const cfg = parseConfig({
      agents: [{ id: "main", default: true, toolProfile: "coding", tools: { deny: ["exec"] } }, { id: "ops", toolProfile: "full", model: "ollama/llama3" }],
      tools: { deny: ["write"], byModel: { "gpt-4o*": { deny: ["read"] } } },
    }, { LURKBOT_HOME: "/tmp/lurk-policy-none" }, "/tmp/lurk-policy-none");
    const ops = cfg.agents[1]!;
    const ctx = policyContext(cfg, ops, { agentId: "ops", sessionKey: "agent:ops:subagent:c1" });
    assert.equal(ctx.profile, "full");
    assert.equal(ctx.sessionType, "subagent");
    assert.equal(ctx.model, "ollama/llama3");
    assert.deepEqual(ctx.global?.deny, ["write"]);
    // the key wins over a stated session type
    assert.equal(policyContext(cfg, ops, { sessionKey: "agent:ops:telegram:group:g1", sessionType: "main" }).sessionType, "group");
    const catalog = BUILTIN_TOOLS.map((tool) => ({ name: tool.name }));
    const mainList = allowedCatalog(cfg, BUILTIN_TOOLS, catalog, { agentId: "main" }).map((d) => d.name);
    assert.ok(mainList.includes("read"), `${mainList}`);
    assert.ok(!mainList.includes("exec") && !mainList.includes("write"), `agent and global denies: ${mainList}`);
    assert.deepEqual(allowedCatalog(cfg, BUILTIN_TOOLS, catalog, { agentId: "nobody" }), []);
    assert.ok(!allowedCatalog(cfg, BUILTIN_TOOLS, catalog, { agentId: "main", model: "openai/gpt-4o-mini" }).some((d) => d.name === "read"), "byModel denies read");
  });
});

describe("tool policy over the bus", () => {
  let nats: TestNats;
  let tools: ActorProcess;
  let nc: NatsConnection;
  let client: BusClient;
  let ws: string;
  let n = 0;

  const call = (tool: string, args: Record<string, unknown>, sessionKey = "agent:main:main") =>
    client.callSubject(`lurk.tools.call.${tool}`, "lurk.tools.call.v1", {
      toolCallId: `call-${++n}`, runId: "run-1", sessionKey, agentId: "main", sessionType: "main", tool, args,
    }, toolCallReply, { timeoutMs: 30_000 });

  before(async () => {
    ws = mkdtempSync(join(tmpdir(), "lurk-policy-ws-"));
    writeFileSync(join(ws, "notes.txt"), "hello\n");
    // read denied everywhere; subagents additionally lose exec (the built-in tools are in none of the seeds' subagent list)
    ({ nats, tools, nc, client } = await startToolsActor(ws, { tools: { deny: ["read"], subagent: { deny: ["exec"] } } }));
  });
  after(async () => {
    await nc?.close();
    await tools?.stop();
    await nats?.stop();
    rmSync(ws, { recursive: true, force: true });
  });

  it("lists per session: a subagent key lacks the subagent-denied tools of the main session", async () => {
    const main = await client.call("tools", "list", { agentId: "main", sessionKey: "agent:main:main" });
    const sub = await client.call("tools", "list", { agentId: "main", sessionKey: "agent:main:subagent:child-1" });
    const mainNames = main.tools.map((x) => x.name);
    const subNames = sub.tools.map((x) => x.name);
    assert.ok(mainNames.includes("exec"), `main has exec: ${mainNames}`);
    assert.ok(!mainNames.includes("read"), "read is denied by tools.deny");
    assert.ok(!subNames.includes("exec"), `subagent lacks exec: ${subNames}`);
    const group = await client.call("tools", "list", { agentId: "main", sessionKey: "agent:main:telegram:group:g1" });
    assert.ok(!group.tools.some((x) => x.name === "exec"), "a group session lacks exec");
    const unknown = await client.call("tools", "list", { agentId: "nobody" });
    assert.deepEqual(unknown.tools, []);
  });

  it("refuses a call to a tool denied by config with TOOL_DENIED naming the layer", async () => {
    const reply = await call("read", { path: "notes.txt" });
    assert.equal(reply.isError, true);
    assert.equal(reply.errorCode, "TOOL_DENIED");
    const text = reply.content.map((b) => (b.type === "text" ? b.text : "")).join("");
    assert.match(text, /global layer/);
    assert.match(text, /deny "read"/);
    assert.ok(!text.includes("hello"), "the file was not read");
  });

  it("refuses a subagent's call through an alias (bash) of a subagent-denied tool", async () => {
    const reply = await call("bash", { command: "echo hi" }, "agent:main:subagent:child-1");
    assert.equal(reply.errorCode, "TOOL_DENIED");
    assert.match(reply.content.map((b) => (b.type === "text" ? b.text : "")).join(""), /subagent layer/);
  });

  it("lurkbot tools --explain --json lists each tool with its deciding layer", async () => {
    const env = { ...nats.env(), ...nats.passwordEnv("cli") };
    const r = await runCli(["tools", "--explain", "--json"], env);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as { agentId: string; sessionType: string; tools: { tool: string; allowed: boolean; layer: string; rule: string }[] };
    assert.equal(report.agentId, "main");
    assert.equal(report.sessionType, "main");
    const byName = new Map(report.tools.map((x) => [x.tool, x]));
    for (const tool of BUILTIN_TOOLS) assert.ok(byName.has(tool.name), `${tool.name} is explained`);
    assert.deepEqual({ ...byName.get("read"), rule: undefined }, { ...byName.get("read"), allowed: false, layer: "global", rule: undefined });
    assert.equal(byName.get("exec")?.allowed, true);
    assert.equal(byName.get("exec")?.layer, "profile");

    const sub = await runCli(["tools", "--session", "agent:main:subagent:c1", "--explain", "--json"], env);
    assert.equal(sub.code, 0, sub.stderr);
    const subReport = JSON.parse(sub.stdout) as { sessionType: string; tools: { tool: string; allowed: boolean; layer: string }[] };
    assert.equal(subReport.sessionType, "subagent");
    assert.deepEqual(subReport.tools.find((x) => x.tool === "exec"), { ...subReport.tools.find((x) => x.tool === "exec"), allowed: false, layer: "subagent" });

    // the text table: a header, then per tool: name, serving actor, allowed/DENIED, deciding layer, rule
    const text = await runCli(["tools", "--explain"], env);
    assert.equal(text.code, 0, text.stderr);
    const lines = text.stdout.split("\n");
    assert.match(lines[0]!, /^agent main · main session · profile coding$/);
    const row = (tool: string) => lines.find((l) => l.trim().split(/\s+/)[0] === tool);
    assert.match(row("read") ?? "", /^\s+read\s+tools\s+DENIED\s+global\s+deny "read" \(tools\)$/);
    assert.match(row("exec") ?? "", /^\s+exec\s+tools\s+allowed\s+profile\s+allow "group:runtime" \(profile coding\)/);
    assert.match(row("web_fetch") ?? "", /^\s+web_fetch\s+tools\s+DENIED\s+profile\s+/);
    assert.equal(lines.filter((l) => /^\s+\S+\s+tools\s+(allowed|DENIED)\s/.test(l)).length, BUILTIN_TOOLS.length, "one row per tool");

    const plain = await runCli(["tools"], env);
    assert.equal(plain.code, 0, plain.stderr);
    assert.match(plain.stdout, /exec/);
    assert.doesNotMatch(plain.stdout, /^\s+read/m);
    const bad = await runCli(["tools", "--session", "nonsense"], env);
    assert.equal(bad.code, 64);
  });
});
