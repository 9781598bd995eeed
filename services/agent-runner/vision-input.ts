/**
 * Images for one model. `imageInputFor(messages, takesImages)`: when the model does not take
 * images, each image block (in user messages and tool results) becomes a text note saying so,
 * so the call goes out instead of being refused; otherwise the same array comes back.
 * Who takes images (`takesImages`, decided per call in llm-call.ts, so a failover to a text-only
 * model still works): every model but one the registry knows to lack vision. An unknown model
 * (a local server's, say) gets images as before; `models.entries.<ref>.capabilities.vision:
 * false` makes them notes for it.
 */
import type { LlmMessage } from "../../shared/contract/index.js";
import type { ModelInfo } from "./models.js";

export const IMAGE_NOT_TAKEN = "[an image is here, but this model does not take images, so it is not shown to you]";

/** true unless the registry knows the model and says it has no vision */
export function takesImages(info: Pick<ModelInfo, "known" | "capabilities">): boolean {
  return info.known === false || info.capabilities.vision;
}

export function imageInputFor(messages: LlmMessage[], takes: boolean): LlmMessage[] {
  if (takes || !messages.some(hasImage)) return messages;
  return messages.map((m) => {
    if (!hasImage(m)) return m;
    const content = (m.content as { type: string }[]).map((b) => (b.type === "image" ? { type: "text" as const, text: IMAGE_NOT_TAKEN } : b));
    return { ...m, content } as LlmMessage;
  });
}

const hasImage = (m: LlmMessage) => m.role !== "assistant" && m.content.some((b) => b.type === "image");
