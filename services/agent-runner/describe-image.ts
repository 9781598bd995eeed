/**
 * `lurk.agent-runner.describe_image` (shared/contract/messages/image.ts): the tools actor's
 * `image` tool asks what a stored image shows; the runner answers with one completion of the
 * calling agent's image model (`agents[].imageModel`, else `tools.image.model`): a user message
 * of the image and the question, no tools, no history.
 *  - The image: read from the media store (at most media.maxFileMb) and fitted as a user's image
 *    is (image-fit.ts: media.maxImageMb, media.imageMaxPx; scaled down when larger). Bytes that
 *    are not an image sharp reads are VALIDATION_FAILED.
 *  - The model: a model the registry knows to lack vision is VALIDATION_FAILED at once. Auth
 *    profiles are picked, pinned (under IMAGE_PIN_KEY) and cooled down as for a run's calls
 *    (failover.ts); a failure another profile may not have asks the next; when none is usable
 *    the answer is that failure. No model fallbacks (the image model is one ref).
 *  - The tokens go to the usage ledger under purpose `image`, priced at the image model, booked
 *    to the request's session and agent in the background (usage-booking.ts).
 */
import { LurkError, type AgentRunnerDescribeImageReply, type AgentRunnerDescribeImageRequest, type Usage } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { MB } from "../../shared/runtime/config-media.js";
import { imageModelFor } from "../../shared/runtime/config-tools-image.js";
import type { LurkConfig } from "../../shared/runtime/config.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { MediaStore } from "../../shared/runtime/media.js";
import type { AuthStateStore } from "./auth-profiles.js";
import { attemptChain } from "./chain-attempts.js";
import { ModelChain, type Candidate } from "./failover.js";
import { fitImage, ImageFitError } from "./image-fit.js";
import { drainAnswer } from "./model-complete.js";
import type { ProviderRegistry } from "./providers/registry.js";
import { usageBooker, type BookUsage } from "./usage-booking.js";

/** the "session" whose profile pin the image tool's calls use */
export const IMAGE_PIN_KEY = "lurk:image";
const SYSTEM = "You look at the image the user sends and answer the user's question about it accurately and concretely. Say what you cannot make out rather than guess.";

export interface DescribeImageDeps {
  registry: ProviderRegistry;
  config: LurkConfig;
  media: () => Pick<MediaStore, "get" | "config">;
  store?: AuthStateStore;
  log: Logger;
  book?: BookUsage;
}

export function serveImageDescriptions(rt: ActorRuntime, deps: Omit<DescribeImageDeps, "config" | "log" | "media" | "book">): void {
  const full: DescribeImageDeps = { ...deps, config: rt.config, log: rt.log, media: () => rt.media, book: usageBooker({ client: rt.client, signal: rt.signal, log: rt.log }) };
  rt.serve("agent-runner", "describe_image", (req) => describeImage(full, req, rt.signal));
}

export async function describeImage(deps: DescribeImageDeps, req: AgentRunnerDescribeImageRequest, signal: AbortSignal): Promise<AgentRunnerDescribeImageReply> {
  const configured = imageModelFor(deps.config, req.agentId);
  if (!configured) throw new LurkError("NO_MODEL", `no image model is configured for agent ${req.agentId}: set tools.image.model (or agents[].imageModel) in config.json to a vision model, e.g. openai/gpt-4o-mini`);
  const timeoutMs = req.timeoutMs ?? deps.config.tools.image.timeoutMs;
  const deadline = Date.now() + timeoutMs;
  // throws PROVIDER_AUTH naming the variable to set when the provider has no credentials
  const chain = new ModelChain({ registry: deps.registry, config: deps.config, refs: [deps.registry.expand(configured)], sessionKey: IMAGE_PIN_KEY, ...(deps.store ? { store: deps.store } : {}), log: deps.log });
  const model = chain.primary;
  if (model.info.known && !model.info.capabilities.vision) {
    throw new LurkError("VALIDATION_FAILED", `the image model ${model.ref} does not take images: set tools.image.model (or agents[].imageModel) to a vision model, e.g. openai/gpt-4o-mini`);
  }
  const image = await loadImage(deps, req.ref, deadline);
  return attemptChain(chain, { signal, deadline, errorCode: "PROVIDER_ERROR" }, async (c, left) => {
    const done = await ask(c, chain, deps.config, image, req.prompt, signal, left);
    const usage = chain.priced(c, done.usage);
    void deps.book?.({ owner: { sessionKey: req.sessionKey, agentId: req.agentId }, purpose: "image", provider: c.providerName, model: c.model, usage });
    deps.log.debug({ model: c.ref, profile: c.profile.id, resized: image.resized, input: usage.input, output: usage.output }, "image described");
    return { text: done.text, model: c.ref, resized: image.resized, usage: { input: usage.input, output: usage.output } };
  }, () => new LurkError("PROVIDER_RATE_LIMIT", `${model.ref}: every auth profile of ${model.providerName} is cooling down or disabled; try again later (\`lurkbot auth list\` shows until when)`, { retryable: true }));
}

interface LoadedImage {
  dataBase64: string;
  mime: string;
  resized: boolean;
}

/** The stored file as the model gets it: within media.maxImageMb and media.imageMaxPx. */
async function loadImage(deps: DescribeImageDeps, ref: string, deadline: number): Promise<LoadedImage> {
  const media = deps.media();
  const { maxFileMb, maxImageMb, imageMaxPx } = media.config;
  const stored = await media.get(ref, Math.floor(maxFileMb * MB));
  try {
    const fitted = await fitImage(stored.bytes, { maxBytes: Math.floor(maxImageMb * MB), maxPx: imageMaxPx, timeoutMs: Math.max(1_000, deadline - Date.now()) });
    if (fitted.resized) deps.log.info({ ref, from: stored.size, to: fitted.bytes.byteLength, width: fitted.width, height: fitted.height }, "image scaled down for the image model");
    return { dataBase64: Buffer.from(fitted.bytes).toString("base64"), mime: fitted.mime, resized: fitted.resized };
  } catch (err) {
    if (!(err instanceof ImageFitError)) throw err;
    throw new LurkError("VALIDATION_FAILED", `${stored.name ? `"${stored.name}"` : "the file"} cannot be given to the image model: ${err.message}`);
  }
}

/** One streamed completion of the image and the question, drained (model-complete.ts); the provider's LurkError on failure. */
async function ask(c: Candidate, chain: ModelChain, config: LurkConfig, image: LoadedImage, prompt: string, signal: AbortSignal, timeoutMs: number): Promise<{ text: string; usage: Usage }> {
  const options = chain.requestOptions(c);
  const maxTokens = Math.min(config.tools.image.maxOutputTokens, options.maxTokens ?? Infinity);
  return drainAnswer(c.provider, {
    ...options, maxTokens, model: c.model, system: SYSTEM, tools: [],
    messages: [{ role: "user", content: [{ type: "image", mime: image.mime, dataBase64: image.dataBase64 }, { type: "text", text: prompt }] }],
  }, { signal, timeoutMs, label: c.ref });
}
