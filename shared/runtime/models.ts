/**
 * The model registry: what the agent-runner knows of a `provider/model` (context window, max
 * output, capabilities, price). A built-in table of common OpenAI, Anthropic and Ollama models,
 * overridden field by field and extended by config `models.entries`; aliases ("sonnet", "gpt4o",
 * config `models.aliases`) name a `provider/model`. A model name matches the longest table entry
 * it starts with (`claude-sonnet-4-5-20250929` -> `claude-sonnet-4-5`, `llama3.1:8b` -> `llama3.1`);
 * an unknown model gets conservative defaults (32k context, 4k output, tools, no vision, no thinking,
 * no PDF input). `pdf`: the API takes a PDF as a document the model reads page by page (Anthropic
 * `document` blocks, OpenAI `file` parts).
 * MiniMax models (`MiniMax-M2*`) have their own table and are found under any provider that
 * serves them (`anthropic/MiniMax-M2.5` through MiniMax's Anthropic-compatible API, which returns
 * thinking blocks; `openai/MiniMax-M2` through its OpenAI-compatible one, which inlines `<think>`;
 * a named instance such as `minimax/…` by its `api`). A named instance's other models take its
 * API's table.
 * `reasoningTags`: whether the model writes its reasoning into the text as `<think>…</think>`
 * ("on": split anywhere; "auto", the default: only when the message begins with such a block;
 * "off": never; services/agent-runner/providers/think-tags.ts); `reasoningReplay`: that thinking
 * goes back to the model inside the assistant text on later turns (MiniMax asks for it; others
 * are not sent their thinking). `fixedTemperature`: the model takes no temperature (OpenAI's
 * reasoning models); `temperature`: the model's default from config (unset: not sent).
 */
import type { Usage } from "../contract/index.js";
import type { LurkConfig } from "./config.js";
import { providerApi } from "./config-providers.js";

export interface ModelCost {
  inputPerMTok: number;
  outputPerMTok: number;
  cacheReadPerMTok?: number;
  cacheWritePerMTok?: number;
}

export interface ModelInfo {
  /** `provider/model` as resolved (alias expanded) */
  ref: string;
  provider: string;
  /** the model name the provider gets */
  model: string;
  contextWindow: number;
  maxOutput: number;
  capabilities: { tools: boolean; vision: boolean; thinking: boolean; pdf: boolean };
  cost?: ModelCost;
  /** false when neither the table nor the config knows the model (the numbers are defaults) */
  known?: boolean;
  /** inline `<think>` reasoning in the text (see above); "auto" unless the table or config says */
  reasoningTags: ReasoningTags;
  /** thinking goes back to the model as `<think>…</think>` in the assistant text (OpenAI-compatible APIs) */
  reasoningReplay?: boolean;
  /** the model refuses a temperature: none is sent */
  fixedTemperature?: boolean;
  /** the configured default temperature (models.entries.<ref>.temperature) */
  temperature?: number;
}

export type ReasoningTags = "on" | "off" | "auto";

type Row = Omit<ModelInfo, "ref" | "provider" | "model" | "known" | "reasoningTags" | "temperature"> & { reasoningTags?: ReasoningTags };

export const UNKNOWN_MODEL_DEFAULTS: Row = {
  contextWindow: 32_000,
  maxOutput: 4_096,
  capabilities: { tools: true, vision: false, thinking: false, pdf: false },
};

const caps = (tools: boolean, vision: boolean, thinking: boolean, pdf = false) => ({ tools, vision, thinking, pdf });
/** models whose API takes PDFs as files (OpenAI's with vision: gpt-4o, gpt-4.1, gpt-5, o1, o3, o4-mini; every Claude row) */
const PDF = true;
const price = (inputPerMTok: number, outputPerMTok: number, cacheReadPerMTok?: number, cacheWritePerMTok?: number): ModelCost => ({
  inputPerMTok, outputPerMTok,
  ...(cacheReadPerMTok !== undefined ? { cacheReadPerMTok } : {}),
  ...(cacheWritePerMTok !== undefined ? { cacheWritePerMTok } : {}),
});
const FREE = price(0, 0, 0, 0);
/** OpenAI reasoning models: temperature is refused (only the default 1 is accepted) */
const REASONING = { fixedTemperature: true } as const;
/** Claude never writes think tags of its own: a `<thinking>` in its text is the answer's */
const NO_TAGS = { reasoningTags: "off" } as const;

