/**
 * One RunRequest from the RUNS work queue, idempotent and resumable: one `sessions.begin`
 * ensures the session, reports the run's prior status (a finished run only re-publishes its
 * reply), appends the inputs and a "started" marker (stable record ids: appends are idempotent)
 * and returns the transcript records the runner's cache lacks; then the loop runs from the
 * checkpoints, and the run finishes (marker and usage in one append, reply, terminal event). Bus failures with deliveries left are thrown, so JetStream redelivers and the run
 * resumes; everything else ends the run with a terminal error and an error reply. Before it
 * finishes, a done run's text loses its voice directives and may get a voice message (voice-reply.ts).
 * Usage: the run's end carries every model call the run made for itself (turns, compaction, a long
 * reply's summary for speech) by model and purpose (usage-tally.ts), a failed run's too; memory
 * consolidation after the reply books its own (usage-booking.ts), and so do the voice reply's
 * speech (tts.ts) and the inputs' transcriptions (transcribe.ts: held until the session begun, so
 * they are booked under its channel and type).
 */
import {
  emptyUsage, LurkError, recordIds, type AssistantMessage, type RunInput, type RunRequest, type ToolDefinition, type ToolResultMessage, type TranscriptRecord, type UsageUpdate,
} from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import type { PrepareContext } from "./document-text.js";
import { agentWorkspace, defaultAgent, type AgentConfig } from "../../shared/runtime/config.js";
import type { DeliveryInfo } from "../../shared/runtime/consumer.js";
import { runLogger, type Logger } from "../../shared/runtime/logger.js";
import { olderThan } from "../../shared/runtime/session-history.js";
import { SHUTDOWN, type RunControls } from "./control.js";
import { RunEvents } from "./events.js";
import { errorText, finishRun, handedMessageIds, replayFinished, type FinishDeps, type Outcome } from "./finish.js";
import { runLoop } from "./loop.js";
import { buildSystemPrompt } from "./system-prompt.js";
import { promptExtras, type BootstrapHook } from "./prompt-inputs.js";
import { messageRecordIds } from "./compaction-view.js";
import { consolidateEnded } from "./consolidate-ended.js";
import { scheduleConsolidation } from "./memory-after-run.js";
import { chainComplete, housekeepingChain, housekeepingComplete, type Complete } from "./model-complete.js";
import type { VoiceReplies } from "./voice-reply.js";
import type { BootstrapHookClient } from "./bootstrap-hook.js";
import { RunCompactor } from "./run-compaction.js";
import { booked, heldBookings, usageBooker } from "./usage-booking.js";
import { tallied, UsageTally } from "./usage-tally.js";
import type { AuthStateStore } from "./auth-profiles.js";
import { ModelChain } from "./failover.js";
import type { ProviderRegistry } from "./providers/registry.js";
import type { ToolsClient } from "./tools-client.js";
import { lookupModel } from "../../shared/runtime/models.js";
import { takesImages } from "./vision-input.js";
import type { TranscriptCache } from "./transcript-cache.js";
import { runHooks } from "./hooks.js";
import { attachRunNotes } from "./run-notes.js";
import type { ImageLoader } from "./images.js";
import type { ImageTextReader } from "./image-text.js";
import { inputRecords, mailboxInputRecords, recordsToMessages, resumeState } from "./transcript.js";

export interface RunnerDeps {
  rt: ActorRuntime;
  registry: ProviderRegistry;
  tools: ToolsClient;
  controls: RunControls;
  transcripts: TranscriptCache;
  /** auth profile cooldowns and pins (LMDB); without it profiles are not rotated */
  authState?: AuthStateStore;
  /** loads images kept as media refs for each LLM call; without it they go as they are */
  images?: ImageLoader;
  /**
   * What turns attachments into text before a run stores its inputs, in order: audio to a
   * transcript (transcribe.ts), small text files to their content (inline-text.ts), PDF and office
   * documents to their extracted text (document-text.ts). An attachment one of them gave a
   * `textError` is left alone by the others.
   */
  inputPreparers?: InputPreparer[];
  /** images tools return, for a run whose model has no vision: their text by OCR (image-text.ts) */
  toolImages?: Pick<ImageTextReader, "annotateToolResult">;
  /** the reply's voice directives and voice message (tts; voice-reply.ts); without it the text goes as it is */
  voice?: VoiceReplies;
  /** the agent's agent:bootstrap hooks on the run's bootstrap files (bootstrap-hook.ts); without it the files go as they are */
  bootstrapHooks?: BootstrapHookClient;
}

