/**
 * Markdown (as models write it) adapted to each platform's dialect. The text is split into
 * fenced code blocks, inline code spans and prose; code is kept verbatim (escaped as the target
 * needs), prose has its emphasis, links and headings rewritten. Tables are converted
 * before (tables.ts: the kit applies the channel's `markdown.tables` ahead of chunking).
 * - plain: no markup (links become "text (url)");
 * - Telegram HTML (`parse_mode: "HTML"`) and MarkdownV2 (every special character escaped);
 * - Slack mrkdwn (`*bold*`, `_italic_`, `<url|text>`, `&<>` escaped);
 * - Discord: markdown as is, with `@everyone`/`@here` defused;
 * - Matrix HTML (`formatted_body`, a small tag allowlist);
 * - WhatsApp (`*bold*`, `_italic_`, `~strike~`, ``` blocks, `code`; links as "text (url)").
 */
type Segment = { kind: "fence"; lang: string; code: string } | { kind: "code"; code: string } | { kind: "text"; text: string };

const FENCE = /(^|\n) {0,3}(```|~~~)([^\n`]*)\n([\s\S]*?)(?:\n {0,3}\2[ \t]*(?=\n|$)|$)/g;

export function segments(md: string): Segment[] {
  const out: Segment[] = [];
  const pushProse = (text: string) => {
    let last = 0;
    for (const m of text.matchAll(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g)) {
      if (m.index > last) out.push({ kind: "text", text: text.slice(last, m.index) });
      out.push({ kind: "code", code: m[2]! });
      last = m.index + m[0].length;
    }
    if (last < text.length) out.push({ kind: "text", text: text.slice(last) });
  };
  let last = 0;
  for (const m of md.matchAll(FENCE)) {
    const start = m.index + m[1]!.length;
    if (start > last) pushProse(md.slice(last, start));
    out.push({ kind: "fence", lang: m[3]!.trim(), code: m[4]! });
    last = m.index + m[0].length;
  }
  if (last < md.length) pushProse(md.slice(last));
  return out;
}

interface ProseRules {
  escape(text: string): string;
  bold(inner: string): string;
  italic(inner: string): string;
  strike(inner: string): string;
  link(text: string, url: string): string;
  heading(inner: string): string;
}

/** Rewrites prose: links, headings, bold, italic, strike; everything else through `escape`. */
function prose(text: string, r: ProseRules): string {
  const INLINE = /\[([^\]\n]+)\]\(([^)\s]+)\)|\*\*(?=\S)([^\n]*?\S)\*\*|__(?=\S)([^\n]*?\S)__|~~(?=\S)([^\n]*?\S)~~|(?<![\w*])\*(?=\S)([^*\n]*?\S)\*(?![\w*])|(?<![\w_])_(?=\S)([^_\n]*?\S)_(?![\w_])/g;
  const inline = (line: string): string => {
    let out = "";
    let last = 0;
    for (const m of line.matchAll(INLINE)) {
      out += r.escape(line.slice(last, m.index));
      if (m[1] !== undefined) out += r.link(m[1], m[2]!);
      else if (m[3] !== undefined || m[4] !== undefined) out += r.bold(inline(m[3] ?? m[4]!));
      else if (m[5] !== undefined) out += r.strike(inline(m[5]));
      else out += r.italic(inline(m[6] ?? m[7]!));
      last = m.index + m[0].length;
    }
    return out + r.escape(line.slice(last));
  };
  return text.split("\n").map((line) => {
    const h = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    return h ? r.heading(inline(h[1]!)) : inline(line);
  }).join("\n");
}

function render(md: string, r: ProseRules & { fence(lang: string, code: string): string; code(code: string): string }): string {
  return segments(md).map((s) => (s.kind === "fence" ? r.fence(s.lang, s.code) : s.kind === "code" ? r.code(s.code) : prose(s.text, r))).join("");
}

export function toPlainText(md: string): string {
  const id = (s: string) => s;
  return render(md, { escape: id, bold: id, italic: id, strike: id, heading: id, link: (t, u) => (t === u ? u : `${t} (${u})`), fence: (_l, c) => c, code: id });
}

