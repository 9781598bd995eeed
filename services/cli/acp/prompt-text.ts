/**
 * An ACP prompt (content blocks) as the text of one LurkBot inbound message: text blocks as
 * they are, embedded text resources (files the editor attached) in a fenced block under their
 * URI, resource links as a line naming the file. Images and the binary resources prompt-files.ts
 * passes on go as attachments (the agent-runner shows them to the model): an image adds only a
 * line with its URI when it has one, such a resource a line naming it; other binary resources
 * and audio are a note that they were not passed on. The first prompt of a session starts with a context line naming
 * the editor's project directory (`cwd`): the agent's tools keep working in its own workspace.
 * The whole is cut to the inbound message's limit, with a note saying so.
 */
import { passedBlob, uriName } from "./prompt-files.js";
import type { ContentBlock } from "./schema.js";

/** inboundMessageSchema.text's limit */
export const MAX_PROMPT_CHARS = 100_000;

export function contextLine(cwd: string): string {
  return `[Editor (ACP) context: the user is working in the project directory ${cwd} on their machine. Your own tools still work in your workspace, which may be elsewhere.]`;
}

function fence(text: string): string {
  let ticks = "```";
  while (text.includes(ticks)) ticks += "`";
  return ticks;
}

function blockText(block: ContentBlock): string {
  switch (block.type) {
    case "text":
      return block.text;
    case "resource_link":
      return `[linked file: ${block.name} <${block.uri}>${block.description ? ` — ${block.description}` : ""}]`;
    case "resource": {
      const r = block.resource;
      if (typeof r.text === "string") {
        const t = r.text;
        const f = fence(t);
        return `Attached ${r.uri}:\n${f}\n${t}${t.endsWith("\n") ? "" : "\n"}${f}`;
      }
      if (passedBlob(r)) return `[attached ${r.uri}: sent as the file ${uriName(r.uri) ?? "with no name"}]`;
      return `[attached binary resource ${r.uri}${r.mimeType ? ` (${r.mimeType})` : ""}: not passed on]`;
    }
    case "image":
      return block.uri ? `[attached image ${block.uri}]` : "";
    case "audio":
      return `[an audio clip (${block.mimeType}) was attached: not passed on through ACP]`;
  }
}

export function promptText(blocks: readonly ContentBlock[], cwd?: string): string {
  const parts = blocks.map(blockText).filter((t) => t.length > 0);
  if (cwd) parts.unshift(contextLine(cwd));
  const text = parts.join("\n\n");
  if (text.length <= MAX_PROMPT_CHARS) return text;
  const note = `\n\n[… ${text.length - (MAX_PROMPT_CHARS - 200)} more characters of this prompt were cut: a message is limited to ${MAX_PROMPT_CHARS} characters]`;
  return text.slice(0, MAX_PROMPT_CHARS - 200) + note;
}