/** Fills in attachments of a run's inputs (never throws; the same array when nothing applies). */
export interface InputPreparer {
  annotate<T extends RunInput>(inputs: T[], signal: AbortSignal, ctx?: PrepareContext): Promise<T[]>;
}

async function prepareInputs<T extends RunInput>(preparers: InputPreparer[] | undefined, inputs: T[], signal: AbortSignal, ctx: PrepareContext): Promise<T[]> {
  let out = inputs;
  for (const p of preparers ?? []) out = await p.annotate(out, signal, ctx);
  return out;
}

/** `prepareInputs` for the mailbox's `{ id, input }` pairs. */
async function annotateSteered(preparers: InputPreparer[] | undefined, steered: { id: string; input: RunInput }[], signal: AbortSignal, ctx: PrepareContext): Promise<{ id: string; input: RunInput }[]> {
  if (!preparers?.length) return steered;
  const inputs = await prepareInputs(preparers, steered.map((s) => s.input), signal, ctx);
  return steered.map((s, i) => ({ id: s.id, input: inputs[i]! }));
}

/** A retryable bus failure: the run is left unfinished and the message redelivered. */
class BusFailure extends Error {
  constructor(readonly error: LurkError) {
    super(error.message);
  }
}

async function bus<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    const e = LurkError.from(err);
    throw e.retryable ? new BusFailure(e) : e;
  }
}

export function runHandler(deps: RunnerDeps) {
  return (req: RunRequest, delivery: DeliveryInfo) => deps.controls.exclusive(req.runId, () => handleRun(deps, req, delivery));
}

