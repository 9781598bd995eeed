/**
 * One retry of a model call refused as too long (PROVIDER_CONTEXT_OVERFLOW): `compact` shrinks
 * the context (run-compaction.ts), `messages` is replaced in place, and the call is made once
 * more. Without a compacted context (nothing to summarize, summary failed) the error stands.
 */
import { LurkError, type AssistantMessage, type LlmMessage } from "../../shared/contract/index.js";

export type CompactContext = (messages: LlmMessage[]) => Promise<LlmMessage[] | undefined>;

export async function withOverflowRetry(call: () => Promise<AssistantMessage>, messages: LlmMessage[], compact: CompactContext | undefined): Promise<AssistantMessage> {
  try {
    return await call();
  } catch (err) {
    if (!compact || !LurkError.is(err) || err.code !== "PROVIDER_CONTEXT_OVERFLOW") throw err;
    const compacted = await compact(messages);
    if (!compacted) throw err;
    messages.splice(0, messages.length, ...compacted);
    return call();
  }
}
