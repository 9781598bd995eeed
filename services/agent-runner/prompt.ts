/**
 * A minimal system prompt: identity, agent, workspace, time, tools (one line each) and reply
 * guidance with the silent token. A later issue replaces it with the full sectioned builder.
 */
import type { ToolDefinition } from "../../shared/contract/index.js";

export const SILENT_TOKEN = "NO_REPLY";

export interface PromptInput {
  agentId: string;
  agentName?: string;
  workspace: string;
  sessionType: string;
  channel?: string;
  tools: ToolDefinition[];
  now?: Date;
}

/** resolved once: building an Intl formatter per run costs more than the rest of the prompt */
const TIME_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;

export function buildSystemPrompt(input: PromptInput): string {
  const now = input.now ?? new Date();
  const zone = TIME_ZONE;
  const tools = input.tools.length === 0
    ? "- (no tools are available right now)"
    : input.tools.map((t) => `- ${t.name}: ${firstLine(t.description)}`).join("\n");
  return [
    `You are ${input.agentName ?? "LurkBot"}, a personal AI assistant running on the user's own machine (LurkBot agent "${input.agentId}").`,
    "",
    "## Runtime",
    `- Workspace: ${input.workspace} (relative paths in tools resolve here)`,
    `- Current date and time: ${now.toISOString()} (time zone ${zone})`,
    `- Session: ${input.sessionType}${input.channel ? ` via ${input.channel}` : ""}`,
    "",
    "## Tools",
    tools,
    "Call a tool when it helps; you will see its result and can continue. If a tool returns an error, read it and correct the call rather than repeating it unchanged.",
    "",
    "## Replying",
    "- Answer directly and concisely; your final text is sent to the user as the reply.",
    "- Messages that start with [system event] come from LurkBot itself, not from the user.",
    `- If nothing needs to be said (for example a routine system event with nothing to report), reply with exactly ${SILENT_TOKEN} and nothing else; that reply is not delivered.`,
  ].join("\n");
}

function firstLine(text: string): string {
  const line = text.split("\n").find((l) => l.trim() !== "")?.trim() ?? "";
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}
