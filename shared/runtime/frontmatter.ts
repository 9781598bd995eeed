/**
 * A tiny, safe parser for the YAML frontmatter of SKILL.md and HOOK.md files (no `yaml` dependency).
 * Supported: `key: value` maps nested by indentation, `- item` lists (also `- key: value` maps
 * as items), plain / 'single' / "double" quoted scalars, `# comments`, booleans, null, numbers,
 * flow lists `[a, b]`, JSON flow maps and lists (`metadata: {"lurkbot": {...}}`, as MoltBot
 * skills write them), and block scalars `|` / `>` (with `-`/`+` chomping). Nothing is executed
 * or resolved: anchors, aliases and tags are plain text. Keys named `__proto__` are dropped.
 */

export type YamlValue = string | number | boolean | null | YamlValue[] | { [key: string]: YamlValue };
export type YamlMap = { [key: string]: YamlValue };

export interface Frontmatter {
  data: YamlMap;
  /** the text after the closing `---` */
  body: string;
}

/** frontmatter larger than this is not parsed (a SKILL.md header is a few lines) */
const MAX_FRONTMATTER_CHARS = 64 * 1024;

/** Splits `---\n<yaml>\n---\n<body>`; no frontmatter gives `{ data: {}, body: text }`. */
export function parseFrontmatter(text: string): Frontmatter {
  const src = text.replace(/^\uFEFF/, "");
  const lines = src.split(/\r?\n/);
  if (lines[0]?.trimEnd() !== "---") return { data: {}, body: src };
  const end = lines.findIndex((l, i) => i > 0 && (l.trimEnd() === "---" || l.trimEnd() === "..."));
  if (end === -1) return { data: {}, body: src };
  const yaml = lines.slice(1, end).join("\n");
  if (yaml.length > MAX_FRONTMATTER_CHARS) return { data: {}, body: lines.slice(end + 1).join("\n") };
  return { data: parseYaml(yaml), body: lines.slice(end + 1).join("\n") };
}

interface Line { indent: number; text: string }

/** Parses the supported YAML subset; the top level must be a map (anything else gives `{}`). */
export function parseYaml(yaml: string): YamlMap {
  const raw = yaml.split(/\r?\n/).map((l) => l.replace(/\t/g, "  "));
  const parser = new Parser(raw);
  const value = parser.node(0, 0);
  return value !== null && typeof value === "object" && !Array.isArray(value) ? value : {};
}

class Parser {
  private readonly lines: Array<Line | null>;

  constructor(private readonly raw: string[]) {
    this.lines = raw.map((l) => {
      const text = l.trim();
      if (text === "" || text.startsWith("#")) return null;
      return { indent: l.length - l.trimStart().length, text };
    });
  }

  private next(i: number): number {
    while (i < this.lines.length && this.lines[i] === null) i++;
    return i;
  }

  /** the node starting at line i with indent >= min; returns the value and sets `this.pos` */
  pos = 0;

  node(i: number, min: number): YamlValue {
    i = this.next(i);
    const line = this.lines[i];
    if (!line || line.indent < min) {
      this.pos = i;
      return null;
    }
    return isListItem(line.text) ? this.list(i, line.indent) : this.map(i, line.indent);
  }

  private map(i: number, indent: number): YamlMap {
    const out: YamlMap = {};
    for (;;) {
      i = this.next(i);
      const line = this.lines[i];
      if (!line || line.indent !== indent || isListItem(line.text)) break;
      const kv = splitKey(line.text);
      if (!kv) { i++; continue; }
      const [key, rest] = kv;
      let value: YamlValue;
      if (rest === "") {
        const j = this.next(i + 1);
        const child = this.lines[j];
        // `key:` followed by `- item` lines at the same indent is a list (common YAML style)
        if (child && (child.indent > indent || (child.indent === indent && isListItem(child.text)))) {
          value = this.node(j, child.indent);
          i = this.pos;
        } else {
          value = null;
          i++;
        }
      } else if (/^[|>][-+]?$/.test(rest)) {
        [value, i] = this.block(i + 1, indent, rest);
      } else {
        value = scalar(rest);
        i++;
      }
      if (key !== "__proto__") out[key] = value;
    }
    this.pos = i;
    return out;
  }

