/**
 * Embeddings through the official OpenAI SDK (`embeddings.create`, POST /v1/embeddings), for
 * OpenAI and compatible servers (vLLM, LM Studio, llama.cpp, OpenRouter...). It asks for
 * `encoding_format: "base64"` itself (the SDK's default too), so the SDK hands the answer over
 * untouched; a compatible server that ignores the format and sends JSON numbers is read as well.
 * Errors are classified like the chat calls' (errors.ts). The SDK's own retries are off: the
 * endpoint fails over to another auth profile itself. Imported only through lazy.ts.
 */
import OpenAI from "openai";
import { classifyProviderError } from "./errors.js";
import { checkedVectors, type Embedder, type EmbedRequest, type EmbedResult } from "./embedder.js";
import { httpTransport } from "./http-transport.js";

export interface OpenAIEmbedderOptions {
  apiKey?: string;
  baseUrl?: string;
}

export class OpenAIEmbedder implements Embedder {
  readonly name = "openai";
  private readonly client: OpenAI;

  constructor(opts: OpenAIEmbedderOptions) {
    this.client = new OpenAI({
      // a local OpenAI-compatible server usually needs no key; the SDK insists on one
      apiKey: opts.apiKey ?? "no-key",
      ...(opts.baseUrl ? { baseURL: opts.baseUrl } : {}),
      maxRetries: 0,
      fetch: httpTransport(),
    });
  }

  async embed(req: EmbedRequest): Promise<EmbedResult> {
    let response: OpenAI.Embeddings.CreateEmbeddingResponse;
    try {
      response = await this.client.embeddings.create(
        { model: req.model, input: req.texts, encoding_format: "base64" },
        { signal: req.signal, timeout: req.timeoutMs },
      );
    } catch (err) {
      throw classifyProviderError(err, this.name, req.signal.aborted);
    }
    const data = [...(Array.isArray(response?.data) ? response.data : [])].sort((a, b) => a.index - b.index);
    const vectors = data.map((d) => toFloat32(d.embedding as unknown));
    const tokens = response.usage?.total_tokens ?? response.usage?.prompt_tokens;
    return { vectors: checkedVectors(this.name, req.texts.length, vectors), ...(typeof tokens === "number" ? { tokens } : {}) };
  }
}

/** base64 of little-endian float32s (what `encoding_format: "base64"` answers), or JSON numbers */
function toFloat32(embedding: unknown): Float32Array {
  if (typeof embedding === "string") {
    const bytes = Buffer.from(embedding, "base64");
    const out = new Float32Array(Math.floor(bytes.length / 4));
    for (let i = 0; i < out.length; i++) out[i] = bytes.readFloatLE(i * 4);
    return out;
  }
  return Array.isArray(embedding) ? Float32Array.from(embedding, Number) : new Float32Array(0);
}
