/**
 * A provider whose SDK is imported on its first call. The three SDKs together cost the runner
 * ~25 MB of memory at start although a deployment usually uses one provider; the registry hands
 * out LazyProviders for OpenAI and Anthropic (ollama.ts imports its small client itself), so only
 * the SDKs actually called are ever loaded. Behaviour is the wrapped
 * provider's: every event of its stream is passed on unchanged. A module that cannot be loaded
 * (a broken install) yields one PROVIDER_ERROR event, like a provider that cannot connect.
 * LazyEmbedder does the same for OpenAI embeddings (lurk.agent-runner.embed; ollama-embed.ts
 * imports its client itself): a failed load rejects with PROVIDER_ERROR.
 */
import { LurkError } from "../../../shared/contract/index.js";
import type { Embedder, EmbedRequest, EmbedResult } from "./embedder.js";
import type { Provider, ProviderRequest, ProviderStreamEvent } from "./types.js";

export type ProviderFactory = () => Promise<Provider>;

/** module paths of the providers, imported at most once per process */
export const providerModules = {
  openai: () => import("./openai.js"),
  anthropic: () => import("./anthropic.js"),
  /** embeddings (lurk.agent-runner.embed): the same SDK, loaded only when memory_search asks */
  openaiEmbed: () => import("./openai-embed.js"),
};

export class LazyProvider implements Provider {
  private loading: Promise<Provider> | undefined;
  /** set once loaded: later streams are the wrapped provider's own (no relaying generator) */
  private provider: Provider | undefined;

  constructor(readonly name: string, private readonly factory: ProviderFactory) {}

  /** true once the wrapped provider was created (its SDK is loaded) */
  get loaded(): boolean {
    return this.loading !== undefined;
  }

  /** The wrapped provider (loads its SDK on the first call; a failed load is retried next time). */
  load(): Promise<Provider> {
    this.loading ??= this.factory().then((provider) => (this.provider = provider), (err: unknown) => {
      this.loading = undefined;
      throw err;
    });
    return this.loading;
  }

  stream(request: ProviderRequest): AsyncIterable<ProviderStreamEvent> {
    return this.provider ? this.provider.stream(request) : this.loadAndStream(request);
  }

  private async *loadAndStream(request: ProviderRequest): AsyncIterable<ProviderStreamEvent> {
    let provider: Provider;
    try {
      provider = await this.load();
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      yield { type: "error", error: new LurkError("PROVIDER_ERROR", `the ${this.name} provider could not be loaded: ${reason}; reinstall with \`npm install\``) };
      return;
    }
    yield* provider.stream(request);
  }
}

/** An Embedder whose SDK is imported on its first call, like LazyProvider (a failed load is retried next time). */
export class LazyEmbedder implements Embedder {
  private loading: Promise<Embedder> | undefined;

  constructor(readonly name: string, private readonly factory: () => Promise<Embedder>) {}

  async embed(request: EmbedRequest): Promise<EmbedResult> {
    this.loading ??= this.factory().catch((err: unknown) => {
      this.loading = undefined;
      const reason = err instanceof Error ? err.message : String(err);
      throw new LurkError("PROVIDER_ERROR", `the ${this.name} provider could not be loaded: ${reason}; reinstall with \`npm install\``);
    });
    return (await this.loading).embed(request);
  }
}
