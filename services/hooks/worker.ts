/**
 * The worker entry (piscina): one hook handler invocation. Imports the handler module (afresh
 * when its file changed), builds the event and ctx the handler gets, awaits
 * `default(event, ctx)` and returns what it pushed and asked for, capped (task.ts), and for
 * `agent:bootstrap` the `event.context.bootstrapFiles` it left (as plain values). A handler
 * that throws is an outcome with `error`; the time limit and the memory cap are the pool's.
 */
import { pathToFileURL } from "node:url";
import { isBootstrapEvent, OUTCOME_LIMITS, type HookOutcome, type HookTask } from "./task.js";

type Handler = (event: unknown, ctx: unknown) => unknown;

export default async function runHook(task: HookTask): Promise<HookOutcome> {
  const messages: string[] = [];
  const runs: HookOutcome["runs"] = [];
  const logs: HookOutcome["logs"] = [];
  let dropped = 0;
  const event = {
    type: task.event.type,
    action: task.event.action,
    name: `${task.event.type}:${task.event.action}`,
    ...(task.event.sessionKey ? { sessionKey: task.event.sessionKey } : {}),
    timestamp: new Date(task.event.timestamp),
    context: task.event.context,
    messages,
  };
  const log = (level: "info" | "warn" | "error") => (...parts: unknown[]) => {
    if (logs.length >= OUTCOME_LIMITS.logs) return void dropped++;
    logs.push({ level, msg: parts.map(describe).join(" ").slice(0, OUTCOME_LIMITS.logChars) });
  };
  const ctx = {
    ...task.ctx,
    log: { info: log("info"), warn: log("warn"), error: log("error") },
    /** queues `text` as a system event in a session of this agent (default: the event's) and wakes the agent */
    runAgent(text: unknown, opts: { sessionKey?: unknown } = {}) {
      if (isBootstrapEvent(task.event)) throw new TypeError("ctx.runAgent is not available in agent:bootstrap (every run would start another)");
      if (typeof text !== "string" || text.trim() === "") throw new TypeError("ctx.runAgent(text): text must be a non-empty string");
      if (runs.length >= OUTCOME_LIMITS.runs) throw new RangeError(`ctx.runAgent: at most ${OUTCOME_LIMITS.runs} runs per event`);
      const sessionKey = typeof opts.sessionKey === "string" ? opts.sessionKey : undefined;
      runs.push({ text: text.slice(0, OUTCOME_LIMITS.runChars), ...(sessionKey ? { sessionKey } : {}) });
    },
  };
  let error: HookOutcome["error"];
  try {
    const mod = (await import(`${pathToFileURL(task.handler).href}?v=${task.version}`)) as { default?: unknown };
    const handler = mod.default;
    if (typeof handler !== "function") throw new TypeError(`${task.handler} has no default export function (export default async function (event, ctx) { … })`);
    await (handler as Handler)(event, ctx);
  } catch (err) {
    const e = err instanceof Error ? err : new Error(describe(err));
    error = { kind: "threw", message: e.message.slice(0, 2000), ...(e.stack ? { stack: e.stack.slice(0, 4000) } : {}) };
  }
  // what the handler pushed, as strings, capped (it may have pushed anything, or replaced the array)
  const pushed = Array.isArray(event.messages) ? (event.messages as unknown[]) : [];
  const out: string[] = [];
  for (const m of pushed) {
    const text = typeof m === "string" ? m : describe(m);
    if (text.trim() === "") continue;
    if (out.length >= OUTCOME_LIMITS.messages) dropped++;
    else out.push(text.slice(0, OUTCOME_LIMITS.messageChars));
  }
  const bootstrapFiles = isBootstrapEvent(task.event) && !error ? plainFiles((event.context as Record<string, unknown>).bootstrapFiles) : undefined;
  return { messages: out, runs, logs, dropped, ...(error ? { error } : {}), ...(bootstrapFiles ? { bootstrapFiles } : {}) };
}

/** the handler's list as plain values (it may hold getters, class instances, anything); not an array: [{ invalid }] for the actor to refuse */
function plainFiles(files: unknown): unknown[] {
  if (!Array.isArray(files)) return [{ invalid: "event.context.bootstrapFiles is not an array" }];
  return files.slice(0, 1000).map((f: unknown) => {
    if (f === null || typeof f !== "object") return { invalid: describe(f).slice(0, 100) };
    const { name, content, missing } = f as Record<string, unknown>;
    // null where a value is not of its type: the actor's validation names the field
    return { name: typeof name === "string" ? name : null, content: content === undefined || typeof content === "string" ? content : null, missing: missing === undefined || typeof missing === "boolean" ? missing : null };
  });
}

function describe(value: unknown): string {
  if (typeof value === "string") return value;
  if (value instanceof Error) return value.message;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
