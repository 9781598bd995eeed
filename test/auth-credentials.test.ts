/**
 * Auth profiles with a token or an OAuth client (seed 001 §3.9: credential types token and
 * oauth; services/agent-runner/credentials.ts, providers/credentialed.ts): the real provider
 * SDKs against the fake LLM servers, tokens from a fake OAuth server, the refresh_token state in
 * the real `lurk_auth` bucket of a real nats-server, read as the agent-runner's NATS user.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { AUTH_BUCKET, oauthStateKey, oauthStateSchema, type OAuthState } from "../shared/contract/index.js";
import { parseConfig, type LurkConfig } from "../shared/runtime/config.js";
import { authProfileConfigSchema } from "../shared/runtime/config-providers.js";
import { ProviderRegistry } from "../services/agent-runner/providers/registry.js";
import type { Provider, ProviderStreamEvent } from "../services/agent-runner/providers/types.js";
import { EXPIRY_SKEW_MS } from "../services/agent-runner/credentials.js";
import { AuthStateStore } from "../services/agent-runner/auth-profiles.js";
import { watchLogins } from "../services/agent-runner/login-watch.js";
import { speechStateProvider } from "../services/agent-runner/speech-profiles.js";
import { createLogger } from "../shared/runtime/logger.js";
import { apiKeyOf, FakeAnthropicServer } from "./fakes/anthropic-server.js";
import { FakeOAuthServer } from "./fakes/oauth-server.js";
import { FakeOpenAIServer } from "./fakes/openai-server.js";
import { freePort, TestNats } from "./harness/nats.js";
import { TestSystem, CliClient } from "./harness/system.js";

async function call(provider: Provider, text = "hi"): Promise<ProviderStreamEvent> {
  const events: ProviderStreamEvent[] = [];
  for await (const ev of provider.stream({ model: "test-model", system: "s", messages: [{ role: "user", content: [{ type: "text", text }] }], tools: [], signal: new AbortController().signal })) events.push(ev);
  return events[events.length - 1]!;
}

const configWith = (providers: Record<string, unknown>): LurkConfig => parseConfig({ model: "openai/test-model", providers }, {}, "/tmp/lurk-auth-test-home");

describe("auth profile config", () => {
  it("takes one credential per profile and says what is wrong otherwise", () => {
    const bad = (p: unknown) => authProfileConfigSchema.safeParse(p).error?.issues.map((i) => i.message).join("; ") ?? "accepted";
    assert.match(bad({ id: "a", apiKey: "k", token: "t" }), /one credential: apiKey, token or oauth/);
    assert.match(bad({ id: "a", oauth: { grant: "client_credentials", tokenUrl: "https://login.example/token", clientId: "c" } }), /client_credentials grant needs clientSecret/);
    assert.match(bad({ id: "a", apiKey: "k", expires: "2027-01-01" }), /expires goes with token/);
    assert.match(bad({ id: "a", oauth: { grant: "refresh_token", tokenUrl: "ftp://x/token", clientId: "c" } }), /./);
    const ok = authProfileConfigSchema.parse({ id: "a", token: "t", expires: "2027-01-01T00:00:00Z" });
    assert.equal(ok.expires, Date.parse("2027-01-01T00:00:00Z"));
  });
});

describe("token profiles", () => {
  let anthropic: FakeAnthropicServer;
  before(async () => {
    anthropic = await FakeAnthropicServer.start();
  });
  after(async () => anthropic.close());

  it("sends a token to Anthropic as a bearer token, with the OAuth beta flag for a Claude account's token", async () => {
    const token = "sk-ant-oat01-abcdefghijklmnop";
    anthropic.acceptsAuth = (h) => h.authorization === `Bearer ${token}` && h["x-api-key"] === undefined;
    const registry = new ProviderRegistry(configWith({ anthropic: { profiles: [{ id: "sub", token, baseUrl: anthropic.baseUrl }] } }));
    const [profile] = registry.profiles("anthropic");
    assert.equal(profile?.credential?.kind, "token");
    const end = await call(registry.providerFor(profile!));
    assert.equal(end.type, "done", JSON.stringify(end));
    const headers = anthropic.requests.at(-1)!.headers;
    assert.equal(headers.authorization, `Bearer ${token}`);
    assert.equal(headers["x-api-key"], undefined);
    assert.match(String(headers["anthropic-beta"]), /oauth-2025-04-20/);
  });

  it("sends another bearer token without the beta flag, and an API key profile as x-api-key as before", async () => {
    anthropic.acceptsAuth = undefined;
    const registry = new ProviderRegistry(configWith({ anthropic: { profiles: [{ id: "gw", token: "gateway-token-123", baseUrl: anthropic.baseUrl }, { id: "key", apiKey: "sk-ant-api-key-1", baseUrl: anthropic.baseUrl }] } }));
    const [gw, key] = registry.profiles("anthropic");
    assert.equal((await call(registry.providerFor(gw!))).type, "done");
    assert.equal(anthropic.requests.at(-1)!.headers.authorization, "Bearer gateway-token-123");
    assert.equal(anthropic.requests.at(-1)!.headers["anthropic-beta"], undefined);
    assert.equal((await call(registry.providerFor(key!))).type, "done");
    assert.equal(apiKeyOf(anthropic.requests.at(-1)!.headers), "sk-ant-api-key-1");
    assert.notEqual(gw!.fingerprint, key!.fingerprint);
  });

  it("refuses an expired token before calling, saying when it expired and what to do", async () => {
    let now = Date.parse("2027-01-01T00:00:00Z");
    const registry = new ProviderRegistry(configWith({ anthropic: { profiles: [{ id: "sub", token: "sk-ant-oat01-expiring", expires: "2027-01-02T00:00:00Z", baseUrl: anthropic.baseUrl }] } }), { now: () => now });
    const provider = registry.providerFor(registry.profiles("anthropic")[0]!);
    assert.equal((await call(provider)).type, "done");
    const before = anthropic.requests.length;
    now = Date.parse("2027-01-02T00:00:01Z");
    const end = await call(provider);
    assert.equal(end.type, "error");
    assert.equal(end.type === "error" && end.error.code, "PROVIDER_AUTH");
    assert.match(end.type === "error" ? end.error.message : "", /expired at 2027-01-02T00:00:00.000Z; put a new token in providers.anthropic.profiles \(id "sub"\)/);
    assert.equal(anthropic.requests.length, before, "no request with an expired token");
  });
});

describe("oauth client_credentials profiles", () => {
  let oauth: FakeOAuthServer;
  let openai: FakeOpenAIServer;
  before(async () => {
    oauth = await FakeOAuthServer.start({ expiresIn: 600 });
    openai = await FakeOpenAIServer.start();
    openai.acceptsAuth = (a) => oauth.accepts(a);
  });
  after(async () => {
    await openai.close();
    await oauth.close();
  });

  it("gets one access token for many calls, renews it before it expires and after a 401", async () => {
    let now = Date.now();
    oauth.now = () => now;
    const registry = new ProviderRegistry(configWith({
      openai: { profiles: [{ id: "entra", baseUrl: openai.baseUrl, oauth: { grant: "client_credentials", tokenUrl: oauth.tokenUrl, clientId: oauth.clientId, clientSecret: oauth.clientSecret, scope: "https://llm.example/.default", params: { resource: "llm" } } }] },
    }), { now: () => now });
    const provider = registry.providerFor(registry.profiles("openai")[0]!);
    const ends = await Promise.all([call(provider), call(provider), call(provider)]);
    assert.deepEqual(ends.map((e) => e.type), ["done", "done", "done"]);
    const grants = () => oauth.requests.filter((r) => r.grant === "client_credentials");
    assert.equal(grants().length, 1, "concurrent calls share one token request");
    assert.equal(grants()[0]!.fields.client_secret, oauth.clientSecret);
    assert.equal(grants()[0]!.fields.scope, "https://llm.example/.default");
    assert.equal(grants()[0]!.fields.resource, "llm");
    assert.match(grants()[0]!.contentType, /x-www-form-urlencoded/);

    oauth.revokeAccessTokens();
    assert.equal((await call(provider)).type, "done", "a refused token is renewed and the call made again");
    assert.equal(grants().length, 2);
    assert.equal(openai.refusedAuth, 1);

    now += 600_000 - EXPIRY_SKEW_MS + 1;
    assert.equal((await call(provider)).type, "done");
    assert.equal(grants().length, 3, "renewed before expiry, without a 401");
    assert.equal(openai.refusedAuth, 1);
  });

  it("passes the OAuth server's refusal on as PROVIDER_AUTH naming the profile and the fix", async () => {
    const registry = new ProviderRegistry(configWith({
      openai: { profiles: [{ id: "entra", baseUrl: openai.baseUrl, oauth: { grant: "client_credentials", tokenUrl: oauth.tokenUrl, clientId: oauth.clientId, clientSecret: "wrong-secret-000" } }] },
    }));
    const end = await call(registry.providerFor(registry.profiles("openai")[0]!));
    assert.equal(end.type === "error" && end.error.code, "PROVIDER_AUTH");
    const message = end.type === "error" ? end.error.message : "";
    assert.match(message, /refused the client_credentials grant of auth profile openai\/entra \(HTTP 401 invalid_client\); check the profile's oauth clientId, clientSecret and scope/);
    assert.doesNotMatch(message, /wrong-secret-000/);
  });
});

describe("oauth refresh_token profiles (tokens in the lurk_auth bucket)", () => {
  let nats: TestNats;
  let oauth: FakeOAuthServer;
  let openai: FakeOpenAIServer;
  let admin: KV;
  let adminNc: NatsConnection;
  const runners: NatsConnection[] = [];
  const key = oauthStateKey("openai", "work");

  before(async () => {
    nats = await TestNats.start();
    oauth = await FakeOAuthServer.start({ refreshDelayMs: 150 });
    openai = await FakeOpenAIServer.start();
    openai.acceptsAuth = (a) => oauth.accepts(a);
    adminNc = await nats.connect("admin");
    admin = await new Kvm(adminNc).open(AUTH_BUCKET);
  });
  after(async () => {
    for (const nc of [...runners, adminNc]) await nc.close();
    await openai.close();
    await oauth.close();
    await nats.stop();
  });

  /** A registry as one agent-runner process has it: its own connection as the agent-runner user. */
  async function runnerRegistry(): Promise<Provider> {
    const nc = await nats.connect("agent-runner");
    runners.push(nc);
    const bucket = new Kvm(nc).open(AUTH_BUCKET);
    const registry = new ProviderRegistry(configWith({
      openai: { profiles: [{ id: "work", baseUrl: openai.baseUrl, oauth: { grant: "refresh_token", tokenUrl: oauth.tokenUrl, clientId: oauth.clientId, body: "json" } }] },
    }), { authBucket: () => bucket });
    return registry.providerFor(registry.profiles("openai")[0]!);
  }

  const seed = async (extra: Partial<OAuthState> = {}) => {
    const state: OAuthState = { type: "lurk.auth.oauth.v1", loginId: "login-1", refreshToken: oauth.issueRefreshToken(), updatedAt: Date.now(), updatedBy: "cli", ...extra };
    await admin.put(key, JSON.stringify(state));
    return state;
  };
  const stored = async () => oauthStateSchema.parse(JSON.parse(new TextDecoder().decode((await admin.get(key))!.value)));

  it("refreshes once, stores the rotated refresh token, and uses the access token until a 401", async () => {
    const seeded = await seed();
    const provider = await runnerRegistry();
    const refreshes = oauth.refreshCount();
    assert.equal((await call(provider)).type, "done");
    assert.equal(oauth.refreshCount(), refreshes + 1);
    const after1 = await stored();
    assert.notEqual(after1.refreshToken, seeded.refreshToken, "the rotated refresh token was written back");
    assert.ok(after1.accessToken && after1.expiresAt && after1.expiresAt > Date.now());
    assert.equal(after1.refreshing, undefined, "the claim is gone");
    assert.equal(after1.loginId, "login-1");
    assert.match(oauth.requests.at(-1)!.contentType, /json/, "body: json as configured");

    assert.equal((await call(provider)).type, "done");
    assert.equal(oauth.refreshCount(), refreshes + 1, "no refresh while the access token is valid");

    oauth.revokeAccessTokens();
    assert.equal((await call(provider)).type, "done");
    assert.equal(oauth.refreshCount(), refreshes + 2, "a 401 refreshes and the call is made again");
    assert.equal(oauth.refused, 0);
  });

  it("spends a refresh token once when two agent-runners need new tokens at the same time", async () => {
    await seed();
    const [a, b] = [await runnerRegistry(), await runnerRegistry()];
    const refreshes = oauth.refreshCount();
    const ends = await Promise.all([call(a), call(b), call(a), call(b)]);
    assert.deepEqual(ends.map((e) => e.type), ["done", "done", "done", "done"], JSON.stringify(ends));
    assert.equal(oauth.refreshCount(), refreshes + 1, "one refresh for both processes");
    assert.equal(oauth.refused, 0, "no refresh with a spent token");
  });

  it("waits for another runner's claim and takes its tokens; takes over a claim that went stale", async () => {
    await seed({ refreshing: { by: "other-host:1", until: Date.now() + 5_000 } });
    const provider = await runnerRegistry();
    const refreshes = oauth.refreshCount();
    const pending = call(provider);
    await new Promise((r) => setTimeout(r, 400));
    // the other runner finishes its refresh
    const entry = await admin.get(key);
    const other = JSON.parse(new TextDecoder().decode(entry!.value)) as OAuthState;
    const { refreshing: _, ...rest } = other;
    // an access token the OAuth server issued: get one through a refresh of a token of our own
    const res = await fetch(oauth.tokenUrl, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: oauth.issueRefreshToken(), client_id: oauth.clientId }) });
    const issued = await res.json() as { access_token: string; refresh_token: string; expires_in: number };
    await admin.update(key, JSON.stringify({ ...rest, accessToken: issued.access_token, refreshToken: issued.refresh_token, expiresAt: Date.now() + issued.expires_in * 1000, updatedBy: "other-host:1" }), entry!.revision);
    assert.equal((await pending).type, "done");
    assert.equal(oauth.refreshCount(), refreshes + 1, "only the other runner's refresh");
    assert.equal(openai.requests.at(-1)!.headers.authorization, `Bearer ${issued.access_token}`);

    await seed({ refreshing: { by: "crashed-host:1", until: Date.now() - 1 } });
    const before = oauth.refreshCount();
    assert.equal((await call(await runnerRegistry())).type, "done");
    assert.equal(oauth.refreshCount(), before + 1, "a stale claim is taken over");
  });

  it("says to log in when there are no tokens or the refresh token is refused, and gives the claim back", async () => {
    await admin.delete(key);
    const none = await call(await runnerRegistry());
    assert.equal(none.type === "error" && none.error.code, "PROVIDER_AUTH");
    assert.match(none.type === "error" ? none.error.message : "", /auth profile openai\/work has no tokens; log in with `lurkbot auth login openai work`/);

    await admin.put(key, JSON.stringify({ type: "lurk.auth.oauth.v1", loginId: "l2", refreshToken: "rt-unknown", updatedAt: Date.now(), updatedBy: "cli" } satisfies OAuthState));
    const refused = await call(await runnerRegistry());
    assert.equal(refused.type === "error" && refused.error.code, "PROVIDER_AUTH");
    assert.match(refused.type === "error" ? refused.error.message : "", /refused the token refresh of auth profile openai\/work \(HTTP 400 invalid_grant.*log in again with `lurkbot auth login openai work`/);
    assert.equal((await stored()).refreshing, undefined, "the claim was given back");
  });

  it("clears a profile's disable and cooldowns (chat and speech) when a login stores new tokens, not when a runner refreshes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lurk-login-watch-"));
    const store = new AuthStateStore(dir);
    const nc = await nats.connect("agent-runner");
    runners.push(nc);
    const stop = new AbortController();
    const watching = watchLogins(await new Kvm(nc).open(AUTH_BUCKET), store, createLogger("login-watch-test", "silent"), stop.signal);
    try {
      const profile = { provider: "openai", id: "work", fingerprint: "fp" };
      const speech = { ...profile, provider: speechStateProvider("openai") };
      await store.markFailure(profile, "test-model", "auth");
      await store.markFailure(speech, "tts-1", "auth");
      assert.equal(store.availability(profile, "test-model").usable, false);
      await seed({ updatedBy: "other-host:1:abc" }); // a refresh: nothing changes
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(store.availability(profile, "test-model").usable, false);
      await seed({ updatedBy: "cli", loginId: "login-2" });
      const until = Date.now() + 5_000;
      while (!store.availability(profile, "test-model").usable && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(store.availability(profile, "test-model"), { usable: true });
      assert.equal(store.profile(profile)?.disableCount, 0);
      assert.deepEqual(store.availability(speech, "tts-1"), { usable: true }, "the profile's speech state too");
    } finally {
      stop.abort();
      await watching;
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("keeps the bucket from other actors' users", async () => {
    const web = await nats.connect("channel-web");
    try {
      await assert.rejects(async () => (await new Kvm(web).open(AUTH_BUCKET)).get(key), /permission|denied|timeout|503|no responders/i);
    } finally {
      await web.close();
    }
  });
});

