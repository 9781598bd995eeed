/**
 * The wizard's questions: select, multiselect, text, secret, confirm. Two answerers behind one
 * interface:
 *  - LinePrompter reads lines from a stream with node:readline: a terminal (a secret is read
 *    without echo) or a pipe (tests, scripts: lines typed ahead are queued, none is lost). Each
 *    question shows its default in [brackets]; Enter takes it. EOF ends the questions (the next
 *    one is WizardCancelled; lines typed ahead are still answered); Ctrl-C interrupts: the
 *    question waiting and every later one reject, `cancelled` is set and `signal` aborts, so a
 *    live check under way stops and the wizard stops before its next step (nothing written).
 *  - PresetPrompter answers from command-line flags (by question id) and asks its fallback for
 *    the rest; without a fallback (--non-interactive) a question without a flag takes its
 *    default, or is a UsageError naming the flag to add.
 */
import { createInterface, type Interface } from "node:readline";
import { Writable } from "node:stream";
import { UsageError } from "../errors.js";

export class WizardCancelled extends Error {
  constructor(readonly reason: string) {
    super(`onboarding cancelled (${reason})`);
    this.name = "WizardCancelled";
  }
}

export interface Choice<T extends string> {
  value: T;
  label: string;
  hint?: string;
}

interface Question {
  /** the step's answer id (PresetPrompter maps it to a flag) */
  id: string;
  message: string;
}
export interface SelectQuestion<T extends string> extends Question { choices: Choice<T>[]; default?: T }
export interface MultiQuestion<T extends string> extends Question { choices: Choice<T>[]; default?: T[] }
export interface TextQuestion extends Question {
  default?: string;
  /** an empty answer is allowed (without a default) */
  optional?: boolean;
  /** the problem with an answer (asked again), or undefined when it is fine */
  validate?: (value: string) => string | undefined;
}
export interface ConfirmQuestion extends Question { default?: boolean }

export interface Prompter {
  /** whether a person answers (a failed check may then be retried) */
  readonly interactive: boolean;
  /** set once the wizard was interrupted (Ctrl-C): no further step may run, nothing may be written */
  readonly cancelled: WizardCancelled | undefined;
  /** aborts when the wizard is interrupted (with `cancelled` as its reason): for live checks */
  readonly signal: AbortSignal;
  /** Interrupts the wizard (Ctrl-C): sets `cancelled`, aborts `signal`, rejects every question. */
  interrupt(reason: string): void;
  say(line: string): void;
  select<T extends string>(q: SelectQuestion<T>): Promise<T>;
  multiselect<T extends string>(q: MultiQuestion<T>): Promise<T[]>;
  text(q: TextQuestion): Promise<string>;
  /** like text, never echoed on a terminal and never printed back */
  secret(q: TextQuestion): Promise<string>;
  confirm(q: ConfirmQuestion): Promise<boolean>;
  close(): void;
}

const YES = /^(y|yes)$/i;
const NO = /^(n|no)$/i;

/** The choice an answer names: its number (1-based) or its value. */
function pick<T extends string>(choices: Choice<T>[], answer: string): T | undefined {
  const n = Number(answer);
  if (/^\d+$/.test(answer) && n >= 1 && n <= choices.length) return choices[n - 1]!.value;
  return choices.find((c) => c.value.toLowerCase() === answer.toLowerCase())?.value;
}

function choiceLines<T extends string>(choices: Choice<T>[], marked: (v: T) => boolean): string[] {
  return choices.map((c, i) => `  ${marked(c.value) ? "*" : " "}${i + 1}) ${c.label}${c.hint ? ` — ${c.hint}` : ""}`);
}

/** A prompter's interruption (Ctrl-C): the signal live checks take, and its reason once fired. */
class Interruption {
  private readonly controller = new AbortController();

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get cancelled(): WizardCancelled | undefined {
    return this.controller.signal.aborted ? (this.controller.signal.reason as WizardCancelled) : undefined;
  }

