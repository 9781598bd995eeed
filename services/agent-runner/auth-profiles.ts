/**
 * Auth profile state (seed 001 §3.9), in LMDB at `<dataDir>/agent-runner/auth-state`, shared by
 * every agent-runner process of the host and surviving restarts:
 *  - per profile: when it was last picked (least recently used goes first), and a disable after
 *    billing/auth failures: min(24 h, 5 h × 2^(n-1)) for the n-th one in a row (the key is broken
 *    for every model; replacing the key, which changes the fingerprint, clears it);
 *  - per profile AND model: a cooldown after the n-th consecutive failure of min(1 h, 60 s × 5^(n-1))
 *    and failure counts by reason; a success clears the streak;
 *  - per session and provider: the pinned profile (a session keeps its key while it works).
 * Writes are LMDB transactions (safe across processes); reads are synchronous.
 * Kept in this process's memory only: each profile's last success (noteSuccess; a write per
 * successful call would cost the loop an LMDB transaction). `snapshot()` reads a profile's whole
 * state for `lurk.agent-runner.auth_state` (auth-state-serve.ts).
 */
import { mkdirSync } from "node:fs";
import { open, type Database, type RootDatabase } from "lmdb";

export const FAILURE_REASONS = ["rate_limit", "overloaded", "auth", "billing", "timeout", "other"] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

export const COOLDOWN_BASE_MS = 60_000;
export const COOLDOWN_MAX_MS = 3_600_000;
export const DISABLE_BASE_MS = 5 * 3_600_000;
export const DISABLE_MAX_MS = 24 * 3_600_000;
/** pins not written for this long are dropped when the store opens */
export const PIN_TTL_MS = 30 * 24 * 3_600_000;

/** The seed's calculate_cooldown_ms: min(1 h, 60 s × 5^(n-1)) after the n-th consecutive failure. */
export function cooldownMs(errorCount: number): number {
  return Math.min(COOLDOWN_MAX_MS, COOLDOWN_BASE_MS * 5 ** Math.max(0, errorCount - 1));
}

/** How long the n-th billing/auth failure in a row disables a profile: min(24 h, 5 h × 2^(n-1)). */
export function disableMs(count: number): number {
  return Math.min(DISABLE_MAX_MS, DISABLE_BASE_MS * 2 ** Math.max(0, count - 1));
}

export interface ProfileState {
  fingerprint: string;
  lastUsed?: number;
  disabledUntil?: number;
  disabledReason?: FailureReason;
  /** billing/auth failures in a row */
  disableCount: number;
}

export interface ModelCooldown {
  fingerprint: string;
  /** consecutive failures */
  errorCount: number;
  cooldownUntil: number;
  lastFailureAt: number;
  lastReason: FailureReason;
  failureCounts: Partial<Record<FailureReason, number>>;
}

export interface ProfileRef {
  provider: string;
  id: string;
  fingerprint: string;
}

export type Availability =
  | { usable: true }
  | { usable: false; until: number; reason: FailureReason; disabled: boolean };

/** Availability plus whether a success must clear stored state (a failure streak or a disable count). */
export type AvailabilityWithState = Availability & { hasState: boolean };

const profileKey = (p: Pick<ProfileRef, "provider" | "id">) => `${p.provider}\u0000${p.id}`;
/** the key of pinCounts() */
export const profileStateKey = profileKey;
const cooldownKey = (p: Pick<ProfileRef, "provider" | "id">, model: string) => `${profileKey(p)}\u0000${model}`;
const pinKey = (sessionKey: string, provider: string) => `${sessionKey}\u0000${provider}`;

/** A profile's whole state, for the operator (never the key: only what the store keeps). */
export interface ProfileSnapshot {
  lastUsed?: number;
  lastSuccess?: number;
  disabledUntil?: number;
  disabledReason?: FailureReason;
  disableCount: number;
  cooldowns: Array<{ model: string; until: number; reason: FailureReason; consecutive: number; lastFailureAt: number; failureCounts: Partial<Record<FailureReason, number>> }>;
  failureCounts: Partial<Record<FailureReason, number>>;
}

export class AuthStateStore {
  /** `provider\0id` -> this process's last successful call (memory only) */
  private readonly successes = new Map<string, number>();
  private readonly root: RootDatabase;
  private readonly profilesDb: Database<ProfileState, string>;
  private readonly cooldownsDb: Database<ModelCooldown, string>;
  private readonly pinsDb: Database<{ profileId: string; at: number }, string>;

