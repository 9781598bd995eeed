/**
 * A fake Ollama server (node:http) speaking the real API: `POST /api/chat` streaming NDJSON
 * (`{model, created_at, message: {role, content, thinking?, tool_calls?}, done: false}` lines,
 * then a final `{done: true, done_reason, total_duration, prompt_eval_count, eval_count, ...}`)
 * or one JSON object when `stream: false`; `GET /api/tags`; errors as `{error: "..."}` with the
 * HTTP status (404 for an unknown model when `models` is given, as Ollama answers).
 *
 * Replies come from a scriptable queue; when it is empty the "auto" mode answers: a last tool
 * message -> `tool said: <first 100 chars>`; a last user message containing `read <path>` -> a
 * tool call `read {path}`; otherwise `echo: <user text>`. Requests are recorded; zero latency.
 * `POST /api/embed` (`{model, input: string | string[]}`) answers `{model, embeddings: [[...]],
 * total_duration, load_duration, prompt_eval_count}` with embedding.ts's fake model (404 for an
 * unknown model when `models` is given); `enqueueEmbed` scripts errors or a request never answered.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { closeLoopback, listenLoopback, readBody, sendJson, splitText } from "./http.js";
import { fakeEmbedding, FAKE_EMBED_DIMENSIONS, type EmbedRequestRecord, type FakeEmbedReply } from "./embedding.js";

export interface OllamaFakeToolCall { name: string; arguments: unknown }

export type OllamaFakeReply =
  | { kind: "text"; text: string; thinking?: string; chunks?: number; doneReason?: string; promptEvalCount?: number; evalCount?: number }
  | { kind: "tool_calls"; calls: OllamaFakeToolCall[]; text?: string; thinking?: string }
  | { kind: "error"; status: number; message?: string }
  /** streams the text, then an `{error}` line (as Ollama does when the runner fails mid-stream) */
  | { kind: "stream_error"; text?: string; message: string }
  /** streams the text and then never finishes */
  | { kind: "hang"; text?: string }
  /** streams the text and closes the response without the final `done` line */
  | { kind: "cut"; text?: string };

export interface OllamaMessage {
  role: string;
  content: string;
  thinking?: string;
  images?: string[];
  tool_calls?: Array<{ function: { name: string; arguments: Record<string, unknown> } }>;
  tool_name?: string;
}

export interface OllamaChatBody {
  model: string;
  messages: OllamaMessage[];
  stream?: boolean;
  tools?: Array<{ type: string; function: { name: string; description?: string; parameters?: unknown } }>;
  options?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface OllamaReceived { at: number; body: OllamaChatBody; reply: OllamaFakeReply }

export interface FakeOllamaOptions {
  /** when set, a chat for any other model is answered 404 `model "x" not found, try pulling it first` */
  models?: string[];
}

export function autoReply(body: OllamaChatBody): OllamaFakeReply {
  const last = body.messages[body.messages.length - 1];
  if (last?.role === "tool") return { kind: "text", text: `tool said: ${last.content.slice(0, 100)}` };
  const read = last?.role === "user" ? /\bread\s+(\S+)/.exec(last.content) : null;
  if (read) return { kind: "tool_calls", calls: [{ name: "read", arguments: { path: read[1]! } }] };
  return { kind: "text", text: `echo: ${last?.content ?? ""}` };
}

export class FakeOllamaServer {
  readonly requests: OllamaReceived[] = [];
  /** POST /api/embed as received */
  readonly embedRequests: EmbedRequestRecord[] = [];
  private readonly embedQueue: FakeEmbedReply[] = [];
  private readonly queue: OllamaFakeReply[] = [];
  private readonly open = new Set<ServerResponse>();

  private constructor(private readonly server: Server, readonly url: string, private readonly opts: FakeOllamaOptions) {}

  static async start(opts: FakeOllamaOptions = {}): Promise<FakeOllamaServer> {
    let fake!: FakeOllamaServer;
    const server = createServer((req, res) => void fake.handle(req, res));
    fake = new FakeOllamaServer(server, await listenLoopback(server), opts);
    return fake;
  }

  enqueue(...replies: OllamaFakeReply[]): void {
    this.queue.push(...replies);
  }

  enqueueEmbed(...replies: FakeEmbedReply[]): void {
    this.embedQueue.push(...replies);
  }

  /** The texts of every answered embed request so far, in order. */
  get embeddedTexts(): string[] {
    return this.embedRequests.flatMap((r) => (r.reply.kind === "ok" ? r.input : []));
  }

  reset(): void {
    this.queue.length = 0;
    this.requests.length = 0;
    this.embedQueue.length = 0;
    this.embedRequests.length = 0;
  }

