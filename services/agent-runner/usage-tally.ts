/**
 * A run's usage split by model and purpose, for its end's `usage.parts` (the sessions actor's
 * ledger books each part at its own model's price): the turns' assistant messages (each names the
 * model that made it, so a failover gives one part per model), the compaction summaries and a
 * long reply's summary for speech (each completion names its model). `tallied` wraps a Complete
 * so its completions are added under a purpose.
 */
import { addUsage, emptyUsage, usageTokens, type AssistantMessage, type Usage, type UsagePart, type UsagePurpose } from "../../shared/contract/index.js";
import type { Complete } from "./model-complete.js";

export class UsageTally {
  private readonly parts = new Map<string, UsagePart>();

  /** Adds a model's usage for a purpose (nothing for an empty usage). */
  add(provider: string, model: string, purpose: UsagePurpose, usage: Usage | undefined): void {
    if (!usage || usageTokens(usage) === 0) return;
    const id = `${purpose}\u0000${provider}\u0000${model}`;
    const known = this.parts.get(id);
    this.parts.set(id, known ? { ...known, usage: addUsage(known.usage, usage) } : { model, provider, purpose, usage });
  }

  /** A turn's assistant message (its own model and provider; `provider` when it names none). */
  addMessage(message: AssistantMessage, provider = ""): void {
    this.add(message.provider || provider, message.model, "turn", message.usage);
  }

  addParts(parts: readonly UsagePart[]): void {
    for (const p of parts) this.add(p.provider, p.model, p.purpose, p.usage);
  }

  /** The parts, in the order they first appeared. */
  list(): UsagePart[] {
    return [...this.parts.values()];
  }

  /** The sum of every part. */
  total(): Usage {
    return this.list().reduce((sum, p) => addUsage(sum, p.usage), emptyUsage());
  }
}

/** `complete` with each completion's usage added to `tally` under `purpose` (its model; "-" when it names none). */
export function tallied(complete: Complete, tally: UsageTally, purpose: UsagePurpose): Complete {
  return async (system, prompt) => {
    const done = await complete(system, prompt);
    tally.add(done.provider ?? "-", done.model ?? "-", purpose, done.usage);
    return done;
  };
}
