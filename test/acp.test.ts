/**
 * `lurkbot acp` end to end: the whole system (nats-server, sessions, approvals, tools, router,
 * agent-runner as processes, the fake OpenAI server) and the ACP server spawned as an editor
 * would, spoken to in JSON-RPC over its stdio: initialize, session/new, streamed answers, tool
 * calls, approvals as session/request_permission (allowed and rejected; two parallel calls of
 * one tool each asked about with its own call and summary), typed /approve and /deny kept to
 * the session's own approvals, session/cancel of a slow answer, malformed input, two sessions
 * kept apart, session/load replaying a session in a second process (only ACP sessions), a
 * prompt's image and embedded file reaching the model (a bad or over-cap image refused with
 * -32602, nothing sent), and a file the agent sends (the message tool) reaching the editor as
 * a resource_link to the saved file.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { argsHash } from "../shared/runtime/approval-token.js";
import { BusClient } from "../shared/runtime/client.js";
import { messageText } from "./fakes/openai-server.js";
import { AcpTestClient, chunkText, type RpcMessage } from "./harness/acp-client.js";
import { runCli } from "./harness/cli.js";
import { freePort, TestNats } from "./harness/nats.js";
import { TestSystem } from "./harness/system.js";

const BWRAP = "/usr/bin/bwrap";
const CWD = "/home/dev/project-x";
/** a 1x1 PNG */
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");
/** media.maxFileMb of this file's system: an image above it still fits the input line */
const MAX_FILE_MB = 2;
/** media.maxPromptFilesMb: the input line is 4 MiB and 4/3 of it (8 MiB) */
const PROMPT_FILES_MB = 3;

