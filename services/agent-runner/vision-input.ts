/**
 * Images for one model. `imageInputFor(messages, takesImages)`: when the model does not take
 * images, each image block (in user messages and tool results) becomes a text note saying so,
 * with the text OCR read in it when the run read it (image-text.ts), so the call goes out
 * instead of being refused; otherwise the same array comes back.
 * Who takes images (`takesImages`, decided per call in llm-call.ts, so a failover to a text-only
 * model still works): every model but one the registry knows to lack vision. An unknown model
 * (a local server's, say) gets images as before; `models.entries.<ref>.capabilities.vision:
 * false` makes them notes for it.
 */
import type { LlmMessage } from "../../shared/contract/index.js";
import type { ModelInfo } from "../../shared/runtime/models.js";

export const IMAGE_NOT_TAKEN = "[an image is here, but this model does not take images, so it is not shown to you]";

/** The image's place for a model without vision: the note, with the text OCR read in it when it was read (image-text.ts). */
export function imageNote(ocrText: string | undefined): string {
  if (ocrText === undefined) return IMAGE_NOT_TAKEN;
  if (ocrText.trim() === "") return "[an image is here, but this model does not take images; OCR found no text in it]";
  return `[an image is here, but this model does not take images; the text OCR recognized in it (it may contain errors):]\n${ocrText}`;
}

/** true unless the registry knows the model and says it has no vision */
export function takesImages(info: Pick<ModelInfo, "known" | "capabilities">): boolean {
  return info.known === false || info.capabilities.vision;
}

export function imageInputFor(messages: LlmMessage[], takes: boolean): LlmMessage[] {
  if (takes || !messages.some(hasImage)) return messages;
  return messages.map((m) => {
    if (!hasImage(m)) return m;
    const content = (m.content as Array<{ type: string; ocrText?: string }>).map((b) => (b.type === "image" ? { type: "text" as const, text: imageNote(b.ocrText) } : b));
    return { ...m, content } as LlmMessage;
  });
}

const hasImage = (m: LlmMessage) => m.role !== "assistant" && m.content.some((b) => b.type === "image");
