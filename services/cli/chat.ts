/**
 * `lurkbot chat`: an interactive terminal conversation. Streams the reply's text as it is
 * generated, shows tool calls dimmed, prints the final reply when nothing was streamed.
 * `/exit` or Ctrl-D quits (after pending replies when the input is not a terminal); Ctrl-C
 * quits at once; other slash commands go to the router as messages. Messages go one at a time,
 * except the commands that act on the run in flight (`/approve`, `/deny`, `/stop`): those go at
 * once, since that run may be waiting for exactly them. While an approval request shown here is
 * open, a line that is just `y`/`yes` or `n`/`no` answers the oldest one (`/approve ID`,
 * `/deny ID`). `/file PATH [text]` sends a local file (quote a path with spaces); files the
 * agent sends are saved under `downloadsDir` (files.ts) and their paths printed.
 */
import { createInterface } from "node:readline";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Attachment, OutboundMessage, RunEvent } from "../../shared/contract/index.js";
import type { MediaStore } from "../../shared/runtime/media.js";
import { TerminalChannel, type ReplyResult } from "./channel.js";
import { toCliError } from "./errors.js";
import { attachLocalFile, describeReceived, saveReceivedFiles } from "./files.js";

export interface ChatOptions {
  prefix: string;
  session?: string;
  timeoutMs: number;
  /** for /file and the files the agent sends */
  media: MediaStore;
  downloadsDir: string;
  input?: NodeJS.ReadableStream;
  output?: NodeJS.WritableStream & { isTTY?: boolean };
}

const useColor = (out: { isTTY?: boolean }) => !!out.isTTY && !process.env.NO_COLOR;

/** commands for the run in flight: sent at once, not queued behind its reply */
const RUN_COMMAND = /^\/(approve|deny|stop)(\s|$)/i;
const YES_NO = /^(y|yes|n|no)$/i;
/** `/file PATH [text]` or `/file "PATH WITH SPACES" [text]` */
const FILE_COMMAND = /^\/file\s+(?:"([^"]+)"|(\S+))\s*([\s\S]*)$/i;

