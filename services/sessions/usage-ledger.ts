/**
 * The usage ledger: one more database in the sessions store's LMDB environment,
 *   usage  [day, agentId, provider/model, channel, sessionType, purpose] -> UsageSums
 * (day: UTC `YYYY-MM-DD` of the update; channel: the session's last origin, else its channel, else
 * "-"; purpose: turn, compaction, consolidation, tts, embedding, speech, transcription; a bucket
 * from before purposes has five elements and reports as `turn`; a bucket from before speech and
 * transcription lacks their fields, read as 0).
 * Units stay apart: tokens in input..total, speech in `chars`, transcription in `audioSeconds`
 * (`unknownDurations` counts transcriptions booked without a duration), each with its unpriced
 * share; `costUsd` sums them all in USD.
 * Contract: the store adds every usage update, split into its parts (`ledgerEntries`: one per
 * model and purpose), to their buckets in the same write transaction as the session's counters
 * (store.ts); each part is priced then, at its own model's prices known at that moment, and a
 * model without a price adds its tokens to `unpricedTokens` instead. The bucket's new value is
 * what a change set carries (replication), so a standby applying it twice stays right. Days
 * before the retention window are removed by `pruneInTxn` (the actor does it in the background).
 */
import type { Database, RootDatabase } from "lmdb";
import {
  addDays, addUsage, emptyUsage, LurkError, usageTokens,
  type Usage, type UsageBucketKey, type UsageGroupKey, type UsagePurpose, type UsageReport, type UsageReportRow, type UsageSums, type UsageUnits, type UsageUpdate,
} from "../../shared/contract/index.js";
import { mediaCost, unitsCostUsd } from "../../shared/runtime/media-prices.js";
import { lookupModel, usageCostUsd } from "../../shared/runtime/models.js";

/** longest `provider/model` kept in a key (LMDB keys are at most ~2 KB) */
const MAX_MODEL_REF = 200;

const emptySums = (): UsageSums => ({
  input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0, runs: 0, costUsd: 0, unpricedTokens: 0,
  chars: 0, audioSeconds: 0, unpricedChars: 0, unpricedAudioSeconds: 0, unknownDurations: 0,
});

/** USD of a usage update of model `ref` (`provider/model`); undefined when its price is unknown. */
export type UsagePrice = (ref: string, usage: Usage) => number | undefined;

/** The built-in prices only (shared/runtime/models.ts); the actor passes one with config `models`. */
export const builtinUsagePrice: UsagePrice = (ref, usage) => usageCostUsd(usage, lookupModel(ref, { models: { entries: {}, aliases: {} } }));

/** USD of a speech or transcription booking's units of model `ref`; undefined when its price (or the duration) is unknown. */
export type UnitsPrice = (ref: string, units: UsageUnits) => number | undefined;

/** The built-in unit prices only (shared/runtime/media-prices.ts); the actor passes one with config `models`. */
export const builtinUnitsPrice: UnitsPrice = (ref, units) => unitsCostUsd(units, mediaCost(ref, { models: { entries: {}, aliases: {} } }));

/** `provider/model` of an update: its model when that already names the provider (the agent-runner sends the full ref). */
export function usageModelRef(provider: string, model: string): string {
  const ref = !provider || model.startsWith(`${provider}/`) ? model : `${provider}/${model}`;
  return (ref || "-").slice(0, MAX_MODEL_REF);
}

/** One bucket's share of an update: a model's tokens for one purpose, and whether the run is counted there. */
export interface LedgerEntry {
  ref: string;
  purpose: UsagePurpose;
  usage: Usage;
  runs: 0 | 1;
  /** speech and transcription: what they are billed by (priced instead of the tokens) */
  units?: UsageUnits;
}

/**
 * An update's ledger entries: its parts merged by model and purpose (without parts, the whole
 * update as `purpose` of its model). A run (`purpose` turn) counts once, in the turns of the model
 * it ended on (an entry without tokens when that model made none, e.g. a `/compact` run).
 */
