/**
 * The ACP server's parts without a bus: the JSON-RPC line transport (framing across reads,
 * errors for malformed input, requests both ways), the run-event mapping, the prompt's text and
 * the permission answers, which tool call an approval is about, typed approval decisions,
 * session/load's refusal of sessions no ACP server made, a prompt's images and embedded files
 * (decoded, checked, refused with -32602 before anything is sent) and the agent's files as
 * resource_link chunks.
 */
import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { describe, it } from "node:test";
import { DEFAULT_MAX_LINE_BYTES, ID_SCAN_BYTES, JsonRpcPeer, leadingId, RpcError } from "../services/cli/acp/jsonrpc.js";
import { mapRunEvent, newTurnState, toolKind, toolTitle } from "../services/cli/acp/events-map.js";
import { MAX_PROMPT_CHARS, promptText } from "../services/cli/acp/prompt-text.js";
import { approvalToolCall, decisionOf } from "../services/cli/acp/permissions.js";
import { recordUpdates } from "../services/cli/acp/history.js";
import { AcpAgent, type AgentDeps } from "../services/cli/acp/server.js";
import { maxLineBytes } from "../services/cli/acp/command.js";
import { MAX_PROMPT_FILES, passedBlob, promptFiles, promptFilesMaxBytes } from "../services/cli/acp/prompt-files.js";
import { receivedUpdates } from "../services/cli/acp/received-files.js";
import { contentBlock } from "../services/cli/acp/schema.js";
import { MEDIA_DEFAULTS } from "../shared/runtime/config-media.js";
import { approvalCommand } from "../services/cli/acp/session.js";

const quiet = { debug: () => undefined, warn: () => undefined };

/** an agent whose bus is never there: `asked` says whether anything tried to reach it */
function busless(over: Partial<AgentDeps> = {}) {
  const seen = { asked: false };
  const agent = new AcpAgent({
    bus: async () => {
      seen.asked = true;
      throw new Error("no bus in this test");
    },
    prefix: "lurk", loadAgentId: "main", sessionPrefix: "acp-", requestTimeoutMs: 1000, log: { ...quiet, info: () => undefined } as never, promptTimeoutMs: 1000, cancelGraceMs: 10,
    media: MEDIA_DEFAULTS, downloadsDir: "/nonexistent/downloads", ...over,
  });
  return { agent, seen };
}
/** a 1x1 PNG */
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");
const block = (raw: unknown) => contentBlock.parse(raw);