  private list(i: number, indent: number): YamlValue[] {
    const out: YamlValue[] = [];
    for (;;) {
      i = this.next(i);
      const line = this.lines[i];
      if (!line || line.indent !== indent || !isListItem(line.text)) break;
      const rest = line.text.slice(1).trimStart();
      if (rest === "") {
        out.push(this.node(i + 1, indent + 1));
        i = this.pos;
      } else if (splitKey(rest) && !/^["'[{]/.test(rest)) {
        // `- key: value` starts a map whose keys sit at the column of `key`
        const column = indent + (line.text.length - rest.length);
        this.lines[i] = { indent: column, text: rest };
        out.push(this.map(i, column));
        i = this.pos;
      } else {
        out.push(scalar(rest));
        i++;
      }
    }
    this.pos = i;
    return out;
  }

  /** a `|` or `>` block scalar: the more-indented lines after line i-1 */
  private block(i: number, parentIndent: number, header: string): [string, number] {
    const body: string[] = [];
    let blockIndent = -1;
    let j = i;
    for (; j < this.raw.length; j++) {
      const l = this.raw[j]!;
      if (l.trim() === "") { body.push(""); continue; }
      const ind = l.length - l.trimStart().length;
      if (ind <= parentIndent) break;
      if (blockIndent === -1) blockIndent = ind;
      if (ind < blockIndent) break;
      body.push(l.slice(blockIndent));
    }
    // trailing blank lines belong to the block only for chomping; they are not part of the next key
    let end = body.length;
    while (end > 0 && body[end - 1] === "") end--;
    const trailing = body.length - end;
    const lines = body.slice(0, end);
    let text = header.startsWith("|") ? lines.join("\n") : fold(lines);
    if (header.endsWith("+")) text += "\n".repeat(trailing + 1);
    else if (!header.endsWith("-") && lines.length) text += "\n";
    return [text, j];
  }
}

function fold(lines: string[]): string {
  let out = "";
  for (let k = 0; k < lines.length; k++) {
    const l = lines[k]!;
    if (k === 0) out = l;
    else if (l === "") out += "\n";
    else out += out.endsWith("\n") || out === "" ? l : ` ${l}`;
  }
  return out;
}

function isListItem(text: string): boolean {
  return text === "-" || text.startsWith("- ");
}

/** `key: rest` (rest may be ""); keys may be quoted; null when the line is not a mapping */
function splitKey(text: string): [string, string] | null {
  let key: string;
  let after: string;
  if (text.startsWith('"') || text.startsWith("'")) {
    const q = readQuoted(text);
    if (!q) return null;
    key = q.value;
    after = text.slice(q.end);
    if (!/^:(\s|$)/.test(after)) return null;
    after = after.slice(1);
  } else {
    const m = /^([^:#]+?)\s*:(?:\s+|$)/.exec(text);
    if (!m) return null;
    key = m[1]!;
    after = text.slice(m[0].length);
  }
  return [key.trim(), after.trim()];
}

function readQuoted(text: string): { value: string; end: number } | null {
  const q = text[0]!;
  if (q === "'") {
    let value = "";
    for (let k = 1; k < text.length; k++) {
      if (text[k] === "'") {
        if (text[k + 1] === "'") { value += "'"; k++; continue; }
        return { value, end: k + 1 };
      }
      value += text[k];
    }
    return null;
  }
  for (let k = 1; k < text.length; k++) {
    if (text[k] === "\\") { k++; continue; }
    if (text[k] === '"') {
      try {
        return { value: JSON.parse(text.slice(0, k + 1)) as string, end: k + 1 };
      } catch {
        return { value: text.slice(1, k), end: k + 1 };
      }
    }
  }
  return null;
}

/** a scalar or flow value on one line */
export function scalar(input: string): YamlValue {
  const text = input.trim();
  if (text.startsWith('"') || text.startsWith("'")) {
    const q = readQuoted(text);
    if (q) return q.value;
    return text;
  }
  if (text.startsWith("{") || text.startsWith("[")) {
    try {
      return sanitize(JSON.parse(text) as unknown);
    } catch {
      // not JSON: a simple flow list [a, b, "c d"] (flow maps that are not JSON stay text)
    }
    const inner = stripComment(text);
    if (inner.startsWith("[") && inner.endsWith("]")) {
      const body = inner.slice(1, -1).trim();
      return body === "" ? [] : splitFlow(body).map(scalar);
    }
    return inner;
  }
  const plain = stripComment(text);
  if (plain === "" || plain === "~" || /^null$/i.test(plain)) return plain === "" && text !== "" ? "" : null;
  if (/^(true|yes|on)$/i.test(plain)) return true;
  if (/^(false|no|off)$/i.test(plain)) return false;
  if (/^[-+]?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(plain) && !/^[-+]?0\d/.test(plain)) return Number(plain);
  return plain;
}

function stripComment(text: string): string {
  const m = /\s#/.exec(text);
  return (m ? text.slice(0, m.index) : text).trim();
}

function splitFlow(body: string): string[] {
  const parts: string[] = [];
  let cur = "";
  let quote = "";
  for (const ch of body) {
    if (quote) {
      cur += ch;
      if (ch === quote) quote = "";
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      cur += ch;
    } else if (ch === ",") {
      parts.push(cur);
      cur = "";
    } else cur += ch;
  }
  parts.push(cur);
  return parts.map((p) => p.trim()).filter((p) => p !== "");
}

/** JSON values with `__proto__` keys dropped */
function sanitize(value: unknown): YamlValue {
  if (Array.isArray(value)) return value.map(sanitize);
  if (value !== null && typeof value === "object") {
    const out: YamlMap = {};
    for (const [k, v] of Object.entries(value)) if (k !== "__proto__") out[k] = sanitize(v);
    return out;
  }
  return value as YamlValue;
}

/** A scalar as trimmed text ("" for maps, lists and null). */
export function yamlString(v: YamlValue | undefined): string {
  return typeof v === "string" ? v.trim() : typeof v === "number" || typeof v === "boolean" ? String(v) : "";
}

/** A map, or undefined for anything else. */
export function yamlMap(v: YamlValue | undefined): YamlMap | undefined {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? v : undefined;
}

/** A list of non-empty strings from `[a, b]`, `- a` lines or a single `a`, at most `max`. */
export function yamlList(v: YamlValue | undefined, max = Number.POSITIVE_INFINITY): string[] {
  if (v === undefined || v === null) return [];
  const items = Array.isArray(v) ? v : [v];
  return items.map((x) => yamlString(x)).filter((x) => x !== "").slice(0, max);
}

/** Text on one line, whitespace collapsed, cut at `max` characters with "...". */
export function oneLine(text: string, max: number): string {
  const t = text.replace(/\s+/g, " ").trim();
  return t.length > max ? `${t.slice(0, max - 3)}...` : t;
}
