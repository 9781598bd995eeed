/**
 * Hook event names (seeds 001 §8.3): `<type>:<action>`, e.g. `command:new`. A hook's HOOK.md
 * lists the events it wants; `command` or `command:*` takes every event of that type.
 */
export const HOOK_EVENT_TYPES = ["command", "session", "agent", "gateway"] as const;
export type HookEventType = (typeof HOOK_EVENT_TYPES)[number];

/**
 * The events LurkBot fires (commands: any chat command the router handles, as `command:<name>`).
 * `agent:bootstrap` is the one whose handlers change something in place: the run's bootstrap
 * files (`event.context.bootstrapFiles`) before they go into its system prompt.
 */
export const KNOWN_HOOK_EVENTS = ["command:<name>", "session:start", "session:reset", "agent:bootstrap", "agent:run_end", "gateway:startup"] as const;

/**
 * Extra context a hook may ask for in its HOOK.md (`metadata.lurkbot.context`); the actor adds it
 * only for the hooks that ask. `previousMessages`: on events with a `previousSessionId` (`/new`,
 * `/reset`, `session:reset`), the ended transcript's last user and assistant text messages.
 */
export const HOOK_CONTEXT_KEYS = ["previousMessages"] as const;
export type HookContextKey = (typeof HOOK_CONTEXT_KEYS)[number];

const PATTERN_RE = /^([a-z]+)(?::([a-z0-9_*-]{1,64}))?$/;

/** Why an event pattern from a HOOK.md is not usable, or undefined when it is. */
export function eventPatternProblem(pattern: string): string | undefined {
  const m = PATTERN_RE.exec(pattern);
  if (!m) return `"${pattern}" is not an event name (write type:action, e.g. command:new)`;
  if (!(HOOK_EVENT_TYPES as readonly string[]).includes(m[1]!)) return `"${pattern}": unknown event type "${m[1]}" (known: ${HOOK_EVENT_TYPES.join(", ")})`;
  return undefined;
}

/** Whether a hook listening to `patterns` takes the event `name` (`type:action`). */
export function hookWants(patterns: readonly string[], name: string): boolean {
  const type = name.slice(0, name.indexOf(":"));
  return patterns.some((p) => p === name || p === type || p === `${type}:*`);
}

/** Whether any of `patterns` could take an event of `type` (the actor subscribes only to what some hook wants). */
export function wantsType(patterns: readonly string[], type: HookEventType, action?: string): boolean {
  return patterns.some((p) => p === type || p === `${type}:*` || (action !== undefined ? p === `${type}:${action}` : p.startsWith(`${type}:`)));
}
