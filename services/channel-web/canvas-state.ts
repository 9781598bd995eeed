/**
 * One session's canvas, and the pure changes the `canvas` tool makes to it. State:
 *  - `surfaces`: A2UI surfaces by id, each its components by id (as the agent sent them), its
 *    data model (plain JSON) and its root (beginRendering; a component "root" counts until then);
 *  - `html`: the last `present`ed document, shown in a sandboxed frame at /canvas/frame/<frameId>
 *    (a fresh random id per present);
 *  - `view`: what the panel shows ("a2ui" or "html"), `visible`: false after `hide`;
 *  - `rev`: +1 per change (the page and snapshots name it).
 * Caps: surfaces, components per surface, and the whole state's JSON size (so a snapshot fits
 * a bus reply); a change over a cap throws LIMIT_EXCEEDED and the state stays as it was.
 * Ids are the agent's ("toString", "hasOwnProperty" are valid ids): every lookup by id or data key
 * goes through `own` (own properties only), never a plain `record[id]` read.
 */
import { randomBytes } from "node:crypto";
import { LurkError } from "../../shared/contract/index.js";
import { entriesToJson, type A2uiComponentEntry, type A2uiMessage } from "./a2ui-schema.js";

export const CANVAS_MAX_SURFACES = 8;
export const CANVAS_MAX_COMPONENTS = 1000;
export const CANVAS_MAX_STATE_BYTES = 256 * 1024;
export const CANVAS_MAX_HTML_BYTES = 100 * 1024;
const DEFAULT_ROOT = "root";

