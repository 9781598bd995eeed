/**
 * The sessions actor's LMDB store. Layout (one LMDB environment, owned by this actor only):
 *   entries   sessionKey              -> SessionEntry
 *   records   [sessionId, seq]        -> TranscriptRecord (append-only)
 *   recordIds [sessionId, recordId]   -> seq   (makes appends idempotent)
 *   runs      runId                   -> { sessionKey, sessionId, firstSeq, status }
 *   usage     [day, agent, model, channel, sessionType, purpose] -> summed usage (usage-ledger.ts)
 *   usageSeen [day, idempotency key] -> 1  (usage ops counted once; usage-seen.ts)
 * Every write is one LMDB transaction committed on this thread (`transactionSync`) before the
 * method returns: visible, and safe from a crash of this process. The environment does not sync
 * at commit (`noSync`); a background flush (`env.sync` on libuv's thread pool) follows within
 * FLUSH_DELAY_MS of a write, and `close` flushes. So an OS crash or power loss can lose the
 * last ~50 ms of writes (JetStream's own default sync interval is 2 minutes). Why: a commit here
 * costs ~0.05 ms; with a sync at each commit it cost 2-3 ms of fdatasync on this thread under
 * load, and lmdb's asynchronous transactions 3-4 ms of hand-offs to its write thread.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import { open, type Database, type RootDatabase } from "lmdb";
import {
  addDays, addUsage, emptyUsage, LurkError, USAGE_LEDGER_CHANGE_KEY, usageTokens, utcDay,
  type SESSION_DBS, type SessionChangeOp, type SessionEntry, type TranscriptInfo, type TranscriptRecord, type Usage, type UsagePurpose, type UsageReport, type UsageUnits, type UsageUpdate,
} from "../../shared/contract/index.js";
import { ChangeLog } from "./change-log.js";
import { resetReason, type ResetPolicy, type ResetReason } from "./reset-policy.js";
import { builtinUnitsPrice, builtinUsagePrice, ledgerEntries, UsageLedger, type LedgerEntry, type UnitsPrice, type UsagePrice, type UsageQuery } from "./usage-ledger.js";
import { USAGE_SEEN_DAYS, UsageSeen } from "./usage-seen.js";

type RunStatus = "started" | "done" | "error" | "aborted";
interface RunRow { sessionKey: string; sessionId: string; firstSeq: number; status: RunStatus }

/** The entry with a run's usage added to its counters, and the model that ran last (`lastModel`: false for housekeeping). */
function withUsage(e: SessionEntry, { usage, model, provider }: Pick<UsageUpdate, "usage" | "model" | "provider">, lastModel = true): SessionEntry {
  return {
    ...e,
    ...(lastModel ? { model, provider } : {}),
    usage: addUsage(e.usage, usage),
  };
}

/** `sessions.usage` (the contract's request without its envelope). */
export interface UsageRequest {
  sessionKey?: string | undefined;
  agentId?: string | undefined;
  usage: Usage;
  model: string;
  provider: string;
  purpose?: UsagePurpose | undefined;
  /** speech (chars) and transcription (audioSeconds or durationUnknown) */
  units?: UsageUnits | undefined;
  idempotencyKey?: string | undefined;
}

/** purposes billed by units (characters, seconds) instead of tokens */
const UNIT_PURPOSES = new Set<UsagePurpose>(["speech", "transcription"]);

/** Why a `usage` op's units do not fit its purpose (undefined: they do). */
function unitsProblem(req: UsageRequest, purpose: UsagePurpose): string | undefined {
  const u = req.units;
  if (!UNIT_PURPOSES.has(purpose)) return u ? `units are for the purposes speech and transcription, not ${purpose}` : undefined;
  if (usageTokens(req.usage) > 0) return `${purpose} is booked in units (characters, seconds), not tokens`;
  if (purpose === "speech") return u?.chars !== undefined && u.audioSeconds === undefined && !u.durationUnknown ? undefined : "speech is booked with units.chars (the characters synthesized) alone";
  const timed = u?.audioSeconds !== undefined;
  return u && u.chars === undefined && timed !== !!u.durationUnknown ? undefined : "a transcription is booked with units.audioSeconds, or units.durationUnknown when the duration is not known";
}

