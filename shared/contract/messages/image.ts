/**
 * `lurk.agent-runner.describe_image`: a stored image and a question -> the image model's answer,
 * made by the agent-runner (it alone holds the providers' credentials and auth profiles) for the
 * tools actor's `image` tool. Only the tools user may publish the request (nats.conf). The image
 * travels by media ref (the tool stores a workspace file first), never as bytes on the bus. The
 * model is the calling agent's `imageModel`, else `tools.image.model`, read by the runner from
 * its own config. Failures are typed errors: NO_MODEL (none configured), VALIDATION_FAILED (not
 * an image the runner can read or scale; a model known to lack vision), NOT_FOUND / LIMIT_EXCEEDED
 * (the media store), PROVIDER_* (the provider's failure after failover).
 * The tokens are booked in the usage ledger under purpose `image` to the request's session/agent.
 */
import { z } from "zod";
import { agentIdSchema, mediaRefSchema, sessionKeySchema } from "../common.js";
import { defineMessage } from "../envelope.js";

export const MAX_IMAGE_PROMPT_CHARS = 4000;
export const DEFAULT_IMAGE_PROMPT = "Describe the image in detail.";

export const agentRunnerDescribeImageRequest = defineMessage("lurk.agent-runner.describe_image.v1", {
  ref: mediaRefSchema,
  prompt: z.string().trim().min(1).max(MAX_IMAGE_PROMPT_CHARS).default(DEFAULT_IMAGE_PROMPT),
  /** the calling agent: its imageModel, and the usage ledger's booking */
  agentId: agentIdSchema,
  /** the calling session: the usage ledger's booking (its channel and type) */
  sessionKey: sessionKeySchema.optional(),
  /** ms the caller waits; the provider calls are given up then (default tools.image.timeoutMs) */
  timeoutMs: z.number().int().min(1_000).max(600_000).optional(),
});
export type AgentRunnerDescribeImageRequest = z.infer<typeof agentRunnerDescribeImageRequest>;

export const agentRunnerDescribeImageReply = z.object({
  text: z.string().max(200_000),
  /** the `provider/model` that answered */
  model: z.string().max(300),
  /** the bytes the model was sent were scaled down (media.maxImageMb, media.imageMaxPx) */
  resized: z.boolean(),
  usage: z.object({ input: z.number().int().nonnegative(), output: z.number().int().nonnegative() }),
});
export type AgentRunnerDescribeImageReply = z.infer<typeof agentRunnerDescribeImageReply>;
