/**
 * The agent loop (seed 000 §3, seed 002): call the model, checkpoint its message, run its tool
 * calls, checkpoint their results, repeat until an answer without tool calls or until
 * maxIterations model calls (then stop with a note). A redelivered run resumes from its
 * checkpoints: a checkpointed assistant message is not requested again and a checkpointed tool
 * result is not executed again. Throws a LurkError when the provider fails or the run is aborted.
 *
 * Inputs that arrive mid-run (mailbox.ts): steering skips the turn's tool calls not yet started
 * and becomes the next turn's user message; follow-ups (and steering that came during a final
 * answer) start a new turn when the loop would end. Taken inputs are checkpointed before the
 * model sees them, and only when a model call can still answer them (not at the iteration limit,
 * nor when a hook stops the loop). The mailbox is closed on every exit of the loop (inputs not
 * taken by then are never stored: their sender runs them on their own). Turn hooks observe each message, turn end and error; an onTurnEnd hook may
 * stop the loop.
 */
import { addUsage, assistantText, LurkError, type AssistantMessage, type LlmMessage, type ToolDefinition, type ToolResultMessage, type Usage } from "../../shared/contract/index.js";
import { callModel, type LlmCallDeps } from "./llm-call.js";
import { withOverflowRetry, type CompactContext } from "./overflow-retry.js";
import type { ToolCallBlock } from "./providers/types.js";
import type { ResumeState } from "./transcript.js";
import type { MailboxInput, RunMailbox } from "./mailbox.js";
import { runTurnTools, toolsByName, type TurnToolDeps } from "./turn-tools.js";
import type { UsageTally } from "./usage-tally.js";

/** Observers of the loop (seed 002 turn hooks). Hooks must not throw; an exception is logged and ignored. */
export interface TurnHooks {
  /** after each assistant message, before its tool calls run */
  onMessage?(info: { turn: number; message: AssistantMessage }): void;
  /** after a turn (its tools ran); returning a reason string stops the loop with the text so far */
  onTurnEnd?(info: { turn: number; usage: Usage | undefined; totalUsage: Usage; toolCalls: number }): string | void;
  /** when the loop fails (provider error, abort, timeout) */
  onError?(info: { turn: number; error: LurkError }): void;
}

export interface LoopDeps extends LlmCallDeps, Omit<TurnToolDeps, "events" | "signal" | "tools" | "skipRemaining"> {
  providerName: string;
  maxIterations: number;
  /**
   * Stores the turn's assistant message. `withResults`: its calls have no side effects, so the
   * record may wait for the turn's first tool result and go in the same write (a crash meanwhile
   * costs a repeated model call, never a repeated side effect); the promise settles when stored.
   */
  checkpointAssistant(turn: number, message: AssistantMessage, withResults: boolean): Promise<void>;
  /** inputs that arrive while the run is active */
  mailbox?: RunMailbox;
  /** checkpoints inputs taken from the mailbox and returns them as the user messages to send */
  recordInputs?(turn: number, inputs: MailboxInput[]): Promise<LlmMessage[]>;
  hooks?: TurnHooks[];
  /** shrinks the context after a context-overflow error (run-compaction.ts) */
  compactContext?: CompactContext;
  /** compaction between turns, when the context grew past the threshold during the run (run-compaction.ts) */
  midRunCompaction?: MidRunCompaction;
  /** the run's usage by model (usage-tally.ts): each turn's usage under the model that made it */
  usageTally?: UsageTally;
}

/** Between two model calls of a run: the last call's prompt size (as the provider counted it) plus what was added since. */
export interface MidRunCompaction {
  /** `promptTokens` is the last call's prompt as billed (undefined when the provider reported no usage), `sentCount` how many of `messages` it sent */
  overLimit(messages: readonly LlmMessage[], promptTokens: number | undefined, sentCount: number): boolean;
  compact: CompactContext;
}

export interface LoopResult {
  text: string;
  turns: number;
  usage: Usage;
  stoppedAtLimit: boolean;
  /** the reason a hook gave for stopping the loop */
  stoppedByHook?: string;
}

/**
 * Some OpenAI-compatible servers reuse tool call ids (`call_0` on every turn). Ids name the
 * checkpoint records and pair calls with results, so a repeated id is renamed before the
 * message is stored or sent back.
 */
