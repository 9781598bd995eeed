/**
 * The agent-runner actor: reads RunRequests from the RUNS work queue (durable consumer
 * "agent-runner"), runs the agent loop against the configured model, executes tools over the
 * bus, checkpoints to the sessions actor, streams run events and delivers the reply.
 * It also serves `lurk.agent-runner.embed` (embed.ts): vectors for memory_search, and
 * `lurk.agent-runner.speak` (tts-serve.ts): voice messages for the tts tool,
 * `lurk.agent-runner.describe_image` (describe-image.ts): the image tool's vision answers, and
 * `lurk.agent-runner.auth_state` / `.auth_probe` (auth-state-serve.ts): the auth profiles' state.
 * Stateless: any number of instances share the queue.
 */
import { Kvm, type KV } from "@nats-io/kv";
import { AUTH_BUCKET, CONSUMERS, runRequestSchema, STREAMS } from "../../shared/contract/index.js";
import type { ActorDefinition } from "../../shared/runtime/actor.js";
import { LURKBOT_VERSION } from "../../shared/runtime/version.js";
import { join } from "node:path";
import { AuthStateStore } from "./auth-profiles.js";
import { serveAuthState } from "./auth-state-serve.js";
import { RateLimitBook } from "./rate-limits.js";
import { BootstrapHookClient } from "./bootstrap-hook.js";
import { serveEmbeddings } from "./embed.js";
import { RunControls } from "./control.js";
import { ProviderRegistry } from "./providers/registry.js";
import { watchLogins } from "./login-watch.js";
import { runHandler } from "./run.js";
import { ToolsClient } from "./tools-client.js";
import { ImageLoader } from "./images.js";
import { TextInliner } from "./inline-text.js";
import { DocumentTextExtractor } from "./document-text.js";
import { ImageTextReader } from "./image-text.js";
import { MB } from "../../shared/runtime/config-media.js";
import { AudioTranscriber } from "./transcribe.js";
import { TranscriptCache } from "./transcript-cache.js";
import { usageBooker } from "./usage-booking.js";
import { Speaker } from "./tts.js";
import { serveSpeech } from "./tts-serve.js";
import { serveImageDescriptions } from "./describe-image.js";
import { VoiceReplies } from "./voice-reply.js";

/** margin over the tools' own timeout before a call counts as unanswered */
const TOOL_CALL_MARGIN_MS = 5_000;

