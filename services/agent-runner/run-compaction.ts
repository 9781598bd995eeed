/**
 * Compaction inside a run (compaction.ts does the planning and summarizing):
 *  - `beforeRun`: the prompt estimate passes compactionLimit() -> compact first ("threshold");
 *    a failed summary is logged and the run goes on with the full context;
 *  - `midRun`: between two model calls of a run, the last call's billed prompt plus the
 *    messages added since (tool results) passes the limit -> compact before the next call;
 *  - `onOverflow`: the provider refused the prompt as too long -> compact; the loop retries the
 *    turn once (overflow-retry.ts);
 *  - `command`: `/compact` (run option command "compact"): compact now, keeping only
 *    `keepRecent` messages; a redelivered run answers from the summary it already stored.
 * Each compaction appends one `compaction_summary` record (id `<runId>:compact:<n>`, meta
 * firstKeptId, see compaction-view.ts) and publishes a `compaction` run event.
 */
import { addUsage, emptyUsage, type LlmMessage, type ToolDefinition, type TranscriptRecord, type Usage } from "../../shared/contract/index.js";
import type { CompactionConfig } from "../../shared/runtime/config-compaction.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { compactionLimit, planCompaction, summarizeInStages } from "./compaction.js";
import { messageRecordIds, summaryNote } from "./compaction-view.js";
import type { RunEvents } from "./events.js";
import type { LoopResult, MidRunCompaction } from "./loop.js";
import type { Complete } from "./model-complete.js";
import { estimateMessagesTokens, estimatePromptTokens, estimateTextTokens, estimateToolsTokens } from "./tokens.js";

export type CompactionReason = "threshold" | "overflow" | "command";

export interface RunCompactorDeps {
  config: CompactionConfig;
  contextWindow: number;
  complete: Complete;
  runId: string;
  append(records: TranscriptRecord[]): Promise<void>;
  events: RunEvents;
  log: Logger;
  /** summaries this run already stored (a redelivered run) */
  previous?: number;
}

export interface CompactionDone {
  messages: LlmMessage[];
  summarized: number;
  tokensBefore: number;
  tokensAfter: number;
}

export class RunCompactor {
  private count: number;
  /** usage of the summary calls, added to the run's */
  usage: Usage = emptyUsage();
  /** the system prompt and tool definitions, estimated once by beforeRun (a fallback when a provider bills no usage) */
  private fixedTokens = 0;

  constructor(private readonly deps: RunCompactorDeps) {
    // a resumed run numbers its summaries after the ones an earlier attempt stored
    this.count = deps.previous ?? 0;
  }

  /** Compacts `messages` and stores the summary; undefined when there is nothing to summarize. Throws when the summary fails. */
  async compact(messages: LlmMessage[], reason: CompactionReason, opts: { forced?: boolean; instructions?: string } = {}): Promise<CompactionDone | undefined> {
    const { deps } = this;
    const tokensBefore = estimateMessagesTokens(messages);
    // the estimate was wrong when the provider refused the prompt: keep at most half of it
    const maxKeepTokens = reason === "overflow" ? Math.floor(tokensBefore / 2) : undefined;
    const plan = planCompaction(messages, {
      contextWindow: deps.contextWindow, keepRecent: deps.config.keepRecent, forced: opts.forced ?? false, ...(maxKeepTokens !== undefined ? { maxKeepTokens } : {}),
    });
    if (!plan) return undefined;
    const summary = await summarizeInStages(plan.older, deps.complete, { contextWindow: deps.contextWindow, ...(opts.instructions ? { instructions: opts.instructions } : {}) });
    this.usage = addUsage(this.usage, summary.usage);
    const id = `${deps.runId}:compact:${this.count++}`;
    const firstKeptId = plan.kept.map((m) => messageRecordIds.get(m)).find((x) => x !== undefined);
    const lastSummarizedId = plan.older.map((m) => messageRecordIds.get(m)).findLast((x) => x !== undefined);
    const note = summaryNote(summary.text);
    const after = [note, ...plan.kept];
    const tokensAfter = estimateMessagesTokens(after);
    const meta = { reason, messagesBefore: messages.length, messagesAfter: after.length, summarized: plan.older.length, tokensBefore, tokensAfter, parts: summary.parts, ...(firstKeptId ? { firstKeptId } : {}), ...(lastSummarizedId ? { lastSummarizedId } : {}) };
    await deps.append([{ id, ts: Date.now(), runId: deps.runId, kind: "compaction_summary", text: summary.text, meta }]);
    deps.events.emit({ kind: "compaction", messagesBefore: messages.length, messagesAfter: after.length, reason });
    deps.log.info({ reason, summarized: plan.older.length, kept: plan.kept.length, tokensBefore, tokensAfter, calls: summary.calls }, "session compacted");
    return { messages: after, summarized: plan.older.length, tokensBefore, tokensAfter };
  }

