/**
 * Files the agent sends (the `message` tool's files, a reply's attachments) shown in the editor:
 * saved as `lurkbot chat` saves them (files.ts: `$LURKBOT_HOME/downloads/`, a name already there
 * gets a numbered copy), then one agent_message_chunk per file with a `resource_link` block
 * (`file://` URI of the saved file, its name, MIME type and size); a file that could not be
 * fetched is a text chunk saying why. ACP v1 has no client capability for resource links in
 * updates: every client takes them as content blocks.
 */
import { pathToFileURL } from "node:url";
import type { Attachment } from "../../../shared/contract/index.js";
import type { MediaStore } from "../../../shared/runtime/media.js";
import { describeReceived, saveReceivedFiles, type ReceivedFile } from "../files.js";
import type { SessionUpdate } from "./schema.js";

export function receivedUpdates(files: readonly ReceivedFile[]): SessionUpdate[] {
  return files.map((f) => f.path
    ? { sessionUpdate: "agent_message_chunk", content: { type: "resource_link", uri: pathToFileURL(f.path).href, name: f.name, mimeType: f.mime, ...(f.size !== undefined ? { size: f.size } : {}) } }
    : { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `\n[${describeReceived(f)}]\n` } });
}

/** Saves the files and returns the updates that show them (with the message's text first, when it has one). */
export async function showReceived(media: MediaStore, attachments: readonly Attachment[], dir: string, text = ""): Promise<SessionUpdate[]> {
  const saved = await saveReceivedFiles(media, attachments, dir);
  const lead: SessionUpdate[] = text.trim() ? [{ sessionUpdate: "agent_message_chunk", content: { type: "text", text: `\n${text}\n` } }] : [];
  return [...lead, ...receivedUpdates(saved)];
}
