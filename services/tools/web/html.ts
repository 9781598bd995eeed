/**
 * A small HTML-to-readable-text converter for web_fetch (no DOM, no dependencies): drops
 * script, style, noscript, template, svg, nav, iframe, head (the title is kept apart) and
 * comments; headings become "#"-prefixed lines, paragraphs and blocks become blank-line
 * separated, list items "- " lines, <br> a newline, links "text (url)" with the URL made
 * absolute; <pre> keeps its whitespace; entities are decoded. Good enough to read a page, not
 * a faithful renderer.
 */

const DROP = ["script", "style", "noscript", "template", "svg", "nav", "iframe", "object", "canvas", "head", "select", "button"];
const BLOCK = new Set([
  "p", "div", "section", "article", "main", "aside", "header", "footer", "blockquote", "figure", "figcaption", "table",
  "thead", "tbody", "tfoot", "tr", "ul", "ol", "dl", "dt", "dd", "form", "fieldset", "address", "details", "summary", "hr", "body", "html",
]);

const NAMED: Record<string, string> = {
  amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " ", ensp: " ", emsp: " ", thinsp: " ", shy: "",
  copy: "©", reg: "®", trade: "™", hellip: "…", mdash: "—", ndash: "–", lsquo: "‘", rsquo: "’", sbquo: "‚",
  ldquo: "“", rdquo: "”", bdquo: "„", laquo: "«", raquo: "»", lsaquo: "‹", rsaquo: "›", bull: "•", middot: "·",
  euro: "€", pound: "£", yen: "¥", cent: "¢", sect: "§", para: "¶", deg: "°", times: "×", divide: "÷", plusmn: "±",
  frac12: "½", frac14: "¼", frac34: "¾", sup2: "²", sup3: "³", micro: "µ", iexcl: "¡", iquest: "¿", larr: "←",
  rarr: "→", uarr: "↑", darr: "↓", harr: "↔", le: "≤", ge: "≥", ne: "≠", minus: "−", infin: "∞", dagger: "†",
  auml: "ä", ouml: "ö", uuml: "ü", Auml: "Ä", Ouml: "Ö", Uuml: "Ü", szlig: "ß", eacute: "é", egrave: "è",
  ecirc: "ê", aacute: "á", agrave: "à", acirc: "â", ccedil: "ç", ntilde: "ñ", oacute: "ó", iacute: "í", uacute: "ú",
  zwj: "\u200d", zwnj: "\u200c", lrm: "", rlm: "",
};

/** Decodes named (a common set) and numeric character references; unknown ones stay as written. */
export function decodeEntities(text: string): string {
  return text.replace(/&(#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[a-zA-Z][a-zA-Z0-9]{1,31});?/g, (whole, ref: string) => {
    if (ref.startsWith("#")) {
      const code = ref[1] === "x" || ref[1] === "X" ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      if (!Number.isFinite(code) || code <= 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return "\ufffd";
      return String.fromCodePoint(code);
    }
    return NAMED[ref] ?? whole;
  });
}

function attr(tag: string, name: string): string | undefined {
  const m = new RegExp(`\\s${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s"'>]+))`, "i").exec(tag);
  return m ? decodeEntities(m[1] ?? m[2] ?? m[3] ?? "") : undefined;
}

function absolute(href: string, base: string | undefined): string | undefined {
  try {
    const url = new URL(href, base);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : undefined;
  } catch {
    return undefined;
  }
}

export interface HtmlText {
  title?: string;
  text: string;
}

/** Readable text of an HTML document; `baseUrl` makes relative links absolute. */
export function htmlToText(html: string, baseUrl?: string): HtmlText {
  let src = html.replace(/<!--[\s\S]*?(?:-->|$)/g, " ").replace(/<!\[CDATA\[[\s\S]*?\]\]>/g, " ").replace(/<![^>]*>|<\?[^>]*>/g, " ");
  const titleMatch = /<title\b[^>]*>([\s\S]*?)<\/title\s*>/i.exec(src);
  const title = titleMatch ? decodeEntities(titleMatch[1]!).replace(/\s+/g, " ").trim() || undefined : undefined;
  const baseHref = /<base\b[^>]*>/i.exec(src);
  const base = (baseHref && absolute(attr(baseHref[0], "href") ?? "", baseUrl)) || baseUrl;
  for (const name of DROP) {
    // a dropped element that is never closed takes the rest of the document with it
    src = src.replace(new RegExp(`<${name}\\b[^>]*?(?:/>|>[\\s\\S]*?(?:</${name}\\s*>|$))`, "gi"), " ");
  }

  const out: string[] = [];
  let pre = 0;
  let link: { href: string; start: number } | undefined;
  const text = (raw: string) => {
    if (raw.length === 0) return;
    const decoded = decodeEntities(raw);
    // whitespace inside <pre> is shielded from the clean-up below
    out.push(pre > 0 ? decoded.replace(/ /g, "\ue000").replace(/\t/g, "\ue001") : decoded.replace(/[ \t\r\n\f]+/g, " "));
  };
  const tagRe = /<(\/?)([a-zA-Z][a-zA-Z0-9-]*)((?:[^>"']|"[^"]*"|'[^']*')*)>/g;
  let at = 0;
  for (let m = tagRe.exec(src); m; m = tagRe.exec(src)) {
    text(src.slice(at, m.index));
    at = m.index + m[0].length;
    const closing = m[1] === "/";
    const name = m[2]!.toLowerCase();
    const heading = /^h([1-6])$/.exec(name);
    if (heading) {
      out.push(closing ? "\n\n" : `\n\n${"#".repeat(Number(heading[1]))} `);
    } else if (name === "li") {
      out.push(closing ? "\n" : "\n- ");
    } else if (name === "br") {
      out.push("\n");
    } else if (name === "pre") {
      pre = Math.max(0, pre + (closing ? -1 : 1));
      out.push("\n\n");
    } else if (name === "td" || name === "th") {
      if (!closing) out.push(" | ");
    } else if (name === "img" && !closing) {
      const alt = attr(m[0], "alt")?.trim();
      if (alt) out.push(`[image: ${alt}]`);
    } else if (name === "a") {
      if (!closing) {
        const href = attr(m[0], "href");
        const url = href && !href.startsWith("#") ? absolute(href, base) : undefined;
        link = url ? { href: url, start: out.length } : undefined;
      } else if (link) {
        const label = out.slice(link.start).join("").replace(/\s+/g, " ").trim();
        if (label !== link.href) out.push(label ? ` (${link.href})` : link.href);
        link = undefined;
      }
    } else if (BLOCK.has(name)) {
      out.push("\n\n");
    }
  }
  text(src.slice(at));

  const body = out.join("")
    .split("\n")
    .map((line) => line.trim())
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim()
    .replace(/\ue000/g, " ")
    .replace(/\ue001/g, "\t");
  return { ...(title ? { title } : {}), text: body };
}
