/** What the two loop benchmarks (agent-loop.ts, loop-own-cost.ts) share: the prompt and a run's end. */
import type { RunEvents } from "../../services/agent-runner/events.js";
import type { LoopResult } from "../../services/agent-runner/loop.js";

/** a system prompt of a realistic size (~1.8 KB) */
export const BENCH_SYSTEM_PROMPT = `You are LurkBot, a personal assistant.\n${"Use the tools when they help. ".repeat(60)}`;

/** The run's end events, as finish.ts sends them, handed to the connection now (a sample includes that). */
export function endRun(events: RunEvents, result: LoopResult): void {
  events.emit({ kind: "run_end", turns: result.turns });
  events.emit({ kind: "done", text: result.text, turns: result.turns, usage: result.usage, silent: false });
  events.flushNow();
}