/** Built-in rows, by provider then model-name prefix (list prices in USD per million tokens). */
export const BUILTIN_MODELS: Record<string, Record<string, Row>> = {
  openai: {
    "gpt-4o": { contextWindow: 128_000, maxOutput: 16_384, capabilities: caps(true, true, false, PDF), cost: price(2.5, 10, 1.25) },
    "gpt-4o-mini": { contextWindow: 128_000, maxOutput: 16_384, capabilities: caps(true, true, false, PDF), cost: price(0.15, 0.6, 0.075) },
    "gpt-4.1": { contextWindow: 1_047_576, maxOutput: 32_768, capabilities: caps(true, true, false, PDF), cost: price(2, 8, 0.5) },
    "gpt-4.1-mini": { contextWindow: 1_047_576, maxOutput: 32_768, capabilities: caps(true, true, false, PDF), cost: price(0.4, 1.6, 0.1) },
    "gpt-4.1-nano": { contextWindow: 1_047_576, maxOutput: 32_768, capabilities: caps(true, true, false, PDF), cost: price(0.1, 0.4, 0.025) },
    "gpt-4-turbo": { contextWindow: 128_000, maxOutput: 4_096, capabilities: caps(true, true, false), cost: price(10, 30) },
    "gpt-3.5-turbo": { contextWindow: 16_385, maxOutput: 4_096, capabilities: caps(true, false, false), cost: price(0.5, 1.5) },
    "o1": { contextWindow: 200_000, maxOutput: 100_000, capabilities: caps(true, true, true, PDF), cost: price(15, 60, 7.5), ...REASONING },
    "o1-mini": { contextWindow: 128_000, maxOutput: 65_536, capabilities: caps(false, false, true), cost: price(1.1, 4.4, 0.55), ...REASONING },
    "o3": { contextWindow: 200_000, maxOutput: 100_000, capabilities: caps(true, true, true, PDF), cost: price(2, 8, 0.5), ...REASONING },
    "o3-mini": { contextWindow: 200_000, maxOutput: 100_000, capabilities: caps(true, false, true), cost: price(1.1, 4.4, 0.55), ...REASONING },
    "o4-mini": { contextWindow: 200_000, maxOutput: 100_000, capabilities: caps(true, true, true, PDF), cost: price(1.1, 4.4, 0.275), ...REASONING },
    "gpt-5": { contextWindow: 400_000, maxOutput: 128_000, capabilities: caps(true, true, true, PDF), cost: price(1.25, 10, 0.125), ...REASONING },
    "gpt-5-mini": { contextWindow: 400_000, maxOutput: 128_000, capabilities: caps(true, true, true, PDF), cost: price(0.25, 2, 0.025), ...REASONING },
    "gpt-5-nano": { contextWindow: 400_000, maxOutput: 128_000, capabilities: caps(true, true, true, PDF), cost: price(0.05, 0.4, 0.005), ...REASONING },
    // embedding models (memory.embeddings): priced for the usage ledger; input tokens only
    "text-embedding-3-small": { contextWindow: 8_191, maxOutput: 1, capabilities: caps(false, false, false), cost: price(0.02, 0) },
    "text-embedding-3-large": { contextWindow: 8_191, maxOutput: 1, capabilities: caps(false, false, false), cost: price(0.13, 0) },
    "text-embedding-ada-002": { contextWindow: 8_191, maxOutput: 1, capabilities: caps(false, false, false), cost: price(0.1, 0) },
  },
  anthropic: {
    "claude-3-5-haiku": { contextWindow: 200_000, maxOutput: 8_192, capabilities: caps(true, true, false, PDF), cost: price(0.8, 4, 0.08, 1), ...NO_TAGS },
    "claude-3-5-sonnet": { contextWindow: 200_000, maxOutput: 8_192, capabilities: caps(true, true, false, PDF), cost: price(3, 15, 0.3, 3.75), ...NO_TAGS },
    "claude-3-7-sonnet": { contextWindow: 200_000, maxOutput: 64_000, capabilities: caps(true, true, true, PDF), cost: price(3, 15, 0.3, 3.75), ...NO_TAGS },
    "claude-sonnet-4": { contextWindow: 200_000, maxOutput: 64_000, capabilities: caps(true, true, true, PDF), cost: price(3, 15, 0.3, 3.75), ...NO_TAGS },
    "claude-sonnet-4-5": { contextWindow: 200_000, maxOutput: 64_000, capabilities: caps(true, true, true, PDF), cost: price(3, 15, 0.3, 3.75), ...NO_TAGS },
    "claude-sonnet-4-6": { contextWindow: 200_000, maxOutput: 64_000, capabilities: caps(true, true, true, PDF), cost: price(3, 15, 0.3, 3.75), ...NO_TAGS },
    "claude-opus-4-5": { contextWindow: 200_000, maxOutput: 64_000, capabilities: caps(true, true, true, PDF), cost: price(5, 25, 0.5, 6.25), ...NO_TAGS },
    "claude-opus-4": { contextWindow: 200_000, maxOutput: 32_000, capabilities: caps(true, true, true, PDF), cost: price(15, 75, 1.5, 18.75), ...NO_TAGS },
    "claude-opus-4-1": { contextWindow: 200_000, maxOutput: 32_000, capabilities: caps(true, true, true, PDF), cost: price(15, 75, 1.5, 18.75), ...NO_TAGS },
    "claude-haiku-4-5": { contextWindow: 200_000, maxOutput: 64_000, capabilities: caps(true, true, true, PDF), cost: price(1, 5, 0.1, 1.25), ...NO_TAGS },
  },
  ollama: {
    "llama3.1": { contextWindow: 128_000, maxOutput: 8_192, capabilities: caps(true, false, false), cost: FREE },
    "llama3.2": { contextWindow: 128_000, maxOutput: 8_192, capabilities: caps(true, false, false), cost: FREE },
    "llama3.3": { contextWindow: 128_000, maxOutput: 8_192, capabilities: caps(true, false, false), cost: FREE },
    "qwen2.5": { contextWindow: 32_768, maxOutput: 8_192, capabilities: caps(true, false, false), cost: FREE },
    "qwen3": { contextWindow: 40_960, maxOutput: 8_192, capabilities: caps(true, false, true), cost: FREE },
    "deepseek-r1": { contextWindow: 128_000, maxOutput: 8_192, capabilities: caps(false, false, true), cost: FREE, reasoningTags: "on" },
    "qwq": { contextWindow: 40_960, maxOutput: 8_192, capabilities: caps(true, false, true), cost: FREE, reasoningTags: "on" },
    "gpt-oss": { contextWindow: 128_000, maxOutput: 16_384, capabilities: caps(true, false, true), cost: FREE },
    "mistral": { contextWindow: 32_768, maxOutput: 8_192, capabilities: caps(true, false, false), cost: FREE },
    "gemma3": { contextWindow: 128_000, maxOutput: 8_192, capabilities: caps(false, true, false), cost: FREE },
    // vision variants whose names start like a text-only row above: their own rows (images reach them)
    "llama3.2-vision": { contextWindow: 128_000, maxOutput: 8_192, capabilities: caps(false, true, false), cost: FREE },
    "qwen2.5vl": { contextWindow: 125_000, maxOutput: 8_192, capabilities: caps(false, true, false), cost: FREE },
    "qwen3-vl": { contextWindow: 256_000, maxOutput: 8_192, capabilities: caps(true, true, true), cost: FREE },
    "mistral-small3.1": { contextWindow: 128_000, maxOutput: 8_192, capabilities: caps(true, true, false), cost: FREE },
    "mistral-small3.2": { contextWindow: 128_000, maxOutput: 8_192, capabilities: caps(true, true, false), cost: FREE },
    "llava": { contextWindow: 4_096, maxOutput: 2_048, capabilities: caps(false, true, false), cost: FREE },
    // embedding models (memory.embeddings)
    "nomic-embed-text": { contextWindow: 8_192, maxOutput: 1, capabilities: caps(false, false, false), cost: FREE },
    "mxbai-embed-large": { contextWindow: 512, maxOutput: 1, capabilities: caps(false, false, false), cost: FREE },
    "all-minilm": { contextWindow: 512, maxOutput: 1, capabilities: caps(false, false, false), cost: FREE },
    "bge-m3": { contextWindow: 8_192, maxOutput: 1, capabilities: caps(false, false, false), cost: FREE },
  },
  // MiniMax (seed 003 §6.6): 204,800-token context, text only, tools, always reasoning; list
  // prices of platform.minimax.io (cache writes only published for M2/M2.1). Over the
  // OpenAI-compatible API the reasoning is inline `<think>` text, which MiniMax wants back.
  minimax: {
    "MiniMax-M2": { contextWindow: 204_800, maxOutput: 32_768, capabilities: caps(true, false, true), cost: price(0.3, 1.2, 0.03, 0.375), reasoningTags: "on", reasoningReplay: true },
    "MiniMax-M2.1": { contextWindow: 204_800, maxOutput: 32_768, capabilities: caps(true, false, true), cost: price(0.3, 1.2, 0.03, 0.375), reasoningTags: "on", reasoningReplay: true },
    "MiniMax-M2.5": { contextWindow: 204_800, maxOutput: 32_768, capabilities: caps(true, false, true), cost: price(0.3, 1.2, 0.03), reasoningTags: "on", reasoningReplay: true },
    "MiniMax-M2.5-highspeed": { contextWindow: 204_800, maxOutput: 32_768, capabilities: caps(true, false, true), cost: price(0.6, 2.4, 0.03), reasoningTags: "on", reasoningReplay: true },
  },
};

