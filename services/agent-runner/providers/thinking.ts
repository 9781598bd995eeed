/**
 * Thinking levels (contract: off | low | medium | high) -> each provider's request parameter.
 * A request carries a level only when the model supports thinking (shared/runtime/models.ts capabilities);
 * without one the provider's default applies. Anthropic: `thinking: {type:"enabled", budget_tokens}`
 * (max_tokens raised above the budget) or nothing for "off"; OpenAI: `reasoning_effort`
 * (gpt-5 family: "minimal" for off; o-series has no off: "low"); Ollama: `think` (gpt-oss takes
 * the level itself, other models true/false).
 */
import type { z } from "zod";
import type { thinkLevelSchema } from "../../../shared/contract/index.js";

export type ThinkLevel = z.infer<typeof thinkLevelSchema>;

/** Anthropic budget_tokens per level (the API's minimum is 1024). */
export const ANTHROPIC_THINKING_BUDGET: Record<Exclude<ThinkLevel, "off">, number> = { low: 2_048, medium: 8_192, high: 24_576 };
/** output tokens left for the answer on top of the thinking budget */
export const ANTHROPIC_ANSWER_TOKENS = 4_096;

/** Anthropic params: the thinking config and the max_tokens that fits it (under `maxOutput` when known). */
export function anthropicThinking(level: ThinkLevel | undefined, maxTokens: number, maxOutput?: number): { thinking?: { type: "enabled"; budget_tokens: number }; maxTokens: number } {
  if (!level || level === "off") return { maxTokens };
  const cap = maxOutput ?? Number.MAX_SAFE_INTEGER;
  const wanted = Math.max(maxTokens, ANTHROPIC_THINKING_BUDGET[level] + ANTHROPIC_ANSWER_TOKENS);
  const total = Math.min(wanted, cap);
  const budget = Math.min(ANTHROPIC_THINKING_BUDGET[level], total - 1_024);
  if (budget < 1_024) return { maxTokens };
  return { thinking: { type: "enabled", budget_tokens: budget }, maxTokens: total };
}

/** OpenAI reasoning_effort for a reasoning model. */
export function openaiReasoningEffort(level: ThinkLevel, model: string): "minimal" | "low" | "medium" | "high" {
  if (level !== "off") return level;
  return /^gpt-5/.test(model) ? "minimal" : "low";
}

/** Ollama's `think` for a thinking model. */
export function ollamaThink(level: ThinkLevel, model: string): boolean | "low" | "medium" | "high" {
  if (level === "off") return /^gpt-oss/.test(model) ? "low" : false;
  return /^gpt-oss/.test(model) ? level : true;
}