export const definition: ActorDefinition = {
  name: "agent-runner",
  version: LURKBOT_VERSION,
  description: "the agent loop: prompt, LLM, tools over the bus, checkpoints",
  async start(rt) {
    // the lurk_auth bucket, opened when a refresh_token OAuth profile is first used (credentials.ts)
    let authBucket: Promise<KV> | undefined;
    const openAuthBucket = () => (authBucket ??= new Kvm(rt.nc).open(AUTH_BUCKET).catch((err: unknown) => {
      authBucket = undefined;
      throw err;
    }));
    // the rate-limit headers of each profile's last response, in memory (rate-limits.ts; lurk.agent-runner.auth_state)
    const rateLimits = new RateLimitBook();
    const registry = new ProviderRegistry(rt.config, { authBucket: openAuthBucket, rateLimits });
    // auth profile cooldowns and session pins, shared by the runners of this host
    const authState = new AuthStateStore(join(rt.config.dataDir, "agent-runner", "auth-state"));
    rt.onStop({ stop: () => authState.close() });
    void authState.prunePins().catch((err) => rt.log.warn({ err }, "could not prune auth profile pins"));
    // a login clears the disable a refused one left (login-watch.ts); only with refresh_token profiles
    if (registry.providerNames().some((p) => registry.profiles(p).some((profile) => profile.credential?.kind === "oauth" && profile.credential.client.grant === "refresh_token"))) {
      void openAuthBucket().then((kv) => watchLogins(kv, authState, rt.log, rt.signal))
        .catch((err: unknown) => rt.log.warn({ err }, "cannot watch the lurk_auth bucket: a new login clears its profile's cooldowns only after they end"));
    }
    // lurk.agent-runner.auth_state (every instance answers) and .auth_probe: the profiles' state for the operator (auth-state-serve.ts)
    serveAuthState(rt, { registry, store: authState, rateLimits });
    // a gated call waits for a human (up to approvals.timeoutMs) before its own deadline starts
    const toolCallTimeoutMs = rt.config.approvals.timeoutMs + rt.config.tools.timeoutMs + TOOL_CALL_MARGIN_MS;
    const tools = new ToolsClient(rt.nc, rt.client, rt.subjects, rt.log, toolCallTimeoutMs);
    const controls = new RunControls(rt);
    controls.start();
    // the runtime's signal fires first on stop: active runs are interrupted (and redelivered
    // later) before the consumer waits for its handlers
    rt.signal.addEventListener("abort", () => controls.stop(), { once: true });
    // only a cache (sessions.begin sends the full history when it has nothing): dropped when idle
    const transcripts = new TranscriptCache(rt.config.runs.historyLimit);
    // images of the conversation by media ref, loaded for each LLM call (images.ts)
    const images = new ImageLoader(rt.media, rt.log);
    // attachments to text before a run stores them: voice notes (media.transcription; transcribe.ts), small text files (inline-text.ts),
    // PDF and DOCX documents (document-text.ts: read in a worker thread that stops when idle)
    // scanned PDFs for a model without PDF input: OCR with the system's poppler and Tesseract in bubblewrap (media.ocr)
    const ocr = { ...rt.config.media.ocr, bwrapPath: rt.config.tools.exec.bwrapPath };
    const documents = new DocumentTextExtractor({ maxBytes: rt.config.media.documentTextKb * 1024, maxFileBytes: rt.config.media.maxFileMb * MB, timeoutMs: rt.config.media.documentTimeoutMs, maxPayloadBytes: rt.config.bus.maxPayloadBytes, ocr }, () => rt.media, rt.log);
    rt.onStop({ stop: () => documents.close() });
    // images for a model without vision, sent by the user or returned by tools: their text by OCR (image-text.ts)
    const imageText = new ImageTextReader({ ocr, maxBytes: rt.config.media.documentTextKb * 1024, maxFileBytes: rt.config.media.maxFileMb * MB, maxPayloadBytes: rt.config.bus.maxPayloadBytes }, () => rt.media, rt.log);
    const inputPreparers = [
      ...(rt.config.media.transcription ? [new AudioTranscriber(rt.config.media.transcription, registry.profiles("openai")[0], () => rt.media, rt.log)] : []),
      new TextInliner(rt.config.media.inlineTextKb * 1024, () => rt.media, rt.log, rt.config.bus.maxPayloadBytes),
      documents,
      imageText,
    ];
    rt.onIdle(() => {
      const dropped = transcripts.trimIdle();
      if (dropped > 0) rt.log.debug({ dropped }, "idle: dropped cached transcripts");
      images.clear();
    });
    // lurk.agent-runner.embed: vectors for the tools actor's memory_search (memory.embeddings; embed.ts)
    serveEmbeddings(rt, { registry, store: authState });
    const embedModel = rt.config.memory.embeddings?.model;
    if (embedModel && registry.profiles(embedModel.split("/")[0]!).length === 0) {
      rt.log.warn({ model: embedModel }, "memory.embeddings.model has no credentials: memory_search ranks by keywords until they are set");
    }
    // voice replies and the tts tool's audio (tts; tts.ts): synthesized here, where the credentials are; speech profiles cool down in authState
    // each synthesis's characters and each transcription's seconds go to the usage ledger (usage-booking.ts)
    const book = usageBooker({ client: rt.client, signal: rt.signal, log: rt.log });
    const speaker = new Speaker(rt.config.tts, registry, () => rt.media, rt.log, authState, book);
    const voice = new VoiceReplies(rt.config.tts, speaker, rt.log);
    serveSpeech(rt, speaker);
    // lurk.agent-runner.describe_image: the image tool's question to the vision model (tools.image, agents[].imageModel; describe-image.ts)
    serveImageDescriptions(rt, { registry, store: authState });
    // agent:bootstrap: the hooks actor is asked only for agents the lurk_hooks bucket lists (bootstrap-hook.ts)
    const bootstrapHooks = new BootstrapHookClient(rt, rt.config.hooks.bootstrapTimeoutMs);
    void bootstrapHooks.watch(rt.signal);
    rt.consume({
      stream: STREAMS.runs,
      consumer: CONSUMERS.agentRunner,
      schema: runRequestSchema,
      concurrency: rt.config.runs.concurrency,
      handler: runHandler({ rt, registry, tools, controls, transcripts, authState, images, inputPreparers, toolImages: imageText, voice, bootstrapHooks }),
    });
    rt.log.info({ model: rt.config.model ?? null, concurrency: rt.config.runs.concurrency }, rt.config.model ? "agent-runner ready" : "agent-runner ready without a model: runs will reply how to configure one");
  },
};
