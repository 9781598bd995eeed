/**
 * What the channel keeps about Matrix between restarts (LMDB at `<dataDir>/channel-matrix/sync/`):
 * - `since`: the `next_batch` of the last /sync batch whose messages are all stored in
 *   LURK_INBOUND; a restart syncs from it, so it neither replays nor loses a message;
 * - per room: joined member count (a DM has two), encrypted (true: an `m.room.encryption` state
 *   event was seen, or the room's state has one; false: the state endpoint said it has none;
 *   absent: unknown), when the "cannot read encrypted messages" notice was sent (once per room),
 *   and the id of the last timeline event taken (where a sync gap's catch-up stops), written with
 *   `since` in one transaction;
 * - `direct`: the rooms `m.direct` account data lists as DMs.
 * Every write is durable when its promise resolves.
 */
import { mkdirSync } from "node:fs";
import { open, type Database, type RootDatabase } from "lmdb";

export interface RoomInfo {
  members?: number;
  /** true: encrypted; false: checked, not encrypted; absent: unknown */
  encrypted?: boolean;
  /** the last timeline event taken from this room (a gap's catch-up stops there) */
  lastEventId?: string;
  /** when the encryption notice went out (ms) */
  noticeAt?: number;
}

export class MatrixState {
  private readonly root: RootDatabase;
  private readonly meta: Database<unknown, string>;
  private readonly rooms: Database<RoomInfo, string>;

  constructor(path: string) {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    this.root = open({ path });
    this.meta = this.root.openDB({ name: "meta" });
    this.rooms = this.root.openDB({ name: "rooms" });
  }

  get since(): string | undefined {
    const v = this.meta.get("since");
    return typeof v === "string" ? v : undefined;
  }

  /** A batch taken: its `next_batch` and each room's last timeline event, in one transaction. */
  async commitBatch(token: string, lastEvents: ReadonlyMap<string, string>): Promise<void> {
    await this.root.transaction(() => {
      for (const [roomId, lastEventId] of lastEvents) this.rooms.put(roomId, { ...this.room(roomId), lastEventId });
      this.meta.put("since", token);
    });
  }

  get direct(): ReadonlySet<string> {
    const v = this.meta.get("direct");
    return new Set(Array.isArray(v) ? (v as string[]) : []);
  }

  async setDirect(roomIds: string[]): Promise<void> {
    await this.meta.put("direct", roomIds);
  }

  room(roomId: string): RoomInfo {
    return this.rooms.get(roomId) ?? {};
  }

  async updateRoom(roomId: string, change: Partial<RoomInfo>): Promise<RoomInfo> {
    const next: RoomInfo = { ...this.room(roomId), ...change };
    // an undefined field is forgotten (not stored as a value)
    for (const key of Object.keys(next) as (keyof RoomInfo)[]) if (next[key] === undefined || next[key] === null) delete next[key];
    await this.rooms.put(roomId, next);
    return next;
  }

  async forgetRoom(roomId: string): Promise<void> {
    await this.rooms.remove(roomId);
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
