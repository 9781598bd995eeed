/**
 * Onboarding to an answer: `lurkbot onboard --non-interactive` against the fake OpenAI server
 * (which refuses any other key), then `lurkbot start --single-process` in an environment that
 * has no key at all, then `lurkbot send`: the reply proves the stored key reached the
 * agent-runner through the launcher.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { FakeOpenAIServer } from "./fakes/openai-server.js";
import { waitFor } from "./harness/actors.js";
import { CLI_MAIN, runCli } from "./harness/cli.js";
import { freePort } from "./harness/nats.js";

const KEY = "sk-onboard-e2e-key-0123456789";

describe("lurkbot onboard, then start and send", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  after(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it("the onboarded configuration answers a message through the fake model", async () => {
    const fake = await FakeOpenAIServer.start({ apiKey: KEY });
    cleanups.push(() => fake.close());
    const home = mkdtempSync(join(tmpdir(), "lurk-onboard-e2e-"));
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, LURKBOT_HOME: home, LURKBOT_NATS_URL: `nats://127.0.0.1:${await freePort()}`, LURKBOT_LOG_LEVEL: "warn" };

    const onboard = await runCli(["onboard", "--non-interactive", "--yes", "--provider", "openai-compatible", "--base-url", fake.baseUrl, "--model", "test-model", "--api-key-env", "LB_TEST_KEY", "--channels", "none"], { ...env, LB_TEST_KEY: KEY }, { timeoutMs: 60_000 });
    assert.equal(onboard.code, 0, `${onboard.stdout}\n${onboard.stderr}`);

    const launcher = spawn(process.execPath, [CLI_MAIN, "start", "--single-process"], { env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    launcher.stdout.on("data", (d: Buffer) => (output += d.toString()));
    launcher.stderr.on("data", (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => launcher.once("exit", (code) => resolve(code)));
    cleanups.push(async () => {
      if (launcher.exitCode === null && launcher.signalCode === null) {
        launcher.kill("SIGTERM");
        const timer = setTimeout(() => launcher.kill("SIGKILL"), 15_000);
        await exited;
        clearTimeout(timer);
      }
    });
    await waitFor(() => {
      if (launcher.exitCode !== null) throw new Error(`the launcher exited with ${launcher.exitCode}:\n${output}`);
      return output.includes("LurkBot is running");
    }, 90_000, "the launcher to start everything");

    const sent = await runCli(["send", "hello from onboarding", "--json", "--timeout", "60"], env, { timeoutMs: 90_000 });
    assert.equal(sent.code, 0, `${sent.stdout}\n${sent.stderr}\n${output}`);
    const reply = JSON.parse(sent.stdout) as { reply: string; kind: string };
    assert.equal(reply.reply, "echo: hello from onboarding");
    assert.equal(fake.requests.at(-1)?.headers.authorization, `Bearer ${KEY}`);
    assert.ok(!output.includes(KEY), "the launcher's output shows the key");
  });
});
