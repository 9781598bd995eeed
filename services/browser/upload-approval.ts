/**
 * Admitting an upload (the actor's main thread): refused at once when uploads are turned off or
 * a file is outside the workspace, missing or over the cap (workspace-files.ts precheckFiles:
 * no human is asked about an upload that cannot run), then its human approval. An upload sends the user's files to
 * a website, so by default (`browser.uploads.requireApproval`) each one runs only after a human
 * approved it, though the `browser` tool's other actions need none. Approvals are per tool in
 * serveTools, so for an `upload` call the `browser` handler asks the same gate itself
 * (shared/runtime/approval-gate.ts: the approvals actor, a signed single-use token for this
 * call id and these exact arguments; a denial is TOOL_DENIED). When configuration already makes
 * every `browser` call need approval (`tools.requireApproval`, `agents[].requireApproval`),
 * serveTools asked with this notice and no second approval is asked.
 * The notice names the origin of the page the element is on, the element and tab, and the files
 * with their sizes: `upload to https://example.com (element e5 of https://example.com/form
 * (tab t1)): report.pdf (12.3 KB)`. The origin is found without the page's JavaScript
 * (uploads.ts uploadTarget: Playwright's own record of the frame's URL); when it cannot be found
 * (no such ref, a page that did not answer in time) the upload is refused before anyone is asked
 * (TOOL_INVALID_ARGS). The origin is bound to the call, also when the request brings an approval
 * token of its own (then it is found when the call runs): the worker refuses the upload when
 * the element is on another origin by the time it runs, or when an approved upload has no
 * origin at all (FORBIDDEN, uploads.ts).
 */
import { LurkError, type ToolCallRequest } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { approvalGateFor } from "../../shared/runtime/approval-gate.js";
import { agentWorkspace } from "../../shared/runtime/config.js";
import { configRequiresApproval } from "../../shared/runtime/config-tools-approval.js";
import { formatBytes } from "../../shared/runtime/media.js";
import type { ServedTool } from "../../shared/runtime/tool-serve.js";
import { policyAgent } from "../../shared/runtime/tool-policy-config.js";
import type { BrowserHost } from "./host.js";
import type { BrowserArgs } from "./schema.js";
import { precheckFiles } from "./workspace-files.js";

/**
 * An upload that may run, or why not (code and text for the model). `approvalRequired`: a human
 * approval (or a pre-issued token) admitted it, and `approvedOrigin` is the origin it is bound
 * to (never missing then: the worker refuses such an upload).
 */
export type Admission =
  | { ok: true; approvalRequired: false }
  | { ok: true; approvalRequired: true; approvedOrigin: string }
  | { ok: false; code: LurkError["code"]; text: string };

/** Where an upload would go, as the worker found it without the page's JavaScript (uploads.ts uploadTarget). */
interface Target {
  text: string;
  origin?: string;
}

/** The workspace of the agent making a call (the default agent's when it names none). */
export function callWorkspace(rt: ActorRuntime, agentId: string | undefined): string {
  const agent = policyAgent(rt.config, agentId);
  return agent ? agentWorkspace(rt.config, agent) : rt.config.workspace;
}

/** The agent a call is made for (the default agent when it names none): downloads are kept apart by it. */
export function callAgent(rt: ActorRuntime, agentId: string | undefined): string {
  return policyAgent(rt.config, agentId)?.id ?? agentId ?? "";
}

/** The refusal of an upload whose page's origin is not known: nobody is asked, nothing is sent. */
function unknownOrigin(args: BrowserArgs, target: Target): LurkError {
  return new LurkError("TOOL_INVALID_ARGS", `nothing was uploaded: the origin of the page of ${args.ref ?? "the element"} could not be established (${target.text}); take a snapshot and give the ref of the file input`);
}

/** The notice: `upload to <origin> (element e5 of <url> (tab t1)): a.txt (9 bytes), ...`. */
function notice(target: Target & { origin: string }, files: string[]): string {
  return `upload to ${target.origin} (${target.text}): ${files.join(", ")}`;
}

export class UploadApproval {
  /** the origin each notice serveTools asked with named, for its call */
  private readonly origins = new WeakMap<ToolCallRequest, string>();

  constructor(private readonly rt: ActorRuntime, private readonly host: BrowserHost) {}

  /**
   * The approval notice of an upload call when serveTools asks (configuration marks the whole
   * tool): the origin it names is remembered for the call. An unknown origin throws, so the gate
   * asks nobody (the call is denied: "none could be obtained" with the reason).
   */
  async summary(req: ToolCallRequest, args: BrowserArgs): Promise<string> {
    const target = await this.host.uploadTarget(args.tabId, args.ref ?? "");
    if (target.origin === undefined) throw unknownOrigin(args, target);
    this.origins.set(req, target.origin);
    const workspace = callWorkspace(this.rt, req.agentId);
    const files = await Promise.all((args.paths ?? []).map((p) => precheckFiles(workspace, [p], Number.MAX_SAFE_INTEGER).then(
      ([f]) => `${f!.path} (${formatBytes(f!.size)})`,
      (err: unknown) => `${p} (${LurkError.from(err).message}: it will be refused)`,
    )));
    return notice({ ...target, origin: target.origin }, files);
  }

  /** Whether an upload call may run (see the module's comment); `definition` is the browser tool's. */
  async admit(req: ToolCallRequest, args: BrowserArgs, definition: ServedTool["definition"], signal: AbortSignal): Promise<Admission> {
    const { uploads } = this.rt.config.browser;
    if (!uploads.enabled) return { ok: false, code: "FORBIDDEN", text: "uploads are turned off (browser.uploads.enabled: false)" };
    let sizes: { path: string; size: number }[];
    try {
      sizes = await precheckFiles(callWorkspace(this.rt, req.agentId), args.paths ?? [], uploads.maxBytes);
    } catch (err) {
      const e = LurkError.from(err);
      return { ok: false, code: e.code, text: `nothing was uploaded: ${e.message}` };
    }
    const byConfig = configRequiresApproval(this.rt.config, req.agentId, definition);
    if (!byConfig && !uploads.requireApproval) return { ok: true, approvalRequired: false };
    // the origin the approval binds: the one serveTools's notice named, else found now (before
    // anyone is asked; with a pre-issued token, now is when the upload runs)
    const asked = byConfig ? this.origins.get(req) : undefined;
    const target: Target = asked !== undefined ? { text: "", origin: asked } : await this.host.uploadTarget(args.tabId, args.ref ?? "");
    if (target.origin === undefined) {
      const e = unknownOrigin(args, target);
      return { ok: false, code: e.code, text: e.message };
    }
    const origin = target.origin;
    // serveTools asked already (configuration marks the whole tool), with summary() as the notice
    if (byConfig) return { ok: true, approvalRequired: true, approvedOrigin: origin };
    const files = sizes.map((f) => `${f.path} (${formatBytes(f.size)})`);
    const denial = await approvalGateFor(this.rt).check(definition.name, req, signal, () => notice({ ...target, origin }, files));
    return denial ? { ok: false, code: denial.code, text: denial.text } : { ok: true, approvalRequired: true, approvedOrigin: origin };
  }
}
