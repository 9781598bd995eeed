/**
 * The agent loop (seed 000 §3, seed 002): call the model, checkpoint its message, run its tool
 * calls, checkpoint their results, repeat until an answer without tool calls or until
 * maxIterations model calls (then stop with a note). A redelivered run resumes from its
 * checkpoints: a checkpointed assistant message is not requested again and a checkpointed tool
 * result is not executed again. Throws a LurkError when the provider fails or the run is aborted.
 */
import type { AssistantMessage, LlmMessage, ToolDefinition, ToolResultMessage, Usage } from "../../shared/contract/index.js";
import { callModel, type LlmCallDeps } from "./llm-call.js";
import { addUsage, type ToolCallBlock } from "./providers/types.js";
import { assistantText, type ResumeState } from "./transcript.js";
import { runTurnTools, type TurnToolDeps } from "./turn-tools.js";

export interface LoopDeps extends LlmCallDeps, Omit<TurnToolDeps, "events" | "signal" | "tools"> {
  providerName: string;
  maxIterations: number;
  checkpointAssistant(turn: number, message: AssistantMessage): Promise<void>;
}

export interface LoopResult {
  text: string;
  turns: number;
  usage: Usage;
  stoppedAtLimit: boolean;
}

/**
 * Some OpenAI-compatible servers reuse tool call ids (`call_0` on every turn). Ids name the
 * checkpoint records and pair calls with results, so a repeated id is renamed before the
 * message is stored or sent back.
 */
export function uniqueToolCallIds(message: AssistantMessage, history: LlmMessage[], turn: number): AssistantMessage {
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
  return calls.length > 0 && calls.every((c) => tools.find((t) => t.name === c.name)?.sideEffects === false);
}

export async function runLoop(deps: LoopDeps, resume: ResumeState): Promise<LoopResult> {
  // usage of turns checkpointed by an earlier attempt of this run counts too
  let usage = resume.usage;
  if (resume.finished) return { text: assistantText(resume.finished), turns: resume.turn, usage, stoppedAtLimit: false };
  const messages: LlmMessage[] = [...resume.context];
  let turn = resume.turn;
  let lastText = "";

  const finishTurn = async (t: number, message: AssistantMessage, existing: Map<string, ToolResultMessage>): Promise<boolean> => {
    messages.push(message);
    const calls = message.content.filter((b): b is ToolCallBlock => b.type === "tool_call");
    if (calls.length > 0) {
      const results = await runTurnTools({ ...deps, events: deps.events, signal: deps.signal, tools: deps.tools }, t, calls, existing);
      messages.push(...results);
    }
    deps.events.emit({ kind: "turn_end", turn: t, stopReason: message.stopReason });
    return calls.length > 0;
  };

  if (resume.pending) {
    lastText = assistantText(resume.pending.message);
    deps.events.emit({ kind: "turn_start", turn });
    await finishTurn(turn, resume.pending.message, resume.pending.results);
  }

  for (;;) {
    if (turn >= deps.maxIterations) {
      const note = `(I stopped after ${deps.maxIterations} model calls without a final answer. The tool results so far are saved; say "continue" and I will go on.)`;
      return { text: lastText ? `${lastText}\n\n${note}` : note, turns: turn, usage, stoppedAtLimit: true };
    }
    turn++;
    deps.events.emit({ kind: "turn_start", turn });
    const message = uniqueToolCallIds(await callModel(deps, turn, messages), messages, turn);
    const text = assistantText(message);
    deps.events.emit({ kind: "message_end", turn, text });
    if (message.usage) {
      usage = addUsage(usage, message.usage);
      deps.events.emit({ kind: "usage", turn, usage: message.usage, model: message.model, provider: deps.providerName });
    }
    // The checkpoint must be stored before a side-effecting tool runs (a redelivered run must
    // find the call, not ask the model again and repeat it). Calls without side effects may run
    // while it is being stored; the turn still waits for it before going on.
    const checkpoint = deps.checkpointAssistant(turn, message);
    const overlap = callsWithoutSideEffects(message, deps.tools);
    if (overlap) checkpoint.catch(() => undefined);
    else await checkpoint;
    if (text) lastText = text;
    const more = await finishTurn(turn, message, new Map());
    if (overlap) await checkpoint;
    if (!more) return { text, turns: turn, usage, stoppedAtLimit: false };
  }
}
