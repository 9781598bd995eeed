/**
 * `!command` in `lurkbot chat`: runs one command of the operator's own shell on this machine
 * (`$SHELL -c`, else `/bin/sh -c`), not the agent's exec tool, so no sandbox and no approval.
 * Non-interactive: stdin is closed, the child leads a process group of its own (no controlling
 * terminal), so a stop signals the whole group (pipelines, children). stdout and stderr stream
 * to `write` as they come, up to `maxOutputBytes` (the rest is counted, not shown). The time
 * limit sends SIGTERM, then SIGKILL after a grace period; so does an abort (Ctrl-C), with SIGINT.
 * Chat's own end: while a command runs, this process's exit (end of input, an error,
 * process.exit), SIGHUP (its terminal closed) and SIGTERM SIGKILL the command's group (it has no
 * terminal of its own, so nothing else would stop it), then the signal does what it would have
 * done (the process ends by it unless someone else handles it).
 */
import { spawn } from "node:child_process";
import { isAbsolute } from "node:path";
import { StringDecoder } from "node:string_decoder";

export const SHELL_TIMEOUT_MS = 10 * 60_000;
export const SHELL_OUTPUT_MAX_BYTES = 256 * 1024;
/** after the first signal, how long the group has before SIGKILL */
const KILL_GRACE_MS = 2_000;

export interface ShellOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  maxOutputBytes: number;
  /** the text the command prints, as it comes (stdout and stderr interleaved) */
  write: (text: string) => void;
  /** aborting stops the command (SIGINT to its group, SIGKILL if it lingers) */
  signal?: AbortSignal;
}

export interface ShellResult {
  /** the exit code, or null when a signal ended it */
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  interrupted: boolean;
  /** bytes of output that were not shown (over the cap) */
  hiddenBytes: number;
  /** the shell could not be started (spawn error) */
  spawnError?: string;
}

/** the process groups of the commands running now */
const running = new Set<number>();
const killRunning = () => {
  for (const pid of running) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
  running.clear();
};
const ON_SIGNAL = ["SIGHUP", "SIGTERM"] as const;
const onSignal = (sig: NodeJS.Signals) => {
  killRunning();
  unwatch();
  // as without this handler: the signal ends the process unless another handler takes it
  if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
};
function watch(pid: number): void {
  if (running.size === 0) {
    process.on("exit", killRunning);
    for (const sig of ON_SIGNAL) process.on(sig, onSignal);
  }
  running.add(pid);
}
function unwatch(pid?: number): void {
  if (pid !== undefined) running.delete(pid);
  if (running.size > 0) return;
  process.off("exit", killRunning);
  for (const sig of ON_SIGNAL) process.off(sig, onSignal);
}

/** The operator's shell: $SHELL when it is an absolute path, else /bin/sh. */
export function localShell(env: NodeJS.ProcessEnv): string {
  const shell = env.SHELL;
  return shell && isAbsolute(shell) ? shell : "/bin/sh";
}

export function runLocalShell(command: string, opts: ShellOptions): Promise<ShellResult> {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(localShell(opts.env), ["-c", command], { cwd: opts.cwd, env: opts.env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    } catch (err) {
      resolve({ code: null, signal: null, timedOut: false, interrupted: false, hiddenBytes: 0, spawnError: (err as Error).message });
      return;
    }
    let shown = 0;
    let hiddenBytes = 0;
    let timedOut = false;
    let interrupted = false;
    let killTimer: NodeJS.Timeout | undefined;
    const pid = child.pid;
    if (pid !== undefined) watch(pid);
    const signalGroup = (sig: NodeJS.Signals) => {
      if (pid === undefined) return;
      try {
        process.kill(-pid, sig);
      } catch {
        // the group is gone already
      }
    };
    const stop = (sig: NodeJS.Signals) => {
      signalGroup(sig);
      killTimer ??= setTimeout(() => signalGroup("SIGKILL"), KILL_GRACE_MS);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop("SIGTERM");
    }, opts.timeoutMs);
    const onAbort = () => {
      interrupted = true;
      stop("SIGINT");
    };
    if (opts.signal?.aborted) onAbort();
    else opts.signal?.addEventListener("abort", onAbort, { once: true });

    const pipe = (stream: NodeJS.ReadableStream) => {
      const decoder = new StringDecoder("utf8");
      stream.on("data", (chunk: Buffer) => {
        const room = opts.maxOutputBytes - shown;
        if (room <= 0) {
          hiddenBytes += chunk.length;
          return;
        }
        const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
        hiddenBytes += chunk.length - part.length;
        shown += part.length;
        const text = decoder.write(part);
        if (text) opts.write(text);
      });
    };
    pipe(child.stdout);
    pipe(child.stderr);
    let spawnError: string | undefined;
    let settled = false;
    const finish = (code: number | null, signal: NodeJS.Signals | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
      // children the shell left in the group go with it when the command was stopped
      if (timedOut || interrupted) signalGroup("SIGKILL");
      if (killTimer) clearTimeout(killTimer);
      if (pid !== undefined) unwatch(pid);
      resolve({ code, signal, timedOut, interrupted, hiddenBytes, ...(spawnError ? { spawnError } : {}) });
    };
    child.once("error", (err) => {
      spawnError = err.message;
      if (pid === undefined) finish(null, null);
    });
    child.once("close", (code, signal) => finish(code, signal));
    // a background job (`cmd &`) may keep the pipes open after the shell exits: do not wait for it
    child.once("exit", (code, signal) => {
      setTimeout(() => {
        if (settled) return;
        child.stdout.destroy();
        child.stderr.destroy();
        finish(code, signal);
      }, 250).unref();
    });
  });
}
