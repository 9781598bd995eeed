/**
 * The open browser sockets and what flows to them. A socket shows one chat at a time; every
 * frame for a chat goes to all sockets showing it (several tabs). Browser messages become
 * inbound messages (id = the browser's UUID, so a resend after a reconnect is processed once;
 * conversation = the chat id; peer = the web user; session name = the chat id except "main"),
 * acknowledged only once LURK_INBOUND stored them. Before publishing, the run's events are
 * watched: reply text streams as `delta` frames, tool_start/tool_end as `tool` frames.
 */
import type { WebSocket } from "ws";
import { LurkError, parseSessionKey } from "../../shared/contract/index.js";
import type { ChannelContext, RunWatch } from "../../shared/runtime/channel/index.js";
import type { WebChannelConfig } from "../../shared/runtime/config-channels.js";
import { toAttachment, type WebFiles } from "./files.js";
import type { ChatHistory } from "./history.js";
import { MAIN_CHAT, type ChatEntry, type SendFrame, type ServerFrame, type WebFile, type WebSession } from "./protocol.js";

/** how long a run's events are streamed at most */
const WATCH_MAX_MS = 30 * 60_000;
/** entries sent when a chat is opened */
export const HISTORY_PAGE = 200;
const PREVIEW_CHARS = 160;

export class Hub {
  private readonly chatOf = new Map<WebSocket, string>();
  private readonly watches = new Map<string, RunWatch>();

  constructor(private readonly ctx: ChannelContext<WebChannelConfig>, private readonly history: ChatHistory, private readonly files: WebFiles) {}

  send(ws: WebSocket, frame: ServerFrame): void {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(frame));
  }

  /** Sends to every socket showing `chat`; returns how many got it. */
  broadcast(chat: string, frame: ServerFrame): number {
    let n = 0;
    for (const [ws, c] of this.chatOf) {
      if (c === chat && ws.readyState === ws.OPEN) {
        ws.send(JSON.stringify(frame));
        n++;
      }
    }
    return n;
  }

  open(ws: WebSocket, chat: string, since: number): void {
    this.chatOf.set(ws, chat);
    this.send(ws, { type: "history", chat, entries: this.history.since(chat, since, HISTORY_PAGE) });
  }

  leave(ws: WebSocket): void {
    this.chatOf.delete(ws);
  }

  /** Stores a chat line and shows it to the chat's sockets. */
  async record(chat: string, entry: Omit<ChatEntry, "seq">): Promise<ChatEntry> {
    const stored = await this.history.append(chat, entry);
    this.broadcast(chat, { type: "entry", chat, entry: stored });
    return stored;
  }

  /** One browser message: watch its run, persist it, then ack (or nack with the reason). */
  async inbound(ws: WebSocket, msg: SendFrame): Promise<void> {
    const { ctx } = this;
    const files: WebFile[] = [];
    for (const { ref } of msg.attachments) {
      const file = this.files.known(ref);
      if (!file) {
        const message = `file ${ref.slice(0, 12)}… was not uploaded here (or has expired): upload it again`;
        return this.send(ws, { type: "nack", id: msg.id, chat: msg.chat, code: "VALIDATION_FAILED", message });
      }
      files.push(file);
    }
    const runId = ctx.runIdFor(msg.id);
    const isNew = !this.watches.has(runId);
    if (isNew) this.watch(msg.chat, runId);
    try {
      await ctx.rt.nc.flush();
      const published = await ctx.publishInbound({
        id: msg.id,
        conversation: msg.chat,
        peer: { kind: "dm", id: ctx.settings.userId },
        sender: { id: ctx.settings.userId, name: "Web" },
        text: msg.text,
        attachments: files.map(toAttachment),
        mentioned: true,
        ...(msg.chat === MAIN_CHAT ? {} : { sessionName: msg.chat }),
      });
      if (published.duplicate) {
        if (isNew) this.unwatch(runId);
      } else {
        await this.record(msg.chat, { ts: Date.now(), role: "user", kind: "message", id: msg.id, text: msg.text, runId, ...(files.length ? { attachments: files } : {}) });
      }
      this.send(ws, { type: "ack", id: msg.id, chat: msg.chat, runId, duplicate: published.duplicate });
      ctx.log.debug({ runId, chat: msg.chat, duplicate: published.duplicate }, "browser message stored");
    } catch (err) {
      if (isNew) this.unwatch(runId);
      const e = LurkError.from(err);
      ctx.log.warn({ runId, code: e.code, err: e.message }, "browser message not stored");
      this.send(ws, { type: "nack", id: msg.id, chat: msg.chat, code: e.code, message: e.message });
    }
  }

  private watch(chat: string, runId: string): void {
    const watch = this.ctx.watchRun(runId, {
      onAppend: (text) => void this.broadcast(chat, { type: "delta", chat, runId, text }),
      onEvent: (ev) => {
        const e = ev.event;
        if (e.kind === "tool_start") {
          this.broadcast(chat, { type: "tool", chat, runId, toolCallId: e.toolCallId, name: e.name, phase: "start", detail: preview(JSON.stringify(e.args)) });
        } else if (e.kind === "tool_end") {
          this.broadcast(chat, { type: "tool", chat, runId, toolCallId: e.toolCallId, name: e.name, phase: "end", isError: e.isError, durationMs: Math.round(e.durationMs), detail: preview(e.preview) });
        }
      },
      onEnd: (end) => {
        this.watches.delete(runId);
        this.broadcast(chat, end.status === "done"
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

  /** The web user's sessions (named web chats and the main session), newest first. */
  async sessions(): Promise<WebSession[]> {
    const { sessions } = await this.ctx.rt.client.call("sessions", "list", { limit: 200 });
    const out: WebSession[] = [];
    for (const s of sessions) {
      const chat = chatOfSessionKey(s.sessionKey);
      if (!chat) continue;
      out.push({ chat, sessionKey: s.sessionKey, updatedAt: s.updatedAt, records: s.records, active: s.activeRunId !== undefined, ...(s.label ? { label: s.label } : {}) });
    }
    return out.sort((a, b) => b.updatedAt - a.updatedAt);
  }

  stop(): void {
    for (const runId of [...this.watches.keys()]) this.unwatch(runId);
    for (const ws of this.chatOf.keys()) ws.close(1001, "server stopping");
    this.chatOf.clear();
  }
}

/** `agent:<a>:main` -> "main"; `agent:<a>:web:dm:<chat>` -> chat; anything else: not a web chat. */
export function chatOfSessionKey(key: string): string | undefined {
  const parsed = parseSessionKey(key);
  if (parsed?.type === "main") return MAIN_CHAT;
  const m = /^agent:[^:]+:web:dm:([A-Za-z0-9_-]{1,64})$/.exec(key);
  return m?.[1];
}

function preview(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > PREVIEW_CHARS ? `${flat.slice(0, PREVIEW_CHARS - 1)}…` : flat;
}