async function handleRun(deps: RunnerDeps, req: RunRequest, delivery: DeliveryInfo): Promise<void> {
  const { rt } = deps;
  const log = runLogger(rt.log, req.runId, req.sessionKey);
  const key = { sessionKey: req.sessionKey };
  const opts = { runId: req.runId, causationId: req.id };
  const lastDelivery = delivery.deliveryCount >= rt.config.bus.maxDeliver;
  /**
   * Delivered more than maxDeliver times: every earlier delivery ended without a verdict (its
   * runner crashed or was stopped while running it; a run that fails is answered and acked, one
   * whose handler throws is dead-lettered at maxDeliver). Such a request (a poison message that
   * kills the runner, or a run interrupted by every restart) is answered with an error, not run
   * again, so a crash loop ends and the session's lane is freed.
   */
  const interrupted = delivery.deliveryCount > rt.config.bus.maxDeliver;
  // housekeeping of a transcript a reset ended: no session begin, no events, no reply (an interrupted one is only logged)
  if (req.options.command === "consolidate") {
    if (interrupted) givenUp(rt, req, log, delivery.deliveryCount - 1);
    else await consolidateEnded(deps, req, req.options.previousSessionId, log);
    return;
  }
  // publishes nothing until run_start (a finished run only re-publishes its reply)
  const events = new RunEvents(rt.nc, rt.subjects, req.runId, req.sessionKey, req.id, log);
  /**
   * Records that go out first with the run's next append, in the same write: a final answer with
   * the end marker; an assistant turn whose calls have no side effects with its first tool result.
   * `stored` settles with that append.
   */
  const held: { record: TranscriptRecord; stored?: { resolve(): void; reject(err: unknown): void } }[] = [];
  const hold = (record: TranscriptRecord, waits: boolean): Promise<void> => {
    if (!waits) {
      held.push({ record });
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => held.push({ record, stored: { resolve, reject } }));
  };
  const append = (newRecords: TranscriptRecord[], usage?: UsageUpdate) => {
    const carried = held.splice(0);
    const records = [...carried.map((h) => h.record), ...newRecords];
    messageRecordIds.register(records); // the compactor names its boundary by record id
    events.flushNow(); // events emitted so far leave in the same socket write
    const written = bus(() => rt.client.call("sessions", "append", { ...key, records, ...(usage ? { usage } : {}) }, opts)).then(() => undefined);
    written.then(() => carried.forEach((h) => h.stored?.resolve()), (err: unknown) => carried.forEach((h) => h.stored?.reject(err)));
    return written;
  };

  // without the sessions actor nothing can be done: the failure is redelivered (or dead-lettered)
  const started: TranscriptRecord = { id: recordIds.started(req.runId), ts: Date.now(), runId: req.runId, kind: "run_marker", runStatus: "started", meta: { trigger: req.trigger } };
  const known = deps.transcripts.known(req.sessionKey);
  const agent = rt.config.agents.find((a) => a.id === req.agentId) ?? defaultAgent(rt.config);
  const ref = deps.registry.pick(req.options.model, agent.model);
  // the tool list and the system prompt do not depend on the session: prepared while it begins
  const preparing = prepareTurnInputs(deps, req, agent, ref);
  preparing.catch(() => undefined); // awaited (and its error handled) in the run below
  // attachments become text first (a transcript, a text file's content; nothing to do without any)
  // the run's model decides whether a scanned PDF goes as the PDF itself or as its OCR'd text, and whether images are read by OCR
  const primaryInfo = ref !== undefined ? lookupModel(ref, rt.config) : undefined;
  const owner = { sessionKey: req.sessionKey, agentId: req.agentId };
  const book = usageBooker({ client: rt.client, signal: rt.signal, log });
  // the inputs' transcriptions, booked once the session exists (begin) or failed to begin
  const inputCharges = heldBookings(book);
  const prepareCtx: PrepareContext = {
    pdfInput: primaryInfo?.capabilities.pdf ?? false, vision: primaryInfo ? takesImages(primaryInfo) : true,
    book: (charge) => inputCharges.book({ ...charge, owner }),
  };
  let begun;
  try {
    // an interrupted request's attachments are not read again (one of them may be what stopped its runner)
    const inputs = req.options.command || interrupted ? req.inputs : await prepareInputs(deps.inputPreparers, req.inputs, rt.signal, prepareCtx);
    begun = await rt.client.call("sessions", "begin", {
      ...key, runId: req.runId, agentId: req.agentId, sessionType: req.sessionType,
      records: [started, ...(req.options.command ? [] : inputRecords({ ...req, inputs }))], historyLimit: rt.config.runs.historyLimit,
      ...(known ? { known } : {}),
      ...(req.origin ? { channel: req.origin.channel, origin: req.origin } : {}),
      ...(req.subagent ? { parentSessionKey: req.subagent.parentSessionKey, ...(req.subagent.label ? { label: req.subagent.label } : {}) } : {}),
    }, opts);
  } finally {
    inputCharges.release();
  }
  // a transcript larger than one reply: the older records within the history limit, paged back
  const records = begun.truncated
    ? [...await olderThan(rt.client, { sessionKey: req.sessionKey, sessionId: begun.session.sessionId, limit: rt.config.runs.historyLimit - begun.records.length }, begun.records, opts), ...begun.records]
    : begun.records;
  const history = deps.transcripts.merge(req.sessionKey, begun.session.sessionId, records, begun.incremental);
  // a daily or idle reset ended the session's transcript: into memory, beside this run
  if (begun.reset) void consolidateEnded(deps, req, begun.reset.previousSessionId, log);
  if (begun.prior === "done" || begun.prior === "error" || begun.prior === "aborted") {
    await replayFinished(rt, req, begun.runRecords, log);
    return;
  }
  /** messages the run took from its mailbox (a resumed run's from its records): its reply answers them too */
  const handed = handedMessageIds(req.runId, begun.runRecords);
  // (an interrupted delivery is past its last: finished best effort too)
  const finishDeps: FinishDeps = { rt, req, events, log, append, bestEffort: lastDelivery, ack: delivery.ackNow, handed: () => handed };
  const runStart = { kind: "run_start" as const, agentId: req.agentId, trigger: req.trigger, ...(ref ? { model: ref, provider: ref.split("/")[0] } : {}) };
  if (interrupted) {
    // every earlier delivery was interrupted: an error reply, end marker and terminal event, nothing run
    const error = givenUp(rt, req, log, delivery.deliveryCount - 1);
    events.emit(runStart);
    await finish(finishDeps, { status: "error", text: errorText(error), error, turns: 0, usage: emptyUsage() });
    return;
  }
  log.info({ trigger: req.trigger, resumed: begun.prior === "started", delivery: delivery.deliveryCount }, "run started");
  attachRunNotes(rt, req, events, log); // /verbose and /reasoning notes (run-notes.ts)
  // a command run (/compact) has no loop: it takes no inputs
  const controller = deps.controls.register(req.runId, { inputs: !req.options.command });
  const mailbox = deps.controls.mailbox(req.runId);
  const timer = req.options.timeoutMs
    ? setTimeout(() => controller.abort(new LurkError("TIMEOUT", `the run exceeded its time limit of ${req.options.timeoutMs} ms`)), req.options.timeoutMs)
    : undefined;
  const outcome: Outcome = { status: "done", text: "", turns: 0, usage: emptyUsage() };
  /** every model call the run makes for itself, by model and purpose: the end's usage */
  const tally = new UsageTally();
  events.emit(runStart);
  let chain: ModelChain | undefined;
  let afterRun: (() => void) | undefined;
  /** a long reply's summary for speech: tts.summaryModel, else compaction.model, then the run's models */
  let summarizer: (() => Complete) | undefined;
  try {
    const resume = resumeState(req.runId, history.filter((r) => r.runId !== req.runId), begun.runRecords);

    // the primary model, its fallbacks and their auth profiles (failover.ts)
    chain = new ModelChain({
      registry: deps.registry, config: rt.config, refs: [ref, ...agent.fallbacks], sessionKey: req.sessionKey, log,
      ...(deps.authState ? { store: deps.authState } : {}),
      ...((req.options.thinking ?? begun.session.thinking ?? agent.thinking) ? { thinking: req.options.thinking ?? begun.session.thinking ?? agent.thinking } : {}),
      ...((req.options.temperature ?? agent.temperature) !== undefined ? { temperature: req.options.temperature ?? agent.temperature } : {}),
    });
    const first = chain.primary.profiles[0] ?? chain.probe(new Set())!.profile;
    const resolved = { ref: chain.primary.ref, providerName: chain.primary.providerName, model: chain.primary.model, provider: deps.registry.providerFor(first) };
    outcome.model = resolved.ref;
    outcome.provider = resolved.providerName;
    const { tools, system } = await preparing;
    const ctx = { runId: req.runId, sessionKey: req.sessionKey, agentId: req.agentId, sessionType: req.sessionType, ...(req.origin ? { origin: req.origin } : {}) };
    const runChain = chain;
    // compaction (run-compaction.ts) and, after the reply, memory consolidation go through a
    // model chain (`compaction.model` first when set, then the run's models): a failing key or
    // model is put on cooldown and the next one asked
    const modelInfo = chain.primary.info;
    const housekeeping = housekeepingComplete({ registry: deps.registry, config: rt.config, log, ...(deps.authState ? { store: deps.authState } : {}) }, runChain, req.sessionKey, log);
    messageRecordIds.register(begun.runRecords);
    const compactor = new RunCompactor({ config: rt.config.compaction, contextWindow: modelInfo.contextWindow, complete: tallied(housekeeping(controller.signal), tally, "compaction"), runId: req.runId, append, events, log,
      previous: begun.runRecords.filter((r) => r.kind === "compaction_summary").length });
    summarizer = () => tallied(chainComplete(
      housekeepingChain({ registry: deps.registry, config: rt.config, log, ...(deps.authState ? { store: deps.authState } : {}) }, rt.config.tts.summaryModel ?? rt.config.compaction.model, runChain, req.sessionKey, log),
      { signal: rt.signal, timeoutMs: rt.config.runs.llmTimeoutMs, maxTokens: 1_024 }), tally, "tts");
    afterRun = () => void scheduleConsolidation({
      rt, sessionKey: req.sessionKey, sessionType: req.sessionType, workspace: agentWorkspace(rt.config, agent), history,
      added: outcome.turns, log,
      // after the run's end: its usage is booked on its own
      complete: booked(housekeeping(rt.signal), book, owner, "consolidation"),
    });
    if (!req.options.command) resume.context = await compactor.beforeRun(system, tools, resume.context, [...(resume.pending ? [resume.pending.message] : []), ...resume.after]);
    const result = req.options.command === "compact" ? await compactor.commandResult(resume.context, begun.runRecords, req.inputs) : await runLoop({
      provider: resolved.provider, providerName: resolved.providerName, model: resolved.model, chain, system, tools, events, log,
      signal: controller.signal, llmTimeoutMs: rt.config.runs.llmTimeoutMs, ...(deps.images ? { images: deps.images } : {}),
      maxIterations: req.options.maxIterations ?? rt.config.runs.maxIterations,
      // after a switch of model: that model's tools and prompt (llm-call.ts)
      inputsFor: (modelRef) => prepareTurnInputs(deps, req, agent, modelRef),
      // a call runs under the tool policy of the model that made it (after a failover, the fallback's)
      execute: async (call) => {
        const result = await deps.tools.call({ ...ctx, model: runChain.current }, call.id, call.name, call.args);
        // an image a tool returns, for a model without vision: its text by OCR (the checkpoint keeps it)
        return prepareCtx.vision === false && deps.toolImages ? deps.toolImages.annotateToolResult(result, controller.signal) : result;
      },
      checkpointAssistant: (turn: number, message: AssistantMessage, withResults: boolean) => {
        const record: TranscriptRecord = { id: recordIds.assistant(req.runId, turn), ts: Date.now(), runId: req.runId, kind: "message", message, meta: { turn } };
        // a final answer (no tool calls) is stored with the end marker, in the same write
        if (!message.content.some((b) => b.type === "tool_call")) return hold(record, false);
        return withResults ? hold(record, true) : append([record]);
      },
      checkpoint: (turn: number, result: ToolResultMessage, durationMs: number) =>
        append([{ id: recordIds.toolResult(req.runId, result.toolCallId), ts: Date.now(), runId: req.runId, kind: "message", message: result, meta: { turn, durationMs } }]),
      ...(mailbox ? { mailbox } : {}),
      // an answer already given (held for the end marker) is stored before the inputs that follow it
      recordInputs: async (turn, steered) => {
        const inputs = await annotateSteered(deps.inputPreparers, steered, controller.signal, prepareCtx);
        const records = mailboxInputRecords(req.runId, turn, inputs);
        await append(records);
        for (const id of handedMessageIds(req.runId, records)) if (!handed.includes(id)) handed.push(id);
        return recordsToMessages(records);
      },
      hooks: runHooks(rt.config, log),
      compactContext: compactor.onOverflow,
      midRunCompaction: compactor.midRun,
      usageTally: tally,
    }, resume);
    Object.assign(outcome, { text: result.text, turns: result.turns });
    if (result.stoppedAtLimit) log.warn({ turns: result.turns }, "run stopped at the iteration limit");
    if (result.stoppedByHook) log.info({ turns: result.turns, reason: result.stoppedByHook }, "a turn hook stopped the run");
  } catch (err) {
    const stopped = controller.signal.reason === SHUTDOWN;
    // a stop hands the run back to be resumed; on its last delivery (which the consumer would
    // dead-letter unanswered) it is given up here, as on a delivery after its last
    if (stopped && !lastDelivery) throw SHUTDOWN;
    if (err instanceof BusFailure && !lastDelivery) {
      log.warn({ err: err.error, delivery: delivery.deliveryCount }, "bus failure; the run will be redelivered and resumed");
      throw err.error;
    }
    const e = stopped ? givenUp(rt, req, log, delivery.deliveryCount) : LurkError.from(err instanceof BusFailure ? err.error : err);
    Object.assign(outcome, { status: e.code === "ABORTED" ? "aborted" : "error", text: errorText(e), error: e });
    (e.code === "ABORTED" || e.code === "NO_MODEL" ? log.info.bind(log) : log.warn.bind(log))({ code: e.code, err: e }, "run ended with an error");
  } finally {
    // after a failover the run ended on another model: its usage is booked there
    if (chain && chain.current !== outcome.model) Object.assign(outcome, { model: chain.current, provider: chain.current.split("/")[0] });
    if (timer) clearTimeout(timer);
    // the loop closed its mailbox on every exit; unregistering drops it in the same step (also when the loop never began)
    deps.controls.unregister(req.runId, controller);
  }
  if (outcome.status === "done" && !req.options.command && deps.voice) {
    const voiced = await deps.voice.reply(req, outcome.text, rt.signal, summarizer, log);
    outcome.text = voiced.text;
    if (voiced.attachments.length > 0) outcome.attachments = voiced.attachments;
    if (voiced.voice) outcome.voice = voiced.voice;
  }
  // the tally holds the loop's turns (with an earlier attempt's), the summaries and the speech summary
  Object.assign(outcome, { usage: tally.total(), parts: tally.list() });
  await finish(finishDeps, outcome);
  if (outcome.status === "done" && !req.options.command) afterRun?.();
}