/** Where a session-less usage update is booked (no channel, no session type). */
const NO_SESSION = "-";

/** An automatic reset done by ensure/begin (daily or idle policy). */
export interface AutoReset { sessionKey: string; reason: ResetReason; previousSessionId: string; sessionId: string; lastActivity: number }

export interface SessionStoreOptions {
  /** daily/idle resets applied by ensure and begin (default: none) */
  resetPolicy?: ResetPolicy;
  /** called after the transaction that did an automatic reset committed */
  onReset?: (reset: AutoReset) => void;
  /** called after the transaction that created a session's entry (ensure, begin) committed */
  onCreate?: (entry: SessionEntry) => void;
  /** called when a background flush to disk failed (the writes stay committed in memory) */
  onFlushError?: (err: unknown) => void;
  /** replication on: every write transaction queues its change set (change-log.ts) */
  replicate?: boolean;
  /** called after a transaction that queued a change set committed */
  onQueued?: () => void;
  /** the usage ledger's prices (default: the built-in table; the actor adds config `models`) */
  usagePrice?: UsagePrice;
  /** the ledger's prices of speech and transcription units (default: the built-in table; the actor adds config `models`) */
  unitsPrice?: UnitsPrice;
}

type SessionDb = (typeof SESSION_DBS)[number];

/** lmdb's `sync` (mdb_env_sync on libuv's thread pool), missing from its type declarations */
type SyncableRoot = RootDatabase & { sync(callback: (err?: unknown) => void): void };

/** how soon after a write it is flushed to disk (see the header) */
const FLUSH_DELAY_MS = 50;

const newSessionId = () => `ses_${randomUUID().replace(/-/g, "").slice(0, 16)}`;

/** The entry with a fresh, empty transcript (the old one stays on disk under its id). */
function freshTranscript(e: SessionEntry): SessionEntry {
  const { activeRunId: _dropped, ...rest } = e;
  return { ...rest, sessionId: newSessionId(), records: 0, usage: emptyUsage() };
}

/** The ledger's dimensions a session's usage is booked under. */
interface BookedUnder { agentId: string; channel: string; sessionType: string }
const bookedUnder = (e: SessionEntry): BookedUnder => ({ agentId: e.agentId, channel: e.lastOrigin?.channel ?? e.channel ?? NO_SESSION, sessionType: e.sessionType });

export type EnsureInput = Pick<SessionEntry, "sessionKey" | "agentId" | "sessionType"> & Partial<Pick<SessionEntry, "channel" | "parentSessionKey" | "label" | "lastOrigin">>;

export class SessionStore {
  private readonly root: RootDatabase;
  private readonly entries: Database<SessionEntry, string>;
  private readonly records: Database<TranscriptRecord, [string, number]>;
  private readonly recordIds: Database<number, [string, string]>;
  private readonly runs: Database<RunRow, string>;
  private readonly dbs: Record<SessionDb, Database<unknown, string>>;
  /** replication: the outbox and the applied stream sequence (absent when replication is off) */
  readonly changeLog: ChangeLog | undefined;
  /** the writes of the transaction under way, when replication is on */
  private capture: SessionChangeOp[] | undefined;
  /** the usage ledger (usage-ledger.ts) */
  private readonly ledger: UsageLedger;
  /** the ledger's prices (options.usagePrice, else the built-in table) */
  private readonly usagePrice: UsagePrice;
  /** the ledger's unit prices (options.unitsPrice, else the built-in table) */
  private readonly unitsPrice: UnitsPrice;
  /** the ledger writes of the transaction under way, when replication is on: their own change set (USAGE_LEDGER_CHANGE_KEY) */
  private ledgerCapture: SessionChangeOp[] | undefined;
  /** idempotency keys of usage ops already counted (usage-seen.ts) */
  private readonly seen: UsageSeen;

