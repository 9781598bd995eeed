/**
 * A fake OpenAI chat-completions server (node:http) speaking the real wire format:
 * `POST /v1/chat/completions` with `stream: true` (SSE `data: {chunk}\n\n` ... `data: [DONE]\n\n`,
 * tool-call arguments split over several deltas, a final usage chunk when
 * `stream_options.include_usage`) or plain JSON; `GET /v1/models`.
 *
 * Replies come from a scriptable queue (text, tool calls, HTTP errors with OpenAI's error body,
 * "hang" = stream a little and then never finish); when the queue is empty the "auto" mode
 * answers: a last user message containing `read <path>` -> a tool call `read {path}`; a last
 * tool result -> `tool said: <first 100 chars>`; otherwise `echo: <user text>`.
 * Every request is recorded (parsed body) so tests can assert the history and tools sent.
 * `responseHeaders` go on every response (e.g. `x-ratelimit-*` as the real API sends them).
 * Latency is zero unless `latencyMs` / `chunkDelayMs` are given. Reused by the benchmark.
 * Content parts the real API refuses (an unknown part type; a `file` part without a PDF data URL)
 * get a 400 invalid_request_error and are not recorded (wire-checks.ts).
 * `POST /v1/audio/transcriptions` takes the multipart form the SDK sends (file, model, language,
 * response_format), records it in `transcriptions` and answers `{ text, usage }`: `transcriptText` of
 * the request, or an HTTP error when `transcriptText` returns a number (the status); `usage` is
 * `transcriptUsage` of the request (default `{ type: "duration", seconds: 3 }` as whisper-1 answers; none when undefined).
 * `POST /v1/embeddings` answers as the real API does (`{object: "list", data: [{object:
 * "embedding", index, embedding}], model, usage}`), with each embedding as JSON numbers or, for
 * `encoding_format: "base64"` (what the SDK v6 sends by default), base64 of little-endian
 * float32s; the vectors are embedding.ts's fake model. Requests are recorded in `embedRequests`;
 * `enqueueEmbed` scripts HTTP errors or a request that is never answered.
 * `POST /v1/audio/speech` takes the SDK's JSON (model, input, voice, response_format, speed,
 * instructions), checks it as the API does (input 1 to 4096 characters, a known format), records it
 * in `speechRequests` and answers deterministic audio bytes (`fakeSpeech`: the format's magic
 * bytes, then a hash of the request) with the format's content type; `speechStatus` answers an
 * HTTP error instead when it returns a status.
 */
import { createHash } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { closeLoopback, listenLoopback, readBody, readRaw, sendJson, splitText } from "./http.js";
import { openaiContentError } from "./wire-checks.js";
import { base64Float32, fakeEmbedding, FAKE_EMBED_DIMENSIONS, type EmbedRequestRecord, type FakeEmbedReply } from "./embedding.js";

export interface FakeToolCall {
  id?: string;
  name: string;
  /** a raw string is sent as is (use it for malformed JSON); an object is JSON-encoded */
  arguments: string | Record<string, unknown>;
  /** how many deltas the arguments are split into (default 3) */
  fragments?: number;
}

export type FakeReply =
  | { kind: "text"; text: string; chunks?: number; finishReason?: string; /** streamed first as `delta.reasoning_content` (as DeepSeek and vLLM send a model's thinking) */ reasoning?: string }
  | { kind: "tool_calls"; calls: FakeToolCall[]; text?: string }
  | { kind: "error"; status: number; code?: string | null; type?: string; message?: string; headers?: Record<string, string> }
  | { kind: "hang"; text?: string };

