/**
 * pino JSON logs. Secrets are removed twice: by key (apiKey, password, token, authorization ...)
 * and by value (every registered secret string is replaced wherever it appears).
 * Per-run loggers are children carrying runId and sessionKey.
 */
import { pino, type Logger } from "pino";

const REDACT_KEYS = ["apiKey", "api_key", "password", "pass", "token", "secret", "authorization", "Authorization", "approvalToken"];
const secretValues = new Set<string>();

/** Registers a secret value: it is replaced by "[redacted]" in every log line and event. */
export function registerSecret(value: string | undefined): void {
  if (value && value.length >= 8) secretValues.add(value);
}

/** Deep copy of `value` with registered secrets and secret-named keys replaced. */
export function redactSecrets<T>(value: T, depth = 0): T {
  if (typeof value === "string") return scrubString(value) as T;
  if (value === null || typeof value !== "object" || depth > 20) return value;
  if (Array.isArray(value)) return value.map((v) => redactSecrets(v, depth + 1)) as T;
  if (value instanceof Error) return { name: value.name, message: scrubString(value.message) } as T;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    out[key] = REDACT_KEYS.includes(key) && v !== undefined ? "[redacted]" : redactSecrets(v, depth + 1);
  }
  return out as T;
}

function scrubString(text: string): string {
  let out = text;
  for (const secret of secretValues) if (out.includes(secret)) out = out.split(secret).join("[redacted]");
  return out;
}

export function createLogger(name: string, level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      name,
      level,
      base: { actor: name, pid: process.pid },
      redact: { paths: REDACT_KEYS.flatMap((k) => [k, `*.${k}`]), censor: "[redacted]" },
      hooks: {
        logMethod(args, method) {
          method.apply(this, args.map((a) => redactSecrets(a)) as Parameters<typeof method>);
        },
      },
      serializers: { err: (err: Error) => redactSecrets({ type: err.name, message: err.message, stack: err.stack }) },
    },
    (destination ?? pino.destination({ fd: 2, sync: false })) as pino.DestinationStream,
  );
}

export function runLogger(log: Logger, runId: string, sessionKey?: string): Logger {
  return log.child(sessionKey ? { runId, sessionKey } : { runId });
}

export type { Logger };
