/**
 * Pending system events (seed 001 §10.3: MAX_EVENTS_PER_SESSION, consecutive duplicates dropped).
 * A system inject that does not wake the agent (`wake: "next-heartbeat"`) is appended by the
 * router to the session's transcript as a `system_event` record without a run id; such records
 * after the session's last run are "pending": the next run's history shows them to the model.
 * Contract, shared by the router (writer) and the agent-runner (reader), held by the transcript
 * itself so it survives restarts and a change of the active router:
 * - the router drops an inject whose text equals the last pending event's;
 * - it stamps each pending record with `meta.pending`: its place among the session's pending
 *   events (1 for the first after a run), from the last pending record it finds;
 * - the model sees at most MAX_PENDING_SYSTEM_EVENTS of one block of pending events (the newest),
 *   preceded by one note "(N older events dropped)", N counted from `meta.pending` so events
 *   already outside the loaded history count too. The transcript keeps every record (append-only).
 */
import type { TranscriptRecord } from "../contract/index.js";

export const MAX_PENDING_SYSTEM_EVENTS = 20;

/** a system event recorded for the next run (no run has taken it) */
export function isPendingSystemEvent(r: TranscriptRecord): boolean {
  return r.kind === "system_event" && r.runId === undefined;
}

/** records the model never sees, which neither end nor split a block of pending events */
const isQuiet = (r: TranscriptRecord) => r.kind === "context_note";

const position = (r: TranscriptRecord): number | undefined => {
  const p = r.meta?.pending;
  return typeof p === "number" && Number.isSafeInteger(p) && p > 0 ? p : undefined;
};

/** The last pending event of a transcript's tail and how many events are pending (0: none). */
export function pendingTail(records: readonly TranscriptRecord[]): { last?: TranscriptRecord; count: number } {
  let last: TranscriptRecord | undefined;
  let counted = 0;
  for (let i = records.length - 1; i >= 0; i--) {
    const r = records[i]!;
    if (isQuiet(r)) continue;
    if (!isPendingSystemEvent(r)) break;
    last ??= r;
    counted++;
  }
  return last ? { last, count: Math.max(position(last) ?? 0, counted) } : { count: 0 };
}

/** The note that stands for dropped events ("(3 older events dropped)"). */
export function droppedEventsText(dropped: number): string {
  return `(${dropped} older event${dropped === 1 ? "" : "s"} dropped)`;
}

/**
 * The records as the model gets them: in each block of pending events, only the newest
 * MAX_PENDING_SYSTEM_EVENTS, after a note record saying how many older ones were dropped.
 */
export function capPendingSystemEvents(records: readonly TranscriptRecord[], max = MAX_PENDING_SYSTEM_EVENTS): readonly TranscriptRecord[] {
  const out: TranscriptRecord[] = [];
  let block: TranscriptRecord[] = [];
  const flush = () => {
    const events = block.filter(isPendingSystemEvent);
    const total = Math.max(events.length, position(events.at(-1)!) ?? 0);
    if (total <= max || events.length === 0) out.push(...block);
    else {
      const keep = new Set(events.slice(-max));
      const first = events[0]!;
      out.push({ id: `${first.id}:dropped`, ts: first.ts, kind: "system_event", text: droppedEventsText(total - keep.size) });
      out.push(...block.filter((r) => !isPendingSystemEvent(r) || keep.has(r)));
    }
    block = [];
  };
  for (const r of records) {
    if (isPendingSystemEvent(r) || (block.length > 0 && isQuiet(r))) block.push(r);
    else {
      if (block.length) flush();
      out.push(r);
    }
  }
  if (block.length) flush();
  return out;
}
