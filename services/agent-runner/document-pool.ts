/**
 * The agent-runner's document worker: the shared one (shared/runtime/documents/pool.ts: one
 * thread, started with the first document, stopped after 5 s idle, heap capped at 256 MB) with
 * the runner's words for a timeout (media.documentTimeoutMs), a stop and a cancelled run.
 */
import type { Logger } from "../../shared/runtime/logger.js";
import { DocumentPool as SharedDocumentPool } from "../../shared/runtime/documents/pool.js";

export class DocumentPool extends SharedDocumentPool {
  constructor(timeoutMs: number, log: Pick<Logger, "warn">) {
    super({ timeoutMs, log, timeoutSetting: "media.documentTimeoutMs", stoppingReason: "the agent-runner is stopping", cancelledReason: "the run was cancelled" });
  }
}
