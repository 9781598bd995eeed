/**
 * `lurkbot config get|set|unset|path|validate|set-secret` as a user runs it (the real CLI on a
 * temporary LURKBOT_HOME): set and unset keep every other key and their order; a value the schema
 * refuses writes nothing and names the key; secrets are refused by set and shown as *** by get;
 * an unknown key gets a suggestion; --effective shows the defaults. The security audit's findings
 * carry the `npx lurkbot config set …` that fixes them, and running it makes them go away.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { audit, byId, freshHome, removeAuditDirs } from "./harness/audit.js";
import { runCli, type CliRun } from "./harness/cli.js";

const dirs: string[] = [];
function home(config?: string): { dir: string; env: Record<string, string>; path: string } {
  const dir = mkdtempSync(join(tmpdir(), "lurk-config-"));
  dirs.push(dir);
  const path = join(dir, "config.json");
  if (config !== undefined) writeFileSync(path, config, { mode: 0o600 });
  return { dir, path, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, LURKBOT_HOME: dir } };
}
const config = (env: Record<string, string>, ...args: string[]): Promise<CliRun> => runCli(["config", ...args], env);
const ok = (run: CliRun) => assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);

const ORIGINAL = `{
    "model": "openai/gpt-4o-mini",
    "channels": {
        "web": { "enabled": true, "port": 8791 }
    },
    "agents": [{ "id": "main", "default": true }, { "id": "work", "model": "openai/gpt-4o" }],
    "log": { "level": "warn" }
}
`;

after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  removeAuditDirs();
});

describe("lurkbot config", () => {
  it("set and unset round trip: other keys and their order stay, the file's indentation too, mode 600", async () => {
    const h = home(ORIGINAL);
    ok(await config(h.env, "set", "channels.web.port", "8800"));
    ok(await config(h.env, "set", "agents[id=work].model", "anthropic/claude-sonnet-4-5"));
    ok(await config(h.env, "set", "routing.dmScope", "per-channel-peer"));
    ok(await config(h.env, "set", "agents[0].thinking", "low"));
    const text = readFileSync(h.path, "utf8");
    assert.match(text, /^\{\n {4}"model"/, "4-space indentation kept");
    const raw = JSON.parse(text);
    assert.deepEqual(Object.keys(raw), ["model", "channels", "agents", "log", "routing"]);
    assert.deepEqual(raw.channels.web, { enabled: true, port: 8800 });
    assert.deepEqual(raw.agents, [{ id: "main", default: true, thinking: "low" }, { id: "work", model: "anthropic/claude-sonnet-4-5" }]);
    assert.equal(raw.log.level, "warn");
    assert.equal(raw.routing.dmScope, "per-channel-peer");
    assert.equal((statSync(h.path).mode & 0o777).toString(8), "600");

    const got = await config(h.env, "get", "channels.web.port");
    ok(got);
    assert.equal(got.stdout, "8800\n");
    const json = await config(h.env, "get", "agents[id=work]", "--json");
    assert.deepEqual(JSON.parse(json.stdout), { id: "work", model: "anthropic/claude-sonnet-4-5" });

    ok(await config(h.env, "unset", "channels.web.port"));
    ok(await config(h.env, "unset", "agents[id=work]"));
    ok(await config(h.env, "unset", "routing"));
    const back = JSON.parse(readFileSync(h.path, "utf8"));
    assert.deepEqual(back, { model: "openai/gpt-4o-mini", channels: { web: { enabled: true } }, agents: [{ id: "main", default: true, thinking: "low" }], log: { level: "warn" } });
    const missing = await config(h.env, "get", "channels.web.port");
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /channels\.web\.port is not set in config\.json; its effective value \(default or environment\) is 8790/);
  });

  it("VALUE: JSON when it parses, else text; --string and --json-value force it", async () => {
    const h = home("{}");
    ok(await config(h.env, "set", "channels.web", '{"enabled":true,"host":"127.0.0.1"}'));
    ok(await config(h.env, "set", "routing.commands.owners", '["telegram:123456789"]'));
    ok(await config(h.env, "set", "routing.commands.owners[1]", "web:alice", "--string"));
    const raw = JSON.parse(readFileSync(h.path, "utf8"));
    assert.deepEqual(raw.channels.web, { enabled: true, host: "127.0.0.1" });
    assert.deepEqual(raw.routing.commands.owners, ["telegram:123456789", "web:alice"]);
    const bad = await config(h.env, "set", "channels.web.port", "eighty", "--json-value");
    assert.equal(bad.code, 64);
    assert.match(bad.stderr, /--json-value: "eighty" is not JSON/);
  });

  it("a value the schema refuses writes nothing and names the key with the schema's message (exit 78)", async () => {
    const h = home(ORIGINAL);
    for (const [path, value, message] of [
      ["channels.web.port", "70000", /channels\.web\.port: Too big/],
      ["routing.dmScope", "everyone", /routing\.dmScope: Invalid option/],
      ["agents[0].default", "\"yes\"", /agents\.0\.default: Invalid input: expected boolean/],
    ] as const) {
      const run = await config(h.env, "set", path, value);
      assert.equal(run.code, 78, `${path}: ${run.stdout}\n${run.stderr}`);
      assert.match(run.stderr, /nothing was written/);
      assert.match(run.stderr, message);
    }
    assert.equal(readFileSync(h.path, "utf8"), ORIGINAL, "the file is untouched");
  });

  it("an unknown key is exit 64 with the nearest known keys; nothing is written", async () => {
    const h = home(ORIGINAL);
    const typo = await config(h.env, "set", "chanels.web.port", "8800");
    assert.equal(typo.code, 64);
    assert.match(typo.stderr, /no key `chanels` in config; did you mean `channels`\?/);
    const deep = await config(h.env, "get", "channels.web.prot");
    assert.equal(deep.code, 64);
    assert.match(deep.stderr, /no key `prot` in channels\.web; did you mean `port`\?/);
    const openclaw = await config(h.env, "set", "gateway.bind", "loopback");
    assert.equal(openclaw.code, 64);
    assert.match(openclaw.stderr, /channels\.web\.host/);
    const notList = await config(h.env, "get", "log[0]");
    assert.equal(notList.code, 64);
    assert.match(notList.stderr, /`log` is an object, not a list/);
    const noElement = await config(h.env, "set", "agents[id=nobody].model", "openai/x");
    assert.equal(noElement.code, 64);
    assert.match(noElement.stderr, /no element with id=nobody in agents \(it has id main, work\)/);
    assert.equal(readFileSync(h.path, "utf8"), ORIGINAL);
  });

  it("secrets: refused by set with where to put them instead, stored by set-secret, shown as *** by get", async () => {
    const token = "123456789:AAE-telegram-secret-token-abcdefgh";
    const h = home(JSON.stringify({ channels: { telegram: { enabled: true, botToken: token }, web: { token: "web-token-0123456789abcdef" } }, hooks: { entries: { "my-hook": { env: { GITHUB_TOKEN: "ghp_hook-secret-0123456789" } } } } }, null, 2));
    const before = readFileSync(h.path, "utf8");
    const refused = await config(h.env, "set", "channels.telegram.botToken", "999:another-token-abcdefghijklmn");
    assert.equal(refused.code, 64);
    assert.match(refused.stderr, /channels\.telegram\.botToken is a secret/);
    assert.match(refused.stderr, /npx lurkbot config set-secret TELEGRAM_BOT_TOKEN/);
    const nested = await config(h.env, "set", "providers.openai", '{"apiKey":"sk-nested-0123456789"}');
    assert.equal(nested.code, 64);
    assert.match(nested.stderr, /providers\.openai\.apiKey is a secret.*OPENAI_API_KEY/);
    const hookEnv = await config(h.env, "set", "hooks.entries.my-hook.env", '{"OTHER_API_KEY":"abc-0123456789"}');
    assert.equal(hookEnv.code, 64);
    assert.match(hookEnv.stderr, /hooks\.entries\.my-hook\.env\.OTHER_API_KEY is a secret/);
    assert.equal(readFileSync(h.path, "utf8"), before);

    const all = await config(h.env, "get");
    assert.ok(!all.stdout.includes("ghp_hook-secret"), all.stdout);
    ok(all);
    assert.ok(!all.stdout.includes(token) && !all.stdout.includes("web-token-0123456789abcdef"), all.stdout);
    assert.equal(JSON.parse(all.stdout).channels.telegram.botToken, "***");
    assert.equal((await config(h.env, "get", "channels.telegram.botToken")).stdout, "***\n");
    // an environment secret in the effective config is masked too
    const eff = await runCli(["config", "get", "providers.openai", "--effective", "--json"], { ...h.env, OPENAI_API_KEY: "sk-from-the-env-0123456789" });
    ok(eff);
    assert.equal(JSON.parse(eff.stdout).apiKey, "***");

    const stored = await runCli(["config", "set-secret", "TELEGRAM_BOT_TOKEN"], h.env, { input: "999:stored-token-abcdefghijklmnop\n" });
    ok(stored);
    assert.match(stored.stdout, /stored TELEGRAM_BOT_TOKEN in .*secrets\.json \(mode 600\)/);
    assert.ok(!stored.stdout.includes("stored-token") && !stored.stderr.includes("stored-token"));
    const secretsPath = join(h.dir, "credentials", "secrets.json");
    assert.deepEqual(JSON.parse(readFileSync(secretsPath, "utf8")), { TELEGRAM_BOT_TOKEN: "999:stored-token-abcdefghijklmnop" });
    assert.equal((statSync(secretsPath).mode & 0o777).toString(8), "600");
    const unknown = await runCli(["config", "set-secret", "MY_PASSWORD"], h.env, { input: "x\n" });
    assert.equal(unknown.code, 64);
    assert.match(unknown.stderr, /not a secret LurkBot stores/);
    // unset takes a secret out of config.json
    ok(await config(h.env, "unset", "channels.telegram.botToken"));
    assert.ok(!readFileSync(h.path, "utf8").includes(token));
  });

  it("--effective shows the defaults and the environment; path and validate", async () => {
    const h = home(ORIGINAL);
    const eff = await config(h.env, "get", "tools.exec", "--effective", "--json");
    ok(eff);
    assert.equal(JSON.parse(eff.stdout).ask, "off");
    assert.equal((await config(h.env, "get", "channels.web.host", "--effective")).stdout, "127.0.0.1\n");
    const raw = await config(h.env, "get", "tools.exec");
    assert.equal(raw.code, 1, "not in the file");
    const env = await runCli(["config", "get", "model", "--effective"], { ...h.env, LURKBOT_MODEL: "ollama/llama3.2" });
    assert.equal(env.stdout, "ollama/llama3.2\n");

    const path = await config(h.env, "path");
    assert.equal(path.stdout, `${h.path}\n`);
    const valid = await config(h.env, "validate");
    ok(valid);
    assert.match(valid.stdout, /is valid/);
    writeFileSync(h.path, JSON.stringify({ chanels: {}, channels: { web: { enabled: true, prot: 1 } } }));
    const unknown = await config(h.env, "validate");
    assert.equal(unknown.code, 78);
    assert.match(unknown.stderr, /unknown key chanels .*did you mean `channels`/);
    assert.match(unknown.stderr, /unknown key channels\.web\.prot .*did you mean `port`/);
    writeFileSync(h.path, JSON.stringify({ channels: { web: { port: "x" } } }));
    const invalid = await config(h.env, "validate");
    assert.equal(invalid.code, 78);
    assert.match(invalid.stderr, /not valid: .*channels\.web\.port/);
  });
});

describe("security audit: fix commands", () => {
  it("findings whose fix is one config change carry the command (also in --json), and running it makes them go away", async () => {
    const { env } = await freshHome({
      channels: { web: { enabled: true, host: "0.0.0.0" }, telegram: { enabled: true } },
      routing: { dm: { policy: "open" } },
    }, { TELEGRAM_BOT_TOKEN: "123456:telegram-token-abcdefghijklmnop" });
    const { report } = await audit(env);
    const ids = ["channel.web.exposed", "routing.dm.telegram.open", "routing.dm.shared-main-session"];
    const expected: Record<string, string> = {
      "channel.web.exposed": "npx lurkbot config set channels.web.host 127.0.0.1",
      "routing.dm.telegram.open": "npx lurkbot config set routing.dm.byChannel.telegram.policy pairing",
      "routing.dm.shared-main-session": "npx lurkbot config set routing.dmScope per-channel-peer",
    };
    for (const id of ids) assert.equal(byId(report, id)?.fixCommand, expected[id], id);
    const text = await runCli(["security", "audit"], env);
    assert.ok(text.stdout.includes(`    run: ${expected["channel.web.exposed"]}`), text.stdout);

    for (const id of ids) {
      const [, , ...args] = expected[id]!.split(" ");
      ok(await runCli(args, env));
    }
    const { report: after } = await audit(env);
    for (const id of ids) assert.equal(byId(after, id), undefined, `${id} is gone`);
  });
});
