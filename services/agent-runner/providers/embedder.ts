/**
 * Embeddings from a provider: texts -> vectors (the agent-runner's `lurk.agent-runner.embed`).
 * Contract of `embed()`: resolves with one vector per text, in order, all of one length, every
 * value finite; rejects with a classified LurkError (PROVIDER_* codes, ABORTED when the signal
 * fired, PROVIDER_TIMEOUT after `timeoutMs`). OpenAI and compatible servers (openai-embed.ts)
 * and Ollama (ollama-embed.ts) have one; Anthropic has no embeddings API.
 * `CredentialedEmbedder` is CredentialedProvider's counterpart: a profile with a token or an OAuth
 * client gets its secret per call, and a refused renewable secret is renewed once.
 */
import { LurkError } from "../../../shared/contract/index.js";
import type { CredentialSource } from "../credentials.js";

export interface EmbedRequest {
  /** the model name without the provider prefix */
  model: string;
  texts: string[];
  signal: AbortSignal;
  timeoutMs: number;
}

export interface EmbedResult {
  vectors: Float32Array[];
  /** tokens billed, when the provider says */
  tokens?: number;
}

export interface Embedder {
  readonly name: string;
  embed(request: EmbedRequest): Promise<EmbedResult>;
}

/** Checks an answer against the contract above; PROVIDER_ERROR naming what is wrong. */
export function checkedVectors(provider: string, texts: number, vectors: Float32Array[]): Float32Array[] {
  const bad = (why: string) => new LurkError("PROVIDER_ERROR", `${provider}: the embeddings answer ${why}`, { retryable: false });
  if (vectors.length !== texts) throw bad(`has ${vectors.length} vectors for ${texts} texts`);
  const dims = vectors[0]?.length ?? 0;
  if (dims === 0) throw bad("has empty vectors");
  for (const v of vectors) {
    if (v.length !== dims) throw bad("has vectors of different lengths");
    for (let i = 0; i < v.length; i++) if (!Number.isFinite(v[i]!)) throw bad("has a value that is not a finite number");
  }
  return vectors;
}

export class CredentialedEmbedder implements Embedder {
  private current: { secret: string; embedder: Embedder } | undefined;

  constructor(readonly name: string, private readonly source: CredentialSource, private readonly make: (secret: string) => Embedder) {}

  async embed(request: EmbedRequest): Promise<EmbedResult> {
    let secret = await this.source.secret(request.signal);
    try {
      return await this.embedderFor(secret).embed(request);
    } catch (err) {
      if (!(LurkError.is(err) && err.code === "PROVIDER_AUTH" && this.source.renewable)) throw err;
      secret = await this.source.secret(request.signal, secret);
      return this.embedderFor(secret).embed(request);
    }
  }

  private embedderFor(secret: string): Embedder {
    if (this.current?.secret !== secret) this.current = { secret, embedder: this.make(secret) };
    return this.current.embedder;
  }
}
