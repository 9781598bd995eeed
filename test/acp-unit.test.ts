/**
 * The ACP server's parts without a bus: the JSON-RPC line transport (framing across reads,
 * errors for malformed input, requests both ways), the run-event mapping, the prompt's text and
 * the permission answers, which tool call an approval is about, typed approval decisions, and
 * session/load's refusal of sessions no ACP server made.
 */
import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { describe, it } from "node:test";
import { JsonRpcPeer, RpcError } from "../services/cli/acp/jsonrpc.js";
import { mapRunEvent, newTurnState, toolKind, toolTitle } from "../services/cli/acp/events-map.js";
import { MAX_PROMPT_CHARS, promptText } from "../services/cli/acp/prompt-text.js";
import { approvalToolCall, decisionOf } from "../services/cli/acp/permissions.js";
import { recordUpdates } from "../services/cli/acp/history.js";
import { AcpAgent } from "../services/cli/acp/server.js";
import { approvalCommand } from "../services/cli/acp/session.js";

const quiet = { debug: () => undefined, warn: () => undefined };

function rig(maxLineBytes?: number) {
  const input = new PassThrough();
  const output = new PassThrough();
  const lines: any[] = [];
  let buf = "";
  output.on("data", (d: Buffer) => {
    buf += d.toString();
    for (let nl = buf.indexOf("\n"); nl !== -1; nl = buf.indexOf("\n")) {
      lines.push(JSON.parse(buf.slice(0, nl)));
      buf = buf.slice(nl + 1);
    }
  });
  const notes: string[] = [];
  const peer = new JsonRpcPeer(input, output, {
    request: async (method, params) => {
      if (method === "echo") return params;
      if (method === "fail") throw new RpcError(-32602, "bad", { why: 1 });
      if (method === "crash") throw new Error("boom");
      throw new RpcError(-32601, "method not found");
    },
    notify: (method) => void notes.push(method),
  }, quiet, maxLineBytes);
  const running = peer.run();
  const tick = () => new Promise((r) => setTimeout(r, 10));
  return { input, lines, notes, peer, running, tick };
}

describe("ACP JSON-RPC transport", () => {
  it("frames messages across reads and answers requests in order", async () => {
    const { input, lines, tick } = rig();
    const msg = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "echo", params: { a: "ü" } });
    const bytes = Buffer.from(msg + "\n" + JSON.stringify({ jsonrpc: "2.0", id: "two", method: "echo", params: [2] }) + "\r\n");
    input.write(bytes.subarray(0, 17));
    input.write(bytes.subarray(17, 40));
    input.write(bytes.subarray(40));
    await tick();
    assert.deepEqual(lines, [{ jsonrpc: "2.0", id: 1, result: { a: "ü" } }, { jsonrpc: "2.0", id: "two", result: [2] }]);
  });

  it("malformed input: parse error, invalid request, method not found, handler errors; it keeps serving", async () => {
    const { input, lines, notes, tick } = rig();
    for (const line of ["{oops", "[]", "42", JSON.stringify({ jsonrpc: "2.0", id: 3 }), JSON.stringify({ id: 4, method: "echo" }), JSON.stringify({ jsonrpc: "2.0", id: {}, method: "echo" }),
      JSON.stringify({ jsonrpc: "2.0", id: 5, method: "nope" }), JSON.stringify({ jsonrpc: "2.0", id: 6, method: "fail" }), JSON.stringify({ jsonrpc: "2.0", id: 7, method: "crash" }),
      JSON.stringify({ jsonrpc: "2.0", method: "note" }), "", "   ", JSON.stringify({ jsonrpc: "2.0", id: 8, method: "echo", params: { __proto__x: 1, constructor: 2 } }).replace("__proto__x", "__proto__"),
      JSON.stringify({ jsonrpc: "2.0", id: 9, method: "echo", params: "ok" })]) input.write(line + "\n");
    await tick();
    // errors found while reading are written at once, handlers' answers when they settle
    const sorted = (pairs: unknown[][]) => pairs.map((p) => JSON.stringify(p)).sort();
    assert.deepEqual(sorted(lines.map((l) => [l.id, l.error?.code ?? "ok"])), sorted([
      [null, -32700], [null, -32600], [null, -32600], [3, -32600], [4, -32600], [null, -32600], [5, -32601], [6, -32602], [7, -32603], [null, -32600], [9, "ok"],
    ]));
    assert.deepEqual(lines.find((l) => l.id === 6).error.data, { why: 1 });
    assert.deepEqual(notes, ["note"]);
  });

  it("skips a line over the cap with an error and reads the next one", async () => {
    const { input, lines, tick } = rig(100);
    input.write(`{"jsonrpc":"2.0","id":1,"method":"echo","params":"${"x".repeat(60)}`);
    input.write(`${"y".repeat(60)}"}\n`);
    input.write(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "echo", params: "small" }) + "\n");
    await tick();
    assert.equal(lines.length, 2);
    assert.equal(lines[0].error.code, -32600);
    assert.deepEqual(lines[1], { jsonrpc: "2.0", id: 2, result: "small" });
  });

  it("its own requests are matched with the client's responses; pending ones fail when the input ends", async () => {
    const { input, lines, peer, running, tick } = rig();
    const a = peer.request("session/request_permission", { x: 1 });
    const b = peer.request("other", {});
    await tick();
    assert.deepEqual(lines[0], { jsonrpc: "2.0", id: a.id, method: "session/request_permission", params: { x: 1 } });
    input.write(JSON.stringify({ jsonrpc: "2.0", id: a.id, result: { outcome: { outcome: "cancelled" } } }) + "\n");
    assert.deepEqual(await a.result, { outcome: { outcome: "cancelled" } });
    input.end();
    await running;
    await assert.rejects(b.result, /closed/);
  });
});

