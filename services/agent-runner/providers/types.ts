/**
 * The provider interface of the agent-runner: one streaming call per LLM turn, in the
 * provider-neutral message model of the contract (shared/contract/common.ts).
 *
 * Contract of `stream()`: it never throws. It yields deltas while the answer arrives, every tool
 * call once it is complete (arguments assembled and parsed; `argsError` set when the JSON could
 * not be parsed even after a safe repair), a `usage` event when the provider reports it, and
 * then exactly one final event: `done` with the whole AssistantMessage, or `error` with a
 * classified LurkError (PROVIDER_* codes, ABORTED when the signal fired).
 */
import type { AssistantMessage, LlmMessage, LurkError, ToolDefinition, Usage } from "../../../shared/contract/index.js";
import type { ReasoningTagMode } from "./think-tags.js";
import type { ThinkLevel } from "./thinking.js";

export interface ToolCallBlock {
  type: "tool_call";
  id: string;
  name: string;
  args: Record<string, unknown>;
  argsError?: string;
}

export interface ProviderRequest {
  /** the model name without the provider prefix, e.g. `gpt-4o-mini` */
  model: string;
  system: string;
  messages: LlmMessage[];
  tools: ToolDefinition[];
  signal: AbortSignal;
  /** the model's max output when the registry knows it */
  maxTokens?: number;
  /** set only for models that support thinking (shared/runtime/models.ts); absent: the provider's default */
  thinking?: ThinkLevel;
  /** sampling temperature; absent: none is sent (the provider's default). Anthropic leaves it out while thinking is on */
  temperature?: number;
  /** inline `<think>` reasoning in the text (think-tags.ts); absent: "auto" */
  reasoningTags?: ReasoningTagMode;
  /** OpenAI-compatible: this model's own earlier thinking goes back as `<think>…</think>` before its text */
  reasoningReplay?: boolean;
}

export type ProviderStreamEvent =
  | { type: "text_delta"; text: string }
  | { type: "thinking_delta"; text: string }
  | { type: "tool_call"; call: ToolCallBlock }
  | { type: "usage"; usage: Usage }
  | { type: "done"; message: AssistantMessage }
  | { type: "error"; error: LurkError };

export interface Provider {
  /** provider name as written in `provider/model`, e.g. `openai` */
  readonly name: string;
  stream(request: ProviderRequest): AsyncIterable<ProviderStreamEvent>;
}