  constructor(path: string, private readonly now: () => number = Date.now, private readonly options: SessionStoreOptions = {}) {
    mkdirSync(path, { recursive: true });
    this.root = open({ path, compression: true, noSync: true });
    this.entries = this.root.openDB({ name: "entries" });
    this.records = this.root.openDB({ name: "records" });
    this.recordIds = this.root.openDB({ name: "recordIds" });
    this.runs = this.root.openDB({ name: "runs" });
    this.dbs = { entries: this.entries, records: this.records, recordIds: this.recordIds, runs: this.runs } as unknown as Record<SessionDb, Database<unknown, string>>;
    this.changeLog = options.replicate ? new ChangeLog(this.root) : undefined;
    this.ledger = new UsageLedger(this.root);
    this.seen = new UsageSeen(this.root);
    this.usagePrice = options.usagePrice ?? builtinUsagePrice;
    this.unitsPrice = options.unitsPrice ?? builtinUnitsPrice;
  }

  private put(db: SessionDb, key: unknown, value: unknown): void {
    void this.dbs[db].put(key as never, value);
    this.capture?.push({ op: "put", db, key: key as string, value });
  }

  get(sessionKey: string): SessionEntry | null {
    return this.entries.get(sessionKey) ?? null;
  }

  /** The entry (created when missing) and the daily or idle reset the policy made, if any. */
  async ensure(input: EnsureInput): Promise<{ session: SessionEntry; reset?: Pick<AutoReset, "reason" | "previousSessionId"> }> {
    let result!: SessionEntry;
    let reset: AutoReset | null = null;
    let created: SessionEntry | null = null;
    this.commit(() => {
      reset = this.expireInTxn(input.sessionKey);
      ({ entry: result, created } = this.ensureInTxn(input));
    }, input.sessionKey);
    this.notify(this.options.onReset, reset);
    this.notify(this.options.onCreate, created);
    const ended = reset as AutoReset | null;
    return { session: result, ...(ended ? { reset: { reason: ended.reason, previousSessionId: ended.previousSessionId } } : {}) };
  }

  /** Applies the reset policy to an existing session before new activity lands on it. */
  private expireInTxn(sessionKey: string): AutoReset | null {
    const entry = this.entries.get(sessionKey);
    if (!entry || entry.records === 0 || !this.options.resetPolicy) return null;
    const now = this.now();
    const reason = resetReason(entry.updatedAt, now, this.options.resetPolicy);
    if (!reason) return null;
    const next = { ...freshTranscript(entry), updatedAt: now };
    this.put("entries", sessionKey, next);
    return { sessionKey, reason, previousSessionId: entry.sessionId, sessionId: next.sessionId, lastActivity: entry.updatedAt };
  }

  /** `report(value)` (onReset, onCreate) once the transaction that made `value` committed */
  private notify<T>(report: ((value: T) => void) | undefined, value: T | null): void {
    if (value === null || !report) return;
    try {
      report(value);
    } catch {
      // a reporting failure must not fail the write that already committed
    }
  }

  /** The session's entry; `created` is it when this call created it (reported as onCreate after the commit). */
  private ensureInTxn(input: EnsureInput): { entry: SessionEntry; created: SessionEntry | null } {
    const existing = this.entries.get(input.sessionKey);
    if (existing) {
      if (!input.lastOrigin) return { entry: existing, created: null };
      const updated = { ...existing, lastOrigin: input.lastOrigin, channel: input.channel ?? existing.channel, updatedAt: this.now() };
      this.put("entries", input.sessionKey, updated);
      return { entry: updated, created: null };
    }
    const now = this.now();
    const created: SessionEntry = {
      sessionKey: input.sessionKey,
      sessionId: newSessionId(),
      agentId: input.agentId,
      sessionType: input.sessionType,
      createdAt: now,
      updatedAt: now,
      usage: emptyUsage(),
      records: 0,
      ...(input.channel ? { channel: input.channel } : {}),
      ...(input.lastOrigin ? { lastOrigin: input.lastOrigin } : {}),
      ...(input.parentSessionKey ? { parentSessionKey: input.parentSessionKey } : {}),
      ...(input.label ? { label: input.label } : {}),
    };
    this.put("entries", input.sessionKey, created);
    return { entry: created, created };
  }