export interface ChatMessage {
  role: string;
  content?: string | null | Array<{ type: string; text?: string; image_url?: { url: string }; file?: { filename?: string; file_data?: string; file_id?: string } }>;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

export interface ChatRequestBody {
  model: string;
  messages: ChatMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  tools?: Array<{ type: string; function: { name: string; description?: string; parameters?: unknown } }>;
  [key: string]: unknown;
}

export interface ReceivedRequest {
  at: number;
  headers: IncomingHttpHeaders;
  body: ChatRequestBody;
  reply: FakeReply;
}

/** One POST /v1/audio/transcriptions as received. */
export interface TranscriptionRequest {
  headers: IncomingHttpHeaders;
  model: string;
  fileName: string;
  fileType: string;
  bytes: Buffer;
  language?: string;
  responseFormat?: string;
}

/** One POST /v1/audio/speech as received. */
export interface SpeechRequestRecord {
  headers: IncomingHttpHeaders;
  model: string;
  input: string;
  voice: string;
  responseFormat: string;
  speed?: number;
  instructions?: string;
}

/** the content type the real API answers per response_format */
export const SPEECH_CONTENT_TYPES: Record<string, string> = { mp3: "audio/mpeg", opus: "audio/ogg", aac: "audio/aac", flac: "audio/flac", wav: "audio/wav", pcm: "audio/pcm" };
const SPEECH_MAGIC: Record<string, string> = { mp3: "ID3", opus: "OggS", aac: "\xff\xf1", flac: "fLaC", wav: "RIFF", pcm: "" };

/** The fake's audio for a speech request: the format's magic bytes, then 64 bytes derived from the request. */
export function fakeSpeech(r: Pick<SpeechRequestRecord, "model" | "input" | "voice" | "responseFormat">): Buffer {
  const digest = createHash("sha256").update(`${r.model}\n${r.voice}\n${r.responseFormat}\n${r.input}`).digest();
  return Buffer.concat([Buffer.from(SPEECH_MAGIC[r.responseFormat] ?? "", "latin1"), digest, digest]);
}

export interface FakeOpenAIOptions {
  port?: number;
  /** delay before the response starts */
  latencyMs?: number;
  /** delay between streamed chunks (0: all chunks in one write) */
  chunkDelayMs?: number;
  /** when set, requests must carry `Authorization: Bearer <apiKey>` (else 401 invalid_api_key) */
  apiKey?: string;
  /** delay before `GET /v1/models` answers (a slow live check of `lurkbot onboard`) */
  modelsDelayMs?: number;
}

export function messageText(m: ChatMessage | undefined): string {
  if (!m?.content) return "";
  return typeof m.content === "string" ? m.content : m.content.map((p) => p.text ?? "").join("");
}

/** The "auto" mode's answer to a request. */
export function autoReply(body: ChatRequestBody): FakeReply {
  const last = body.messages[body.messages.length - 1];
  if (last?.role === "tool") return { kind: "text", text: `tool said: ${messageText(last).slice(0, 100)}` };
  const text = messageText(last);
  const read = last?.role === "user" ? /\bread\s+(\S+)/.exec(text) : null;
  if (read) return { kind: "tool_calls", calls: [{ name: "read", arguments: { path: read[1]! } }] };
  return { kind: "text", text: `echo: ${text}` };
}

const DEFAULT_ERRORS: Record<number, { type: string; code: string | null; message: string }> = {
  400: { type: "invalid_request_error", code: null, message: "Invalid request." },
  401: { type: "invalid_request_error", code: "invalid_api_key", message: "Incorrect API key provided." },
  429: { type: "requests", code: "rate_limit_exceeded", message: "Rate limit reached for requests. Please try again in 20ms." },
  500: { type: "server_error", code: null, message: "The server had an error while processing your request." },
  503: { type: "server_error", code: null, message: "The engine is currently overloaded, please try again later." },
};

export class FakeOpenAIServer {
  readonly requests: ReceivedRequest[] = [];
  /**
   * Optional: answers a request by its content before the queue is asked (undefined: the queue,
   * then "auto"); may wait, e.g. to hold one run's call while the test does something else.
   */
  responder: ((body: ChatRequestBody) => FakeReply | undefined | Promise<FakeReply | undefined>) | undefined;
  readonly transcriptions: TranscriptionRequest[] = [];
  /** Optional: whether a chat request's Authorization header is accepted (else 401), e.g. a fake OAuth server's tokens. */
  acceptsAuth: ((authorization: string | undefined) => boolean) | undefined;
  /** chat requests answered 401 (not in `requests`) */
  refusedAuth = 0;
  /** `GET /v1/models` requests received */
  modelRequests = 0;
  /** headers added to every response, e.g. the rate-limit headers (`x-ratelimit-remaining-requests`, ...) */
  responseHeaders: Record<string, string> = {};
  /** the text of a transcription (a number: answer with that HTTP status instead) */
  transcriptText: (req: TranscriptionRequest) => string | number = (req) => `transcript of ${req.fileName}, ${req.bytes.byteLength} bytes`;
  /** the answer's `usage` beside the text (undefined: none), as whisper-1 reports the audio's seconds */
  transcriptUsage: (req: TranscriptionRequest) => Record<string, unknown> | undefined = () => ({ type: "duration", seconds: 3 });
  /** POST /v1/audio/speech as received */
  readonly speechRequests: SpeechRequestRecord[] = [];
  /** a status to answer a speech request with instead of audio (undefined: audio) */
  speechStatus: (req: SpeechRequestRecord) => number | undefined = () => undefined;
  /** POST /v1/embeddings as received (model, input texts, encoding_format) */
  readonly embedRequests: EmbedRequestRecord[] = [];
  /** the dimensions of the fake embedding model's vectors */
  embedDimensions = FAKE_EMBED_DIMENSIONS;
  private readonly embedQueue: FakeEmbedReply[] = [];
  private readonly queue: FakeReply[] = [];
  private readonly open = new Set<ServerResponse>();
  private counter = 0;