  /** The context to start the loop with: compacted when the prompt estimate passes the limit. */
  async beforeRun(system: string, tools: ToolDefinition[], context: LlmMessage[], rest: LlmMessage[]): Promise<LlmMessage[]> {
    if (!this.deps.config.enabled) return context;
    this.fixedTokens = estimateTextTokens(system) + estimateToolsTokens(tools);
    const tokens = estimatePromptTokens(system, tools, [...context, ...rest]);
    const limit = compactionLimit(this.deps.contextWindow, this.deps.config);
    if (tokens <= limit) return context;
    try {
      return (await this.compact(context, "threshold"))?.messages ?? context;
    } catch (err) {
      this.deps.log.warn({ err, tokens, limit }, "compaction failed; the run goes on with the full context");
      return context;
    }
  }

  /** The loop's check between turns; a failed summary is logged and the run goes on with the full context. */
  readonly midRun: MidRunCompaction = {
    overLimit: (messages, promptTokens, sentCount) => {
      if (!this.deps.config.enabled) return false;
      const tokens = promptTokens !== undefined
        ? promptTokens + estimateMessagesTokens(messages.slice(sentCount))
        : this.fixedTokens + estimateMessagesTokens(messages);
      return tokens > compactionLimit(this.deps.contextWindow, this.deps.config);
    },
    compact: async (messages) => {
      try {
        return (await this.compact(messages, "threshold"))?.messages;
      } catch (err) {
        this.deps.log.warn({ err }, "compaction during the run failed; the run goes on with the full context");
        return undefined;
      }
    },
  };

  /** The loop's hook after a context-overflow error: the compacted context, or undefined (then the error stands). */
  readonly onOverflow = async (messages: LlmMessage[]): Promise<LlmMessage[] | undefined> => {
    if (!this.deps.config.enabled) return undefined;
    try {
      return (await this.compact(messages, "overflow"))?.messages;
    } catch (err) {
      this.deps.log.warn({ err }, "compaction after a context overflow failed");
      return undefined;
    }
  };

  /** `/compact`: the reply text. `instructions` is what the user wrote after the command. */
  async command(context: LlmMessage[], runRecords: readonly TranscriptRecord[], instructions?: string): Promise<string> {
    const stored = runRecords.find((r) => r.kind === "compaction_summary");
    if (stored) {
      const m = stored.meta ?? {};
      return compactedText(Number(m.summarized ?? 0), Number(m.tokensBefore ?? 0), Number(m.tokensAfter ?? 0));
    }
    const done = await this.compact(context, "command", { forced: true, ...(instructions ? { instructions } : {}) });
    if (!done) return `Nothing to compact yet: the session has ${context.length} message${context.length === 1 ? "" : "s"} (≈${formatTokens(estimateMessagesTokens(context))} tokens).`;
    return compactedText(done.summarized, done.tokensBefore, done.tokensAfter);
  }

  /** `/compact` as a loop result (no model turn; the usage is in `this.usage`). */
  async commandResult(context: LlmMessage[], runRecords: readonly TranscriptRecord[], inputs: readonly { text: string }[]): Promise<LoopResult> {
    const text = await this.command(context, runRecords, compactInstructions(inputs));
    return { text, turns: 0, usage: emptyUsage(), stoppedAtLimit: false };
  }
}

export function formatTokens(n: number): string {
  if (n < 1000) return String(n);
  const k = n / 1000;
  return `${k < 10 ? k.toFixed(1).replace(/\.0$/, "") : Math.round(k)}k`;
}

const compactedText = (summarized: number, before: number, after: number) =>
  `Compacted ${summarized} message${summarized === 1 ? "" : "s"} into a summary (≈${formatTokens(before)} → ${formatTokens(after)} tokens).`;

/** What follows `/compact` in the run's inputs (instructions for the summary), if anything. */
export function compactInstructions(inputs: readonly { text: string }[]): string | undefined {
  const text = inputs.map((i) => i.text).join("\n").replace(/^\s*\/compact\b/i, "").trim();
  return text ? text.slice(0, 2_000) : undefined;
}
