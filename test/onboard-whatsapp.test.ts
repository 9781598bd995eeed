/**
 * `lurkbot onboard`'s WhatsApp steps, as a real process on a temporary LURKBOT_HOME with its
 * answers piped in (or from flags), against the local Graph API (test/fakes/whatsapp-server.ts,
 * which answers `GET /<version>/<phoneNumberId>?fields=…` and refuses other tokens with code 190):
 * the number checked live and shown by name, a refused token (190) and a wrong id (100) reported
 * with their fix and entered again, the three secrets in the 0600 secrets file and nowhere else,
 * a generated verify token shown once to a person (never with --non-interactive); the written
 * config validates and starts the real channel-whatsapp actor, which answers Meta's webhook check
 * with the stored verify token.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { actorGetsSecret, configuredChannelActors } from "../services/cli/actors.js";
import { checkWhatsAppNumber } from "../services/cli/onboard/checks-whatsapp.js";
import { withStoredSecrets } from "../services/cli/stored-secrets.js";
import { parseConfig } from "../shared/runtime/config.js";
import { FakeOpenAIServer } from "./fakes/openai-server.js";
import { FakeWhatsAppServer } from "./fakes/whatsapp-server.js";
import { startActorProcess } from "./harness/actors.js";
import type { CliRun } from "./harness/cli.js";
import { freePort, TestNats } from "./harness/nats.js";
import { assertNowhere, onboard, OnboardHomes } from "./harness/onboard.js";

const KEY = "sk-onboard-whatsapp-key-0123456789";
const WRONG_TOKEN = "EAATwrong0123456789abcdefwrong0123456789";
const APP_SECRET = "0123456789abcdef0123456789abcdef";

const homes = new OnboardHomes("lurk-onboard-wa-");
const readJson = (path: string) => JSON.parse(readFileSync(path, "utf8")) as Record<string, any>;
const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);
const okRun = (run: CliRun) => assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
const count = (text: string, part: string) => text.split(part).length - 1;

describe("lurkbot onboard: WhatsApp", () => {
  let openai: FakeOpenAIServer;
  let wa: FakeWhatsAppServer;
  let webhookPort: number;
  /** a home whose config.json points the channel at the fake Graph API (as tests point the other channels' API roots) */
  const newHome = (extra: Record<string, string> = {}) => homes.make(extra, { channels: { whatsapp: { apiBaseUrl: wa.url, port: webhookPort } } });

  before(async () => {
    openai = await FakeOpenAIServer.start({ apiKey: KEY });
    wa = await FakeWhatsAppServer.start();
    webhookPort = await freePort();
  });
  after(async () => {
    await openai.close();
    await wa.close();
    homes.cleanup();
  });

  it("the number checked live and shown by name; the secrets stored 0600; a generated verify token shown once; the config starts the channel", async () => {
    const home = newHome({ OPENAI_BASE_URL: openai.baseUrl });
    // security, mode, provider, model, key, channels 7 (whatsapp); phone number id, token; app secret,
    // generate the verify token (Enter: yes); DM policy Enter (pairing); hooks Enter; start now? n
    const run = await onboard(home, [], ["y", "", "", "test-model", KEY, "7", wa.phoneNumberId, wa.token, APP_SECRET, "", "", "", "n"]);
    okRun(run);
    assert.match(run.stdout, /7\) WhatsApp — a WhatsApp Business number through Meta's Cloud API/);
    assert.match(run.stdout, /ok: WhatsApp knows phone number id 106540352242922 as \+1 555-000-9999 \("LurkBot Test"\)/);
    assert.match(run.stdout, new RegExp(`The channel listens on 127\\.0\\.0\\.1:${webhookPort} at /whatsapp/webhook`));
    assert.match(run.stdout, /channels: terminal, whatsapp \(token checked\)/);
    assert.match(run.stdout, /callback URL: https:\/\/<your public host>\/whatsapp\/webhook/);
    assert.match(run.stdout, /whatsapp DMs follow routing\.dm like the other chat channels: policy pairing \(a new sender gets a code/);

    const configPath = join(home.dir, "config.json");
    const secretsPath = join(home.dir, "credentials", "secrets.json");
    assert.equal(mode(configPath), "600");
    assert.equal(mode(secretsPath), "600");
    const raw = readJson(configPath);
    assert.deepEqual(raw.channels.whatsapp, { apiBaseUrl: wa.url, port: webhookPort, enabled: true, phoneNumberId: wa.phoneNumberId });
    assert.equal(raw.routing.dm.policy, "pairing");
    const secrets = readJson(secretsPath);
    assert.deepEqual(Object.keys(secrets).sort(), ["OPENAI_API_KEY", "WHATSAPP_ACCESS_TOKEN", "WHATSAPP_APP_SECRET", "WHATSAPP_VERIFY_TOKEN"]);
    assert.equal(secrets.WHATSAPP_ACCESS_TOKEN, wa.token);
    assert.equal(secrets.WHATSAPP_APP_SECRET, APP_SECRET);
    const verifyToken = secrets.WHATSAPP_VERIFY_TOKEN as string;
    assert.match(verifyToken, /^[0-9a-f]{48}$/, "24 random bytes, hex");
    assert.equal(count(run.stdout, verifyToken), 1, "the generated verify token is shown once");
    assert.match(run.stdout, new RegExp(`verify token: ${verifyToken}  \\(generated; shown only now, stored as WHATSAPP_VERIFY_TOKEN in `));
    assertNowhere(run, home, [wa.token, APP_SECRET]);
    assert.ok(!readFileSync(configPath, "utf8").includes(verifyToken), "config.json holds the verify token");

    // the real schema, with the stored secrets as the launcher gives them
    const cfg = parseConfig(raw, { LURKBOT_HOME: home.dir, ...secrets }, home.dir);
    assert.deepEqual([cfg.channels.whatsapp?.enabled, cfg.channels.whatsapp?.phoneNumberId, cfg.channels.whatsapp?.accessToken, cfg.channels.whatsapp?.verifyToken], [true, wa.phoneNumberId, wa.token, verifyToken]);

    assert.ok(configuredChannelActors(cfg).includes("channel-whatsapp"), "the launcher runs the channel");

    // the channel's own start-up check passes with what the launcher hands it (the stored secrets the
    // CLI merges into its environment, filtered to the actor's grants), and it answers Meta's webhook check
    const granted = Object.fromEntries(Object.entries(withStoredSecrets({ LURKBOT_HOME: home.dir })).filter(([name]) => actorGetsSecret("channel-whatsapp", name)));
    assert.deepEqual(Object.keys(granted).sort(), ["WHATSAPP_ACCESS_TOKEN", "WHATSAPP_APP_SECRET", "WHATSAPP_VERIFY_TOKEN"]);
    const nats = await TestNats.start();
    try {
      writeFileSync(join(nats.home, "config.json"), JSON.stringify(raw));
      const actor = await startActorProcess("channel-whatsapp", nats, granted);
      try {
        const hook = `http://127.0.0.1:${webhookPort}/whatsapp/webhook`;
        assert.deepEqual(await wa.verify(hook, verifyToken, "challenge-7"), { status: 200, text: "challenge-7" });
        assert.equal((await wa.verify(hook, `${verifyToken}x`)).status, 403);
      } finally {
        await actor.stop();
      }
    } finally {
      await nats.stop();
    }
  });

  it("a refused token (190) and a wrong phone number id (100) are reported with their fix and entered again; a typed verify token is kept", async () => {
    const home = newHome({ OPENAI_BASE_URL: openai.baseUrl });
    const own = "my-own-verify-token-0123456789";
    // whatsapp: the phone number instead of its id (asked again), the id, a wrong token -> 190, "What now?" Enter (again); a wrong id, the right token -> 100, Enter (again);
    // the right id and token; app secret; generate? n, own token; DM policy Enter; hooks Enter; start n
    const run = await onboard(home, [], ["y", "", "", "test-model", KEY, "7", "+1 555 000 9999", wa.phoneNumberId, WRONG_TOKEN, "", "99999999", wa.token, "", wa.phoneNumberId, wa.token, APP_SECRET, "n", own, "", "", "n"]);
    okRun(run);
    assert.match(run.stdout, /the Phone number ID is 5 to 30 digits \(API Setup, under the number\), not the phone number/);
    assert.match(run.stdout, /check failed: the Graph API at http:\/\/127\.0\.0\.1:\d+ refused the access token \(HTTP 401, code 190: Invalid OAuth access token/);
    assert.match(run.stdout, /what to do: the token is mistyped, expired or revoked .*System users, Generate new token .*whatsapp_business_messaging/);
    assert.match(run.stdout, /check failed: the Graph API at .* cannot read phone number id 99999999 with this token \(HTTP 400, code 100: Unsupported get request/);
    assert.match(run.stdout, /what to do: check the Phone number ID \(your Meta app > WhatsApp > API Setup/);
    assert.match(run.stdout, /ok: WhatsApp knows phone number id 106540352242922/);
    assert.match(run.stdout, /verify token: the one you chose \(WHATSAPP_VERIFY_TOKEN\)/);
    assert.equal(readJson(join(home.dir, "config.json")).channels.whatsapp.phoneNumberId, wa.phoneNumberId);
    const secrets = readJson(join(home.dir, "credentials", "secrets.json"));
    assert.deepEqual([secrets.WHATSAPP_ACCESS_TOKEN, secrets.WHATSAPP_APP_SECRET, secrets.WHATSAPP_VERIFY_TOKEN], [wa.token, APP_SECRET, own]);
    assertNowhere(run, home, [wa.token, WRONG_TOKEN, APP_SECRET, own]);
  });

  it("--non-interactive: WhatsApp from flags with a generated verify token (stored, not printed); a missing flag is exit 64; a refused token is exit 1 with nothing written", async () => {
    const flags = ["--non-interactive", "--yes", "--provider", "openai-compatible", "--base-url", openai.baseUrl, "--model", "test-model", "--api-key-env", "MY_KEY", "--channels", "whatsapp",
      "--whatsapp-phone-number-id", wa.phoneNumberId, "--whatsapp-token-env", "WA_TOKEN"];
    const env = { MY_KEY: KEY, WA_TOKEN: wa.token, WA_SECRET: APP_SECRET };
    const home = newHome();
    const run = await onboard(home, [...flags, "--whatsapp-app-secret-env", "WA_SECRET"], undefined, env);
    okRun(run);
    assert.match(run.stdout, /ok: WhatsApp knows phone number id/);
    assert.match(run.stdout, /verify token: the generated WHATSAPP_VERIFY_TOKEN in .*secrets\.json/);
    const secrets = readJson(join(home.dir, "credentials", "secrets.json"));
    assert.ok((secrets.WHATSAPP_VERIFY_TOKEN as string).length >= 16);
    assert.equal(secrets.WHATSAPP_APP_SECRET, APP_SECRET);
    assertNowhere(run, home, [wa.token, APP_SECRET, secrets.WHATSAPP_VERIFY_TOKEN]);
    assert.equal(readJson(join(home.dir, "config.json")).channels.whatsapp.enabled, true);

    const noSecret = await onboard(newHome(), flags, undefined, env);
    assert.equal(noSecret.code, 64, `${noSecret.stdout}\n${noSecret.stderr}`);
    assert.match(noSecret.stderr, /WhatsApp app secret: add --whatsapp-app-secret-env NAME/);

    // the token itself given as the variable's NAME (it is shaped like one): refused without repeating it
    const misused = await onboard(newHome(), [...flags.slice(0, -1), wa.token, "--whatsapp-app-secret-env", "WA_SECRET"], undefined, env);
    assert.equal(misused.code, 64, `${misused.stdout}\n${misused.stderr}`);
    assert.match(misused.stderr, /--whatsapp-token-env: no variable of that name is set .*never the secret itself/);
    assert.ok(!`${misused.stdout}${misused.stderr}`.includes(wa.token.slice(4)), "the misused token is not repeated");

    const refusedHome = newHome();
    const before = readFileSync(join(refusedHome.dir, "config.json"), "utf8");
    const refused = await onboard(refusedHome, [...flags, "--whatsapp-app-secret-env", "WA_SECRET"], undefined, { ...env, WA_TOKEN: WRONG_TOKEN });
    assert.equal(refused.code, 1, `${refused.stdout}\n${refused.stderr}`);
    assert.match(refused.stderr, /live check of the WhatsApp access token failed: .*refused the access token \(HTTP 401, code 190.*--skip-check/);
    assert.equal(readFileSync(join(refusedHome.dir, "config.json"), "utf8"), before);
    assert.equal(existsSync(join(refusedHome.dir, "credentials")), false);
    assertNowhere(refused, refusedHome, [WRONG_TOKEN]);
  });

  it("the live check names a network failure and its fix, never the token", async () => {
    const down = `http://127.0.0.1:${await freePort()}`;
    const r = await checkWhatsAppNumber({ apiBaseUrl: down, apiVersion: "v26.0", phoneNumberId: wa.phoneNumberId }, wa.token, 5_000);
    assert.equal(r.ok, false);
    if (r.ok) return;
    assert.equal(r.kind, "unreachable");
    assert.match(r.problem, /the Graph API at http:\/\/127\.0\.0\.1:\d+ cannot be reached \(ECONNREFUSED\)/);
    assert.match(r.fix, /internet connection .*channels\.whatsapp\.apiBaseUrl/);
    assert.ok(!JSON.stringify(r).includes(wa.token));
    const version = await checkWhatsAppNumber({ apiBaseUrl: wa.url, apiVersion: "v1.0", phoneNumberId: wa.phoneNumberId }, wa.token, 5_000);
    assert.match(version.ok ? "" : `${version.problem} / ${version.fix}`, /answered HTTP 400, code 2635: Unknown version v1\.0 \/ check channels\.whatsapp\.apiVersion/);
  });
  it("a verify token generated while WHATSAPP_VERIFY_TOKEN is set in the shell: the summary says the shell's wins (never showing it)", async () => {
    const shellToken = "shell-verify-token-0123456789abcdef";
    const home = newHome({ OPENAI_BASE_URL: openai.baseUrl, WHATSAPP_VERIFY_TOKEN: shellToken });
    // … app secret; keep the verify token of the environment? n; generate? Enter (yes); DM policy Enter; hooks Enter; start n
    const run = await onboard(home, [], ["y", "", "", "test-model", KEY, "7", wa.phoneNumberId, wa.token, APP_SECRET, "n", "", "", "", "n"]);
    okRun(run);
    assert.match(run.stdout, /The webhook verify token is set \(WHATSAPP_VERIFY_TOKEN in the environment\)/);
    const generated = readJson(join(home.dir, "credentials", "secrets.json")).WHATSAPP_VERIFY_TOKEN as string;
    assert.match(generated, /^[0-9a-f]{48}$/);
    assert.match(run.stdout, /note: WHATSAPP_VERIFY_TOKEN is also set in your environment, and that one wins; unset it before `npx lurkbot start`/);
    assertNowhere(run, home, [wa.token, APP_SECRET, shellToken]);
  });

  it("the live check takes any answer of the server: a body that is not a JSON object is an answer, not a crash; the number's names reach the terminal as one plain line", async () => {
    const answers: Record<string, string> = {
      "/v26.0/11111111": "null",
      "/v26.0/22222222": JSON.stringify({ display_phone_number: "+1\u001b[2J 555", verified_name: "Evil\u001b]0;title\u0007\nName" }),
      "/v26.0/33333333": JSON.stringify({ error: { message: "bad\u001b[31m\r\nthing", code: 100 } }),
    };
    const server = createServer((req, res) => {
      res.writeHead(req.url?.startsWith("/v26.0/3") ? 400 : 200, { "content-type": "application/json" });
      res.end(answers[new URL(req.url ?? "/", "http://x").pathname] ?? "{}");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const apiBaseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const check = (phoneNumberId: string) => checkWhatsAppNumber({ apiBaseUrl, apiVersion: "v26.0", phoneNumberId }, wa.token, 5_000);
      const nul = await check("11111111");
      assert.equal(nul.ok, false);
      assert.match(nul.ok ? "" : nul.problem, /answered HTTP 200: null/);
      const named = await check("22222222");
      assert.equal(named.ok, true);
      assert.equal(named.ok ? named.detail : "", 'WhatsApp knows phone number id 22222222 as +1 [2J 555 ("Evil ]0;title Name")');
      const refused = await check("33333333");
      assert.equal(refused.ok ? "" : refused.problem, `the Graph API at ${apiBaseUrl} cannot read phone number id 33333333 with this token (HTTP 400, code 100: bad [31m thing)`);
    } finally {
      server.close();
    }
  });
});
