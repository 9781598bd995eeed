/**
 * The sampling temperature each provider API accepts. Config allows 0–2 (agents, model entries,
 * run options); Anthropic's Messages API refuses more than 1 (a 400 on every call, fallbacks
 * included), OpenAI's Chat Completions takes 0–2, Ollama's is sent as given. `apiTemperature`
 * clamps to the API's range: the model chain (failover.ts, which logs a change at debug once
 * per model and run) and the anthropic and openai providers (the wire: a request never carries
 * a value its API refuses) both apply it.
 */
import type { ProviderApi } from "../../../shared/runtime/config-providers.js";

export const TEMPERATURE_RANGE: Readonly<Partial<Record<ProviderApi, readonly [number, number]>>> = {
  anthropic: [0, 1],
  openai: [0, 2],
};

/** the temperature within `api`'s range (an API without a known range: unchanged) */
export function apiTemperature(api: ProviderApi | undefined, temperature: number): number {
  const range = api ? TEMPERATURE_RANGE[api] : undefined;
  return range ? Math.min(range[1], Math.max(range[0], temperature)) : temperature;
}
