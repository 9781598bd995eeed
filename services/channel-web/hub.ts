/**
 * The open browser sockets and what flows to them. A socket belongs to the user whose token it
 * signed in with (`join`) and shows one of that user's chats at a time; every frame for a chat
 * goes to all sockets showing it (several tabs), and only to that user's sockets (chats are
 * per user: user-scope.ts). Browser messages become inbound messages (id = the browser's UUID in
 * the user's namespace, so a resend after a reconnect is processed once; conversation = the
 * chat's bus name; peer and sender = the user; session name: sessionNameOf), acknowledged only
 * once LURK_INBOUND stored them. Before publishing, the run's events are watched: reply text
 * streams as `delta` frames, tool_start/tool_end as `tool` frames.
 * Canvas: a chat shows the canvas of the session it maps to (chatOfSessionKey; the newest when
 * several do), sent as a `canvas` frame when the chat is opened, on every stored change and when
 * a session's canvas is forgotten (its session reset or deleted). A
 * Button press (`canvas_action`, its frame capped by protocol.ts) on a button the canvas really
 * has, with only the context keys that button's action declares, becomes a message of the chat
 * (so of its session) stating the action, the button and the context values.
 */
import type { WebSocket } from "ws";
import { LurkError } from "../../shared/contract/index.js";
import type { ChannelContext, RunWatch } from "../../shared/runtime/channel/index.js";
import type { WebChannelConfig } from "../../shared/runtime/config-channels.js";
import { buttonAction, canvasView, type CanvasState, type CanvasView } from "./canvas-state.js";
import type { CanvasStore } from "./canvas-store.js";
import { toAttachment, type WebFiles } from "./files.js";
import type { ChatHistory } from "./history.js";
import { CHAT_ID, type CanvasActionFrame, type ChatEntry, type SendFrame, type ServerFrame, type WebFile, type WebSession } from "./protocol.js";
import { chatOfSessionKey, scoped, sessionNameOf, webChat, type WebChat } from "./user-scope.js";
import type { WebUser } from "./users.js";

/** how long a run's events are streamed at most */
const WATCH_MAX_MS = 30 * 60_000;
/** entries sent when a chat is opened */
export const HISTORY_PAGE = 200;
const PREVIEW_CHARS = 160;
/** sessions asked of the sessions actor for a user of `channels.web.users` (their DM sessions among all) */
const SESSIONS_SCAN = 500;
/** characters of a userAction's context (as JSON) a message carries at most */
const ACTION_CONTEXT_CHARS = 4000;

interface SocketState { user: WebUser; showing?: WebChat }

export class Hub {
  private readonly sockets = new Map<WebSocket, SocketState>();
  private readonly watches = new Map<string, RunWatch>();

  constructor(private readonly ctx: ChannelContext<WebChannelConfig>, private readonly history: ChatHistory, private readonly files: WebFiles, private readonly canvas: CanvasStore) {}

  /** The page's view of a canvas (whether its frame runs scripts: channels.web.canvas.allowScripts). */
  private view(state: CanvasState | undefined): CanvasView | null {
    return state ? canvasView(state, this.ctx.settings.canvas.allowScripts) : null;
  }

