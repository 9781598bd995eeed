/**
 * Tools are data: a name, a description, a zod schema of the arguments, a few flags the agent
 * loop and the (later) policy layer read, and `execute(args, ctx)`.
 *
 * `execute` runs inside a piscina worker thread (see worker.ts). It never touches the raw
 * filesystem: `ctx.fs` is a ConfinedFs rooted at the agent's workspace. It gets an AbortSignal
 * (deadline or cancellation; a tool that ignores it is terminated with its worker after a short
 * grace period) and a progress reporter (published on `lurk.tools.progress.<runId>`).
 *
 * A tool reports a failure the model should see by throwing a LurkError (its code becomes the
 * reply's errorCode) or by returning `isError: true`. Either way it goes back to the model as a
 * tool result, not as a bus error.
 */
import { z } from "zod";
import type { ErrorCode, imageBlockSchema, Origin, SessionType, textBlockSchema, ToolDefinition } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import type { WebConfig } from "../../shared/runtime/config.js";
import type { DocumentPool } from "../../shared/runtime/documents/pool.js";
import type { MemoryVectors } from "./embeddings/types.js";
import type { ExecHost } from "./exec/sandbox.js";
import type { ConfinedFs } from "./fs-confined.js";
import type { JobHost } from "./jobs/route.js";

export type TextBlock = z.infer<typeof textBlockSchema>;
export type ImageBlock = z.infer<typeof imageBlockSchema>;
export type ToolContent = TextBlock | ImageBlock;

export interface ToolResult {
  content: ToolContent[];
  isError?: boolean;
  errorCode?: ErrorCode;
  /** the output was cut; `fullOutputPath` (workspace-relative) holds the whole of it for `read` */
  truncated?: { fullOutputPath: string; totalBytes: number };
}

/** Byte caps a tool must respect (from config.tools and config.bus). */
export interface ToolLimits {
  /** the text of a result, UTF-8 bytes */
  outputCapBytes: number;
  /** the raw bytes of one image returned as a base64 block */
  imageCapBytes: number;
  /** the most a file tool writes to one file (config.tools.maxWriteBytes; 5 MiB when unset) */
  maxWriteBytes?: number;
  /** bubblewrap (config.tools.exec.bwrapPath), for the programs documents are read with (catdoc, OCR) */
  bwrapPath?: string;
  /** OCR of scanned PDFs `read` and `web_fetch` meet (config.media.ocr, with bwrapPath); absent: none */
  ocr?: { languages: string; maxPages: number; dpi: number; timeoutMs: number; bwrapPath: string };
}

/** Who is calling: for tools that act on the session, and for the policy layer later. */
export interface ToolCallInfo {
  toolCallId: string;
  runId: string;
  agentId: string;
  sessionKey: string;
  sessionType: SessionType;
  /** where the run's trigger came from (the `message` tool's default target), if the runner said */
  origin?: Origin;
}

export interface ToolContext {
  /** aborted at the deadline or when the caller cancels */
  signal: AbortSignal;
  /** the agent's workspace; the only filesystem a tool sees */
  fs: ConfinedFs;
  limits: ToolLimits;
  call?: ToolCallInfo;
  /** memory.embeddings is set: vectors of memory passages (worker tools; embeddings/types.ts) */
  embeddings?: MemoryVectors;
  /** a short progress note (rate-limited by the caller side) */
  progress(message: string, fraction?: number): void;
  /** only for tools with `runsIn: "process"`: what the actor process gives them */
  host?: ProcessToolHost;
}

/** What a process tool gets besides the common context (see process-tools.ts). */
export interface ProcessToolHost {
  /** absolute path of the agent's workspace */
  workspace: string;
  /** ms the call may take (the signal fires then with a TIMEOUT reason) */
  timeoutMs: number;
  /** the exec sandbox this actor detected at start */
  exec: ExecHost;
  /** config.tools.web, for web_fetch and web_search */
  web?: WebConfig;
  /** the actor's runtime (bus client, JetStream, config, log): for tools that call other actors */
  rt?: ActorRuntime;
  /** this instance's background jobs (the `process` tool) */
  jobs?: JobHost;
  /** a worker thread that reads documents' text (web_fetch), started on the first one */
  documents?: Pick<DocumentPool, "extract">;
}

export interface Tool<S extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  parameters: S;
  /** changes something outside the transcript (never repeated on resume) */
  sideEffects: boolean;
  /** may run in parallel with other calls of the same turn */
  parallelSafe: boolean;
  groups: string[];
  needsApproval?: boolean;
  /** other names it is served under (`lurk.tools.call.<alias>`); the catalog lists `name` only */
  aliases?: string[];
  /**
   * "worker" (default): a piscina worker thread. "process": the actor's main thread, for tools
   * that spawn child processes (exec); they get `ctx.host` and must honour `ctx.signal`.
   */
  runsIn?: "worker" | "process";
  /** a worker tool that gets `ctx.embeddings` when memory.embeddings is set (memory_search) */
  usesEmbeddings?: boolean;
  execute(args: z.output<S>, ctx: ToolContext): Promise<ToolResult>;
}

/** Identity helper that keeps the args type of `execute` tied to `parameters`. */
export function defineTool<S extends z.ZodType>(tool: Tool<S>): Tool<S> {
  return tool;
}

/** A tool's JSON Schema for the catalog (input side: fields with defaults are optional). */
export function parametersJsonSchema(tool: Tool): Record<string, unknown> {
  const schema = z.toJSONSchema(tool.parameters, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  // providers embed this object in their own schema; the meta-schema URI only gets in the way
  delete schema.$schema;
  return schema;
}

/** The catalog entry of a tool served by `actor`. */
export function toolDefinition(tool: Tool, actor: string): ToolDefinition {
  return {
    name: tool.name,
    description: tool.description,
    parameters: parametersJsonSchema(tool),
    actor,
    sideEffects: tool.sideEffects,
    parallelSafe: tool.parallelSafe,
    groups: [...tool.groups],
    needsApproval: tool.needsApproval ?? false,
  };
}

/** True for a value that looks like a Tool (a module loaded by path in the worker). */
export function isTool(value: unknown): value is Tool {
  const t = value as Partial<Tool> | null;
  return typeof t === "object" && t !== null && typeof t.name === "string" && typeof t.execute === "function"
    && typeof (t.parameters as { safeParse?: unknown } | undefined)?.safeParse === "function";
}

/** zod issues as one line the model can act on. */
export function describeIssues(error: z.ZodError): string {
  return error.issues.slice(0, 8).map((i) => `${i.path.join(".") || "(arguments)"}: ${i.message}`).join("; ");
}
