/**
 * The lines `lurkbot chat` handles itself rather than sending them to the router: `!command`
 * (the local shell), `/agent [ID]`, `/thinking [on|off]`, `/help` (shown here, then sent on so
 * the router's command list follows). `/file` and `/exit` are chat's too (chat.ts).
 */
import { agentIdSchema } from "../../shared/contract/index.js";

export type LocalLine =
  | { kind: "shell"; command: string }
  | { kind: "agent"; id?: string }
  | { kind: "agent-invalid"; id: string; reason: string }
  | { kind: "thinking"; on?: boolean }
  | { kind: "thinking-invalid"; value: string }
  | { kind: "help" };

/**
 * What a typed line (as typed: leading spaces matter) means to chat itself; undefined: a message.
 * `!` must be the first character and followed by a command (a lone `!`, or ` !ls`, is text).
 */
export function parseLocalLine(raw: string): LocalLine | undefined {
  if (raw.startsWith("!")) {
    const command = raw.slice(1).trim();
    return command ? { kind: "shell", command } : undefined;
  }
  const text = raw.trim();
  const agent = /^\/agent(?:\s+(.*))?$/i.exec(text);
  if (agent) {
    const id = agent[1]?.trim();
    if (!id) return { kind: "agent" };
    const parsed = agentIdSchema.safeParse(id);
    if (!parsed.success) return { kind: "agent-invalid", id, reason: parsed.error.issues[0]?.message ?? "not an agent id" };
    return { kind: "agent", id: parsed.data };
  }
  const thinking = /^\/thinking(?:\s+(.*))?$/i.exec(text);
  if (thinking) {
    const value = thinking[1]?.trim().toLowerCase();
    if (!value) return { kind: "thinking" };
    if (value === "on") return { kind: "thinking", on: true };
    if (value === "off") return { kind: "thinking", on: false };
    return { kind: "thinking-invalid", value: thinking[1]!.trim() };
  }
  if (/^\/(help|commands)$/i.test(text)) return { kind: "help" };
  return undefined;
}

/** chat's own commands, shown by /help before the router's list */
export const LOCAL_HELP: readonly string[] = [
  "Chat (handled in this terminal):",
  "  !COMMAND — run COMMAND in your own shell ($SHELL -c, else /bin/sh -c) on this machine, in chat's",
  "             directory; output shows here and is not sent to the agent. It is your shell, not the",
  "             agent's sandboxed exec tool: no sandbox, no approval. Asked once per chat (--allow-shell",
  "             allows it up front; needed when the input is not a terminal); Ctrl-C stops the command.",
  "  /agent [ID] — show the agent that answers, or switch this chat to agent ID",
  "  /thinking on|off — show the model's thinking (dimmed, apart from the answer); --thinking starts it on",
  "  /file PATH [text] — send a local file (quote a path with spaces)",
  "  y / n — approve or deny the oldest open tool approval (/approve ID, /deny ID)",
  "  /exit, /quit, Ctrl-D — quit (Ctrl-C quits at once, or stops a running !command)",
];
