/**
 * Starts an actor whose main module is not under dist/services (a test fixture such as
 * test/fixtures/ext-tools/main.ts) as its own process, as NATS user `user`, and waits for its
 * "ready" IPC message, like startActorProcess does for the built-in actors.
 */
import { fork } from "node:child_process";
import { join } from "node:path";
import { REPO_ROOT } from "../../shared/scripts/paths.js";
import type { ActorProcess } from "./actors.js";
import type { TestNats } from "./nats.js";

/** `relativeMain`: the compiled module, relative to dist/ (e.g. "test/fixtures/ext-tools/main.js"). */
export async function startModuleActor(relativeMain: string, user: string, nats: TestNats, env: Record<string, string | undefined> = {}, timeoutMs = 20_000): Promise<ActorProcess> {
  const child = fork(join(REPO_ROOT, "dist", relativeMain), [], {
    env: nats.env({ ...nats.passwordEnv(user), ...env }),
    stdio: ["ignore", "pipe", "pipe", "ipc"],
  });
  let output = "";
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${relativeMain} did not become ready in ${timeoutMs} ms:\n${output}`)), timeoutMs);
    child.on("message", (m: { type?: string }) => {
      if (m?.type === "ready") {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${relativeMain} exited with ${code} before ready:\n${output}`));
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
