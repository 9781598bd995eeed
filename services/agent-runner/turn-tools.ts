/**
 * Runs the tool calls of one turn. Calls whose result is already checkpointed (a redelivered
 * run) are not executed again; unknown tools and unparseable arguments get an error result
 * without calling anything. When every tool of the turn is parallelSafe the calls run
 * concurrently; results are returned (and later sent) in call order. Each new result is
 * checkpointed as soon as it exists, without waiting for the write: `stored` settles when every
 * checkpoint of the turn is durable (the loop awaits it with the next model call and before it
 * ends; appends from one runner keep their order, so a later write never lands before them).
 * Steering (`skipRemaining()` true after a call) skips the
 * calls not yet started: each gets an error result saying so, checkpointed like any other, so
 * the model sees why and a resumed run does not start them either.
 */
import { abortable } from "../../shared/runtime/abortable-sleep.js";
import type { ToolDefinition, ToolResultMessage } from "../../shared/contract/index.js";
import type { RunEvents } from "./events.js";
import { abortError } from "./llm-call.js";
import type { ToolCallBlock } from "./providers/types.js";

export interface TurnToolDeps {
  tools: ToolDefinition[];
  events: RunEvents;
  signal: AbortSignal;
  execute(call: ToolCallBlock): Promise<ToolResultMessage>;
  checkpoint(turn: number, result: ToolResultMessage, durationMs: number): Promise<void>;
  /** true when a steering message waits: the calls not yet started are skipped */
  skipRemaining?(): boolean;
}

export interface TurnToolsResult {
  results: ToolResultMessage[];
  /** ids of the calls skipped because of steering */
  skipped: string[];
  /** settles when every checkpoint of the turn is stored; rejects with the first failure */
  stored: Promise<void>;
}

export const SKIPPED_TEXT = "Skipped: the user sent a new message before this tool ran; read it and decide again.";

const MAX_ARGS_EVENT_CHARS = 4_000;

/** tool lists by name, once per list (a cached catalog hands every run the same array) */
const indexes = new WeakMap<readonly ToolDefinition[], ReadonlyMap<string, ToolDefinition>>();

/** The tools of a list by name (built once per list object; lists are not changed after they are handed out). */
export function toolsByName(tools: readonly ToolDefinition[]): ReadonlyMap<string, ToolDefinition> {
  let index = indexes.get(tools);
  if (!index) indexes.set(tools, (index = new Map(tools.map((t) => [t.name, t]))));
  return index;
}

export async function runTurnTools(deps: TurnToolDeps, turn: number, calls: ToolCallBlock[], existing: Map<string, ToolResultMessage>): Promise<TurnToolsResult> {
  const byName = toolsByName(deps.tools);
  const parallel = calls.every((c) => existing.has(c.id) || c.argsError !== undefined || !byName.has(c.name) || byName.get(c.name)!.parallelSafe);
  const writes: Promise<void>[] = [];
  const store = (result: ToolResultMessage, durationMs: number) => {
    const write = deps.checkpoint(turn, result, durationMs);
    write.catch(() => undefined); // observed through `stored`
    writes.push(write);
  };
  const stored = () => {
    const all = Promise.all(writes).then(() => undefined);
    all.catch(() => undefined);
    return all;
  };

  const one = async (call: ToolCallBlock): Promise<ToolResultMessage> => {
    deps.events.emit({ kind: "tool_start", turn, toolCallId: call.id, name: call.name, args: eventArgs(call.args) });
    const prior = existing.get(call.id);
    if (prior) {
      deps.events.emit({ kind: "tool_end", turn, toolCallId: call.id, name: call.name, isError: prior.isError, preview: preview(prior), durationMs: 0, resumed: true });
      return prior;
    }
    const started = Date.now();
    const result = await abortable(produce(deps, byName, call), deps.signal, abortError);
    const durationMs = Date.now() - started;
    store(result, durationMs);
    deps.events.emit({ kind: "tool_end", turn, toolCallId: call.id, name: call.name, isError: result.isError, preview: preview(result), durationMs, resumed: false });
    return result;
  };

  const skip = async (call: ToolCallBlock): Promise<ToolResultMessage> => {
    const result: ToolResultMessage = { role: "tool_result", toolCallId: call.id, toolName: call.name, isError: true, content: [{ type: "text", text: SKIPPED_TEXT }] };
    store(result, 0);
    deps.events.emit({ kind: "tool_end", turn, toolCallId: call.id, name: call.name, isError: true, preview: SKIPPED_TEXT, durationMs: 0, resumed: false });
    return result;
  };

  if (parallel) {
    const results = await Promise.all(calls.map(one));
    return { results, skipped: [], stored: stored() };
  }
  const results: ToolResultMessage[] = [];
  const skipped: string[] = [];
  for (const call of calls) {
    if (!existing.has(call.id) && deps.skipRemaining?.()) {
      skipped.push(call.id);
      results.push(await skip(call));
    } else {
      results.push(await one(call));
    }
  }
  return { results, skipped, stored: stored() };
}

async function produce(deps: TurnToolDeps, byName: ReadonlyMap<string, ToolDefinition>, call: ToolCallBlock): Promise<ToolResultMessage> {
  const error = (text: string): ToolResultMessage => ({ role: "tool_result", toolCallId: call.id, toolName: call.name, isError: true, content: [{ type: "text", text }] });
  if (call.argsError !== undefined) {
    return error(`Error: the tool was not called because its arguments could not be parsed: ${call.argsError}. Call ${call.name} again with the arguments as one valid JSON object.`);
  }
  if (!byName.has(call.name)) {
    const names = [...byName.keys()];
    return error(`Error: there is no tool named "${call.name}". ${names.length > 0 ? `Available tools: ${names.join(", ")}.` : "No tools are available right now."}`);
  }
  deps.events.flushNow(); // the tool_start event leaves with the call
  return deps.execute(call);
}

export function preview(result: ToolResultMessage, max = 2_000): string {
  const text = result.content.map((b) => (b.type === "text" ? b.text : `[image ${b.mime}]`)).join("\n");
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}

function eventArgs(args: Record<string, unknown>): Record<string, unknown> {
  const json = JSON.stringify(args);
  return json.length <= MAX_ARGS_EVENT_CHARS ? args : { _truncated: true, _preview: json.slice(0, MAX_ARGS_EVENT_CHARS) };
}
