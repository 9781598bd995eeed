/**
 * The `canvas` tool (served by this actor through shared/runtime/tool-serve.ts, policy in
 * canvas-policy.ts): a panel next to the web chat of the run's session.
 *   a2ui_push  {jsonl}         A2UI v0.8 JSONL (a2ui-schema.ts); any bad line refuses the whole push
 *                              (TOOL_INVALID_ARGS naming each line and problem), the canvas unchanged
 *   a2ui_reset                 empties the canvas (surfaces and presented HTML)
 *   present    {html?, title?} shows the agent's HTML in a sandboxed frame (<= CANVAS_MAX_HTML_BYTES,
 *                              else PAYLOAD_TOO_LARGE); without html: shows the canvas again after hide.
 *                              Its scripts run only with channels.web.canvas.allowScripts (the
 *                              description and results say which)
 *   hide                       hides the panel (its content is kept)
 *   snapshot                   the current state as JSON (canvas-state.ts canvasSnapshot)
 * Calls of one session run one after another; each change is stored (canvas-store.ts) before the
 * open pages showing that session get it (`onChange`, which answers how many pages show it).
 */
import { z } from "zod";
import { LurkError, type ToolCallReply, type ToolCallRequest } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { jsonSchemaOf } from "../../shared/runtime/json-schema-of.js";
import { KeyedSerial } from "../../shared/runtime/keyed-serial.js";
import type { ServedTool } from "../../shared/runtime/tool-serve.js";
import { A2UI_COMPONENT_TYPES, A2UI_ICON_NAMES, parseA2uiJsonl } from "./a2ui-schema.js";
import { applyA2ui, CANVAS_MAX_HTML_BYTES, canvasSnapshot, hasContent, hideCanvas, presentHtml, resetCanvas, shownRoot, type CanvasState } from "./canvas-state.js";
import type { CanvasStore } from "./canvas-store.js";

export const CANVAS_TOOL = "canvas";

/** The arguments; `scripts`: whether presented HTML runs its scripts (channels.web.canvas.allowScripts). */
export function canvasArgsSchema(scripts = false) {
  return z.object({
    action: z.enum(["a2ui_push", "a2ui_reset", "present", "hide", "snapshot"]),
    jsonl: z.string().optional().describe("a2ui_push: A2UI v0.8 JSONL, one message object per line"),
    html: z.string().optional().describe(`present: a whole HTML document (inline CSS${scripts ? " and script" : "; scripts do not run"}; no external resources load; at most ${CANVAS_MAX_HTML_BYTES} bytes)`),
    title: z.string().max(200).optional().describe("present: a title shown above the frame"),
  });
}

/** What presented HTML may do, as the model is told. */
function htmlNote(scripts: boolean): string {
  return scripts
    ? "inline CSS and scripts run; nothing loads from the network (images, fonts as data: URLs)"
    : "inline CSS only: scripts do not run (the operator has not enabled them), so make it static; images and fonts as data: URLs, nothing loads from the network";
}