describe("lurkbot acp (Agent Client Protocol over stdio)", () => {
  let system: TestSystem;
  let acp: AcpTestClient;
  let env: Record<string, string>;
  let session: string;

  const newSession = async (client = acp): Promise<string> => (await client.ok("session/new", { cwd: CWD, mcpServers: [] })).sessionId as string;
  const prompt = (sessionId: string, text: string, client = acp) => client.call("session/prompt", { sessionId, prompt: [{ type: "text", text }] }, 90_000);
  /** the updates of a session that came after the first `from` */
  const since = (sessionId: string, from: number) => acp.updates(sessionId).slice(from);

  before(async () => {
    system = await TestSystem.start({
      // chunks 40 ms apart: more than the runner's 30 ms delta window, so the answer streams in pieces
      fake: { chunkDelayMs: 40 },
      files: { "notes.txt": "the treasure is under the oak tree\n" },
      config: {
        // memory_get (parallel-safe) needs an approval too: two calls of it in one turn run at once
        tools: { timeoutMs: 20_000, requireApproval: ["memory_get"], exec: { ask: "always", ...(existsSync(BWRAP) ? {} : { allowUnsandboxed: true }) } },
        approvals: { timeoutMs: 60_000 },
        // full: the message tool (files the agent sends)
        agents: [{ id: "main", default: true, toolProfile: "full" }],
        media: { maxFileMb: MAX_FILE_MB, maxPromptFilesMb: PROMPT_FILES_MB },
      },
    });
    writeFileSync(join(system.workspace, "chart.png"), PNG);
    env = system.nats.env({ ...system.nats.passwordEnv("cli"), LURKBOT_LOG_LEVEL: "info" });
    acp = AcpTestClient.start(env);
  });
  after(async () => {
    await acp?.close();
    await system?.stop();
  });

  it("initialize: protocol version 1, capabilities, no auth methods", async () => {
    const r = await acp.ok("initialize", { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true }, clientInfo: { name: "test-editor", version: "1.0" } });
    assert.equal(r.protocolVersion, 1);
    assert.equal(r.agentCapabilities.loadSession, true);
    assert.deepEqual(r.agentCapabilities.promptCapabilities, { image: true, audio: false, embeddedContext: true });
    assert.deepEqual(r.authMethods, []);
    assert.equal(r.agentInfo.name, "lurkbot");
  });

  it("session/new and a prompt whose answer streams as agent_message_chunk, ending with end_turn", async () => {
    session = await newSession();
    assert.match(session, /^acp-[0-9a-f-]{36}$/);
    const r = await prompt(session, "hello there");
    assert.deepEqual(r.result, { stopReason: "end_turn" }, JSON.stringify(r.error));
    const updates = acp.updates(session);
    const chunks = updates.filter((u) => u.sessionUpdate === "agent_message_chunk");
    assert.ok(chunks.length >= 2, `streamed in ${chunks.length} chunks`);
    assert.match(chunkText(updates), /^echo: .*hello there$/s);
    // the editor's directory reached the model with the first prompt, as context
    const sent = messageText(system.fake.requests.at(-1)!.body.messages.at(-1));
    assert.match(sent, new RegExp(`project directory ${CWD}`));
    assert.match(sent, /hello there$/);
    // stdout carried protocol messages only
    assert.deepEqual(acp.stray, []);
  });

  it("the model's thinking streams as agent_thought_chunk", async () => {
    const from = acp.updates(session).length;
    system.fake.enqueue({ kind: "text", text: "The answer is 42.", reasoning: "six times seven" });
    const r = await prompt(session, "what is six times seven?");
    assert.deepEqual(r.result, { stopReason: "end_turn" }, JSON.stringify(r.error));
    const updates = since(session, from);
    assert.equal(chunkText(updates, "agent_thought_chunk"), "six times seven");
    assert.equal(chunkText(updates), "The answer is 42.");
    const firstThought = updates.findIndex((u) => u.sessionUpdate === "agent_thought_chunk");
    const firstText = updates.findIndex((u) => u.sessionUpdate === "agent_message_chunk");
    assert.ok(firstThought < firstText, "the thinking came first");
  });

  it("a tool call (read a workspace file): tool_call, then tool_call_update completed with the preview", async () => {
    const from = acp.updates(session).length;
    const r = await prompt(session, "please read notes.txt");
    assert.deepEqual(r.result, { stopReason: "end_turn" }, JSON.stringify(r.error));
    const updates = since(session, from);
    const call = updates.find((u) => u.sessionUpdate === "tool_call");
    assert.ok(call, "a tool_call was sent");
    assert.equal(call.kind, "read");
    assert.equal(call.status, "in_progress");
    assert.equal(call.title, "read: notes.txt");
    assert.deepEqual(call.rawInput, { path: "notes.txt" });
    const done = updates.find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === call.toolCallId);
    assert.ok(done, "a tool_call_update for the same call");
    assert.equal(done.status, "completed");
    assert.match(done.content[0].content.text, /treasure is under the oak tree/);
    assert.ok(updates.indexOf(done) > updates.indexOf(call));
    assert.match(chunkText(updates), /tool said: .*treasure/);
    // the second prompt carries no context line again
    assert.doesNotMatch(messageText(system.fake.requests.at(-2)!.body.messages.at(-1)), /project directory/);
  });

  /** A prompt whose model calls exec (approval needed); the editor answers with `optionId`. */
  const approvalRound = async (command: string, optionId: string) => {
    const from = acp.updates(session).length;
    const asked: RpcMessage[] = [];
    acp.onRequest = (m) => {
      asked.push(m);
      return { outcome: { outcome: "selected", optionId } };
    };
    system.fake.enqueue({ kind: "tool_calls", calls: [{ name: "exec", arguments: { command } }] });
    const r = await prompt(session, `run ${command}`);
    assert.deepEqual(r.result, { stopReason: "end_turn" }, JSON.stringify(r.error));
    assert.equal(asked.length, 1, "one permission request");
    assert.equal(asked[0]!.method, "session/request_permission");
    return { request: asked[0]!.params, updates: since(session, from) };
  };

  it("an approval becomes session/request_permission; allow runs the command", async () => {
    const { request, updates } = await approvalRound("echo acp-approved >> acp.log", "allow_once");
    assert.equal(request.sessionId, session);
    assert.deepEqual(request.options.map((o: { kind: string }) => o.kind), ["allow_once", "reject_once"]);
    const call = updates.find((u) => u.sessionUpdate === "tool_call");
    assert.ok(call);
    assert.equal(call.kind, "execute");
    assert.equal(request.toolCall.toolCallId, call.toolCallId, "the permission is asked about the call the editor shows");
    assert.match(request.toolCall.title, /^exec: echo acp-approved/);
    const end = updates.find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === call.toolCallId && (u.status === "completed" || u.status === "failed"));
    assert.equal(end?.status, "completed", JSON.stringify(end));
    assert.equal(readFileSync(join(system.workspace, "acp.log"), "utf8").trim(), "acp-approved");
  });

  it("reject denies the call: tool_call_update failed, the command did not run", async () => {
    const { updates } = await approvalRound("touch acp-denied-marker", "reject_once");
    const call = updates.find((u) => u.sessionUpdate === "tool_call");
    const end = updates.find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === call?.toolCallId && (u.status === "completed" || u.status === "failed"));
    assert.equal(end?.status, "failed", JSON.stringify(end));
    assert.match(end.content[0].content.text, /denied/i);
    assert.equal(existsSync(join(system.workspace, "acp-denied-marker")), false);
  });

  it("two parallel calls of one tool needing approval: each permission request is about its own call, with the approval's summary", async () => {
    const from = acp.updates(session).length;
    const asked: RpcMessage[] = [];
    acp.onRequest = (m) => {
      asked.push(m);
      return { outcome: { outcome: "selected", optionId: "reject_once" } };
    };
    // the approval's summary is the call's `command` argument (the gate's default), different for each call
    system.fake.enqueue({ kind: "tool_calls", calls: [
      { name: "memory_get", arguments: { path: "MEMORY.md", command: "summary of the first call" } },
      { name: "memory_get", arguments: { path: "HISTORY.md", command: "summary of the second call" } },
    ] });
    const r = await prompt(session, "look at both memory files");
    assert.deepEqual(r.result, { stopReason: "end_turn" }, JSON.stringify(r.error));
    assert.equal(asked.length, 2, "two permission requests");
    const updates = since(session, from);
    const calls = updates.filter((u) => u.sessionUpdate === "tool_call");
    assert.equal(calls.length, 2, JSON.stringify(calls));
    // the path each call was started with (tool_call, or a later update when the notice came first)
    const pathOf = (id: string) => updates.filter((u) => u.toolCallId === id && typeof u.rawInput?.path === "string").at(-1)?.rawInput.path as string | undefined;
    const ids = new Set<string>();
    for (const m of asked) {
      const toolCall = m.params.toolCall;
      const summary = toolCall.content?.[0]?.content?.text as string;
      const expected = summary === "summary of the first call" ? "MEMORY.md" : summary === "summary of the second call" ? "HISTORY.md" : undefined;
      assert.ok(expected, `the request carries the approval's summary as text content: ${JSON.stringify(toolCall)}`);
      assert.equal(toolCall.title, `memory_get: ${summary}`);
      assert.ok(calls.some((c) => c.toolCallId === toolCall.toolCallId), "a call the editor shows");
      assert.equal(pathOf(toolCall.toolCallId), expected, `request ${summary} names its own call`);
      if (toolCall.rawInput?.path !== undefined) assert.equal(toolCall.rawInput.path, expected);
      ids.add(toolCall.toolCallId);
    }
    assert.equal(ids.size, 2, "the two requests name two calls");
    for (const id of ids) {
      const end = updates.find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === id && u.status === "failed");
      assert.ok(end, `call ${id} ended denied`);
    }
  });

  it("a typed /approve or /deny decides only approvals this ACP session asked about", async () => {
    const cli = new BusClient(await system.nats.connect("cli"));
    const tools = new BusClient(await system.nats.connect("tools"));
    try {
      // a pending approval of another session (e.g. a chat on another channel)
      const { approval } = await tools.call("approvals", "request", {
        toolCallId: "elsewhere-call", tool: "exec", argsHash: argsHash({ command: "rm -rf ~/notes" }), command: "rm -rf ~/notes",
        sessionKey: "agent:main:telegram:dm:123", agentId: "main",
      });
      for (const typed of [`/approve ${approval.approvalId}`, `/deny@lurkbot ${approval.approvalId}`]) {
        const from = acp.updates(session).length;
        const r = await prompt(session, typed);
        assert.deepEqual(r.result, { stopReason: "end_turn" }, JSON.stringify(r.error));
        assert.match(chunkText(since(session, from)), new RegExp(`was not sent: this editor session only decides the approvals it asked you about.*permission prompt`, "s"));
      }
      assert.equal((await cli.call("approvals", "get", { approvalId: approval.approvalId })).approval.status, "pending", "not decided");
      // one this session asked about goes to the router (decided already: the router says so)
      const { approvals } = await cli.call("approvals", "list", { limit: 1000 });
      const own = approvals.find((a) => a.sessionKey === `agent:main:cli:dm:${session}`);
      assert.ok(own, "an approval of this session");
      const r = await prompt(session, `/deny ${own.approvalId}`);
      assert.match(r.error?.message ?? JSON.stringify(r.result), new RegExp(`Could not deny ${own.approvalId}: .*already`));
      await cli.call("approvals", "decide", { approvalId: approval.approvalId, decision: "deny", decidedBy: "cli:test" });
    } finally {
      await cli.nc.close();
      await tools.nc.close();
    }
  });

  it("session/cancel during a slow streamed answer ends the prompt with cancelled; the session goes on", async () => {
    system.fake.responder = (body) => (messageText(body.messages.at(-1)).includes("tell a long story") ? { kind: "hang", text: "Once upon a time" } : undefined);
    try {
      const from = acp.updates(session).length;
      const pending = prompt(session, "tell a long story");
      await acp.waitFor((m) => m.method === "session/update" && m.params.sessionId === session && m.params.update.sessionUpdate === "agent_message_chunk" && acp.updates(session).length > from, 30_000, "the first chunk");
      const started = Date.now();
      acp.notify("session/cancel", { sessionId: session });
      const r = await pending;
      assert.deepEqual(r.result, { stopReason: "cancelled" }, JSON.stringify(r.error));
      assert.ok(Date.now() - started < 10_000, `cancelled in ${Date.now() - started} ms`);
    } finally {
      system.fake.responder = undefined;
    }
    const after = await prompt(session, "are you still there");
    assert.deepEqual(after.result, { stopReason: "end_turn" }, JSON.stringify(after.error));
  });

  it("malformed input gets JSON-RPC errors and the next request works", async () => {
    acp.writeLine("this is not json");
    assert.equal((await acp.response(null)).error?.code, -32700);
    acp.writeLine(JSON.stringify({ jsonrpc: "2.0", id: 901 }));
    assert.equal((await acp.response(901)).error?.code, -32600);
    acp.writeLine(JSON.stringify({ jsonrpc: "1.0", id: 902, method: "initialize" }));
    assert.equal((await acp.response(902)).error?.code, -32600);
    assert.equal((await acp.call("no/such/method", {})).error?.code, -32601);
    const bad = await acp.call("session/prompt", { sessionId: session, prompt: "not a list" });
    assert.equal(bad.error?.code, -32602);
    assert.match(bad.error!.message, /prompt/);
    assert.equal((await acp.call("session/new", { cwd: "relative/dir", mcpServers: [] })).error?.code, -32602);
    assert.equal((await acp.call("session/prompt", { sessionId: "acp-unknown", prompt: [{ type: "text", text: "x" }] })).error?.code, -32002);
    // a line over the cap (4 MiB + 4/3 of media.maxPromptFilesMb) is skipped with an error to its own id
    acp.writeLine(`{"jsonrpc":"2.0","id":903,"method":"initialize","params":{"x":"${"a".repeat(8 * 1024 * 1024 + 10)}"}}`);
    const tooLong = await acp.response(903);
    assert.equal(tooLong.error?.code, -32600);
    assert.match(tooLong.error!.message, /^the message is longer than 8388608 bytes, the most one line may carry \(a prompt's images and files may come to 3\.0 MB together, media\.maxPromptFilesMb, each at most 2\.0 MB, media\.maxFileMb\)$/);
    const r = await prompt(session, "still working?");
    assert.deepEqual(r.result, { stopReason: "end_turn" }, JSON.stringify(r.error));
    assert.deepEqual(acp.stray, []);
    assert.equal(acp.child.exitCode, null, "still serving");
  });

  it("an image and an embedded text file in a prompt reach the model: the image as an image part, the file's text in its note", async () => {
    const s = await newSession();
    const r = await acp.call("session/prompt", { sessionId: s, prompt: [
      { type: "text", text: "what is in this picture?" },
      { type: "image", data: PNG.toString("base64"), mimeType: "image/png", uri: "file:///home/dev/project-x/dot.png" },
      { type: "resource", resource: { uri: "file:///home/dev/project-x/secret.md", blob: Buffer.from("the password is marmalade\n").toString("base64"), mimeType: "text/markdown" } },
    ] }, 90_000);
    assert.deepEqual(r.result, { stopReason: "end_turn" }, JSON.stringify(r.error));
    const content = system.fake.requests.at(-1)!.body.messages.at(-1)!.content;
    const parts = (Array.isArray(content) ? content : []) as Array<{ type: string; text?: string; image_url?: { url: string } }>;
    const images = parts.filter((p) => p.type === "image_url");
    assert.equal(images.length, 1, JSON.stringify(parts.map((p) => p.type)));
    assert.equal(images[0]!.image_url!.url, `data:image/png;base64,${PNG.toString("base64")}`);
    const text = messageText(system.fake.requests.at(-1)!.body.messages.at(-1));
    assert.match(text, /what is in this picture\?/);
    assert.match(text, /\[attached image file:\/\/\/home\/dev\/project-x\/dot\.png\]/);
    assert.match(text, /secret\.md/);
    assert.match(text, /the password is marmalade/);
  });

  it("a prompt with a malformed, over-cap or non-image image is answered -32602 and nothing is sent", async () => {
    const s = await newSession();
    const before = system.fake.requests.length;
    const ask = (image: object) => acp.call("session/prompt", { sessionId: s, prompt: [{ type: "text", text: "look at this" }, { type: "image", ...image }] });
    const malformed = await ask({ data: "iVBOR*not-base64", mimeType: "image/png" });
    assert.equal(malformed.error?.code, -32602);
    assert.match(malformed.error!.message, /prompt\.1: the image's base64 data is malformed/);
    const big = await ask({ data: Buffer.alloc(MAX_FILE_MB * 1024 * 1024 + 1).toString("base64"), mimeType: "image/png" });
    assert.equal(big.error?.code, -32602);
    assert.match(big.error!.message, /prompt\.1: the image is 2\.0 MB, above the 2\.0 MB cap \(media\.maxFileMb\)/);
    const part = { type: "image", data: Buffer.alloc(1.6 * 1024 * 1024).toString("base64"), mimeType: "image/png" };
    const together = await acp.call("session/prompt", { sessionId: s, prompt: [{ type: "text", text: "both" }, part, part] });
    assert.equal(together.error?.code, -32602);
    assert.match(together.error!.message, /prompt\.2: the prompt's images and files come to 3\.2 MB with this image, above the 3\.0 MB one prompt may carry \(media\.maxPromptFilesMb\)/);
    const svg = await ask({ data: Buffer.from("<svg/>").toString("base64"), mimeType: "image/svg+xml" });
    assert.equal(svg.error?.code, -32602);
    assert.match(svg.error!.message, /prompt\.1\.mimeType: an image's mimeType must be one of/);
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(system.fake.requests.length, before, "no run started");
    assert.deepEqual(acp.updates(s), [], "nothing was shown");
    // the session goes on, and its first prompt still carries the editor's context
    const r = await prompt(s, "plain words");
    assert.deepEqual(r.result, { stopReason: "end_turn" }, JSON.stringify(r.error));
    assert.match(messageText(system.fake.requests.at(-1)!.body.messages.at(-1)), /project directory/);
  });

  it("a file the agent sends with the message tool reaches the editor as a resource_link to the saved file", async () => {
    const s = await newSession();
    system.fake.enqueue({ kind: "tool_calls", calls: [{ name: "message", arguments: { text: "here is the chart", files: ["chart.png"] } }] });
    const r = await prompt(s, "send me the chart");
    assert.deepEqual(r.result, { stopReason: "end_turn" }, JSON.stringify(r.error));
    // shown before the prompt was answered
    const updates = acp.updates(s);
    const links = updates.filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content.type === "resource_link");
    assert.equal(links.length, 1, JSON.stringify(updates.filter((u) => u.sessionUpdate === "agent_message_chunk")));
    const link = links[0]!.content;
    assert.equal(link.name, "chart.png");
    assert.equal(link.mimeType, "image/png");
    assert.equal(link.size, PNG.length);
    assert.match(link.uri, /^file:\/\//);
    const path = fileURLToPath(link.uri);
    assert.equal(path, join(system.nats.home, "downloads", "chart.png"));
    assert.deepEqual(readFileSync(path), PNG);
    assert.match(chunkText(updates), /here is the chart/);
    const call = updates.find((u) => u.sessionUpdate === "tool_call");
    assert.equal(call?.kind, "other");
    assert.equal(updates.find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === call?.toolCallId && u.status)?.status, "completed");
  });

  let alpha = "";
  it("two ACP sessions stay separate (run at the same time)", async () => {
    const [a, b] = [await newSession(), await newSession()];
    alpha = a;
    assert.notEqual(a, b);
    const [ra, rb] = await Promise.all([prompt(a, "remember alpha"), prompt(b, "remember beta")]);
    assert.deepEqual(ra.result, { stopReason: "end_turn" });
    assert.deepEqual(rb.result, { stopReason: "end_turn" });
    assert.match(chunkText(acp.updates(a)), /remember alpha/);
    assert.doesNotMatch(chunkText(acp.updates(a)), /beta/);
    assert.match(chunkText(acp.updates(b)), /remember beta/);
    assert.doesNotMatch(chunkText(acp.updates(b)), /alpha/);
    // each had its own LurkBot session: the model saw one conversation each
    const bodies = system.fake.requests.slice(-2).map((r) => r.body.messages.map((m) => messageText(m)).join("\n"));
    assert.ok(bodies.every((t) => !(t.includes("remember alpha") && t.includes("remember beta"))), "no transcript holds both");
    assert.ok(bodies.every((t) => !t.includes("treasure")), "neither holds the first session's history");
  });

  it("a failed run answers the prompt with a JSON-RPC error carrying LurkBot's error code", async () => {
    const s2 = await newSession();
    system.fake.enqueue({ kind: "error", status: 400, message: "This model cannot do that." });
    const r = await prompt(s2, "break please");
    assert.equal(r.result, undefined);
    assert.equal(r.error?.code, -32603);
    assert.equal((r.error?.data as { code?: string } | undefined)?.code, "PROVIDER_ERROR", JSON.stringify(r.error));
  });

  it("session/load in a second process replays the conversation, then goes on with it", async () => {
    const second = AcpTestClient.start(env);
    try {
      await second.ok("initialize", { protocolVersion: 1, clientCapabilities: {} });
      const loaded = await second.call("session/load", { sessionId: alpha, cwd: CWD, mcpServers: [] });
      assert.deepEqual(loaded.result, {}, JSON.stringify(loaded.error));
      const replay = second.updates(alpha);
      assert.deepEqual(replay.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content.text), ["remember alpha"], "the context line is not replayed");
      assert.match(chunkText(replay), /echo: .*remember alpha/s);
      const r = await prompt(alpha, "and now?", second);
      assert.deepEqual(r.result, { stopReason: "end_turn" }, JSON.stringify(r.error));
      assert.ok(system.fake.requests.at(-1)!.body.messages.some((m) => messageText(m).includes("remember alpha")), "the history went to the model");
      assert.equal((await second.call("session/load", { sessionId: "acp-never-made", cwd: CWD, mcpServers: [] })).error?.code, -32002);
      // not a session an ACP server made (e.g. `lurkbot chat --session notes`): refused, not replayed
      const foreign = await second.call("session/load", { sessionId: "notes", cwd: CWD, mcpServers: [] });
      assert.equal(foreign.error?.code, -32602);
      assert.match(foreign.error!.message, /only the sessions an ACP server made \(names starting with "acp-"/);
      assert.deepEqual(second.updates("notes"), []);
      assert.deepEqual(second.stray, []);
    } finally {
      assert.equal(await second.close(), 0);
    }
  });
});

describe("lurkbot acp without a bus", () => {
  it("answers initialize, and session/new with an error that says to start LurkBot", async () => {
    const nats = await TestNats.start();
    const env = nats.env({ ...nats.passwordEnv("cli"), LURKBOT_NATS_URL: `nats://127.0.0.1:${await freePort()}` });
    const client = AcpTestClient.start(env, ["--session-prefix", "zed-"]);
    try {
      assert.equal((await client.ok("initialize", { protocolVersion: 1 })).protocolVersion, 1);
      const r = await client.call("session/new", { cwd: "/tmp", mcpServers: [] });
      assert.equal(r.error?.code, -32603);
      assert.match(r.error!.message, /cannot reach NATS at .*npx lurkbot start/);
      assert.deepEqual(client.stray, []);
    } finally {
      assert.equal(await client.close(), 0);
      await nats.stop();
    }
  });

  it("refuses a bad --session-prefix or an unknown --agent (exit 64) before speaking", async () => {
    const nats = await TestNats.start({ streams: false });
    try {
      const bad = await runCli(["acp", "--session-prefix", "a.b"], nats.env());
      assert.equal(bad.code, 64);
      assert.equal(bad.stdout, "");
      const agent = await runCli(["acp", "--agent", "nobody"], nats.env());
      assert.equal(agent.code, 64);
      assert.match(agent.stderr, /--agent "nobody" is not in agents/);
    } finally {
      await nats.stop();
    }
  });
});
