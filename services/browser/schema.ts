/**
 * The arguments of the `browser` and `browser_evaluate` tools, as zod schemas: the one source of
 * the JSON Schema the model sees (a flat object with an `action` discriminator, which every
 * provider accepts as function parameters) and of the validation of every call. Which fields an
 * action needs is checked here too (`REQUIRED`), so a handler gets complete arguments.
 */
import { z } from "zod";

export const ACTIONS = ["status", "start", "stop", "tabs", "open", "focus", "close", "navigate", "snapshot", "act", "screenshot", "download", "downloads", "upload"] as const;
export const ACT_KINDS = ["click", "doubleClick", "type", "press", "hover", "fill", "selectOption", "wait", "drag"] as const;
export type BrowserAction = (typeof ACTIONS)[number];
export type ActKind = (typeof ACT_KINDS)[number];

const ref = z.string().regex(/^(f\d+)?e\d+$/, "a ref from the last snapshot, e.g. e12").max(32);
const tabId = z.string().regex(/^t\d{1,9}$/, "a tab id from `tabs`, e.g. t2");
const workspacePath = z.string().min(1).max(4096);

export const browserArgsSchema = z.object({
  action: z.enum(ACTIONS).describe("what to do; see the tool's description"),
  url: z.string().min(1).max(8192).optional().describe("open, navigate: an absolute http(s) URL (or about:blank); download: the URL of a file to download (instead of ref)"),
  tabId: tabId.optional().describe("focus, close: the tab; navigate, snapshot, act, screenshot, download, upload: the tab (default: the current one); downloads: only this tab's"),
  maxChars: z.number().int().min(200).max(500_000).optional().describe("snapshot: characters returned at most"),
  kind: z.enum(ACT_KINDS).optional().describe("act: click, doubleClick, type (key by key), fill (replace the value), press (a key, e.g. Enter), hover, selectOption, drag, wait"),
  ref: ref.optional().describe("act: the element (a ref from the last snapshot, e.g. e12); screenshot: only this element; download: the link or button to click; upload: the file input, or the button that opens a file chooser"),
  targetRef: ref.optional().describe("act drag: the element to drop on"),
  text: z.string().max(100_000).optional().describe("act type/fill: the text; act wait: wait until this text is on the page"),
  key: z.string().min(1).max(64).optional().describe("act press: a key or chord, e.g. Enter, Tab, ArrowDown, Control+A (on ref when given, else the focused element)"),
  values: z.array(z.string().max(1000)).min(1).max(100).optional().describe("act selectOption: the option values or labels to select"),
  submit: z.boolean().optional().describe("act type/fill: press Enter afterwards"),
  timeMs: z.number().int().min(0).max(60_000).optional().describe("act wait: wait this long (ms); with text or ref: the most to wait; download: the most to wait for the download to start"),
  paths: z.array(workspacePath).min(1).max(20).optional().describe("upload: the files to upload, paths relative to your workspace"),
  fullPage: z.boolean().optional().describe("screenshot: the whole scrollable page, not only the viewport"),
}).strict();
export type BrowserArgs = z.infer<typeof browserArgsSchema>;

/** Fields an action (and an act kind) cannot do without. */
const REQUIRED: Partial<Record<BrowserAction | `act:${ActKind}`, readonly (keyof BrowserArgs)[]>> = {
  open: ["url"], navigate: ["url"], focus: ["tabId"], close: ["tabId"], act: ["kind"],
  "act:click": ["ref"], "act:doubleClick": ["ref"], "act:hover": ["ref"], "act:type": ["ref", "text"], "act:fill": ["ref", "text"],
  "act:selectOption": ["ref", "values"], "act:drag": ["ref", "targetRef"], "act:press": ["key"],
  upload: ["ref", "paths"],
};

/** zod issues as lines the model can act on. */
export function issueLines(error: z.ZodError): string[] {
  return error.issues.slice(0, 8).map((i) => `${i.path.join(".") || "(arguments)"}: ${i.message}`);
}

