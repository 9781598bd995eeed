/**
 * What crosses between the hooks actor and its worker: one handler invocation (HookTask) and
 * what it asked for (HookOutcome). The worker caps the outcome; the actor validates it again
 * (outcome.ts), since the handler ran in that thread and could have changed anything there.
 * No runtime imports: the worker loads this file.
 */
import type { HookSource } from "../../shared/runtime/hooks/discovery.js";

/** per invocation: messages pushed to event.messages, agent runs asked with ctx.runAgent, log lines */
export const OUTCOME_LIMITS = { messages: 10, messageChars: 4000, runs: 3, runChars: 100_000, logs: 50, logChars: 1000 } as const;

export interface HookEventData {
  type: string;
  action: string;
  sessionKey?: string;
  /** ms since epoch; the handler sees a Date */
  timestamp: number;
  context: Record<string, unknown>;
}

export interface HookTask {
  /** absolute path of the handler module */
  handler: string;
  /** the module's mtime: a changed file is imported afresh */
  version: number;
  event: HookEventData;
  ctx: {
    hook: { name: string; source: HookSource; dir: string };
    agentId: string;
    workspace: string;
    home: string;
    /** the actor's environment with hooks.entries.<name>.env over it */
    env: Record<string, string>;
  };
}

export interface HookOutcome {
  messages: string[];
  runs: Array<{ text: string; sessionKey?: string }>;
  logs: Array<{ level: "info" | "warn" | "error"; msg: string }>;
  /** "threw": the handler threw or its module did not load; "stopped": the pool ended it (time limit, memory, crash) */
  error?: { kind: "threw" | "stopped"; message: string; stack?: string };
  /** what the caps dropped, so the log can say so */
  dropped: number;
  /** agent:bootstrap only: `event.context.bootstrapFiles` as the handler left it (plain values; the actor validates) */
  bootstrapFiles?: unknown[];
}

/** the event whose handlers change `event.context.bootstrapFiles` (and may not start agent runs) */
export const isBootstrapEvent = (e: Pick<HookEventData, "type" | "action">): boolean => e.type === "agent" && e.action === "bootstrap";
