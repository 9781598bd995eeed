/**
 * Hook discovery and gating (shared/runtime/hooks/discovery.ts) on real folders, and the
 * `lurkbot hooks` CLI as a process: precedence workspace > $LURKBOT_HOME/hooks > bundled, the
 * default on/off per source and hooks.entries overrides, requirements (bins, env, os), malformed
 * folders reported and never fatal, `hooks list --json`, `info`, `enable`/`disable` writing config.json;
 * HOOK.md `context`, the `hooks` section read alone for a reload, and the ended transcript's
 * messages as hooks get them (no tool calls, no system events, capped).
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { parseConfig } from "../shared/runtime/config.js";
import type { TranscriptRecord } from "../shared/contract/index.js";
import { readHooksConfig } from "../shared/runtime/hooks/config-file.js";
import { BUNDLED_HOOKS_DIR, discoverHooks } from "../shared/runtime/hooks/discovery.js";
import { PREVIOUS_MESSAGES, textMessages } from "../services/hooks/previous-messages.js";
import { hookWants } from "../shared/runtime/hooks/events.js";
import { runCli } from "./harness/cli.js";

const HANDLER = "export default async function (event, ctx) { event.messages.push('hi'); }\n";

function hookMd(name: string, events: string[], extra = ""): string {
  return `---\nname: ${name}\ndescription: test hook ${name}\nmetadata: {"lurkbot": {"events": ${JSON.stringify(events)}${extra}}}\n---\n\n# ${name}\n`;
}

function writeHook(root: string, name: string, md: string | null, handler: string | null = HANDLER, file = "handler.js"): void {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  if (md !== null) writeFileSync(join(dir, "HOOK.md"), md);
  if (handler !== null) writeFileSync(join(dir, file), handler);
}

describe("hook discovery", () => {
  let home: string;
  let workspace: string;
  let bundled: string;
  const config = (raw: Record<string, unknown> = {}) => parseConfig(raw, { LURKBOT_WORKSPACE: workspace }, home);

  before(() => {
    home = mkdtempSync(join(tmpdir(), "lurk-hooks-"));
    workspace = join(home, "workspace");
    bundled = join(home, "bundled");
    // "dup" in all three places; one hook only in each place
    for (const [root, only] of [[join(workspace, "hooks"), "ws-only"], [join(home, "hooks"), "user-only"], [bundled, "bundled-only"]] as const) {
      writeHook(root, "dup", hookMd("dup", ["command:new"]));
      writeHook(root, only, hookMd(only, ["command"]));
    }
    const ws = join(workspace, "hooks");
    writeHook(ws, "needs-bin", hookMd("needs-bin", ["command:new"], `, "requires": {"bins": ["no-such-binary-lurk-test"]}`));
    writeHook(ws, "needs-env", hookMd("needs-env", ["session:reset"], `, "requires": {"env": ["LURK_HOOK_TEST_VAR"]}`));
    writeHook(ws, "needs-os", hookMd("needs-os", ["agent:run_end"], `, "os": ["plan9"]`));
    writeHook(ws, "mjs-handler", hookMd("mjs-handler", ["gateway:startup"]), HANDLER, "handler.mjs");
    // malformed: each reported, none fatal
    writeHook(ws, "no-frontmatter", "# just a title\n");
    writeHook(ws, "no-events", "---\nname: no-events\ndescription: x\n---\n");
    writeHook(ws, "bad-event", hookMd("bad-event", ["command:new", "Not An Event"]));
    writeHook(ws, "unknown-type", hookMd("unknown-type", ["message:received"]));
    writeHook(ws, "no-handler", hookMd("no-handler", ["command"]), null);
    writeHook(ws, "no-hook-md", null);
    writeHook(ws, "wrong-name", hookMd("other-name", ["command"]));
    writeHook(ws, "bad-context", hookMd("bad-context", ["command:new"], `, "context": ["everything"]`));
    writeHook(ws, "with-context", hookMd("with-context", ["command:new"], `, "context": ["previousMessages"]`));
    // a broken workspace hook does not hide the user's hook of that name
    writeHook(ws, "user-only-2", "---\nbroken");
    writeHook(join(home, "hooks"), "user-only-2", hookMd("user-only-2", ["command:stop"]));
  });
  after(() => rmSync(home, { recursive: true, force: true }));

  it("finds hooks by precedence: $LURKBOT_HOME/hooks before bundled; a workspace hook never takes a user or bundled hook's name; a name once", async () => {
    const found = await discoverHooks(config(), { bundledDir: bundled, env: { PATH: process.env.PATH } });
    const dup = found.hooks.filter((h) => h.name === "dup");
    assert.equal(dup.length, 1);
    assert.equal(dup[0]!.source, "user");
    assert.deepEqual(dup[0]!.shadows, ["bundled"]);
    assert.equal(dup[0]!.handler, join(home, "hooks", "dup", "handler.js"));
    const refused = found.problems.find((p) => p.dir === join(workspace, "hooks", "dup"));
    assert.match(refused?.reason ?? "", /^it has the name of the user hook "dup", which a workspace hook cannot replace \(the agent can write its workspace\): rename/);
    const sources = Object.fromEntries(found.hooks.map((h) => [h.name, h.source]));
    assert.equal(sources["ws-only"], "workspace");
    assert.equal(sources["user-only"], "user");
    assert.equal(sources["bundled-only"], "bundled");
    assert.equal(sources["user-only-2"], "user", "the broken workspace folder of that name is skipped");
    assert.equal(found.hooks.find((h) => h.name === "mjs-handler")!.handler.endsWith("handler.mjs"), true);
    // discovery order: by place, then by name
    const order = found.hooks.map((h) => h.source);
    assert.deepEqual(order, [...order].sort((a, b) => ["workspace", "user", "bundled"].indexOf(a) - ["workspace", "user", "bundled"].indexOf(b)));
  });

  it("user hooks are on by default, bundled and workspace hooks off; hooks.entries overrides either way", async () => {
    const byName = async (raw: Record<string, unknown>) => new Map((await discoverHooks(config(raw), { bundledDir: bundled, env: { PATH: process.env.PATH } })).hooks.map((h) => [h.name, h]));
    const d = await byName({});
    assert.deepEqual([d.get("ws-only")!.enabled, d.get("user-only")!.enabled, d.get("bundled-only")!.enabled], [false, true, false]);
    assert.equal(d.get("user-only")!.runs, true);
    assert.equal(d.get("ws-only")!.enabledBy, "default");
    const o = await byName({ hooks: { entries: { "ws-only": { enabled: true }, "user-only": { enabled: false }, "bundled-only": { enabled: true } } } });
    assert.deepEqual([o.get("ws-only")!.enabled, o.get("user-only")!.enabled, o.get("bundled-only")!.enabled], [true, false, true]);
    assert.equal(o.get("ws-only")!.enabledBy, "config");
    assert.equal(o.get("ws-only")!.runs, true);
    // the agent writes a workspace hook named like a bundled hook the operator enabled: it never inherits that enable
    writeHook(join(workspace, "hooks"), "bundled-only", hookMd("bundled-only", ["command"]), "export default async function () { throw new Error('agent code'); }\n");
    try {
      const taken = await byName({ hooks: { entries: { "bundled-only": { enabled: true } } } });
      assert.equal(taken.get("bundled-only")!.source, "bundled");
      assert.equal(taken.get("bundled-only")!.handler, join(bundled, "bundled-only", "handler.js"));
    } finally {
      rmSync(join(workspace, "hooks", "bundled-only"), { recursive: true, force: true });
    }
    const off = await byName({ hooks: { enabled: false, entries: { "ws-only": { enabled: true } } } });
    assert.equal(off.get("ws-only")!.runs, false, "hooks.enabled false: nothing runs");
  });

  it("gates on bins, env (the environment or the entry's env) and os, saying what is missing", async () => {
    const entries = { "needs-bin": { enabled: true }, "needs-env": { enabled: true }, "needs-os": { enabled: true } };
    const found = await discoverHooks(config({ hooks: { entries } }), { bundledDir: bundled, env: { PATH: process.env.PATH }, platform: "linux" });
    const h = new Map(found.hooks.map((x) => [x.name, x]));
    assert.match(h.get("needs-bin")!.missing.join(), /no-such-binary-lurk-test is not on PATH/);
    assert.match(h.get("needs-env")!.missing.join(), /LURK_HOOK_TEST_VAR is not set.*hooks\.entries\.needs-env\.env/);
    assert.match(h.get("needs-os")!.missing.join(), /runs only on plan9/);
    for (const name of ["needs-bin", "needs-env", "needs-os"]) assert.equal(h.get(name)!.runs, false, name);
    const withEnv = await discoverHooks(config({ hooks: { entries: { "needs-env": { enabled: true, env: { LURK_HOOK_TEST_VAR: "1" } } } } }), { bundledDir: bundled, env: { PATH: process.env.PATH } });
    assert.deepEqual(withEnv.hooks.find((x) => x.name === "needs-env")!.missing, []);
    const fromEnv = await discoverHooks(config({ hooks: { entries } }), { bundledDir: bundled, env: { PATH: process.env.PATH, LURK_HOOK_TEST_VAR: "x" }, platform: "plan9" });
    assert.deepEqual(fromEnv.hooks.find((x) => x.name === "needs-env")!.missing, []);
    assert.deepEqual(fromEnv.hooks.find((x) => x.name === "needs-os")!.missing, []);
    // a secret in the environment is never shown to handlers, so it does not satisfy requires.env
    writeHook(join(workspace, "hooks"), "needs-key", hookMd("needs-key", ["command"], `, "requires": {"env": ["SOME_API_KEY"]}`));
    const secret = await discoverHooks(config(), { bundledDir: bundled, env: { PATH: process.env.PATH, SOME_API_KEY: "sk-x" } });
    assert.match(secret.hooks.find((x) => x.name === "needs-key")!.missing.join(), /SOME_API_KEY is not set/);
    const given = await discoverHooks(config({ hooks: { entries: { "needs-key": { env: { SOME_API_KEY: "sk-x" } } } } }), { bundledDir: bundled, env: { PATH: process.env.PATH } });
    assert.deepEqual(given.hooks.find((x) => x.name === "needs-key")!.missing, []);
  });

  it("reports every malformed folder with the reason, and keeps going", async () => {
    const found = await discoverHooks(config(), { bundledDir: bundled, env: { PATH: process.env.PATH } });
    const reasons = new Map(found.problems.map((p) => [p.dir.split("/").pop()!, p.reason]));
    assert.match(reasons.get("no-frontmatter")!, /no frontmatter/);
    assert.match(reasons.get("no-events")!, /names no events/);
    assert.match(reasons.get("bad-event")!, /"Not An Event" is not an event name/);
    assert.match(reasons.get("unknown-type")!, /unknown event type "message"/);
    assert.match(reasons.get("no-handler")!, /no handler module/);
    assert.match(reasons.get("no-hook-md")!, /no HOOK\.md/);
    assert.match(reasons.get("wrong-name")!, /differs from its folder/);
    assert.match(reasons.get("user-only-2")!, /frontmatter/);
    assert.match(reasons.get("bad-context")!, /unknown context "everything" \(known: previousMessages\)/);
    assert.deepEqual(found.hooks.find((h) => h.name === "with-context")!.context, ["previousMessages"]);
    assert.deepEqual(found.hooks.find((h) => h.name === "ws-only")!.context, []);
    assert.ok(found.hooks.length >= 8, "the good hooks are all there");
  });

  it("the bundled hooks ship off: command-logger on every command, boot-md on gateway:startup, session-memory on /new and /reset", async () => {
    const found = await discoverHooks(config(), { env: { PATH: process.env.PATH } });
    const logger = found.hooks.find((h) => h.name === "command-logger")!;
    const boot = found.hooks.find((h) => h.name === "boot-md")!;
    const memory = found.hooks.find((h) => h.name === "session-memory")!;
    assert.equal(logger.source, "bundled");
    assert.equal(logger.dir, join(BUNDLED_HOOKS_DIR, "command-logger"));
    assert.deepEqual([logger.enabled, boot.enabled, memory.enabled], [false, false, false]);
    assert.deepEqual([memory.source, memory.events, memory.context], ["bundled", ["command:new", "command:reset"], ["previousMessages"]]);
    assert.deepEqual(logger.events, ["command"]);
    assert.deepEqual(boot.events, ["gateway:startup"]);
    assert.equal(hookWants(logger.events, "command:new"), true);
    assert.equal(hookWants(logger.events, "session:reset"), false);
    assert.equal(hookWants(["command:*"], "command:stop"), true);
    assert.equal(hookWants(["command:new"], "command:reset"), false);
  });
});

describe("hook reload inputs", () => {
  let home: string;
  before(() => (home = mkdtempSync(join(tmpdir(), "lurk-hooks-cfg-"))));
  after(() => rmSync(home, { recursive: true, force: true }));

  it("reads config.json's hooks section alone: defaults without a file, the rest of the file ignored, a bad section refused", () => {
    const none = readHooksConfig(home);
    assert.ok(none.ok);
    assert.deepEqual([none.config.enabled, none.config.entries, none.config.reloadIntervalMs, none.config.watch], [true, {}, 30_000, true]);
    // another section being invalid does not keep a hooks change from applying
    writeFileSync(join(home, "config.json"), JSON.stringify({ agents: "not a list", hooks: { entries: { a: { enabled: true } } } }));
    const ok = readHooksConfig(home);
    assert.ok(ok.ok);
    assert.equal(ok.config.entries.a!.enabled, true);
    writeFileSync(join(home, "config.json"), JSON.stringify({ hooks: { timeoutMs: "soon" } }));
    const bad = readHooksConfig(home);
    assert.equal(bad.ok, false);
    assert.match(!bad.ok ? bad.reason : "", /hooks\.timeoutMs/);
    writeFileSync(join(home, "config.json"), "{ half written");
    const broken = readHooksConfig(home);
    assert.equal(broken.ok, false);
    assert.match(!broken.ok ? broken.reason : "", /cannot read .*config\.json/);
  });

  it("previous messages: user and assistant text only (no tool calls, tool results, thinking or system events), the newest, capped", () => {
    let seq = 0;
    const rec = (r: Partial<TranscriptRecord>): TranscriptRecord => ({ id: `r${seq}`, seq: seq++, ts: Date.UTC(2026, 0, 16, 14, seq), kind: "message", ...r });
    const asst = (content: unknown[]) => ({ role: "assistant", content, provider: "openai", model: "x", stopReason: "end_turn" }) as never;
    const records = [
      rec({ message: { role: "user", content: [{ type: "text", text: "hello there" }] } }),
      rec({ message: asst([{ type: "thinking", thinking: "secret plan" }, { type: "tool_call", id: "c1", name: "exec", args: { cmd: "ls" } }]) }),
      rec({ message: { role: "tool_result", toolCallId: "c1", toolName: "exec", content: [{ type: "text", text: "file-list" }], isError: false } }),
      rec({ message: asst([{ type: "text", text: "Here you go" }, { type: "tool_call", id: "c2", name: "read", args: {} }]) }),
      rec({ kind: "system_event", text: "cron fired" }),
      rec({ kind: "compaction_summary", text: "summary" }),
      rec({ message: { role: "user", content: [{ type: "text", text: "x".repeat(PREVIOUS_MESSAGES.chars + 10) }] } }),
    ];
    const out = textMessages(records);
    assert.deepEqual(out.map((m) => [m.role, m.text.slice(0, 11)]), [["user", "hello there"], ["assistant", "Here you go"], ["user", "xxxxxxxxxxx"]]);
    assert.equal(out[1]!.text, "Here you go");
    assert.equal(out[2]!.text.length, PREVIOUS_MESSAGES.chars + 1);
    assert.equal(out[0]!.timestamp, "2026-01-16T14:01:00.000Z");
    const many = Array.from({ length: PREVIOUS_MESSAGES.messages + 5 }, (_, i) => rec({ message: { role: "user", content: [{ type: "text", text: `m${i}` }] } }));
    const newest = textMessages(many);
    assert.equal(newest.length, PREVIOUS_MESSAGES.messages);
    assert.equal(newest.at(-1)!.text, `m${PREVIOUS_MESSAGES.messages + 4}`);
  });
});

describe("lurkbot hooks", () => {
  let home: string;
  let env: Record<string, string>;
  const cli = (...args: string[]) => runCli(["hooks", ...args], env);

  before(() => {
    home = mkdtempSync(join(tmpdir(), "lurk-hooks-cli-"));
    const workspace = join(home, "workspace");
    writeHook(join(workspace, "hooks"), "greeter", hookMd("greeter", ["command:new"]));
    writeHook(join(workspace, "hooks"), "broken", "no frontmatter here\n");
    writeFileSync(join(home, "config.json"), JSON.stringify({ model: "openai/x", hooks: { timeoutMs: 5000 } }));
    env = { PATH: process.env.PATH ?? "", HOME: home, LURKBOT_HOME: home, LURKBOT_WORKSPACE: workspace };
  });
  after(() => rmSync(home, { recursive: true, force: true }));

  it("list --json: each hook with source, events, enabled and requirements; the problems", async () => {
    const r = await cli("list", "--json");
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { agentId: string; hooksEnabled: boolean; hooks: Array<{ name: string; source: string; events: string[]; enabled: boolean; missing: string[]; runs: boolean }>; problems: Array<{ dir: string; reason: string }> };
    assert.equal(out.agentId, "main");
    assert.equal(out.hooksEnabled, true);
    const greeter = out.hooks.find((h) => h.name === "greeter")!;
    assert.deepEqual([greeter.source, greeter.events, greeter.enabled, greeter.missing, greeter.runs], ["workspace", ["command:new"], false, [], false]);
    assert.ok(out.hooks.some((h) => h.name === "command-logger" && h.source === "bundled"));
    assert.equal(out.problems.length, 1);
    assert.match(out.problems[0]!.reason, /no frontmatter/);
    const text = await cli("list");
    assert.equal(text.code, 0);
    assert.match(text.stdout, /greeter\s+workspace\s+command:new\s+no \(default\)/);
    assert.match(text.stdout, /Folders that cannot be used:\n.*broken.*no frontmatter/);
    const memory = await cli("info", "session-memory");
    assert.equal(memory.code, 0, memory.stderr);
    assert.match(memory.stdout, /events: +command:new, command:reset\n +context: +previousMessages/);
  });

  it("enable and disable write hooks.entries.NAME.enabled, keeping the rest of config.json", async () => {
    const on = await cli("enable", "greeter");
    assert.equal(on.code, 0, on.stderr);
    assert.match(on.stdout, /enabled: greeter \(workspace hook/);
    assert.match(on.stdout, /A running hooks actor applies it .*npx lurkbot hooks reload/);
    const path = join(home, "config.json");
    const written = JSON.parse(readFileSync(path, "utf8")) as { model: string; hooks: { timeoutMs: number; entries: Record<string, { enabled: boolean }> } };
    assert.deepEqual([written.model, written.hooks.timeoutMs, written.hooks.entries.greeter!.enabled], ["openai/x", 5000, true]);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.match((await cli("enable", "greeter")).stdout, /already enabled/);
    const info = await cli("info", "greeter");
    assert.equal(info.code, 0);
    assert.match(info.stdout, /enabled: +yes \(hooks\.entries\.greeter\.enabled\)/);
    assert.match(info.stdout, /runs: +yes/);
    assert.equal((await cli("disable", "greeter")).code, 0);
    assert.equal((JSON.parse(readFileSync(path, "utf8")) as { hooks: { entries: Record<string, { enabled: boolean }> } }).hooks.entries.greeter!.enabled, false);
  });

  it("errors say what was wrong and what to do", async () => {
    const unknown = await cli("info", "nope");
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no hook named "nope" \(found: .*greeter.*\).*lurkbot hooks list/);
    const broken = await cli("enable", "broken");
    assert.equal(broken.code, 1);
    assert.match(broken.stderr, /"broken" cannot be used: .*no frontmatter.*Fix its folder/);
    const noName = await cli("enable");
    assert.equal(noName.code, 64);
    assert.match(noName.stderr, /needs the hook's name/);
    const reloadArg = await cli("reload", "now");
    assert.equal(reloadArg.code, 64);
    assert.match(reloadArg.stderr, /takes no argument/);
    const badSub = await cli("frobnicate");
    assert.equal(badSub.code, 64);
    const badAgent = await cli("list", "--agent", "ghost");
    assert.equal(badAgent.code, 64);
    assert.match(badAgent.stderr, /no agent "ghost"/);
  });
});

describe("the bundled session-memory handler", () => {
  let root: string;
  before(() => {
    root = mkdtempSync(join(tmpdir(), "lurk-session-memory-"));
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  const run = async (workspace: string) => {
    const { default: handler } = (await import(pathToFileURL(join(BUNDLED_HOOKS_DIR, "session-memory", "handler.js")).href)) as { default: (event: unknown, ctx: unknown) => Promise<void> };
    const logged: string[] = [];
    const ctx = { workspace, log: { info: (m: string) => logged.push(m), warn: (m: string) => logged.push(m), error: (m: string) => logged.push(m) } };
    const event = {
      type: "command", action: "new", name: "command:new", sessionKey: "agent:main:main", timestamp: new Date("2026-11-27T10:20:00Z"), messages: [],
      context: { ok: true, previousSessionId: "s-1", previousMessages: [{ role: "user", text: "Plan the garden", timestamp: "2026-11-27T10:00:00Z" }, { role: "assistant", text: "Tomatoes first." }] },
    };
    await handler(event, ctx);
    return logged;
  };

  it("writes into the workspace's own memory/ folder", async () => {
    const ws = join(root, "ws-plain");
    mkdirSync(ws);
    await run(ws);
    assert.match(readFileSync(join(ws, "memory", "2026-11-27-plan-the-garden.md"), "utf8"), /\*\*assistant\*\*: Tomatoes first\./);
  });

  it("refuses a memory/ that is a symbolic link out of the workspace, and writes nothing there", async () => {
    const ws = join(root, "ws-link");
    const outside = join(root, "outside");
    mkdirSync(ws);
    mkdirSync(outside);
    symlinkSync(outside, join(ws, "memory"));
    await assert.rejects(run(ws), /memory is not a folder \(a symbolic link\): nothing saved; make memory\/ a real folder in the workspace/);
    assert.deepEqual(readdirSync(outside), []);
  });
});