  async close(): Promise<void> {
    for (const res of this.open) res.destroy();
    await closeLoopback(this.server);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "").split("?")[0];
    if (req.method === "GET" && path === "/api/tags") {
      const names = this.opts.models ?? ["llama-test"];
      return json(res, 200, { models: names.map((name) => ({ name, model: name, modified_at: new Date(0).toISOString(), size: 1, digest: "0".repeat(64), details: { format: "gguf", family: "llama" } })) });
    }
    if (req.method === "GET" && path === "/") return void res.end("Ollama is running");
    if (req.method === "POST" && path === "/api/embed") return this.embed(req, res);
    if (req.method !== "POST" || path !== "/api/chat") return void res.writeHead(404, { "content-type": "text/plain" }).end("404 page not found");
    let body: OllamaChatBody;
    try {
      body = JSON.parse(await readBody(req)) as OllamaChatBody;
    } catch {
      return json(res, 400, { error: "invalid character 'x' looking for beginning of value" });
    }
    if (this.opts.models && !this.opts.models.includes(body.model)) {
      const reply: OllamaFakeReply = { kind: "error", status: 404, message: `model "${body.model}" not found, try pulling it first` };
      this.requests.push({ at: Date.now(), body, reply });
      return json(res, 404, { error: reply.message });
    }
    const reply = this.queue.shift() ?? autoReply(body);
    this.requests.push({ at: Date.now(), body, reply });
    if (reply.kind === "error") return json(res, reply.status, { error: reply.message ?? "llama runner process has terminated: exit status 2" });
    const base = () => ({ model: body.model, created_at: new Date().toISOString() });
    const text = reply.kind === "text" ? reply.text : reply.text ?? "";
    const thinking = reply.kind === "text" || reply.kind === "tool_calls" ? reply.thinking ?? "" : "";
    const calls = reply.kind === "tool_calls" ? reply.calls.map((c) => ({ function: { name: c.name, arguments: c.arguments } })) : [];
    const promptEval = reply.kind === "text" && reply.promptEvalCount !== undefined ? reply.promptEvalCount : Math.ceil(JSON.stringify(body.messages).length / 4);
    const evalCount = reply.kind === "text" && reply.evalCount !== undefined ? reply.evalCount : Math.max(1, Math.ceil((text + thinking + JSON.stringify(calls)).length / 4));
    const final = {
      done: true, done_reason: reply.kind === "text" ? reply.doneReason ?? "stop" : "stop",
      total_duration: 1_000_000, load_duration: 1000, prompt_eval_count: promptEval, prompt_eval_duration: 1000, eval_count: evalCount, eval_duration: 1000,
    };
    if (body.stream === false) {
      const message = { role: "assistant", content: text, ...(thinking ? { thinking } : {}), ...(calls.length ? { tool_calls: calls } : {}) };
      return json(res, 200, { ...base(), message, ...final });
    }
    res.writeHead(200, { "content-type": "application/x-ndjson", "transfer-encoding": "chunked" });
    this.open.add(res);
    res.on("close", () => this.open.delete(res));
    const lines: unknown[] = [];
    const msg = (m: Record<string, unknown>) => lines.push({ ...base(), message: { role: "assistant", content: "", ...m }, done: false });
    for (const piece of splitText(thinking, 2)) msg({ thinking: piece });
    for (const piece of splitText(text, reply.kind === "text" ? reply.chunks ?? Math.min(4, text.length) : 2)) msg({ content: piece });
    if (calls.length > 0) msg({ tool_calls: calls });
    if (reply.kind === "stream_error") lines.push({ error: reply.message });
    else if (reply.kind !== "hang" && reply.kind !== "cut") lines.push({ ...base(), message: { role: "assistant", content: "" }, ...final });
    res.write(lines.map((l) => `${JSON.stringify(l)}\n`).join(""));
    if (reply.kind !== "hang") res.end();
  }

  private async embed(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let body: { model?: unknown; input?: unknown };
    try {
      body = JSON.parse(await readBody(req)) as typeof body;
    } catch {
      return json(res, 400, { error: "invalid character 'x' looking for beginning of value" });
    }
    if (typeof body.model !== "string" || body.model === "") return json(res, 400, { error: "model is required" });
    const input = typeof body.input === "string" ? [body.input] : Array.isArray(body.input) && body.input.every((x) => typeof x === "string") ? body.input as string[] : undefined;
    if (!input) return json(res, 400, { error: "invalid input type" });
    if (this.opts.models && !this.opts.models.includes(body.model)) {
      this.embedRequests.push({ model: body.model, input, reply: { kind: "error", status: 404 } });
      return json(res, 404, { error: `model "${body.model}" not found, try pulling it first` });
    }
    const reply = this.embedQueue.shift() ?? { kind: "ok" };
    this.embedRequests.push({ model: body.model, input, reply });
    if (reply.kind === "error") return json(res, reply.status, { error: reply.message ?? "llama runner process has terminated: exit status 2" });
    if (reply.kind === "hang") {
      this.open.add(res);
      res.on("close", () => this.open.delete(res));
      return;
    }
    const embeddings = input.map((text) => fakeEmbedding(text, FAKE_EMBED_DIMENSIONS));
    const tokens = input.reduce((n, text) => n + Math.max(1, Math.ceil(text.length / 4)), 0);
    json(res, 200, { model: body.model, embeddings, total_duration: 1_000_000, load_duration: 1000, prompt_eval_count: tokens });
  }
}

const json = (res: ServerResponse, status: number, body: unknown) => sendJson(res, status, body, { "content-type": "application/json; charset=utf-8" });