  list(filter: { agentId?: string; sessionType?: string; limit: number }): SessionEntry[] {
    const out: SessionEntry[] = [];
    for (const { value } of this.entries.getRange()) {
      if (filter.agentId && value.agentId !== filter.agentId) continue;
      if (filter.sessionType && value.sessionType !== filter.sessionType) continue;
      out.push(value);
    }
    return out.sort((a, b) => b.updatedAt - a.updatedAt).slice(0, filter.limit);
  }

  /** Appends records (a record whose id is already stored is skipped), and usage if given. */
  async append(sessionKey: string, records: TranscriptRecord[], usage?: UsageUpdate): Promise<{ appended: number; duplicates: number; lastSeq: number }> {
    let result!: { appended: number; duplicates: number; lastSeq: number };
    this.commit(() => {
      const entry = this.entries.get(sessionKey);
      if (!entry) throw new LurkError("NOT_FOUND", `no session ${sessionKey}; call sessions.ensure first`);
      const appended = this.appendInTxn(entry, records);
      result = appended.result;
      // records all stored before (a retried run end): their usage was counted then
      const counted = usage !== undefined && result.appended > 0;
      const next = counted ? withUsage(appended.entry, usage) : appended.entry;
      if (next !== entry) this.put("entries", sessionKey, { ...next, updatedAt: this.now() });
      if (counted) this.bookUsage(bookedUnder(appended.entry), ledgerEntries(usage));
    }, sessionKey);
    return result;
  }

  /**
   * A run's start in one transaction: ensure the session, read the run's prior status, append
   * its first records unless it already finished, and collect its records and the transcript
   * (only records after `known.lastSeq` when the caller has the same session id cached).
   */
  async begin(input: EnsureInput & { runId: string; records: TranscriptRecord[]; historyLimit: number; known?: { sessionId: string; lastSeq: number } }) {
    let out!: { prior: RunStatus | "unknown"; session: SessionEntry; runRecords: TranscriptRecord[]; records: TranscriptRecord[]; incremental: boolean; reset?: Pick<AutoReset, "reason" | "previousSessionId"> };
    let reset: AutoReset | null = null;
    let created: SessionEntry | null = null;
    this.commit(() => {
      const prior = this.runs.get(input.runId)?.status ?? "unknown";
      // only a new run starts a fresh transcript: a redelivered one stays in the session it began in
      if (prior === "unknown") reset = this.expireInTxn(input.sessionKey);
      let entry: SessionEntry;
      ({ entry, created } = this.ensureInTxn(input));
      const finished = prior === "done" || prior === "error" || prior === "aborted";
      if (!finished && input.records.length > 0) {
        const appended = this.appendInTxn(entry, input.records);
        if (appended.entry !== entry) {
          entry = { ...appended.entry, updatedAt: this.now() };
          this.put("entries", entry.sessionKey, entry);
        }
      }
      const incremental = input.known?.sessionId === entry.sessionId && entry.records - 1 - input.known.lastSeq <= input.historyLimit;
      const from = incremental ? input.known!.lastSeq + 1 : Math.max(0, entry.records - input.historyLimit);
      const records = this.range(entry.sessionId, from, entry.records);
      const ended = reset as AutoReset | null;
      out = { prior, session: entry, runRecords: this.runRecordsInTxn(input.runId), records, incremental, ...(ended ? { reset: { reason: ended.reason, previousSessionId: ended.previousSessionId } } : {}) };
    }, input.sessionKey);
    this.notify(this.options.onReset, reset);
    this.notify(this.options.onCreate, created);
    return out;
  }

