/**
 * The A2UI v0.8 subset the canvas supports (Google's Agent-to-User Interface), as zod schemas.
 * JSONL: one server-to-client message per line, each an object with exactly one of
 * `surfaceUpdate`, `dataModelUpdate`, `beginRendering`, `deleteSurface`.
 * Components: the whole v0.8 standard catalog (standard_catalog_definition.json, its property
 * names): Text, Image, Icon, Video, AudioPlayer, Button, Card, Row, Column, List, Tabs, Modal,
 * TextField, CheckBox, Slider, MultipleChoice, DateTimeInput, Divider. Values are BoundValues: a
 * literal (`literalString` / `literalNumber` / `literalBoolean` / `literalArray`) or a `path` into
 * the surface's data model ("/user/name"; a path without a leading "/" inside a List template is
 * relative to the item). Containers take children as an `explicitList` of component ids or a
 * `template` ({ componentId, dataBinding }) repeated per item.
 * `parseA2uiJsonl` validates a whole push: every problem is named by its line number; a push
 * with any problem is refused as a whole (the caller keeps the previous state).
 */
import { z } from "zod";
import { safeParseJson } from "../../shared/contract/index.js";

export const A2UI_MAX_JSONL_BYTES = 128 * 1024;
export const A2UI_MAX_LINES = 500;
export const A2UI_COMPONENT_TYPES = ["Text", "Image", "Icon", "Video", "AudioPlayer", "Button", "Card", "Row", "Column", "List", "Tabs", "Modal",
  "TextField", "CheckBox", "Slider", "MultipleChoice", "DateTimeInput", "Divider"] as const;

/** The v0.8 catalog's icon names, each with the symbol the page shows for it (plain text: no icon font loads). */
export const A2UI_ICONS: Readonly<Record<string, string>> = {
  accountCircle: "\u{1F464}", add: "+", arrowBack: "\u2190", arrowForward: "\u2192", attachFile: "\u{1F4CE}", calendarToday: "\u{1F4C5}",
  call: "\u{1F4DE}", camera: "\u{1F4F7}", check: "\u2713", close: "\u2715", delete: "\u{1F5D1}", download: "\u2B07", edit: "\u270E",
  event: "\u{1F4C6}", error: "\u26D4", favorite: "\u2665", favoriteOff: "\u2661", folder: "\u{1F4C1}", help: "?", home: "\u{1F3E0}",
  info: "\u2139", locationOn: "\u{1F4CD}", lock: "\u{1F512}", lockOpen: "\u{1F513}", mail: "\u2709", menu: "\u2630", moreVert: "\u22EE",
  moreHoriz: "\u22EF", notificationsOff: "\u{1F515}", notifications: "\u{1F514}", payment: "\u{1F4B3}", person: "\u{1F9D1}", phone: "\u{1F4F1}",
  photo: "\u{1F5BC}", print: "\u{1F5A8}", refresh: "\u21BB", search: "\u{1F50D}", send: "\u27A4", settings: "\u2699", share: "\u{1F517}",
  shoppingCart: "\u{1F6D2}", star: "\u2605", starHalf: "\u2BEA", starOff: "\u2606", upload: "\u2B06", visibility: "\u{1F441}",
  visibilityOff: "\u{1F648}", warning: "\u26A0",
};
export const A2UI_ICON_NAMES = Object.keys(A2UI_ICONS) as [string, ...string[]];

const RESERVED_KEYS = ["__proto__", "constructor", "prototype"];
export const a2uiIdSchema = z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/, "an id is 1-64 letters, digits, _ . : or -")
  .refine((id) => !RESERVED_KEYS.includes(id), { message: "this id is not allowed" });
const pathSchema = z.string().min(1).max(256).regex(/^[^\s]*$/, "a path has no spaces")
  .refine((p) => !/(^|[/.])(__proto__|constructor|prototype)([/.]|$)/.test(p), { message: "this path is not allowed" });
const literalText = z.string().max(10_000);
const dataKeyOf = (max: number) => z.string().min(1).max(max).refine((k) => !RESERVED_KEYS.includes(k), { message: "this key is not allowed" });