export const BUILTIN_ALIASES: Record<string, string> = {
  sonnet: "anthropic/claude-sonnet-4-6",
  opus: "anthropic/claude-opus-4-5",
  haiku: "anthropic/claude-haiku-4-5",
  gpt4o: "openai/gpt-4o",
  "gpt4o-mini": "openai/gpt-4o-mini",
  "gpt4.1": "openai/gpt-4.1",
  gpt5: "openai/gpt-5",
  "gpt5-mini": "openai/gpt-5-mini",
  llama: "ollama/llama3.1",
  qwen: "ollama/qwen3",
};

/**
 * `provider/model` for a ref: an alias (config first, then built-in), a `provider/model`, or a
 * bare model name (the provider whose table has it, else `defaultProvider`, else openai).
 */
export function resolveModelRef(ref: string, config: Pick<LurkConfig, "models">, defaultProvider?: string): string {
  const alias = config.models?.aliases[ref] ?? BUILTIN_ALIASES[ref];
  if (alias) return alias;
  if (ref.includes("/")) return ref;
  for (const [provider, rows] of Object.entries(BUILTIN_MODELS)) if (rows[ref] && provider !== VENDOR_TABLE) return `${provider}/${ref}`;
  return `${defaultProvider ?? "openai"}/${ref}`;
}

