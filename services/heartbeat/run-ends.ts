/**
 * Watches the terminal run events (`lurk.run.evt.*.done|error`) and resolves the heartbeat runs
 * waiting for them. A waiter is registered before the inject is published, so no end is missed
 * while the actor is up; ends of other runs are ignored after a cheap subject check.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import type { SafeParseLimits, Subjects, Usage } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { subscribeRunEnds } from "../../shared/runtime/run-ends.js";

export type RunEnd =
  | { kind: "done"; text: string; usage: Usage; silent: boolean }
  | { kind: "error"; code: string; message: string }
  | { kind: "timeout" }
  /** the actor is stopping: the run stays pending for the next instance */
  | { kind: "stopped" };

export class RunEndWatcher {
  private readonly waiters = new Map<string, (end: RunEnd) => void>();
  private readonly ends: { stop(): void };

  constructor(nc: NatsConnection, subjects: Subjects, limits: SafeParseLimits, private readonly log: Logger) {
    this.ends = subscribeRunEnds(nc, subjects, limits, log, (runId, _kind, read) => {
      if (!this.waiters.has(runId)) return;
      const e = read();
      if (e?.kind === "done") this.resolve(runId, { kind: "done", text: e.text, usage: e.usage, silent: e.silent });
      else if (e?.kind === "error") this.resolve(runId, { kind: "error", code: e.code, message: e.message });
    });
  }

  /** Call before the run can start; `wait` then resolves with its end or `timeout`. */
  expect(runId: string, timeoutMs: number): { wait: Promise<RunEnd>; cancel(): void } {
    let cancel!: () => void;
    const wait = new Promise<RunEnd>((resolve) => {
      const timer = setTimeout(() => this.resolve(runId, { kind: "timeout" }), timeoutMs);
      this.waiters.set(runId, (end) => {
        clearTimeout(timer);
        resolve(end);
      });
      cancel = () => this.resolve(runId, { kind: "timeout" });
    });
    return { wait, cancel };
  }

  private resolve(runId: string, end: RunEnd): void {
    const waiter = this.waiters.get(runId);
    if (!waiter) return;
    this.waiters.delete(runId);
    waiter(end);
  }

  stop(): void {
    for (const runId of [...this.waiters.keys()]) this.resolve(runId, { kind: "stopped" });
    this.ends.stop();
  }
}
