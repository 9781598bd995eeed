/**
 * `lurkbot onboard` as a real process with a temp LURKBOT_HOME, its questions answered through a
 * pipe, against the fake OpenAI and Telegram servers: QuickStart writes a valid config.json and a
 * 0600 secrets file, and the key shows up nowhere else; a refused key is reported and entered
 * again; a Telegram token is checked with getMe; --non-interactive takes every answer from flags,
 * and a missing one is exit 64 naming the flag; end of input writes nothing; Ctrl-C during a
 * slow live check ends it at once and writes nothing, even when the rest is answered by flags;
 * --reset keeps a backup.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { parseConfig } from "../shared/runtime/config.js";
import { FakeOpenAIServer } from "./fakes/openai-server.js";
import { FakeTelegramServer } from "./fakes/telegram-server.js";
import { waitFor } from "./harness/actors.js";
import { runCli, startCli } from "./harness/cli.js";
import { assertNowhere, onboard, OnboardHomes, type OnboardHome } from "./harness/onboard.js";

const KEY = "sk-onboard-right-key-0123456789";
const WRONG = "sk-onboard-wrong-key-9876543210";

const homes = new OnboardHomes("lurk-onboard-");
const newHome = (extra: Record<string, string> = {}, config?: object): OnboardHome => homes.make(extra, config);

const readJson = (path: string) => JSON.parse(readFileSync(path, "utf8")) as Record<string, any>;
const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

describe("lurkbot onboard", () => {
  let openai: FakeOpenAIServer;
  let telegram: FakeTelegramServer;

  before(async () => {
    openai = await FakeOpenAIServer.start({ apiKey: KEY });
    telegram = await FakeTelegramServer.start();
  });
  after(async () => {
    await openai.close();
    await telegram.close();
    homes.cleanup();
  });

  it("QuickStart with OpenAI: checks the key live, writes a valid config.json and a 0600 secrets file; the key is nowhere else", async () => {
    const home = newHome({ OPENAI_BASE_URL: openai.baseUrl });
    // security, mode, provider, model, key, channels (Enter: web), hooks (Enter: none), start now?
    const run = await onboard(home, [], ["y", "", "", "test-model", KEY, "", "", "n"]);
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stdout, /press Enter for the default/);
    assert.match(run.stdout, /ok: .* accepted the key and lists test-model/);
    const raw = readJson(join(home.dir, "config.json"));
    assert.equal(raw.model, "openai/test-model");
    assert.equal(raw.channels.web.enabled, true);
    assert.equal(raw.providers?.openai?.apiKey, undefined);
    const cfg = parseConfig(raw, { LURKBOT_HOME: home.dir }, home.dir);
    assert.equal(cfg.model, "openai/test-model");
    assert.equal(mode(join(home.dir, "config.json")), "600");
    const secretsPath = join(home.dir, "credentials", "secrets.json");
    assert.equal(mode(secretsPath), "600");
    assert.deepEqual(readJson(secretsPath), { OPENAI_API_KEY: KEY });
    assertNowhere(run, home, [KEY]);
    // setup and init ran: NATS credentials, the channel token, the workspace's files
    assert.ok(existsSync(join(home.dir, "credentials", "nats.json")));
    assert.ok(existsSync(join(home.dir, "workspace", "SOUL.md")));
    const webToken = readJson(join(home.dir, "credentials", "channels.json")).web.token as string;
    assert.ok(run.stdout.includes(`http://127.0.0.1:8790/?token=${webToken}`), run.stdout);
    assert.match(run.stdout, /Next: npx lurkbot start/);
    // the CLI now sees the stored key like an exported one (auth list shows the profile, never the key)
    const list = await runCli(["auth", "list", "--json"], home.env);
    assert.match(list.stdout, /"provider": ?"openai"/);
    assert.ok(!list.stdout.includes(KEY));
  });

  it("a refused key is reported and can be entered again", async () => {
    const home = newHome({ OPENAI_BASE_URL: openai.baseUrl });
    // ... the wrong key, "What now?" Enter (= enter the key again), the right key, channels none, hooks Enter, start no
    const run = await onboard(home, [], ["y", "", "", "test-model", WRONG, "", KEY, "none", "", "n"]);
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stdout, /check failed: .*refused the API key \(HTTP 401/);
    assert.match(run.stdout, /enter the API key again/);
    assert.match(run.stdout, /ok: .* accepted the key/);
    assert.deepEqual(readJson(join(home.dir, "credentials", "secrets.json")), { OPENAI_API_KEY: KEY });
    assert.equal(readJson(join(home.dir, "config.json")).channels, undefined);
    assertNowhere(run, home, [KEY, WRONG]);
  });

  it("Telegram: the token is checked with getMe at the config's API root; a wrong one can be entered again", async () => {
    const home = newHome({ OPENAI_BASE_URL: openai.baseUrl }, { channels: { telegram: { apiRoot: telegram.url } }, log: { level: "warn" } });
    const bad = "123456:WRONG-telegram-token-abcdefghij";
    // channels: 2 (telegram); the wrong token, "What now?" Enter (again), the right one; DM policy Enter (pairing); hooks Enter
    const run = await onboard(home, [], ["y", "", "", "test-model", KEY, "2", bad, "", telegram.token, "", "", "n"]);
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stdout, /Telegram Bot API refused the token \(401 Unauthorized\)/);
    assert.match(run.stdout, /ok: Telegram knows the bot as @LurkTestBot/);
    const raw = readJson(join(home.dir, "config.json"));
    assert.deepEqual(raw.channels.telegram, { apiRoot: telegram.url, enabled: true });
    assert.equal(raw.log.level, "warn", "what was there stays");
    assert.equal(raw.routing.dm.policy, "pairing");
    assert.deepEqual(readJson(join(home.dir, "credentials", "secrets.json")), { OPENAI_API_KEY: KEY, TELEGRAM_BOT_TOKEN: telegram.token });
    assertNowhere(run, home, [KEY, telegram.token, bad.split(":")[1]!]);
    // setup sees the stored token like an exported one
    const setup = await runCli(["setup"], home.env);
    assert.match(setup.stdout, /telegram channel: botToken is set/);
  });

  it("--non-interactive: every answer from flags, the key from the variable --api-key-env names", async () => {
    const home = newHome();
    const run = await onboard(home, ["--non-interactive", "--yes", "--provider", "openai-compatible", "--base-url", openai.baseUrl, "--model", "test-model", "--api-key-env", "MY_KEY", "--channels", "web"], undefined, { MY_KEY: KEY });
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    const raw = readJson(join(home.dir, "config.json"));
    assert.equal(raw.model, "openai/test-model");
    assert.equal(raw.providers.openai.baseUrl, openai.baseUrl);
    assert.equal(raw.channels.web.enabled, true);
    assert.deepEqual(readJson(join(home.dir, "credentials", "secrets.json")), { OPENAI_API_KEY: KEY });
    // no generated web token in a script's log: it says where the token is
    const webToken = readJson(join(home.dir, "credentials", "channels.json")).web.token as string;
    assertNowhere(run, home, [KEY, webToken]);
    assert.match(run.stdout, /web chat: http:\/\/127\.0\.0\.1:8790\/\?token=<the "web" token in/);

    // a refused key: exit 1, it says what to do, and nothing changes
    const again = newHome();
    const refused = await onboard(again, ["--non-interactive", "--yes", "--provider", "openai-compatible", "--base-url", openai.baseUrl, "--model", "test-model", "--api-key-env", "MY_KEY"], undefined, { MY_KEY: WRONG });
    assert.equal(refused.code, 1, `${refused.stdout}\n${refused.stderr}`);
    assert.match(refused.stderr, /refused the API key.*--skip-check/s);
    assert.deepEqual(readdirSync(again.dir), []);
    assertNowhere(refused, again, [WRONG]);
  });

  it("--non-interactive: a missing answer is exit 64 naming the flag to add", async () => {
    const cases: [string[], Record<string, string>, RegExp][] = [
      [["--provider", "openai"], {}, /add --yes/],
      [["--yes"], {}, /add --provider/],
      [["--yes", "--provider", "openai"], {}, /API key: add --api-key-env NAME/],
      [["--yes", "--provider", "openai-compatible", "--base-url", "http://127.0.0.1:9/v1"], {}, /add --model NAME/],
      [["--yes", "--provider", "gemini"], {}, /--provider .*must be one of openai, anthropic, openai-compatible, ollama/],
      [["--yes", "--provider", "openai", "--api-key-env", "NOT_SET"], {}, /the variable NOT_SET is not set/],
      [["--yes", "--provider", "openai", "--api-key-env", "sk-abc123"], {}, /the NAME of an environment variable/],
    ];
    for (const [args, env, message] of cases) {
      const home = newHome();
      const run = await onboard(home, ["--non-interactive", ...args], undefined, env);
      assert.equal(run.code, 64, `${args.join(" ")}: ${run.stdout}\n${run.stderr}`);
      assert.match(run.stderr, message);
      assert.deepEqual(readdirSync(home.dir), [], "nothing written");
    }
  });

  it("end of input mid-way cancels and writes nothing", async () => {
    const home = newHome({ OPENAI_BASE_URL: openai.baseUrl }, { log: { level: "warn" } });
    const before = readFileSync(join(home.dir, "config.json"), "utf8");
    const run = await onboard(home, [], ["y", "", "", "test-model", KEY]);
    assert.equal(run.code, 1, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stderr, /cancelled \(end of input\); nothing was written/);
    assert.deepEqual(readdirSync(home.dir), ["config.json"]);
    assert.equal(readFileSync(join(home.dir, "config.json"), "utf8"), before);
  });

  it("Ctrl-C during a slow live check, the other answers from flags: the check ends at once, nothing is written, exit 1", async () => {
    // the check would succeed after 4 s (within its 15 s timeout): before, the wizard then went on and wrote
    const slow = await FakeOpenAIServer.start({ apiKey: KEY, modelsDelayMs: 4_000 });
    try {
      for (const mode of [[], ["--non-interactive"]]) {
        const home = newHome();
        const args = ["onboard", ...mode, "--yes", "--provider", "openai-compatible", "--base-url", slow.baseUrl, "--model", "test-model", "--api-key-env", "MY_KEY", "--channels", "none"];
        // stdin stays open: no end of input, only the Ctrl-C (interactive: Enter for the mode, the one question without a flag)
        const run = startCli(args, { ...home.env, MY_KEY: KEY }, "pipe");
        if (mode.length === 0) run.child.stdin!.write("\n");
        const before = slow.modelRequests;
        await waitFor(() => slow.modelRequests > before, 30_000, "the live check's request");
        const sent = Date.now();
        run.child.kill("SIGINT");
        const code = await Promise.race([run.exited, new Promise<string>((r) => setTimeout(() => r("still running"), 20_000))]);
        if (code === "still running") run.child.kill("SIGKILL");
        const took = Date.now() - sent;
        assert.equal(code, 1, `${mode.join(" ")}: ${run.stdout()}\n${run.stderr()}`);
        assert.ok(took < 3_000, `ended ${took} ms after Ctrl-C (the check's answer was 4 s away)`);
        assert.match(run.stderr(), /cancelled \(Ctrl-C\); nothing was written/);
        assert.doesNotMatch(run.stdout(), /wrote |ok: /);
        assert.deepEqual(readdirSync(home.dir), [], "no config.json, no credentials/secrets.json");
      }
    } finally {
      await slow.close();
    }
  });

  it("--reset starts over after a confirmation and keeps the old config.json as a backup", async () => {
    const old = { model: "ollama/llama3.2", channels: { webhook: { enabled: true } }, log: { level: "warn" } };
    const home = newHome({}, old);
    const oldText = readFileSync(join(home.dir, "config.json"), "utf8");
    // interactive: declining the reset cancels
    const declined = await onboard(home, ["--reset"], ["y", "n"]);
    assert.equal(declined.code, 1);
    assert.match(declined.stderr, /--reset was not confirmed\); nothing was written/);
    assert.equal(readFileSync(join(home.dir, "config.json"), "utf8"), oldText);

    const run = await onboard(home, ["--reset", "--non-interactive", "--yes", "--provider", "openai-compatible", "--base-url", openai.baseUrl, "--model", "test-model", "--api-key-env", "MY_KEY", "--channels", "none"], undefined, { MY_KEY: KEY });
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    const backups = readdirSync(home.dir).filter((n) => /^config\.json\.bak-\d{8}T\d{6}Z$/.test(n));
    assert.equal(backups.length, 1, readdirSync(home.dir).join(", "));
    assert.equal(readFileSync(join(home.dir, backups[0]!), "utf8"), oldText);
    const raw = readJson(join(home.dir, "config.json"));
    assert.equal(raw.model, "openai/test-model");
    assert.equal(raw.channels, undefined, "the old channels are gone");
    assert.equal(raw.log, undefined);
    assert.match(run.stdout, /the old one is .*config\.json\.bak-/);
  });
});
