/**
 * A run's mailbox: user inputs that arrive while the run is active (`lurk.run.ctl.<runId>`).
 * Steering inputs are taken after the tool call in progress (the remaining calls of the turn
 * are skipped) and follow-ups when the loop would otherwise end; both become the next turn's
 * user message. Each input keeps the id of the control message that brought it, which names
 * its transcript record, so taking it twice (a resumed run) stores it once.
 * The mailbox closes at the loop's last look (`takeAllOrClose`) and on every other exit of the
 * loop (`close`: an error, an abort, its iteration limit, a hook's stop), before the run finishes;
 * a command run's (`/compact`: no loop) is closed from the start. A closed mailbox refuses inputs,
 * so the sender queues them as runs of their own. Inputs accepted and never taken are dropped
 * here: the router sees at the run's end that the run did not store them and runs them itself.
 */
import type { RunInput } from "../../shared/contract/index.js";

export interface MailboxInput {
  /** the control message's envelope id */
  id: string;
  action: "steer" | "followup";
  input: RunInput;
}

export class RunMailbox {
  private steering: MailboxInput[] = [];
  private followups: MailboxInput[] = [];
  private readonly seen = new Set<string>();
  private closed: boolean;

  /** `closed`: a run that takes no inputs (a command run) */
  constructor(opts: { closed?: boolean } = {}) {
    this.closed = opts.closed ?? false;
  }

  /** Queues an input (a repeated control id is taken once); false once the run stopped taking inputs. */
  push(item: MailboxInput): boolean {
    if (this.closed) return false;
    if (this.seen.has(item.id)) return true;
    this.seen.add(item.id);
    (item.action === "steer" ? this.steering : this.followups).push(item);
    return true;
  }

  /** No input is accepted from now on; those waiting are dropped (never stored, so the router runs them). */
  close(): void {
    this.closed = true;
    this.steering = [];
    this.followups = [];
  }

  hasSteering(): boolean {
    return this.steering.length > 0;
  }

  takeSteering(): MailboxInput[] {
    return this.steering.splice(0);
  }

  /**
   * Everything waiting, steering first: what the next turn gets when the loop would end. When
   * nothing waits the mailbox closes in the same step, so no input is accepted after the
   * loop's last look (the sender then queues it as a run of its own).
   */
  takeAllOrClose(): MailboxInput[] {
    const all = [...this.steering.splice(0), ...this.followups.splice(0)];
    if (all.length === 0) this.closed = true;
    return all;
  }
}
