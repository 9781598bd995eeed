// session-memory: the conversation /new or /reset ended, saved as <workspace>/memory/YYYY-MM-DD-<slug>.md
import { randomBytes } from "node:crypto";
import { link, lstat, mkdir, realpath, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";

const MAX_MESSAGES = 15;
const MAX_CHARS = 2000;
const SLUG_WORDS = 5;
const SLUG_CHARS = 40;

export default async function sessionMemory(event, ctx) {
  if (event.type !== "command" || (event.action !== "new" && event.action !== "reset")) return;
  const c = event.context;
  if (c.ok === false || !c.previousSessionId) return; // refused, or no transcript ended
  if (!Array.isArray(c.previousMessages)) {
    ctx.log.warn("the ended conversation is not available (context.previousMessages missing); nothing saved");
    return;
  }
  const messages = c.previousMessages
    .filter((m) => m && (m.role === "user" || m.role === "assistant") && typeof m.text === "string" && m.text.trim() !== "")
    .slice(-MAX_MESSAGES);
  if (messages.length === 0) return; // nothing was said
  const at = event.timestamp;
  const date = at.toISOString().slice(0, 10);
  const firstUser = c.previousMessages.find((m) => m && m.role === "user" && typeof m.text === "string");
  const slug = slugOf(firstUser?.text ?? "") || at.toISOString().slice(11, 16).replace(":", "");
  const body = [
    `# Session: ${date} ${at.toISOString().slice(11, 16)} UTC`,
    "",
    `- **Session key**: ${event.sessionKey ?? "-"}`,
    `- **Session id**: ${c.previousSessionId}`,
    `- **Ended by**: /${event.action}${c.channel ? ` (${c.channel}${c.senderId ? `, from ${c.senderId}` : ""})` : ""}`,
    "",
    "## Conversation",
    "",
    ...messages.map((m) => `**${m.role}**${timeOf(m.timestamp)}: ${cap(m.text.trim())}\n`),
  ].join("\n");
  const dir = await memoryFolder(ctx.workspace);
  const path = await writeNew(dir, `${date}-${slug}`, body);
  ctx.log.info(`saved ${messages.length} messages to ${path}`);
}

/**
 * `<workspace>/memory`, made when missing; refused when it is anything but a real folder (the
 * agent can write its workspace: a symbolic link there must not lead the conversation elsewhere).
 */
async function memoryFolder(workspace) {
  const dir = join(await realpath(workspace), "memory");
  await mkdir(dir).catch((err) => {
    if (err.code !== "EEXIST") throw err;
  });
  const st = await lstat(dir);
  if (!st.isDirectory()) throw new Error(`${dir} is not a folder (${st.isSymbolicLink() ? "a symbolic link" : "a file"}): nothing saved; make memory/ a real folder in the workspace`);
  return dir;
}

/** the first words of `text`: lower-case letters and digits joined by '-' ("" when none) */
function slugOf(text) {
  const words = text.toLowerCase().normalize("NFKD").replace(/[\u0300-\u036f]/g, "").match(/[a-z0-9]+/g) ?? [];
  return words.slice(0, SLUG_WORDS).join("-").slice(0, SLUG_CHARS).replace(/-+$/, "");
}

function timeOf(iso) {
  return typeof iso === "string" && /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(iso) ? ` (${iso.slice(11, 16)})` : "";
}

function cap(text) {
  return text.length > MAX_CHARS ? `${text.slice(0, MAX_CHARS)}…` : text;
}

/**
 * Creates `<base>.md`, else `<base>-2.md`, `<base>-3.md`, …: an existing file is never overwritten.
 * The body goes to a hidden temporary file first, linked under the name once whole (a link fails
 * on an existing name), so nothing ever reads a half-written memory file.
 */
async function writeNew(dir, base, body) {
  const tmp = join(dir, `.${base}.${randomBytes(6).toString("hex")}.tmp`);
  await writeFile(tmp, body, { flag: "wx" });
  try {
    for (let n = 1; n < 1000; n++) {
      const path = join(dir, `${base}${n === 1 ? "" : `-${n}`}.md`);
      try {
        await link(tmp, path);
        return path;
      } catch (err) {
        if (err.code !== "EEXIST") throw err;
      }
    }
    throw new Error(`memory/${base}.md and 998 numbered ones exist already`);
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
}
