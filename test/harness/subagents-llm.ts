/**
 * The fake LLM side of the subagents suites (test/subagents*.test.ts): which request is a
 * child's, its task, the last message's text, and gates that hold a child's LLM call until the
 * test releases them.
 */
import { messageText, type ChatRequestBody } from "../fakes/openai-server.js";

/** the opening of the announce system event a parent session receives */
export const ANNOUNCE = "[system event] A background task";

export const systemText = (body: ChatRequestBody) => messageText(body.messages.find((m) => m.role === "system"));
/** a child run's request: the subagent prompt is in its system message */
export const isChild = (body: ChatRequestBody) => systemText(body).includes("## Subagent Context");
export const lastText = (body: ChatRequestBody) => messageText(body.messages.at(-1));
export const childTask = (body: ChatRequestBody) => messageText(body.messages.find((m) => m.role === "user"));

/** Held LLM calls: a child whose task contains `[hold:NAME]` waits until NAME is released. */
export class Gates {
  private readonly gates = new Map<string, { promise: Promise<void>; release: () => void }>();
  get(name: string) {
    let gate = this.gates.get(name);
    if (!gate) {
      let release!: () => void;
      const promise = new Promise<void>((r) => (release = r));
      gate = { promise, release };
      this.gates.set(name, gate);
    }
    return gate;
  }
  release(name: string) {
    this.get(name).release();
  }
  releaseAll() {
    for (const g of this.gates.values()) g.release();
  }
}
