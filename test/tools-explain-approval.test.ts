/**
 * `lurkbot tools --explain` (text and --json) says which tools need a human approval and why,
 * through the CLI against a real tools actor (process) on a real nats-server: the tool's own
 * needsApproval, tools.requireApproval, the agent's requireApproval ("group:fs" naming the file
 * tools) and tools.exec.ask ("on-miss" with an allowlist: some calls of exec; "always": every
 * exec call, process only on start). Tools no rule names show no approval.
 */
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startActorProcess, type ActorProcess } from "./harness/actors.js";
import { runCli } from "./harness/cli.js";
import { TestNats } from "./harness/nats.js";

interface Explained { tool: string; allowed: boolean; approval?: { calls: "all" | "some"; reasons: { source: string; rule: string }[] } }

describe("lurkbot tools --explain: approvals", () => {
  let nats: TestNats;
  let tools: ActorProcess;
  let env: Record<string, string>;

  const writeConfig = (exec: Record<string, unknown>) => writeFileSync(join(nats.home, "config.json"), JSON.stringify({
    tools: { requireApproval: ["write"], exec: { ...exec, ...(existsSync("/usr/bin/bwrap") ? {} : { allowUnsandboxed: true }) } },
    agents: [{ id: "main", default: true }, { id: "ops", requireApproval: ["group:fs"] }],
  }));
  const explainJson = async (...args: string[]) => {
    const r = await runCli(["tools", "--explain", "--json", ...args], env);
    assert.equal(r.code, 0, r.stderr);
    return new Map((JSON.parse(r.stdout) as { tools: Explained[] }).tools.map((t) => [t.tool, t]));
  };

  before(async () => {
    nats = await TestNats.start();
    writeConfig({ ask: "on-miss", allowlist: ["ls", "echo"] });
    tools = await startActorProcess("tools", nats);
    env = nats.env(nats.passwordEnv("cli"));
  });
  after(async () => {
    await tools?.stop();
    await nats?.stop();
  });

  it("--json: the approval of each tool, with its rules; none for tools no rule names", async () => {
    const main = await explainJson();
    assert.deepEqual(main.get("write")?.approval, { calls: "all", reasons: [{ source: "global", rule: 'tools.requireApproval: "write"' }] });
    assert.equal(main.get("exec")?.approval?.calls, "some");
    assert.deepEqual(main.get("exec")?.approval?.reasons.map((r) => r.source), ["exec-ask"]);
    assert.match(main.get("exec")!.approval!.reasons[0]!.rule, /tools\.exec\.ask: "on-miss".*allowlist \(ls, echo\)/);
    assert.equal(main.get("process")?.approval?.calls, "some");
    assert.match(main.get("process")!.approval!.reasons[0]!.rule, /start action/);
    for (const name of ["read", "edit", "apply_patch", "web_fetch", "memory_search"]) assert.equal(main.get(name)?.approval, undefined, name);

    // the agent's own rule adds to the global one
    const ops = await explainJson("--agent", "ops");
    assert.deepEqual(ops.get("read")?.approval, { calls: "all", reasons: [{ source: "agent", rule: 'agents[ops].requireApproval: "group:fs"' }] });
    assert.deepEqual(ops.get("write")?.approval?.reasons.map((r) => r.source), ["global", "agent"]);
    assert.equal(ops.get("web_fetch")?.approval, undefined);
  });

  it("text: an approval line under each gated tool and a count", async () => {
    const r = await runCli(["tools", "--explain"], env);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split("\n");
    const after = (tool: string) => lines[lines.findIndex((l) => l.trim().split(/\s+/)[0] === tool) + 1] ?? "";
    assert.match(after("write"), /^\s+approval: every call \(tools\.requireApproval: "write"\)$/);
    assert.match(after("exec"), /^\s+approval: some calls \(tools\.exec\.ask: "on-miss"/);
    assert.doesNotMatch(after("read"), /approval/);
    assert.match(r.stdout, /^3 tools need a human approval/m);
  });

  it("tools.exec.ask always: every exec call; process on start only", async () => {
    writeConfig({ ask: "always" });
    await tools.stop();
    tools = await startActorProcess("tools", nats);
    const main = await explainJson();
    assert.deepEqual(main.get("exec")?.approval, { calls: "all", reasons: [{ source: "exec-ask", rule: 'tools.exec.ask: "always"' }] });
    assert.deepEqual(main.get("process")?.approval, { calls: "some", reasons: [{ source: "exec-ask", rule: 'tools.exec.ask: "always" (its start action)' }] });
    const text = await runCli(["tools", "--explain"], env);
    assert.match(text.stdout, /approval: every call \(tools\.exec\.ask: "always"\)/);
  });
});