/** The model-readable problems of `args` (empty: valid, and `parsed` is set). */
export function parseBrowserArgs(args: unknown): { parsed?: BrowserArgs; problems: string[] } {
  const result = browserArgsSchema.safeParse(args);
  if (!result.success) return { problems: issueLines(result.error) };
  const a = result.data;
  const needed = [...(REQUIRED[a.action] ?? []), ...(a.action === "act" && a.kind ? REQUIRED[`act:${a.kind}`] ?? [] : [])];
  const problems = needed.filter((f) => a[f] === undefined).map((f) => `${f}: required for ${a.action}${a.action === "act" && a.kind ? ` ${a.kind}` : ""}`);
  if (a.action === "act" && a.kind === "wait" && a.timeMs === undefined && a.text === undefined && a.ref === undefined) problems.push("act wait: give timeMs, text or ref");
  if (a.action === "download" && (a.ref === undefined) === (a.url === undefined)) problems.push("download: give either ref (a link or button to click) or url (a file's URL)");
  return problems.length ? { problems } : { parsed: a, problems };
}

export const evaluateArgsSchema = z.object({
  expression: z.string().min(1).max(20_000).describe("JavaScript run in the page: an expression (document.title) or a function (() => [...document.links].map(a => a.href)); its JSON-serializable result is returned"),
  tabId: tabId.optional().describe("the tab (default: the current one)"),
}).strict();
export type EvaluateArgs = z.infer<typeof evaluateArgsSchema>;

/** The JSON Schema of a tool's arguments, as the catalog carries it (shared/runtime/json-schema-of.ts). */
export { jsonSchemaOf } from "../../shared/runtime/json-schema-of.js";

/** What the model is told about the `browser` tool; the file actions as configured (`browser.downloads`, `browser.uploads`). */
export function browserDescription(files: { downloads: boolean; uploads: boolean; uploadApproval: boolean }): string {
  return [
    "Control a real web browser (Chromium) to read and use web pages, including ones that need JavaScript or a login.",
    "Typical flow: open {url} -> snapshot (the page as an accessibility tree; each element you can use has a ref like [ref=e12]) -> act {kind, ref, ...} -> snapshot again to see the result.",
    "Actions: status; start; stop; tabs (list); open {url} (new tab); focus {tabId}; close {tabId}; navigate {url, tabId?}; snapshot {tabId?, maxChars?};",
    "act {kind: click|doubleClick|type|fill|press|hover|selectOption|drag|wait, ref, text?, key?, values?, targetRef?, submit?, timeMs?};",
    "screenshot {tabId?, fullPage?, ref?} (returns an image);",
    ...(files.downloads ? [
      "download {ref, tabId?, timeMs?} (click a link or button and save the file it downloads) or download {url} (a file's URL); downloads {tabId?} (the recent downloads);",
    ] : []),
    ...(files.uploads ? [
      `upload {ref, paths, tabId?} (set files of your workspace on a file input, or on the file chooser a button opens${files.uploadApproval ? "; the user approves every upload" : ""}).`,
    ] : []),
    files.downloads
      ? "Files a page downloads because of your action (a click or navigate, or within 5 s after one) are saved into your workspace under downloads/; the result names the path, size and type. A download a page starts on its own later is cancelled, and a browser session keeps at most browser.downloads.maxFiles files and maxTotalBytes bytes, and your downloads/ folder at most maxFolderBytes (delete files there to make room)."
      : "Downloads are turned off: a file a page downloads is not saved.",
    "Refs come from the latest snapshot of that tab: take a new snapshot after the page changed.",
    "Only public http(s) sites can be reached. Never type passwords or payment details unless the user asked you to.",
  ].join(" ");
}

export const EVALUATE_DESCRIPTION = "Run JavaScript in a browser tab (see the browser tool) and return its result as JSON. Every call needs a human approval: prefer the browser tool's snapshot and act actions.";