  private constructor(private readonly server: Server, readonly url: string, private readonly opts: FakeOpenAIOptions) {}

  static async start(opts: FakeOpenAIOptions = {}): Promise<FakeOpenAIServer> {
    let fake!: FakeOpenAIServer;
    const server = createServer((req, res) => void fake.handle(req, res));
    fake = new FakeOpenAIServer(server, await listenLoopback(server, opts.port ?? 0), opts);
    return fake;
  }

  /** The base URL to give the SDK (OPENAI_BASE_URL). */
  get baseUrl(): string {
    return `${this.url}/v1`;
  }

  enqueue(...replies: FakeReply[]): void {
    this.queue.push(...replies);
  }

  /** Scripts the next embeddings requests (then they are answered "ok" again). */
  enqueueEmbed(...replies: FakeEmbedReply[]): void {
    this.embedQueue.push(...replies);
  }

  /** The texts of every embeddings request so far, in order. */
  get embeddedTexts(): string[] {
    return this.embedRequests.flatMap((r) => (r.reply.kind === "ok" ? r.input : []));
  }

  /** Drops queued replies and recorded requests. */
  reset(): void {
    this.queue.length = 0;
    this.requests.length = 0;
    this.transcriptions.length = 0;
    this.speechRequests.length = 0;
    this.embedQueue.length = 0;
    this.embedRequests.length = 0;
  }

  get queued(): number {
    return this.queue.length;
  }