  /** Fires with `cancelled` as the signal's reason (listeners run now); false when it had fired already. */
  fire(cancelled: WizardCancelled): boolean {
    if (this.controller.signal.aborted) return false;
    this.controller.abort(cancelled);
    return true;
  }
}

export class LinePrompter implements Prompter {
  readonly interactive = true;
  private readonly rl: Interface;
  private readonly lines: string[] = [];
  private waiting: { resolve: (line: string) => void; reject: (err: Error) => void } | undefined;
  private ended: WizardCancelled | undefined;
  private readonly interruption = new Interruption();
  private muted = false;
  private readonly tty: boolean;

  constructor(input: NodeJS.ReadableStream & { isTTY?: boolean }, private readonly output: NodeJS.WritableStream & { isTTY?: boolean }) {
    this.tty = input.isTTY === true && output.isTTY === true;
    // readline echoes what is typed through this sink; a secret's echo is dropped
    const sink = new Writable({
      write: (chunk: Buffer, _enc, done) => {
        if (!this.muted) output.write(chunk);
        done();
      },
    });
    this.rl = createInterface({ input, output: sink, terminal: this.tty });
    this.rl.on("line", (line) => {
      if (this.waiting) {
        const w = this.waiting;
        this.waiting = undefined;
        w.resolve(line);
      } else {
        this.lines.push(line);
      }
    });
    this.rl.on("close", () => this.cancel("end of input"));
    this.rl.on("SIGINT", () => this.interrupt("Ctrl-C"));
  }

  get cancelled(): WizardCancelled | undefined {
    return this.interruption.cancelled;
  }

  get signal(): AbortSignal {
    return this.interruption.signal;
  }

  interrupt(reason: string): void {
    if (this.cancelled) return;
    const cancelled = new WizardCancelled(reason);
    this.ended = cancelled;
    // typed-ahead lines are not answers after an interrupt
    this.lines.length = 0;
    this.interruption.fire(cancelled);
    this.cancel(reason);
  }

  /** Ends the questions: the one waiting (and every later one) rejects with WizardCancelled. */
  cancel(reason: string): void {
    this.ended ??= new WizardCancelled(reason);
    const w = this.waiting;
    this.waiting = undefined;
    w?.reject(this.ended);
    this.rl.close();
  }

  close(): void {
    this.ended ??= new WizardCancelled("closed");
    this.rl.close();
  }

  say(line: string): void {
    this.output.write(line + "\n");
  }

  private nextLine(): Promise<string> {
    if (this.cancelled) return Promise.reject(this.cancelled);
    const queued = this.lines.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    if (this.ended) return Promise.reject(this.ended);
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
  }

  /** Shows the prompt (on its own line after `lines`) and reads one answer, trimmed. */
  private async ask(prompt: string, secret = false): Promise<string> {
    // lines typed ahead are answered even after the input ended
    if (this.ended && this.lines.length === 0) throw this.ended;
    if (this.ended) this.output.write(prompt);
    else {
      this.rl.setPrompt(prompt);
      this.rl.prompt();
    }
    if (!this.tty) this.output.write("\n");
    if (secret && this.tty) this.muted = true;
    try {
      return (await this.nextLine()).trim();
    } finally {
      if (this.muted) {
        this.muted = false;
        this.output.write("\n");
      }
    }
  }

  async select<T extends string>(q: SelectQuestion<T>): Promise<T> {
    this.say(q.message);
    for (const line of choiceLines(q.choices, (v) => v === q.default)) this.say(line);
    const def = q.default !== undefined ? q.choices.findIndex((c) => c.value === q.default) + 1 : 0;
    for (;;) {
      const answer = await this.ask(`choose 1-${q.choices.length}${def ? ` (press Enter for ${def})` : ""}: `);
      if (answer === "" && q.default !== undefined) return q.default;
      const value = pick(q.choices, answer);
      if (value !== undefined) return value;
      this.say(`  "${answer}" is not one of the choices: type a number from 1 to ${q.choices.length}.`);
    }
  }