  constructor(readonly path: string, readonly now: () => number = Date.now) {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    this.root = open({ path, compression: false });
    this.profilesDb = this.root.openDB({ name: "profiles" });
    this.cooldownsDb = this.root.openDB({ name: "cooldowns" });
    this.pinsDb = this.root.openDB({ name: "pins" });
  }

  /** The profile's state, or undefined when none is stored for its current key. */
  profile(p: ProfileRef): ProfileState | undefined {
    const s = this.profilesDb.get(profileKey(p));
    return s && s.fingerprint === p.fingerprint ? s : undefined;
  }

  cooldown(p: ProfileRef, model: string): ModelCooldown | undefined {
    const c = this.cooldownsDb.get(cooldownKey(p, model));
    return c && c.fingerprint === p.fingerprint ? c : undefined;
  }

  /** Whether the profile may be used for the model now (not disabled, not cooling down). */
  availability(p: ProfileRef, model: string): Availability {
    const { hasState: _, ...availability } = this.availabilityWithState(p, model);
    return availability;
  }

  /** availability() and whether state is stored for the pair, from one read of each record. */
  availabilityWithState(p: ProfileRef, model: string): AvailabilityWithState {
    const now = this.now();
    const s = this.profile(p);
    const c = this.cooldown(p, model);
    const hasState = c !== undefined || (s?.disableCount ?? 0) > 0;
    if (s?.disabledUntil && s.disabledUntil > now) return { usable: false, until: s.disabledUntil, reason: s.disabledReason ?? "auth", disabled: true, hasState };
    if (c && c.cooldownUntil > now) return { usable: false, until: c.cooldownUntil, reason: c.lastReason, disabled: false, hasState };
    return { usable: true, hasState };
  }

  lastUsed(p: ProfileRef): number {
    return this.profile(p)?.lastUsed ?? 0;
  }

  pinned(sessionKey: string, provider: string): string | undefined {
    return this.pinsDb.get(pinKey(sessionKey, provider))?.profileId;
  }

  /** Pins the profile to the session and marks it used now (the LRU order). */
  async pin(sessionKey: string, p: ProfileRef): Promise<void> {
    const now = this.now();
    await this.root.transaction(() => {
      void this.pinsDb.put(pinKey(sessionKey, p.provider), { profileId: p.id, at: now });
      const s = this.profile(p) ?? { fingerprint: p.fingerprint, disableCount: 0 };
      void this.profilesDb.put(profileKey(p), { ...s, lastUsed: now });
    });
  }

  /** Records a failure of the profile on the model; returns the new state. */
  async markFailure(p: ProfileRef, model: string, reason: FailureReason): Promise<{ cooldown: ModelCooldown; profile: ProfileState }> {
    const now = this.now();
    let result!: { cooldown: ModelCooldown; profile: ProfileState };
    await this.root.transaction(() => {
      const prev = this.cooldown(p, model);
      const errorCount = (prev?.errorCount ?? 0) + 1;
      const failureCounts = { ...(prev?.failureCounts ?? {}) };
      failureCounts[reason] = (failureCounts[reason] ?? 0) + 1;
      const cooldown: ModelCooldown = { fingerprint: p.fingerprint, errorCount, cooldownUntil: now + cooldownMs(errorCount), lastFailureAt: now, lastReason: reason, failureCounts };
      let profile = this.profile(p) ?? { fingerprint: p.fingerprint, disableCount: 0 };
      if (reason === "billing" || reason === "auth") {
        const disableCount = profile.disableCount + 1;
        profile = { ...profile, disableCount, disabledUntil: now + disableMs(disableCount), disabledReason: reason };
        void this.profilesDb.put(profileKey(p), profile);
      }
      void this.cooldownsDb.put(cooldownKey(p, model), cooldown);
      result = { cooldown, profile };
    });
    return result;
  }

  /** A success: the model's failure streak and a billing/auth disable end (no write when there is none). */
  async markSuccess(p: ProfileRef, model: string): Promise<void> {
    this.noteSuccess(p);
    const c = this.cooldown(p, model);
    const s = this.profile(p);
    const clearProfile = s && (s.disableCount > 0 || s.disabledUntil !== undefined);
    if (!c && !clearProfile) return;
    await this.root.transaction(() => {
      if (c) void this.cooldownsDb.remove(cooldownKey(p, model));
      if (clearProfile) {
        const { disabledUntil: _u, disabledReason: _r, ...rest } = s;
        void this.profilesDb.put(profileKey(p), { ...rest, disableCount: 0 });
      }
    });
  }

