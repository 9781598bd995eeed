/**
 * `lurkbot tail [filter]`: actor events (`lurk.evt.>`) and run events (`lurk.run.evt.>`), one
 * compact line each: time, subject, kind, short summary. The filter is a subject pattern (NATS
 * wildcards) when it has '.', '*' or '>', otherwise a substring of subject and body.
 */
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { safeParseJson, subjects } from "../../shared/contract/index.js";
import { oneLine } from "./format.js";

export type TailFilter = (subject: string, body: string) => boolean;

/** NATS subject matching: `*` one token, `>` one or more trailing tokens. */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    if (p[i] === ">") return s.length > i;
    if (i >= s.length) return false;
    if (p[i] !== "*" && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}

export function makeFilter(filter: string | undefined): TailFilter {
  if (!filter) return () => true;
  if (/[.*>]/.test(filter)) return (subject) => subjectMatches(filter, subject);
  const needle = filter.toLowerCase();
  return (subject, body) => subject.toLowerCase().includes(needle) || body.toLowerCase().includes(needle);
}

const compactJson = (value: unknown, max = 100) => {
  try {
    return oneLine(JSON.stringify(value) ?? "", max);
  } catch {
    return "";
  }
};

/** kind and summary of one event body (unknown shapes are shown as JSON). */
export function summarize(subject: string, body: unknown, prefix: string): { kind: string; summary: string } {
  const b = (body ?? {}) as Record<string, any>;
  if (subject.startsWith(`${prefix}.run.evt.`) && b.event && typeof b.event === "object") {
    const e = b.event as Record<string, any>;
    const kind = String(e.kind ?? "?");
    const session = b.sessionKey ? ` [${b.sessionKey}]` : "";
    switch (kind) {
      case "run_start": return { kind, summary: `agent=${e.agentId} model=${e.model ?? "-"} trigger=${e.trigger}${session}` };
      case "message_delta":
      case "thinking_delta": return { kind, summary: JSON.stringify(oneLine(String(e.text ?? ""), 80)) };
      case "message_end": return { kind, summary: `turn ${e.turn}: ${oneLine(String(e.text ?? ""), 80)}` };
      case "tool_start": return { kind, summary: `${e.name} ${compactJson(e.args, 80)}` };
      case "tool_progress": return { kind, summary: oneLine(String(e.message ?? ""), 80) };
      case "tool_end": return { kind, summary: `${e.name} ${e.isError ? "failed" : "ok"} in ${Math.round(Number(e.durationMs ?? 0))} ms: ${oneLine(String(e.preview ?? ""), 60)}` };
      case "usage": return { kind, summary: `${e.provider}/${e.model} in=${e.usage?.input ?? 0} out=${e.usage?.output ?? 0}` };
      case "turn_start": return { kind, summary: `turn ${e.turn}` };
      case "turn_end": return { kind, summary: `turn ${e.turn} ${e.stopReason}` };
      case "done": return { kind, summary: `${e.turns} turn(s), ${e.usage?.total ?? 0} tokens${e.silent ? ", silent" : ""}: ${oneLine(String(e.text ?? ""), 70)}` };
      case "error": return { kind, summary: `${e.code}: ${oneLine(String(e.message ?? ""), 80)}` };
      default: {
        const { kind: _k, ...rest } = e;
        return { kind, summary: compactJson(rest) };
      }
    }
  }
  if (typeof b.event === "string" && typeof b.actor === "string") {
    const where = b.instance ? `${b.actor}@${b.instance.host}:${b.instance.pid}` : b.actor;
    const level = b.level && b.level !== "info" ? ` ${String(b.level).toUpperCase()}` : "";
    const data = b.data && Object.keys(b.data).length ? ` ${compactJson(b.data, 90)}` : "";
    return { kind: b.event, summary: `${where}${level}${data}` };
  }
  return { kind: typeof b.type === "string" ? b.type : "-", summary: compactJson(body) };
}

export function formatEvent(msg: { subject: string; data: Uint8Array }, prefix: string, now = new Date()): string {
  let body: unknown;
  try {
    body = safeParseJson(msg.data, { maxBytes: 1024 * 1024, maxDepth: 64 });
  } catch {
    body = { type: "(not JSON)", text: Buffer.from(msg.data).toString("utf8").slice(0, 100) };
  }
  const { kind, summary } = summarize(msg.subject, body, prefix);
  const time = now.toTimeString().slice(0, 8) + "." + String(now.getMilliseconds()).padStart(3, "0");
  return `${time} ${msg.subject} ${kind}${summary ? ` ${summary}` : ""}`;
}

/** Subscribes and prints until `signal` aborts; resolves when stopped. */
export async function tail(nc: NatsConnection, prefix: string, filter: string | undefined, write: (line: string) => void, signal: AbortSignal, onSubscribed: () => void = () => undefined): Promise<void> {
  const s = subjects(prefix);
  const match = makeFilter(filter);
  const onMsg = (err: Error | null, msg: Msg) => {
    if (err) return;
    const body = Buffer.from(msg.data).toString("utf8");
    if (!match(msg.subject, body)) return;
    write(formatEvent(msg, prefix) + "\n");
  };
  const subs = [nc.subscribe(s.eventAll, { callback: onMsg }), nc.subscribe(s.runEventAll, { callback: onMsg })];
  await nc.flush();
  onSubscribed();
  await new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
    void nc.closed().then(() => resolve());
  });
  for (const sub of subs) sub.unsubscribe();
}
