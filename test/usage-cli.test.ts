/**
 * `lurkbot usage` as a real process: its command-line checks; the table (tokens, cost with 4
 * decimals under $1, totals, unpriced tokens, the note about usage before the ledger) and --json
 * against the real sessions actor; exit codes 64 (bad dates, keys) and 2 (bus down); and a real
 * run through the whole system (`lurkbot send` to the fake OpenAI server) showing up in the report.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import type { TranscriptRecord, Usage, UsageReport } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { parseArgs } from "../services/cli/args.js";
import { usageRequest } from "../services/cli/usage.js";
import { formatUsd } from "../shared/runtime/format-usd.js";
import { runCli } from "./harness/cli.js";
import { startActorProcess, type ActorProcess } from "./harness/actors.js";
import { freePort, TestNats } from "./harness/nats.js";
import { CliClient, TestSystem } from "./harness/system.js";

const NOW = Date.parse("2026-11-28T10:00:00Z");
const usage = (input: number, output: number): Usage => ({ input, output, cacheRead: 0, cacheWrite: 0, total: input + output });
const marker = (runId: string, status: "started" | "done"): TranscriptRecord => ({ id: `${runId}:${status}`, ts: Date.now(), runId, kind: "run_marker", runStatus: status });
const today = () => new Date().toISOString().slice(0, 10);

describe("lurkbot usage: command line checks", () => {
  const request = (argv: string[]) => {
    const p = parseArgs(["usage", ...argv]);
    assert.ok(!("global" in p));
    return usageRequest(p, NOW);
  };
  it("turns --days, --since/--until, --by and --agent into the report request", () => {
    assert.deepEqual(request([]), { from: "2026-10-30", groupBy: ["day"] }, "the last 30 days by day");
    assert.deepEqual(request(["--days", "1"]), { from: "2026-11-28", groupBy: ["day"] });
    assert.deepEqual(request(["--days", "7", "--by", "model,agent", "--agent", "ops"]), { from: "2026-11-22", groupBy: ["model", "agent"], agentId: "ops" });
    assert.deepEqual(request(["--since", "2026-11-01", "--until", "2026-11-15", "--by", "type, channel"]), { from: "2026-11-01", to: "2026-11-15", groupBy: ["sessionType", "channel"] });
    assert.deepEqual(request(["--since", "2026-02-28"]), { from: "2026-02-28", groupBy: ["day"] });
    assert.deepEqual(request(["--days", "1", "--by", "purpose,model"]), { from: "2026-11-28", groupBy: ["purpose", "model"] });
  });
  it("refuses bad dates, keys and combinations, saying what is wrong", () => {
    const refuses = (argv: string[], message: RegExp) => assert.throws(() => request(argv), (e: Error & { exitCode?: number }) => e.exitCode === 64 && message.test(e.message), argv.join(" "));
    refuses(["--since", "2026-02-30"], /--since "2026-02-30" is not a day of the calendar/);
    refuses(["--since", "11/01/2026"], /--since "11\/01\/2026" is not a day: write YYYY-MM-DD/);
    refuses(["--since", "2026-11-01", "--until", "2026-13-01"], /--until "2026-13-01" is not a day of the calendar/);
    refuses(["--since", "2026-11-15", "--until", "2026-11-01"], /--since 2026-11-15 is after --until 2026-11-01/);
    refuses(["--until", "2026-11-01"], /--until needs --since/);
    refuses(["--days", "7", "--since", "2026-11-01"], /--days and --since both set the first day/);
    refuses(["--days", "1.5"], /--days must be a whole number/);
    refuses(["--by", "week"], /--by takes day, model, agent, channel, type/);
    refuses(["--by", "day,model,day"], /--by names "day" twice/);
    refuses(["--agent", "Not An Id"], /--agent "Not An Id" is not an agent id/);
    assert.throws(() => request(["--days", "0"]), /--days must be a positive number/);
  });
  it("formats USD with 4 decimals under $1, else cents", () => {
    assert.equal(formatUsd(0), "$0.0000");
    assert.equal(formatUsd(0.00061), "$0.0006");
    assert.equal(formatUsd(0.99994), "$0.9999");
    assert.equal(formatUsd(1.5), "$1.50");
    assert.equal(formatUsd(123.456), "$123.46");
  });
});

describe("lurkbot usage on a real bus", () => {
  let nats: TestNats;
  let actor: ActorProcess;
  let env: Record<string, string>;
  let nc: NatsConnection;
  let bus: BusClient;

  async function run(sessionKey: string, agentId: string, runId: string, channel: string, u: Usage, model: string) {
    await bus.call("sessions", "begin", { sessionKey, agentId, sessionType: "main", runId, channel, historyLimit: 10, origin: { channel, conversation: "c", messageIds: [] }, records: [marker(runId, "started")] });
    await bus.call("sessions", "append", { sessionKey, records: [marker(runId, "done")], usage: { usage: u, model, provider: model.split("/")[0]! } });
  }

  before(async () => {
    nats = await TestNats.start();
    actor = await startActorProcess("sessions", nats);
    env = nats.env(nats.passwordEnv("cli"));
    nc = await nats.connect("agent-runner");
    bus = new BusClient(nc);
    // claude-opus-4: $15 in, $75 out per million: 100 000 in + 2 000 out = $1.65
    await run("agent:main:main", "main", "r1", "cli", usage(100_000, 2_000), "anthropic/claude-opus-4");
    // gpt-4o-mini: (2000 × 0.15 + 1000 × 0.6) / 1e6 = $0.0009
    await run("agent:ops:main", "ops", "r2", "telegram", usage(2_000, 1_000), "openai/gpt-4o-mini");
    await run("agent:ops:main", "ops", "r3", "telegram", usage(300, 200), "openai/local-llama");
  });
  after(async () => {
    await nc?.close();
    await actor?.stop();
    await nats?.stop();
  });

  it("prints a table with tokens, cost, a totals row, the unpriced tokens and the note about older usage", async () => {
    const r = await runCli(["usage", "--by", "model,agent"], env);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split("\n");
    assert.match(lines[0]!, new RegExp(`^usage \\d{4}-\\d\\d-\\d\\d to ${today()} \\(UTC days\\), by model, agent$`));
    assert.match(r.stdout, /^MODEL\s+AGENT\s+RUNS\s+INPUT\s+OUTPUT\s+CACHE READ\s+CACHE WRITE\s+TOTAL\s+COST \(USD\)$/m);
    assert.match(r.stdout, /^anthropic\/claude-opus-4\s+main\s+1\s+100000\s+2000\s+0\s+0\s+102000\s+\$1\.65$/m);
    assert.match(r.stdout, /^openai\/gpt-4o-mini\s+ops\s+1\s+2000\s+1000\s+0\s+0\s+3000\s+\$0\.0009$/m);
    assert.match(r.stdout, /^openai\/local-llama\s+ops\s+1\s+300\s+200\s+0\s+0\s+500\s+unpriced$/m);
    assert.match(r.stdout, /^TOTAL\s+3\s+102300\s+3200\s+0\s+0\s+105500\s+\$1\.65\*$/m);
    assert.match(r.stdout, /^\* 500 tokens without a known price are not in the cost \(openai\/local-llama\): set models\.entries\["<provider\/model>"\]\.cost in config\.json/m);
    assert.match(r.stdout, new RegExp(`^The usage ledger holds usage since ${today()}: it starts with this version of LurkBot, so earlier usage is not in it`, "m"));
    assert.match(r.stdout, /each session's own totals are in `lurkbot sessions list`\.$/m);
  });

  it("--days, --agent and the default grouping by day", async () => {
    const r = await runCli(["usage", "--days", "1", "--agent", "ops"], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^usage ${today()} to ${today()} \\(UTC days\\), agent ops, by day$`, "m"));
    assert.match(r.stdout, new RegExp(`^${today()}\\s+2\\s+2300\\s+1200\\s+0\\s+0\\s+3500\\s+\\$0\\.0009\\*$`, "m"));
    assert.doesNotMatch(r.stdout, /The usage ledger/, "the range does not reach before the ledger's first day");
    const none = await runCli(["usage", "--since", "2020-01-01", "--until", "2020-01-31"], env);
    assert.equal(none.code, 0, none.stderr);
    assert.match(none.stdout, /^no usage recorded in this range$/m);
  });

  it("--json prints the report as the sessions actor sends it", async () => {
    const r = await runCli(["usage", "--json", "--by", "channel,type", "--since", today()], env);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as UsageReport;
    assert.deepEqual(report, await new BusClient(nc).call("sessions", "usage_report", { from: today(), groupBy: ["channel", "sessionType"] }));
    assert.deepEqual(report.rows.map((x) => [x.channel, x.sessionType, x.runs]), [["cli", "main", 1], ["telegram", "main", 2]]);
    assert.equal(report.totals.unpricedTokens, 500);
  });

  it("bad dates and keys: exit 64 with what is wrong and the command's help", async () => {
    const r = await runCli(["usage", "--since", "2026-02-30"], env);
    assert.equal(r.code, 64);
    assert.match(r.stderr, /lurkbot usage: --since "2026-02-30" is not a day of the calendar\./);
    assert.match(r.stderr, /usage: lurkbot usage \[options\]/);
    const by = await runCli(["usage", "--by", "hour"], env);
    assert.equal(by.code, 64);
    assert.match(by.stderr, /--by takes day, model, agent, channel, type/);
    assert.equal(by.stdout, "");
  });

  it("is in the CLI's help", async () => {
    const help = await runCli(["help"], env);
    assert.match(help.stdout, /^ {2}usage\s+what the assistant spent: tokens, speech characters, audio seconds and USD per day, model, agent, channel, session type or purpose$/m);
    const own = await runCli(["usage", "--help"], env);
    assert.match(own.stdout, /--by KEYS\s+group by day, model, agent, channel, type, purpose/);
  });

  it("bus down: exit 2 and how to start it", async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    const r = await runCli(["usage"], { ...env, LURKBOT_NATS_URL: url });
    assert.equal(r.code, 2, r.stderr);
    assert.ok(r.stderr.includes(`cannot reach NATS at ${url} — is LurkBot running? Start it with \`npx lurkbot start\`.`), r.stderr);
    assert.equal(r.stdout, "");
  });
});

describe("lurkbot usage after a real run (every actor a process, fake OpenAI server)", () => {
  let system: TestSystem;
  before(async () => {
    system = await TestSystem.start({ env: { LURKBOT_MODEL: "openai/gpt-4o-mini" } });
  });
  after(async () => {
    await system?.stop();
  });

  it("the run's tokens are in the ledger under its model, channel and agent, priced at gpt-4o-mini's prices", async () => {
    const env = system.nats.env(system.nats.passwordEnv("cli"));
    const sent = await runCli(["send", "hello ledger", "--json"], env, { timeoutMs: 60_000 });
    assert.equal(sent.code, 0, sent.stderr);
    const { usage: runUsage, sessionKey = "agent:main:main" } = JSON.parse(sent.stdout) as { usage: Usage; sessionKey?: string };
    assert.ok(runUsage.total > 0, "the fake server reported usage");
    const r = await runCli(["usage", "--json", "--by", "agent,model,channel"], env);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as UsageReport;
    assert.deepEqual(report.rows.map((x) => [x.agentId, x.model, x.channel, x.runs]), [["main", "openai/gpt-4o-mini", "cli", 1]]);
    const row = report.rows[0]!;
    assert.deepEqual([row.input, row.output, row.total], [runUsage.input, runUsage.output, runUsage.total]);
    assert.ok(Math.abs(row.costUsd - (runUsage.input * 0.15 + runUsage.output * 0.6 + runUsage.cacheRead * 0.075) / 1e6) < 1e-12);
    const cli = await system.nats.connect("cli");
    try {
      const session = (await new BusClient(cli).call("sessions", "get", { sessionKey })).session!;
      assert.equal(session.usage.total, row.total, "the same tokens as the session's own counters");
    } finally {
      await cli.close();
    }
  });

  it("/usage in a chat (the terminal is the owner's channel) answers from the same ledger, by model", async () => {
    const client = await CliClient.connect(system.nats, "usage-chat");
    try {
      const week = await client.send("/usage 7");
      assert.equal(week.kind, "notice", week.text);
      const lines = week.text.split("\n");
      assert.match(lines[0]!, /^Usage of agent main, \d{4}-\d{2}-\d{2} to \d{4}-\d{2}-\d{2} \(UTC\): \$0\.\d{4}, \d+ tokens in 1 run\.$/);
      assert.match(lines[1]!, /^ {2}openai\/gpt-4o-mini: \$0\.\d{4}, \d+ tokens in 1 run$/);
      const today = await client.send("/usage");
      assert.match(today.text, /^Usage of agent main, today \(\d{4}-\d{2}-\d{2}, UTC\): /);
      const bad = await client.send("/usage week");
      assert.equal(bad.kind, "error");
    } finally {
      await client.close();
    }
  });

  it("/usage shows a model used only for housekeeping (embeddings) with its tokens and no runs", async () => {
    const cli = await system.nats.connect("cli");
    const client = await CliClient.connect(system.nats, "usage-chat-embed");
    try {
      const usage = { input: 500, output: 0, cacheRead: 0, cacheWrite: 0, total: 500 };
      await new BusClient(cli).call("sessions", "usage", { agentId: "main", usage, model: "text-embedding-3-small", provider: "openai", purpose: "embedding", idempotencyKey: "usage-cli-embedding-1" });
      const lines = (await client.send("/usage")).text.split("\n");
      assert.match(lines[0]!, / tokens in 1 run\.$/, "the total still counts the one run");
      const embedding = lines.find((l) => l.includes("text-embedding-3-small"));
      assert.match(embedding ?? "", /^ {2}openai\/text-embedding-3-small: \$0\.\d{4}, 500 tokens$/);
    } finally {
      await client.close();
      await cli.close();
    }
  });

  it("/usage shows speech in characters and transcription in audio time, apart from tokens", async () => {
    const cli = await system.nats.connect("cli");
    const client = await CliClient.connect(system.nats, "usage-chat-media");
    try {
      const none = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };
      const bus = new BusClient(cli);
      await bus.call("sessions", "usage", { agentId: "main", usage: none, model: "tts-1", provider: "openai", purpose: "speech", units: { chars: 1_000 }, idempotencyKey: "usage-cli-speech-1" });
      await bus.call("sessions", "usage", { agentId: "main", usage: none, model: "whisper-1", provider: "openai", purpose: "transcription", units: { audioSeconds: 90 }, idempotencyKey: "usage-cli-heard-1" });
      await bus.call("sessions", "usage", { agentId: "main", usage: none, model: "whisper-1", provider: "openai", purpose: "transcription", units: { durationUnknown: true }, idempotencyKey: "usage-cli-heard-2" });
      const lines = (await client.send("/usage")).text.split("\n");
      assert.match(lines[0]!, /, \d+ tokens, 1000 characters of speech, 1 min 30 s of audio transcribed \(\+1 of unknown duration\) in 1 run\.$/);
      assert.ok(lines.includes("  openai/tts-1: $0.0150, 1000 characters of speech"), lines.join("\n"));
      assert.ok(lines.includes("  openai/whisper-1: $0.0090, 1 min 30 s of audio transcribed (+1 of unknown duration)"), lines.join("\n"));
    } finally {
      await client.close();
      await cli.close();
    }
  });
});
