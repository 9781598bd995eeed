/**
 * Chat commands and inline directives (pure parse table, seeds 001 §5.3): commands are the
 * whole message, directives stand anywhere at a word start, a directive-only message changes
 * the session, bad values are errors, and ordinary text (paths, URLs) is left alone.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseDuration, parseText, type Parsed } from "../services/router/commands.js";

const cases: Array<[string, Parsed]> = [
  // commands
  ["/new", { kind: "command", command: { name: "new", rest: "" } }],
  ["/reset let's start over", { kind: "command", command: { name: "reset", rest: "let's start over" } }],
  ["  /stop  ", { kind: "command", command: { name: "stop" } }],
  ["/abort", { kind: "command", command: { name: "stop" } }],
  ["/status@LurkBot", { kind: "command", command: { name: "status" } }],
  ["/STATUS", { kind: "command", command: { name: "status" } }],
  ["/help", { kind: "command", command: { name: "help" } }],
  ["/compact keep the decisions", { kind: "command", command: { name: "compact", instructions: "keep the decisions" } }],
  ["/approve ap-123", { kind: "command", command: { name: "approve", id: "ap-123" } }],
  ["/deny ap-9", { kind: "command", command: { name: "deny", id: "ap-9" } }],
  ["/subagents", { kind: "command", command: { name: "subagents", action: "list" } }],
  ["/subagents stop all", { kind: "command", command: { name: "subagents", action: "stop", target: "all" } }],
  ["/usage", { kind: "command", command: { name: "usage", days: 1 } }],
  ["/usage 30", { kind: "command", command: { name: "usage", days: 30 } }],
  // directives alone: session settings
  ["/think:high", { kind: "command", command: { name: "settings", directives: { thinking: "high" }, show: ["thinking"] } }],
  ["/t 1", { kind: "command", command: { name: "settings", directives: { thinking: "low" }, show: ["thinking"] } }],
  ["/think", { kind: "command", command: { name: "settings", directives: { thinking: "medium" }, show: ["thinking"] } }],
  ["/verbose", { kind: "command", command: { name: "settings", directives: { verbose: "off" }, show: ["verbose"] } }],
  ["/v:h", { kind: "command", command: { name: "settings", directives: { verbose: "high" }, show: ["verbose"] } }],
  ["/verbose on", { kind: "command", command: { name: "settings", directives: { verbose: "low" }, show: ["verbose"] } }],
  ["/v full", { kind: "command", command: { name: "settings", directives: { verbose: "high" }, show: ["verbose"] } }],
  ["/reasoning", { kind: "command", command: { name: "settings", directives: { reasoning: "on" }, show: ["reasoning"] } }],
  ["/reasoning:stream", { kind: "command", command: { name: "settings", directives: { reasoning: "stream" }, show: ["reasoning"] } }],
  ["/model", { kind: "command", command: { name: "settings", directives: {}, show: ["model"] } }],
  ["/model openai/gpt-4o-mini", { kind: "command", command: { name: "settings", directives: { model: "openai/gpt-4o-mini" }, show: ["model"] } }],
  ["/model sonnet", { kind: "command", command: { name: "settings", directives: { model: "sonnet" }, show: ["model"] } }],
  ["/model default", { kind: "command", command: { name: "settings", directives: { model: null }, show: ["model"] } }],
  ["/queue", { kind: "command", command: { name: "settings", directives: {}, show: ["queue"] } }],
  ["/queue collect debounce:2s cap:5 drop:summarize", { kind: "command", command: { name: "settings", directives: { queue: { mode: "collect", debounceMs: 2000, cap: 5, drop: "summarize" } }, show: ["queue"] } }],
  ["/queue reset", { kind: "command", command: { name: "settings", directives: { queue: { reset: true } }, show: ["queue"] } }],
  ["/think:low /v:high", { kind: "command", command: { name: "settings", directives: { thinking: "low", verbose: "high" }, show: ["thinking", "verbose"] } }],
  ["/tts on", { kind: "command", command: { name: "settings", directives: { tts: "always" }, show: ["tts"] } }],
  ["/tts:inbound", { kind: "command", command: { name: "settings", directives: { tts: "inbound" }, show: ["tts"] } }],
  ["/tts tagged", { kind: "command", command: { name: "settings", directives: { tts: "tagged" }, show: ["tts"] } }],
  ["/tts off", { kind: "command", command: { name: "settings", directives: { tts: "off" }, show: ["tts"] } }],
  ["/tts", { kind: "command", command: { name: "settings", directives: {}, show: ["tts"] } }],
  ["/tts status", { kind: "command", command: { name: "settings", directives: {}, show: ["tts"] } }],
  // inline directives: this run only
  ["/think:high explain monads", { kind: "message", text: "explain monads", directives: { thinking: "high" } }],
  ["/t:medium why?", { kind: "message", text: "why?", directives: { thinking: "medium" } }],
  ["/think about this", { kind: "message", text: "about this", directives: { thinking: "medium" } }],
  ["please /t h and be brief", { kind: "message", text: "please and be brief", directives: { thinking: "high" } }],
  ["/t:high low-level question", { kind: "message", text: "low-level question", directives: { thinking: "high" } }],
  ["/model openai/gpt-4o summarize", { kind: "message", text: "summarize", directives: { model: "openai/gpt-4o" } }],
  ["/queue:interrupt stop that, do this", { kind: "message", text: "stop that, do this", directives: { queue: { mode: "interrupt" } } }],
  ["/reasoning:on /v:low what is 2+2", { kind: "message", text: "what is 2+2", directives: { verbose: "low", reasoning: "on" } }],
  ["/tts:always read me the news", { kind: "message", text: "read me the news", directives: { tts: "always" } }],
  // plain text stays as it is
  ["look at /tmp/x and /var/think", { kind: "message", text: "look at /tmp/x and /var/think", directives: {} }],
  ["see https://x.org/t/123", { kind: "message", text: "see https://x.org/t/123", directives: {} }],
  ["a/think:high", { kind: "message", text: "a/think:high", directives: {} }],
  ["/unknown command", { kind: "message", text: "/unknown command", directives: {} }],
  ["hello  world", { kind: "message", text: "hello  world", directives: {} }],
  // errors
  ["/think:banana", { kind: "error", message: "/think:banana: unknown level; use off, low, medium or high" }],
  ["/tts:loud", { kind: "error", message: "/tts:loud: unknown level; use off, on (always), inbound or tagged" }],
  ["/approve", { kind: "error", message: "/approve needs one approval ID, e.g. /approve ap-123 (the ID is in the approval request)" }],
  ["/subagents kill", { kind: "error", message: "use /subagents list, or /subagents stop KEY|RUNID|all" }],
  ["/usage 0", { kind: "error", message: "use /usage for today, or /usage N for the last N days (1-400)" }],
  ["/usage week", { kind: "error", message: "use /usage for today, or /usage N for the last N days (1-400)" }],
  ["/usage 401", { kind: "error", message: "use /usage for today, or /usage N for the last N days (1-400)" }],
  ["/queue drop:maybe", { kind: "error", message: "/queue drop:maybe: use old, new or summarize" }],
  ["/queue cap:0", { kind: "error", message: "/queue cap:0: give a whole number from 1 to 1000" }],
  ["/model:bad!ref", { kind: "error", message: "/model bad!ref: not a model reference; write provider/model, e.g. /model openai/gpt-4o-mini" }],
  ["/model what is this", { kind: "message", text: "what is this", directives: {} }],
];

describe("commands and directives", () => {
  for (const [text, expected] of cases) {
    it(JSON.stringify(text), () => assert.deepEqual(parseText(text), expected));
  }
  it("durations", () => {
    assert.equal(parseDuration("500ms"), 500);
    assert.equal(parseDuration("2s"), 2000);
    assert.equal(parseDuration("1m"), 60_000);
    assert.equal(parseDuration("250"), 250);
    assert.equal(parseDuration("soon"), undefined);
  });
});