const description = (scripts: boolean) => [
  "A canvas panel shown next to the user's web chat, for visual output: forms, cards, lists, dashboards.",
  `Actions: a2ui_push {jsonl} adds or updates A2UI v0.8 UI; a2ui_reset clears the canvas; present {html, title?} shows your own HTML document in a sandboxed frame (${htmlNote(scripts)}); hide hides the panel; snapshot returns the canvas state as JSON. For interaction use A2UI Buttons, not scripts.`,
  "A2UI JSONL: one JSON object per line, each with exactly one key: surfaceUpdate {surfaceId, components:[{id, component:{<Type>:{…}}}]}, dataModelUpdate {surfaceId, path?, contents:[{key, valueString|valueNumber|valueBoolean|valueMap:[…]}]}, beginRendering {surfaceId, root}, deleteSurface {surfaceId}.",
  `Component types: ${A2UI_COMPONENT_TYPES.join(", ")}. Text {text, usageHint?: h1-h5|caption|body}; Image {url: https or data:image}; Icon {name: {literalString: one of ${A2UI_ICON_NAMES.join(", ")}}}; Video {url: https}; AudioPlayer {url: https, description?}; Button {child: <component id>, primary?, action: {name, context?: [{key, value}]}}; Card {child}; Row/Column/List {children: {explicitList: [ids]} or {template: {componentId, dataBinding: "/items"}}}; Tabs {tabItems: [{title, child}]}; Modal {entryPointChild, contentChild} (a click on the entry point opens it); TextField {label, text?: {path}, textFieldType?}; CheckBox {label, value: {path}}; Slider {value: {path}, minValue?, maxValue?}; MultipleChoice {selections: {path}, options: [{label, value: "<string>"}], maxAllowedSelections?, type?: checkbox|chips}; DateTimeInput {value: {path}, enableDate?, enableTime?}; Divider {}.`,
  'Values are {"literalString": "…"} (or literalNumber/literalBoolean/literalArray) or {"path": "/form/email"} bound to the data model; an input (TextField, CheckBox, Slider, MultipleChoice, DateTimeInput) bound by path is editable and a Button\'s action context reads the user\'s value at that path (a Slider a number, a MultipleChoice an array of the selected option values, a DateTimeInput ISO 8601 text such as "2026-05-01T14:30"). Video and audio load only when the user clicks, and never play by themselves.',
  "When the user presses a Button you get a message \"[canvas userAction] name=… component=… surface=… context={…}\".",
  'Example: {"surfaceUpdate":{"surfaceId":"main","components":[{"id":"root","component":{"Column":{"children":{"explicitList":["t","b"]}}}},{"id":"t","component":{"Text":{"text":{"literalString":"Hello"},"usageHint":"h2"}}},{"id":"b","component":{"Button":{"child":"bt","action":{"name":"ok"}}}},{"id":"bt","component":{"Text":{"text":{"literalString":"OK"}}}}]}}',
  '{"beginRendering":{"surfaceId":"main","root":"root"}}',
].join("\n");

export interface CanvasToolDeps {
  store: CanvasStore;
  log: Logger;
  /** a stored change: shown to the open pages of the session's chat; returns how many got it */
  onChange(state: CanvasState): number;
  /** channels.web.canvas.allowScripts: presented HTML runs its scripts */
  allowScripts: boolean;
}

type Handled = { text: string; isError?: false } | { text: string; isError: true; code: string };

function issues(error: z.ZodError): string {
  return error.issues.slice(0, 6).map((i) => `${i.path.join(".") || "(arguments)"}: ${i.message}`).join("; ");
}

function shownNote(pages: number): string {
  return pages > 0 ? `shown on ${pages} open web page${pages === 1 ? "" : "s"}` : "no web page shows this chat right now; the user sees it when they open the chat";
}

function describeSurfaces(state: CanvasState): string {
  const parts = Object.entries(state.surfaces).map(([id, s]) => `surface "${id}": ${Object.keys(s.components).length} components${shownRoot(s) ? `, shown from "${shownRoot(s)}"` : ", not shown yet"}`);
  return parts.length ? parts.join("; ") : "no surfaces";
}

