/**
 * The messages between the actor's main thread (host.ts) and the browser worker thread
 * (worker.ts), all structured clones. A call's screenshot bytes are transferred, not copied.
 * Errors cross as { code, message, details, retryable } and are rebuilt as LurkErrors, so their
 * codes reach the tool result unchanged.
 */
import { LurkError } from "../../shared/contract/index.js";
import type { BrowserConfig } from "../../shared/runtime/config-browser.js";
import type { EvaluateArgs, BrowserArgs } from "./schema.js";

/** What the browser code logs with (a pino Logger in the main thread; the worker forwards to it). */
export interface BrowserLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** The worker's start: its session's settings and what the earlier worker left behind. */
export interface WorkerInit {
  config: BrowserConfig;
  profileDir: string;
  allowPrivateHosts: readonly string[];
  /** why the last browser ended (the next start says so) */
  ended: string | undefined;
  nextTabId: number;
  /** where each Chromium's staging folder is made (`<dataDir>/browser/staging`; staging.ts) */
  stagingRoot: string;
}

export type CallWork = { tool: "browser"; args: BrowserArgs } | { tool: "browser_evaluate"; args: EvaluateArgs };

/** What a call brings besides its arguments (the actor's main thread knows it, the worker does not). */
export interface CallScope {
  /** the calling agent's workspace: downloads are saved in it, uploads read from it */
  workspace?: string;
  /** the calling agent: its downloads are kept apart from other agents' (listing, notes) */
  agentId?: string;
  /** an upload that needed a human approval (or a pre-issued token): refused without approvedOrigin */
  approvalRequired?: boolean;
  /** an approved upload: the origin the approval is bound to (the page must still be there) */
  approvedOrigin?: string;
}

export type ToWorker =
  | ({ type: "call"; id: number; work: CallWork; timeoutMs: number; imageCapBytes: number } & CallScope)
  | { type: "abort"; id: number; reason: string }
  | { type: "where"; id: number; tabId: string | undefined }
  /** where an upload would go: the tab and the origin of the element's frame */
  | { type: "uploadTarget"; id: number; tabId: string | undefined; ref: string }
  | { type: "stop"; id: number; why: string };

export interface SerializedError {
  code: LurkError["code"];
  message: string;
  details?: unknown;
  retryable: boolean;
  /** the original's stack, for the log of an unexpected (INTERNAL) failure */
  stack?: string;
}

/** The session's state after a call or event: what the next worker carries on with. */
export interface SessionState {
  /** Chromium runs or is starting */
  active: boolean;
  ended: string | undefined;
  nextTabId: number;
}

export type CallOutcome =
  | { ok: true; text: string; image?: { mime: string; bytes: Uint8Array } }
  | { ok: false; error: SerializedError };

export type FromWorker =
  | ({ type: "result"; id: number; notice: string | undefined } & CallOutcome & SessionState)
  | { type: "progress"; id: number; message: string }
  | { type: "where"; id: number; text: string }
  /** `origin` when the element was found */
  | { type: "uploadTarget"; id: number; text: string; origin?: string }
  | ({ type: "stopped"; id: number; stopped: boolean } & SessionState)
  /** Chromium stopped (idle, stop, crash) */
  | ({ type: "ended" } & SessionState)
  | { type: "log"; level: "info" | "warn"; obj: Record<string, unknown>; msg: string };

function cloneable(value: unknown): unknown {
  try {
    return structuredClone(value);
  } catch {
    return undefined;
  }
}

export function serializeError(err: unknown): SerializedError {
  const e = LurkError.from(err);
  const out: SerializedError = { code: e.code, message: e.message, retryable: e.retryable };
  if (e.details !== undefined) out.details = cloneable(e.details);
  if (e.code === "INTERNAL") {
    const stack = (err instanceof Error ? err.stack : undefined) ?? e.stack;
    if (stack) out.stack = stack;
  }
  return out;
}

export function rebuildError(s: SerializedError): LurkError {
  const e = new LurkError(s.code, s.message, { details: s.details, retryable: s.retryable });
  if (s.stack) e.stack = s.stack;
  return e;
}