describe("an oauth profile through the running actors", () => {
  let oauth: FakeOAuthServer;
  let system: TestSystem;
  before(async () => {
    oauth = await FakeOAuthServer.start();
  });
  after(async () => {
    await system?.stop();
    await oauth.close();
  });

  it("answers a message with tokens from the bucket and writes the refreshed ones back", async () => {
    const port = await freePort();
    // no provider-level key or endpoint: the oauth profile is the only one
    system = await TestSystem.start({
      fake: { port },
      env: { OPENAI_API_KEY: "", OPENAI_BASE_URL: "" },
      config: { providers: { openai: { profiles: [{ id: "work", baseUrl: `http://127.0.0.1:${port}/v1`, oauth: { grant: "refresh_token", tokenUrl: oauth.tokenUrl, clientId: oauth.clientId } }] } } },
    });
    system.fake.acceptsAuth = (a) => oauth.accepts(a);
    const admin = await system.nats.connect("admin");
    const kv = await new Kvm(admin).open(AUTH_BUCKET);
    const first = oauth.issueRefreshToken();
    await kv.put(oauthStateKey("openai", "work"), JSON.stringify({ type: "lurk.auth.oauth.v1", loginId: "l1", refreshToken: first, updatedAt: Date.now(), updatedBy: "cli" } satisfies OAuthState));
    const client = await CliClient.connect(system.nats, "oauth-e2e");
    try {
      const reply = await client.send("hello there");
      assert.equal(reply.text, "echo: hello there");
      const state = oauthStateSchema.parse(JSON.parse(new TextDecoder().decode((await kv.get(oauthStateKey("openai", "work")))!.value)));
      assert.notEqual(state.refreshToken, first);
      assert.match(state.updatedBy, /:\d+:[0-9a-f]+$/, "written by the agent-runner process");
      assert.equal(oauth.refreshCount(), 1);
    } finally {
      await client.close();
      await admin.close();
    }
  });
});
