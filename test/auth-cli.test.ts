/**
 * `lurkbot auth list|login|import|logout` as a real process against a real nats-server (the
 * contract's `cli` user) and a fake OAuth server; the test plays the browser. The `lurk_auth`
 * entries are read back as the agent-runner user and their refresh tokens spent at the server.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { AUTH_BUCKET, oauthStateKey, oauthStateSchema, type OAuthState } from "../shared/contract/index.js";
import { parseConfig } from "../shared/runtime/config.js";
import type { OAuthClientConfig } from "../shared/runtime/config-providers.js";
import { requestTokens } from "../shared/runtime/oauth-token-endpoint.js";
import { parseArgs } from "../services/cli/args.js";
import { checkAuthArgs, parseImport } from "../services/cli/auth.js";
import { pastedCode } from "../services/cli/auth-login.js";
import { configuredProfiles } from "../services/cli/auth-profiles.js";
import { runCli, startCli as startCliWith } from "./harness/cli.js";
import { waitFor } from "./harness/actors.js";
import { freePort, TestNats } from "./harness/nats.js";
import { FakeOAuthServer } from "./fakes/oauth-server.js";

const SECRETS = ["sk-openai-secret-1", "sk-team-secret-2", "tok-secret-3", "tok-secret-4", "client-secret-123456", "sk-ollama-secret-5", "sk-minimax-secret-6"];
const PASTE_REDIRECT = "https://app.example.com/oauth/callback";

const startCli = (args: string[], env: Record<string, string>) => startCliWith(args, env, "pipe");

/** the authorize URL the login prints */
const authorizeUrlIn = (stdout: string) => /^\s+(http:\/\/\S+\/authorize\?\S+)$/m.exec(stdout)?.[1];

function assertNoSecret(text: string, extra: string[] = []): void {
  for (const secret of [...SECRETS, ...extra]) assert.ok(!text.includes(secret), `the output shows a secret: ${text}`);
}