export function ledgerEntries(update: UsageUpdate & { units?: UsageUnits | undefined }, purpose: UsagePurpose = "turn"): LedgerEntry[] {
  if (update.units) return [{ ref: usageModelRef(update.provider, update.model), purpose, usage: update.usage, runs: 0, units: update.units }];
  const parts = update.parts?.length ? update.parts : [{ model: update.model, provider: update.provider, purpose, usage: update.usage }];
  const merged = new Map<string, LedgerEntry>();
  for (const p of parts) {
    const ref = usageModelRef(p.provider, p.model);
    const id = `${p.purpose}\u0000${ref}`;
    const known = merged.get(id);
    if (known) known.usage = addUsage(known.usage, p.usage);
    else merged.set(id, { ref, purpose: p.purpose, usage: p.usage, runs: 0 });
  }
  const entries = [...merged.values()];
  if (purpose === "turn") {
    const last = usageModelRef(update.provider, update.model);
    const own = entries.find((e) => e.purpose === "turn" && e.ref === last);
    if (own) own.runs = 1;
    else entries.push({ ref: last, purpose: "turn", usage: emptyUsage(), runs: 1 });
  }
  return entries;
}

/** `s` (a bucket written before speech and transcription lacks their fields) added to `into`. */
function addSums(into: UsageSums, s: Partial<UsageSums>): void {
  into.input += s.input ?? 0;
  into.output += s.output ?? 0;
  into.cacheRead += s.cacheRead ?? 0;
  into.cacheWrite += s.cacheWrite ?? 0;
  into.total += s.total ?? 0;
  into.runs += s.runs ?? 0;
  into.costUsd += s.costUsd ?? 0;
  into.unpricedTokens += s.unpricedTokens ?? 0;
  into.chars += s.chars ?? 0;
  into.audioSeconds = roundSeconds(into.audioSeconds + (s.audioSeconds ?? 0));
  into.unpricedChars += s.unpricedChars ?? 0;
  into.unpricedAudioSeconds = roundSeconds(into.unpricedAudioSeconds + (s.unpricedAudioSeconds ?? 0));
  into.unknownDurations += s.unknownDurations ?? 0;
}

/** a sum of float costs to the nano-dollar (no 0.30000000000000004 in reports) */
const roundUsd = (usd: number): number => Math.round(usd * 1e9) / 1e9;
/** seconds of audio to the millisecond */
const roundSeconds = (s: number): number => Math.round(s * 1000) / 1000;

/** The unit fields of one booking: its characters or seconds, unpriced when `costUsd` is unknown. */
function unitSums(units: UsageUnits | undefined, costUsd: number | undefined): Partial<UsageSums> {
  if (!units) return {};
  const chars = units.chars ?? 0;
  const audioSeconds = units.audioSeconds ?? 0;
  const unpriced = costUsd === undefined;
  return { chars, audioSeconds, unpricedChars: unpriced ? chars : 0, unpricedAudioSeconds: unpriced ? audioSeconds : 0, unknownDurations: units.durationUnknown ? 1 : 0 };
}

/** The row field each group key fills, and the key's index in a bucket key. */
const GROUP_FIELDS: Record<UsageGroupKey, { field: keyof UsageReportRow; index: number }> = {
  day: { field: "day", index: 0 },
  agent: { field: "agentId", index: 1 },
  model: { field: "model", index: 2 },
  channel: { field: "channel", index: 3 },
  sessionType: { field: "sessionType", index: 4 },
  purpose: { field: "purpose", index: 5 },
};

/** A key's value for a group key; a bucket from before purposes is `turn`. */
const keyPart = (key: UsageBucketKey, g: UsageGroupKey): string => key[GROUP_FIELDS[g].index] ?? "turn";

