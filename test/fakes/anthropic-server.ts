/**
 * A fake Anthropic Messages API server (node:http) speaking the real wire format:
 * `POST /v1/messages` with `stream: true` answers SSE (`event: <type>\ndata: <json>\n\n`):
 * message_start, ping, content_block_start / content_block_delta (text_delta, thinking_delta,
 * signature_delta, input_json_delta split over several fragments) / content_block_stop,
 * message_delta (stop_reason, usage), message_stop; errors are `{type:"error", error:{type,
 * message}}` bodies with their HTTP status, or an `event: error` inside a started stream.
 *
 * Replies come from a scriptable queue; when it is empty the "auto" mode answers: a last user
 * message ending in a tool_result -> `tool said: <first 100 chars>`; `read <path>` in the last
 * user text -> a tool_use `read {path}`; otherwise `echo: <user text>`. Every request is
 * recorded (parsed body, headers). Zero latency. Non-streaming requests are not supported.
 * `GET /v1/models` lists one model (the key checked); `responseHeaders` go on every response
 * (e.g. `anthropic-ratelimit-*` as the real API sends them).
 * Content the real API refuses (an unknown block type; a `document` that is not a base64 PDF)
 * gets a 400 invalid_request_error and is not recorded (wire-checks.ts).
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { closeLoopback, listenLoopback, readBody, sendJson, splitText } from "./http.js";
import { anthropicContentError } from "./wire-checks.js";

export interface FakeToolUse { id?: string; name: string; input: string | Record<string, unknown>; fragments?: number }
/** `signature` absent: the block has none (as some Anthropic-compatible endpoints, e.g. MiniMax, may send) */
export interface FakeThinking { text: string; signature?: string }
export interface FakeUsage { input?: number; output?: number; cacheRead?: number; cacheWrite?: number }

export type FakeAnthropicReply =
  | { kind: "text"; text: string; chunks?: number; stopReason?: string; thinking?: FakeThinking; redacted?: string; usage?: FakeUsage }
  | { kind: "tool_use"; calls: FakeToolUse[]; text?: string; thinking?: FakeThinking; usage?: FakeUsage }
  | { kind: "error"; status: number; type?: string; message?: string; headers?: Record<string, string> }
  | { kind: "stream_error"; type: string; message?: string; text?: string }
  /** never answers (`started`: sends the SSE headers and a ping first), for timeouts and aborts */
  | { kind: "hang"; started?: boolean };

export interface WireBlock { type: string; text?: string; thinking?: string; signature?: string; data?: string; id?: string; name?: string; input?: unknown; tool_use_id?: string; content?: string | WireBlock[]; is_error?: boolean; cache_control?: { type: string }; source?: Record<string, string>; title?: string }
export interface WireMessage { role: string; content: string | WireBlock[] }
export interface MessagesBody {
  model: string; max_tokens: number; stream?: boolean; messages: WireMessage[];
  system?: string | WireBlock[]; tools?: Array<{ name: string; description?: string; input_schema: unknown; cache_control?: { type: string } }>;
  [key: string]: unknown;
}
export interface AnthropicRequest { headers: IncomingHttpHeaders; body: MessagesBody; reply: FakeAnthropicReply }

const ERRORS: Record<number, [string, string]> = {
  400: ["invalid_request_error", "Invalid request."], 401: ["authentication_error", "invalid x-api-key"],
  402: ["billing_error", "Your credit balance is too low."], 429: ["rate_limit_error", "Number of request tokens has exceeded your rate limit."],
  500: ["api_error", "Internal server error"], 529: ["overloaded_error", "Overloaded"],
};

export function blocksOf(m: WireMessage | undefined): WireBlock[] {
  if (!m) return [];
  return typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
}

export function textOf(blocks: WireBlock[] | string | undefined): string {
  if (typeof blocks === "string") return blocks;
  return (blocks ?? []).map((b) => (b.type === "text" ? b.text ?? "" : b.type === "tool_result" ? textOf(b.content) : "")).join("");
}