  private range(sessionId: string, fromSeq: number, toSeqExclusive: number): TranscriptRecord[] {
    if (toSeqExclusive <= fromSeq) return [];
    return [...this.records.getRange({ start: [sessionId, fromSeq], end: [sessionId, toSeqExclusive] })].map((r) => r.value);
  }

  private appendInTxn(entry: SessionEntry, records: TranscriptRecord[]): { entry: SessionEntry; result: { appended: number; duplicates: number; lastSeq: number } } {
    let appended = 0;
    let duplicates = 0;
    let lastSeq = -1;
    let next = entry.records;
    for (const record of records) {
      const known = this.recordIds.get([entry.sessionId, record.id]);
      if (known !== undefined) {
        duplicates++;
        lastSeq = Math.max(lastSeq, known);
        continue;
      }
      const seq = next++;
      this.put("records", [entry.sessionId, seq], { ...record, seq });
      this.put("recordIds", [entry.sessionId, record.id], seq);
      if (record.runId) this.trackRun(record, entry, seq);
      appended++;
      lastSeq = seq;
    }
    return { entry: appended > 0 ? { ...entry, records: next } : entry, result: { appended, duplicates, lastSeq } };
  }

  private trackRun(record: TranscriptRecord, entry: SessionEntry, seq: number): void {
    const runId = record.runId!;
    const row = this.runs.get(runId) ?? { sessionKey: entry.sessionKey, sessionId: entry.sessionId, firstSeq: seq, status: "started" as RunStatus };
    if (record.kind === "run_marker" && record.runStatus) row.status = record.runStatus;
    this.put("runs", runId, row);
  }

  /** The newest `limit` records (before seq `beforeSeq` when given) of the session's current transcript (or of its earlier one `sessionId`), oldest first. */
  history(sessionKey: string, limit: number, sessionId?: string, beforeSeq?: number): TranscriptRecord[] {
    const entry = this.get(sessionKey);
    if (!entry) return [];
    const transcript = sessionId ?? entry.sessionId;
    const start = beforeSeq === undefined ? Number.MAX_SAFE_INTEGER : beforeSeq - 1;
    if (start < 0) return [];
    const newestFirst = [...this.records.getRange({ start: [transcript, start], end: [transcript, -1], reverse: true, limit })];
    return newestFirst.reverse().map((r) => r.value);
  }

  /**
   * The session's transcripts, oldest first: the current one and the earlier ones its runs wrote
   * to (found by reading the whole runs table: an export's cost, not a hot path). Transcripts
   * without records (deleted, or never written) are left out, except the current one.
   */
  transcripts(sessionKey: string): TranscriptInfo[] {
    const entry = this.get(sessionKey);
    if (!entry) return [];
    const ids = new Set<string>();
    for (const { value } of this.runs.getRange()) if (value.sessionKey === sessionKey) ids.add(value.sessionId);
    ids.add(entry.sessionId);
    const out: TranscriptInfo[] = [];
    for (const sessionId of ids) {
      const first = [...this.records.getRange({ start: [sessionId, -1], end: [sessionId, Number.MAX_SAFE_INTEGER], limit: 1 })][0]?.value;
      const last = [...this.records.getRange({ start: [sessionId, Number.MAX_SAFE_INTEGER], end: [sessionId, -1], reverse: true, limit: 1 })][0]?.value;
      const current = sessionId === entry.sessionId;
      if (!first && !current) continue;
      out.push({ sessionId, records: last?.seq !== undefined ? last.seq + 1 : 0, ...(first ? { firstTs: first.ts } : {}), ...(last ? { lastTs: last.ts } : {}), current });
    }
    // the current transcript last; earlier ones by their first record
    return out.sort((a, b) => Number(a.current) - Number(b.current) || (a.firstTs ?? 0) - (b.firstTs ?? 0));
  }

  run(runId: string): { records: TranscriptRecord[]; status: RunStatus | "unknown" } {
    return { records: this.runRecordsInTxn(runId), status: this.runStatus(runId) };
  }

  /** The run's status from the runs table ("unknown": no record of it). */
  runStatus(runId: string): RunStatus | "unknown" {
    return this.runs.get(runId)?.status ?? "unknown";
  }