  send(ws: WebSocket, frame: ServerFrame): void {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(frame));
  }

  /** A socket that signed in as `user`: from now on it sees that user's chats only. */
  join(ws: WebSocket, user: WebUser): void {
    this.sockets.set(ws, { user });
  }

  userOf(ws: WebSocket): WebUser | undefined {
    return this.sockets.get(ws)?.user;
  }

  /** Sends to every socket showing this chat (of this user); returns how many got it. */
  broadcast(c: WebChat, frame: ServerFrame): number {
    let n = 0;
    for (const [ws, s] of this.sockets) {
      if (s.showing?.conversation === c.conversation && s.user.scope === c.user.scope && ws.readyState === ws.OPEN) {
        ws.send(JSON.stringify(frame));
        n++;
      }
    }
    return n;
  }

  /** Shows the socket's user's chat `chat`: its kept entries after `since`, then what arrives. */
  open(ws: WebSocket, chat: string, since: number): void {
    const s = this.sockets.get(ws);
    if (!s) return;
    const c = webChat(s.user, chat);
    s.showing = c;
    this.send(ws, { type: "history", chat, entries: this.history.since(c.conversation, since, HISTORY_PAGE) });
    this.send(ws, { type: "canvas", chat, canvas: this.view(this.canvasOf(s.user, chat)) });
  }

  /** The canvas a user's chat shows: the newest of the sessions that map to it (the store's chat index). */
  canvasOf(user: WebUser, chat: string): CanvasState | undefined {
    return CHAT_ID.test(chat) ? this.canvas.newestOf(scoped(user, chat)) : undefined;
  }

  /** Sends `view` to the sockets showing the chat `sessionKey` maps to; returns how many. */
  private showCanvas(sessionKey: string, view: (s: SocketState & { showing: WebChat }) => CanvasView | null): number {
    let n = 0;
    for (const [ws, s] of this.sockets) {
      if (!s.showing || chatOfSessionKey(sessionKey, s.user) !== s.showing.chat || ws.readyState !== ws.OPEN) continue;
      ws.send(JSON.stringify({ type: "canvas", chat: s.showing.chat, canvas: view({ ...s, showing: s.showing }) } satisfies ServerFrame));
      n++;
    }
    return n;
  }

  /** A stored canvas change: sent to the sockets showing the chat its session maps to; returns how many. */
  canvasChanged(state: CanvasState): number {
    const view = this.view(state);
    return this.showCanvas(state.sessionKey, () => view);
  }

  /** The session was reset or deleted: its canvas is forgotten, the chat's pages get what is left (another agent's canvas, or none). */
  async forgetCanvas(sessionKey: string): Promise<void> {
    if (!(await this.canvas.remove(sessionKey))) return;
    this.ctx.log.info({ sessionKey }, "the session's canvas is forgotten (session reset or deleted)");
    this.showCanvas(sessionKey, (s) => this.view(this.canvasOf(s.user, s.showing.chat)));
  }

  /** A Button pressed on the chat's canvas: checked against the canvas, then sent as a message of the chat. */
  async canvasAction(ws: WebSocket, frame: CanvasActionFrame): Promise<void> {
    const user = this.userOf(ws);
    if (!user) return;
    const state = this.canvasOf(user, frame.chat);
    const action = state ? buttonAction(state, frame.surfaceId, frame.sourceComponentId, frame.name) : undefined;
    if (!action) {
      return this.send(ws, { type: "nack", id: frame.id, chat: frame.chat, code: "NOT_FOUND", message: `the canvas has no button "${frame.sourceComponentId}" with action "${frame.name}" any more` });
    }
    // the page sends the context the button declares, nothing else
    const declared = new Set((action.context ?? []).map((c) => c.key));
    const extra = Object.keys(frame.context).filter((k) => !declared.has(k));
    if (extra.length) {
      return this.send(ws, { type: "nack", id: frame.id, chat: frame.chat, code: "VALIDATION_FAILED", message: `the action "${frame.name}" has no context key ${extra.slice(0, 3).map((k) => JSON.stringify(k)).join(", ")}` });
    }
    let context = JSON.stringify(frame.context);
    if (context.length > ACTION_CONTEXT_CHARS) context = `${context.slice(0, ACTION_CONTEXT_CHARS)}…[cut]`;
    const text = `[canvas userAction] name=${JSON.stringify(frame.name)} component=${JSON.stringify(frame.sourceComponentId)} surface=${JSON.stringify(frame.surfaceId)} context=${context}`;
    return this.inbound(ws, { type: "send", id: frame.id, chat: frame.chat, text, attachments: [] });
  }

  leave(ws: WebSocket): void {
    this.sockets.delete(ws);
  }

  /** Stores a chat line and shows it to the chat's sockets. */
  async record(c: WebChat, entry: Omit<ChatEntry, "seq">): Promise<ChatEntry> {
    const stored = await this.history.append(c.conversation, entry);
    this.broadcast(c, { type: "entry", chat: c.chat, entry: stored });
    return stored;
  }

  /**
   * Changes the kept chat line `seq` (`change` gets the stored line, in one transaction, and
   * returns the new one or undefined to leave it; a deleted line is left) and shows the change to
   * the chat's sockets. Returns the line written; undefined when it is no longer kept, deleted or
   * was left as it was.
   */
  async change(c: WebChat, seq: number, change: (entry: ChatEntry) => ChatEntry | undefined): Promise<ChatEntry | undefined> {
    const entry = await this.history.modify(c.conversation, seq, change);
    if (entry) this.broadcast(c, { type: "update", chat: c.chat, entry });
    return entry;
  }

  /** The kept line `seq` of the chat, if any. */
  entry(c: WebChat, seq: number): ChatEntry | undefined {
    return this.history.get(c.conversation, seq);
  }

  /** The kept line of the chat that `match` accepts (newest first), if any. */
  findEntry(c: WebChat, match: (e: ChatEntry) => boolean): ChatEntry | undefined {
    return this.history.find(c.conversation, match);
  }

  /** One browser message of the socket's user: watch its run, persist it, then ack (or nack with the reason). */
  async inbound(ws: WebSocket, msg: SendFrame): Promise<void> {
    const { ctx } = this;
    const user = this.userOf(ws);
    if (!user) return;
    const nack = (code: string, message: string) => this.send(ws, { type: "nack", id: msg.id, chat: msg.chat, code, message });
    let c: WebChat;
    try {
      c = webChat(user, msg.chat);
    } catch (err) {
      return nack(LurkError.from(err).code, (err as Error).message);
    }
    const files: WebFile[] = [];
    for (const { ref } of msg.attachments) {
      const file = this.files.known(user, ref);
      if (!file) return nack("VALIDATION_FAILED", `file ${ref.slice(0, 12)}… was not uploaded here (or has expired): upload it again`);
      files.push(file);
    }
    const inboundId = scoped(user, msg.id);
    const runId = ctx.runIdFor(inboundId);
    const isNew = !this.watches.has(runId);
    if (isNew) this.watch(c, runId);
    try {
      await ctx.rt.nc.flush();
      const sessionName = sessionNameOf(c);
      const published = await ctx.publishInbound({
        id: inboundId,
        conversation: c.conversation,
        peer: { kind: "dm", id: user.id },
        sender: { id: user.id, name: user.name },
        text: msg.text,
        attachments: files.map(toAttachment),
        mentioned: true,
        ...(sessionName ? { sessionName } : {}),
      });
      if (published.duplicate) {
        if (isNew) this.unwatch(runId);
      } else {
        await this.record(c, { ts: Date.now(), role: "user", kind: "message", id: msg.id, text: msg.text, runId, ...(files.length ? { attachments: files } : {}) });
      }
      this.send(ws, { type: "ack", id: msg.id, chat: msg.chat, runId, duplicate: published.duplicate });
      ctx.log.debug({ runId, user: user.id, chat: msg.chat, duplicate: published.duplicate }, "browser message stored");
    } catch (err) {
      if (isNew) this.unwatch(runId);
      const e = LurkError.from(err);
      ctx.log.warn({ runId, code: e.code, err: e.message }, "browser message not stored");
      nack(e.code, e.message);
    }
  }

  private watch(c: WebChat, runId: string): void {
    const chat = c.chat;
    const watch = this.ctx.watchRun(runId, {
      onAppend: (text) => void this.broadcast(c, { type: "delta", chat, runId, text }),
      onEvent: (ev) => {
        const e = ev.event;
        if (e.kind === "tool_start") {
          this.broadcast(c, { type: "tool", chat, runId, toolCallId: e.toolCallId, name: e.name, phase: "start", detail: preview(JSON.stringify(e.args)) });
        } else if (e.kind === "tool_end") {
          this.broadcast(c, { type: "tool", chat, runId, toolCallId: e.toolCallId, name: e.name, phase: "end", isError: e.isError, durationMs: Math.round(e.durationMs), detail: preview(e.preview) });
        }
      },
      onEnd: (end) => {
        this.watches.delete(runId);
        this.broadcast(c, end.status === "done"
          ? { type: "run_end", chat, runId, status: "done" }
          : { type: "run_end", chat, runId, status: "error", code: end.code, message: end.message });
      },
    });
    this.watches.set(runId, watch);
    setTimeout(() => this.unwatch(runId), WATCH_MAX_MS).unref();
  }

  private unwatch(runId: string): void {
    this.watches.get(runId)?.stop();
    this.watches.delete(runId);
  }

  /** The user's sessions (their web chats and their main session), newest first; never another user's. */
  async sessions(user: WebUser): Promise<WebSession[]> {
    const { sessions } = await this.ctx.rt.client.call("sessions", "list", user.scope ? { sessionType: "dm", limit: SESSIONS_SCAN } : { limit: 200 });
    const out: WebSession[] = [];
    for (const s of sessions) {
      const chat = chatOfSessionKey(s.sessionKey, user);
      if (!chat) continue;
      out.push({ chat, sessionKey: s.sessionKey, updatedAt: s.updatedAt, records: s.records, active: s.activeRunId !== undefined, ...(s.label ? { label: s.label } : {}) });
    }
    return out.sort((a, b) => b.updatedAt - a.updatedAt);
  }

  stop(): void {
    for (const runId of [...this.watches.keys()]) this.unwatch(runId);
    for (const ws of this.sockets.keys()) ws.close(1001, "server stopping");
    this.sockets.clear();
  }
}

function preview(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > PREVIEW_CHARS ? `${flat.slice(0, PREVIEW_CHARS - 1)}…` : flat;
}