/** the table of models found under any provider that serves them (by name, e.g. `anthropic/MiniMax-M2.5`) */
const VENDOR_TABLE = "minimax";

/** The longest built-in key that the model name starts with (on a boundary: end, '-', ':', '@'); MiniMax names under any provider. */
function builtinRow(provider: string, model: string, api: string): Row | undefined {
  if (provider !== VENDOR_TABLE) {
    // a named instance (providers.<name>.api) falls back to its API's table
    const own = tableRow(provider, model) ?? (api !== provider ? tableRow(api, model) : undefined);
    if (own || !/^minimax-/i.test(model)) return own;
  }
  const row = tableRow(VENDOR_TABLE, model);
  // MiniMax's Anthropic-compatible API returns thinking blocks: no tags to split, nothing to replay
  return row && api === "anthropic" ? { ...row, reasoningTags: "auto", reasoningReplay: false } : row;
}

function tableRow(provider: string, model: string): Row | undefined {
  return prefixRow(BUILTIN_MODELS[provider], model);
}

/** A provider's row for a model name: its own, else the longest key the name starts with on a boundary (end, '-', ':', '@'); also the media price table's (media-prices.ts). */
export function prefixRow<T>(rows: Record<string, T> | undefined, model: string): T | undefined {
  if (!rows) return undefined;
  if (rows[model]) return rows[model];
  let best: string | undefined;
  for (const key of Object.keys(rows)) {
    if (!model.startsWith(key)) continue;
    const next = model[key.length];
    if (next !== "-" && next !== ":" && next !== "@") continue;
    if (!best || key.length > best.length) best = key;
  }
  return best ? rows[best] : undefined;
}