  /** One record of the run by its id (the record-id index, no scan), undefined when the run did not store it. */
  runRecord(runId: string, recordId: string): TranscriptRecord | undefined {
    const row = this.runs.get(runId);
    const seq = row && this.recordIds.get([row.sessionId, recordId]);
    const record = seq === undefined || !row ? undefined : this.records.get([row.sessionId, seq]);
    return record?.runId === runId ? record : undefined;
  }

  private runRecordsInTxn(runId: string): TranscriptRecord[] {
    const row = this.runs.get(runId);
    if (!row) return [];
    const records: TranscriptRecord[] = [];
    for (const { value } of this.records.getRange({ start: [row.sessionId, row.firstSeq], end: [row.sessionId, Number.MAX_SAFE_INTEGER] })) {
      if (value.runId === runId) records.push(value);
    }
    return records;
  }

  /** A run's usage added to a session (the `usage` op as it was first: turns of `model`). */
  async addUsage(sessionKey: string, usage: Usage, model: string, provider: string): Promise<SessionEntry> {
    return (await this.recordUsage({ sessionKey, usage, model, provider })).session!;
  }

  /**
   * The `usage` op: adds the usage to the session's counters when it exists (its last model only
   * for `turn`) and to the ledger under its purpose; without a session (none named, or gone while
   * `agentId` is given), to the ledger only. An idempotency key seen today or yesterday adds nothing.
   * Speech and transcription carry units and no tokens: the ledger only (the session's counters are tokens).
   */
  async recordUsage(req: UsageRequest): Promise<{ session: SessionEntry | null; duplicate: boolean }> {
    const purpose = req.purpose ?? "turn";
    const problem = unitsProblem(req, purpose);
    if (problem) throw new LurkError("VALIDATION_FAILED", problem);
    const today = utcDay(this.now());
    let out!: { session: SessionEntry | null; duplicate: boolean };
    this.commit(() => {
      const entry = req.sessionKey !== undefined ? this.entries.get(req.sessionKey) : undefined;
      if (req.idempotencyKey !== undefined && this.seen.has(req.idempotencyKey, today)) {
        out = { session: entry ?? null, duplicate: true };
        return;
      }
      if (!entry && req.agentId === undefined) {
        throw req.sessionKey !== undefined
          ? new LurkError("NOT_FOUND", `no session ${req.sessionKey}`)
          : new LurkError("VALIDATION_FAILED", "a usage update names a sessionKey or an agentId");
      }
      let session: SessionEntry | null = null;
      if (entry && UNIT_PURPOSES.has(purpose)) session = entry;
      else if (entry) {
        session = { ...withUsage(entry, req, purpose === "turn"), updatedAt: this.now() };
        this.put("entries", entry.sessionKey, session);
      }
      this.bookUsage(entry ? bookedUnder(entry) : { agentId: req.agentId!, channel: NO_SESSION, sessionType: NO_SESSION }, ledgerEntries(req, purpose));
      if (req.idempotencyKey !== undefined) {
        this.seen.putInTxn([today, req.idempotencyKey]);
        this.ledgerCapture?.push({ op: "usageSeen", key: [today, req.idempotencyKey] });
      }
      out = { session, duplicate: false };
    }, req.sessionKey ?? USAGE_LEDGER_CHANGE_KEY);
    return out;
  }

  /** Inside a write transaction: each entry goes into its ledger bucket, priced now at its model. */
  private bookUsage(under: BookedUnder, entries: LedgerEntry[]): void {
    const day = utcDay(this.now());
    for (const e of entries) {
      const key: [string, string, string, string, string, string] = [day, under.agentId, e.ref, under.channel, under.sessionType, e.purpose];
      const cost = e.units ? this.unitsPrice(e.ref, e.units) : this.usagePrice(e.ref, e.usage);
      const value = this.ledger.addInTxn(key, e.usage, cost, e.runs, e.units);
      this.ledgerCapture?.push({ op: "usage", key, value });
    }
  }

