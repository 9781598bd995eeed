/**
 * The onboarding wizard's live checks (services/cli/onboard/checks.ts) against the fakes: each
 * provider's SDK call and each platform's token call, right and wrong, and that no result
 * quotes the key or token it checked; an abort (the wizard's Ctrl-C) ends a slow check at once.
 * The prompt layer's answers from flags (PresetPrompter) and its interrupt, which stops the
 * wizard before its next step.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { checkChannelToken, checkModel, scrub, type CheckResult } from "../services/cli/onboard/checks.js";
import { createServer } from "node:http";
import { PresetPrompter, WizardCancelled, type Preset } from "../services/cli/onboard/prompt.js";
import { runWizard, WizardSession, type OnboardState } from "../services/cli/onboard/session.js";
import { FakeAnthropicServer } from "./fakes/anthropic-server.js";
import { FakeDiscordServer } from "./fakes/discord-server.js";
import { FakeOllamaServer } from "./fakes/ollama-server.js";
import { FakeOpenAIServer } from "./fakes/openai-server.js";
import { FakeSlackServer } from "./fakes/slack-server.js";

const KEY = "sk-check-right-0123456789";
const WRONG = "sk-check-wrong-0123456789";

function notQuoting(r: CheckResult, secrets: string[]): CheckResult {
  const text = JSON.stringify(r);
  for (const s of secrets) assert.ok(!text.includes(s), `the result quotes a secret: ${text}`);
  return r;
}

describe("onboard checks", () => {
  let openai: FakeOpenAIServer;
  let anthropic: FakeAnthropicServer;
  let ollama: FakeOllamaServer;
  let discord: FakeDiscordServer;
  let slack: FakeSlackServer;
  before(async () => {
    [openai, anthropic, ollama, discord, slack] = await Promise.all([
      FakeOpenAIServer.start({ apiKey: KEY }), FakeAnthropicServer.start({ apiKey: KEY }), FakeOllamaServer.start({ models: ["llama3.2:latest"] }),
      FakeDiscordServer.start(), FakeSlackServer.start(),
    ]);
  });
  after(async () => {
    await Promise.all([openai.close(), anthropic.close(), ollama.close(), discord.close(), slack.close()]);
  });

  it("OpenAI and compatible: the key, the URL and the model's presence", async () => {
    assert.equal((await checkModel({ provider: "openai-compatible", model: "test-model", baseUrl: openai.baseUrl, apiKey: KEY })).ok, true);
    const refused = notQuoting(await checkModel({ provider: "openai-compatible", model: "test-model", baseUrl: openai.baseUrl, apiKey: WRONG }), [WRONG]);
    assert.ok(!refused.ok && refused.kind === "auth", JSON.stringify(refused));
    const unlisted = await checkModel({ provider: "openai", model: "gpt-nope", baseUrl: openai.baseUrl, apiKey: KEY });
    assert.ok(!unlisted.ok && unlisted.kind === "model" && /it lists: test-model/.test(unlisted.fix), JSON.stringify(unlisted));
    const down = await checkModel({ provider: "openai-compatible", model: "m", baseUrl: "http://127.0.0.1:9/v1", apiKey: KEY }, 5_000);
    assert.ok(!down.ok && down.kind === "unreachable" && /cannot be reached/.test(down.problem), JSON.stringify(down));
  });

  it("Anthropic: a one-token message; Ollama: its pulled models", async () => {
    assert.equal((await checkModel({ provider: "anthropic", model: "claude-haiku-4-5", baseUrl: anthropic.baseUrl, apiKey: KEY })).ok, true);
    const refused = notQuoting(await checkModel({ provider: "anthropic", model: "claude-haiku-4-5", baseUrl: anthropic.baseUrl, apiKey: WRONG }), [WRONG]);
    assert.ok(!refused.ok && refused.kind === "auth", JSON.stringify(refused));
    assert.equal((await checkModel({ provider: "ollama", model: "llama3.2", baseUrl: ollama.url })).ok, true);
    const missing = await checkModel({ provider: "ollama", model: "qwen3", baseUrl: ollama.url });
    assert.ok(!missing.ok && missing.kind === "model" && /ollama pull qwen3/.test(missing.fix), JSON.stringify(missing));
  });

  it("Discord /users/@me and Slack auth.test / apps.connections.open", async () => {
    const roots = { telegram: "http://127.0.0.1:9", discord: discord.apiRoot, slack: slack.apiUrl };
    const ok = await checkChannelToken("discord", "botToken", discord.token, roots);
    assert.ok(ok.ok && /as lurk/.test(ok.detail), JSON.stringify(ok));
    const bad = notQuoting(await checkChannelToken("discord", "botToken", "discord-wrong-token-0123456789", roots), ["discord-wrong-token-0123456789"]);
    assert.ok(!bad.ok && bad.kind === "auth");
    assert.equal((await checkChannelToken("slack", "botToken", slack.botToken, roots)).ok, true);
    assert.equal((await checkChannelToken("slack", "appToken", slack.appToken, roots)).ok, true);
    const badSlack = notQuoting(await checkChannelToken("slack", "botToken", "xoxb-wrong-0000", roots), ["xoxb-wrong-0000"]);
    assert.ok(!badSlack.ok && /invalid_auth/.test(badSlack.problem));
    const down = await checkChannelToken("telegram", "botToken", "123:abcdefghijklmnop", roots, 5_000);
    assert.ok(!down.ok && down.kind === "unreachable");
  });

  it("an abort ends a slow check at once with the abort's reason (not a result, not the timeout)", async () => {
    const slow = await FakeOpenAIServer.start({ apiKey: KEY, modelsDelayMs: 10_000 });
    // a platform API that never answers
    const hang = createServer(() => undefined);
    await new Promise<void>((r) => hang.listen(0, "127.0.0.1", () => r()));
    const port = (hang.address() as { port: number }).port;
    try {
      for (const run of [
        (signal: AbortSignal) => checkModel({ provider: "openai-compatible", model: "test-model", baseUrl: slow.baseUrl, apiKey: KEY }, 15_000, signal),
        (signal: AbortSignal) => checkModel({ provider: "ollama", model: "llama3.2", baseUrl: `http://127.0.0.1:${port}` }, 15_000, signal),
        (signal: AbortSignal) => checkChannelToken("discord", "botToken", "discord-token-0123456789", { telegram: "", discord: `http://127.0.0.1:${port}`, slack: "" }, 15_000, signal),
      ]) {
        const abort = new AbortController();
        const reason = new WizardCancelled("Ctrl-C");
        const started = Date.now();
        const pending = run(abort.signal);
        setTimeout(() => abort.abort(reason), 200);
        await assert.rejects(pending, (e) => e === reason);
        assert.ok(Date.now() - started < 3_000, `ended after ${Date.now() - started} ms`);
      }
      // already aborted: no request at all
      const before = slow.modelRequests;
      const gone = new AbortController();
      gone.abort(new WizardCancelled("Ctrl-C"));
      await assert.rejects(checkModel({ provider: "openai-compatible", model: "test-model", baseUrl: slow.baseUrl, apiKey: KEY }, 15_000, gone.signal), WizardCancelled);
      assert.equal(slow.modelRequests, before);
    } finally {
      hang.closeAllConnections();
      await new Promise<void>((r) => hang.close(() => r()));
      await slow.close();
    }
  });

  it("an interrupt: flags answer nothing more, and the wizard stops before its next step", async () => {
    const p = new PresetPrompter(new Map<string, Preset>([["provider", "ollama"]]), {}, undefined, () => undefined);
    const ran: string[] = [];
    const session = new WizardSession(p, {} as OnboardState);
    const steps = ["one", "two", "three"].map((id) => ({
      id,
      run: async () => {
        ran.push(id);
        if (id === "one") p.interrupt("Ctrl-C");
      },
    }));
    await assert.rejects(runWizard(steps, session), (e) => e instanceof WizardCancelled && /cancelled \(Ctrl-C\)/.test(e.message));
    assert.deepEqual(ran, ["one"]);
    assert.ok(p.signal.aborted && p.signal.reason === p.cancelled);
    await assert.rejects(p.select({ id: "provider", message: "Model provider:", choices: [{ value: "ollama", label: "Ollama" }] }), WizardCancelled);
  });

  it("scrub takes keys and tokens out of error texts", () => {
    assert.equal(scrub("Incorrect API key provided: sk-abc***wxyz.", []), "Incorrect API key provided: <secret>.");
    assert.equal(scrub("GET /bot123:AAEabc/getMe failed for my-token-1", ["my-token-1"]), "GET /bot<secret>/getMe failed for <secret>");
  });

  it("PresetPrompter: flags answer by id, once; without a person a missing answer names its flag", async () => {
    const lines: string[] = [];
    const p = new PresetPrompter(new Map<string, Preset>([["provider", "ollama"], ["channels", ["web", "slack"]]]), { provider: "--provider", model: "--model NAME", security: "--yes" }, undefined, (l) => lines.push(l), new Set(["security"]));
    const choices = [{ value: "openai", label: "OpenAI" }, { value: "ollama", label: "Ollama" }] as const;
    assert.equal(await p.select({ id: "provider", message: "Model provider:", choices: [...choices] }), "ollama");
    await assert.rejects(p.select({ id: "provider", message: "Model provider:", choices: [...choices] }), /Model provider: add --provider/);
    assert.deepEqual(await p.multiselect({ id: "channels", message: "Channels:", choices: [{ value: "web", label: "w" }, { value: "slack", label: "s" }] }), ["web", "slack"]);
    assert.equal(await p.text({ id: "model", message: "Model name", default: "llama3.2" }), "llama3.2");
    await assert.rejects(p.confirm({ id: "security", message: "I understand; continue?", default: false }), (e: Error & { exitCode?: number }) => /add --yes/.test(e.message) && e.exitCode === 64);
    assert.ok(lines.some((l) => l.includes("ollama (--provider)")));
  });
});
