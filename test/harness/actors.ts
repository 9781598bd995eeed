/**
 * Starts actors as real child processes (`node dist/services/<actor>/main.js`), the way the
 * launcher does, and waits for their "ready" IPC message; or in this process (`startInProcess`),
 * for tests that hand an actor a clock or run two instances with separate homes.
 */
import { fork, type ChildProcess } from "node:child_process";
import { passwordEnvName } from "../../shared/contract/index.js";
import { startActor, type ActorDefinition, type ActorRuntime } from "../../shared/runtime/actor.js";
import type { LurkConfig } from "../../shared/runtime/config.js";
import { ACTOR_ENV, ACTOR_NODE_FLAGS } from "../../shared/runtime/memory.js";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { actorMainPath, DIST_ROOT } from "../../shared/scripts/paths.js";
import type { TestNats } from "./nats.js";

export interface ActorProcess {
  name: string;
  child: ChildProcess;
  /** stderr so far (logs) */
  output(): string;
  /** SIGTERM and wait (SIGKILL after 10 s) */
  stop(): Promise<number | null>;
  /** SIGKILL and wait */
  kill(): Promise<void>;
}

export async function startActorProcess(name: string, nats: TestNats, env: Record<string, string | undefined> = {}, timeoutMs = 20_000): Promise<ActorProcess> {
  // e.g. LURKBOT_ACTOR_EXEC_ARGV="--cpu-prof --cpu-prof-dir=/tmp/prof" to profile actors
  const execArgv = [...ACTOR_NODE_FLAGS, ...(process.env.LURKBOT_ACTOR_EXEC_ARGV ?? "").split(" ").filter(Boolean)];
  return startProcess(actorMainPath(name), name, name, nats, env, timeoutMs, execArgv);
}

/**
 * Starts an actor whose main module is not under dist/services (a test fixture such as
 * test/fixtures/ext-tools/main.ts) as NATS user `user`. `relativeMain` is relative to dist/.
 */
export function startModuleActor(relativeMain: string, user: string, nats: TestNats, env: Record<string, string | undefined> = {}, timeoutMs = 20_000): Promise<ActorProcess> {
  return startProcess(join(DIST_ROOT, relativeMain), relativeMain, user, nats, env, timeoutMs, []);
}

/** Forks `main` with `user`'s password and waits for its "ready" IPC message. */
async function startProcess(main: string, label: string, user: string, nats: TestNats, env: Record<string, string | undefined>, timeoutMs: number, execArgv: string[]): Promise<ActorProcess> {
  const child = fork(main, [], { env: nats.env({ ...ACTOR_ENV, ...nats.passwordEnv(user), ...env }), stdio: ["ignore", "pipe", "pipe", "ipc"], execArgv });
  let output = "";
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  // LURKBOT_ACTOR_OUTPUT_DIR=/tmp/x also copies each actor's output to <dir>/<label>.log (debugging)
  const copyTo = process.env.LURKBOT_ACTOR_OUTPUT_DIR;
  if (copyTo) {
    const file = join(copyTo, `${label.replace(/[^\w.-]/g, "_")}.log`);
    child.stdout?.on("data", (d: Buffer) => appendFileSync(file, d));
    child.stderr?.on("data", (d: Buffer) => appendFileSync(file, d));
  }
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${label} did not become ready in ${timeoutMs} ms:\n${output}`)), timeoutMs);
    child.on("message", (m: { type?: string }) => {
      if (m?.type === "ready") {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${label} exited with ${code} before ready:\n${output}`));
    });
  });
  return {
    name: user,
    child,
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      const force = setTimeout(() => child.kill("SIGKILL"), 10_000);
      child.kill("SIGTERM");
      const code = await exited;
      clearTimeout(force);
      return code;
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGKILL");
      await exited;
    },
  };
}

/** Polls `check` until it returns a truthy value or the time runs out. */
export async function waitFor<T>(check: () => Promise<T> | T, timeoutMs = 15_000, what = "condition"): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ""}`);
}

/** An actor in this process with `config`, connected as its own NATS user. */
export function startInProcess(definition: ActorDefinition, nats: TestNats, config: LurkConfig): Promise<ActorRuntime> {
  return startActor(definition, { config, env: { [passwordEnvName(definition.name)]: nats.password(definition.name) } });
}