export function uniqueToolCallIds(message: AssistantMessage, history: LlmMessage[], turn: number): AssistantMessage {
  if (!message.content.some((b) => b.type === "tool_call")) return message; // a final answer: no history scan
  const used = new Set<string>();
  for (const m of history) if (m.role === "assistant") for (const b of m.content) if (b.type === "tool_call") used.add(b.id);
  let changed = false;
  const content = message.content.map((b, index) => {
    if (b.type !== "tool_call") return b;
    let id = b.id;
    if (used.has(id)) {
      id = `${b.id}_t${turn}_${index}`;
      changed = true;
    }
    used.add(id);
    return id === b.id ? b : { ...b, id };
  });
  return changed ? { ...message, content } : message;
}

/** True when the message has tool calls and every one names a known tool without side effects. */
function callsWithoutSideEffects(message: AssistantMessage, tools: ToolDefinition[]): boolean {
  const calls = message.content.filter((b) => b.type === "tool_call");
  if (calls.length === 0) return false;
  const byName = toolsByName(tools);
  return calls.every((c) => byName.get(c.name)?.sideEffects === false);
}

export async function runLoop(deps: LoopDeps, resume: ResumeState): Promise<LoopResult> {
  let turn = resume.turn;
  try {
    return await loop(deps, resume, (t) => (turn = t));
  } catch (err) {
    const error = LurkError.from(err);
    callHooks(deps, (h) => h.onError?.({ turn, error }));
    throw err;
  } finally {
    // every exit, not only the last look: inputs sent from now on are refused and queue instead
    deps.mailbox?.close();
  }
}

