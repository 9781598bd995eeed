/**
 * The kept lines of every chat (LMDB, `<dataDir>/channel-web/history`): key [chat, seq].
 * Deliveries are written here first and then pushed to the chat's open sockets, so a reply to a
 * browser that is closed or reconnecting is not lost: the browser asks for the entries after the
 * last `seq` it saw when it (re)opens the chat. At most `perChat` entries are kept per chat.
 */
import { mkdirSync } from "node:fs";
import { open, type Database, type RootDatabase } from "lmdb";
import type { ChatEntry } from "./protocol.js";

type Key = [string, number];

export class ChatHistory {
  private readonly root: RootDatabase;
  private readonly entries: Database<ChatEntry, Key>;
  private readonly lastSeq: Database<number, string>;

  constructor(path: string, private readonly perChat: number) {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    this.root = open({ path, compression: true });
    this.entries = this.root.openDB({ name: "entries" });
    this.lastSeq = this.root.openDB({ name: "last-seq" });
  }

  /** Stores one entry under the chat's next seq (dropping the oldest over the cap). */
  async append(chat: string, entry: Omit<ChatEntry, "seq">): Promise<ChatEntry> {
    return this.root.transaction(() => {
      const seq = (this.lastSeq.get(chat) ?? 0) + 1;
      const stored: ChatEntry = { ...entry, seq };
      void this.entries.put([chat, seq], stored);
      void this.lastSeq.put(chat, seq);
      if (seq > this.perChat) void this.entries.remove([chat, seq - this.perChat]);
      return stored;
    });
  }

  /** The kept entry `seq` of the chat. */
  get(chat: string, seq: number): ChatEntry | undefined {
    return this.entries.get([chat, seq]);
  }

  /** The newest kept entry of the chat that `match` accepts (a scan of at most `perChat` entries). */
  find(chat: string, match: (e: ChatEntry) => boolean): ChatEntry | undefined {
    for (const { value } of this.entries.getRange({ start: [chat, Number.MAX_SAFE_INTEGER], end: [chat, 0], reverse: true })) if (match(value)) return value;
    return undefined;
  }

  /**
   * Changes a kept entry in one transaction (so two changes of the same line never lose one):
   * `change` gets the stored entry and returns the new one, or undefined to leave it; a deleted
   * entry is left as it is. Returns the entry written; undefined when it is no longer kept, deleted
   * or `change` left it.
   */
  async modify(chat: string, seq: number, change: (entry: ChatEntry) => ChatEntry | undefined): Promise<ChatEntry | undefined> {
    return this.root.transaction(() => {
      const current = this.entries.get([chat, seq]);
      const next = current && !current.deleted ? change(current) : undefined;
      if (!next) return undefined;
      const stored: ChatEntry = { ...next, seq };
      void this.entries.put([chat, seq], stored);
      return stored;
    });
  }

  /** The entries after `since`, oldest first, at most `limit` (the newest of them). */
  since(chat: string, since: number, limit: number): ChatEntry[] {
    const newest = [...this.entries.getRange({ start: [chat, Number.MAX_SAFE_INTEGER], end: [chat, since], reverse: true, limit }).map((e) => e.value)];
    return newest.reverse();
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