  async close(): Promise<void> {
    for (const res of this.open) res.destroy();
    await closeLoopback(this.server);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "").split("?")[0];
    for (const [k, v] of Object.entries(this.responseHeaders)) res.setHeader(k, v);
    if (req.method === "GET" && path === "/v1/models") {
      // the real API asks for the key here too (lurkbot onboard's live check lists the models)
      this.modelRequests++;
      if (this.opts.modelsDelayMs) {
        this.open.add(res);
        res.on("close", () => this.open.delete(res));
        await sleep(this.opts.modelsDelayMs);
        if (res.destroyed) return;
      }
      if ((this.opts.apiKey && req.headers.authorization !== `Bearer ${this.opts.apiKey}`) || (this.acceptsAuth && !this.acceptsAuth(req.headers.authorization))) return this.error(res, { kind: "error", status: 401 });
      return json(res, 200, { object: "list", data: [{ id: "test-model", object: "model", created: 0, owned_by: "fake" }] });
    }
    if (req.method === "POST" && path === "/v1/audio/transcriptions") return this.transcription(req, res);
    if (req.method === "POST" && path === "/v1/embeddings") return this.embeddings(req, res);
    if (req.method === "POST" && path === "/v1/audio/speech") return this.speech(req, res);
    if (req.method !== "POST" || path !== "/v1/chat/completions") {
      return json(res, 404, { error: { message: `Unknown request URL: ${req.method} ${path}`, type: "invalid_request_error", param: null, code: "unknown_url" } });
    }
    const body = await this.jsonRequest<ChatRequestBody>(req, res);
    if (!body) return;
    const invalid = openaiContentError(body.messages ?? []);
    if (invalid) return this.error(res, { kind: "error", status: 400, message: invalid });
    const reply = (await this.responder?.(body)) ?? this.queue.shift() ?? autoReply(body);
    this.requests.push({ at: Date.now(), headers: req.headers, body, reply });
    if (this.opts.latencyMs) await sleep(this.opts.latencyMs);
    if (reply.kind === "error") return this.error(res, reply);
    const id = `chatcmpl-fake${++this.counter}`;
    if (body.stream) return this.stream(res, body, reply, id);
    return this.complete(res, body, reply, id);
  }

  private async transcription(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const type = req.headers["content-type"] ?? "";
    if (!type.startsWith("multipart/form-data")) return this.error(res, { kind: "error", status: 400, message: "Expected a multipart/form-data body." });
    if (this.opts.apiKey && req.headers.authorization !== `Bearer ${this.opts.apiKey}`) return this.error(res, { kind: "error", status: 401 });
    const form = await new Response(await readRaw(req), { headers: { "content-type": type } }).formData();
    const file = form.get("file");
    const field = (name: string) => (typeof form.get(name) === "string" ? form.get(name) as string : undefined);
    if (!file || typeof file === "string" || !field("model")) return this.error(res, { kind: "error", status: 400, message: "file and model are required." });
    const received: TranscriptionRequest = {
      headers: req.headers, model: field("model")!, fileName: file.name, fileType: file.type, bytes: Buffer.from(await file.arrayBuffer()),
      ...(field("language") ? { language: field("language")! } : {}), ...(field("response_format") ? { responseFormat: field("response_format")! } : {}),
    };
    this.transcriptions.push(received);
    const text = this.transcriptText(received);
    if (typeof text === "number") return this.error(res, { kind: "error", status: text });
    const usage = this.transcriptUsage(received);
    json(res, 200, { text, ...(usage ? { usage } : {}) });
  }

  /** The request's JSON body once its credentials are accepted; undefined when it was answered with a 400 or 401. */
  private async jsonRequest<T>(req: IncomingMessage, res: ServerResponse): Promise<T | undefined> {
    let body: T;
    try {
      body = JSON.parse(await readBody(req)) as T;
    } catch {
      json(res, 400, { error: { message: "We could not parse the JSON body of your request.", type: "invalid_request_error", param: null, code: null } });
      return undefined;
    }
    if ((this.opts.apiKey && req.headers.authorization !== `Bearer ${this.opts.apiKey}`) || (this.acceptsAuth && !this.acceptsAuth(req.headers.authorization))) {
      this.refusedAuth++;
      this.error(res, { kind: "error", status: 401 });
      return undefined;
    }
    return body;
  }

