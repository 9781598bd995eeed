/**
 * The model chain of a run: the primary model, then the agent's `fallbacks` in order, each with
 * its provider's auth profiles. For every model call the first model that has a usable profile
 * wins (not disabled, not cooling down for that model, not already failed in this call); of its
 * usable profiles the one pinned to the session, else the least recently used (which is then
 * pinned). Failures and successes go to the AuthStateStore (cooldowns survive restarts).
 * When nothing is usable the candidate that becomes free first is probed, so a single-key setup
 * is never locked out by its own cooldown.
 */
import type { LurkConfig } from "../../shared/runtime/config.js";
import { LurkError, type ErrorCode, type Usage } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { AuthStateStore, FailureReason } from "./auth-profiles.js";
import { lookupModel, usageCostUsd, type ModelInfo } from "../../shared/runtime/models.js";
import type { AuthProfile, ProviderRegistry } from "./providers/registry.js";
import type { ThinkLevel } from "./providers/thinking.js";
import { apiTemperature } from "./providers/temperature.js";
import { providerApi } from "../../shared/runtime/config-providers.js";
import type { Provider, ProviderRequest } from "./providers/types.js";

export interface Candidate {
  /** `ref#profileId` */
  key: string;
  ref: string;
  providerName: string;
  model: string;
  info: ModelInfo;
  profile: AuthProfile;
  provider: Provider;
}

interface ChainModel {
  ref: string;
  providerName: string;
  model: string;
  info: ModelInfo;
  profiles: AuthProfile[];
}

export interface ModelChainOptions {
  registry: ProviderRegistry;
  config: LurkConfig;
  /** the primary ref first, then the fallbacks (aliases allowed) */
  refs: Array<string | undefined>;
  sessionKey: string;
  thinking?: ThinkLevel;
  /** the run's or the agent's temperature (wins over the model's default) */
  temperature?: number;
  store?: AuthStateStore;
  log: Logger;
}

const FAILOVER_REASONS: Partial<Record<ErrorCode, FailureReason>> = {
  PROVIDER_RATE_LIMIT: "rate_limit",
  PROVIDER_OVERLOADED: "overloaded",
  PROVIDER_AUTH: "auth",
  PROVIDER_BILLING: "billing",
  PROVIDER_TIMEOUT: "timeout",
};

/**
 * The failure reason that moves a call to the next profile or model, or null when another
 * profile cannot help (context overflow: compaction's job; a bad request; an abort).
 */
export function failureReason(error: LurkError): FailureReason | null {
  const reason = FAILOVER_REASONS[error.code];
  if (reason) return reason;
  return error.code === "PROVIDER_ERROR" && error.retryable ? "other" : null;
}

export class ModelChain {
  private readonly models: ChainModel[] = [];
  /** the ref the run is on (run_start announced the primary); a change is a provider_switch */
  current: string;
  /** what next() read: the session's pins and the candidates that had stored state (others need no reset on success) */
  private readonly pins = new Map<string, string | undefined>();
  private readonly withState = new Set<string>();
  /** the candidate whose last call in this run succeeded (its stored state is clear) */
  private settled: Candidate | undefined;
  /** models whose refused or clamped temperature was logged in this run */
  private readonly noTemperatureLogged = new Set<string>();

  constructor(private readonly opts: ModelChainOptions) {
    const [primary, ...fallbacks] = opts.refs;
    const first = opts.registry.parse(primary);
    const seen = new Set<string>();
    for (const [i, raw] of [first.ref, ...fallbacks].entries()) {
      if (!raw) continue;
      let parsed;
      try {
        parsed = i === 0 ? first : opts.registry.parse(opts.registry.expand(raw, first.providerName));
      } catch (err) {
        opts.log.warn({ fallback: raw, err }, "skipping an invalid fallback model");
        continue;
      }
      if (seen.has(parsed.ref)) continue;
      seen.add(parsed.ref);
      this.models.push({ ...parsed, info: lookupModel(parsed.ref, opts.config), profiles: opts.registry.profiles(parsed.providerName) });
    }
    this.current = first.ref;
    if (this.models.every((m) => m.profiles.length === 0)) throw opts.registry.missingCredentials(first.providerName, first.ref);
  }

  /** whether some model of the chain takes PDFs as documents (capability `pdf`) */
  get takesPdf(): boolean {
    return this.models.some((m) => m.info.capabilities.pdf);
  }

  get primary(): ChainModel {
    return this.models[0]!;
  }

  /** Refs in order, for logs. */
  get refs(): string[] {
    return this.models.map((m) => m.ref);
  }

  private candidate(m: ChainModel, profile: AuthProfile): Candidate {
    return { key: `${m.ref}#${profile.id}`, ref: m.ref, providerName: m.providerName, model: m.model, info: m.info, profile, provider: this.opts.registry.providerFor(profile) };
  }

