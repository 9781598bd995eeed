/**
 * The subagents actor's LMDB store (`<dataDir>/subagents`): child runId -> ChildRecord.
 * A child is written before its run request is published and changes state only through
 * `transition`, so after a crash the store says what is left to do:
 *   running     the child's run is queued or under way: watch it (and its timeout)
 *   announcing  the child ended (outcome and reply kept here): the announce is still to publish
 *   done        announced (and cleaned up); kept `archiveDays` for `subagents.list`
 *   stopped     stopped by request; never announced
 * Every change is also handed to `onChange` (the replica writes it to the KV bucket for the
 * instance that takes over; a change resolves once that write is done); `replace` applies the
 * bucket's content and reports nothing.
 */
import { mkdirSync } from "node:fs";
import { open, type Database, type RootDatabase } from "lmdb";
import { z } from "zod";
import { LurkError, subagentRecordSchema } from "../../shared/contract/index.js";
import { checkSpawnLimits, type SpawnLimits } from "./limits.js";

export const childRecordSchema = subagentRecordSchema.extend({
  timeoutSeconds: z.number().int().positive(),
  /** the child's last reply (ok) or the error text; kept until announced */
  reply: z.string().optional(),
  announcedAt: z.number().optional(),
});
export type ChildRecord = z.infer<typeof childRecordSchema>;

export type ChildStatus = ChildRecord["status"];

export class ChildStore {
  private readonly root: RootDatabase;
  private readonly children: Database<ChildRecord, string>;

  /** called after each committed change (undefined: removed); the change waits for it */
  onChange: (runId: string, record: ChildRecord | undefined) => Promise<void> = () => Promise.resolve();

  constructor(path: string) {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    this.root = open({ path, compression: true });
    this.children = this.root.openDB({ name: "children" });
  }

  /** Stores a new running child if the limits allow it (checked and written in one transaction). */
  async create(record: ChildRecord, limits: SpawnLimits): Promise<void> {
    await this.root.transaction(() => {
      if (this.children.get(record.runId)) throw new LurkError("CONFLICT", `a child run ${record.runId} exists already`);
      checkSpawnLimits(this.records(), record, limits);
      void this.children.put(record.runId, record);
    });
    await this.onChange(record.runId, record);
  }

  /** Sets a record from the replica (no onChange). */
  async replace(record: ChildRecord): Promise<void> {
    await this.children.put(record.runId, record);
  }


  get(runId: string): ChildRecord | undefined {
    return this.children.get(runId);
  }

  byChildSessionKey(childSessionKey: string): ChildRecord | undefined {
    return this.records().find((r) => r.childSessionKey === childSessionKey);
  }

  /**
   * Applies `change` when the record is in one of `from`; returns the new record, or null when
   * it is absent or in another state (someone else moved it first).
   */
  async transition(runId: string, from: readonly ChildStatus[], change: (r: ChildRecord) => ChildRecord): Promise<ChildRecord | null> {
    let result: ChildRecord | null = null;
    await this.root.transaction(() => {
      const record = this.children.get(runId);
      if (!record || !from.includes(record.status)) return;
      result = change(record);
      void this.children.put(runId, result);
    });
    if (result) await this.onChange(runId, result);
    return result;
  }

  async remove(runId: string): Promise<void> {
    await this.children.remove(runId);
    await this.onChange(runId, undefined);
  }

  /** Newest first; only the children of `requesterSessionKey` when given. */
  list(requesterSessionKey?: string): ChildRecord[] {
    return this.records()
      .filter((r) => !requesterSessionKey || r.requesterSessionKey === requesterSessionKey)
      .sort((a, b) => b.startedAt - a.startedAt);
  }

  inStatus(...statuses: ChildStatus[]): ChildRecord[] {
    return this.records().filter((r) => statuses.includes(r.status));
  }

  /** Drops finished records that ended before `before`; returns how many. */
  async prune(before: number): Promise<number> {
    const old = this.records().filter((r) => (r.status === "done" || r.status === "stopped") && (r.endedAt ?? r.startedAt) < before);
    for (const r of old) await this.remove(r.runId);
    return old.length;
  }

  /** Every record stored here. */
  records(): ChildRecord[] {
    const out: ChildRecord[] = [];
    for (const { value } of this.children.getRange()) out.push(value);
    return out;
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
