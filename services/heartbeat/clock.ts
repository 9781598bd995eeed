/**
 * The heartbeat actor's notion of "now". Production uses the system clock; tests that run the
 * actor in-process pass their own clock to `heartbeatActor({ clock })` (no env var, no endpoint).
 */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
