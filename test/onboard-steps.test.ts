/**
 * `lurkbot onboard`'s Signal, Matrix, skills and hooks steps, as a real process on a temporary
 * LURKBOT_HOME with its answers piped in (or from flags), against local fakes of signal-cli's
 * HTTP daemon and a Matrix homeserver: the live checks (`GET /api/v1/check`, `whoami` whose
 * user_id must match), a failed check handled (again, leave the channel off; exit 1 without a
 * person), the access token stored as a secret and nowhere else, skills that lack something
 * listed with what they need, the chosen bundled hooks written as hooks.entries.
 */
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { parseConfig } from "../shared/runtime/config.js";
import { FakeMatrixServer } from "./fakes/matrix-server.js";
import { FakeOpenAIServer } from "./fakes/openai-server.js";
import { FakeSignalCli } from "./fakes/signal-cli-server.js";
import { freePort } from "./harness/nats.js";
import { runCli, type CliRun } from "./harness/cli.js";
import { onboard, OnboardHomes, type OnboardHome } from "./harness/onboard.js";

const KEY = "sk-onboard-steps-key-0123456789";
const NUMBER = "+15550001111";

const homes = new OnboardHomes("lurk-onboard-steps-");
const newHome = (extra: Record<string, string> = {}, config?: object): OnboardHome => homes.make(extra, config);
const readJson = (path: string) => JSON.parse(readFileSync(path, "utf8")) as Record<string, any>;
const okRun = (run: CliRun) => assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);

