/**
 * The canvases (LMDB, `<dataDir>/channel-web/canvas`): one CanvasState per session key, and the
 * presented frames' ids (frameId -> session key) for `GET /canvas/frame/<id>`. A state is kept
 * until its session is reset or deleted (`remove`, on the sessions actor's events) or a2ui_reset
 * empties it, so a page reload and an actor restart show the current canvas. `update` reads,
 * changes and writes one session's state in one write transaction, so concurrent calls for a
 * session never lose a change.
 * Chats: `chatOf` names the chat (its conversation, user-scope.ts) a session key is shown in;
 * an in-memory index chat -> session keys (built from the keys alone at open, kept with every
 * write) makes `newestOf(chat)` read only that chat's states.
 * One host: the states live in this host's LMDB, so the canvas needs a single channel-web
 * instance (the tool's calls go to the "canvas" queue group, the page to whichever host serves it).
 */
import { mkdirSync } from "node:fs";
import { open, type Database, type RootDatabase } from "lmdb";
import { emptyCanvas, type CanvasState } from "./canvas-state.js";

export class CanvasStore {
  private readonly root: RootDatabase;
  private readonly states: Database<CanvasState, string>;
  private readonly frames: Database<string, string>;
  /** chat (conversation) -> the session keys with a stored state shown in it */
  private readonly byChat = new Map<string, Set<string>>();

  constructor(path: string, private readonly chatOf: (sessionKey: string) => string | undefined) {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    this.root = open({ path, compression: true });
    this.states = this.root.openDB({ name: "states" });
    this.frames = this.root.openDB({ name: "frames" });
    for (const key of this.states.getKeys()) this.index(key, true);
  }

  private index(sessionKey: string, present: boolean): void {
    const chat = this.chatOf(sessionKey);
    if (chat === undefined) return;
    const keys = this.byChat.get(chat) ?? new Set<string>();
    if (present) keys.add(sessionKey);
    else keys.delete(sessionKey);
    if (keys.size) this.byChat.set(chat, keys);
    else this.byChat.delete(chat);
  }

  get(sessionKey: string): CanvasState {
    return this.states.get(sessionKey) ?? emptyCanvas(sessionKey);
  }

  /** Applies `change` to the session's state and stores the result (a throw leaves it as it was). */
  async update(sessionKey: string, change: (state: CanvasState) => CanvasState): Promise<CanvasState> {
    const after = await this.root.transaction(() => {
      const before = this.get(sessionKey);
      const next = change(before);
      if (before.html && before.html.frameId !== next.html?.frameId) void this.frames.remove(before.html.frameId);
      if (next.html) void this.frames.put(next.html.frameId, sessionKey);
      void this.states.put(sessionKey, next);
      return next;
    });
    this.index(sessionKey, true);
    return after;
  }

  /** Forgets the session's canvas and its frame (its session was reset or deleted); whether there was one. */
  async remove(sessionKey: string): Promise<boolean> {
    const removed = await this.root.transaction(() => {
      const before = this.states.get(sessionKey);
      if (!before) return false;
      if (before.html) void this.frames.remove(before.html.frameId);
      void this.states.remove(sessionKey);
      return true;
    });
    this.index(sessionKey, false);
    return removed;
  }

  /** The HTML of a presented frame, if its id is current. */
  frame(frameId: string): { content: string; sessionKey: string } | undefined {
    const sessionKey = this.frames.get(frameId);
    const html = sessionKey ? this.states.get(sessionKey)?.html : undefined;
    return html && html.frameId === frameId ? { content: html.content, sessionKey: sessionKey! } : undefined;
  }

  /** The newest state of the sessions shown in `chat` (a conversation; several agents' sessions can map to one chat). */
  newestOf(chat: string): CanvasState | undefined {
    let best: CanvasState | undefined;
    for (const key of this.byChat.get(chat) ?? []) {
      const s = this.states.get(key);
      if (s && (!best || s.updatedAt > best.updatedAt)) best = s;
    }
    return best;
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
