/**
 * The auth profiles' state made visible (`lurk.agent-runner.auth_state`, `.auth_probe`): the
 * whole system as processes on a real nats-server (router, sessions, tools, agent-runner), the
 * fake OpenAI and Anthropic servers checking keys and sending rate-limit headers, and the real
 * `lurkbot` CLI. A 429 leaves a cooldown that `auth list` shows, with no secret anywhere; the
 * headers of the last response reach `usage --providers`; `auth probe` tells a good key from a
 * refused one (and disables the refused one); `/status` names the provider cooling down; two
 * runners with their own stores are gathered and merged. Parsing and merging are tested apart.
 */
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { requestType, subjects, type AgentRunnerAuthStateReply, type AuthProfileState } from "../shared/contract/index.js";
import { formatWait, mergeAuthState, unavailableLines } from "../shared/runtime/auth-state-view.js";
import { durationMs, RateLimitBook } from "../services/agent-runner/rate-limits.js";
import { FakeAnthropicServer } from "./fakes/anthropic-server.js";
import { runCli } from "./harness/cli.js";
import { startActorProcess, type ActorProcess } from "./harness/actors.js";
import { CliClient, TestSystem } from "./harness/system.js";

const OPENAI_KEY = "sk-test-0123456789abcdef";
const TEAM_KEY = "sk-team-secret-abcdef123456";
const ANT_GOOD = "sk-ant-good-secret-0011223344";
const ANT_BAD = "sk-ant-bad-secret-9988776655";
const SECRETS = [OPENAI_KEY, TEAM_KEY, ANT_GOOD, ANT_BAD];

function assertNoSecret(text: string): void {
  for (const secret of SECRETS) assert.ok(!text.includes(secret), `a secret is in the output: ${text}`);
}

const OPENAI_LIMITS = {
  "x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "499", "x-ratelimit-reset-requests": "6m0s",
  "x-ratelimit-limit-tokens": "30000", "x-ratelimit-remaining-tokens": "29950", "x-ratelimit-reset-tokens": "100ms",
};

interface ListedProfile {
  provider: string;
  id: string;
  runtime?: { cooldowns: Array<{ model: string; until: number; reason: string }>; disables: Array<{ until: number; reason: string }>; failureCounts: Record<string, number>; lastUsed?: number; lastSuccess?: number; rateLimits?: unknown };
}