async function loop(deps: LoopDeps, resume: ResumeState, onTurn: (turn: number) => void): Promise<LoopResult> {
  // usage of turns checkpointed by an earlier attempt of this run counts too
  let usage = resume.usage;
  deps.usageTally?.addParts(resume.usageParts ?? []);
  if (resume.finished) return { text: assistantText(resume.finished), turns: resume.turn, usage, stoppedAtLimit: false };
  const messages: LlmMessage[] = [...resume.context];
  let turn = resume.turn;
  let lastText = "";
  /** answers given before a follow-up was taken: delivered with the final one */
  const earlierAnswers: string[] = [];

  /** Takes waiting inputs into the context (checkpointed first); true when there were any. */
  const takeInputs = async (t: number, inputs: MailboxInput[], skipped: string[]): Promise<boolean> => {
    if (inputs.length === 0 || !deps.recordInputs) return false;
    if (inputs.some((i) => i.action === "steer")) deps.events.emit({ kind: "steer", skippedToolCalls: skipped });
    messages.push(...(await deps.recordInputs(t, inputs)));
    return true;
  };

  /** what runTurnTools needs, made once per run: steering skips the calls not yet started */
  const mailbox = deps.mailbox;
  // (`tools` read through: a switch of model replaces the run's tool list, llm-call.ts)
  const toolDeps: TurnToolDeps = mailbox ? { ...deps, skipRemaining: () => mailbox.hasSteering(), get tools() { return deps.tools; } } : deps;
  /** tool results of the last turn still being stored (runTurnTools' `stored`) */
  let unsaved: Promise<void> = Promise.resolve();
  /** the last model call of this attempt: its billed prompt and how many messages it sent */
  let lastCall: { promptTokens: number | undefined; sentCount: number } | undefined;
  const finishTurn = async (t: number, message: AssistantMessage, existing: Map<string, ToolResultMessage>, turnUsage: Usage | undefined) => {
    messages.push(message);
    const calls = message.content.filter((b): b is ToolCallBlock => b.type === "tool_call");
    let skipped: string[] = [];
    if (calls.length > 0) {
      const ran = await runTurnTools(toolDeps, t, calls, existing);
      messages.push(...ran.results);
      skipped = ran.skipped;
      unsaved = ran.stored;
    }
    deps.events.emit({ kind: "turn_end", turn: t, stopReason: message.stopReason });
    let stop: string | undefined;
    callHooks(deps, (h) => {
      const reason = h.onTurnEnd?.({ turn: t, usage: turnUsage, totalUsage: usage, toolCalls: calls.length });
      if (typeof reason === "string" && stop === undefined) stop = reason;
    });
    let more = calls.length > 0;
    // an input is taken only when a model call can still answer it: not when a hook stops the loop
    // nor at the iteration limit (left in the mailbox, it is never stored: its sender runs it on its own)
    if (mailbox && stop === undefined && t < deps.maxIterations) {
      const steering = mailbox.takeSteering();
      if (await takeInputs(t, steering, skipped)) more = true;
      else if (!more) {
        const waiting = mailbox.takeAllOrClose();
        if (await takeInputs(t, waiting, [])) {
          more = true;
          const answer = assistantText(message);
          if (answer) earlierAnswers.push(answer);
        }
      }
    }
    return { more, stop };
  };
  const withEarlier = (text: string) => [...earlierAnswers, text].filter(Boolean).join("\n\n");
  /** every exit waits for the tool results to be stored: a run never ends with one unsaved */
  const done = async (result: LoopResult): Promise<LoopResult> => {
    await unsaved;
    return result;
  };

  if (resume.pending) {
    lastText = assistantText(resume.pending.message);
    deps.events.emit({ kind: "turn_start", turn });
    const ended = await finishTurn(turn, resume.pending.message, resume.pending.results, undefined);
    messages.push(...resume.after);
    if (ended.stop) return done({ text: withEarlier(lastText), turns: turn, usage, stoppedAtLimit: false, stoppedByHook: ended.stop });
  } else {
    messages.push(...resume.after);
  }

  for (;;) {
    if (turn >= deps.maxIterations) {
      const note = `(I stopped after ${deps.maxIterations} model calls without a final answer. The tool results so far are saved; say "continue" and I will go on.)`;
      return done({ text: withEarlier(lastText ? `${lastText}\n\n${note}` : note), turns: turn, usage, stoppedAtLimit: true });
    }
    turn++;
    onTurn(turn);
    deps.events.emit({ kind: "turn_start", turn });
    // a context that grew past the threshold during the run is compacted before the next call;
    // the summary is stored after the last turn's tool results
    const mid = deps.midRunCompaction;
    if (mid && lastCall && mid.overLimit(messages, lastCall.promptTokens, lastCall.sentCount)) {
      await unsaved;
      const compacted = await mid.compact(messages);
      if (compacted) messages.splice(0, messages.length, ...compacted);
    }
    // a context overflow compacts the context and retries the call once (overflow-retry.ts);
    // the last turn's tool results are stored meanwhile, and must be before this turn goes on
    const answer = withOverflowRetry(() => callModel(deps, turn, messages), messages, deps.compactContext);
    answer.catch(() => undefined);
    await unsaved;
    const message = uniqueToolCallIds(await answer, messages, turn);
    const billed = message.usage;
    lastCall = { promptTokens: billed ? billed.input + billed.cacheRead + billed.cacheWrite || undefined : undefined, sentCount: messages.length };
    const text = assistantText(message);
    deps.events.emit({ kind: "message_end", turn, text });
    if (message.usage) {
      usage = addUsage(usage, message.usage);
      deps.usageTally?.addMessage(message, deps.providerName);
      deps.events.emit({ kind: "usage", turn, usage: message.usage, model: message.model, provider: message.provider || deps.providerName });
    }
    callHooks(deps, (h) => h.onMessage?.({ turn, message }));
    // The checkpoint must be stored before a side-effecting tool runs (a redelivered run must
    // find the call, not ask the model again and repeat it). Calls without side effects run at
    // once; their checkpoint goes with the first tool result, stored like the results (`unsaved`).
    const overlap = callsWithoutSideEffects(message, deps.tools);
    const checkpoint = deps.checkpointAssistant(turn, message, overlap);
    if (overlap) checkpoint.catch(() => undefined);
    else await checkpoint;
    if (text) lastText = text;
    const ended = await finishTurn(turn, message, new Map(), message.usage);
    if (overlap) unsaved = Promise.all([checkpoint, unsaved]).then(() => undefined);
    if (ended.stop) return done({ text: withEarlier(lastText), turns: turn, usage, stoppedAtLimit: false, stoppedByHook: ended.stop });
    if (!ended.more) return done({ text: withEarlier(text), turns: turn, usage, stoppedAtLimit: false });
  }
}

function callHooks(deps: LoopDeps, fn: (hooks: TurnHooks) => void): void {
  for (const hooks of deps.hooks ?? []) {
    try {
      fn(hooks);
    } catch (err) {
      deps.log.warn({ err }, "a turn hook failed; ignored");
    }
  }
}