describe("lurkbot auth: command line checks", () => {
  const check = (argv: string[]) => {
    const p = parseArgs(argv);
    assert.ok(!("global" in p));
    return checkAuthArgs(p);
  };
  it("knows its subcommands, providers, profile ids and which options apply", () => {
    assert.deepEqual(check(["auth", "list", "--json"]), { sub: "list" });
    assert.deepEqual(check(["auth", "login", "anthropic", "work", "--timeout", "5"]), { sub: "login", provider: "anthropic", id: "work" });
    assert.throws(() => check(["auth", "frob"]), /unknown subcommand "frob"/);
    assert.throws(() => check(["auth", "login", "anthropic"]), /needs PROVIDER PROFILE/);
    // a named instance's name passes here; whether the config has it is checked once it is read
    assert.deepEqual(check(["auth", "logout", "minimax", "sub"]), { sub: "logout", provider: "minimax", id: "sub" });
    assert.throws(() => check(["auth", "login", "Gemini!", "work"]), /"Gemini!" is not a provider name/);
    assert.throws(() => check(["auth", "logout", "openai", "a b"]), /is not a profile id/);
    assert.throws(() => check(["auth", "import", "openai", "x", "--timeout", "3"]), /--timeout does not apply to `lurkbot auth import`/);
    assert.throws(() => check(["auth", "list", "openai"]), /takes no argument/);
  });

  it("import takes a bare refresh token or JSON with refresh_token, and never quotes its input", () => {
    assert.equal(parseImport("  rt-abc\n"), "rt-abc");
    assert.equal(parseImport(JSON.stringify({ refresh_token: "rt-xyz", access_token: "at-1", expires_in: 60 })), "rt-xyz");
    assert.throws(() => parseImport(""), /nothing on stdin/);
    assert.throws(() => parseImport("{\"refresh_token\": \"rt-secret-9\""), (e: Error) => /not valid JSON/.test(e.message) && !e.message.includes("rt-secret-9"));
    assert.throws(() => parseImport("{\"access_token\": \"at-secret-9\"}"), (e: Error) => /no "refresh_token" string/.test(e.message) && !e.message.includes("at-secret-9"));
    assert.throws(() => parseImport("rt-secret-9 rt-other"), (e: Error) => /more than one word/.test(e.message) && !e.message.includes("rt-secret-9"));
  });

  it("a pasted redirect URL, code or code#state: the state must be this login's", () => {
    const again = "run it again";
    assert.equal(pastedCode(`${PASTE_REDIRECT}?code=c1&state=s1`, "s1", again), "c1");
    assert.equal(pastedCode(`${PASTE_REDIRECT}#code=c2&state=s1`, "s1", again), "c2");
    assert.equal(pastedCode("c3", "s1", again), "c3");
    assert.equal(pastedCode("c4#s1", "s1", again), "c4");
    assert.throws(() => pastedCode(`${PASTE_REDIRECT}?code=c1&state=other`, "s1", again), /state of the redirect does not match/);
    assert.throws(() => pastedCode(`${PASTE_REDIRECT}?code=c1`, "s1", again), /does not match/);
    assert.throws(() => pastedCode("c4#other", "s1", again), /does not match/);
    assert.throws(() => pastedCode(`${PASTE_REDIRECT}?error=access_denied&state=s1`, "s1", again), /refused the login: access_denied/);
    assert.throws(() => pastedCode("two words", "s1", again), /does not look like a code/);
  });

  it("lists the provider-level default first, like the agent-runner, and says when a configured \"default\" is not used", () => {
    const cfg = parseConfig({ providers: {
      openai: { profiles: [{ id: "default", apiKey: "k2" }, { id: "b", apiKey: "k3" }] }, anthropic: { apiKey: "k4", profiles: [{ id: "default", apiKey: "k5" }] }, ollama: { profiles: [{ id: "remote", baseUrl: "https://u:p@ollama.example:443/x" }] },
      minimax: { api: "anthropic", baseUrl: "https://api.minimax.example/anthropic", apiKey: "k6", profiles: [{ id: "default", apiKey: "k7" }, { id: "sub", token: "t8" }] },
    } }, { LURKBOT_HOME: "/tmp/lurk-auth-x" });
    const { profiles, notes } = configuredProfiles(cfg);
    assert.deepEqual(profiles.map((p) => `${p.provider}/${p.id}:${p.kind}:${p.endpoint ?? "-"}`), [
      "openai/default:api key:-", "openai/b:api key:-", "anthropic/default:api key:-", "ollama/remote:none:ollama.example",
      "minimax/default:api key:api.minimax.example", "minimax/sub:token:api.minimax.example",
    ]);
    assert.equal(notes.length, 2);
    assert.match(notes[0]!, /providers\.anthropic\.profiles has a profile "default" that is not used/);
    assert.match(notes[1]!, /providers\.minimax\.profiles has a profile "default" that is not used: the provider-level apiKey\/baseUrl/);
  });
});

