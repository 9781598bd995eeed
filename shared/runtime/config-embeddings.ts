/**
 * `memory.embeddings` (off unless set; env LURKBOT_EMBEDDING_MODEL sets its model): hybrid
 * `memory_search`, keywords and meaning. The tools actor asks the agent-runner for the vectors
 * of memory passages and of the query (`lurk.agent-runner.embed`), keeps the passages' vectors
 * in LMDB (`<dataDir>/tools/embeddings`, keyed by model and the SHA-256 of the passage, at most
 * `cacheMaxEntries`), and ranks by textWeight × BM25/max BM25 + vectorWeight × cosine
 * (textWeight = 1 - vectorWeight). Without it, memory_search is the keyword search alone.
 *   "memory": { "embeddings": { "model": "openai/text-embedding-3-small" } }
 *   "memory": { "embeddings": { "model": "ollama/nomic-embed-text", "vectorWeight": 0.6 } }
 * The model is `provider/model` of an OpenAI (or OpenAI-compatible: OPENAI_BASE_URL) or Ollama
 * provider, with that provider's credentials and auth profiles. Anthropic has no embeddings API,
 * so an anthropic model is refused when the config is read (every actor refuses to start).
 */
import { z } from "zod";
import { MAX_EMBED_TEXTS } from "../contract/index.js";

export const EMBEDDINGS_DEFAULTS = {
  vectorWeight: 0.7,
  /** texts per request to the agent-runner (fewer when the vectors would not fit in one bus message) */
  batchSize: 32,
  /** memory passages given vectors per search (MEMORY.md first, then the most recently changed files); the rest rank by keywords */
  maxChunks: 2000,
  /** the most one search waits for embeddings (all its requests); past it the search answers by keywords and the vectors made so far are kept */
  timeoutMs: 20_000,
  /** vectors kept in the tools actor's LMDB cache; the least recently used go first */
  cacheMaxEntries: 20_000,
};

export const EMBEDDING_PROVIDERS = ["openai", "ollama"] as const;

export const embeddingModelSchema = z.string().max(200).superRefine((ref, ctx) => {
  const provider = /^([a-z0-9-]+)\/\S+$/.exec(ref)?.[1];
  if (provider === "anthropic") {
    ctx.addIssue({ code: "custom", message: `"${ref}": Anthropic has no embeddings API. Use an OpenAI embedding model (openai/text-embedding-3-small; an OpenAI-compatible server's through OPENAI_BASE_URL) or an Ollama one (ollama/nomic-embed-text)` });
  } else if (!provider || !(EMBEDDING_PROVIDERS as readonly string[]).includes(provider)) {
    ctx.addIssue({ code: "custom", message: `"${ref}" is not provider/model of an embedding provider (${EMBEDDING_PROVIDERS.join(", ")}), e.g. openai/text-embedding-3-small or ollama/nomic-embed-text` });
  }
});

export const memoryEmbeddingsConfigSchema = z.object({
  model: embeddingModelSchema,
  /** the cosine similarity's share of the score; the keyword score gets 1 - vectorWeight */
  vectorWeight: z.number().min(0).max(1).default(EMBEDDINGS_DEFAULTS.vectorWeight),
  batchSize: z.number().int().min(1).max(MAX_EMBED_TEXTS).default(EMBEDDINGS_DEFAULTS.batchSize),
  maxChunks: z.number().int().min(1).max(100_000).default(EMBEDDINGS_DEFAULTS.maxChunks),
  timeoutMs: z.number().int().min(1_000).max(600_000).default(EMBEDDINGS_DEFAULTS.timeoutMs),
  cacheMaxEntries: z.number().int().min(100).max(10_000_000).default(EMBEDDINGS_DEFAULTS.cacheMaxEntries),
});
export type MemoryEmbeddingsConfig = z.infer<typeof memoryEmbeddingsConfigSchema>;