  private async speech(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await this.jsonRequest<Record<string, unknown>>(req, res);
    if (!body) return;
    const invalid = (message: string, param: string) => json(res, 400, { error: { message, type: "invalid_request_error", param, code: null } });
    const format = body.response_format ?? "mp3";
    if (typeof body.model !== "string" || body.model === "") return invalid("you must provide a model parameter", "model");
    if (typeof body.input !== "string" || body.input.length === 0 || body.input.length > 4096) return invalid("'input' must be a string of 1 to 4096 characters", "input");
    if (typeof body.voice !== "string" || body.voice === "") return invalid("'voice' is required", "voice");
    if (typeof format !== "string" || !(format in SPEECH_CONTENT_TYPES)) return invalid(`'${String(format)}' is not one of ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] - 'response_format'`, "response_format");
    const received: SpeechRequestRecord = {
      headers: req.headers, model: body.model, input: body.input, voice: body.voice, responseFormat: format,
      ...(typeof body.speed === "number" ? { speed: body.speed } : {}), ...(typeof body.instructions === "string" ? { instructions: body.instructions } : {}),
    };
    this.speechRequests.push(received);
    const status = this.speechStatus(received);
    if (status !== undefined) return this.error(res, { kind: "error", status });
    const audio = fakeSpeech(received);
    res.writeHead(200, { "content-type": SPEECH_CONTENT_TYPES[format]!, "content-length": audio.byteLength, "x-request-id": `req_fake_${Date.now()}` });
    res.end(audio);
  }

