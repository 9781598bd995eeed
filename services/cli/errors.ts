/**
 * Errors of the `lurkbot` command. Every failure says what was wrong and what to do; the exit
 * code tells scripts which kind of failure it was.
 */
import { LurkError } from "../../shared/contract/index.js";

export const EXIT = {
  ok: 0,
  /** a command failed (timeout, error reply, start-up failure) */
  failed: 1,
  /** the bus is unreachable: no NATS server answers at the configured URL */
  busDown: 2,
  /** bad command line (EX_USAGE) */
  usage: 64,
  /** the configuration or the credentials are invalid or unsafe (EX_CONFIG, like the actors) */
  config: 78,
} as const;

export class CliError extends Error {
  constructor(message: string, readonly exitCode: number = EXIT.failed) {
    super(message);
    this.name = "CliError";
  }
}

export class UsageError extends CliError {
  constructor(message: string, readonly command?: string) {
    super(message, EXIT.usage);
    this.name = "UsageError";
  }
}

/** Any thrown value as a CliError with the right exit code. */
export function toCliError(err: unknown): CliError {
  if (err instanceof CliError) return err;
  if (LurkError.is(err)) {
    const config = err.code === "CONFIG_INVALID" || err.code === "INSECURE_CONFIG";
    return new CliError(err.message, config ? EXIT.config : EXIT.failed);
  }
  return new CliError(err instanceof Error ? err.message : String(err), EXIT.failed);
}
