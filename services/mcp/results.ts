/**
 * An MCP tools/call result as the contract's tool reply: text blocks as text; images (PNG, JPEG,
 * GIF, WebP) as image blocks while they fit the bus payload (the tools actor's image cap: 3/4 of
 * the payload room, base64), else a note; embedded resources as their text (a binary one as a
 * note); resource links and audio as notes; `structuredContent` as JSON when there is no other
 * content; `isError` kept. Text is cut at tools.outputCapBytes.
 */
import { cutUtf8 } from "../../shared/runtime/cut-utf8.js";
import type { ToolCallReply } from "../../shared/contract/index.js";

const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

type Block = ToolCallReply["content"][number];

export interface ResultLimits {
  /** bytes of text in all at most */
  textCapBytes: number;
  /** bytes of base64 image data in all at most */
  imageCapBase64: number;
}

interface McpContent {
  type: string;
  text?: string;
  data?: string;
  mimeType?: string;
  uri?: string;
  name?: string;
  resource?: { uri: string; mimeType?: string; text?: string; blob?: string };
}

function cutText(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  const note = "\n[cut: the MCP tool's output was over tools.outputCapBytes]";
  return cutUtf8(text, Math.max(0, maxBytes - note.length)) + note;
}

export function mapResult(result: { content?: unknown; structuredContent?: unknown; isError?: unknown }, limits: ResultLimits): { content: Block[]; isError: boolean } {
  const out: Block[] = [];
  let textLeft = limits.textCapBytes;
  let imageLeft = limits.imageCapBase64;
  let capped = false;
  const text = (t: string) => {
    // past the cap: one note in all, not one per block (a result of many blocks stays small)
    if (capped) return;
    const cut = cutText(t, Math.max(0, textLeft));
    capped = cut !== t;
    textLeft -= Buffer.byteLength(cut);
    if (cut) out.push({ type: "text", text: cut });
  };
  const image = (mime: string, data: string, what: string) => {
    const bytes = Math.floor((data.length * 3) / 4);
    if (!IMAGE_TYPES.has(mime)) return text(`[${what}: ${mime}, ${bytes} bytes: not an image type the model is given (PNG, JPEG, GIF, WebP)]`);
    if (data.length > imageLeft) return text(`[${what}: ${mime}, ${bytes} bytes: over the reply's size cap, left out]`);
    imageLeft -= data.length;
    out.push({ type: "image", mime, dataBase64: data });
  };
  const content = Array.isArray(result.content) ? (result.content as McpContent[]) : [];
  for (const c of content) {
    if (c.type === "text" && typeof c.text === "string") text(c.text);
    else if (c.type === "image" && typeof c.data === "string") image(c.mimeType ?? "application/octet-stream", c.data, "image");
    else if (c.type === "audio") text(`[audio: ${c.mimeType ?? "unknown type"}: not given to the model]`);
    else if (c.type === "resource_link") text(`[resource link: ${c.uri ?? ""}${c.name ? ` (${c.name})` : ""}${c.mimeType ? `, ${c.mimeType}` : ""}]`);
    else if (c.type === "resource" && c.resource) {
      const r = c.resource;
      if (typeof r.text === "string") text(`[resource ${r.uri}${r.mimeType ? ` (${r.mimeType})` : ""}]\n${r.text}`);
      else if (typeof r.blob === "string" && r.mimeType && IMAGE_TYPES.has(r.mimeType)) image(r.mimeType, r.blob, `resource ${r.uri}`);
      else text(`[resource ${r.uri}: ${r.mimeType ?? "binary"}, ${Math.floor(((r.blob?.length ?? 0) * 3) / 4)} bytes of binary content, not shown]`);
    } else text(`[content of type ${JSON.stringify(String(c.type)).slice(0, 60)}: not shown]`);
  }
  if (out.length === 0 && result.structuredContent !== undefined) text(JSON.stringify(result.structuredContent, null, 2));
  if (out.length === 0) text("(the tool returned no content)");
  return { content: out, isError: result.isError === true };
}