export function autoReply(body: MessagesBody): FakeAnthropicReply {
  const blocks = blocksOf(body.messages[body.messages.length - 1]);
  const result = [...blocks].reverse().find((b) => b.type === "tool_result");
  if (result) return { kind: "text", text: `tool said: ${textOf(result.content).slice(0, 100)}` };
  const text = textOf(blocks);
  const read = /\bread\s+(\S+)/.exec(text);
  if (read) return { kind: "tool_use", calls: [{ name: "read", input: { path: read[1]! } }] };
  return { kind: "text", text: `echo: ${text}` };
}

export class FakeAnthropicServer {
  readonly requests: AnthropicRequest[] = [];
  /** Optional: whether a request's headers are accepted (else 401), e.g. a fake OAuth server's tokens. */
  acceptsAuth: ((headers: IncomingHttpHeaders) => boolean) | undefined;
  /** headers added to every response, e.g. the rate-limit headers (`anthropic-ratelimit-requests-remaining`, ...) */
  responseHeaders: Record<string, string> = {};
  /** `GET /v1/models` requests received */
  modelRequests = 0;
  private readonly queue: FakeAnthropicReply[] = [];
  private counter = 0;

  private constructor(private readonly server: Server, readonly url: string, private readonly apiKey?: string) {}

  /** `apiKey`: when set, requests must carry it as `x-api-key` or `Authorization: Bearer` (else 401). */
  static async start(opts: { apiKey?: string } = {}): Promise<FakeAnthropicServer> {
    let fake!: FakeAnthropicServer;
    const server = createServer((req, res) => void fake.handle(req, res));
    fake = new FakeAnthropicServer(server, await listenLoopback(server), opts.apiKey);
    return fake;
  }

  /** The base URL to give the SDK (ANTHROPIC_BASE_URL): the SDK appends `/v1/messages`. */
  get baseUrl(): string { return this.url; }
  enqueue(...replies: FakeAnthropicReply[]): void { this.queue.push(...replies); }
  reset(): void { this.queue.length = 0; this.requests.length = 0; }