  /** A successful call with the profile (memory only: no write). */
  noteSuccess(p: Pick<ProfileRef, "provider" | "id">): void {
    this.successes.set(profileKey(p), this.now());
  }

  /**
   * Disables the profile for every model as an auth or billing failure of a call does (the n-th in
   * a row: min(24 h, 5 h × 2^(n-1))), without a model's cooldown: `lurkbot auth probe` found the
   * key refused. Returns the disable's end.
   */
  async markDisabled(p: ProfileRef, reason: "auth" | "billing"): Promise<number> {
    const now = this.now();
    let until = now;
    await this.root.transaction(() => {
      const prev = this.profile(p) ?? { fingerprint: p.fingerprint, disableCount: 0 };
      const disableCount = prev.disableCount + 1;
      until = now + disableMs(disableCount);
      void this.profilesDb.put(profileKey(p), { ...prev, disableCount, disabledUntil: until, disabledReason: reason });
    });
    return until;
  }

  /** The profile's stored state (its current key's only), every model's cooldown record and this process's last success. */
  snapshot(p: ProfileRef): ProfileSnapshot {
    const s = this.profile(p);
    const prefix = cooldownKey(p, "");
    const cooldowns: ProfileSnapshot["cooldowns"] = [];
    const failureCounts: Partial<Record<FailureReason, number>> = {};
    for (const { key, value } of this.cooldownsDb.getRange({ start: prefix })) {
      if (!key.startsWith(prefix)) break;
      if (value.fingerprint !== p.fingerprint) continue;
      cooldowns.push({ model: key.slice(prefix.length), until: value.cooldownUntil, reason: value.lastReason, consecutive: value.errorCount, lastFailureAt: value.lastFailureAt, failureCounts: { ...value.failureCounts } });
      for (const [reason, n] of Object.entries(value.failureCounts) as Array<[FailureReason, number]>) failureCounts[reason] = (failureCounts[reason] ?? 0) + n;
    }
    const lastSuccess = this.successes.get(profileKey(p));
    return {
      ...(s?.lastUsed !== undefined ? { lastUsed: s.lastUsed } : {}),
      ...(lastSuccess !== undefined ? { lastSuccess } : {}),
      ...(s?.disabledUntil !== undefined ? { disabledUntil: s.disabledUntil } : {}),
      ...(s?.disabledReason !== undefined ? { disabledReason: s.disabledReason } : {}),
      disableCount: s?.disableCount ?? 0,
      cooldowns,
      failureCounts,
    };
  }

  /** Sessions pinned to each profile, by `provider\0id` (one pass over the pins). */
  pinCounts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const { key, value } of this.pinsDb.getRange()) {
      const provider = key.slice(key.lastIndexOf("\u0000") + 1);
      const k = profileKey({ provider, id: value.profileId });
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    return counts;
  }

  /** Forgets a profile's disable and every model's cooldown of it (a new login); returns whether there was any. */
  async clearProfile(provider: string, id: string): Promise<boolean> {
    const key = profileKey({ provider, id });
    const prefix = cooldownKey({ provider, id }, "");
    let cleared = false;
    await this.root.transaction(() => {
      const state = this.profilesDb.get(key);
      if (state && (state.disableCount > 0 || state.disabledUntil !== undefined)) {
        const { disabledUntil: _u, disabledReason: _r, ...rest } = state;
        void this.profilesDb.put(key, { ...rest, disableCount: 0 });
        cleared = true;
      }
      for (const { key: k } of this.cooldownsDb.getRange({ start: prefix })) {
        if (!k.startsWith(prefix)) break;
        void this.cooldownsDb.remove(k);
        cleared = true;
      }
    });
    return cleared;
  }

  /** Drops pins older than PIN_TTL_MS; returns how many. */
  async prunePins(): Promise<number> {
    const cutoff = this.now() - PIN_TTL_MS;
    let n = 0;
    await this.root.transaction(() => {
      for (const { key, value } of this.pinsDb.getRange()) {
        if (value.at < cutoff) {
          void this.pinsDb.remove(key);
          n++;
        }
      }
    });
    return n;
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