export interface UsageQuery {
  from?: string | undefined;
  to?: string | undefined;
  groupBy: UsageGroupKey[];
  agentId?: string | undefined;
}

export class UsageLedger {
  private readonly db: Database<UsageSums, UsageBucketKey>;

  constructor(root: RootDatabase) {
    // created on first open: a store from before the ledger opens with an empty one
    this.db = root.openDB({ name: "usage" });
  }

  /**
   * Inside the store's write transaction: adds one entry to its bucket (`runs` runs; `units`: a
   * speech or transcription booking, whose `costUsd` prices the units); returns the bucket's new value.
   */
  addInTxn(key: UsageBucketKey, usage: Usage, costUsd: number | undefined, runs = 1, units?: UsageUnits): UsageSums {
    const next = emptySums();
    addSums(next, this.db.get(key) ?? {});
    addSums(next, {
      input: usage.input, output: usage.output, cacheRead: usage.cacheRead, cacheWrite: usage.cacheWrite, total: usage.total,
      runs, costUsd: costUsd ?? 0, unpricedTokens: costUsd === undefined ? usageTokens(usage) : 0, ...unitSums(units, costUsd),
    });
    void this.db.put(key, next);
    return next;
  }

  /** Inside a write transaction: a bucket's value from a followed change set. */
  putInTxn(key: UsageBucketKey, value: UsageSums): void {
    void this.db.put(key, value);
  }

  /** Inside a write transaction: removes every bucket of a day before `before`; returns how many. */
  pruneInTxn(before: string): number {
    let removed = 0;
    for (const { key } of this.db.getRange({ end: [before] })) {
      void this.db.remove(key);
      removed++;
    }
    return removed;
  }

  /** The oldest day the ledger holds; null when it is empty. */
  oldestDay(): string | null {
    for (const { key } of this.db.getRange({ limit: 1 })) return key[0];
    return null;
  }

  /** Every bucket (the first replicated publish of a store). */
  buckets(): Array<{ key: UsageBucketKey; value: UsageSums }> {
    return [...this.db.getRange()].map(({ key, value }) => ({ key, value }));
  }

  /** The sums of the buckets in `from`..`to` (defaults: the oldest day held, `today`), grouped by `groupBy`. */
  report(q: UsageQuery, today: string): UsageReport {
    const ledgerSince = this.oldestDay();
    const to = q.to ?? today;
    const from = q.from ?? (ledgerSince !== null && ledgerSince < to ? ledgerSince : to);
    if (from > to) throw new LurkError("VALIDATION_FAILED", `from (${from}) is after to (${to}); give the earlier day as from`);
    const groups = new Map<string, { keys: string[]; row: UsageReportRow }>();
    const totals = emptySums();
    for (const { key, value } of this.db.getRange({ start: [from], end: [addDays(to, 1)] })) {
      if (q.agentId !== undefined && key[1] !== q.agentId) continue;
      const keys = q.groupBy.map((g) => keyPart(key, g));
      const id = keys.join("\u0000");
      let group = groups.get(id);
      if (!group) {
        const row: UsageReportRow = emptySums();
        q.groupBy.forEach((g, i) => ((row as Record<string, unknown>)[GROUP_FIELDS[g].field] = keys[i]));
        group = { keys, row };
        groups.set(id, group);
      }
      addSums(group.row, value);
      addSums(totals, value);
    }
    const rows = [...groups.values()].sort((a, b) => compareKeys(a.keys, b.keys)).map(({ row }) => ({ ...row, costUsd: roundUsd(row.costUsd) }));
    return { from, to, groupBy: q.groupBy, rows, totals: { ...totals, costUsd: roundUsd(totals.costUsd) }, ledgerSince };
  }
}

function compareKeys(a: string[], b: string[]): number {
  for (let i = 0; i < a.length; i++) {
    if (a[i]! < b[i]!) return -1;
    if (a[i]! > b[i]!) return 1;
  }
  return 0;
}
