/**
 * The turn hooks every run gets (loop.ts TurnHooks). Today: the per-run token budget
 * (`runs.maxTokensPerRun`), which stops the loop after the turn that passes it, and a debug
 * log line per turn. Add a hook here to observe or bound runs without touching the loop.
 */
import type { LurkConfig } from "../../shared/runtime/config.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { TurnHooks } from "./loop.js";

/** Stops the loop once the run's input + output tokens reach `limit`. */
export function tokenBudgetHook(limit: number): TurnHooks {
  return {
    onTurnEnd: ({ totalUsage, toolCalls }) => {
      const spent = totalUsage.input + totalUsage.output;
      if (toolCalls > 0 && spent >= limit) return `the run used ${spent} tokens, over its budget of ${limit}`;
      return undefined;
    },
  };
}

export function turnLogHook(log: Logger): TurnHooks {
  return {
    onTurnEnd: ({ turn, usage, toolCalls }) => {
      log.debug({ turn, toolCalls, usage }, "turn ended");
    },
    onError: ({ turn, error }) => {
      log.debug({ turn, code: error.code }, "loop failed");
    },
  };
}

export function runHooks(config: LurkConfig, log: Logger): TurnHooks[] {
  const hooks = [turnLogHook(log)];
  if (config.runs.maxTokensPerRun) hooks.push(tokenBudgetHook(config.runs.maxTokensPerRun));
  return hooks;
}