  /**
   * The candidate for the next call among those not in `tried`, or undefined when none is usable
   * now. A run's call after a success takes the candidate that succeeded without reading the
   * store again: a cooldown another run sets meanwhile is seen by this run only once its own
   * call with that profile fails.
   */
  next(tried: ReadonlySet<string>, needsTools = false): Candidate | undefined {
    if (tried.size === 0 && this.settled) return this.settled;
    const store = this.opts.store;
    for (const [i, m] of this.models.entries()) {
      if (needsTools && i > 0 && !m.info.capabilities.tools) continue;
      const usable = m.profiles.filter((p) => {
        const key = `${m.ref}#${p.id}`;
        if (tried.has(key)) return false;
        if (!store) return true;
        const availability = store.availabilityWithState(p, m.model);
        if (!availability.usable) return false;
        if (availability.hasState) this.withState.add(key);
        return true;
      });
      if (usable.length === 0) continue;
      const pinned = store?.pinned(this.opts.sessionKey, m.providerName);
      this.pins.set(m.providerName, pinned);
      const chosen = usable.find((p) => p.id === pinned)
        ?? (store ? [...usable].sort((a, b) => store.lastUsed(a) - store.lastUsed(b))[0]! : usable[0]!);
      return this.candidate(m, chosen);
    }
    return undefined;
  }

  /** When nothing is usable: the candidate (not in `exclude`) whose cooldown or disable ends first. */
  probe(exclude: ReadonlySet<string>): Candidate | undefined {
    let best: { c: Candidate; until: number } | undefined;
    for (const m of this.models) {
      for (const p of m.profiles) {
        if (exclude.has(`${m.ref}#${p.id}`)) continue;
        const a = this.opts.store?.availability(p, m.model);
        const until = !a || a.usable ? 0 : a.until;
        if (!best || until < best.until) best = { c: this.candidate(m, p), until };
      }
    }
    if (best && best.until > 0) this.withState.add(best.c.key);
    return best?.c;
  }

  /** Pins the candidate's profile to the session when it is not already. */
  async use(c: Candidate): Promise<void> {
    const store = this.opts.store;
    if (!store) return;
    const pinned = this.pins.has(c.providerName) ? this.pins.get(c.providerName) : store.pinned(this.opts.sessionKey, c.providerName);
    if (pinned === c.profile.id) return;
    await store.pin(this.opts.sessionKey, c.profile);
    this.pins.set(c.providerName, c.profile.id);
  }

  /** Clears the candidate's failure streak; skipped when next() saw no stored state for it (the common case). */
  async success(c: Candidate): Promise<void> {
    if (this.withState.has(c.key) || !this.pins.has(c.providerName)) {
      await this.opts.store?.markSuccess(c.profile, c.model);
      this.withState.delete(c.key);
    } else {
      // the last success for `lurkbot auth list` (memory only)
      this.opts.store?.noteSuccess(c.profile);
    }
    this.settled = c;
  }

  async failure(c: Candidate, reason: FailureReason): Promise<void> {
    this.settled = undefined;
    const store = this.opts.store;
    if (!store) return;
    const { cooldown, profile } = await store.markFailure(c.profile, c.model, reason);
    this.withState.add(c.key);
    this.opts.log.warn({
      model: c.ref, profile: c.profile.id, reason, failures: cooldown.errorCount, cooldownUntil: new Date(cooldown.cooldownUntil).toISOString(),
      ...(profile.disabledUntil && profile.disabledUntil > store.now() ? { disabledUntil: new Date(profile.disabledUntil).toISOString() } : {}),
    }, "auth profile failed; cooling down");
  }

  /**
   * Max tokens (when the registry knows the model), thinking (when the model supports it), the
   * temperature (the run's or agent's, else the model's default; left out for a model that refuses
   * one; clamped to the range of the provider's API, temperature.ts) and how inline `<think>`
   * reasoning is handled.
   */
  requestOptions(c: Candidate): Pick<ProviderRequest, "maxTokens" | "thinking" | "temperature" | "reasoningTags" | "reasoningReplay"> {
    const wanted = this.opts.temperature ?? c.info.temperature;
    const temperature = wanted === undefined ? undefined : apiTemperature(providerApi(this.opts.config.providers, c.providerName), wanted);
    if (wanted !== undefined && (c.info.fixedTemperature || temperature !== wanted) && !this.noTemperatureLogged.has(c.ref)) {
      this.noTemperatureLogged.add(c.ref);
      if (c.info.fixedTemperature) this.opts.log.debug({ model: c.ref, temperature: wanted }, "the model takes no temperature; leaving it out");
      else this.opts.log.debug({ model: c.ref, temperature: wanted, sent: temperature }, "temperature outside the provider API's range; clamped");
    }
    return {
      ...(c.info.known ? { maxTokens: c.info.maxOutput } : {}),
      ...(this.opts.thinking && c.info.capabilities.thinking ? { thinking: this.opts.thinking } : {}),
      ...(temperature !== undefined && !c.info.fixedTemperature ? { temperature } : {}),
      // "auto" is the providers' default
      ...(c.info.reasoningTags !== "auto" ? { reasoningTags: c.info.reasoningTags } : {}),
      ...(c.info.reasoningReplay ? { reasoningReplay: true } : {}),
    };
  }

  /** The usage with its price at the candidate's model (unchanged when the price is unknown). */
  priced(c: Candidate, usage: Usage): Usage {
    const cost = usageCostUsd(usage, c.info);
    return cost === undefined ? usage : { ...usage, costUsd: cost };
  }
}
