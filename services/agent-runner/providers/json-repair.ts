/**
 * Parses tool-call argument JSON, repairing it only when the repair cannot change its meaning:
 *  - empty text -> `{}`;
 *  - a Markdown code fence around the object is removed;
 *  - trailing garbage after one complete top-level object is cut (`{"a":1}}`, `{"a":1} <eos>`);
 *  - missing closing braces/brackets are added when the text ends right after a complete
 *    string, object, array or literal (`{"path":"a.txt"`), never inside a string or number
 *    (a truncated value would silently change the call).
 * Anything else is an error the model is told about, so it can call the tool again.
 */
import type { ToolCallBlock } from "./types.js";

export type ParsedArgs = { args: Record<string, unknown>; error?: undefined; repaired: boolean } | { args: Record<string, unknown>; error: string; repaired: false };

export function parseToolArgs(raw: string): ParsedArgs {
  const text = raw.trim();
  if (text === "") return { args: {}, repaired: false };
  const direct = tryObject(text);
  if (direct.ok) return { args: direct.value, repaired: false };
  const unfenced = text.replace(/^```(?:json)?\s*/i, "").replace(/\s*```$/, "");
  const repaired = unfenced !== text && tryObject(unfenced).ok ? unfenced : repair(unfenced);
  if (repaired !== undefined) {
    const second = tryObject(repaired);
    if (second.ok) return { args: second.value, repaired: true };
  }
  return { args: {}, error: `the arguments are not a valid JSON object (${direct.error}): ${text.slice(0, 200)}`, repaired: false };
}

/** A tool call whose arguments came as JSON text: parsed (repaired when safe), or carrying argsError. */
export function toolCallFromJson(id: string, name: string, json: string): ToolCallBlock {
  const parsed = parseToolArgs(json);
  return parsed.error !== undefined ? { type: "tool_call", id, name, args: {}, argsError: parsed.error } : { type: "tool_call", id, name, args: parsed.args };
}

function tryObject(text: string): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  try {
    const value: unknown = JSON.parse(text);
    if (value === null || typeof value !== "object" || Array.isArray(value)) return { ok: false, error: "not an object" };
    return { ok: true, value: value as Record<string, unknown> };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}

/** The repaired text, or undefined when no safe repair exists. */
function repair(text: string): string | undefined {
  if (!text.startsWith("{")) return undefined;
  const stack: string[] = [];
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === "{") stack.push("}");
    else if (c === "[") stack.push("]");
    else if (c === "}" || c === "]") {
      if (stack.pop() !== c) return undefined;
      // the top-level object is complete: whatever follows is garbage
      if (stack.length === 0) return i === text.length - 1 ? undefined : text.slice(0, i + 1);
    }
  }
  if (inString || stack.length === 0) return undefined;
  const tail = text.trimEnd();
  if (!/("|\}|\]|\btrue|\bfalse|\bnull)$/.test(tail)) return undefined;
  return tail + stack.reverse().join("");
}
