/**
 * `lurk.agent-runner.embed`: embedding vectors for the tools actor's memory_search. The model is
 * the request's, else `memory.embeddings.model`; it must be an OpenAI (or compatible) or Ollama
 * model (Anthropic has no embeddings API: VALIDATION_FAILED saying what to use). Auth profiles
 * are picked and cooled down exactly as for a run's calls (failover.ts: the pinned or least
 * recently used usable profile; a rate limit, overload, auth, billing or timeout failure cools it
 * down and the next profile is asked), under one pin key of their own. When every profile is
 * cooling down the reply is that failure at once, without calling the provider. The reply's
 * vectors are base64 little-endian float32s; a batch whose vectors would not fit in one bus
 * message is LIMIT_EXCEEDED with `details.maxTexts`.
 * The tokens the provider bills are booked in the usage ledger (purpose `embedding`, priced at
 * the embedding model) to the envelope's `sessionKey` and the request's `agentId` (the tools
 * actor sends those of the memory_search call), in the background (usage-booking.ts).
 */
import {
  encodedVectorLength, encodeVector, LurkError, type AgentRunnerEmbedReply, type AgentRunnerEmbedRequest, type ErrorCode,
} from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { EMBEDDING_PROVIDERS, EMBEDDINGS_DEFAULTS } from "../../shared/runtime/config-embeddings.js";
import type { LurkConfig } from "../../shared/runtime/config.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { AuthStateStore, FailureReason } from "./auth-profiles.js";
import { attemptChain } from "./chain-attempts.js";
import { ModelChain } from "./failover.js";
import { NO_ANTHROPIC_EMBEDDINGS, type ProviderRegistry } from "./providers/registry.js";
import { usageBooker, type BookUsage } from "./usage-booking.js";

/** the "session" whose profile pin embeddings use (auth-profiles.ts pins per session and provider) */
export const EMBED_PIN_KEY = "lurk:embeddings";
/** bytes of a reply besides its vectors (model, dimensions, usage, JSON) */
const REPLY_OVERHEAD = 1024;

const COOLDOWN_CODES: Record<FailureReason, ErrorCode> = {
  rate_limit: "PROVIDER_RATE_LIMIT", overloaded: "PROVIDER_OVERLOADED", auth: "PROVIDER_AUTH", billing: "PROVIDER_BILLING", timeout: "PROVIDER_TIMEOUT", other: "PROVIDER_ERROR",
};

export interface EmbedDeps {
  registry: ProviderRegistry;
  config: LurkConfig;
  store?: AuthStateStore;
  log: Logger;
  /** books the billed tokens in the usage ledger (absent: not booked) */
  book?: BookUsage;
}

export function serveEmbeddings(rt: ActorRuntime, deps: Omit<EmbedDeps, "config" | "log">): void {
  const full: EmbedDeps = { ...deps, config: rt.config, log: rt.log, book: usageBooker({ client: rt.client, signal: rt.signal, log: rt.log }) };
  rt.serve("agent-runner", "embed", (req) => embedTexts(full, req, rt.signal));
}

/** The embedding model a request uses, checked. */
export function embeddingRef(config: LurkConfig, requested: string | undefined): { ref: string; provider: string } {
  const ref = requested ?? config.memory.embeddings?.model;
  if (!ref) throw new LurkError("NO_MODEL", "no embedding model is configured: set memory.embeddings.model in config.json (e.g. openai/text-embedding-3-small or ollama/nomic-embed-text)");
  const provider = ref.slice(0, Math.max(0, ref.indexOf("/")));
  if (provider === "anthropic") throw new LurkError("VALIDATION_FAILED", `${ref}: ${NO_ANTHROPIC_EMBEDDINGS}`);
  if (!(EMBEDDING_PROVIDERS as readonly string[]).includes(provider)) {
    throw new LurkError("VALIDATION_FAILED", `"${ref}" is not a model of an embedding provider (${EMBEDDING_PROVIDERS.join(", ")})`);
  }
  return { ref, provider };
}

export async function embedTexts(deps: EmbedDeps, req: Pick<AgentRunnerEmbedRequest, "texts" | "model" | "timeoutMs" | "agentId" | "sessionKey">, signal: AbortSignal): Promise<AgentRunnerEmbedReply> {
  const { ref } = embeddingRef(deps.config, req.model);
  const timeoutMs = req.timeoutMs ?? deps.config.memory.embeddings?.timeoutMs ?? EMBEDDINGS_DEFAULTS.timeoutMs;
  const deadline = Date.now() + timeoutMs;
  // throws PROVIDER_AUTH naming the variable to set when the provider has no credentials
  const chain = new ModelChain({ registry: deps.registry, config: deps.config, refs: [ref], sessionKey: EMBED_PIN_KEY, ...(deps.store ? { store: deps.store } : {}), log: deps.log });
  const result = await attemptChain(chain, { signal, deadline, errorCode: "PROVIDER_ERROR" }, async (c, left) => {
    const started = Date.now();
    const result = await deps.registry.embedderFor(c.profile).embed({ model: c.model, texts: req.texts, signal, timeoutMs: left });
    deps.log.debug({ model: ref, profile: c.profile.id, texts: req.texts.length, dimensions: result.vectors[0]!.length, ms: Date.now() - started }, "embedded");
    // billed even when the vectors then do not fit in one reply
    if (result.tokens) {
      const usage = { input: result.tokens, output: 0, cacheRead: 0, cacheWrite: 0, total: result.tokens };
      void deps.book?.({ owner: { sessionKey: req.sessionKey, agentId: req.agentId }, purpose: "embedding", provider: c.providerName, model: c.model, usage });
    }
    return result;
  }, () => coolingDown(deps, chain, ref));
  return reply(deps.config, ref, result.vectors, result.tokens);
}

function reply(config: LurkConfig, model: string, vectors: Float32Array[], tokens: number | undefined): AgentRunnerEmbedReply {
  const dimensions = vectors[0]!.length;
  // each vector is a JSON string: its base64, two quotes and a comma
  const perVector = encodedVectorLength(dimensions) + 3;
  const room = config.bus.maxPayloadBytes - REPLY_OVERHEAD;
  if (perVector * vectors.length > room) {
    const maxTexts = Math.max(1, Math.floor(room / perVector));
    throw new LurkError("LIMIT_EXCEEDED", `${vectors.length} vectors of ${dimensions} dimensions do not fit in one bus message (bus.maxPayloadBytes ${config.bus.maxPayloadBytes}); send at most ${maxTexts} texts per request`, { details: { dimensions, maxTexts } });
  }
  return { model, dimensions, vectors: vectors.map(encodeVector), ...(tokens !== undefined ? { usage: { tokens } } : {}) };
}

/** No profile is usable now: the failure that cooled down the one that is free first. */
function coolingDown(deps: EmbedDeps, chain: ModelChain, ref: string): LurkError {
  const c = chain.probe(new Set());
  const availability = c && deps.store?.availability(c.profile, c.model);
  if (!c || !availability || availability.usable) return new LurkError("PROVIDER_ERROR", `${ref}: no auth profile could be used`, { retryable: true });
  return new LurkError(COOLDOWN_CODES[availability.reason], `${ref}: every auth profile of ${c.providerName} is ${availability.disabled ? "disabled" : "cooling down"} after a ${availability.reason} failure, until ${new Date(availability.until).toISOString()}`,
    { retryable: true, details: { retryAfterMs: Math.max(0, availability.until - Date.now()) } });
}