  async multiselect<T extends string>(q: MultiQuestion<T>): Promise<T[]> {
    const def = q.default ?? [];
    this.say(q.message);
    for (const line of choiceLines(q.choices, (v) => def.includes(v))) this.say(line);
    const defText = def.length ? def.map((v) => q.choices.findIndex((c) => c.value === v) + 1).join(",") : "none";
    for (;;) {
      const answer = await this.ask(`numbers separated by commas, or "none" (press Enter for ${defText}): `);
      if (answer === "") return [...def];
      if (/^(none|-|0)$/i.test(answer)) return [];
      const parts = answer.split(/[\s,]+/).filter(Boolean);
      const values = parts.map((p) => pick(q.choices, p));
      const bad = parts.filter((_, i) => values[i] === undefined);
      if (bad.length === 0) return [...new Set(values as T[])];
      this.say(`  ${bad.map((b) => `"${b}"`).join(", ")} ${bad.length === 1 ? "is" : "are"} not among the choices: type numbers from 1 to ${q.choices.length}, e.g. 1,3.`);
    }
  }

  text(q: TextQuestion): Promise<string> {
    return this.line(q, false);
  }

  secret(q: TextQuestion): Promise<string> {
    return this.line(q, true);
  }

  private async line(q: TextQuestion, secret: boolean): Promise<string> {
    for (;;) {
      const hint = q.default !== undefined && q.default !== "" ? ` [${q.default}] (press Enter for the default)` : q.optional ? " (press Enter to leave it empty)" : "";
      const answer = await this.ask(`${q.message}${hint}${secret && this.tty ? " (not shown)" : ""}: `, secret);
      const value = answer === "" && q.default !== undefined ? q.default : answer;
      if (value === "" && !q.optional) {
        this.say("  an answer is needed here (Ctrl-C cancels).");
        continue;
      }
      const problem = value === "" ? undefined : q.validate?.(value);
      if (!problem) return value;
      this.say(`  ${problem}`);
    }
  }

  async confirm(q: ConfirmQuestion): Promise<boolean> {
    const hint = q.default === undefined ? "[y/n]" : q.default ? "[Y/n] (press Enter for yes)" : "[y/N] (press Enter for no)";
    for (;;) {
      const answer = await this.ask(`${q.message} ${hint}: `);
      if (answer === "" && q.default !== undefined) return q.default;
      if (YES.test(answer)) return true;
      if (NO.test(answer)) return false;
      this.say("  answer y or n.");
    }
  }
}

/** A flag's answer: a string (text, select), a list (multiselect), a boolean (confirm). */
export type Preset = string | string[] | boolean;

export class PresetPrompter implements Prompter {
  readonly interactive: boolean;
  private readonly interruption = new Interruption();

  /**
   * `presets`: answers by question id (each used once: a question asked again after a failed
   * check goes to the fallback); `flags`: the flag that answers each id, for error messages;
   * `required`: ids that take no default without a person (e.g. the security notice's --yes).
   */
  constructor(
    private readonly presets: Map<string, Preset>,
    private readonly flags: Record<string, string>,
    private readonly fallback: Prompter | undefined,
    private readonly sayLine: (line: string) => void,
    private readonly required: ReadonlySet<string> = new Set(),
  ) {
    this.interactive = fallback !== undefined;
    // a terminal's Ctrl-C reaches the fallback's readline
    if (fallback) {
      if (fallback.cancelled) this.interrupt(fallback.cancelled.reason);
      else fallback.signal.addEventListener("abort", () => this.interrupt(fallback.cancelled?.reason ?? "Ctrl-C"), { once: true });
    }
  }

