/** `lurk.tools.progress.<runId>` notes of one call (starting Chromium, loading a page), at most one per 250 ms. Never throws. */
import { toolProgressSchema, type ToolCallRequest } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";

const MIN_INTERVAL_MS = 250;

export function progressPublisher(rt: ActorRuntime, req: ToolCallRequest): (message: string) => void {
  let last = 0;
  return (message) => {
    const now = Date.now();
    if (now - last < MIN_INTERVAL_MS) return;
    last = now;
    const parsed = toolProgressSchema.safeParse({
      type: "lurk.tools.progress.v1", id: `${req.toolCallId}-${now}`, ts: now, runId: req.runId, sessionKey: req.sessionKey,
      causationId: req.id, toolCallId: req.toolCallId, message: message.slice(0, 2000),
    });
    if (!parsed.success) return;
    try {
      rt.nc.publish(rt.subjects.toolProgress(req.runId), JSON.stringify(parsed.data));
    } catch (err) {
      rt.log.warn({ err }, "could not publish tool progress");
    }
  };
}
