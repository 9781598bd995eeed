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
 * (tab t1)): report.pdf (12.3 KB)`. That origin is remembered for the call: the worker refuses
 * the upload when the element is on another origin by the time it runs (uploads.ts).
 */
import { stat } from "node:fs/promises";
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
import { precheckFiles, workspacePath } from "./workspace-files.js";

/** An upload that may run (with the origin its approval named), or why not (code and text for the model). */
export type Admission = { ok: true; approvedOrigin?: string } | { ok: false; code: LurkError["code"]; text: string };

/** The workspace of the agent making a call (the default agent's when it names none). */
export function callWorkspace(rt: ActorRuntime, agentId: string | undefined): string {
  const agent = policyAgent(rt.config, agentId);
  return agent ? agentWorkspace(rt.config, agent) : rt.config.workspace;
}

/** `notes.txt (1.2 KB)`, or why it will not be sent. */
async function describeFile(workspace: string, path: string): Promise<string> {
  const abs = workspacePath(workspace, path);
  if (abs === undefined) return `${path} (outside the workspace: it will be refused)`;
  return stat(abs).then((s) => `${path} (${s.isFile() ? formatBytes(s.size) : "not a file"})`, () => `${path} (not found)`);
}

export class UploadApproval {
  /** the origin each notice named, for its call */
  private readonly origins = new WeakMap<ToolCallRequest, string>();

  constructor(private readonly rt: ActorRuntime, private readonly host: BrowserHost) {}

  /** The approval notice of an upload call; the origin it names is remembered for the call. */
  async summary(req: ToolCallRequest, args: BrowserArgs): Promise<string> {
    const target = await this.host.uploadTarget(args.tabId, args.ref ?? "");
    if (target.origin !== undefined) this.origins.set(req, target.origin);
    const workspace = callWorkspace(this.rt, req.agentId);
    const files = await Promise.all((args.paths ?? []).map((p) => describeFile(workspace, p)));
    return `upload to ${target.origin ?? "an unknown page"} (${target.text}): ${files.join(", ")}`;
  }

  /** Whether an upload call may run (see the module's comment); `definition` is the browser tool's. */
  async admit(req: ToolCallRequest, args: BrowserArgs, definition: ServedTool["definition"], signal: AbortSignal): Promise<Admission> {
    const { uploads } = this.rt.config.browser;
    if (!uploads.enabled) return { ok: false, code: "FORBIDDEN", text: "uploads are turned off (browser.uploads.enabled: false)" };
    try {
      await precheckFiles(callWorkspace(this.rt, req.agentId), args.paths ?? [], uploads.maxBytes);
    } catch (err) {
      const e = LurkError.from(err);
      return { ok: false, code: e.code, text: `nothing was uploaded: ${e.message}` };
    }
    const approved = (): Admission => {
      const origin = this.origins.get(req);
      return origin === undefined ? { ok: true } : { ok: true, approvedOrigin: origin };
    };
    // serveTools asked already (configuration marks the whole tool), with summary() as the notice
    if (configRequiresApproval(this.rt.config, req.agentId, definition)) return approved();
    if (!uploads.requireApproval) return { ok: true };
    const denial = await approvalGateFor(this.rt).check(definition.name, req, signal, () => this.summary(req, args));
    return denial ? { ok: false, code: denial.code, text: denial.text } : approved();
  }
}
