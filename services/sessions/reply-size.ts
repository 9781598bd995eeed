/**
 * Replies that carry transcript records stay under the bus's message size: the server's
 * max_payload (1 MiB in nats.conf; a larger reply cannot be sent at all, and callers refuse
 * replies above 1 MiB). A long transcript of large records (tool output, documents' text) would
 * otherwise make every `sessions.begin` of its session fail. So a reply keeps the newest records
 * that fit and says `truncated`; the caller pages back with `sessions.history` `beforeSeq`.
 */
import { LurkError, type TranscriptRecord, type UsageReport } from "../../shared/contract/index.js";
import { DEFAULT_MAX_PAYLOAD_BYTES, jsonBytes } from "../../shared/contract/safe-json.js";

/** room for the reply's other fields (session entry, run records are measured; this is slack) */
const RESERVE_BYTES = 16 * 1024;

/** The bytes a reply may use: the smaller of the server's max_payload and what callers accept, less a reserve. */
export function replyBudget(serverMaxPayload: number | undefined): number {
  return Math.min(serverMaxPayload ?? DEFAULT_MAX_PAYLOAD_BYTES, DEFAULT_MAX_PAYLOAD_BYTES) - RESERVE_BYTES;
}

/**
 * The newest of `records` (oldest first) whose JSON fits in `budgetBytes`; `truncated` when some
 * older ones were left out. The newest record is always kept (one record is under the bus's
 * append cap, which is below any budget).
 */
export function newestWithin(records: TranscriptRecord[], budgetBytes: number): { records: TranscriptRecord[]; truncated: boolean } {
  // one measure for the common case: everything fits
  if (jsonBytes(records) <= budgetBytes) return { records, truncated: false };
  let used = 2; // the brackets
  let first = records.length;
  while (first > 0) {
    const size = jsonBytes(records[first - 1]) + 1;
    if (used + size > budgetBytes && first < records.length) break;
    used += size;
    first--;
  }
  return { records: records.slice(first), truncated: first > 0 };
}

/**
 * A usage report that fits one reply, as it is; a larger one is refused (PAYLOAD_TOO_LARGE) with
 * what to do: its rows cannot be paged like records, so the caller narrows the days or the grouping.
 */
export function checkReportSize(report: UsageReport, budgetBytes: number): UsageReport {
  const bytes = jsonBytes(report);
  if (bytes <= budgetBytes) return report;
  throw new LurkError(
    "PAYLOAD_TOO_LARGE",
    `the usage report has ${report.rows.length} rows (${bytes} bytes), more than one reply holds (${budgetBytes} bytes): narrow the range (from, to), group by fewer keys, or filter by agentId`,
    { details: { rows: report.rows.length, bytes, maxBytes: budgetBytes } },
  );
}