function rig(maxLineBytes?: number, tooLongHint?: string) {
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
  }, quiet, maxLineBytes, tooLongHint);
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
    assert.equal(lines[0].id, 1, "the answer goes to the line's own id");
    assert.deepEqual(lines[1], { jsonrpc: "2.0", id: 2, result: "small" });
  });

  it("a line over the cap answers the request its first bytes name (-32600 with the limit), so the editor does not wait; nested or late ids are not taken", async () => {
    const { input, lines, tick } = rig(200, "a prompt's images and files may come to 60.0 MB together, media.maxPromptFilesMb");
    const big = "x".repeat(300);
    input.write(`{"jsonrpc":"2.0","id":41,"method":"session/prompt","params":{"sessionId":"acp-1","prompt":[{"type":"image","mimeType":"image/png","data":"${big}"}]}}\n`);
    input.write(`{ "jsonrpc" : "2.0" , "method":"session/prompt", "id" : "req-\\"7\\"", "params":{"text":"${big}"}}\n`);
    // an "id" inside params is not the message's; one after the huge params is past the scan
    input.write(`{"jsonrpc":"2.0","method":"session/prompt","params":{"id":7,"data":"${big}"}}\n`);
    input.write(`{"jsonrpc":"2.0","method":"x","params":"${"x".repeat(ID_SCAN_BYTES + 100)}","id":8}\n`);
    await tick();
    assert.deepEqual(lines.map((l) => [l.id, l.error?.code]), [[41, -32600], ['req-"7"', -32600], [null, -32600], [null, -32600]]);
    assert.equal(lines[0].error.message, "the message is longer than 200 bytes, the most one line may carry (a prompt's images and files may come to 60.0 MB together, media.maxPromptFilesMb)");
    assert.deepEqual(lines[0].error.data, { maxBytes: 200 });
  });

  it("leadingId reads the top-level id from a bounded head: numbers and short strings, skipping values before it", () => {
    assert.deepEqual(leadingId(`{"jsonrpc":"2.0","id":12,"method":"session/prompt","params":{"prompt":[{"data":"AAAA`), { id: 12, response: false });
    assert.deepEqual(leadingId(`{"params":{"a":[1,{"b":"}]"}],"id":3},"jsonrpc":"2.0","id":"x\\u0041","method"`), { id: "xA", response: false });
    assert.deepEqual(leadingId(`{"jsonrpc":"2.0","id":5,"result":{"content":"AAAA`), { id: 5, response: true });
    assert.deepEqual(leadingId(`{"jsonrpc":"2.0","id":123`), { response: false }, "a number cut by the head's end is not taken");
    assert.deepEqual(leadingId(`{"jsonrpc":"2.0","id":"${"y".repeat(300)}","method":"m"}`), { response: false }, "too long for an id");
    assert.deepEqual(leadingId(`{"jsonrpc":"2.0","id":{"x":1},"method":"m"}`), { response: false });
    assert.deepEqual(leadingId(`[{"id":1}]`), { response: false });
    assert.deepEqual(leadingId(`garbage "id":4`), { response: false });
    assert.ok(ID_SCAN_BYTES >= 1024);
  });

  it("a response of the client over the cap fails our request of that id instead of being answered", async () => {
    const { input, lines, peer, tick } = rig(200);
    const asked = peer.request("session/request_permission", {});
    await tick();
    input.write(`{"jsonrpc":"2.0","id":${asked.id},"result":{"outcome":"${"z".repeat(300)}"}}\n`);
    await assert.rejects(asked.result, (e: RpcError) => e.code === -32600 && /^the client's answer: the message is longer than 200 bytes/.test(e.message));
    await tick();
    assert.equal(lines.length, 1, "only our request: a response is never answered");
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
      { type: "resource", resource: { uri: "file:///p/d.zip", blob: "AAAA", mimeType: "application/zip" } },
      { type: "image", data: "AAAA", mimeType: "image/png" },
      { type: "image", data: "AAAA", mimeType: "image/png", uri: "file:///p/shot.png" },
      { type: "audio", data: "AAAA", mimeType: "audio/wav" },
    ], "/p");
    assert.match(text, /^\[Editor \(ACP\) context: the user is working in the project directory \/p /);
    assert.match(text, /Explain this\n\nAttached file:\/\/\/p\/a\.ts:\n````\nconst a = 1;\n```\n````/);
    assert.match(text, /\[linked file: b\.ts <file:\/\/\/p\/b\.ts>\]/);
    // passed on as attachments: a line naming them; an image without a URI adds nothing
    assert.match(text, /\[attached file:\/\/\/p\/c\.png: sent as the file c\.png\]/);
    assert.match(text, /\[attached image file:\/\/\/p\/shot\.png\]\n\n\[an audio clip/);
    assert.doesNotMatch(text, /image \(image\/png\)/);
    // not passed on: a note
    assert.match(text, /\[attached binary resource file:\/\/\/p\/d\.zip \(application\/zip\): not passed on\]/);
    assert.match(text, /an audio clip \(audio\/wav\) was attached: not passed on/);
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
    const { agent, seen } = busless();
    for (const sessionId of ["my-chat", "acp", "xacp-1", "main"]) {
      await assert.rejects(agent.request("session/load", { sessionId, cwd: "/tmp", mcpServers: [] }), (e: RpcError) => e.code === -32602 && /only the sessions an ACP server made \(names starting with "acp-"/.test(e.message), sessionId);
    }
    assert.equal(seen.asked, false, "refused before the bus is asked");
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

describe("ACP files", () => {
  it("initialize advertises images and embedded context, not audio", async () => {
    const { agent } = busless();
    const r = await agent.request("initialize", { protocolVersion: 1 }) as { agentCapabilities: { promptCapabilities: unknown } };
    assert.deepEqual(r.agentCapabilities.promptCapabilities, { image: true, audio: false, embeddedContext: true });
  });

  it("a valid image block becomes an image attachment's bytes; documents and text resources become files", () => {
    const files = promptFiles([
      block({ type: "text", text: "what is this?" }),
      block({ type: "image", data: PNG.toString("base64"), mimeType: "image/png" }),
      block({ type: "image", data: PNG.toString("base64"), mimeType: "Image/JPG", uri: "file:///home/me/shot%201.jpg" }),
      block({ type: "resource", resource: { uri: "file:///p/report.pdf", blob: Buffer.from("%PDF-1.4").toString("base64"), mimeType: "application/pdf" } }),
      block({ type: "resource", resource: { uri: "file:///p/notes.md", blob: Buffer.from("# hi").toString("base64") } }),
      block({ type: "resource", resource: { uri: "file:///p/a.zip", blob: "not even base64!", mimeType: "application/zip" } }),
      block({ type: "resource", resource: { uri: "file:///p/a.ts", text: "const a = 1;" } }),
    ], 1024);
    assert.deepEqual(files.map((f) => [f.block, f.kind, f.mime, f.name]), [
      [1, "image", "image/png", undefined],
      [2, "image", "image/jpeg", "shot 1.jpg"],
      [3, "file", "application/pdf", "report.pdf"],
      [4, "file", "text/markdown", "notes.md"],
    ]);
    assert.deepEqual(files[0]!.bytes, PNG);
    assert.equal(files[2]!.bytes.toString(), "%PDF-1.4");
    // which embedded binary resources go as files (the rest stay a note)
    assert.equal(passedBlob({ uri: "file:///p/x.docx", mimeType: "application/octet-stream" })?.mime, "application/vnd.openxmlformats-officedocument.wordprocessingml.document");
    assert.equal(passedBlob({ uri: "file:///p/data.json", mimeType: "application/json" })?.kind, "file");
    assert.equal(passedBlob({ uri: "file:///p/pic.webp", mimeType: "image/webp" })?.kind, "image");
    assert.equal(passedBlob({ uri: "file:///p/tool.exe", mimeType: "application/octet-stream" }), undefined);
    assert.equal(passedBlob({ uri: "file:///p/clip.mp3", mimeType: "audio/mpeg" }), undefined);
  });

  it("bad base64, an empty image, an image over the cap, too many files: -32602 naming the block", () => {
    const image = (data: string) => block({ type: "image", data, mimeType: "image/png" });
    const refused = (blocks: ReturnType<typeof block>[], at: string, why: RegExp) =>
      assert.throws(() => promptFiles(blocks, 64), (e: RpcError) => e instanceof RpcError && e.code === -32602 && e.message.startsWith(`invalid params: ${at}: `) && why.test(e.message)
        && (e.data as Array<{ path: string }>)[0]!.path === at, `${at} ${why}`);
    refused([block({ type: "text", text: "x" }), image("iVBOR*w0KGgo=")], "prompt.1", /the image's base64 data is malformed/);
    refused([image("abc")], "prompt.0", /malformed/);
    refused([image("AAAA"), image("")], "prompt.1", /the image is empty/);
    refused([image(Buffer.alloc(65).toString("base64"))], "prompt.0", /the image is 65 bytes, above the 64 bytes cap \(media\.maxFileMb\)/);
    refused([block({ type: "resource", resource: { uri: "file:///p/r.pdf", blob: "%%%%", mimeType: "application/pdf" } })], "prompt.0", /the resource\.blob's base64 data is malformed/);
    refused(Array.from({ length: MAX_PROMPT_FILES + 1 }, () => image("AAAA")), `prompt.${MAX_PROMPT_FILES}`, /more than 32 images and files/);
    assert.equal(promptFiles(Array.from({ length: MAX_PROMPT_FILES }, () => image("AAAA")), 64).length, MAX_PROMPT_FILES);
  });

  it("a prompt with a bad image, or an image type models do not take, is answered -32602 before anything is sent", async () => {
    const { agent, seen } = busless({ media: { ...MEDIA_DEFAULTS, maxFileMb: 0.0001 } });
    const prompt = (image: Record<string, unknown>) => agent.request("session/prompt", { sessionId: "acp-1", prompt: [{ type: "text", text: "look" }, { type: "image", ...image }] });
    for (const mimeType of ["image/svg+xml", "image/heic", "application/pdf", "text/plain"]) {
      await assert.rejects(prompt({ data: PNG.toString("base64"), mimeType }), (e: RpcError) => e.code === -32602 && /^invalid params: prompt\.1\.mimeType: an image's mimeType must be one of image\/png, image\/jpeg, image\/gif, image\/webp/.test(e.message), mimeType);
    }
    await assert.rejects(prompt({ data: "not base64", mimeType: "image/png" }), (e: RpcError) => e.code === -32602 && /prompt\.1: the image's base64 data is malformed/.test(e.message));
    // media.maxFileMb 0.0001: 104 bytes
    await assert.rejects(prompt({ data: Buffer.alloc(200).toString("base64"), mimeType: "image/png" }), (e: RpcError) => e.code === -32602 && /prompt\.1: the image is 200 bytes, above the 104 bytes cap/.test(e.message));
    assert.equal(seen.asked, false, "nothing went to the bus");
    // a good image goes on (to the session lookup: this process has none)
    await assert.rejects(prompt({ data: PNG.toString("base64"), mimeType: "image/png" }), (e: RpcError) => e.code === -32002);
  });

  it("files the agent sent: resource_link chunks with the saved file's URI; a file not fetched is a text chunk", () => {
    const updates = receivedUpdates([
      { name: "chart 1.png", mime: "image/png", size: 70, path: "/home/me/.lurkbot/downloads/chart 1.png" },
      { name: "gone.csv", mime: "text/csv", error: "media 0123… is not in the media store" },
    ]);
    assert.deepEqual(updates[0], { sessionUpdate: "agent_message_chunk", content: { type: "resource_link", uri: "file:///home/me/.lurkbot/downloads/chart%201.png", name: "chart 1.png", mimeType: "image/png", size: 70 } });
    assert.equal(updates[1]!.sessionUpdate, "agent_message_chunk");
    assert.match((updates[1]!.content as { text: string }).text, /file gone\.csv could not be fetched: media 0123… is not in the media store/);
  });

  it("the input line holds the prompt's files budget (media.maxPromptFilesMb, default 3 × maxFileMb) in base64 besides 4 MiB; files over the budget together: -32602", () => {
    const MiB = 1024 * 1024;
    assert.equal(maxLineBytes(0), DEFAULT_MAX_LINE_BYTES);
    assert.equal(promptFilesMaxBytes(MEDIA_DEFAULTS), 60 * MiB);
    assert.equal(promptFilesMaxBytes({ maxFileMb: 20, maxPromptFilesMb: 100 }), 100 * MiB);
    // the line of a prompt with three images of media.maxFileMb: its JSON without the data, and the data's base64
    const frame = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: { sessionId: "acp-1", prompt: Array.from({ length: 3 }, () => ({ type: "image", mimeType: "image/png", data: "" })) } });
    assert.ok(Buffer.byteLength(frame) + 3 * Math.ceil((20 * MiB) / 3) * 4 <= maxLineBytes(promptFilesMaxBytes(MEDIA_DEFAULTS)), "three images of media.maxFileMb fit one line");

    const image = (bytes: number) => block({ type: "image", data: Buffer.alloc(bytes, 1).toString("base64"), mimeType: "image/png" });
    assert.equal(promptFiles([image(40), image(40)], 64, 100).length, 2);
    assert.throws(() => promptFiles([block({ type: "text", text: "x" }), image(40), image(40), image(40)], 64, 100), (e: RpcError) => e.code === -32602
      && e.message === "invalid params: prompt.3: the prompt's images and files come to 120 bytes with this image, above the 100 bytes one prompt may carry (media.maxPromptFilesMb)"
      && (e.data as Array<{ path: string; size: number; maxBytes: number }>)[0]!.size === 120);
  });

  it("a session/prompt whose files together pass media.maxPromptFilesMb is answered -32602 before anything is sent", async () => {
    // 104 bytes each, 209 together
    const { agent, seen } = busless({ media: { ...MEDIA_DEFAULTS, maxFileMb: 0.0001, maxPromptFilesMb: 0.0002 } });
    const img = { type: "image", mimeType: "image/png", data: Buffer.alloc(100, 2).toString("base64") };
    await assert.rejects(agent.request("session/prompt", { sessionId: "acp-1", prompt: [{ type: "text", text: "look" }, img, img, img] }),
      (e: RpcError) => e.code === -32602 && /^invalid params: prompt\.3: the prompt's images and files come to 300 bytes with this image, above the 209 bytes one prompt may carry/.test(e.message));
    assert.equal(seen.asked, false, "nothing went to the bus");
  });
});