  /** The usage ledger summed by `q.groupBy` over `q.from`..`q.to` (UTC days; `to` defaults to today). */
  usageReport(q: UsageQuery): UsageReport {
    return this.ledger.report(q, utcDay(this.now()));
  }

  /**
   * Removes the ledger's days older than the last `retentionDays` (today included) and the usage
   * ops' idempotency keys older than USAGE_SEEN_DAYS; returns how many buckets went.
   */
  pruneUsage(retentionDays: number): number {
    const today = utcDay(this.now());
    const before = addDays(today, -(retentionDays - 1));
    const seenBefore = addDays(today, -(USAGE_SEEN_DAYS - 1));
    const oldest = this.ledger.oldestDay();
    const oldestSeen = this.seen.oldestDay();
    const ledgerDue = oldest !== null && oldest < before;
    const seenDue = oldestSeen !== null && oldestSeen < seenBefore;
    if (!ledgerDue && !seenDue) return 0;
    let removed = 0;
    this.commit(() => {
      if (ledgerDue) {
        removed = this.ledger.pruneInTxn(before);
        this.ledgerCapture?.push({ op: "pruneUsage", before });
      }
      if (seenDue) {
        this.seen.pruneInTxn(seenBefore);
        this.ledgerCapture?.push({ op: "pruneUsageSeen", before: seenBefore });
      }
    }, USAGE_LEDGER_CHANGE_KEY);
    return removed;
  }

  async patch(sessionKey: string, patch: Record<string, unknown>): Promise<SessionEntry> {
    return this.update(sessionKey, (e) => {
      const next: Record<string, unknown> = { ...e };
      for (const [key, value] of Object.entries(patch)) {
        if (value === undefined) continue;
        if (value === null) delete next[key];
        else next[key] = value;
      }
      return next as SessionEntry;
    });
  }

  /** Starts a fresh transcript; the old one stays on disk under its session id. */
  async reset(sessionKey: string): Promise<{ session: SessionEntry; previousSessionId: string }> {
    let previousSessionId = "";
    const session = await this.update(sessionKey, (e) => {
      previousSessionId = e.sessionId;
      return freshTranscript(e);
    });
    return { session, previousSessionId };
  }

  async delete(sessionKey: string): Promise<boolean> {
    let deleted = false;
    this.commit(() => {
      const entry = this.entries.get(sessionKey);
      if (!entry) return;
      this.deleteInTxn(sessionKey, entry.sessionId);
      this.capture?.push({ op: "deleteSession", sessionKey, sessionId: entry.sessionId });
      deleted = true;
    }, sessionKey);
    return deleted;
  }

  /** The entry and the current transcript of a session (earlier transcripts stay, as after a reset). */
  private deleteInTxn(sessionKey: string, sessionId: string): void {
    for (const { key } of this.records.getRange({ start: [sessionId, -1], end: [sessionId, Number.MAX_SAFE_INTEGER] })) void this.records.remove(key);
    for (const { key } of this.recordIds.getRange({ start: [sessionId], end: [sessionId, "\uffff"] })) void this.recordIds.remove(key);
    void this.entries.remove(sessionKey);
  }

  /** A standby: applies a followed change set and its stream sequence in one transaction. */
  applyChange(ops: SessionChangeOp[], streamSeq: number): void {
    this.root.transactionSync(() => {
      for (const op of ops) {
        if (op.op === "put") void this.dbs[op.db].put(op.key as never, op.value);
        else if (op.op === "usage") this.ledger.putInTxn(op.key, op.value);
        else if (op.op === "pruneUsage") this.ledger.pruneInTxn(op.before);
        else if (op.op === "usageSeen") this.seen.putInTxn(op.key);
        else if (op.op === "pruneUsageSeen") this.seen.pruneInTxn(op.before);
        else this.deleteInTxn(op.sessionKey, op.sessionId);
      }
      this.changeLog?.setAppliedInTxn(streamSeq);
    });
    this.scheduleFlush();
  }

