/**
 * A model call held by the test: the fake LLM keeps every request `match` accepts waiting until
 * `release()`, then answers `reply`; `reached` turns true when the first one arrives. Other
 * requests go to the fake's queue as usual. The responder stays set until the test clears it.
 */
import type { ChatRequestBody, FakeOpenAIServer, FakeReply } from "../fakes/openai-server.js";

export interface HeldReply {
  readonly reached: boolean;
  release(): void;
}

export function holdReplies(fake: FakeOpenAIServer, match: (body: ChatRequestBody) => boolean, reply: FakeReply): HeldReply {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let reached = false;
  fake.responder = async (body) => {
    if (!match(body)) return undefined;
    reached = true;
    await gate;
    return reply;
  };
  return { get reached() { return reached; }, release: () => release() };
}