export function canvasTool(deps: CanvasToolDeps): ServedTool {
  const serial = new KeyedSerial();
  const { store } = deps;
  const argsSchema = canvasArgsSchema(deps.allowScripts);

  const change = async (sessionKey: string, fn: (s: CanvasState) => CanvasState): Promise<{ state: CanvasState; pages: number }> => {
    const state = await store.update(sessionKey, fn);
    return { state, pages: deps.onChange(state) };
  };

  const handle = async (req: ToolCallRequest): Promise<Handled> => {
    const parsed = argsSchema.safeParse(req.args);
    if (!parsed.success) return { isError: true, code: "TOOL_INVALID_ARGS", text: `invalid arguments for canvas: ${issues(parsed.error)}` };
    const args = parsed.data;
    const key = req.sessionKey;
    switch (args.action) {
      case "a2ui_push": {
        if (!args.jsonl?.trim()) return { isError: true, code: "TOOL_INVALID_ARGS", text: "a2ui_push needs jsonl: A2UI v0.8 messages, one JSON object per line" };
        const result = parseA2uiJsonl(args.jsonl);
        if (!result.ok) {
          return { isError: true, code: "TOOL_INVALID_ARGS", text: `a2ui_push refused, the canvas is unchanged (rev ${store.get(key).rev}):\n${result.problems.join("\n")}` };
        }
        let notes: string[] = [];
        const { state, pages } = await change(key, (s) => {
          const applied = applyA2ui(s, result.messages);
          notes = applied.notes;
          return applied.state;
        });
        return { text: [`pushed ${result.messages.length} message${result.messages.length === 1 ? "" : "s"} (rev ${state.rev}); ${describeSurfaces(state)}; ${shownNote(pages)}.`, ...notes.map((n) => `note: ${n}`)].join("\n") };
      }
      case "a2ui_reset": {
        const { state, pages } = await change(key, (s) => resetCanvas(s));
        return { text: `the canvas is empty (rev ${state.rev}); ${shownNote(pages)}.` };
      }
      case "present": {
        if (args.html !== undefined) {
          const bytes = Buffer.byteLength(args.html);
          if (bytes > CANVAS_MAX_HTML_BYTES) return { isError: true, code: "PAYLOAD_TOO_LARGE", text: `present refused: the html is ${bytes} bytes; the canvas shows at most ${CANVAS_MAX_HTML_BYTES}. Make it smaller (no embedded large images), or use a2ui_push.` };
          if (!args.html.trim()) return { isError: true, code: "TOOL_INVALID_ARGS", text: "present: html is empty" };
        } else if (!hasContent(store.get(key))) {
          return { isError: true, code: "TOOL_INVALID_ARGS", text: "present: the canvas is empty; give html, or push A2UI (a2ui_push) first" };
        }
        const { state, pages } = await change(key, (s) => presentHtml(s, args.html, args.title));
        const what = args.html !== undefined ? `the HTML (${state.html!.bytes} bytes) is presented in a sandboxed frame (${deps.allowScripts ? "its scripts run" : "its scripts do not run: scripts are off"})` : "the canvas is shown again";
        return { text: `${what} (rev ${state.rev}); ${shownNote(pages)}.` };
      }
      case "hide": {
        const { state, pages } = await change(key, (s) => hideCanvas(s));
        return { text: `the canvas is hidden (rev ${state.rev}; its content is kept: present shows it again); ${pages > 0 ? `hidden on ${pages} open web page${pages === 1 ? "" : "s"}` : "no web page shows this chat right now"}.` };
      }
      case "snapshot":
        return { text: JSON.stringify(canvasSnapshot(store.get(key))) };
    }
  };

  return {
    definition: {
      name: CANVAS_TOOL, description: description(deps.allowScripts), parameters: jsonSchemaOf(argsSchema),
      sideEffects: true, parallelSafe: false, groups: ["group:ui"], needsApproval: false,
    },
    handler: async (req): Promise<ToolCallReply> => {
      const started = Date.now();
      let out: Handled;
      try {
        out = await serial.run(req.sessionKey, () => handle(req));
      } catch (err) {
        const e = LurkError.from(err);
        out = { isError: true, code: e.code === "INTERNAL" ? "TOOL_FAILED" : e.code, text: e.message };
        if (e.code === "INTERNAL") deps.log.warn({ err, runId: req.runId }, "canvas call failed");
      }
      deps.log.info({ tool: CANVAS_TOOL, action: req.args.action, sessionKey: req.sessionKey, runId: req.runId, isError: !!out.isError }, "canvas call");
      return {
        toolCallId: req.toolCallId, content: [{ type: "text", text: out.text }], durationMs: Date.now() - started,
        ...(out.isError ? { isError: true, errorCode: out.code as ToolCallReply["errorCode"] } : { isError: false }),
      };
    },
  };
}
