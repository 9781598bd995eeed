/**
 * The agent-runner actor: reads RunRequests from the RUNS work queue (durable consumer
 * "agent-runner"), runs the agent loop against the configured model, executes tools over the
 * bus, checkpoints to the sessions actor, streams run events and delivers the reply.
 * Stateless: any number of instances share the queue.
 */
import { CONSUMERS, runRequestSchema, STREAMS } from "../../shared/contract/index.js";
import type { ActorDefinition } from "../../shared/runtime/actor.js";
import { LURKBOT_VERSION } from "../../shared/runtime/version.js";
import { RunControls } from "./control.js";
import { ProviderRegistry } from "./providers/registry.js";
import { runHandler } from "./run.js";
import { ToolsClient } from "./tools-client.js";
import { TranscriptCache } from "./transcript-cache.js";

/** margin over the tools' own timeout before a call counts as unanswered */
const TOOL_CALL_MARGIN_MS = 5_000;

export const definition: ActorDefinition = {
  name: "agent-runner",
  version: LURKBOT_VERSION,
  description: "the agent loop: prompt, LLM, tools over the bus, checkpoints",
  async start(rt) {
    const registry = new ProviderRegistry(rt.config);
    const tools = new ToolsClient(rt.nc, rt.client, rt.subjects, rt.log, rt.config.tools.timeoutMs + TOOL_CALL_MARGIN_MS);
    const controls = new RunControls(rt);
    controls.start();
    // the runtime's signal fires first on stop: active runs are interrupted (and redelivered
    // later) before the consumer waits for its handlers
    rt.signal.addEventListener("abort", () => controls.stop(), { once: true });
    rt.consume({
      stream: STREAMS.runs,
      consumer: CONSUMERS.agentRunner,
      schema: runRequestSchema,
      concurrency: rt.config.runs.concurrency,
      handler: runHandler({ rt, registry, tools, controls, transcripts: new TranscriptCache(rt.config.runs.historyLimit) }),
    });
    rt.log.info({ model: rt.config.model ?? null, concurrency: rt.config.runs.concurrency }, rt.config.model ? "agent-runner ready" : "agent-runner ready without a model: runs will reply how to configure one");
  },
};