  /** The first active instance of a replicated store: queues everything it holds, once (the stream starts empty). */
  seedChangeLog(): number {
    const log = this.changeLog;
    if (!log || log.seeded) return 0;
    let sessions = 0;
    this.root.transactionSync(() => {
      for (const { key: sessionKey, value: entry } of this.entries.getRange()) {
        const ops: SessionChangeOp[] = [{ op: "put", db: "entries", key: sessionKey, value: entry }];
        for (const { key, value } of this.records.getRange({ start: [entry.sessionId, -1], end: [entry.sessionId, Number.MAX_SAFE_INTEGER] })) ops.push({ op: "put", db: "records", key: key as [string, number], value });
        for (const { key, value } of this.recordIds.getRange({ start: [entry.sessionId], end: [entry.sessionId, "\uffff"] })) ops.push({ op: "put", db: "recordIds", key: key as [string, string], value });
        log.enqueueInTxn(sessionKey, ops);
        sessions++;
      }
      for (const { key, value } of this.runs.getRange()) log.enqueueInTxn(value.sessionKey, [{ op: "put", db: "runs", key, value }]);
      const buckets = this.ledger.buckets();
      if (buckets.length > 0) log.enqueueInTxn(USAGE_LEDGER_CHANGE_KEY, buckets.map(({ key, value }): SessionChangeOp => ({ op: "usage", key, value })));
      log.markSeededInTxn();
    });
    return sessions;
  }

  /** Runs `work` in one write transaction (the change log's bookkeeping). */
  logTxn<T>(work: (log: ChangeLog) => T): T {
    const log = this.changeLog;
    if (!log) throw new Error("replication is off");
    let out!: T;
    this.root.transactionSync(() => (out = work(log)));
    this.scheduleFlush();
    return out;
  }

  /** Changes an entry in one transaction; `also` writes more in it (given the entry before the change). */
  private async update(sessionKey: string, change: (e: SessionEntry) => SessionEntry, also?: (before: SessionEntry) => void): Promise<SessionEntry> {
    let result!: SessionEntry;
    this.commit(() => {
      const entry = this.entries.get(sessionKey);
      if (!entry) throw new LurkError("NOT_FOUND", `no session ${sessionKey}`);
      result = { ...change(entry), updatedAt: this.now() };
      this.put("entries", sessionKey, result);
      also?.(entry);
    }, sessionKey);
    return result;
  }

  /**
   * One write transaction, run and committed before this returns (what `work` throws aborts it).
   * With replication on, the transaction's writes are queued in the outbox as one change set of
   * the session `sessionKey`, in the same transaction; its usage-ledger writes as a change set of
   * their own (USAGE_LEDGER_CHANGE_KEY: a session's delete purges its change sets from the stream,
   * never the ledger's).
   */
  private commit(work: () => void, sessionKey: string): void {
    const log = this.changeLog;
    if (!log) {
      this.root.transactionSync(work);
    } else {
      const before = log.lastQueued;
      this.root.transactionSync(() => {
        this.capture = [];
        this.ledgerCapture = [];
        try {
          work();
          if (this.capture.length > 0) log.enqueueInTxn(sessionKey, this.capture);
          if (this.ledgerCapture.length > 0) log.enqueueInTxn(USAGE_LEDGER_CHANGE_KEY, this.ledgerCapture);
        } finally {
          this.capture = undefined;
          this.ledgerCapture = undefined;
        }
      });
      if (log.lastQueued !== before) this.options.onQueued?.();
    }
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = undefined;
      void this.flush();
    }, FLUSH_DELAY_MS);
  }

  private flushTimer: NodeJS.Timeout | undefined;

  /** Writes every committed transaction to disk (fdatasync, off this thread). */
  private flush(): Promise<void> {
    return new Promise((resolve) => (this.root as SyncableRoot).sync((err) => {
      if (err) this.options.onFlushError?.(err);
      resolve();
    }));
  }

  async close(): Promise<void> {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    await this.flush();
    await this.root.close();
  }
}
