/**
 * `lurk.agent-runner.auth_state` and `lurk.agent-runner.auth_probe` (shared/contract/messages/auth-profiles.ts).
 *
 * auth_state: where the state lives decides how it is asked. Cooldowns, disables, failure counts,
 * last use and session pins are in the host's LMDB store (auth-profiles.ts), shared by that
 * host's runners; the last success and the rate-limit headers (rate-limits.ts) are in each
 * process's memory. So every instance answers, in a queue group of its own, and callers gather
 * all replies and merge them by `stateId` (a hash of the host name and the store's path), labelled
 * by host. The reply is read from the store synchronously (no provider call, no write): per model
 * provider with profiles, each profile's state; a speech provider (`speech:<provider>`, voice
 * replies' own cooldowns) only when one of its profiles has stored state. Never a key or token:
 * a profile is its id and credential kind.
 * auth_probe: one instance answers (the usual queue group); auth-probe.ts.
 */
import { createHash } from "node:crypto";
import { hostname } from "node:os";
import type { AgentRunnerAuthStateReply, AuthProfileState, AuthProviderState } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { profileStateKey, type AuthStateStore, type ProfileRef } from "./auth-profiles.js";
import { credentialKind, PROBE_TIMEOUT_MS, probeProfiles, probeTargets } from "./auth-probe.js";
import type { ProviderRegistry } from "./providers/registry.js";
import type { RateLimitBook } from "./rate-limits.js";
import { SpeechProfiles } from "./speech-profiles.js";
import type { TtsProvider } from "../../shared/contract/index.js";

const HOST = hostname();
const SPEECH_PROVIDERS: TtsProvider[] = ["openai", "elevenlabs"];

export interface AuthStateDeps {
  registry: ProviderRegistry;
  store: AuthStateStore;
  rateLimits: RateLimitBook;
  /** the speech profiles (voice replies), whose state is kept apart */
  speech?: SpeechProfiles;
}

export function serveAuthState(rt: ActorRuntime, deps: AuthStateDeps): void {
  const stateId = createHash("sha256").update(`${HOST}\n${deps.store.path}`).digest("hex").slice(0, 16);
  const speech = deps.speech ?? new SpeechProfiles(rt.config.tts, deps.registry);
  // every instance answers: its own queue group (the service's is shared by the instances)
  rt.serve("agent-runner", "auth_state", (req) => authStateReply({ ...deps, speech }, stateId, req.provider), { queue: `agent-runner-${rt.service.info().id}` });
  rt.serve("agent-runner", "auth_probe", async (req) => {
    const targets = probeTargets({ ...deps, config: rt.config }, req.provider, req.profile);
    const results = await probeProfiles({ ...deps, config: rt.config }, targets, req.timeoutMs ?? PROBE_TIMEOUT_MS, rt.signal);
    for (const r of results) {
      if (r.outcome !== "ok") rt.log.warn({ provider: r.provider, profile: r.profile, outcome: r.outcome, status: r.status, ...(r.disabledUntil ? { disabledUntil: new Date(r.disabledUntil).toISOString() } : {}) }, "auth probe: the profile failed");
    }
    return { host: HOST, results };
  });
}

export function authStateReply(deps: AuthStateDeps & { speech: SpeechProfiles }, stateId: string, only?: string): AgentRunnerAuthStateReply {
  const pins = deps.store.pinCounts();
  const providers: AuthProviderState[] = [];
  const profileState = (ref: ProfileRef, kind: AuthProfileState["kind"], withRateLimits: boolean): AuthProfileState => {
    const s = deps.store.snapshot(ref);
    const rateLimits = withRateLimits ? deps.rateLimits.get(ref.provider, ref.id) : undefined;
    return { id: ref.id, kind, ...s, pins: pins.get(profileStateKey(ref)) ?? 0, ...(rateLimits ? { rateLimits } : {}) };
  };
  for (const name of deps.registry.providerNames()) {
    if (only && only !== name) continue;
    const profiles = deps.registry.profiles(name);
    if (profiles.length === 0) continue;
    providers.push({ provider: name, profiles: profiles.map((p) => profileState(p, credentialKind(p), true)) });
  }
  for (const name of SPEECH_PROVIDERS) {
    const provider = `speech:${name}`;
    if (only && only !== provider) continue;
    let list;
    try {
      list = deps.speech.list(name);
    } catch {
      continue; // no credentials for it: no state either
    }
    const chat = name === "openai" ? deps.registry.profiles("openai") : [];
    const states = list.map((sp) => {
      const same = chat.find((p) => p.id === sp.id);
      return profileState(sp.state, same ? credentialKind(same) : "api key", false);
    });
    if (states.some((s) => s.lastUsed !== undefined || s.lastSuccess !== undefined || s.cooldowns.length > 0 || s.disableCount > 0 || s.disabledUntil !== undefined)) {
      providers.push({ provider, profiles: states });
    }
  }
  return { host: HOST, pid: process.pid, stateId, at: Date.now(), providers };
}
