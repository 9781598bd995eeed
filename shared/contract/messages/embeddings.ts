/**
 * `lurk.agent-runner.embed`: texts -> embedding vectors, made by the agent-runner (it alone holds
 * the providers' credentials and auth profiles) for the tools actor's `memory_search`. Only the
 * tools user may publish the request (nats.conf). The request is bounded in count and size; the
 * reply carries each vector as base64 of little-endian float32s (vectors.ts), in the order of the
 * texts. Failures are typed errors: PROVIDER_* (rate limit, auth, timeout, ...), NO_MODEL,
 * VALIDATION_FAILED (e.g. an anthropic model: Anthropic has no embeddings API), LIMIT_EXCEEDED
 * (the vectors would not fit in one reply; `details.maxTexts` says how many would).
 * The tokens the provider bills go to the usage ledger (purpose `embedding`), booked to the
 * envelope's `sessionKey` and the request's `agentId` when given.
 */
import { z } from "zod";
import { agentIdSchema } from "../common.js";
import { defineMessage } from "../envelope.js";
import { encodedVectorLength } from "../vectors.js";

export const MAX_EMBED_TEXTS = 128;
export const MAX_EMBED_TEXT_CHARS = 16_000;
export const MAX_EMBED_TOTAL_CHARS = 200_000;
export const MAX_EMBED_DIMENSIONS = 8192;

export const agentRunnerEmbedRequest = defineMessage("lurk.agent-runner.embed.v1", {
  texts: z.array(z.string().min(1).max(MAX_EMBED_TEXT_CHARS)).min(1).max(MAX_EMBED_TEXTS)
    .refine((texts) => texts.reduce((n, t) => n + t.length, 0) <= MAX_EMBED_TOTAL_CHARS, `the texts may hold ${MAX_EMBED_TOTAL_CHARS} characters in all`),
  /** `provider/model` of an OpenAI, OpenAI-compatible or Ollama provider; default: the runner's memory.embeddings.model */
  model: z.string().regex(/^[a-z0-9-]+\/\S+$/, "provider/model, e.g. openai/text-embedding-3-small").max(200).optional(),
  /** ms the caller waits; the provider call is given up then (default: memory.embeddings.timeoutMs) */
  timeoutMs: z.number().int().min(1_000).max(600_000).optional(),
  /** the agent whose tool call asks (with the envelope's `sessionKey`): the usage ledger books the tokens to it */
  agentId: agentIdSchema.optional(),
});
export type AgentRunnerEmbedRequest = z.infer<typeof agentRunnerEmbedRequest>;

export const agentRunnerEmbedReply = z.object({
  /** the `provider/model` that made the vectors */
  model: z.string().max(200),
  dimensions: z.number().int().min(1).max(MAX_EMBED_DIMENSIONS),
  /** one per text, in order: base64 of `dimensions` little-endian float32s */
  vectors: z.array(z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/)).max(MAX_EMBED_TEXTS),
  usage: z.object({ tokens: z.number().int().nonnegative() }).optional(),
}).superRefine((reply, ctx) => {
  const length = encodedVectorLength(reply.dimensions);
  if (reply.vectors.some((v) => v.length !== length)) ctx.addIssue({ code: "custom", path: ["vectors"], message: `every vector is ${length} base64 characters (${reply.dimensions} float32s)` });
});
export type AgentRunnerEmbedReply = z.infer<typeof agentRunnerEmbedReply>;
