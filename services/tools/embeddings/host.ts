/**
 * The actor side of memory_search's vectors (memory.embeddings): the cache lookups and the
 * requests to `lurk.agent-runner.embed`, for the worker running the search (types.ts).
 *
 * `embed` sends the texts in batches of at most `batchSize` texts (fewer when their vectors
 * would not fit in one reply: sized from the dimensions of the last reply, and shrunk when the
 * agent-runner answers LIMIT_EXCEEDED with `maxTexts`), one request at a time, and stores each
 * batch's vectors (normalized to unit length) as it arrives, so a search that runs out of time
 * keeps what it got for the next one. One call may spend at most its budget (memory.embeddings.
 * timeoutMs, and less than the tool's own deadline) on requests; then it rejects with TIMEOUT.
 * A request that times out pauses embedding for PAUSE_MS: searches meanwhile answer by keywords
 * at once instead of waiting for an agent-runner that does not answer.
 * Each request names the call's session, agent and run, so the agent-runner books the embedding
 * tokens in the usage ledger to them.
 */
import { decodeVector, encodedVectorLength, LurkError, MAX_EMBED_TOTAL_CHARS } from "../../../shared/contract/index.js";
import type { BusClient } from "../../../shared/runtime/client.js";
import type { MemoryEmbeddingsConfig } from "../../../shared/runtime/config-embeddings.js";
import type { Logger } from "../../../shared/runtime/logger.js";
import type { VectorCache } from "./cache.js";
import type { VectorHost, VectorSettings } from "./types.js";

export const PAUSE_MS = 60_000;
/** bytes of a request or reply besides its texts or vectors */
const MESSAGE_OVERHEAD = 4096;
/** the dimensions assumed before the first reply (text-embedding-3-large's) */
const ASSUMED_DIMENSIONS = 3072;
/** time kept back from the tool's deadline for the ranking after the vectors */
const RANKING_RESERVE_MS = 5_000;

/** The tool call that asks for vectors: its tokens are booked to its session and agent. */
export interface EmbedCaller {
  sessionKey?: string;
  agentId?: string;
  runId?: string;
}

export interface MemoryEmbeddingsOptions {
  client: Pick<BusClient, "call">;
  config: MemoryEmbeddingsConfig;
  cache: VectorCache;
  maxPayloadBytes: number;
  log: Pick<Logger, "debug" | "warn">;
}

export class MemoryEmbeddings {
  readonly settings: VectorSettings;
  /** texts per request: batchSize, or fewer so the vectors fit in one reply */
  private perRequest: number;
  private paused: { until: number; reason: string } | undefined;

  constructor(private readonly opts: MemoryEmbeddingsOptions) {
    const c = opts.config;
    this.settings = { model: c.model, vectorWeight: c.vectorWeight, maxChunks: c.maxChunks };
    this.perRequest = Math.min(c.batchSize, this.fitting(ASSUMED_DIMENSIONS));
  }

  /**
   * The host of one call that may run `toolTimeoutMs`: its embedding budget starts at its first
   * request; `caller` (the call's session, agent and run) is who the embedding tokens are booked to.
   */
  forCall(toolTimeoutMs: number, caller: EmbedCaller = {}): VectorHost {
    const budget = Math.max(1_000, Math.min(this.opts.config.timeoutMs, toolTimeoutMs - RANKING_RESERVE_MS));
    let deadline: number | undefined;
    return {
      settings: this.settings,
      lookup: (hashes) => this.opts.cache.getMany(this.settings.model, hashes),
      embed: (texts, hashes, signal) => this.embed(texts, hashes, signal, (deadline ??= Date.now() + budget), budget, caller),
    };
  }

