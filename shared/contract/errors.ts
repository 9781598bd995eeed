/**
 * Error codes of the bus contract, and the one error class used inside actors.
 *
 * On the wire an error is data: `{ type: "lurk.error.v1", code, message, retryable, details? }`
 * in the reply body, plus the services framework's `Nats-Service-Error(-Code)` headers.
 * `LurkError.is()` uses a symbol-free marker property so it works across worker threads
 * (structured clone drops prototypes but keeps own properties).
 */
import { z } from "zod";

export const ERROR_CODES = {
  // malformed input
  BAD_JSON: { status: 400, retryable: false, text: "the payload is not valid JSON" },
  PAYLOAD_TOO_LARGE: { status: 413, retryable: false, text: "the payload exceeds the size cap" },
  UNSAFE_PAYLOAD: { status: 400, retryable: false, text: "the payload has a forbidden key or nests too deeply" },
  VALIDATION_FAILED: { status: 422, retryable: false, text: "the payload does not match the schema" },
  BAD_SUBJECT_TOKEN: { status: 400, retryable: false, text: "a subject token is invalid" },
  // state
  NOT_FOUND: { status: 404, retryable: false, text: "no such item" },
  CONFLICT: { status: 409, retryable: true, text: "the item changed or is busy" },
  FORBIDDEN: { status: 403, retryable: false, text: "not allowed" },
  // availability
  UNAVAILABLE: { status: 503, retryable: true, text: "the actor that serves this is not running" },
  TIMEOUT: { status: 504, retryable: true, text: "the operation timed out" },
  ABORTED: { status: 499, retryable: false, text: "the operation was aborted" },
  INTERNAL: { status: 500, retryable: true, text: "an internal error" },
  // configuration
  CONFIG_INVALID: { status: 500, retryable: false, text: "the configuration is invalid" },
  INSECURE_CONFIG: { status: 500, retryable: false, text: "the configuration is unsafe" },
  NO_MODEL: { status: 503, retryable: false, text: "no model is configured" },
  // providers
  PROVIDER_RATE_LIMIT: { status: 429, retryable: true, text: "the provider rate-limited the request" },
  PROVIDER_OVERLOADED: { status: 529, retryable: true, text: "the provider is overloaded" },
  PROVIDER_AUTH: { status: 401, retryable: false, text: "the provider refused the credentials" },
  PROVIDER_BILLING: { status: 402, retryable: false, text: "the provider account has a billing problem" },
  PROVIDER_CONTEXT_OVERFLOW: { status: 400, retryable: false, text: "the prompt exceeds the model's context window" },
  PROVIDER_TIMEOUT: { status: 504, retryable: true, text: "the provider did not answer in time" },
  PROVIDER_ERROR: { status: 502, retryable: false, text: "the provider failed" },
  // tools and approvals
  TOOL_UNKNOWN: { status: 404, retryable: false, text: "no such tool" },
  TOOL_INVALID_ARGS: { status: 422, retryable: false, text: "the tool arguments are invalid" },
  TOOL_FAILED: { status: 500, retryable: false, text: "the tool failed" },
  TOOL_DENIED: { status: 403, retryable: false, text: "the tool call was denied" },
  PATH_ESCAPE: { status: 403, retryable: false, text: "the path leaves the workspace" },
  SANDBOX_UNAVAILABLE: { status: 503, retryable: false, text: "the sandbox is not available" },
  APPROVAL_REQUIRED: { status: 403, retryable: false, text: "the call needs a human approval" },
  APPROVAL_INVALID: { status: 403, retryable: false, text: "the approval token is invalid" },
  LIMIT_EXCEEDED: { status: 429, retryable: false, text: "a configured limit was reached" },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;
export const errorCodeSchema = z.enum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]]);

export const errorReplySchema = z.object({
  type: z.literal("lurk.error.v1"),
  code: errorCodeSchema,
  message: z.string(),
  retryable: z.boolean(),
  details: z.unknown().optional(),
});
export type ErrorReply = z.infer<typeof errorReplySchema>;

const MARKER = "__lurkError";

export class LurkError extends Error {
  readonly [MARKER] = true;
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly details: unknown;

  constructor(code: ErrorCode, message?: string, options?: { cause?: unknown; details?: unknown; retryable?: boolean }) {
    super(message ?? ERROR_CODES[code].text, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "LurkError";
    this.code = code;
    this.retryable = options?.retryable ?? ERROR_CODES[code].retryable;
    this.details = options?.details;
  }

  /** True for a LurkError, or a structured clone of one (from a worker thread). */
  static is(value: unknown): value is LurkError {
    return typeof value === "object" && value !== null && (value as Record<string, unknown>)[MARKER] === true
      && typeof (value as { code?: unknown }).code === "string" && (value as { code: string }).code in ERROR_CODES;
  }

  /** Any thrown value as a LurkError; unknown errors become INTERNAL with the original message. */
  static from(value: unknown, fallback: ErrorCode = "INTERNAL"): LurkError {
    if (value instanceof LurkError) return value;
    if (LurkError.is(value)) {
      return new LurkError(value.code, value.message, { details: value.details, retryable: value.retryable });
    }
    const message = value instanceof Error ? value.message : String(value);
    return new LurkError(fallback, message, { cause: value });
  }

  static fromReply(reply: ErrorReply): LurkError {
    return new LurkError(reply.code, reply.message, { details: reply.details, retryable: reply.retryable });
  }

  toReply(): ErrorReply {
    const reply: ErrorReply = { type: "lurk.error.v1", code: this.code, message: this.message, retryable: this.retryable };
    if (this.details !== undefined) reply.details = this.details;
    return reply;
  }
}
