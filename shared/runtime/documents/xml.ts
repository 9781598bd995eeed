/**
 * A small scan of the XML parts of office documents (ooxml.ts, odf.ts):
 * element starts and ends and the text between them, in document order. It reads nothing else: a
 * DOCTYPE, comments and processing instructions are skipped, no DTD or external entity is
 * loaded, and only the five predefined entities and numeric character references are decoded
 * (any other reference stays as written). A "<" that starts no markup it can read is text.
 * Elements are named by their local name (the namespace prefix dropped), since writers choose
 * their prefixes.
 */

export interface XmlVisitor {
  /** an element starts (`empty`: it ends at once, `<x/>`, and no `end` follows); `attrs` is its raw attribute text */
  start?(name: string, attrs: string, empty: boolean): void;
  end?(name: string): void;
  /** decoded character data (a CDATA section as it is) */
  text?(text: string): void;
  /** checked after each element end: true stops the scan */
  done?(): boolean;
}

const START_TAG = /<([^\s/>!?]+)((?:\s+[^\s=/>]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>/y;
const END_TAG = /<\/([^\s>]+)\s*>/y;

/**
 * Calls the visitor for each element start and end and each run of text, in order. A comment,
 * CDATA section, processing instruction or declaration without its end ends the scan (found with
 * indexOf, so no input makes it slower than linear for them).
 */
export function scanXml(xml: string, visitor: XmlVisitor): void {
  const startTag = new RegExp(START_TAG.source, "y");
  const endTag = new RegExp(END_TAG.source, "y");
  let at = 0;
  while (at < xml.length) {
    const lt = xml.indexOf("<", at);
    if (lt < 0) {
      visitor.text?.(decodeXml(xml.slice(at)));
      return;
    }
    if (lt > at) visitor.text?.(decodeXml(xml.slice(at, lt)));
    const skipTo = (close: string, from: number) => {
      const i = xml.indexOf(close, from);
      return i < 0 ? xml.length : i + close.length;
    };
    if (xml.startsWith("<![CDATA[", lt)) {
      const close = xml.indexOf("]]>", lt + 9);
      if (close < 0) return;
      visitor.text?.(xml.slice(lt + 9, close));
      at = close + 3;
    } else if (xml.startsWith("<!--", lt)) at = skipTo("-->", lt + 4);
    else if (xml.startsWith("<?", lt)) at = skipTo("?>", lt + 2);
    else if (xml.startsWith("<!", lt)) at = skipTo(">", lt + 2); // a DOCTYPE: read, never used
    else {
      const tag = xml.startsWith("</", lt) ? endTag : startTag;
      tag.lastIndex = lt;
      const m = tag.exec(xml);
      if (!m) {
        visitor.text?.("<"); // not markup after all
        at = lt + 1;
      } else if (tag === endTag) {
        at = tag.lastIndex;
        visitor.end?.(localName(m[1]!));
        if (visitor.done?.()) return;
      } else {
        at = tag.lastIndex;
        visitor.start?.(localName(m[1]!), m[2] ?? "", m[3] === "/");
      }
    }
  }
}

export function localName(name: string): string {
  return name.slice(name.indexOf(":") + 1);
}

/** the patterns of the attribute names asked for (a handful of fixed names) */
const attrPatterns = new Map<string, RegExp>();

/**
 * An attribute's decoded value from a start tag's raw attributes: `attr(a, "name")` matches an
 * unprefixed `name`, `attr(a, "r:id")` an `id` under any prefix.
 */
export function attr(attrs: string, name: string): string | undefined {
  let re = attrPatterns.get(name);
  if (!re) {
    const colon = name.indexOf(":");
    const prefix = colon < 0 ? "" : "[^\\s=:]+:";
    re = new RegExp(`(?:^|\\s)${prefix}${name.slice(colon + 1)}\\s*=\\s*(?:"([^"]*)"|'([^']*)')`);
    attrPatterns.set(name, re);
  }
  const m = re.exec(attrs);
  return m ? decodeXml(m[1] ?? m[2] ?? "") : undefined;
}

const NAMED: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: "\"", apos: "'" };

/** The five predefined entities and numeric references decoded; anything else left as written. */
export function decodeXml(text: string): string {
  if (!text.includes("&")) return text;
  return text.replace(/&(?:(lt|gt|amp|quot|apos)|#([0-9]{1,7})|#x([0-9a-fA-F]{1,6}));/g, (ref, name?: string, dec?: string, hex?: string) => {
    if (name) return NAMED[name]!;
    const code = dec !== undefined ? Number(dec) : Number.parseInt(hex!, 16);
    const valid = code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff);
    return valid ? String.fromCodePoint(code) : ref;
  });
}
