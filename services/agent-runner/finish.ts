/**
 * The end of a run: the run_marker record with the usage (one append) and the reply delivery
 * (JetStream, `Nats-Msg-Id` = replyDeliveryId(runId), so a repeated delivery collapses) go out
 * together; the terminal event follows once both are done. The router starts a session's next
 * run only after that event, so the next run finds the whole run in the history. A run found
 * finished (marker present) is only re-delivered: it re-publishes its reply (the stream drops
 * the duplicate), never a second terminal event. The price of not waiting for the marker before
 * delivering: if the runner dies in the millisecond between the two, the redelivered run asks
 * the model again and stores that answer, while the user keeps the first (the duplicate reply
 * is dropped by the stream within its duplicate window).
 * A voice reply's audio (voice-reply.ts) goes with the reply as an attachment; the marker keeps
 * it (meta.attachments), so a re-published reply carries the same audio.
 * The marker's append carries the run's usage: the total (the session's counters) and its parts
 * by model and purpose (the usage ledger prices each at its own model); a retried append of the
 * same marker adds nothing, so a run end delivered twice is counted once.
 */
import {
  attachmentSchema, isSilentReply, MAX_USAGE_PARTS, LurkError, recordIds, replyDeliveryId, type Attachment, type ErrorCode, type UsageUpdate, type OutboundMessage, type RunRequest, type TranscriptRecord, type Usage, type UsagePart,
} from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { runEndFromRecords } from "../../shared/runtime/run-ends.js";
import type { RunEvents } from "./events.js";
import { NO_MODEL_TEXT } from "./providers/registry.js";

const MAX_REPLY_CHARS = 200_000;

export interface Outcome {
  status: "done" | "error" | "aborted";
  /** the reply (done) or the user-facing error text */
  text: string;
  error?: LurkError;
  turns: number;
  usage: Usage;
  /** `usage` by model and purpose (usage-tally.ts) */
  parts?: UsagePart[];
  model?: string;
  provider?: string;
  /** sent with the reply: a voice reply's audio (voice-reply.ts) */
  attachments?: Attachment[];
  /** what the voice reply spoke, or why it could not (kept in the end marker's meta) */
  voice?: Record<string, unknown>;
}

/** An empty reply, or a silent one (seeds 5.6: ends with NO_REPLY or starts with /NO_REPLY): not delivered. */
export function isSilent(text: string): boolean {
  return text.trim() === "" || isSilentReply(text);
}

/** What the user is told when a run fails. */
export function errorText(err: LurkError): string {
  if (err.code === "NO_MODEL") return NO_MODEL_TEXT;
  const hint: Partial<Record<ErrorCode, string>> = {
    PROVIDER_AUTH: "Check the provider's API key (e.g. OPENAI_API_KEY) and restart with `npx lurkbot start`.",
    PROVIDER_BILLING: "Check the provider account's billing or quota.",
    PROVIDER_RATE_LIMIT: "The provider is rate-limiting requests; try again in a minute.",
    PROVIDER_OVERLOADED: "The provider is overloaded; try again in a minute.",
    PROVIDER_CONTEXT_OVERFLOW: "The conversation is too long for the model; start a new session with /new.",
    PROVIDER_TIMEOUT: "The model did not answer in time; try again.",
    TIMEOUT: "The run took longer than its time limit.",
  };
  return `Sorry, I could not answer (${err.code}): ${err.message}${hint[err.code] ? `\n${hint[err.code]}` : ""}`;
}

/** A done run whose reply is silent and carries no attachment (a voice reply's audio): nothing to deliver. */
function silentDone(status: Outcome["status"], text: string, attachments: readonly Attachment[]): boolean {
  return status === "done" && isSilent(text) && attachments.length === 0;
}

function deliverable(req: RunRequest, status: Outcome["status"], text: string, attachments: readonly Attachment[]): boolean {
  return req.deliver && !!req.origin && status !== "aborted" && !silentDone(status, text, attachments);
}

/**
 * The inbound message ids of the inputs the run took from its mailbox (messages steered into it
 * or taken as follow-ups: the router handed them over), from the run's input records' sourceId.
 */
export function handedMessageIds(runId: string, records: readonly TranscriptRecord[]): string[] {
  const prefix = recordIds.mailboxInput(runId, "");
  const ids: string[] = [];
  for (const r of records) {
    const sourceId = r.meta?.sourceId;
    if (r.id.startsWith(prefix) && typeof sourceId === "string" && !ids.includes(sourceId)) ids.push(sourceId);
  }
  return ids;
}

/**
 * The run's reply (or error) to its origin. It answers the origin's messages and those the run
 * took from its mailbox (`handed`), so a client waiting for an answer to a steered message gets it.
 */