  private async embed(texts: string[], hashes: Array<string | null>, signal: AbortSignal, deadline: number, budget: number, caller: EmbedCaller): Promise<Float32Array[]> {
    if (this.paused && this.paused.until > Date.now()) {
      throw new LurkError("UNAVAILABLE", `${this.paused.reason} (not asked again for ${Math.ceil((this.paused.until - Date.now()) / 1000)} s)`);
    }
    const out: Float32Array[] = [];
    while (out.length < texts.length) {
      if (signal.aborted) throw new LurkError("ABORTED", "the search was stopped");
      const left = deadline - Date.now();
      if (left < 500) {
        throw new LurkError("TIMEOUT", `embedding the memory passages took longer than ${budget} ms (memory.embeddings.timeoutMs); ${out.length} of ${texts.length} were embedded and are kept for the next search`);
      }
      const batch = this.nextBatch(texts, out.length);
      let reply;
      try {
        const who = { ...(caller.sessionKey ? { sessionKey: caller.sessionKey } : {}), ...(caller.agentId ? { agentId: caller.agentId } : {}) };
        reply = await this.opts.client.call("agent-runner", "embed", { texts: batch, model: this.settings.model, timeoutMs: Math.max(1_000, left - 200), ...who }, { timeoutMs: left, ...(caller.runId ? { runId: caller.runId } : {}) });
      } catch (err) {
        const e = LurkError.from(err);
        const maxTexts = (e.details as { maxTexts?: unknown } | undefined)?.maxTexts;
        if (e.code === "LIMIT_EXCEEDED" && typeof maxTexts === "number" && maxTexts >= 1 && maxTexts < batch.length) {
          this.perRequest = Math.floor(maxTexts);
          continue;
        }
        if (e.code === "TIMEOUT" || e.code === "PROVIDER_TIMEOUT") {
          this.paused = { until: Date.now() + PAUSE_MS, reason: e.message };
          this.opts.log.warn({ err: e, pauseMs: PAUSE_MS }, "an embedding request timed out; memory_search ranks by keywords for a while");
        }
        throw e;
      }
      if (reply.vectors.length !== batch.length) throw new LurkError("PROVIDER_ERROR", `the agent-runner answered ${reply.vectors.length} vectors for ${batch.length} texts`);
      const vectors = reply.vectors.map((v) => unit(decodeVector(v, reply.dimensions)));
      this.perRequest = Math.min(this.opts.config.batchSize, this.fitting(reply.dimensions));
      const start = out.length;
      const stored = vectors.flatMap((vector, i) => {
        const hash = hashes[start + i];
        return hash ? [{ hash, vector }] : [];
      });
      await this.opts.cache.putMany(this.settings.model, stored);
      out.push(...vectors);
    }
    this.paused = undefined;
    return out;
  }

  /** The texts from `from` that fit one request: perRequest of them, within the contract's and the bus's size caps. */
  private nextBatch(texts: string[], from: number): string[] {
    const maxBytes = this.opts.maxPayloadBytes - MESSAGE_OVERHEAD;
    const batch: string[] = [];
    let chars = 0;
    let bytes = 0;
    for (let i = from; i < texts.length && batch.length < this.perRequest; i++) {
      const text = texts[i]!;
      const size = Buffer.byteLength(JSON.stringify(text)) + 1;
      if (batch.length > 0 && (chars + text.length > MAX_EMBED_TOTAL_CHARS || bytes + size > maxBytes)) break;
      batch.push(text);
      chars += text.length;
      bytes += size;
    }
    return batch;
  }

  /** How many vectors of `dimensions` fit in one reply. */
  private fitting(dimensions: number): number {
    return Math.max(1, Math.floor((this.opts.maxPayloadBytes - MESSAGE_OVERHEAD) / (encodedVectorLength(dimensions) + 3)));
  }
}

/** `v` scaled to length 1 (a zero vector stays zero). */
export function unit(v: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i]! * v[i]!;
  const norm = Math.sqrt(sum);
  if (norm > 0 && Math.abs(norm - 1) > 1e-6) for (let i = 0; i < v.length; i++) v[i] = v[i]! / norm;
  return v;
}
