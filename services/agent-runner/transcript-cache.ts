/**
 * The runner's cache of recent transcripts, so a run asks the sessions actor only for records it
 * has not seen (`sessions.begin` with `known`). The sessions actor stays the truth: a different
 * session id (a reset) or a gap larger than the history limit replaces the cached records.
 * Least recently used sessions are dropped beyond `maxSessions`.
 *
 * `trimIdle()` (called when the actor goes idle) drops every entry except those a run is using
 * right now: between `known()` (which told sessions.begin "send me only what is new") and
 * `merge()` the entry must stay, or the run would see only the new records. A `known()` that is
 * never followed by `merge()` (begin failed) stops protecting its entry after PENDING_MAX_MS.
 */
import type { TranscriptRecord } from "../../shared/contract/index.js";

interface Entry {
  sessionId: string;
  records: TranscriptRecord[];
}

/** how long a known() without its merge() keeps the entry from being trimmed */
const PENDING_MAX_MS = 10 * 60_000;

export class TranscriptCache {
  private readonly entries = new Map<string, Entry>();
  /** sessionKey -> when known() answered with this entry (runs between known() and merge()) */
  private readonly pending = new Map<string, number>();

  constructor(private readonly historyLimit: number, private readonly maxSessions = 512) {}

  /** What to tell `sessions.begin` about this session. */
  known(sessionKey: string): { sessionId: string; lastSeq: number } | undefined {
    const entry = this.entries.get(sessionKey);
    if (!entry) return undefined;
    this.pending.set(sessionKey, Date.now());
    return { sessionId: entry.sessionId, lastSeq: entry.records.at(-1)?.seq ?? -1 };
  }

  /** Merges a begin reply and returns the session's recent records, oldest first. */
  merge(sessionKey: string, sessionId: string, records: TranscriptRecord[], incremental: boolean): TranscriptRecord[] {
    const previous = this.entries.get(sessionKey);
    this.pending.delete(sessionKey);
    const base = incremental && previous?.sessionId === sessionId ? previous.records : [];
    const merged = base.concat(records);
    const trimmed = merged.length > this.historyLimit ? merged.slice(merged.length - this.historyLimit) : merged;
    this.entries.delete(sessionKey);
    this.entries.set(sessionKey, { sessionId, records: trimmed });
    if (this.entries.size > this.maxSessions) this.entries.delete(this.entries.keys().next().value!);
    return trimmed;
  }

  forget(sessionKey: string): void {
    this.entries.delete(sessionKey);
    this.pending.delete(sessionKey);
  }

  /** Drops the entries no run is using (see above); returns how many were dropped. */
  trimIdle(now = Date.now()): number {
    let dropped = 0;
    for (const key of [...this.entries.keys()]) {
      const since = this.pending.get(key);
      if (since !== undefined && now - since < PENDING_MAX_MS) continue;
      this.entries.delete(key);
      this.pending.delete(key);
      dropped++;
    }
    return dropped;
  }

  get size(): number {
    return this.entries.size;
  }
}