  get cancelled(): WizardCancelled | undefined {
    return this.interruption.cancelled;
  }

  get signal(): AbortSignal {
    return this.interruption.signal;
  }

  interrupt(reason: string): void {
    if (!this.interruption.fire(new WizardCancelled(reason))) return;
    this.fallback?.interrupt(reason);
  }

  say(line: string): void {
    this.sayLine(line);
  }

  close(): void {
    this.fallback?.close();
  }

  private take(id: string): Preset | undefined {
    // a flag's answer does not carry the wizard past an interrupt
    if (this.cancelled) throw this.cancelled;
    const value = this.presets.get(id);
    this.presets.delete(id);
    return value;
  }

  private flag(id: string): string {
    return this.flags[id] ?? id;
  }

  private missing(q: Question): never {
    throw new UsageError(`${q.message.replace(/[:?]$/, "")}: add ${this.flag(q.id)} (this is --non-interactive, so no question is asked).`, "onboard");
  }

  /** the default when no one is asked, or a UsageError naming the flag */
  private unanswered<T>(q: Question & { default?: T }, ask: (p: Prompter) => Promise<T>): Promise<T> {
    if (this.fallback) return ask(this.fallback);
    if (q.default === undefined || this.required.has(q.id)) this.missing(q);
    return Promise.resolve(q.default);
  }

  async select<T extends string>(q: SelectQuestion<T>): Promise<T> {
    const preset = this.take(q.id);
    if (preset === undefined) return this.unanswered(q, (p) => p.select(q));
    const value = typeof preset === "string" ? pick(q.choices, preset) : undefined;
    if (value === undefined) throw new UsageError(`${this.flag(q.id)} must be one of ${q.choices.map((c) => c.value).join(", ")}, not "${String(preset)}".`, "onboard");
    this.say(`${q.message} ${value} (${this.flag(q.id)})`);
    return value;
  }

  async multiselect<T extends string>(q: MultiQuestion<T>): Promise<T[]> {
    const preset = this.take(q.id);
    if (preset === undefined) return this.unanswered(q, (p) => p.multiselect(q));
    const parts = Array.isArray(preset) ? preset : [];
    const values = parts.map((p) => pick(q.choices, p));
    const bad = parts.filter((_, i) => values[i] === undefined);
    if (bad.length) throw new UsageError(`${this.flag(q.id)}: ${bad.map((b) => `"${b}"`).join(", ")} ${bad.length === 1 ? "is" : "are"} not one of ${q.choices.map((c) => c.value).join(", ")}.`, "onboard");
    this.say(`${q.message} ${values.length ? values.join(", ") : "none"} (${this.flag(q.id)})`);
    return [...new Set(values as T[])];
  }

  async text(q: TextQuestion): Promise<string> {
    return this.textLike(q, false);
  }

  async secret(q: TextQuestion): Promise<string> {
    return this.textLike(q, true);
  }

  private async textLike(q: TextQuestion, secret: boolean): Promise<string> {
    const preset = this.take(q.id);
    if (preset === undefined) {
      if (this.fallback) return secret ? this.fallback.secret(q) : this.fallback.text(q);
      if (q.default === undefined && q.optional) return "";
      return this.unanswered(q, () => Promise.resolve(""));
    }
    const value = String(preset);
    const problem = value === "" ? (q.optional ? undefined : "must not be empty") : q.validate?.(value);
    if (problem) throw new UsageError(`${this.flag(q.id)}: ${problem}`, "onboard");
    this.say(`${q.message}: ${secret ? "(given)" : value} (${this.flag(q.id)})`);
    return value;
  }

  async confirm(q: ConfirmQuestion): Promise<boolean> {
    const preset = this.take(q.id);
    if (preset === undefined) return this.unanswered(q, (p) => p.confirm(q));
    this.say(`${q.message} ${preset ? "yes" : "no"} (${this.flag(q.id)})`);
    return preset === true;
  }
}