export async function publishReply(rt: ActorRuntime, req: RunRequest, kind: "reply" | "error", text: string, errorCode?: string, handed: readonly string[] = [], attachments: Attachment[] = []): Promise<void> {
  const origin = req.origin!;
  const replyTo = [...origin.messageIds, ...handed.filter((id) => !origin.messageIds.includes(id))].slice(0, 1000);
  const body = text.length > MAX_REPLY_CHARS ? `${text.slice(0, MAX_REPLY_CHARS)}\n[reply truncated]` : text;
  const id = replyDeliveryId(req.runId);
  const message: OutboundMessage = {
    type: "lurk.outbound.message.v1", id, ts: Date.now(), runId: req.runId, sessionKey: req.sessionKey, causationId: req.id,
    channel: origin.channel, conversation: origin.conversation, kind, replyTo, text: body, attachments,
    ...(origin.accountId ? { accountId: origin.accountId } : {}),
    ...(origin.peer ? { peer: origin.peer } : {}),
    ...(errorCode ? { errorCode } : {}),
  };
  await rt.js.publish(rt.subjects.outbound(origin.channel, origin.conversation), JSON.stringify(message), { msgID: id });
}

export interface FinishDeps {
  rt: ActorRuntime;
  req: RunRequest;
  events: RunEvents;
  log: Logger;
  append(records: TranscriptRecord[], usage?: UsageUpdate): Promise<void>;
  /** the last delivery of the request: deliver even when the marker cannot be written */
  bestEffort: boolean;
  /** acks the run's request message (the consumer's ackNow): called right before the terminal event, so both leave in one socket write */
  ack(): void;
  /** the inbound message ids of the inputs the run took from its mailbox (handedMessageIds) */
  handed?(): string[];
}

/** Throws when the marker or the reply could not be written (the run is then redelivered). */
export async function finishRun(deps: FinishDeps, outcome: Outcome): Promise<void> {
  const { rt, req, events } = deps;
  await events.settleObservers(); // /verbose and /reasoning notes (run-notes.ts) reach the stream before the reply
  const kind = outcome.status === "done" ? "reply" : "error";
  const attachments = outcome.attachments ?? [];
  const silent = silentDone(outcome.status, outcome.text, attachments);
  const usage = outcome.model && outcome.provider && outcome.usage.total + outcome.usage.input + outcome.usage.output > 0
    ? { usage: outcome.usage, model: outcome.model, provider: outcome.provider, ...(outcome.parts?.length ? { parts: outcome.parts.slice(0, MAX_USAGE_PARTS) } : {}) } : undefined;
  const marker = deps.append([{
    id: recordIds.marker(req.runId, outcome.status), ts: Date.now(), runId: req.runId, kind: "run_marker", runStatus: outcome.status, text: outcome.text,
    meta: {
      replyKind: kind, silent, turns: outcome.turns, ...(outcome.error ? { errorCode: outcome.error.code } : {}),
      ...(usage ? { usage: outcome.usage } : {}), // the whole run's, for a reader of its end that got only its newest records
      ...(attachments.length > 0 ? { attachments } : {}), ...(outcome.voice ? { voice: outcome.voice } : {}),
    },
  }], usage).catch((err) => {
    // a retryable failure is retried by redelivery; a permanent one (or the last try) must not cost the reply
    if (!deps.bestEffort && !(LurkError.is(err) && !err.retryable)) throw err;
    deps.log.error({ err }, "could not write the run's end marker; delivering anyway");
  });
  let deliveryError: unknown;
  const delivery = deliverable(req, outcome.status, outcome.text, attachments)
    ? publishReply(rt, req, kind, outcome.text, outcome.error?.code, deps.handed?.() ?? [], attachments).catch((err) => void (deliveryError = err))
    : Promise.resolve();
  // a marker that could not be written fails the finish (redelivery) once the delivery settled
  await Promise.all([marker.finally(() => delivery), delivery]);
  // finished and stored: the request's ack goes in the terminal event's socket write
  if (deliveryError === undefined) deps.ack();
  events.emit({ kind: "run_end", turns: outcome.turns });
  if (outcome.status === "done") events.emit({ kind: "done", text: outcome.text, turns: outcome.turns, usage: outcome.usage, silent });
  else events.emit({ kind: "error", code: outcome.error?.code ?? "INTERNAL", message: outcome.error?.message ?? outcome.text, retryable: outcome.error?.retryable ?? false });
  // the marker is written: a redelivery only re-publishes the reply
  if (deliveryError !== undefined) throw deliveryError;
}

/** A finished run delivered again: re-publish its reply (the stream drops the duplicate). */
export async function replayFinished(rt: ActorRuntime, req: RunRequest, records: TranscriptRecord[], log: Logger): Promise<void> {
  const end = runEndFromRecords(records);
  if (!end) return;
  const text = end.text ?? "";
  const attachments = end.attachments;
  log.info({ status: end.status }, "run already finished; re-publishing its reply only");
  if (!deliverable(req, end.status, text, attachments)) return;
  await publishReply(rt, req, end.status === "done" ? "reply" : "error", text, end.errorCode, handedMessageIds(req.runId, records), attachments);
}


