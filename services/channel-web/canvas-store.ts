/**
 * The canvases (LMDB, `<dataDir>/channel-web/canvas`): one CanvasState per session key, and the
 * presented frames' ids (frameId -> session key) for `GET /canvas/frame/<id>`. Kept until
 * a2ui_reset (or a present that replaces the frame), so a page reload and an actor restart show
 * the current canvas. `update` reads, changes and writes one session's state in one write
 * transaction, so concurrent calls for a session never lose a change.
 */
import { mkdirSync } from "node:fs";
import { open, type Database, type RootDatabase } from "lmdb";
import { emptyCanvas, type CanvasState } from "./canvas-state.js";

export class CanvasStore {
  private readonly root: RootDatabase;
  private readonly states: Database<CanvasState, string>;
  private readonly frames: Database<string, string>;

  constructor(path: string) {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    this.root = open({ path, compression: true });
    this.states = this.root.openDB({ name: "states" });
    this.frames = this.root.openDB({ name: "frames" });
  }

  get(sessionKey: string): CanvasState {
    return this.states.get(sessionKey) ?? emptyCanvas(sessionKey);
  }

  /** Applies `change` to the session's state and stores the result (a throw leaves it as it was). */
  async update(sessionKey: string, change: (state: CanvasState) => CanvasState): Promise<CanvasState> {
    return this.root.transaction(() => {
      const before = this.get(sessionKey);
      const after = change(before);
      if (before.html && before.html.frameId !== after.html?.frameId) void this.frames.remove(before.html.frameId);
      if (after.html) void this.frames.put(after.html.frameId, sessionKey);
      void this.states.put(sessionKey, after);
      return after;
    });
  }

  /** The HTML of a presented frame, if its id is current. */
  frame(frameId: string): { content: string; sessionKey: string } | undefined {
    const sessionKey = this.frames.get(frameId);
    const html = sessionKey ? this.states.get(sessionKey)?.html : undefined;
    return html && html.frameId === frameId ? { content: html.content, sessionKey: sessionKey! } : undefined;
  }

  /** The newest state among the session keys `matches` accepts (a chat's canvas). */
  newest(matches: (sessionKey: string) => boolean): CanvasState | undefined {
    let best: CanvasState | undefined;
    for (const key of this.states.getKeys()) {
      if (!matches(key)) continue;
      const s = this.states.get(key);
      if (s && (!best || s.updatedAt > best.updatedAt)) best = s;
    }
    return best;
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
