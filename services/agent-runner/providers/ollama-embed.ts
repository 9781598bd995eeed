/**
 * Embeddings through the official `ollama` client (`embed`, POST /api/embed with `input` as a
 * list: one vector per text in `embeddings`). The client library is imported on the first call,
 * as ollama.ts does; the call is given up at `timeoutMs` (PROVIDER_TIMEOUT) or when the signal
 * fires (ABORTED). Errors are classified like the chat calls' (ollama-errors.ts).
 */
import { LurkError } from "../../../shared/contract/index.js";
import { DEFAULT_OLLAMA_HOST } from "./ollama.js";
import { classifyOllamaError } from "./ollama-errors.js";
import { checkedVectors, type Embedder, type EmbedRequest, type EmbedResult } from "./embedder.js";

export interface OllamaEmbedderOptions {
  host?: string;
  /** sent as `Authorization: Bearer` (a hosted Ollama) */
  apiKey?: string;
}

export class OllamaEmbedder implements Embedder {
  readonly name = "ollama";
  readonly host: string;

  constructor(private readonly opts: OllamaEmbedderOptions) {
    this.host = opts.host?.trim() || DEFAULT_OLLAMA_HOST;
  }

  async embed(req: EmbedRequest): Promise<EmbedResult> {
    let Ollama: typeof import("ollama/browser").Ollama;
    try {
      ({ Ollama } = await import("ollama/browser"));
    } catch (err) {
      throw new LurkError("PROVIDER_ERROR", `the ollama client library could not be loaded: ${err instanceof Error ? err.message : String(err)}; reinstall with \`npm install\``);
    }
    const ctl = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ctl.abort();
    }, req.timeoutMs);
    const onAbort = () => ctl.abort();
    req.signal.addEventListener("abort", onAbort, { once: true });
    if (req.signal.aborted) ctl.abort();
    const client = new Ollama({
      host: this.host,
      ...(this.opts.apiKey ? { headers: { Authorization: `Bearer ${this.opts.apiKey}` } } : {}),
      fetch: ((input: Parameters<typeof fetch>[0], init?: RequestInit) =>
        fetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, ctl.signal]) : ctl.signal })) as typeof fetch,
    });
    try {
      const response = await client.embed({ model: req.model, input: req.texts });
      const vectors = (Array.isArray(response?.embeddings) ? response.embeddings : []).map((e) => Float32Array.from(Array.isArray(e) ? e : [], Number));
      const tokens = response.prompt_eval_count;
      return { vectors: checkedVectors(this.name, req.texts.length, vectors), ...(Number.isInteger(tokens) && tokens >= 0 ? { tokens } : {}) };
    } catch (err) {
      throw classifyOllamaError(err, { host: this.host, model: req.model, aborted: req.signal.aborted, timedOut, timeoutMs: req.timeoutMs });
    } finally {
      clearTimeout(timer);
      req.signal.removeEventListener("abort", onAbort);
    }
  }
}