describe("auth profile state through the agent-runner", () => {
  let system: TestSystem;
  let anthropic: FakeAnthropicServer;
  let chat: CliClient;
  let cliEnv: Record<string, string>;
  let second: ActorProcess | undefined;

  before(async () => {
    anthropic = await FakeAnthropicServer.start({ apiKey: ANT_GOOD });
    anthropic.responseHeaders = { "anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "49", "anthropic-ratelimit-requests-reset": "2030-01-01T00:00:00Z" };
    system = await TestSystem.start({
      config: {
        providers: {
          openai: { profiles: [{ id: "team", apiKey: TEAM_KEY }] },
          anthropic: { apiKey: ANT_GOOD, baseUrl: anthropic.baseUrl, profiles: [{ id: "bad", apiKey: ANT_BAD }] },
        },
      },
    });
    system.fake.acceptsAuth = (a) => a === `Bearer ${OPENAI_KEY}` || a === `Bearer ${TEAM_KEY}`;
    system.fake.responseHeaders = OPENAI_LIMITS;
    chat = await CliClient.connect(system.nats);
    cliEnv = system.nats.env({ ...system.nats.passwordEnv("cli"), OPENAI_API_KEY: OPENAI_KEY, OPENAI_BASE_URL: system.fake.baseUrl });
  });
  after(async () => {
    await chat?.close();
    await second?.stop();
    await system?.stop();
    await anthropic?.close();
  });

  it("a 429 cools the profile down: auth list shows it, never a secret; the next profile answered", async () => {
    const first = await chat.send("hello");
    assert.equal(first.text, "echo: hello");
    system.fake.enqueue({ kind: "error", status: 429 });
    const second = await chat.send("again");
    assert.equal(second.text, "echo: again", "the run failed over to the team profile");

    const json = await runCli(["auth", "list", "--json"], cliEnv);
    assert.equal(json.code, 0, json.stderr);
    assertNoSecret(json.stdout + json.stderr);
    const report = JSON.parse(json.stdout) as { profiles: ListedProfile[]; runners: unknown[] };
    assert.equal(report.runners.length, 1);
    const def = report.profiles.find((p) => p.provider === "openai" && p.id === "default")!;
    const team = report.profiles.find((p) => p.provider === "openai" && p.id === "team")!;
    assert.equal(def.runtime?.cooldowns.length, 1, JSON.stringify(def));
    assert.equal(def.runtime!.cooldowns[0]!.reason, "rate_limit");
    assert.equal(def.runtime!.cooldowns[0]!.model, "test-model");
    assert.ok(def.runtime!.cooldowns[0]!.until > Date.now() + 30_000, "a cooldown of about a minute");
    assert.deepEqual(def.runtime!.failureCounts, { rate_limit: 1 });
    assert.ok(def.runtime!.lastUsed && def.runtime!.lastSuccess, "used and answered once before the 429");
    assert.deepEqual(team.runtime?.cooldowns, []);
    assert.ok(team.runtime?.lastSuccess, "the team profile answered the second run");

    const text = await runCli(["auth", "list"], cliEnv);
    assert.equal(text.code, 0, text.stderr);
    assertNoSecret(text.stdout + text.stderr);
    assert.match(text.stdout, /^PROVIDER\s+PROFILE\s+CREDENTIAL\s+ENDPOINT\s+COOLDOWN\s+FAILURES\s+LAST USED\s+LAST OK\s+RATE LIMIT\s+STATUS/m);
    assert.match(text.stdout, /^openai\s+default\s+api key\s+\S+\s+\d+ (s|min) \(rate_limit, test-model\)\s+rate_limit 1\s+\d+ s ago/m);
    assert.match(text.stdout, /^openai\s+team\s+api key\s+\S+\s+-\s+-\s+\d+ s ago/m);
  });

  it("usage --providers shows the rate-limit headers of each profile's last response", async () => {
    const r = await runCli(["usage", "--providers", "--json"], cliEnv);
    assert.equal(r.code, 0, r.stderr);
    assertNoSecret(r.stdout);
    const report = JSON.parse(r.stdout) as { profiles: Array<{ provider: string; profile: string; status: number; windows: Array<{ name: string; limit?: number; remaining?: number; resetAt?: number }> }> };
    const team = report.profiles.find((p) => p.provider === "openai" && p.profile === "team");
    assert.ok(team, r.stdout);
    assert.equal(team.status, 200);
    const requests = team.windows.find((w) => w.name === "requests")!;
    assert.deepEqual([requests.remaining, requests.limit], [499, 500]);
    assert.ok(requests.resetAt! > Date.now() + 5 * 60_000 && requests.resetAt! <= Date.now() + 6 * 60_000, "6m0s after the response");
    assert.deepEqual(team.windows.map((w) => w.name), ["requests", "tokens"]);
    // the 429 of the default profile carried the headers too
    assert.equal(report.profiles.find((p) => p.profile === "default")?.status, 429);

    const text = await runCli(["usage", "--providers"], cliEnv);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^openai\s+team\s+requests\s+499\s+500\s+in (5|6) min/m);
    const bad = await runCli(["usage", "--providers", "--days", "3"], cliEnv);
    assert.equal(bad.code, 64);
    assert.match(bad.stderr, /--providers .* takes only --json, not --days/);
  });

  it("/status names the provider whose profile is cooling down", async () => {
    const reply = await chat.send("/status");
    assert.match(reply.text, /^ {2}openai: 1 of 2 profiles cooling down for \d+ (s|min) \(rate_limit\)$/m, reply.text);
    assert.doesNotMatch(reply.text, /anthropic:/, "no line for a provider whose profiles are all usable");
  });

  it("auth probe: ok for a good key, auth failed for a refused one (which is then disabled); exit 1", async () => {
    const r = await runCli(["auth", "probe", "anthropic", "--json"], cliEnv);
    assert.equal(r.code, 1, r.stderr);
    assertNoSecret(r.stdout + r.stderr);
    const reply = JSON.parse(r.stdout) as { results: Array<{ profile: string; outcome: string; status?: number; call: string; ms: number; disabledUntil?: number }> };
    const byId = new Map(reply.results.map((x) => [x.profile, x]));
    assert.equal(byId.get("default")?.outcome, "ok");
    assert.equal(byId.get("bad")?.outcome, "auth_failed");
    assert.equal(byId.get("bad")?.status, 401);
    assert.match(byId.get("default")!.call, /^GET 127\.0\.0\.1:\d+\/v1\/models$/);
    assert.ok(byId.get("bad")!.disabledUntil! > Date.now() + 4 * 3_600_000, "disabled like a refused call: 5 h");
    assert.equal(anthropic.requests.length, 0, "no message was sent: the models list only");
    assert.equal(anthropic.modelRequests, 2);

    const ok = await runCli(["auth", "probe", "openai:default"], cliEnv);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /^openai\s+default\s+api key\s+GET 127\.0\.0\.1:\d+\/v1\/models\s+ok\s+\d+ ms/m);
    assertNoSecret(ok.stdout);

    const text = await runCli(["auth", "probe", "anthropic:bad"], cliEnv);
    assert.equal(text.code, 1);
    assert.match(text.stdout, /^anthropic\s+bad\s+api key\s+GET \S+\s+auth failed\s+\d+ ms\s+HTTP 401; invalid x-api-key; disabled until/m);
    assert.match(text.stdout, /note: anthropic\/bad is now disabled/);
    assertNoSecret(text.stdout);

    const list = JSON.parse((await runCli(["auth", "list", "--json"], cliEnv)).stdout) as { profiles: ListedProfile[] };
    const bad = list.profiles.find((p) => p.provider === "anthropic" && p.id === "bad")!;
    assert.equal(bad.runtime?.disables[0]?.reason, "auth");
    assert.deepEqual(bad.runtime?.cooldowns, [], "no model's cooldown: the probe names no model");
    const status = await chat.send("/status");
    assert.match(status.text, /^ {2}anthropic: 1 of 2 profiles disabled for \d+ h( \d+ min)? \(auth\)$/m, status.text);

    const unknown = await runCli(["auth", "probe", "openai:nobody"], cliEnv);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /openai has no auth profile "nobody" \(default, team\)/);
    const malformed = await runCli(["auth", "probe", "open ai"], cliEnv);
    assert.equal(malformed.code, 64);
    // every configured profile, side by side; not Ollama's implicit localhost (nothing configured for it)
    const all = await runCli(["auth", "probe", "--json"], cliEnv);
    assert.equal(all.code, 1);
    const outcomes = (JSON.parse(all.stdout) as { results: Array<{ provider: string; profile: string; outcome: string }> }).results.map((x) => `${x.provider}/${x.profile}=${x.outcome}`);
    assert.deepEqual(outcomes.sort(), ["anthropic/bad=auth_failed", "anthropic/default=ok", "openai/default=ok", "openai/team=ok"]);
  });

  it("two runners with their own stores: every one answers, the store's cooldown counted once", async () => {
    // another "host": its own home (a copy of the config), so its own LMDB store
    const otherHome = join(system.nats.dir, "other-home");
    mkdirSync(otherHome, { recursive: true });
    writeFileSync(join(otherHome, "config.json"), readFileSync(join(system.nats.home, "config.json")));
    second = await startActorProcess("agent-runner", system.nats, { ...system.env, LURKBOT_HOME: otherHome });
    const json = await runCli(["auth", "list", "--json"], cliEnv);
    assert.equal(json.code, 0, json.stderr);
    const report = JSON.parse(json.stdout) as { profiles: ListedProfile[]; runners: Array<{ stateId: string; pid: number }> };
    assert.equal(report.runners.length, 2);
    assert.equal(new Set(report.runners.map((r) => r.stateId)).size, 2, "two stores");
    const def = report.profiles.find((p) => p.provider === "openai" && p.id === "default")!;
    assert.deepEqual(def.runtime!.failureCounts, { rate_limit: 1 });
    assert.equal(def.runtime!.cooldowns.length, 1);
  });

  it("only the cli user (and the router) may ask: a channel's request is refused by the server", async () => {
    const web = await system.nats.connect("channel-web");
    try {
      const s = subjects();
      const body = JSON.stringify({ id: "x", ts: Date.now(), type: requestType("agent-runner", "auth_state") });
      await assert.rejects(web.request(s.op("agent-runner", "auth_state"), body, { timeout: 2000 }), /permission|Permissions Violation|timeout|503|no responders/i);
    } finally {
      await web.close();
    }
    const cli = await system.nats.connect("cli");
    try {
      const s = subjects();
      const body = JSON.stringify({ id: "y", ts: Date.now(), type: requestType("agent-runner", "auth_state") });
      const reply = JSON.parse(new TextDecoder().decode((await cli.request(s.op("agent-runner", "auth_state"), body, { timeout: 5000 })).data)) as AgentRunnerAuthStateReply;
      assert.ok(reply.providers.some((p) => p.provider === "openai"));
    } finally {
      await cli.close();
    }
  });
});

