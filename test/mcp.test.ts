/**
 * The mcp actor (services/mcp) as a real process on a real nats-server, against real MCP servers
 * built with the SDK (test/fakes/mcp-server.ts): a stdio child and a streamable HTTP server. The
 * catalog shows their tools under prefixed names with their schemas and the layered policy;
 * calls return the servers' results (isError, images, resources mapped); the HTTP server gets
 * its header filled in from a `${LURKBOT_MCP_…}` secret; the stdio child sees only a minimal
 * environment; secrets never reach the log; a timeout and a cancellation reach the server as
 * notifications/cancelled; list_changed updates the catalog and is announced; a crashed stdio
 * server gives the call a clear error and is started again; a malformed bus call gets a typed
 * error; `lurk.mcp.status` lists the servers (`lurkbot mcp list`, `lurkbot status`). An SSE-only
 * server is reached through the fallback; a server whose command does not exist is reported
 * failed while the others serve. A whole-system run (fake OpenAI) calls an MCP tool through the
 * agent loop.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { envelope, errorReplySchema, subjects, toolCallReply, type McpStatusReply, type ToolDefinition } from "../shared/contract/index.js";
import { BusClient, SERVICE_ERROR_HEADER } from "../shared/runtime/client.js";
import { actorEnv, LAUNCHER_ACTORS, launcherActors, selectActors } from "../services/cli/actors.js";
import { mcpChecks } from "../services/cli/audit/mcp.js";
import { mcpConfigSchema } from "../shared/runtime/config-mcp.js";
import { fit, mcpTools } from "../services/mcp/tools.js";
import { audit, byId, freshHome, removeAuditDirs } from "./harness/audit.js";
import { isStorableSecret } from "../services/cli/stored-secrets.js";
import { catalogToolName, toolPrefix } from "../services/mcp/names.js";
import { toolEntry } from "../services/mcp/definitions.js";
import { mapResult } from "../services/mcp/results.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";
import { CLI_MAIN, runCli } from "./harness/cli.js";
import { CliClient, TestSystem } from "./harness/system.js";
import { pendingApproval, textOf, toolCaller } from "./harness/tools-actor.js";
import { PNG_BASE64, startHttpMcpServer, startSseMcpServer, type HttpMcpServer } from "./fakes/mcp-server.js";

const FIXTURE = fileURLToPath(new URL("./fakes/mcp-server.js", import.meta.url));
const KEY = "mcp-secret-key-0123456789abcdef";
const TOKEN = "mcp-http-token-fedcba9876543210";
const LEAK = "sk-lurkbot-own-secret-0123456789";

function mcpConfig(eventsFile: string, httpUrl: string, sseUrl = "http://127.0.0.1:9/sse"): Record<string, unknown> {
  return {
    agents: [{ id: "main", default: true, toolProfile: "full" }, { id: "guest", toolProfile: "coding" }],
    mcp: {
      reconnectMinMs: 100,
      reconnectMaxMs: 1000,
      servers: {
        local: { type: "stdio", command: process.execPath, args: [FIXTURE, "--stdio"], env: { MCP_EVENTS_FILE: eventsFile, MCP_SECRET: "${LURKBOT_MCP_TEST_KEY}" }, denyTools: ["hidden"] },
        remote: { url: httpUrl, headers: { Authorization: "Bearer ${LURKBOT_MCP_TEST_TOKEN}" }, allowTools: ["page_*"], denyTools: ["page_five"], approval: "always", toolPrefix: "web_docs" },
        old: { url: sseUrl },
        broken: { command: "/nonexistent/mcp-server" },
        off: { command: "/nonexistent/never-started", enabled: false },
      },
    },
  };
}

describe("mcp actor: MCP servers' tools on the bus", () => {
  let nats: TestNats;
  let http: HttpMcpServer;
  let sse: { url: string; close(): Promise<void> };
  let mcp: ActorProcess;
  let approvals: ActorProcess;
  let runner: NatsConnection;
  let cliNc: NatsConnection;
  let events: string;
  const lines = () => (existsSync(events) ? readFileSync(events, "utf8").split("\n").filter(Boolean) : []);
  const saw = (line: string) => waitFor(() => lines().includes(line) || undefined, 15_000, `"${line}" in the fixture's events`);
  const caller = toolCaller(() => new BusClient(runner), { idPrefix: "mcp" });
  const catalog = async (agentId = "main") => (await new BusClient(runner).call("tools", "list", { agentId, sessionKey: `agent:${agentId}:main` })).tools;
  const status = (): Promise<McpStatusReply> => new BusClient(cliNc).call("mcp", "status", {});

  before(async () => {
    nats = await TestNats.start();
    http = await startHttpMcpServer(TOKEN);
    sse = await startSseMcpServer();
    events = join(nats.dir, "mcp-events.log");
    writeFileSync(join(nats.home, "config.json"), JSON.stringify(mcpConfig(events, http.url, sse.url)));
    approvals = await startActorProcess("approvals", nats);
    mcp = await startActorProcess("mcp", nats, { LURKBOT_MCP_TEST_KEY: KEY, LURKBOT_MCP_TEST_TOKEN: TOKEN, OPENAI_API_KEY: LEAK, LURKBOT_LOG_LEVEL: "info" });
    runner = await nats.connect("agent-runner");
    cliNc = await nats.connect("cli");
    await waitFor(async () => {
      const s = await status();
      return s.servers.filter((x) => x.state === "connected").length === 3 || undefined;
    }, 20_000, "the three servers that can connect connected");
  });
  after(async () => {
    await runner?.close();
    await cliNc?.close();
    await mcp?.stop();
    await approvals?.stop();
    await http?.close();
    await sse?.close();
    await nats?.stop();
  });

  it("the catalog shows the servers' tools with prefixed names, their schemas, side effects and groups, filtered by allow/deny and the policy", async () => {
    const tools = await catalog();
    const byName = new Map(tools.map((t) => [t.name, t] as const));
    const names = [...byName.keys()].sort();
    assert.deepEqual(names, ["mcp_local_add_tool", "mcp_local_crash", "mcp_local_echo", "mcp_local_env", "mcp_local_fail", "mcp_local_picture", "mcp_local_slow",
      "mcp_old_sse_ping", "mcp_web_docs_page_four", "mcp_web_docs_page_one", "mcp_web_docs_page_three", "mcp_web_docs_page_two"]);
    const echo = byName.get("mcp_local_echo")!;
    assert.equal(echo.actor, "mcp");
    assert.equal((echo.parameters as { type: string }).type, "object");
    assert.deepEqual(Object.keys((echo.parameters as { properties: object }).properties), ["text"]);
    assert.match(echo.description, /Echoes the text back\. \(MCP server "local"\)/);
    assert.equal(echo.sideEffects, false);
    assert.equal(echo.parallelSafe, true);
    assert.deepEqual(echo.groups, ["group:mcp", "group:mcp_local"]);
    assert.equal(byName.get("mcp_local_fail")!.sideEffects, true, "no readOnlyHint: side effects");
    assert.equal(byName.get("mcp_web_docs_page_five"), undefined, "denyTools");
    // approval "always": every tool of that server needs a human; the other server's tools do not
    assert.equal(byName.get("mcp_web_docs_page_one")!.needsApproval, true);
    assert.equal(byName.get("mcp_web_docs_page_one")!.sideEffects, false);
    assert.equal(echo.needsApproval, false);
    // the coding profile has no MCP tools (the layered policy applies as to built-in tools)
    assert.deepEqual((await catalog("guest")).map((t: ToolDefinition) => t.name), []);
    const s = await status();
    const remote = s.servers.find((x) => x.name === "remote")!;
    assert.equal(remote.transport, "streamable-http");
    assert.equal(remote.tools.length, 4, "five tools over three pages, one denied");
    assert.equal(remote.skipped, 1);
    assert.equal(s.servers.find((x) => x.name === "old")!.transport, "sse", "the streamable HTTP connect failed: SSE");
    const broken = s.servers.find((x) => x.name === "broken")!;
    assert.equal(broken.state === "failed" || broken.state === "connecting", true);
    assert.match(broken.lastError ?? "", /ENOENT|not found|spawn/i);
    assert.deepEqual(s.servers.find((x) => x.name === "off"), { name: "off", transport: "stdio", state: "disabled", tools: [], skipped: 0, connects: 0 });
    const local = s.servers.find((x) => x.name === "local")!;
    assert.deepEqual(local.serverInfo, { name: "lurkbot-test-stdio", version: "1.2.3" });
    assert.equal(local.skipped, 1, "hidden");
  });

  it("calls return the server's result: text, isError kept, images and embedded resources mapped", async () => {
    assert.match(await caller.ok("mcp_local_echo", { text: "hi there" }), /^echo: hi there \(pid \d+\)$/);
    assert.equal(await caller.ok("mcp_old_sse_ping", {}), "pong over sse");
    const fail = await caller.call("mcp_local_fail", { why: "testing" });
    assert.equal(fail.isError, true);
    assert.equal(fail.errorCode, "TOOL_FAILED");
    assert.equal(textOf(fail), "failed on purpose: testing");
    const picture = await caller.call("mcp_local_picture", {});
    assert.equal(picture.isError, false);
    assert.deepEqual(picture.content, [
      { type: "text", text: "a red dot" },
      { type: "image", mime: "image/png", dataBase64: PNG_BASE64 },
      { type: "text", text: "[resource file:///notes/dot.txt (text/plain)]\nthe dot is 1x1" },
    ]);
  });

  it("a remote server gets its header from a ${LURKBOT_MCP_…} secret; its calls wait for a human (approval: always); a denied call is TOOL_DENIED", async () => {
    const pending = new BusClient(runner).callSubject(subjects().toolCall("mcp_web_docs_page_three"), "lurk.tools.call.v1", {
      toolCallId: "remote-1", runId: "run-remote", sessionKey: "agent:main:main", agentId: "main", tool: "mcp_web_docs_page_three", args: { x: "1" },
    }, toolCallReply, { timeoutMs: 30_000 });
    const cli = new BusClient(cliNc);
    const record = await pendingApproval(cli, "remote-1");
    assert.match(record.command ?? "", /MCP server "remote", tool page_three/);
    await cli.call("approvals", "decide", { approvalId: record.approvalId, decision: "approve", decidedBy: "cli:test" });
    const reply = await pending;
    assert.equal(textOf(reply), 'page_three over http: {"x":"1"}');
    assert.ok(http.authorizations.length > 0 && http.authorizations.every((a) => a === `Bearer ${TOKEN}`));
    const denied = await new BusClient(runner).callSubject(subjects().toolCall("mcp_local_echo"), "lurk.tools.call.v1", {
      toolCallId: "guest-1", runId: "run-guest", sessionKey: "agent:guest:main", agentId: "guest", tool: "mcp_local_echo", args: { text: "x" },
    }, toolCallReply, { timeoutMs: 10_000 });
    assert.equal(denied.errorCode, "TOOL_DENIED");
    assert.match(textOf(denied), /profile/);
  });

  it("a stdio server sees only a minimal environment and its configured values, never LurkBot's secrets", async () => {
    const env = JSON.parse(await caller.ok("mcp_local_env", {})) as Record<string, string>;
    assert.equal(env.MCP_SECRET, KEY, "the ${} reference was filled in");
    assert.equal(env.OPENAI_API_KEY, undefined);
    for (const name of Object.keys(env)) {
      assert.ok(["PATH", "HOME", "LANG", "LOGNAME", "SHELL", "TERM", "USER", "MCP_EVENTS_FILE", "MCP_SECRET"].includes(name), `unexpected variable ${name}`);
    }
    assert.ok(!JSON.stringify(env).includes(LEAK) && !JSON.stringify(env).includes(nats.password("mcp")));
  });

  it("secrets are redacted in the actor's log (the server's stderr included)", async () => {
    await waitFor(() => mcp.output().includes("starting pid") || undefined, 10_000, "the server's stderr in the log");
    const log = mcp.output();
    assert.ok(!log.includes(KEY), "the stdio env secret");
    assert.ok(!log.includes(TOKEN), "the header secret");
    assert.match(log, /starting pid \d+ key \[redacted\]/);
  });

  it("a call's timeout and its cancellation reach the server (notifications/cancelled)", async () => {
    const timedOut = await caller.call("mcp_local_slow", { id: "t1" }, { timeoutMs: 500 });
    assert.equal(timedOut.isError, true);
    assert.equal(timedOut.errorCode, "TIMEOUT", textOf(timedOut));
    await saw("cancelled t1");

    const pending = new BusClient(runner).callSubject(subjects().toolCall("mcp_local_slow"), "lurk.tools.call.v1", {
      toolCallId: "slow-c1", runId: "run-cancel", sessionKey: "agent:main:main", agentId: "main", tool: "mcp_local_slow", args: { id: "c1" },
    }, toolCallReply, { timeoutMs: 30_000 });
    await saw("started c1");
    runner.publish(subjects().toolsCancel, JSON.stringify(envelope("lurk.tools.cancel.v1", { runId: "run-cancel", toolCallId: "slow-c1", reason: "test gave up" })));
    const answer = await pending;
    assert.equal(answer.errorCode, "ABORTED");
    await saw("cancelled c1");
    assert.ok(!lines().includes("finished c1"));
  });

  it("notifications/tools/list_changed updates the catalog and announces it on lurk.tools.catalog", async () => {
    const announced = runner.subscribe(subjects().toolsCatalogChanged, { max: 1 });
    assert.equal(await caller.ok("mcp_local_add_tool", {}), "added late_tool");
    for await (const m of announced) assert.equal((m.json() as { actor: string }).actor, "mcp");
    const names = (await catalog()).map((t) => t.name);
    assert.ok(names.includes("mcp_local_late_tool"), names.join(","));
    assert.equal(await caller.ok("mcp_local_late_tool", { n: 21 }), "late 42");
  });

  it("`lurkbot mcp list` and `lurkbot status` show each server's state and tools, and no secret", async () => {
    const env = nats.env(nats.passwordEnv("cli"));
    const plain = await runCli(["mcp", "list", "--tools"], env);
    assert.equal(plain.code, 0, plain.stderr);
    assert.match(plain.stdout, /^SERVER\s+TRANSPORT\s+STATE\s+TOOLS/m);
    assert.match(plain.stdout, /^local\s+stdio\s+connected\s+8\s+1/m);
    assert.match(plain.stdout, /^remote\s+streamable-http\s+connected\s+4\s+1/m);
    assert.match(plain.stdout, /^off\s+stdio\s+disabled\s+0/m);
    assert.match(plain.stdout, /^broken\s+stdio\s+(failed|connecting)\s+0\s+0\s+0\s+could not connect: .*ENOENT/m);
    assert.match(plain.stdout, /^mcp_local_echo\s+echo\s+no$/m);
    assert.ok(!plain.stdout.includes(KEY) && !plain.stdout.includes(TOKEN) && !plain.stdout.includes(FIXTURE));
    const json = await runCli(["mcp", "list", "--json"], env);
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual((JSON.parse(json.stdout) as McpStatusReply).servers.map((x) => x.name), ["local", "remote", "old", "broken", "off"]);
    // `lurkbot status` lists the MCP servers under the actors
    const status = await runCli(["status"], env);
    assert.match(status.stdout, /^MCP servers/m);
    assert.match(status.stdout, /^ {2}local: connected, 8 tools$/m);
    assert.match(status.stdout, /^ {2}broken: (failed|connecting), 0 tools; last error: could not connect/m);
  });

  it("a crashed stdio server: the call gets a clear error, the server is started again and the next call works", async () => {
    const before = (await status()).servers.find((x) => x.name === "local")!;
    const firstPid = /pid (\d+)/.exec(await caller.ok("mcp_local_echo", { text: "a" }))![1];
    const crashed = await caller.call("mcp_local_crash", {});
    assert.equal(crashed.isError, true);
    assert.equal(crashed.errorCode, "TOOL_FAILED");
    assert.match(textOf(crashed), /connection to the MCP server "local" broke.*being restarted/);
    const again = await waitFor(async () => {
      const reply = await caller.call("mcp_local_echo", { text: "b" });
      return reply.isError ? undefined : textOf(reply);
    }, 20_000, "an echo after the restart");
    const secondPid = /pid (\d+)/.exec(again)![1];
    assert.notEqual(secondPid, firstPid, "a new server process");
    const after = (await status()).servers.find((x) => x.name === "local")!;
    assert.equal(after.state, "connected");
    assert.equal(after.connects, before.connects + 1);
    assert.ok(mcp.child.exitCode === null, "the actor is still running");
  });

  it("a malformed bus call gets a typed error and the actor keeps serving", async () => {
    const bad = await runner.request(subjects().toolCall("mcp_local_echo"), JSON.stringify({ type: "lurk.tools.call.v1", id: "x", ts: 1, toolCallId: 5 }), { timeout: 5000 });
    assert.ok(bad.headers?.get(SERVICE_ERROR_HEADER));
    assert.equal(errorReplySchema.parse(bad.json()).code, "VALIDATION_FAILED");
    const notJson = await runner.request(subjects().toolCall("mcp_local_echo"), "{not json", { timeout: 5000 });
    assert.equal(errorReplySchema.parse(notJson.json()).code, "BAD_JSON");
    assert.match(await caller.ok("mcp_local_echo", { text: "still here" }), /^echo: still here/);
  });
});

describe("mcp: naming, definitions, results and the launcher's secrets", () => {
  it("tool names are sanitized and capped at 64 characters, distinct when cut; all start mcp_, and their calls have their own subjects", () => {
    assert.equal(catalogToolName("mcp_files", "read.file"), "mcp_files_read_file");
    assert.equal(toolPrefix("files"), "mcp_files");
    assert.equal(toolPrefix("files", "web.docs"), "mcp_web_docs", "a toolPrefix replaces the server's name, never mcp_");
    assert.equal(subjects().toolCall("mcp_files_read"), "lurk.tools.call.mcp.mcp_files_read");
    assert.equal(subjects().toolCall("read"), "lurk.tools.call.read");
    const a = catalogToolName("mcp_server", `${"x".repeat(80)}_a`);
    const b = catalogToolName("mcp_server", `${"x".repeat(80)}_b`);
    assert.equal(a.length, 64);
    assert.notEqual(a, b);
    assert.match(a, /^[A-Za-z0-9_-]{1,64}$/);
  });

  it("a non-object or oversize input schema is skipped with the reason; one without type is an object schema", () => {
    const opts = { server: "s", groups: ["web"], maxSchemaBytes: 200, needsApproval: false };
    assert.match((toolEntry({ name: "t", inputSchema: { type: "string" } as never }, "mcp_s_t", opts) as { skipped: string }).skipped, /not an object schema/);
    assert.match((toolEntry({ name: "t", inputSchema: { type: "object", properties: { x: { description: "y".repeat(300) } } } }, "mcp_s_t", opts) as { skipped: string }).skipped, /over mcp\.maxSchemaBytes/);
    const ok = toolEntry({ name: "t", inputSchema: { properties: {} } as never }, "mcp_s_t", opts);
    assert.ok("definition" in ok);
    assert.equal(ok.definition.parameters.type, "object");
    assert.deepEqual(ok.definition.groups, ["group:mcp", "group:mcp_s", "group:web"]);
  });

  it("an image over the cap or of another type becomes a note; structured content shows as JSON", () => {
    const over = mapResult({ content: [{ type: "image", data: "A".repeat(400), mimeType: "image/png" }, { type: "image", data: "AAAA", mimeType: "image/bmp" }] }, { textCapBytes: 1000, imageCapBase64: 100 });
    assert.equal(over.content.length, 2);
    assert.match((over.content[0] as { text: string }).text, /over the reply's size cap/);
    assert.match((over.content[1] as { text: string }).text, /not an image type/);
    assert.deepEqual(mapResult({ content: [], structuredContent: { a: 1 }, isError: true }, { textCapBytes: 1000, imageCapBase64: 100 }), { content: [{ type: "text", text: '{\n  "a": 1\n}' }], isError: true });
  });

  it("the launcher gives LURKBOT_MCP_* secrets to the mcp actor only; they can be stored", () => {
    const credentials = { users: { mcp: "pw-mcp-0123456789abcdef", tools: "pw-tools-0123456789abcdef" } };
    const base = { PATH: "/usr/bin", LURKBOT_MCP_GITHUB_TOKEN: "ghp-secret", OPENAI_API_KEY: "sk-x" };
    assert.equal(actorEnv("mcp", base, credentials, "/h").LURKBOT_MCP_GITHUB_TOKEN, "ghp-secret");
    assert.equal(actorEnv("mcp", base, credentials, "/h").OPENAI_API_KEY, undefined);
    assert.equal(actorEnv("tools", base, credentials, "/h").LURKBOT_MCP_GITHUB_TOKEN, undefined);
    assert.ok(isStorableSecret("LURKBOT_MCP_GITHUB_TOKEN") && !isStorableSecret("LURKBOT_MCP_") && !isStorableSecret("GITHUB_TOKEN"));
  });
});

describe("mcp: launched only when a server is enabled; audit of secrets and URLs; bounded results", () => {
  const mcpOf = (servers: Record<string, unknown>) => ({ mcp: mcpConfigSchema.parse({ servers }) });
  after(() => removeAuditDirs());

  it("`lurkbot start` runs the mcp actor only while an MCP server is enabled; --only mcp runs it anyway", () => {
    assert.ok(!launcherActors(mcpOf({})).includes("mcp"));
    assert.ok(!launcherActors(mcpOf({ off: { command: "x", enabled: false } })).includes("mcp"));
    assert.deepEqual(launcherActors(mcpOf({ on: { command: "x" } })), [...LAUNCHER_ACTORS]);
    assert.ok(!launcherActors().includes("mcp"), "status without a config expects the actors that always run");
    assert.deepEqual(selectActors("tools,mcp"), ["tools", "mcp"]);
  });

  it("the audit flags literal secrets in env/headers (with the set-secret fix) and plain http to another host, never showing a value", () => {
    const config = mcpOf({
      gh: { url: "https://api.example.com/mcp", headers: { Authorization: "Bearer ghp_abcdefghijklmnop0123" } },
      search: { command: "s", env: { SEARCH_API_KEY: "abcdefgh12345678", DEBUG: "1", HOME_DIR: "/home/someone/notes", OTHER_TOKEN: "${LURKBOT_MCP_X}" } },
      "Plain_1": { url: "http://mcp.example.com/mcp", headers: { "X-Org": "acme" } },
      local: { url: "http://127.0.0.1:8080/mcp", headers: { "X-Api-Key": "${LURKBOT_MCP_LOCAL}" } },
      shaped: { command: "s", env: { WHATEVER: "sk-proj-abcdefghijklmnopqrstuvwxyz" }, enabled: false },
    });
    const findings = mcpChecks({ config } as never);
    assert.deepEqual(findings.map((f) => `${f.id} ${f.level}`).sort(), ["mcp.gh.secret-literal warning", "mcp.plain-1.plain-http critical", "mcp.search.secret-literal warning", "mcp.shaped.secret-literal warning"]);
    const search = findings.find((f) => f.id === "mcp.search.secret-literal")!;
    assert.equal(search.fixCommand, "npx lurkbot config set mcp.servers.search.env.SEARCH_API_KEY '${LURKBOT_MCP_SEARCH_SEARCH_API_KEY}'");
    assert.match(search.fix, /npx lurkbot config set-secret LURKBOT_MCP_SEARCH_SEARCH_API_KEY/);
    const gh = findings.find((f) => f.id === "mcp.gh.secret-literal")!;
    assert.equal(gh.fixCommand, undefined, "a value with a scheme: the fix names both commands");
    assert.match(gh.fix, /config set-secret LURKBOT_MCP_GH_AUTHORIZATION.*config set mcp\.servers\.gh\.headers\.Authorization 'Bearer \$\{LURKBOT_MCP_GH_AUTHORIZATION\}'/);
    const text = JSON.stringify(findings);
    for (const secret of ["ghp_abcdefghijklmnop0123", "abcdefgh12345678", "sk-proj-abcdefghijklmnopqrstuvwxyz"]) assert.ok(!text.includes(secret));
  });

  it("the audit's fix works: set-secret, then its fixCommand; `config set` writes a reference but refuses a literal secret in an MCP server", async () => {
    const secret = "abcdefgh12345678";
    const { home, env } = await freshHome({ mcp: { servers: { search: { command: "s", env: { SEARCH_API_KEY: secret } } } } });
    const before = byId((await audit(env)).report, "mcp.search.secret-literal");
    assert.ok(before?.fixCommand);
    const stored = await runCli(["config", "set-secret", "LURKBOT_MCP_SEARCH_SEARCH_API_KEY"], env, { input: `${secret}\n` });
    assert.equal(stored.code, 0, stored.stderr);
    const run = spawnSync("sh", ["-c", before.fixCommand.replace(/^npx lurkbot /, `"${process.execPath}" "${CLI_MAIN}" `)], { env, encoding: "utf8" });
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(readFileSync(join(home, "config.json"), "utf8")).mcp.servers.search.env, { SEARCH_API_KEY: "${LURKBOT_MCP_SEARCH_SEARCH_API_KEY}" });
    assert.equal(byId((await audit(env)).report, "mcp.search.secret-literal"), undefined, "gone");
    const refused = await runCli(["config", "set", "mcp.servers.search.env.SEARCH_API_KEY", "another-literal-123"], env);
    assert.equal(refused.code, 64);
    assert.match(refused.stderr, /config set-secret LURKBOT_MCP_SEARCH_SEARCH_API_KEY/);
    const header = await runCli(["config", "set", "mcp.servers.gh", "--json-value", JSON.stringify({ url: "https://x.example/mcp", headers: { Authorization: "Bearer ghp_abcdefghijklmnop0123" } })], env);
    assert.equal(header.code, 64, header.stdout);
    assert.match(header.stderr, /mcp\.servers\.gh\.headers\.Authorization is a secret.*'?Bearer \$\{LURKBOT_MCP_GH_AUTHORIZATION\}/);
    assert.ok(!header.stderr.includes("ghp_abcdefghijklmnop0123"));
    const reference = await runCli(["config", "set", "mcp.servers.gh", "--json-value", JSON.stringify({ url: "https://x.example/mcp", headers: { Authorization: "Bearer ${LURKBOT_MCP_GH_AUTHORIZATION}" } })], env);
    assert.equal(reference.code, 0, reference.stderr);
  });

  it("a result of many text blocks past the cap gets one note; images dropped to fit the payload stay linear", () => {
    const many = mapResult({ content: Array.from({ length: 5000 }, () => ({ type: "text", text: "x".repeat(100) })) }, { textCapBytes: 1000, imageCapBase64: 0 });
    assert.ok(many.content.length <= 11, String(many.content.length));
    assert.equal(many.content.filter((b) => b.type === "text" && b.text.includes("[cut:")).length, 1);
    const images = Array.from({ length: 50_000 }, () => ({ type: "image" as const, mime: "image/png", dataBase64: "AAAA" }));
    const started = Date.now();
    const fitted = fit(images, 64 * 1024);
    assert.ok(Date.now() - started < 2000, "linear");
    assert.ok(Buffer.byteLength(JSON.stringify(fitted)) <= 64 * 1024 && fitted[0]!.type === "image");
    assert.match((fitted.at(-1) as { text: string }).text, /^\[\d+ images left out/);
  });

  it("two servers whose tools map to one name: the first server keeps it", () => {
    const warnings: unknown[] = [];
    const rt = { config: { bus: { maxPayloadBytes: 1024 * 1024 }, tools: { outputCapBytes: 10_000 } }, log: { warn: (o: unknown) => warnings.push(o), info: () => undefined } };
    const entry = (serverName: string) => ({ name: "mcp_a_b_c", serverName, definition: { name: "mcp_a_b_c", description: "d", parameters: { type: "object" }, sideEffects: true, parallelSafe: false, groups: [], needsApproval: false } });
    const servers = [{ name: "a_b", timeoutMs: 1000, served: () => [entry("c")] }, { name: "a", timeoutMs: 1000, served: () => [entry("b_c")] }];
    const tools = mcpTools(rt as never, servers as never);
    assert.equal(tools.length, 1);
    assert.match(tools[0]!.approvalSummary!({ args: {} } as never) as string, /MCP server "a_b", tool c/);
    assert.equal(warnings.length, 1);
  });
});

describe("mcp: a run calls an MCP tool through the agent loop", () => {
  let system: TestSystem;
  let cli: CliClient;

  before(async () => {
    const events = "/dev/null";
    system = await TestSystem.start({ config: { ...mcpConfig(events, "http://127.0.0.1:9/mcp"), memory: { enabled: false } }, env: { LURKBOT_MCP_TEST_KEY: KEY, LURKBOT_MCP_TEST_TOKEN: TOKEN } });
    await system.startActor("mcp");
    cli = await CliClient.connect(system.nats, "mcp");
  });
  after(async () => {
    await cli?.close();
    await system?.stop();
  });

  it("the model is offered mcp_local_echo, calls it, and the server's answer reaches the model and the user", async () => {
    const toolNames = () => (system.fake.requests[0]?.body.tools ?? []).map((t) => t.function.name);
    let pings = 0;
    await waitFor(async () => {
      system.fake.reset();
      await cli.send(`ping ${++pings}`);
      return toolNames().includes("mcp_local_echo") || undefined;
    }, 20_000, "mcp_local_echo in the catalog the model is offered");
    system.fake.reset();
    system.fake.enqueue({ kind: "tool_calls", calls: [{ name: "mcp_local_echo", arguments: { text: "through the loop" } }] });
    const reply = await cli.send("echo through MCP", { timeoutMs: 30_000 });
    assert.match(reply.text, /^tool said: echo: through the loop \(pid \d+\)/);
    assert.ok(toolNames().includes("read"), "next to the built-in tools");
  });
});
