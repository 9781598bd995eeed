/**
 * The runner's cache of recent transcripts, so a run asks the sessions actor only for records it
 * has not seen (`sessions.begin` with `known`). The sessions actor stays the truth: a different
 * session id (a reset) or a gap larger than the history limit replaces the cached records.
 * Least recently used sessions are dropped beyond `maxSessions`.
 */
import type { TranscriptRecord } from "../../shared/contract/index.js";

interface Entry {
  sessionId: string;
  records: TranscriptRecord[];
}

export class TranscriptCache {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly historyLimit: number, private readonly maxSessions = 512) {}

  /** What to tell `sessions.begin` about this session. */
  known(sessionKey: string): { sessionId: string; lastSeq: number } | undefined {
    const entry = this.entries.get(sessionKey);
    if (!entry) return undefined;
    return { sessionId: entry.sessionId, lastSeq: entry.records.at(-1)?.seq ?? -1 };
  }

  /** Merges a begin reply and returns the session's recent records, oldest first. */
  merge(sessionKey: string, sessionId: string, records: TranscriptRecord[], incremental: boolean): TranscriptRecord[] {
    const previous = this.entries.get(sessionKey);
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
  }
}
