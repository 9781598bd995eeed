/**
 * Progress notes of a run, for /verbose and /reasoning (RunRequest.options.verbose/.reasoning):
 * - verbose "low": each tool call is announced as a one-line note (tool name + an argument
 *   summary, secrets redacted) when it starts; "high" adds a one-line result note at its end;
 * - reasoning "on" / "stream": the model's thinking of each turn is delivered as its own note
 *   ("💭 Reasoning: …") once the turn's model call ended (no channel streams it separately).
 * Notes are outbound messages (kind "notice", `note` set, empty `replyTo` so no client takes
 * one for the answer) to the run's origin, published in order on the OUTBOUND stream with a
 * Nats-Msg-Id derived from the run and the tool call / turn: a resumed or redelivered run
 * never sends one twice (the stream's duplicate window, then the channel's sent-ledger).
 * `settle` (awaited by finishRun, through the run's events, before the reply goes out) flushes
 * and waits for them, so every note is on the stream before the reply. A note that cannot be
 * published is logged and skipped: notes never fail a run.
 */
import { createHash } from "node:crypto";
import type { OutboundMessage, RunRequest } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { redactSecrets, type Logger } from "../../shared/runtime/logger.js";
import type { RunEventInput, RunEventObserver, RunEvents } from "./events.js";

const ARG_SUMMARY_CHARS = 120;
const RESULT_SUMMARY_CHARS = 160;
const REASONING_CHARS = 3_500;
/** argument keys that say best what a call does, in order of preference */
const MAIN_ARG_KEYS = ["command", "cmd", "path", "file", "url", "query", "q", "pattern", "task", "prompt", "message", "text", "name", "id"];
const SECRET_KEY = /(key|token|secret|password|passwd|auth|credential|cookie)/i;
const SECRET_PATTERNS: Array<[RegExp, string]> = [
  [/\b(sk|pk|rk)-[A-Za-z0-9_-]{8,}/g, "[redacted]"],
  [/\b(xox[abposr]|xapp)-[A-Za-z0-9-]{8,}/g, "[redacted]"],
  [/\b(gh[pousr]_|github_pat_)[A-Za-z0-9_]{8,}/g, "[redacted]"],
  [/\b(AKIA|ASIA)[A-Z0-9]{12,}/g, "[redacted]"],
  [/\bBearer\s+[A-Za-z0-9._~+/=-]{8,}/gi, "Bearer [redacted]"],
  [/\b([A-Za-z_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD)[A-Za-z_]*)=("[^"]*"|'[^']*'|\S+)/gi, "$1=[redacted]"],
  [/(--?(?:api-?key|token|secret|password|passwd|auth)[= ])\S+/gi, "$1[redacted]"],
  [/(\/\/[^/\s:@]+:)[^@\s/]+@/g, "$1[redacted]@"],
];

type NoteKind = NonNullable<OutboundMessage["note"]>;

/** Starts the run's notes when its options ask for any; a no-op otherwise. */
export function attachRunNotes(rt: ActorRuntime, req: RunRequest, events: RunEvents, log: Logger): void {
  const verbose = req.options.verbose ?? "off";
  const reasoning = req.options.reasoning ?? "off";
  if (!req.deliver || !req.origin || (verbose === "off" && reasoning === "off")) return;
  events.addObserver(new RunNotes(rt, req, log, verbose, reasoning !== "off"));
}

class RunNotes implements RunEventObserver {
  private chain: Promise<void> = Promise.resolve();
  private thinking: { turn: number; text: string } | undefined;
  private sent = 0;

  constructor(
    private readonly rt: ActorRuntime,
    private readonly req: RunRequest,
    private readonly log: Logger,
    private readonly verbose: "off" | "low" | "high",
    private readonly reasoning: boolean,
  ) {}

  observe(event: RunEventInput): void {
    switch (event.kind) {
      case "thinking_delta":
        if (!this.reasoning) return;
        if (this.thinking && this.thinking.turn !== event.turn) this.flushThinking();
        this.thinking ??= { turn: event.turn, text: "" };
        this.thinking.text += event.text;
        return;
      case "provider_switch":
        this.thinking = undefined; // the turn is asked again: its thinking comes again
        return;
      case "message_end":
      case "turn_end":
        this.flushThinking();
        return;
      case "tool_start":
        this.flushThinking();
        if (this.verbose !== "off") this.publish("tool", `tool:${event.toolCallId}`, `🔧 ${event.name}${argSummary(event.args)}`);
        return;
      case "tool_end":
        if (this.verbose === "high") this.publish("tool", `tool-result:${event.toolCallId}`, `↳ ${event.name} ${event.isError ? "failed" : "ok"}${resultSummary(event.preview)}`);
        return;
      default:
    }
  }

  settle(): Promise<void> {
    this.flushThinking();
    return this.chain;
  }

  private flushThinking(): void {
    const t = this.thinking;
    this.thinking = undefined;
    const text = t?.text.trim();
    if (!t || !text) return;
    const body = text.length > REASONING_CHARS ? `${text.slice(0, REASONING_CHARS)}…` : text;
    this.publish("reasoning", `reasoning:${t.turn}`, `💭 Reasoning:\n${scrub(body)}`);
  }

  /** Queues one note; notes go out one after the other, in the order of the events. */
  private publish(note: NoteKind, key: string, text: string): void {
    const { rt, req } = this;
    const origin = req.origin!;
    const id = `${req.runId}:note:${createHash("sha256").update(key).digest("hex").slice(0, 16)}`;
    const message: OutboundMessage = {
      type: "lurk.outbound.message.v1", id, ts: Date.now(), runId: req.runId, sessionKey: req.sessionKey, causationId: req.id,
      channel: origin.channel, conversation: origin.conversation, kind: "notice", note, replyTo: [], text, attachments: [],
      ...(origin.accountId ? { accountId: origin.accountId } : {}),
      ...(origin.peer ? { peer: origin.peer } : {}),
    };
    this.sent++;
    const n = this.sent;
    this.chain = this.chain.then(() => rt.js.publish(rt.subjects.outbound(origin.channel, origin.conversation), JSON.stringify(message), { msgID: id }))
      .then(() => undefined, (err) => this.log.warn({ err, note, n }, "could not publish a run note; skipped"));
  }
}

/** ": <the call's main argument>" on one line, secrets redacted; "" when there is none. */
export function argSummary(args: Record<string, unknown>): string {
  const safe = redactSecrets(args);
  const entries = Object.entries(safe).filter(([k]) => !k.startsWith("_") || k === "_preview");
  const main = MAIN_ARG_KEYS.map((k) => entries.find(([key]) => key === k)).find((e) => e && typeof e[1] === "string" && !SECRET_KEY.test(e[0]));
  let text: string;
  if (main) text = main[1] as string;
  else {
    const shown = entries.map(([k, v]) => [k, SECRET_KEY.test(k) ? "[redacted]" : v] as const);
    if (shown.length === 0) return "";
    text = shown.map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(" ");
  }
  return `: ${oneLine(scrub(text), ARG_SUMMARY_CHARS)}`;
}

function resultSummary(preview: string): string {
  const text = oneLine(scrub(redactSecrets(preview)), RESULT_SUMMARY_CHARS);
  return text ? `: ${text}` : "";
}

function scrub(text: string): string {
  return SECRET_PATTERNS.reduce((t, [re, to]) => t.replace(re, to), text);
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