  private async embeddings(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await this.jsonRequest<{ model?: unknown; input?: unknown; encoding_format?: unknown }>(req, res);
    if (!body) return;
    const invalid = (message: string, param: string) => json(res, 400, { error: { message, type: "invalid_request_error", param, code: null } });
    if (typeof body.model !== "string" || body.model === "") return invalid("you must provide a model parameter", "model");
    const input = typeof body.input === "string" ? [body.input] : Array.isArray(body.input) && body.input.every((x) => typeof x === "string") ? body.input as string[] : undefined;
    if (!input || input.length === 0 || input.length > 2048 || input.some((x) => x === "")) {
      return invalid("'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.", "input");
    }
    const format = body.encoding_format ?? "float";
    if (format !== "float" && format !== "base64") return invalid(`'${String(format)}' is not one of ['float', 'base64'] - 'encoding_format'`, "encoding_format");
    const reply = this.embedQueue.shift() ?? { kind: "ok" };
    this.embedRequests.push({
      model: body.model, input, ...(typeof body.encoding_format === "string" ? { encodingFormat: body.encoding_format } : {}),
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}), reply,
    });
    if (reply.kind === "error") return this.error(res, { kind: "error", status: reply.status, ...(reply.message ? { message: reply.message } : {}), ...(reply.headers ? { headers: reply.headers } : {}) });
    if (reply.kind === "hang") {
      this.open.add(res);
      res.on("close", () => this.open.delete(res));
      return; // never answers; the client gives up or the server closes
    }
    const data = input.map((text, index) => {
      const vector = fakeEmbedding(text, this.embedDimensions);
      return { object: "embedding", index, embedding: format === "base64" ? base64Float32(vector) : vector };
    });
    const tokens = input.reduce((n, text) => n + Math.max(1, Math.ceil(text.length / 4)), 0);
    json(res, 200, { object: "list", data, model: body.model, usage: { prompt_tokens: tokens, total_tokens: tokens } });
  }

  private error(res: ServerResponse, reply: Extract<FakeReply, { kind: "error" }>): void {
    const d = DEFAULT_ERRORS[reply.status] ?? DEFAULT_ERRORS[500]!;
    for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, v);
    json(res, reply.status, { error: { message: reply.message ?? d.message, type: reply.type ?? d.type, param: null, code: reply.code === undefined ? d.code : reply.code } });
  }

  private complete(res: ServerResponse, body: ChatRequestBody, reply: FakeReply, id: string): void {
    const text = reply.kind === "hang" ? reply.text ?? "" : reply.kind === "text" ? reply.text : reply.kind === "tool_calls" ? reply.text ?? "" : "";
    const calls = reply.kind === "tool_calls" ? reply.calls.map((c, i) => ({ id: c.id ?? `call_${id}_${i}`, type: "function", function: { name: c.name, arguments: argsString(c) } })) : undefined;
    json(res, 200, {
      id, object: "chat.completion", created: Math.floor(Date.now() / 1000), model: body.model, system_fingerprint: null,
      choices: [{ index: 0, message: { role: "assistant", content: calls && !text ? null : text, refusal: null, ...(calls ? { tool_calls: calls } : {}), ...(reply.kind === "text" && reply.reasoning ? { reasoning_content: reply.reasoning } : {}) }, logprobs: null, finish_reason: calls ? "tool_calls" : reply.kind === "text" ? reply.finishReason ?? "stop" : "stop" }],
      usage: usage(body, text + (calls ? JSON.stringify(calls) : "")),
    });
  }

  private async stream(res: ServerResponse, body: ChatRequestBody, reply: FakeReply, id: string): Promise<void> {
    const includeUsage = body.stream_options?.include_usage === true;
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" });
    this.open.add(res);
    res.on("close", () => this.open.delete(res));
    const created = Math.floor(Date.now() / 1000);
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      ({ id, object: "chat.completion.chunk", created, model: body.model, system_fingerprint: null, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...(includeUsage ? { usage: null } : {}) });
    const chunks: unknown[] = [chunk({ role: "assistant", content: "", refusal: null })];
    let produced = "";
    const text = reply.kind === "text" || reply.kind === "hang" ? reply.text ?? "" : reply.kind === "tool_calls" ? reply.text ?? "" : "";
    if (reply.kind === "text" && reply.reasoning) {
      for (const piece of splitText(reply.reasoning, 2)) chunks.push(chunk({ reasoning_content: piece }));
      produced += reply.reasoning;
    }
    for (const piece of splitText(text, reply.kind === "text" ? reply.chunks ?? Math.min(4, Math.max(1, text.length)) : 2)) {
      chunks.push(chunk({ content: piece }));
      produced += piece;
    }
    if (reply.kind === "tool_calls") {
      reply.calls.forEach((c, index) => {
        const args = argsString(c);
        chunks.push(chunk({ tool_calls: [{ index, id: c.id ?? `call_${id}_${index}`, type: "function", function: { name: c.name, arguments: "" } }] }));
        for (const piece of splitText(args, c.fragments ?? 3)) chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
        produced += c.name + args;
      });
    }
    if (reply.kind === "hang") {
      await this.write(res, chunks);
      return; // never finishes; the client aborts or the server closes
    }
    const finish = reply.kind === "tool_calls" ? "tool_calls" : reply.kind === "text" ? reply.finishReason ?? "stop" : "stop";
    chunks.push(chunk({}, finish));
    if (includeUsage) chunks.push({ id, object: "chat.completion.chunk", created, model: body.model, system_fingerprint: null, choices: [], usage: usage(body, produced) });
    await this.write(res, chunks);
    if (!res.destroyed) res.end("data: [DONE]\n\n");
  }

  private async write(res: ServerResponse, chunks: unknown[]): Promise<void> {
    const delay = this.opts.chunkDelayMs ?? 0;
    if (delay === 0) {
      res.write(chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join(""));
      return;
    }
    for (const c of chunks) {
      if (res.destroyed) return;
      res.write(`data: ${JSON.stringify(c)}\n\n`);
      await sleep(delay);
    }
  }
}

function argsString(c: FakeToolCall): string {
  return typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments);
}

/** Splits text into n pieces of about equal length (at least one piece when text is non-empty). */

function usage(body: ChatRequestBody, completion: string) {
  const prompt = Math.ceil(JSON.stringify(body.messages).length / 4) + Math.ceil(JSON.stringify(body.tools ?? []).length / 4);
  const completionTokens = Math.max(1, Math.ceil(completion.length / 4));
  return { prompt_tokens: prompt, completion_tokens: completionTokens, total_tokens: prompt + completionTokens, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const json = (res: ServerResponse, status: number, body: unknown) => sendJson(res, status, body, { "x-request-id": `req_fake_${Date.now()}` });