describe("lurkbot auth on a real bus", () => {
  let nats: TestNats;
  let oauth: FakeOAuthServer;
  let env: Record<string, string>;
  let nc: NatsConnection;
  let kv: KV;
  let client: OAuthClientConfig;

  const stored = async (key: string): Promise<OAuthState | undefined> => {
    const e = await kv.get(key);
    return e && e.operation === "PUT" ? oauthStateSchema.parse(e.json()) : undefined;
  };
  /** whether the fake server takes this refresh token (spends it: the server rotates) */
  const refreshWorks = (refreshToken: string) =>
    requestTokens(client, { grant_type: "refresh_token", refresh_token: refreshToken, client_id: oauth.clientId }, { label: "test", fix: "-" }).then(() => true, () => false);

  before(async () => {
    nats = await TestNats.start();
    oauth = await FakeOAuthServer.start({ expiresIn: 3600 });
    const refresh = { grant: "refresh_token", tokenUrl: oauth.tokenUrl, clientId: oauth.clientId };
    client = { ...refresh, grant: "refresh_token", body: "form" };
    writeFileSync(join(nats.home, "config.json"), JSON.stringify({
      providers: {
        openai: {
          apiKey: "sk-openai-secret-1", baseUrl: "https://llm.example.com/v1",
          profiles: [
            { id: "team", apiKey: "sk-team-secret-2" },
            { id: "tok", token: "tok-secret-3", expires: "2099-01-01" },
            { id: "old", token: "tok-secret-4", expires: "2020-01-01" },
            { id: "svc", oauth: { grant: "client_credentials", tokenUrl: oauth.tokenUrl, clientId: oauth.clientId, clientSecret: oauth.clientSecret } },
          ],
        },
        anthropic: {
          profiles: [
            { id: "work", oauth: { ...refresh, authorizeUrl: oauth.authorizeUrl, scope: "offline_access llm", params: { audience: "https://llm.example" } } },
            { id: "pasted", oauth: { ...refresh, authorizeUrl: oauth.authorizeUrl, redirectUri: PASTE_REDIRECT } },
            { id: "imported", oauth: refresh },
          ],
        },
        ollama: { host: "http://gpu.example:11434", apiKey: "sk-ollama-secret-5" },
        // a named instance (an Anthropic-compatible endpoint) with its own OAuth profile
        minimax: { api: "anthropic", baseUrl: "https://api.minimax.example/anthropic", apiKey: "sk-minimax-secret-6", profiles: [{ id: "sub", oauth: { ...refresh, authorizeUrl: oauth.authorizeUrl } }] },
      },
    }));
    env = nats.env(nats.passwordEnv("cli"));
    nc = await nats.connect("agent-runner");
    kv = await new Kvm(nc).open(AUTH_BUCKET);
  });
  after(async () => {
    await nc?.close();
    await oauth?.close();
    await nats?.stop();
  });

  it("list: kinds, endpoints, token expiry, login state, never a secret; --json", async () => {
    const r = await runCli(["auth", "list"], env);
    assert.equal(r.code, 0, r.stderr);
    const line = (provider: string, id: string) => r.stdout.split("\n").find((l) => new RegExp(`^${provider}\\s+${id}\\s`).test(l)) ?? assert.fail(`no ${provider}/${id} row in ${r.stdout}`);
    assert.match(line("openai", "default"), /api key\s+llm\.example\.com\s+-$/);
    assert.match(line("openai", "team"), /api key\s+llm\.example\.com/);
    assert.match(line("openai", "tok"), /token\s+llm\.example\.com\s+expires 2099-01-01/);
    assert.match(line("openai", "old"), /token\s+.*EXPIRED 2020-01-01/);
    assert.match(line("openai", "svc"), new RegExp(`oauth client_credentials\\s+.*tokens from ${new URL(oauth.url).host}`));
    assert.match(line("anthropic", "work"), /oauth refresh_token\s+-\s+not logged in — run `lurkbot auth login anthropic work`/);
    assert.match(line("anthropic", "imported"), /not logged in — run `lurkbot auth import anthropic imported`/);
    assert.match(line("ollama", "default"), /api key\s+gpu\.example:11434/);
    assert.match(line("minimax", "default"), /api key\s+api\.minimax\.example/);
    assert.match(line("minimax", "sub"), /oauth refresh_token\s+api\.minimax\.example\s+not logged in — run `lurkbot auth login minimax sub`/);
    assertNoSecret(r.stdout + r.stderr);

    const json = await runCli(["auth", "list", "--json"], env);
    assert.equal(json.code, 0, json.stderr);
    const report = JSON.parse(json.stdout) as { profiles: Array<{ provider: string; id: string; kind: string; login?: { state: string } }> };
    assert.deepEqual(report.profiles.map((p) => `${p.provider}/${p.id}=${p.kind}`), [
      "openai/default=api key", "openai/team=api key", "openai/tok=token", "openai/old=token", "openai/svc=oauth client_credentials",
      "anthropic/work=oauth refresh_token", "anthropic/pasted=oauth refresh_token", "anthropic/imported=oauth refresh_token", "ollama/default=api key",
      "minimax/default=api key", "minimax/sub=oauth refresh_token",
    ]);
    assert.equal(report.profiles.find((p) => p.id === "work")?.login?.state, "not-logged-in");
    assertNoSecret(json.stdout);
  });

  it("list with the bus down: the profiles from config, the login state unknown, exit 2", async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    const r = await runCli(["auth", "list"], { ...env, LURKBOT_NATS_URL: url });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stdout, /^openai\s+tok\s+.*expires 2099-01-01/m);
    assert.match(r.stdout, /^anthropic\s+work\s+.*login state unknown/m);
    assert.match(r.stderr, /the login state of anthropic\/work, anthropic\/pasted, anthropic\/imported, minimax\/sub is unknown: cannot reach NATS at .* `npx lurkbot start`/);
  });

  it("login: a redirect whose state does not match ends it, nothing stored, no code exchanged", async () => {
    const cli = startCli(["auth", "login", "anthropic", "work"], env);
    const url = await waitFor(() => authorizeUrlIn(cli.stdout()), 10_000, "the authorize URL");
    const redirect = await fetch(url, { redirect: "manual" });
    assert.equal(redirect.status, 302);
    const back = new URL(redirect.headers.get("location")!);
    back.searchParams.set("state", "forged");
    const page = await fetch(back);
    assert.equal(page.status, 400);
    assert.match(await page.text(), /login failed — the state of the redirect does not match/);
    assert.equal(await cli.exited, 1);
    assert.match(cli.stderr(), /lurkbot auth: the state of the redirect does not match this login .*nothing was stored/);
    assert.equal(await stored(oauthStateKey("anthropic", "work")), undefined);
    assert.equal(oauth.requests.filter((q) => q.grant === "authorization_code").length, 0);
  });

  it("login through the loopback redirect: PKCE, the bucket holds tokens the server accepts, nothing secret printed", async () => {
    const cli = startCli(["auth", "login", "anthropic", "work"], env);
    const url = new URL(await waitFor(() => authorizeUrlIn(cli.stdout()), 10_000, "the authorize URL"));
    const q = url.searchParams;
    assert.equal(q.get("client_id"), oauth.clientId);
    assert.equal(q.get("response_type"), "code");
    assert.match(q.get("redirect_uri")!, /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    assert.equal(q.get("scope"), "offline_access llm");
    assert.equal(q.get("audience"), "https://llm.example", "the configured params go to the authorization request too");
    assert.equal(q.get("code_challenge_method"), "S256");
    assert.match(q.get("code_challenge")!, /^[A-Za-z0-9_-]{43}$/);
    assert.ok((q.get("state") ?? "").length >= 16);
    // the browser: the server redirects it to the CLI's loopback server
    const redirect = await fetch(url, { redirect: "manual" });
    const location = redirect.headers.get("location")!;
    assert.ok(location.startsWith(q.get("redirect_uri")!), location);
    const page = await fetch(location);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /LurkBot: logged in, you can close this tab/);
    assert.equal(await cli.exited, 0, cli.stderr());
    assert.match(cli.stdout(), /^logged in: anthropic\/work \(access token valid until \d{4}-\d\d-\d\dT/m);
    const exchange = oauth.requests.find((r) => r.grant === "authorization_code")!;
    assert.equal(exchange.fields.code_verifier!.length, 43);

    const state = (await stored(oauthStateKey("anthropic", "work")))!;
    assert.ok(state, "the bucket holds the login");
    assert.equal(state.updatedBy, "cli");
    assert.ok(oauth.accepts(`Bearer ${state.accessToken}`));
    assert.ok(state.expiresAt! > Date.now() + 3_000_000);
    assertNoSecret(cli.stdout() + cli.stderr(), [state.refreshToken, state.accessToken!]);
    // the loopback server is gone
    await assert.rejects(fetch(location));

    const list = await runCli(["auth", "list"], env);
    assert.match(list.stdout, /^anthropic\s+work\s+.*logged in \d{4}-\d\d-\d\dT\S+ by cli; access token valid until/m);
    assertNoSecret(list.stdout, [state.refreshToken, state.accessToken!]);
    assert.ok(await refreshWorks(state.refreshToken), "the stored refresh token is one the server takes");
  });

  it("login without a refresh token in the answer: an error saying so, nothing stored", async () => {
    oauth.refreshOnCode = false;
    try {
      const before = await kv.get(oauthStateKey("anthropic", "work"));
      const cli = startCli(["auth", "login", "anthropic", "work"], env);
      const url = await waitFor(() => authorizeUrlIn(cli.stdout()), 10_000, "the authorize URL");
      const redirect = await fetch(url, { redirect: "manual" });
      const page = await fetch(redirect.headers.get("location")!);
      assert.equal(page.status, 400);
      assert.equal(await cli.exited, 1);
      assert.match(cli.stderr(), /gave no refresh token for anthropic\/work.*nothing was stored.*offline_access/);
      assert.equal((await kv.get(oauthStateKey("anthropic", "work")))?.revision, before?.revision);
    } finally {
      oauth.refreshOnCode = true;
    }
  });

  it("login with a redirectUri elsewhere: the pasted URL on stdin", async () => {
    const cli = startCli(["auth", "login", "anthropic", "pasted"], env);
    const url = new URL(await waitFor(() => authorizeUrlIn(cli.stdout()), 10_000, "the authorize URL"));
    assert.equal(url.searchParams.get("redirect_uri"), PASTE_REDIRECT);
    assert.match(cli.stdout(), /paste the URL you were sent to \(or the code\)/);
    const redirect = await fetch(url, { redirect: "manual" });
    const location = redirect.headers.get("location")!;
    assert.ok(location.startsWith(`${PASTE_REDIRECT}?code=`), location);
    cli.child.stdin!.write(`${location}\n`);
    assert.equal(await cli.exited, 0, cli.stderr());
    assert.match(cli.stdout(), /^logged in: anthropic\/pasted \(access token valid until/m);
    const state = (await stored(oauthStateKey("anthropic", "pasted")))!;
    assert.ok(await refreshWorks(state.refreshToken));
  });

  it("login times out when no browser comes back", async () => {
    const r = await runCli(["auth", "login", "anthropic", "work", "--timeout", "1"], env);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /no login arrived within 1 s; run `lurkbot auth login anthropic work` again/);
  });

  it("import: a refused refresh token stores nothing; a good one is checked and its rotated successor stored", async () => {
    const key = oauthStateKey("anthropic", "imported");
    const bad = await runCli(["auth", "import", "anthropic", "imported"], env, { input: "rt-not-issued\n" });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /refused the imported refresh token of auth profile anthropic\/imported \(HTTP 400 invalid_grant.*nothing was stored/);
    assert.equal(await stored(key), undefined);
    assertNoSecret(bad.stdout + bad.stderr, ["rt-not-issued"]);

    const rt = oauth.issueRefreshToken();
    const good = await runCli(["auth", "import", "anthropic", "imported"], env, { input: JSON.stringify({ refresh_token: rt, access_token: "at-old", expires_in: 10 }) });
    assert.equal(good.code, 0, good.stderr);
    assert.match(good.stdout, /^imported: anthropic\/imported \(the refresh token works; the server replaced it, the new one is stored; access token valid until/m);
    const state = (await stored(key))!;
    assert.notEqual(state.refreshToken, rt, "the rotated refresh token is stored");
    assert.ok(oauth.accepts(`Bearer ${state.accessToken}`));
    assertNoSecret(good.stdout + good.stderr, [rt, state.refreshToken, state.accessToken!]);
    assert.equal(await refreshWorks(rt), false, "the imported one was spent");
    assert.ok(await refreshWorks(state.refreshToken));
  });

  it("a named instance's refresh_token profile: import stores its tokens under the instance's name, logout deletes them", async () => {
    const key = oauthStateKey("minimax", "sub");
    const rt = oauth.issueRefreshToken();
    const imported = await runCli(["auth", "import", "minimax", "sub"], env, { input: rt });
    assert.equal(imported.code, 0, imported.stderr);
    assert.match(imported.stdout, /^imported: minimax\/sub \(the refresh token works/m);
    const state = (await stored(key))!;
    assert.ok(oauth.accepts(`Bearer ${state.accessToken}`));
    assert.equal(await stored(oauthStateKey("anthropic", "sub")), undefined, "not stored under the API's name");
    const listed = await runCli(["auth", "list"], env);
    assert.match(listed.stdout, /^minimax\s+sub\s+oauth refresh_token\s+api\.minimax\.example\s+logged in/m);
    const out = await runCli(["auth", "logout", "minimax", "sub"], env);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /^logged out: minimax\/sub/m);
    assert.equal(await stored(key), undefined);
    assertNoSecret(imported.stdout + imported.stderr + listed.stdout + out.stdout, [rt, state.refreshToken, state.accessToken!]);
  });

  it("logout deletes the stored tokens and says whether there were any", async () => {
    const key = oauthStateKey("anthropic", "pasted");
    assert.ok(await stored(key), "logged in by an earlier test");
    const r = await runCli(["auth", "logout", "anthropic", "pasted"], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^logged out: anthropic\/pasted — its tokens are deleted/m);
    assert.equal(await stored(key), undefined);
    const again = await runCli(["auth", "logout", "anthropic", "pasted"], env);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /anthropic\/pasted was not logged in/);
  });

  it("profiles that cannot log in: a config error naming what to add to config.json", async () => {
    const apiKey = await runCli(["auth", "login", "openai", "team"], env);
    assert.equal(apiKey.code, 78);
    assert.match(apiKey.stderr, /auth profile openai\/team has an API key; `lurkbot auth login` stores tokens only for an OAuth client with the refresh_token grant.*"oauth": \{ "grant": "refresh_token"/);
    const svc = await runCli(["auth", "import", "openai", "svc"], env, { input: "rt-x" });
    assert.equal(svc.code, 78);
    assert.match(svc.stderr, /client_credentials grant, which gets its tokens itself/);
    const noAuthorize = await runCli(["auth", "login", "anthropic", "imported"], env);
    assert.equal(noAuthorize.code, 78);
    assert.match(noAuthorize.stderr, /has no oauth\.authorizeUrl.*Add "authorizeUrl".*`lurkbot auth import anthropic imported < tokens\.json`/);
    const missing = await runCli(["auth", "login", "anthropic", "nosuch"], env);
    assert.equal(missing.code, 78);
    assert.match(missing.stderr, /there is no auth profile anthropic\/nosuch \(anthropic has work, pasted, imported\)\. Add it to providers\.anthropic\.profiles in .*config\.json/);
    const provider = await runCli(["auth", "login", "gemini", "work"], env);
    assert.equal(provider.code, 78);
    assert.match(provider.stderr, /unknown provider "gemini"; it is one of openai, anthropic, ollama, minimax\. A named instance is a key of `providers`/);
    const logoutUnknown = await runCli(["auth", "logout", "gemini", "work"], env);
    assert.equal(logoutUnknown.code, 78);
    assert.match(logoutUnknown.stderr, /unknown provider "gemini"/);
    assertNoSecret(apiKey.stderr + svc.stderr + noAuthorize.stderr + missing.stderr);
  });
});