/** What the registry knows of a model ref or alias; never throws. */
export function lookupModel(ref: string, config: Pick<LurkConfig, "models"> & Partial<Pick<LurkConfig, "model" | "providers">>): ModelInfo {
  const full = resolveModelRef(ref, config, config.model?.split("/")[0]);
  const slash = full.indexOf("/");
  const provider = full.slice(0, slash);
  const model = full.slice(slash + 1);
  const base = builtinRow(provider, model, providerApi(config.providers, provider) ?? provider);
  const entry = config.models?.entries[full];
  const row: Row = base ?? UNKNOWN_MODEL_DEFAULTS;
  // an entry's token prices replace the built-in ones together (unit prices: media-prices.ts)
  const c = entry?.cost;
  const cost: ModelCost | undefined = c?.inputPerMTok !== undefined && c.outputPerMTok !== undefined
    ? { ...stripUndefined({ cacheReadPerMTok: c.cacheReadPerMTok, cacheWritePerMTok: c.cacheWritePerMTok }), inputPerMTok: c.inputPerMTok, outputPerMTok: c.outputPerMTok }
    : row.cost;
  return {
    ref: full,
    provider,
    model,
    contextWindow: entry?.contextWindow ?? row.contextWindow,
    maxOutput: Math.min(entry?.maxOutput ?? row.maxOutput, entry?.contextWindow ?? row.contextWindow),
    capabilities: { ...row.capabilities, ...stripUndefined(entry?.capabilities ?? {}) },
    ...(cost ? { cost } : {}),
    known: base !== undefined || entry !== undefined,
    reasoningTags: entry?.reasoningTags === undefined ? row.reasoningTags ?? "auto" : entry.reasoningTags === "auto" ? "auto" : entry.reasoningTags ? "on" : "off",
    ...((entry?.reasoningReplay ?? row.reasoningReplay) ? { reasoningReplay: true } : {}),
    ...((entry?.fixedTemperature ?? row.fixedTemperature) ? { fixedTemperature: true } : {}),
    ...(entry?.temperature !== undefined ? { temperature: entry.temperature } : {}),
  };
}

/** USD of one usage report at the model's prices; undefined when the price is unknown. */
export function usageCostUsd(usage: Usage, info: Pick<ModelInfo, "cost">): number | undefined {
  const c = info.cost;
  if (!c) return undefined;
  const usd = usage.input * c.inputPerMTok
    + usage.output * c.outputPerMTok
    + usage.cacheRead * (c.cacheReadPerMTok ?? c.inputPerMTok)
    + usage.cacheWrite * (c.cacheWritePerMTok ?? c.inputPerMTok);
  return usd / 1e6;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
