/**
 * The two sides of memory_search's vectors (memory.embeddings). The tool runs in a pool worker,
 * which cannot use the bus; the actor's thread holds the vector cache (LMDB) and asks the
 * agent-runner for new vectors. The worker's `ctx.embeddings` (MemoryVectors) talks to the call's
 * VectorHost over the task's port (worker-access.ts, attempt.ts). Vectors are unit length.
 */

/** What the worker needs to know (plain data in the task). */
export interface VectorSettings {
  /** `provider/model`: the cache key's first part and the model the agent-runner is asked for */
  model: string;
  /** the cosine's share of a hybrid score (keywords: 1 - vectorWeight) */
  vectorWeight: number;
  /** passages given vectors per search */
  maxChunks: number;
}

/** The worker side: `ctx.embeddings` of a worker tool when memory.embeddings is set. */
export interface MemoryVectors extends VectorSettings {
  /** the cached vectors of passages by the SHA-256 of their text (null: not cached) */
  lookup(hashes: string[]): Promise<Array<Float32Array | null>>;
  /**
   * Vectors of `texts`, in order; a text with a hash has its vector cached under it. Rejects
   * with a LurkError (no agent-runner, a provider failure, the search's embedding time used up).
   */
  embed(texts: string[], hashes: Array<string | null>): Promise<Float32Array[]>;
}

/** The actor side of one call (embeddings/host.ts). */
export interface VectorHost {
  readonly settings: VectorSettings;
  lookup(hashes: string[]): Array<Float32Array | null>;
  embed(texts: string[], hashes: Array<string | null>, signal: AbortSignal): Promise<Float32Array[]>;
}