  async close(): Promise<void> {
    await closeLoopback(this.server);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "").split("?")[0];
    for (const [k, v] of Object.entries(this.responseHeaders)) res.setHeader(k, v);
    if (req.method === "GET" && path === "/v1/models") {
      // the models list (lurkbot auth probe): the key is checked as for messages
      this.modelRequests++;
      if ((this.apiKey && apiKeyOf(req.headers) !== this.apiKey) || (this.acceptsAuth && !this.acceptsAuth(req.headers))) return json(res, 401, errorBody(...ERRORS[401]!));
      return json(res, 200, { data: [{ type: "model", id: "claude-test", display_name: "Claude Test", created_at: "2025-01-01T00:00:00Z" }], has_more: false, first_id: "claude-test", last_id: "claude-test" });
    }
    if (req.method !== "POST" || path !== "/v1/messages") return json(res, 404, errorBody("not_found_error", `Not found: ${req.method} ${path}`));
    let body: MessagesBody;
    try {
      body = JSON.parse(await readBody(req)) as MessagesBody;
    } catch {
      return json(res, 400, errorBody("invalid_request_error", "request body is not valid JSON"));
    }
    if ((this.apiKey && apiKeyOf(req.headers) !== this.apiKey) || (this.acceptsAuth && !this.acceptsAuth(req.headers))) return json(res, 401, errorBody(...ERRORS[401]!));
    const invalid = anthropicContentError(body.messages ?? []);
    if (invalid) return json(res, 400, errorBody("invalid_request_error", invalid));
    const reply = this.queue.shift() ?? autoReply(body);
    this.requests.push({ headers: req.headers, body, reply });
    if (reply.kind === "error") {
      const [type, message] = ERRORS[reply.status] ?? ERRORS[500]!;
      for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, v);
      return json(res, reply.status, errorBody(reply.type ?? type, reply.message ?? message));
    }
    if (reply.kind === "hang") {
      if (!reply.started) return;
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
      res.write(`event: ping\ndata: {"type":"ping"}\n\n`);
      return;
    }
    this.stream(res, body, reply, `msg_fake${++this.counter}`);
  }

  private stream(res: ServerResponse, body: MessagesBody, reply: Exclude<FakeAnthropicReply, { kind: "error" } | { kind: "hang" }>, id: string): void {
    const events: Array<[string, unknown]> = [];
    const u = ("usage" in reply ? reply.usage : undefined) ?? {};
    const input = u.input ?? Math.ceil(JSON.stringify(body.messages).length / 4);
    events.push(["message_start", { type: "message_start", message: {
      id, type: "message", role: "assistant", model: body.model, content: [], stop_reason: null, stop_sequence: null,
      usage: { input_tokens: input, output_tokens: 1, cache_read_input_tokens: u.cacheRead ?? 0, cache_creation_input_tokens: u.cacheWrite ?? 0 },
    } }]);
    events.push(["ping", { type: "ping" }]);
    let index = 0;
    let produced = "";
    const block = (start: Record<string, unknown>, deltas: Array<Record<string, unknown>>) => {
      events.push(["content_block_start", { type: "content_block_start", index, content_block: start }]);
      for (const delta of deltas) events.push(["content_block_delta", { type: "content_block_delta", index, delta }]);
      events.push(["content_block_stop", { type: "content_block_stop", index }]);
      index++;
    };
    if (reply.kind === "stream_error") {
      if (reply.text) block({ type: "text", text: "" }, [{ type: "text_delta", text: reply.text }]);
      events.push(["error", errorBody(reply.type, reply.message ?? reply.type)]);
      return write(res, events);
    }
    if (reply.thinking) {
      const signed = reply.thinking.signature !== undefined;
      block({ type: "thinking", thinking: "", ...(signed ? { signature: "" } : {}) }, [
        ...splitText(reply.thinking.text, 2).map((t) => ({ type: "thinking_delta", thinking: t })),
        ...(signed ? [{ type: "signature_delta", signature: reply.thinking.signature }] : []),
      ]);
    }
    if (reply.kind === "text" && reply.redacted) block({ type: "redacted_thinking", data: reply.redacted }, []);
    const text = reply.text ?? "";
    if (text) {
      block({ type: "text", text: "" }, splitText(text, reply.kind === "text" ? reply.chunks ?? Math.min(4, text.length) : 2).map((t) => ({ type: "text_delta", text: t })));
      produced += text;
    }
    if (reply.kind === "tool_use") {
      reply.calls.forEach((c, i) => {
        const args = typeof c.input === "string" ? c.input : JSON.stringify(c.input);
        block({ type: "tool_use", id: c.id ?? `toolu_${id}_${i}`, name: c.name, input: {} },
          splitText(args, c.fragments ?? 3).map((p) => ({ type: "input_json_delta", partial_json: p })));
        produced += c.name + args;
      });
    }
    const stop = reply.kind === "tool_use" ? "tool_use" : reply.stopReason ?? "end_turn";
    events.push(["message_delta", { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: u.output ?? Math.max(1, Math.ceil(produced.length / 4)) } }]);
    events.push(["message_stop", { type: "message_stop" }]);
    write(res, events);
  }
}

function write(res: ServerResponse, events: Array<[string, unknown]>): void {
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "request-id": `req_fake_${Date.now()}` });
  res.end(events.map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join(""));
}

/** The key a request carries: `x-api-key`, or `Authorization: Bearer` (what SDK 1.x sends). */
export function apiKeyOf(headers: IncomingHttpHeaders): string | undefined {
  const x = headers["x-api-key"];
  if (typeof x === "string") return x;
  return /^Bearer (.+)$/.exec(headers.authorization ?? "")?.[1];
}

const errorBody = (type: string, message: string) => ({ type: "error", error: { type, message } });

const json = (res: ServerResponse, status: number, body: unknown) => sendJson(res, status, body, { "request-id": `req_fake_${Date.now()}` });
