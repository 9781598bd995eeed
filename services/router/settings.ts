/**
 * Session settings set by chat commands (/model, /think, /verbose, /reasoning, /queue, /tts), stored
 * in the session entry (sessions.patch) and cached here: the active router is the only writer, so
 * a session's settings are read from the sessions actor once per term (actor.ts makes a new cache
 * when the instance takes the lease: another one may have changed them meanwhile).
 * Precedence for a run: the message's inline directive > the session's setting > config.
 */
import type { RunRequest, SessionEntry } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import type { RoutingConfig } from "../../shared/runtime/config-routing.js";
import { ensureSession } from "./ended-sessions.js";
import type { Directives } from "./commands.js";
import type { QueueSettings } from "./queue.js";
import type { Route } from "./resolve.js";

export type SessionSettings = Pick<SessionEntry, "modelOverride" | "thinking" | "verbose" | "reasoning" | "queue" | "tts">;
export type SettingsPatch = { [K in keyof SessionSettings]?: SessionSettings[K] | null };

const MAX_CACHED = 10_000;

export function pickSettings(entry: SessionEntry | null): SessionSettings {
  if (!entry) return {};
  const out: SessionSettings = {};
  if (entry.modelOverride !== undefined) out.modelOverride = entry.modelOverride;
  if (entry.thinking !== undefined) out.thinking = entry.thinking;
  if (entry.verbose !== undefined) out.verbose = entry.verbose;
  if (entry.reasoning !== undefined) out.reasoning = entry.reasoning;
  if (entry.queue !== undefined) out.queue = entry.queue;
  if (entry.tts !== undefined) out.tts = entry.tts;
  return out;
}

export class SettingsCache {
  private readonly cache = new Map<string, SessionSettings>();

  constructor(private readonly rt: ActorRuntime) {}

  /** The cached settings (undefined when not loaded yet). */
  peek(sessionKey: string): SessionSettings | undefined {
    return this.cache.get(sessionKey);
  }

  async get(sessionKey: string): Promise<SessionSettings> {
    const cached = this.cache.get(sessionKey);
    if (cached) return cached;
    const { session } = await this.rt.client.call("sessions", "get", { sessionKey });
    return this.remember(sessionKey, pickSettings(session));
  }

  /** Ensures the session exists, patches it, caches the result. */
  async patch(route: Route, patch: SettingsPatch): Promise<SessionEntry> {
    await ensureSession(this.rt, route);
    const { session } = await this.rt.client.call("sessions", "patch", { sessionKey: route.sessionKey, patch });
    this.remember(route.sessionKey, pickSettings(session));
    return session;
  }

  private remember(sessionKey: string, settings: SessionSettings): SessionSettings {
    this.cache.delete(sessionKey);
    this.cache.set(sessionKey, settings);
    if (this.cache.size > MAX_CACHED) this.cache.delete(this.cache.keys().next().value!);
    return settings;
  }
}

/** Queue settings of a message: inline /queue directive > session /queue > routing.queue. */
/** A message's queue settings: inline directive > the session's /queue > the channel's defaults (`queue.byChannel`) > `queue`. */
export function queueSettingsFor(config: RoutingConfig, session: SessionSettings, directive: Directives["queue"] | undefined, channel: string): QueueSettings {
  const base = config.queue;
  const forChannel = base.byChannel[channel] ?? {};
  const own = session.queue ?? {};
  const inline = directive && !directive.reset ? directive : {};
  return {
    mode: inline.mode ?? own.mode ?? forChannel.mode ?? base.mode,
    debounceMs: inline.debounceMs ?? own.debounceMs ?? forChannel.debounceMs ?? base.debounceMs,
    cap: inline.cap ?? own.cap ?? forChannel.cap ?? base.cap,
    drop: inline.drop ?? own.drop ?? forChannel.drop ?? base.drop,
  };
}

/** Run options of a message: inline directives > session settings. */
export function runOptionsFor(session: SessionSettings, directives: Directives): RunRequest["options"] {
  const model = directives.model === null ? undefined : directives.model ?? session.modelOverride;
  const thinking = directives.thinking ?? session.thinking;
  const verbose = directives.verbose ?? session.verbose;
  const reasoning = directives.reasoning ?? session.reasoning;
  const tts = directives.tts ?? session.tts;
  return {
    ...(model ? { model } : {}),
    ...(thinking ? { thinking } : {}),
    ...(verbose ? { verbose } : {}),
    ...(reasoning ? { reasoning } : {}),
    ...(tts ? { tts } : {}),
  };
}