export async function chat(nc: NatsConnection, opts: ChatOptions): Promise<number> {
  const input = opts.input ?? process.stdin;
  const output = opts.output ?? process.stdout;
  const color = useColor(output);
  const dim = (s: string) => (color ? `\x1b[2m${s}\x1b[0m` : s);
  const red = (s: string) => (color ? `\x1b[31m${s}\x1b[0m` : s);
  const bold = (s: string) => (color ? `\x1b[1m${s}\x1b[0m` : s);
  const write = (s: string) => output.write(s);

  let midLine = false;
  const line = (s: string) => {
    if (midLine) write("\n");
    midLine = false;
    write(s + "\n");
  };

  const rl = createInterface({ input, output, prompt: "you> ", terminal: !!(input as { isTTY?: boolean }).isTTY && !!output.isTTY });
  const interactive = !!(input as { isTTY?: boolean }).isTTY;
  // lines wait in the stream until the handlers are attached (prompt() resumes it)
  rl.pause();
  let closed = false;
  let interrupted = false;
  const prompt = () => {
    if (closed) return;
    if (interactive) rl.prompt(true);
    else rl.resume();
  };
  const receive = async (attachments: readonly Attachment[]) => {
    for (const f of await saveReceivedFiles(opts.media, attachments, opts.downloadsDir)) line(dim(`  📎 ${describeReceived(f)}`));
  };
  const channel = new TerminalChannel(nc, opts.prefix, opts.session, (msg: OutboundMessage) => {
    if (msg.text) line(`${msg.kind === "error" ? red("lurkbot (error)>") : bold("lurkbot>")} ${msg.text}`);
    void receive(msg.attachments).then(() => prompt());
  });
  await channel.open();

  if (interactive) line(dim(`LurkBot chat — session ${opts.session ?? "main"} (conversation ${channel.conversation}). /exit or Ctrl-D quits.`));

  // one message at a time: lines typed while a reply streams wait their turn
  let queue: Promise<void> = Promise.resolve();
  let failures = 0;
  /** approval requests shown for the runs in flight, oldest first: a y / n line answers the first */
  const openApprovals: string[] = [];
  const closeApproval = (id: string) => {
    const at = openApprovals.indexOf(id);
    if (at >= 0) openApprovals.splice(at, 1);
  };

  const ask = async (text: string) => {
    if (interrupted) return;
    let streamed = false;
    const onRunEvent = (ev: RunEvent) => {
      const e = ev.event;
      if (e.kind === "message_delta") {
        if (!streamed) {
          if (midLine) write("\n");
          write(`${bold("lurkbot>")} `);
          streamed = true;
        }
        write(e.text);
        midLine = !e.text.endsWith("\n");
      } else if (e.kind === "tool_start") {
        line(dim(`  ⚙ ${e.name} ${JSON.stringify(e.args).slice(0, 120)}`));
        streamed = false;
      } else if (e.kind === "tool_end") {
        line(dim(`  ${e.isError ? "✗" : "✓"} ${e.name} (${Math.round(e.durationMs)} ms)${e.preview ? ` ${e.preview.replace(/\s+/g, " ").slice(0, 100)}` : ""}`));
      } else if (e.kind === "approval_pending") {
        line(dim(`  … ${e.name} waits for an approval: /approve ${e.approvalId} or /deny ${e.approvalId}`));
      }
    };
    /** the approvals this message's run asked for: closed when it ends */
    const asked: string[] = [];
    const onIntermediate = (msg: OutboundMessage) => {
      line(`${bold("lurkbot (approval)>")} ${msg.text}`);
      const id = msg.kind === "approval" ? msg.approval?.approvalId : undefined;
      if (id && !openApprovals.includes(id)) {
        openApprovals.push(id);
        asked.push(id);
        line(dim(`  y approves, n denies (${id})`));
      }
    };
    let result: ReplyResult;
    try {
      const file = FILE_COMMAND.exec(text);
      const attachments = file ? [await attachLocalFile(opts.media, file[1] ?? file[2]!)] : [];
      result = await channel.send(file ? file[3]!.trim() : text, opts.timeoutMs, { onRunEvent, onIntermediate }, attachments);
    } catch (err) {
      if (interrupted) return;
      failures++;
      line(red(`error: ${toCliError(err).message}`));
      prompt();
      return;
    } finally {
      asked.forEach(closeApproval);
    }
    if (result.kind === "error") {
      failures++;
      line(`${red("lurkbot (error)>")} ${result.reply}`);
    } else if (!streamed && result.reply) {
      line(`${bold("lurkbot>")} ${result.reply}`);
    } else if (midLine) {
      line("");
    }
    await receive(result.attachments);
    prompt();
  };

  return new Promise<number>((resolve) => {
    let closing = false;
    const finish = async (waitForReplies: boolean) => {
      if (closing) return;
      closing = true;
      if (waitForReplies) await queue;
      channel.close();
      if (midLine || interactive) write("\n");
      resolve(failures > 0 && !interactive ? 1 : 0);
    };
    rl.on("line", (raw) => {
      const text = raw.trim();
      if (!text) {
        prompt();
        return;
      }
      if (text === "/exit" || text === "/quit") {
        rl.close();
        return;
      }
      let command = text;
      if (YES_NO.test(text) && openApprovals.length > 0) {
        const id = openApprovals[0]!;
        command = `/${/^y/i.test(text) ? "approve" : "deny"} ${id}`;
        line(dim(`  ${command}`));
      }
      const decided = /^\/(approve|deny)\s+(\S+)/i.exec(command)?.[2];
      if (decided) closeApproval(decided);
      if (RUN_COMMAND.test(command)) {
        const now = ask(command);
        queue = Promise.all([queue, now]).then(() => undefined);
      } else {
        queue = queue.then(() => ask(command));
      }
    });
    // Ctrl-C: quit now
    rl.on("SIGINT", () => {
      interrupted = true;
      rl.close();
    });
    // Ctrl-D, /exit, or the end of piped input: wait for the replies still coming
    rl.on("close", () => {
      closed = true;
      void finish(!interrupted);
    });
    prompt();
  });
}