/** `record[key]` if it is the record's own property (never an inherited one such as Object.prototype.toString). */
export function own<T>(record: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

export interface CanvasSurface {
  /** beginRendering's root; until then a component named "root" is shown */
  root?: string;
  components: Record<string, A2uiComponentEntry>;
  data: Record<string, unknown>;
}

export interface CanvasHtml { frameId: string; title?: string; content: string; bytes: number }

export interface CanvasState {
  sessionKey: string;
  rev: number;
  updatedAt: number;
  visible: boolean;
  view: "a2ui" | "html";
  surfaces: Record<string, CanvasSurface>;
  html?: CanvasHtml;
}

/** What the page gets: the state without the HTML itself (the frame loads it by id). */
export interface CanvasView {
  rev: number;
  visible: boolean;
  view: "a2ui" | "html";
  surfaces: Record<string, CanvasSurface & { shownRoot?: string }>;
  /** `scripts`: whether the frame runs scripts (channels.web.canvas.allowScripts; the iframe's sandbox follows it) */
  html?: { frameId: string; title?: string; scripts: boolean };
}

export function emptyCanvas(sessionKey: string): CanvasState {
  return { sessionKey, rev: 0, updatedAt: 0, visible: false, view: "a2ui", surfaces: {} };
}

/** The root a surface renders from, if it is known and defined. */
export function shownRoot(s: CanvasSurface): string | undefined {
  const root = s.root ?? DEFAULT_ROOT;
  return own(s.components, root) ? root : undefined;
}

/** Whether the panel has anything to show. */
export function hasContent(state: CanvasState): boolean {
  if (state.view === "html") return !!state.html;
  return Object.values(state.surfaces).some((s) => shownRoot(s) !== undefined);
}

/** Path segments: "/a/b" (JSON Pointer, ~1 and ~0 escapes), "a/b", or "a.b". */
export function pathSegments(path: string): string[] {
  const trimmed = path.replace(/^\//, "");
  if (!trimmed) return [];
  const parts = trimmed.includes("/") || path.startsWith("/") ? trimmed.split("/") : trimmed.split(".");
  return parts.map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function isObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === "object" && !Array.isArray(v);
}

/** dataModelUpdate: no path (or "/") replaces the model; a path gets the contents' keys set under it. */
function applyData(surface: CanvasSurface, path: string | undefined, contents: Record<string, unknown>): void {
  const segs = path ? pathSegments(path) : [];
  if (segs.length === 0) {
    surface.data = contents;
    return;
  }
  let node = surface.data;
  for (const seg of segs) {
    const child = own(node, seg);
    if (isObject(child)) node = child;
    else node = node[seg] = {};
  }
  Object.assign(node, contents);
}

export interface ApplyResult { state: CanvasState; notes: string[] }

/** Applies validated messages to a copy of `state`; throws LIMIT_EXCEEDED over a cap. */
export function applyA2ui(state: CanvasState, messages: readonly A2uiMessage[], now = Date.now()): ApplyResult {
  const next: CanvasState = structuredClone(state);
  const surface = (id: string): CanvasSurface => {
    const found = own(next.surfaces, id);
    if (found) return found;
    if (Object.keys(next.surfaces).length >= CANVAS_MAX_SURFACES) throw new LurkError("LIMIT_EXCEEDED", `at most ${CANVAS_MAX_SURFACES} surfaces per canvas; delete one first (deleteSurface)`);
    return (next.surfaces[id] = { components: {}, data: {} });
  };
  for (const m of messages) {
    if ("surfaceUpdate" in m) {
      const s = surface(m.surfaceUpdate.surfaceId);
      for (const c of m.surfaceUpdate.components) s.components[c.id] = c;
      if (Object.keys(s.components).length > CANVAS_MAX_COMPONENTS) throw new LurkError("LIMIT_EXCEEDED", `surface "${m.surfaceUpdate.surfaceId}" would have over ${CANVAS_MAX_COMPONENTS} components`);
    } else if ("dataModelUpdate" in m) {
      applyData(surface(m.dataModelUpdate.surfaceId), m.dataModelUpdate.path, entriesToJson(m.dataModelUpdate.contents));
    } else if ("beginRendering" in m) {
      surface(m.beginRendering.surfaceId).root = m.beginRendering.root;
    } else {
      delete next.surfaces[m.deleteSurface.surfaceId];
    }
  }
  next.view = "a2ui";
  next.visible = true;
  const notes = surfaceNotes(next);
  return { state: bump(next, now), notes };
}

/** Model-readable notes on what will not show yet (a missing root, children that name nothing). */
function surfaceNotes(state: CanvasState): string[] {
  const notes: string[] = [];
  for (const [id, s] of Object.entries(state.surfaces)) {
    if (!shownRoot(s)) notes.push(`surface "${id}" is not shown: ${s.root ? `its root "${s.root}" is not defined` : 'no beginRendering names its root (and no component is named "root")'}`);
    const missing = new Set<string>();
    for (const c of Object.values(s.components)) {
      const props = Object.values(c.component)[0] as Record<string, any>;
      const refs: string[] = [
        ...(props?.child ? [props.child] : []), ...(props?.children?.explicitList ?? []), ...(props?.children?.template ? [props.children.template.componentId] : []),
        ...(props?.tabItems ?? []).map((t: { child: string }) => t.child), ...(props?.entryPointChild ? [props.entryPointChild, props.contentChild] : []),
      ];
      for (const r of refs) if (!own(s.components, r)) missing.add(r);
    }
    if (missing.size) notes.push(`surface "${id}" names components not defined yet: ${[...missing].slice(0, 10).join(", ")}`);
  }
  return notes;
}

export function presentHtml(state: CanvasState, html: string | undefined, title: string | undefined, now = Date.now()): CanvasState {
  const next: CanvasState = structuredClone(state);
  if (html !== undefined) {
    next.html = { frameId: randomBytes(16).toString("hex"), content: html, bytes: Buffer.byteLength(html), ...(title ? { title } : {}) };
    next.view = "html";
  }
  next.visible = true;
  return bump(next, now);
}

export function hideCanvas(state: CanvasState, now = Date.now()): CanvasState {
  return bump({ ...structuredClone(state), visible: false }, now);
}

export function resetCanvas(state: CanvasState, now = Date.now()): CanvasState {
  return bump({ ...emptyCanvas(state.sessionKey), rev: state.rev }, now);
}

function bump(state: CanvasState, now: number): CanvasState {
  state.rev += 1;
  state.updatedAt = now;
  const bytes = Buffer.byteLength(JSON.stringify(state));
  if (bytes > CANVAS_MAX_STATE_BYTES) throw new LurkError("LIMIT_EXCEEDED", `the canvas would be ${bytes} bytes; it holds at most ${CANVAS_MAX_STATE_BYTES} (remove components or data, or a2ui_reset)`);
  return state;
}

/** The page's view of a state; `scripts`: channels.web.canvas.allowScripts. */
export function canvasView(state: CanvasState, scripts = false): CanvasView {
  const surfaces: CanvasView["surfaces"] = {};
  for (const [id, s] of Object.entries(state.surfaces)) {
    const root = shownRoot(s);
    surfaces[id] = { ...s, ...(root ? { shownRoot: root } : {}) };
  }
  return {
    rev: state.rev, visible: state.visible && hasContent(state), view: state.view, surfaces,
    ...(state.html ? { html: { frameId: state.html.frameId, scripts, ...(state.html.title ? { title: state.html.title } : {}) } } : {}),
  };
}

/** `snapshot`: the state as JSON the model reads (the HTML cut to its first 4000 characters). */
export function canvasSnapshot(state: CanvasState): Record<string, unknown> {
  return {
    rev: state.rev,
    visible: state.visible && hasContent(state),
    view: state.view,
    surfaces: Object.fromEntries(Object.entries(state.surfaces).map(([id, s]) => [id, {
      root: s.root ?? null,
      rendering: shownRoot(s) !== undefined,
      components: Object.values(s.components),
      dataModel: s.data,
    }])),
    html: state.html ? { title: state.html.title ?? null, bytes: state.html.bytes, content: state.html.content.length > 4000 ? `${state.html.content.slice(0, 4000)}…[cut]` : state.html.content } : null,
  };
}

/** The action of Button `componentId` of a surface if it is named `name` (undefined: the state has no such button). */
export function buttonAction(state: CanvasState, surfaceId: string, componentId: string, name: string): { name: string; context?: Array<{ key: string }> } | undefined {
  const surface = own(state.surfaces, surfaceId);
  const c = surface ? own(surface.components, componentId)?.component : undefined;
  if (!c || !Object.hasOwn(c, "Button")) return undefined;
  const action = (c as { Button?: { action?: { name?: string; context?: Array<{ key: string }> } } }).Button?.action;
  return action?.name === name ? { name, ...(action.context ? { context: action.context } : {}) } : undefined;
}