describe("ACP mapping", () => {
  it("run events to session updates", () => {
    const s = newTurnState();
    assert.deepEqual(mapRunEvent({ kind: "message_delta", turn: 1, text: "Hi" }, s), [{ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Hi" } }]);
    assert.equal(s.streamed, true);
    assert.deepEqual(mapRunEvent({ kind: "thinking_delta", turn: 1, text: "hmm" }, s), [{ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "hmm" } }]);
    const [call] = mapRunEvent({ kind: "tool_start", turn: 1, toolCallId: "c1", name: "exec", args: { command: "ls -la\nsrc" } }, s);
    assert.deepEqual(call, { sessionUpdate: "tool_call", toolCallId: "c1", title: "exec: ls -la src", kind: "execute", status: "in_progress", rawInput: { command: "ls -la\nsrc" } });
    const [end] = mapRunEvent({ kind: "tool_end", turn: 1, toolCallId: "c1", name: "exec", isError: true, preview: "exit 1", durationMs: 12.4, resumed: false }, s);
    assert.deepEqual(end, { sessionUpdate: "tool_call_update", toolCallId: "c1", status: "failed", content: [{ type: "content", content: { type: "text", text: "exit 1" } }], rawOutput: { isError: true, durationMs: 12 } });
    // a tool that ended without a start seen (resumed run): announced, then updated
    assert.deepEqual(mapRunEvent({ kind: "tool_end", turn: 2, toolCallId: "c0", name: "read", isError: false, preview: "", durationMs: 1, resumed: true }, s).map((u) => u.sessionUpdate), ["tool_call", "tool_call_update"]);
    assert.deepEqual(mapRunEvent({ kind: "turn_end", turn: 2, stopReason: "max_tokens" }, s), []);
    assert.equal(s.lastStopReason, "max_tokens");
    assert.deepEqual(mapRunEvent({ kind: "usage", turn: 2, usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 } as never, model: "m", provider: "p" }, s), []);
  });

  it("tool kinds and titles", () => {
    assert.deepEqual(["read", "write", "apply_patch", "exec", "web_fetch", "web_search", "memory_search", "message", "cron"].map(toolKind),
      ["read", "edit", "edit", "execute", "fetch", "search", "search", "other", "other"]);
    assert.equal(toolTitle("web_fetch", { url: "https://example.com" }), "web_fetch: https://example.com");
    assert.equal(toolTitle("session_status", {}), "session_status");
    assert.equal(toolTitle("exec", { command: "x".repeat(300) }).length, 120);
  });

  it("prompt text: context line, resources, links, cut at the limit", () => {
    const text = promptText([
      { type: "text", text: "Explain this" },
      { type: "resource", resource: { uri: "file:///p/a.ts", text: "const a = 1;\n```\n", mimeType: "text/x-typescript" } },
      { type: "resource_link", uri: "file:///p/b.ts", name: "b.ts" },
      { type: "resource", resource: { uri: "file:///p/c.png", blob: "AAAA", mimeType: "image/png" } },
      { type: "image", data: "AAAA", mimeType: "image/png" },
    ], "/p");
    assert.match(text, /^\[Editor \(ACP\) context: the user is working in the project directory \/p /);
    assert.match(text, /Explain this\n\nAttached file:\/\/\/p\/a\.ts:\n````\nconst a = 1;\n```\n````/);
    assert.match(text, /\[linked file: b\.ts <file:\/\/\/p\/b\.ts>\]/);
    assert.match(text, /\[attached binary resource file:\/\/\/p\/c\.png \(image\/png\): not passed on\]/);
    assert.match(text, /an image \(image\/png\) was attached: not passed on/);
    assert.equal(promptText([{ type: "text", text: "plain" }]), "plain");
    const long = promptText([{ type: "text", text: "z".repeat(MAX_PROMPT_CHARS + 5000) }]);
    assert.ok(long.length <= MAX_PROMPT_CHARS);
    assert.match(long, /more characters of this prompt were cut/);
  });

  it("permission answers: allow approves; reject, cancelled, unknown and malformed deny", () => {
    assert.deepEqual(decisionOf({ outcome: { outcome: "selected", optionId: "allow_once" } }), { decision: "approve", cancelled: false });
    assert.deepEqual(decisionOf({ outcome: { outcome: "selected", optionId: "allow_always" } }), { decision: "approve", cancelled: false });
    assert.deepEqual(decisionOf({ outcome: { outcome: "selected", optionId: "reject_once" } }), { decision: "deny", cancelled: false });
    assert.deepEqual(decisionOf({ outcome: { outcome: "selected", optionId: "something-else" } }), { decision: "deny", cancelled: false });
    assert.deepEqual(decisionOf({ outcome: { outcome: "cancelled" } }), { decision: "deny", cancelled: true });
    assert.deepEqual(decisionOf(undefined), { decision: "deny", cancelled: false });
  });

  it("an approval is asked about the open call of its tool, or announces one", () => {
    const s = newTurnState();
    mapRunEvent({ kind: "tool_start", turn: 1, toolCallId: "c9", name: "exec", args: { command: "make" } }, s);
    assert.equal(approvalToolCall({ approvalId: "a1", tool: "exec", command: "make", expiresAt: 0 }, s).toolCall.toolCallId, "c9");
    const other = approvalToolCall({ approvalId: "a2", tool: "browser_evaluate", command: "1+1", expiresAt: 0 }, s);
    assert.equal(other.toolCall.toolCallId, "approval-a2");
    assert.equal(other.announce[0]?.sessionUpdate, "tool_call");
  });

  it("two parallel calls of one tool: each approval is about the call its toolCallId names, with its summary", () => {
    const s = newTurnState();
    mapRunEvent({ kind: "tool_start", turn: 1, toolCallId: "up1", name: "browser", args: { action: "upload", ref: "e5", paths: ["a.pdf"] } }, s);
    mapRunEvent({ kind: "tool_start", turn: 1, toolCallId: "up2", name: "browser", args: { action: "upload", ref: "e9", paths: ["b.pdf"] } }, s);
    const summary1 = "upload to https://one.example (element e5 of https://one.example/form): a.pdf (3 KB)";
    const first = approvalToolCall({ approvalId: "a1", tool: "browser", command: summary1, expiresAt: 0, toolCallId: "up1" }, s);
    assert.equal(first.toolCall.toolCallId, "up1");
    assert.deepEqual(first.toolCall.rawInput, { action: "upload", ref: "e5", paths: ["a.pdf"] });
    assert.equal(first.toolCall.title, `browser: ${summary1}`);
    assert.deepEqual(first.toolCall.content, [{ type: "content", content: { type: "text", text: summary1 } }]);
    assert.deepEqual(first.announce, []);
    const second = approvalToolCall({ approvalId: "a2", tool: "browser", command: "upload to https://two.example: b.pdf", expiresAt: 0, toolCallId: "up2" }, s);
    assert.equal(second.toolCall.toolCallId, "up2");
    assert.deepEqual(second.toolCall.rawInput, { action: "upload", ref: "e9", paths: ["b.pdf"] });
    assert.match(second.toolCall.title!, /two\.example/);
    // a long summary: cut in the title, whole in the content
    const long = `upload to https://three.example: ${"f.txt, ".repeat(40)}`;
    const third = approvalToolCall({ approvalId: "a3", tool: "browser", command: long, expiresAt: 0, toolCallId: "up3" }, s);
    assert.ok(third.toolCall.title!.length <= 120 && third.toolCall.title!.endsWith("…"));
    assert.equal(third.toolCall.content?.[0]?.content.text, long);
    // its call was not seen (yet): announced under its own id, and the run's tool_start then only updates it
    assert.equal(third.toolCall.toolCallId, "up3");
    assert.equal(third.announce[0]?.sessionUpdate, "tool_call");
    assert.deepEqual(mapRunEvent({ kind: "tool_start", turn: 1, toolCallId: "up3", name: "browser", args: { action: "upload" } }, s), [{ sessionUpdate: "tool_call_update", toolCallId: "up3", rawInput: { action: "upload" } }]);
    // a notice without toolCallId (an older approvals actor): by name only when one call of that tool is open
    assert.equal(approvalToolCall({ approvalId: "a4", tool: "browser", command: "x", expiresAt: 0 }, s).toolCall.toolCallId, "approval-a4");
  });

  it("typed approval decisions are recognized as the router would parse them", () => {
    assert.deepEqual(approvalCommand("/approve apr-0011223344"), { command: "approve", approvalId: "apr-0011223344" });
    assert.deepEqual(approvalCommand("  /DENY@lurkbot apr-1  "), { command: "deny", approvalId: "apr-1" });
    assert.equal(approvalCommand("/approved apr-1"), undefined);
    assert.equal(approvalCommand("/approve"), undefined, "no id: the router's own error");
    assert.equal(approvalCommand("please /approve apr-1"), undefined);
    assert.equal(approvalCommand("[Editor (ACP) context: x]\n\n/approve apr-1"), undefined, "not a command after the context line");
  });

  it("session/load takes only session names with the server's prefix", async () => {
    let connected = false;
    const agent = new AcpAgent({
      bus: async () => {
        connected = true;
        throw new Error("no bus in this test");
      },
      prefix: "lurk", loadAgentId: "main", sessionPrefix: "acp-", requestTimeoutMs: 1000, log: quiet as never, promptTimeoutMs: 1000, cancelGraceMs: 10,
    });
    for (const sessionId of ["my-chat", "acp", "xacp-1", "main"]) {
      await assert.rejects(agent.request("session/load", { sessionId, cwd: "/tmp", mcpServers: [] }), (e: RpcError) => e.code === -32602 && /only the sessions an ACP server made \(names starting with "acp-"/.test(e.message), sessionId);
    }
    assert.equal(connected, false, "refused before the bus is asked");
    // a name with the prefix goes on (here to the missing bus)
    await assert.rejects(agent.request("session/load", { sessionId: "acp-123", cwd: "/tmp", mcpServers: [] }), /no bus in this test/);
  });

  it("history records replay without the context line", () => {
    const rec = (message: unknown, i: number) => ({ id: `r${i}`, ts: 1, kind: "message" as const, message: message as never });
    const updates = recordUpdates([
      rec({ role: "user", content: [{ type: "text", text: "[Editor (ACP) context: the user is working in the project directory /p on their machine. x]\n\nhi" }] }, 1),
      rec({ role: "assistant", content: [{ type: "text", text: "reading" }, { type: "tool_call", id: "t1", name: "read", args: { path: "a" } }], provider: "p", model: "m", stopReason: "tool_use" }, 2),
      rec({ role: "tool_result", toolCallId: "t1", toolName: "read", content: [{ type: "text", text: "A" }], isError: false }, 3),
    ]);
    assert.deepEqual(updates.map((u) => u.sessionUpdate), ["user_message_chunk", "agent_message_chunk", "tool_call", "tool_call_update"]);
    assert.deepEqual(updates[0], { sessionUpdate: "user_message_chunk", content: { type: "text", text: "hi" } });
  });
});