export const escapeHtml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const escapeAttr = (s: string) => escapeHtml(s).replace(/"/g, "&quot;");

/** Telegram `parse_mode: "HTML"`. */
export function toTelegramHtml(md: string): string {
  return render(md, {
    escape: escapeHtml,
    bold: (s) => `<b>${s}</b>`,
    italic: (s) => `<i>${s}</i>`,
    strike: (s) => `<s>${s}</s>`,
    heading: (s) => `<b>${s}</b>`,
    link: (t, u) => `<a href="${escapeAttr(u)}">${escapeHtml(t)}</a>`,
    fence: (lang, code) => (lang ? `<pre><code class="language-${escapeAttr(lang.split(/\s/)[0]!)}">${escapeHtml(code)}</code></pre>` : `<pre>${escapeHtml(code)}</pre>`),
    code: (c) => `<code>${escapeHtml(c)}</code>`,
  });
}

/** Telegram MarkdownV2: these must be escaped everywhere outside code. */
export const escapeMarkdownV2 = (s: string) => s.replace(/[_*[\]()~`>#+\-=|{}.!\\]/g, "\\$&");
const escapeV2Code = (s: string) => s.replace(/[`\\]/g, "\\$&");

/** Telegram `parse_mode: "MarkdownV2"`. */
export function toTelegramMarkdownV2(md: string): string {
  return render(md, {
    escape: escapeMarkdownV2,
    bold: (s) => `*${s}*`,
    italic: (s) => `_${s}_`,
    strike: (s) => `~${s}~`,
    heading: (s) => `*${s}*`,
    link: (t, u) => `[${escapeMarkdownV2(t)}](${u.replace(/[)\\]/g, "\\$&")})`,
    fence: (lang, code) => `\`\`\`${lang.replace(/[^\w+-]/g, "")}\n${escapeV2Code(code)}\n\`\`\``,
    code: (c) => `\`${escapeV2Code(c)}\``,
  });
}

/** Slack mrkdwn (text objects of type "mrkdwn", chat.postMessage `text`). */
export function toSlackMrkdwn(md: string): string {
  return render(md, {
    escape: escapeHtml,
    bold: (s) => `*${s}*`,
    italic: (s) => `_${s}_`,
    strike: (s) => `~${s}~`,
    heading: (s) => `*${s}*`,
    link: (t, u) => `<${u.replace(/[<>|]/g, encodeURIComponent)}|${escapeHtml(t).replace(/\|/g, "¦")}>`,
    fence: (_lang, code) => `\`\`\`\n${escapeHtml(code)}\n\`\`\``,
    code: (c) => `\`${escapeHtml(c)}\``,
  });
}

/** Discord markdown: what models write already renders; mass mentions are defused. */
export function toDiscordMarkdown(md: string): string {
  return segments(md).map((s) => (s.kind === "fence" ? `\`\`\`${s.lang}\n${s.code}\n\`\`\`` : s.kind === "code" ? `\`${s.code}\`` : s.text.replace(/@(everyone|here)/g, "@\u200b$1"))).join("");
}

/** Link targets a Matrix client may be handed (others stay text). */
const SAFE_HREF = /^(https?:|mailto:)/i;

/**
 * Matrix `formatted_body` (`format: "org.matrix.custom.html"`): a small allowlist of tags
 * (strong, em, del, a href with http(s)/mailto only, code, pre, br), everything else escaped;
 * line breaks outside code blocks become `<br>`.
 */
export function toMatrixHtml(md: string): string {
  const rules: ProseRules = {
    escape: escapeHtml,
    bold: (s) => `<strong>${s}</strong>`,
    italic: (s) => `<em>${s}</em>`,
    strike: (s) => `<del>${s}</del>`,
    heading: (s) => `<strong>${s}</strong>`,
    link: (t, u) => (SAFE_HREF.test(u) ? `<a href="${escapeAttr(u)}">${escapeHtml(t)}</a>` : escapeHtml(t === u ? u : `${t} (${u})`)),
  };
  return segments(md).map((s) => {
    if (s.kind === "fence") {
      const lang = s.lang.split(/\s/)[0]!.replace(/[^\w+-]/g, "");
      return `<pre><code${lang ? ` class="language-${lang}"` : ""}>${escapeHtml(s.code)}</code></pre>`;
    }
    if (s.kind === "code") return `<code>${escapeHtml(s.code)}</code>`;
    return prose(s.text, rules).replace(/\n/g, "<br>\n");
  }).join("");
}

/**
 * WhatsApp's formatting: `*bold*`, `_italic_`, `~strike~`, ```monospace``` blocks and `inline
 * code`; headings become bold lines, links "text (url)" (WhatsApp links bare URLs itself). It has
 * no escaping: prose is left as written.
 */
export function toWhatsAppText(md: string): string {
  const id = (s: string) => s;
  return render(md, {
    escape: id,
    bold: (s) => `*${s}*`,
    italic: (s) => `_${s}_`,
    strike: (s) => `~${s}~`,
    heading: (s) => `*${s}*`,
    link: (t, u) => (t === u ? u : `${t} (${u})`),
    fence: (_lang, code) => `\`\`\`\n${code}\n\`\`\``,
    code: (c) => `\`${c}\``,
  });
}