/** A data URL of a raster image, or an http(s) address (the page loads http(s) images only when the user clicks). */
export const IMAGE_URL = /^(https?:\/\/[^\s"'<>]{1,2000}|data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]+)$/;
/** A Video's or AudioPlayer's address: http(s) only (the channel fetches it when the user clicks, canvas-image.ts). */
export const MEDIA_URL = /^https?:\/\/[^\s"'<>]{1,2000}$/;

const bound = <T extends z.ZodType>(literalKey: string, literal: T) =>
  z.object({ [literalKey]: literal.optional(), path: pathSchema.optional() } as Record<string, z.ZodType>).strict()
    .refine((v) => v[literalKey] !== undefined || v.path !== undefined, { message: `give ${literalKey} or path` });
const boundString = bound("literalString", literalText);
const boundBoolean = bound("literalBoolean", z.boolean());
const boundNumber = bound("literalNumber", z.number());
/** MultipleChoice selections: a literal array of option values, or a path */
const boundStringArray = bound("literalArray", z.array(z.string().max(500)).max(100));
const mediaUrl = (what: string) => boundString.refine((v) => v.literalString === undefined || MEDIA_URL.test(v.literalString as string), { message: `${what} url is https://… or http://… (no data: URLs)` });
/** an action's context value: any literal or a path */
const boundAny = z.object({ literalString: literalText.optional(), literalNumber: z.number().optional(), literalBoolean: z.boolean().optional(), path: pathSchema.optional() }).strict()
  .refine((v) => Object.keys(v).length > 0, { message: "give a literal or a path" });

const childrenSchema = z.union([
  z.object({ explicitList: z.array(a2uiIdSchema).max(200) }).strict(),
  z.object({ template: z.object({ componentId: a2uiIdSchema, dataBinding: pathSchema }).strict() }).strict(),
], { error: "children is { explicitList: [ids] } or { template: { componentId, dataBinding } }" });

const actionSchema = z.object({
  name: z.string().min(1).max(100),
  context: z.array(z.object({ key: dataKeyOf(64), value: boundAny }).strict()).max(32)
    .refine((c) => new Set(c.map((e) => e.key)).size === c.length, { message: "context keys must be unique" }).optional(),
}).strict();

const distribution = z.enum(["start", "center", "end", "spaceBetween", "spaceAround", "spaceEvenly"]);
const alignment = z.enum(["start", "center", "end", "stretch"]);

const componentProps = {
  Text: z.object({ text: boundString, usageHint: z.enum(["h1", "h2", "h3", "h4", "h5", "caption", "body"]).optional() }).strict(),
  Icon: z.object({
    name: bound("literalString", z.enum(A2UI_ICON_NAMES, { error: `an icon name is one of ${A2UI_ICON_NAMES.join(", ")}` })),
  }).strict(),
  Video: z.object({ url: mediaUrl("a video") }).strict(),
  AudioPlayer: z.object({ url: mediaUrl("an audio"), description: boundString.optional() }).strict(),
  Image: z.object({
    url: boundString.refine((v) => v.literalString === undefined || IMAGE_URL.test(v.literalString as string), { message: "an image url is https://…, http://… or data:image/(png|jpeg|gif|webp);base64,…" }),
    fit: z.enum(["contain", "cover", "fill", "none", "scale-down"]).optional(),
    usageHint: z.enum(["icon", "avatar", "smallFeature", "mediumFeature", "largeFeature", "header"]).optional(),
  }).strict(),
  Button: z.object({ child: a2uiIdSchema, primary: z.boolean().optional(), action: actionSchema }).strict(),
  Card: z.object({ child: a2uiIdSchema }).strict(),
  Row: z.object({ children: childrenSchema, distribution: distribution.optional(), alignment: alignment.optional() }).strict(),
  Column: z.object({ children: childrenSchema, distribution: distribution.optional(), alignment: alignment.optional() }).strict(),
  List: z.object({ children: childrenSchema, direction: z.enum(["vertical", "horizontal"]).optional(), alignment: alignment.optional() }).strict(),
  Tabs: z.object({ tabItems: z.array(z.object({ title: boundString, child: a2uiIdSchema }).strict()).min(1).max(20) }).strict(),
  Modal: z.object({ entryPointChild: a2uiIdSchema, contentChild: a2uiIdSchema }).strict(),
  TextField: z.object({
    label: boundString,
    text: boundString.optional(),
    textFieldType: z.enum(["date", "longText", "number", "shortText", "obscured"]).optional(),
    validationRegexp: z.string().max(200).optional(),
  }).strict(),
  CheckBox: z.object({ label: boundString, value: boundBoolean }).strict(),
  /** minValue and maxValue default to 0 and 100 on the page */
  Slider: z.object({ value: boundNumber, minValue: z.number().optional(), maxValue: z.number().optional() }).strict()
    .refine((s) => (s.minValue ?? 0) < (s.maxValue ?? 100), { message: "minValue must be below maxValue (they default to 0 and 100)", path: ["maxValue"] }),
  MultipleChoice: z.object({
    selections: boundStringArray,
    options: z.array(z.object({ label: boundString, value: z.string().max(500) }).strict()).min(1).max(100)
      .refine((o) => new Set(o.map((x) => x.value)).size === o.length, { message: "option values must be unique" }),
    maxAllowedSelections: z.number().int().min(1).max(100).optional(),
    type: z.enum(["checkbox", "chips"]).optional(),
    filterable: z.boolean().optional(),
  }).strict(),
  /** value: ISO 8601 ("2026-05-01", "14:30", "2026-05-01T14:30"); enableDate and enableTime default to true */
  DateTimeInput: z.object({ value: boundString, enableDate: z.boolean().optional(), enableTime: z.boolean().optional() }).strict()
    .refine((d) => d.enableDate !== false || d.enableTime !== false, { message: "enableDate and enableTime are both false: nothing to pick" }),
  Divider: z.object({ axis: z.enum(["horizontal", "vertical"]).optional(), color: z.string().max(32).optional(), thickness: z.number().min(0).max(20).optional() }).strict(),
} as const;
export type A2uiComponentType = keyof typeof componentProps;

/** `{ "Text": { … } }`: exactly one supported type key, its props checked by that type's schema. */
const componentSchema = z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
  const keys = Object.keys(value);
  if (keys.length !== 1) {
    ctx.addIssue({ code: "custom", message: `a component names exactly one type (${A2UI_COMPONENT_TYPES.join(", ")}); got ${keys.length ? keys.join(", ") : "none"}` });
    return;
  }
  const type = keys[0]!;
  const schema = Object.hasOwn(componentProps, type) ? (componentProps as Record<string, z.ZodType>)[type] : undefined;
  if (!schema) {
    ctx.addIssue({ code: "custom", path: [type], message: `"${type}" is not an A2UI v0.8 component; use one of ${A2UI_COMPONENT_TYPES.join(", ")}` });
    return;
  }
  const parsed = schema.safeParse(value[type]);
  if (!parsed.success) for (const issue of parsed.error.issues) ctx.addIssue({ code: "custom", path: [type, ...issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))], message: issue.message });
});