/**
 * The run's tool list and system prompt for a model of its chain: the primary at the start, the
 * new model after a switch (llm-call.ts). Throws what resolving the model throws (NO_MODEL, an
 * unknown provider), which the run reports like any other failure.
 */
async function prepareTurnInputs(deps: RunnerDeps, req: RunRequest, agent: AgentConfig, ref: string | undefined): Promise<{ tools: ToolDefinition[]; system: string }> {
  const { rt } = deps;
  const modelRef = deps.registry.parse(ref).ref;
  const tools = await deps.tools.list(req.agentId, req.sessionKey, modelRef);
  const system = buildSystemPrompt({
    agentId: req.agentId, ...(agent.name ? { agentName: agent.name } : {}), workspace: agentWorkspace(rt.config, agent),
    sessionType: req.sessionType, ...(req.origin ? { channel: req.origin.channel } : {}), tools,
    ...(await promptExtras(rt.config, agent, req, tools, modelRef, bootstrapHook(deps), rt.log)),
  });
  return { tools, system };
}

/** the run's bootstrap files through the agent's agent:bootstrap hooks (bootstrap-hook.ts), when the runner has the client */
function bootstrapHook(deps: RunnerDeps): BootstrapHook | undefined {
  const hooks = deps.bootstrapHooks;
  // the run's child logger is made only when a hook is asked (bootstrap-hook.ts)
  return hooks && ((run, loaded) => hooks.filesFor(run, loaded, deps.rt.log));
}

/** The error of a run interrupted on each of its `deliveries` deliveries (logged, `run_given_up` emitted): it is not run again. */
function givenUp(rt: ActorRuntime, req: RunRequest, log: Logger, deliveries: number): LurkError {
  const error = new LurkError("INTERNAL", `the run was started ${deliveries} times and each time the agent-runner stopped before it ended `
    + "(it crashed or was restarted), so it was given up; send the message again to retry", { retryable: false });
  log.error({ deliveries, code: error.code }, "run interrupted on every delivery; given up");
  rt.emit("run_given_up", { runId: req.runId, sessionKey: req.sessionKey, deliveries }, "error");
  return error;
}

async function finish(deps: FinishDeps, outcome: Outcome): Promise<void> {
  const { log } = deps;
  try {
    await finishRun(deps, outcome);
    log.info({ status: outcome.status, turns: outcome.turns, usage: outcome.usage }, "run finished");
  } catch (err) {
    const e = LurkError.from(err instanceof BusFailure ? err.error : err);
    if (!deps.bestEffort && (err instanceof BusFailure || e.retryable)) {
      log.warn({ err: e }, "could not finish the run; it will be redelivered");
      throw e;
    }
    log.error({ err: e }, "could not finish the run; giving up");
  }
}