function assertNowhere(run: CliRun, home: OnboardHome, secret: string): void {
  assert.ok(!run.stdout.includes(secret), `stdout shows the secret:\n${run.stdout}`);
  assert.ok(!run.stderr.includes(secret), `stderr shows the secret:\n${run.stderr}`);
  try {
    assert.ok(!readFileSync(join(home.dir, "config.json"), "utf8").includes(secret), "config.json holds the secret");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
}

describe("lurkbot onboard: Signal, Matrix, skills, hooks", () => {
  let openai: FakeOpenAIServer;
  let signal: FakeSignalCli;
  let matrix: FakeMatrixServer;

  before(async () => {
    openai = await FakeOpenAIServer.start({ apiKey: KEY });
    signal = await FakeSignalCli.start();
    matrix = await FakeMatrixServer.start();
  });
  after(async () => {
    await openai.close();
    await signal.close();
    await matrix.close();
    homes.cleanup();
  });

  it("Signal and Matrix checked live, the token stored as a secret; a skill's missing needs listed; the chosen hooks enabled", async () => {
    const home = newHome({ OPENAI_BASE_URL: openai.baseUrl });
    const skill = join(home.dir, "skills", "needs-tools");
    mkdirSync(skill, { recursive: true });
    writeFileSync(join(skill, "SKILL.md"), "---\nname: needs-tools\ndescription: Summarize things with a tool\nrequires:\n  bins: [lurk-no-such-bin]\n  env: [LURK_SKILL_TEST_KEY]\n---\nbody\n");
    // security, mode, provider, model, key, channels 5,6 (signal, matrix); signal number and daemon;
    // homeserver, user id, token; DM policy Enter (pairing); hooks 2,3; start now? n
    const run = await onboard(home, [], ["y", "", "", "test-model", KEY, "5,6", NUMBER, signal.url, matrix.url, matrix.userId, matrix.token, "", "2,3", "n"]);
    okRun(run);
    assert.match(run.stdout, /ok: signal-cli's daemon answers at http:\/\/127\.0\.0\.1:\d+/);
    assert.match(run.stdout, new RegExp(`ok: the homeserver at .* knows the token as ${matrix.userId}`));
    assert.match(run.stdout, /needs-tools \(user\): Summarize things with a tool — needs: environment variable LURK_SKILL_TEST_KEY is not set .*; lurk-no-such-bin is not on PATH/);
    assert.match(run.stdout, /1\) boot-md — Run the agent workspace's BOOT\.md/);
    assert.match(run.stdout, /2\) command-logger — /);
    assert.match(run.stdout, /signal \(daemon checked\), matrix \(token checked\)/);
    const raw = readJson(join(home.dir, "config.json"));
    assert.deepEqual(raw.channels.signal, { enabled: true, account: NUMBER, url: signal.url });
    assert.deepEqual(raw.channels.matrix, { enabled: true, homeserverUrl: matrix.url, userId: matrix.userId });
    assert.equal(raw.routing.dm.policy, "pairing");
    assert.deepEqual(raw.hooks, { entries: { "command-logger": { enabled: true }, "session-memory": { enabled: true } } });
    assert.deepEqual(readJson(join(home.dir, "credentials", "secrets.json")), { OPENAI_API_KEY: KEY, LURKBOT_MATRIX_ACCESS_TOKEN: matrix.token });
    assertNowhere(run, home, matrix.token);
    const cfg = parseConfig(raw, { LURKBOT_HOME: home.dir }, home.dir);
    assert.equal(cfg.channels.signal?.account, NUMBER);
    // the hooks list agrees
    const hooks = await runCli(["hooks", "list", "--json"], home.env);
    const enabled = (JSON.parse(hooks.stdout).hooks as { name: string; enabled: boolean }[]).filter((h) => h.enabled).map((h) => h.name);
    assert.deepEqual(enabled, ["command-logger", "session-memory"]);
  });

  it("a failed live check: another account's Matrix token can be entered again; a Signal daemon that is down can be left off", async () => {
    const home = newHome({ OPENAI_BASE_URL: openai.baseUrl });
    const down = `http://127.0.0.1:${await freePort()}`;
    // signal: number, a URL nothing answers at, "What now?" 3 (leave signal off);
    // matrix: homeserver, another user id, token -> refused; Enter (again): homeserver Enter, the right id, token again
    const run = await onboard(home, [], ["y", "", "", "test-model", KEY, "5,6", NUMBER, down, "3", matrix.url, "@someone:test.local", matrix.token, "", "", matrix.userId, matrix.token, "", "", "n"]);
    okRun(run);
    assert.match(run.stdout, /check failed: signal-cli's daemon at http:\/\/127\.0\.0\.1:\d+ cannot be reached \(ECONNREFUSED\)/);
    assert.match(run.stdout, new RegExp(`check failed: the access token is ${matrix.userId}'s, not @someone:test\\.local's`));
    assert.match(run.stdout, /ok: the homeserver at .* knows the token/);
    const raw = readJson(join(home.dir, "config.json"));
    assert.equal(raw.channels.signal, undefined, "Signal left off");
    assert.equal(raw.channels.matrix.userId, matrix.userId);
    assert.equal(raw.hooks, undefined, "no hook chosen, none written");
    assertNowhere(run, home, matrix.token);
  });

  it("--non-interactive: Signal, Matrix and hooks from flags; a refused token is exit 1 with nothing written", async () => {
    const home = newHome({}, { hooks: { entries: { "boot-md": { enabled: true } } } });
    const flags = ["--non-interactive", "--yes", "--provider", "openai-compatible", "--base-url", openai.baseUrl, "--model", "test-model", "--api-key-env", "MY_KEY", "--channels", "signal,matrix",
      "--signal-account", NUMBER, "--signal-url", signal.url, "--matrix-homeserver", matrix.url, "--matrix-user-id", matrix.userId, "--matrix-token-env", "MX_TOKEN"];
    const run = await onboard(home, [...flags, "--hooks", "session-memory"], undefined, { MY_KEY: KEY, MX_TOKEN: matrix.token });
    okRun(run);
    const raw = readJson(join(home.dir, "config.json"));
    assert.deepEqual(raw.channels.signal, { enabled: true, account: NUMBER, url: signal.url });
    assert.equal(raw.channels.matrix.homeserverUrl, matrix.url);
    assert.deepEqual(raw.hooks.entries, { "boot-md": { enabled: false }, "session-memory": { enabled: true } });
    assert.equal(readJson(join(home.dir, "credentials", "secrets.json")).LURKBOT_MATRIX_ACCESS_TOKEN, matrix.token);
    assertNowhere(run, home, matrix.token);

    const refusedHome = newHome();
    const refused = await onboard(refusedHome, flags, undefined, { MY_KEY: KEY, MX_TOKEN: "syt_not-the-right-token-0123" });
    assert.equal(refused.code, 1, `${refused.stdout}\n${refused.stderr}`);
    assert.match(refused.stderr, /live check of the Matrix access token failed: .*refused the access token \(401 M_UNKNOWN_TOKEN\).*--skip-check/);
    assert.deepEqual(readdirSync(refusedHome.dir), []);
    const badHook = await onboard(newHome(), [...flags, "--hooks", "no-such-hook"], undefined, { MY_KEY: KEY, MX_TOKEN: matrix.token });
    assert.equal(badHook.code, 64);
    assert.match(badHook.stderr, /--hooks LIST: "no-such-hook" is not one of boot-md, command-logger, session-memory/);
    const badNumber = await onboard(newHome(), [...flags.filter((f) => f !== NUMBER && f !== "--signal-account"), "--signal-account", "5550001111"], undefined, { MY_KEY: KEY, MX_TOKEN: matrix.token });
    assert.equal(badNumber.code, 64);
    assert.match(badNumber.stderr, /--signal-account \+NUMBER: a phone number in E\.164 form/);
  });
});
