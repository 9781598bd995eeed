/**
 * Watches the terminal run events (`lurk.run.evt.*.done|error`) and resolves the heartbeat runs
 * waiting for them. A waiter is registered before the inject is published, so no end is missed
 * while the actor is up; ends of other runs are ignored after a cheap subject check.
 */
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { runEventSchema, safeParseJson, type SafeParseLimits, type Subjects, type Usage } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";

export type RunEnd =
  | { kind: "done"; text: string; usage: Usage; silent: boolean }
  | { kind: "error"; code: string; message: string }
  | { kind: "timeout" }
  /** the actor is stopping: the run stays pending for the next instance */
  | { kind: "stopped" };

export class RunEndWatcher {
  private readonly waiters = new Map<string, (end: RunEnd) => void>();
  private readonly subs: Subscription[] = [];

  constructor(nc: NatsConnection, subjects: Subjects, limits: SafeParseLimits, private readonly log: Logger) {
    const runIdIndex = subjects.prefix.split(".").length + 2;
    for (const subject of subjects.runTerminalAll) {
      this.subs.push(nc.subscribe(subject, {
        callback: (_err, msg) => {
          const runId = msg.subject.split(".")[runIdIndex];
          if (!runId || !this.waiters.has(runId)) return;
          try {
            const parsed = runEventSchema.parse(safeParseJson(msg.data, limits));
            const e = parsed.event;
            if (e.kind === "done") this.resolve(runId, { kind: "done", text: e.text, usage: e.usage, silent: e.silent });
            else if (e.kind === "error") this.resolve(runId, { kind: "error", code: e.code, message: e.message });
          } catch (err) {
            this.log.warn({ err, runId }, "malformed terminal run event ignored");
          }
        },
      }));
    }
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
    for (const sub of this.subs) sub.unsubscribe();
  }
}