describe("rate-limit headers and the merged view", () => {
  it("reads Anthropic's RFC 3339 resets and OpenAI's durations; ignores responses without the headers", () => {
    const now = Date.parse("2026-11-27T10:00:00Z");
    const book = new RateLimitBook(() => now);
    const ant = book.recorder("anthropic", "default", "anthropic");
    ant(new Headers({ "anthropic-ratelimit-requests-limit": "1000", "anthropic-ratelimit-requests-remaining": "999", "anthropic-ratelimit-requests-reset": "2026-11-27T10:00:30Z", "anthropic-ratelimit-output-tokens-limit": "16000", "anthropic-ratelimit-output-tokens-remaining": "15000", "retry-after": "7" }), 200);
    assert.deepEqual(book.get("anthropic", "default"), {
      at: now, status: 200, retryAfterMs: 7000,
      windows: [{ name: "requests", limit: 1000, remaining: 999, resetAt: now + 30_000 }, { name: "output-tokens", limit: 16000, remaining: 15000 }],
    });
    ant(new Headers({ "content-type": "application/json" }), 500);
    assert.equal(book.get("anthropic", "default")?.status, 200, "a response without the headers keeps the last snapshot");
    const oai = book.recorder("openai", "team", "openai");
    oai(new Headers({ "x-ratelimit-limit-requests": "-1", "x-ratelimit-remaining-requests": "5", "x-ratelimit-reset-requests": "1m30.5s" }), 200);
    assert.deepEqual(book.get("openai", "team")?.windows, [{ name: "requests", remaining: 5, resetAt: now + 90_500 }], "Azure's -1 limit left out");
    assert.equal(durationMs("12ms"), 12);
    assert.equal(durationMs("6m0s"), 360_000);
    assert.equal(durationMs("1h2m3s"), 3_723_000);
    assert.equal(durationMs("2"), 2000);
    assert.equal(durationMs("soon"), undefined);
  });

  it("merges replies by store: one host's runners counted once; the newest rate limits win; one line per provider", () => {
    const now = Date.now();
    const profile = (id: string, extra: Partial<AuthProfileState> = {}): AuthProfileState => ({ id, kind: "api key", disableCount: 0, cooldowns: [], failureCounts: {}, pins: 0, ...extra });
    const cooling = profile("a", { pins: 2, lastUsed: now - 5000, failureCounts: { rate_limit: 1 }, cooldowns: [{ model: "m", until: now + 170_000, reason: "rate_limit", consecutive: 1, lastFailureAt: now - 10_000, failureCounts: { rate_limit: 1 } }] });
    const reply = (pid: number, stateId: string, host: string, profiles: AuthProfileState[]): AgentRunnerAuthStateReply => ({ host, pid, stateId, at: now, providers: [{ provider: "anthropic", profiles }] });
    const merged = mergeAuthState([
      reply(1, "s1", "h1", [{ ...cooling, lastSuccess: now - 9000, rateLimits: { at: now - 100, status: 200, windows: [{ name: "requests", remaining: 3 }] } }, profile("b")]),
      reply(2, "s1", "h1", [{ ...cooling, lastSuccess: now - 1000, rateLimits: { at: now - 50, status: 200, windows: [{ name: "requests", remaining: 2 }] } }, profile("b")]),
      reply(3, "s2", "h2", [profile("a", { pins: 1 }), profile("b", { disabledUntil: now + 3_600_000, disabledReason: "billing", disableCount: 1 })]),
    ]);
    const [a, b] = merged.providers[0]!.profiles;
    assert.equal(a!.pins, 3, "s1's pins once, and s2's");
    assert.deepEqual(a!.failureCounts, { rate_limit: 1 });
    assert.equal(a!.cooldowns.length, 1);
    assert.equal(a!.lastSuccess, now - 1000);
    assert.equal(a!.rateLimits?.windows[0]?.remaining, 2);
    assert.deepEqual(a!.hosts, ["h1", "h2"]);
    assert.equal(b!.disables[0]?.host, "h2");
    assert.deepEqual(unavailableLines(merged, now), ["anthropic: 2 of 2 profiles unavailable: 1 cooling down for 3 min (rate_limit), 1 disabled for 1 h (billing)"]);
    assert.deepEqual(unavailableLines(mergeAuthState([reply(1, "s1", "h1", [cooling, profile("b")])]), now), ["anthropic: 1 of 2 profiles cooling down for 3 min (rate_limit)"]);
    assert.equal(formatWait(45_000), "45 s");
    assert.equal(formatWait(3_900_000), "1 h 5 min");
  });
});
