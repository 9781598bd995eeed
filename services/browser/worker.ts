/**
 * The browser worker thread: playwright-core, the BrowserSession with its Chromium and tabs,
 * the actions, snapshots, screenshots, evaluate and the egress proxy all live here, so their
 * memory (playwright-core's modules and everything the driver allocated) goes when the thread
 * ends. The actor's main thread (host.ts) starts it for the first call that needs the browser
 * and terminates it once Chromium has stopped (idle stop, `stop`, a crash, the actor stopping).
 * Each call gets what the main thread's handler had before: its deadline (the request's
 * timeoutMs), the session's begin/end (the idle stop waits for calls in flight), a signal
 * (the main thread forwards the cancellation), progress notes (posted back) and the restart
 * note. Logs go to the main thread's logger.
 */
import { parentPort, workerData } from "node:worker_threads";
import { LurkError } from "../../shared/contract/index.js";
import { runBrowserAction, type ActionContext, type ActionResult } from "./actions.js";
import { runEvaluate } from "./evaluate.js";
import { serializeError, type BrowserLog, type CallOutcome, type FromWorker, type SessionState, type ToWorker, type WorkerInit } from "./protocol.js";
import { BrowserSession } from "./session.js";
import { uploadTarget } from "./uploads.js";

const port = parentPort!;
const init = workerData as WorkerInit;

function post(message: FromWorker, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}

function logAt(level: "info" | "warn"): (obj: object, msg: string) => void {
  return (obj, msg) => {
    try {
      post({ type: "log", level, obj: obj as Record<string, unknown>, msg });
    } catch {
      post({ type: "log", level, obj: JSON.parse(JSON.stringify(obj)) as Record<string, unknown>, msg });
    }
  };
}
const log: BrowserLog = { info: logAt("info"), warn: logAt("warn") };

const session: BrowserSession = new BrowserSession({
  config: init.config, profileDir: init.profileDir, stagingRoot: init.stagingRoot, allowPrivateHosts: init.allowPrivateHosts, log,
  ended: init.ended, nextTabId: init.nextTabId,
  onEnded: () => post({ type: "ended", ...state() }),
});

function state(): SessionState {
  return { active: session.isActive, ended: session.endedReason, nextTabId: session.nextTabId };
}

/** the calls running here, by id: their cancellation */
const calls = new Map<number, AbortController>();
/** how long an approval notice's question about an upload's page may take */
const UPLOAD_TARGET_WAIT_MS = 1_500;

/**
 * The bytes in an ArrayBuffer of their own that may be transferred: always a copy. A Buffer made
 * by Node's native code (playwright-core's decoded screenshot) may be backed by memory that cannot
 * be detached, and on Node 22 and later transferring it throws, which ended the worker.
 */
function transferable(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(bytes);
}

async function call(m: Extract<ToWorker, { type: "call" }>): Promise<void> {
  const controller = new AbortController();
  calls.set(m.id, controller);
  const end = session.begin();
  let timer: NodeJS.Timeout | undefined;
  let outcome: CallOutcome;
  let notice: string | undefined;
  try {
    const ctx: ActionContext = {
      session, config: init.config, profileDir: init.profileDir, allow: init.allowPrivateHosts, signal: controller.signal,
      progress: (message) => post({ type: "progress", id: m.id, message }), imageCapBytes: m.imageCapBytes,
      deadlineAt: Date.now() + m.timeoutMs, workspace: m.workspace, agentId: m.agentId ?? "", approvalRequired: m.approvalRequired === true, approvedOrigin: m.approvedOrigin,
    };
    const work: Promise<ActionResult> = m.work.tool === "browser" ? runBrowserAction(m.work.args, ctx) : runEvaluate(m.work.args, ctx).then((text) => ({ text }));
    const deadline = new Promise<never>((_r, reject) => (timer = setTimeout(() => reject(new LurkError("TIMEOUT", `the browser call did not finish within ${m.timeoutMs} ms`)), m.timeoutMs)));
    const result = await Promise.race([work, deadline]);
    notice = session.takeNotice();
    outcome = result.image ? { ok: true, text: result.text, image: { mime: result.image.mime, bytes: transferable(result.image.bytes) } } : { ok: true, text: result.text };
  } catch (err) {
    notice = session.takeNotice();
    outcome = { ok: false, error: serializeError(err) };
  } finally {
    clearTimeout(timer);
    end();
    calls.delete(m.id);
  }
  const transfer = outcome.ok && outcome.image ? [outcome.image.bytes.buffer as ArrayBuffer] : [];
  post({ type: "result", id: m.id, notice, ...outcome, ...state() }, transfer);
}

/** What an approval notice says about the tab a script would run in. */
function where(tabId: string | undefined): string {
  try {
    const tab = session.isRunning ? session.tab(tabId) : undefined;
    return tab ? `in tab ${tab.id} (${tab.page.url().slice(0, 300)}): ` : "";
  } catch {
    return "";
  }
}

port.on("message", (m: ToWorker) => {
  switch (m.type) {
    case "call":
      void call(m);
      return;
    case "abort":
      calls.get(m.id)?.abort(new LurkError("ABORTED", m.reason));
      return;
    case "where":
      post({ type: "where", id: m.id, text: where(m.tabId) });
      return;
    case "uploadTarget":
      void uploadTarget(session, m.tabId, m.ref, UPLOAD_TARGET_WAIT_MS).then((target) => post({ type: "uploadTarget", id: m.id, ...target }));
      return;
    case "stop":
      void session.stop(m.why).catch(() => false).then((stopped) => post({ type: "stopped", id: m.id, stopped, ...state() }));
      return;
  }
});