export const componentEntrySchema = z.object({ id: a2uiIdSchema, weight: z.number().min(0).max(100).optional(), component: componentSchema }).strict();
export type A2uiComponentEntry = z.infer<typeof componentEntrySchema>;

/** A data model entry (v0.8 ValueMap): a key with one typed value; maps nest (depth capped). */
export interface A2uiDataEntry { key: string; valueString?: string; valueNumber?: number; valueBoolean?: boolean; valueMap?: A2uiDataEntry[] }
const dataKey = dataKeyOf(128);
const dataEntrySchema: z.ZodType<A2uiDataEntry> = z.lazy(() => z.object({
  key: dataKey,
  valueString: literalText.optional(),
  valueNumber: z.number().optional(),
  valueBoolean: z.boolean().optional(),
  valueMap: z.array(dataEntrySchema).max(500).optional(),
}).strict().refine((e) => [e.valueString, e.valueNumber, e.valueBoolean, e.valueMap].filter((v) => v !== undefined).length === 1, { message: "an entry has exactly one of valueString, valueNumber, valueBoolean, valueMap" }));

const surfaceId = a2uiIdSchema;
export const a2uiMessageSchema = z.union([
  z.object({ surfaceUpdate: z.object({ surfaceId, components: z.array(componentEntrySchema).min(1).max(500) }).strict() }).strict(),
  z.object({ dataModelUpdate: z.object({ surfaceId, path: pathSchema.optional(), contents: z.array(dataEntrySchema).max(500) }).strict() }).strict(),
  z.object({ beginRendering: z.object({ surfaceId, root: a2uiIdSchema, catalogId: z.string().max(500).optional(), styles: z.record(z.string(), z.unknown()).optional() }).strict() }).strict(),
  z.object({ deleteSurface: z.object({ surfaceId }).strict() }).strict(),
]);
export type A2uiMessage = z.infer<typeof a2uiMessageSchema>;

