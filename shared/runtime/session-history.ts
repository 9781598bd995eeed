/**
 * A session's transcript records over `sessions.history`, whatever their size: a reply holds at
 * most what fits one bus message and says `truncated` when older records were left out, so this
 * asks again before the oldest record it has until it holds `limit` records or the transcript's
 * start. `olderThan` continues a `sessions.begin` reply that was truncated the same way.
 */
import type { ReplyOf, TranscriptRecord } from "../contract/index.js";
import type { BusClient, CallOptions } from "./client.js";

export interface HistoryQuery {
  sessionKey: string;
  limit: number;
  /** an earlier transcript of the session instead of the current one */
  sessionId?: string;
}

/** The newest `limit` records, oldest first, read in as many replies as they need. */
export async function readHistory(client: BusClient, query: HistoryQuery, opts: CallOptions = {}): Promise<ReplyOf<"sessions", "history">> {
  const first = await client.call("sessions", "history", query, opts);
  if (!first.truncated) return first;
  const older = await olderThan(client, { ...query, limit: query.limit - first.records.length }, first.records, opts);
  return { session: first.session, records: [...older, ...first.records] };
}

/**
 * Up to `query.limit` records older than `newer[0]` (oldest first), paged back through
 * sessions.history. Empty when `newer` is empty or starts the transcript.
 */
export async function olderThan(client: BusClient, query: HistoryQuery, newer: TranscriptRecord[], opts: CallOptions = {}): Promise<TranscriptRecord[]> {
  const pages: TranscriptRecord[][] = [];
  let wanted = query.limit;
  let beforeSeq = newer[0]?.seq;
  while (wanted > 0 && beforeSeq !== undefined && beforeSeq > 0) {
    const page = await client.call("sessions", "history", { ...query, limit: wanted, beforeSeq }, opts);
    if (page.records.length === 0) break;
    pages.unshift(page.records);
    wanted -= page.records.length;
    beforeSeq = page.records[0]!.seq;
    if (!page.truncated) break;
  }
  return pages.flat();
}