const MESSAGE_KEYS = ["surfaceUpdate", "dataModelUpdate", "beginRendering", "deleteSurface"];

function describeIssues(error: z.ZodError): string {
  return error.issues.slice(0, 4).map((i) => `${i.path.length ? i.path.join(".") : "(message)"}: ${i.message}`).join("; ");
}

/** The problem of one parsed line, checked against its own message type's schema (clearer than the union's). */
function lineProblem(value: unknown): string | undefined {
  if (!value || typeof value !== "object" || Array.isArray(value)) return "a line is one JSON object";
  const keys = Object.keys(value);
  const known = keys.filter((k) => MESSAGE_KEYS.includes(k));
  if (keys.length !== 1 || known.length !== 1) {
    return `a message has exactly one key, one of ${MESSAGE_KEYS.join(", ")}; got ${keys.length ? keys.map((k) => JSON.stringify(k)).join(", ") : "none"}${keys.includes("type") ? ' (the v0.8 format has no "type" field: {"surfaceUpdate": {…}})' : ""}`;
  }
  const parsed = a2uiMessageSchema.safeParse(value);
  if (parsed.success) return undefined;
  // re-check against the one member whose key it has, for issues that name the real fields
  const member = a2uiMessageSchema.options.find((o) => known[0]! in o.shape)!;
  const again = member.safeParse(value);
  return again.success ? describeIssues(parsed.error) : describeIssues(again.error);
}

export type JsonlParse = { ok: true; messages: A2uiMessage[] } | { ok: false; problems: string[] };

/** Parses and validates A2UI JSONL (blank lines skipped). Problems name their line: `line 3: …`. */
export function parseA2uiJsonl(jsonl: string): JsonlParse {
  const bytes = Buffer.byteLength(jsonl);
  if (bytes > A2UI_MAX_JSONL_BYTES) return { ok: false, problems: [`the JSONL is ${bytes} bytes; a push takes at most ${A2UI_MAX_JSONL_BYTES} (send it in several pushes)`] };
  const lines = jsonl.split(/\r?\n/);
  const messages: A2uiMessage[] = [];
  const problems: string[] = [];
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (!line) return;
    if (messages.length + problems.length >= A2UI_MAX_LINES) {
      if (problems.length === 0 || !problems[problems.length - 1]!.includes("at most")) problems.push(`line ${i + 1}: a push takes at most ${A2UI_MAX_LINES} messages`);
      return;
    }
    let value: unknown;
    try {
      value = safeParseJson(line, { maxBytes: A2UI_MAX_JSONL_BYTES, maxDepth: 24 });
    } catch (err) {
      problems.push(`line ${i + 1}: not a JSON object (${(err as Error).message.replace(/^payload /, "")})`);
      return;
    }
    const problem = lineProblem(value);
    if (problem) problems.push(`line ${i + 1}: ${problem}`);
    else messages.push(value as A2uiMessage);
  });
  if (problems.length) return { ok: false, problems: problems.slice(0, 10) };
  if (messages.length === 0) return { ok: false, problems: ["the JSONL has no messages (one JSON object per line)"] };
  return { ok: true, messages };
}

/** The plain JSON of v0.8 data entries: `[{key:"a", valueString:"x"}]` -> `{ a: "x" }`. */
export function entriesToJson(entries: readonly A2uiDataEntry[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const e of entries) {
    out[e.key] = e.valueMap !== undefined ? entriesToJson(e.valueMap) : e.valueString ?? e.valueNumber ?? e.valueBoolean;
  }
  return out;
}
