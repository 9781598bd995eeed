/**
 * `lurkbot chat`: an interactive terminal conversation. Streams the reply's text as it is
 * generated, shows tool calls dimmed, prints the final reply when nothing was streamed.
 * `/exit` or Ctrl-D quits (after pending replies when the input is not a terminal); Ctrl-C
 * quits at once (or stops a running `!command`); other slash commands go to the router as
 * messages. Messages go one at a time, except the commands that act on the run in flight
 * (`/approve`, `/deny`, `/stop`, `/abort`): those go at once, since that run may be waiting for
 * exactly them. While an approval request shown here is open, a line that is just `y`/`yes` or
 * `n`/`no` answers the oldest one (`/approve ID`, `/deny ID`). `/file PATH [text]` sends a local
 * file (quote a path with spaces); files the agent sends are saved under `downloadsDir`
 * (files.ts) and their paths printed. Chat's own commands (chat-local.ts): `!command` runs in
 * the operator's shell here (chat-shell.ts; asked once, or `allowShell`), `/agent [ID]` shows or
 * switches the agent, `/thinking on|off` shows the model's thinking dimmed in a `thinking>`
 * block apart from the answer, `/help` lists them and then the router's commands.
 */
import { createInterface } from "node:readline";
import type { NatsConnection } from "@nats-io/transport-node";
import { parseSessionKey, type Attachment, type OutboundMessage, type RunEvent } from "../../shared/contract/index.js";
import type { MediaStore } from "../../shared/runtime/media.js";
import { TerminalChannel, type ReplyResult } from "./channel.js";
import { LOCAL_HELP, parseLocalLine } from "./chat-local.js";
import { localShell, runLocalShell, SHELL_OUTPUT_MAX_BYTES, SHELL_TIMEOUT_MS } from "./chat-shell.js";
import { toCliError } from "./errors.js";
import { attachLocalFile, describeReceived, saveReceivedFiles } from "./files.js";

export interface ChatOptions {
  prefix: string;
  session?: string;
  timeoutMs: number;
  /** for /file and the files the agent sends */
  media: MediaStore;
  downloadsDir: string;
  /** the agent to answer (`--agent`); default: the router's bindings */
  agentId?: string;
  /** show thinking deltas (`--thinking`; `/thinking on|off` toggles) */
  showThinking?: boolean;
  /** run `!command`s without asking (`--allow-shell`); without it a non-terminal input refuses them */
  allowShell?: boolean;
  /** `!command`: time limit (default 10 min), printed-output cap, directory and environment */
  shellTimeoutMs?: number;
  shellOutputMaxBytes?: number;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  input?: NodeJS.ReadableStream;
  output?: NodeJS.WritableStream & { isTTY?: boolean };
}

const useColor = (out: { isTTY?: boolean }) => !!out.isTTY && !process.env.NO_COLOR;

/** commands for the run in flight: sent at once, not queued behind its reply */
const RUN_COMMAND = /^\/(approve|deny|stop|abort)(\s|$)/i;
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
  }, opts.agentId);
  await channel.open();

  if (interactive) line(dim(`LurkBot chat — session ${opts.session ?? "main"} (conversation ${channel.conversation})${opts.agentId ? `, agent ${opts.agentId}` : ""}. /help lists commands; /exit or Ctrl-D quits.`));

  // one message at a time: lines typed while a reply streams wait their turn
  let queue: Promise<void> = Promise.resolve();
  let failures = 0;
  let showThinking = opts.showThinking === true;
  /** for each agent switched to, the choice before it (undefined: the router's bindings) */
  const switchedFrom = new Map<string, string | undefined>();
  /** the session key of the last reply: which agent the router chose */
  let lastSessionKey: string | undefined;
  /** approval requests shown for the runs in flight, oldest first: a y / n line answers the first */
  const openApprovals: string[] = [];
  const closeApproval = (id: string) => {
    const at = openApprovals.indexOf(id);
    if (at >= 0) openApprovals.splice(at, 1);
  };

  const ask = async (text: string) => {
    if (interrupted) return;
    /** answer text is being written on the current line (after a "lurkbot>") */
    let streamed = false;
    /** a thinking> block is being written */
    let thinking = false;
    const onRunEvent = (ev: RunEvent) => {
      const e = ev.event;
      if (e.kind === "thinking_delta") {
        if (!showThinking || !e.text) return;
        if (!thinking) {
          if (midLine) write("\n");
          write(dim("thinking> "));
          thinking = true;
          streamed = false; // the answer after it starts a fresh "lurkbot>" line
        }
        write(dim(e.text));
        midLine = !e.text.endsWith("\n");
      } else if (e.kind === "message_delta") {
        if (!streamed) {
          if (midLine) write("\n");
          write(`${bold("lurkbot>")} `);
          streamed = true;
          thinking = false;
        }
        write(e.text);
        midLine = !e.text.endsWith("\n");
      } else if (e.kind === "tool_start") {
        line(dim(`  ⚙ ${e.name} ${JSON.stringify(e.args).slice(0, 120)}`));
        streamed = false;
        thinking = false;
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
    const agentId = channel.agentId;
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
    if (result.sessionKey) lastSessionKey = result.sessionKey;
    if (result.kind === "error") {
      failures++;
      line(`${red("lurkbot (error)>")} ${result.reply}`);
      // the router does not know the agent this chat switched to: back to the previous choice
      if (agentId !== undefined && channel.agentId === agentId && result.reply.includes(`no agent "${agentId}"`)) {
        channel.agentId = switchedFrom.get(agentId);
        line(dim(`  agent ${agentId} does not exist on the router; this chat goes back to ${channel.agentId ? `agent ${channel.agentId}` : "the default agent (the router's bindings)"}. /agent ID picks another.`));
      }
    } else if (!streamed && result.reply) {
      line(`${bold("lurkbot>")} ${result.reply}`);
    } else if (midLine) {
      line("");
    }
    await receive(result.attachments);
    prompt();
  };

  const agent = (id: string | undefined) => {
    if (id === undefined) {
      const routed = lastSessionKey ? parseSessionKey(lastSessionKey)?.agentId : undefined;
      if (channel.agentId) line(dim(`agent: ${channel.agentId} (chosen for this chat; /agent ID switches)`));
      else line(dim(`agent: ${routed ? `${routed}, ` : ""}the router's choice (its bindings, else the default agent)${routed ? "" : "; it shows in the session key of the first reply"}. /agent ID switches.`));
    } else if (id === channel.agentId) {
      line(dim(`agent: ${id} already answers this chat.`));
    } else {
      switchedFrom.set(id, channel.agentId);
      channel.agentId = id;
      line(dim(`agent: ${id} — the next messages go to it (its own session: agent:${id}:…).`));
    }
    prompt();
  };

  /** undefined: not asked yet; asked once per chat */
  let shellAllowed: boolean | undefined = opts.allowShell ? true : undefined;
  /** stops the `!command` that runs (Ctrl-C) */
  let shellRun: AbortController | undefined;
  const question = (text: string) => new Promise<string>((resolve) => {
    if (closed) return resolve("");
    const onClose = () => resolve("");
    rl.once("close", onClose);
    rl.question(text, (answer) => {
      rl.off("close", onClose);
      resolve(answer);
    });
  });
  const shellTimeoutMs = opts.shellTimeoutMs ?? SHELL_TIMEOUT_MS;
  const shellCap = opts.shellOutputMaxBytes ?? SHELL_OUTPUT_MAX_BYTES;
  const env = opts.env ?? process.env;
  const shell = async (command: string) => {
    if (interrupted) return;
    if (shellAllowed === undefined) {
      if (!interactive) {
        failures++;
        line(red("!command refused: local shell commands need a yes, and the input is not a terminal to ask. Start `lurkbot chat --allow-shell` to allow them."));
        prompt();
        return;
      }
      shellAllowed = /^y(es)?$/i.test((await question(`Allow local shell commands for this chat? They run in your own shell (${localShell(env)}) on this machine, without a sandbox. [y/N] `)).trim());
      if (closed) return;
      if (!shellAllowed) {
        line(dim("Local shell commands stay off for this chat (`lurkbot chat --allow-shell` allows them)."));
        prompt();
        return;
      }
    } else if (!shellAllowed) {
      line(dim("Local shell commands are off for this chat (declined); `lurkbot chat --allow-shell` allows them."));
      prompt();
      return;
    }
    const stop = new AbortController();
    shellRun = stop;
    // Ctrl-C as a signal (the input is not a terminal): stops the command, not chat
    const onSignal = () => stop.abort();
    process.on("SIGINT", onSignal);
    try {
      const r = await runLocalShell(command, {
        cwd: opts.cwd ?? process.cwd(), env, timeoutMs: shellTimeoutMs, maxOutputBytes: shellCap, signal: stop.signal,
        write: (t) => {
          write(t);
          midLine = !t.endsWith("\n");
        },
      });
      if (r.hiddenBytes > 0) line(dim(`… ${r.hiddenBytes} more bytes of output not shown (the first ${shellCap} are)`));
      if (r.spawnError) line(red(`could not run ${localShell(env)}: ${r.spawnError}`));
      else if (r.timedOut) line(red(`stopped: the command ran past the ${formatSec(shellTimeoutMs)} limit (--shell-timeout SEC)`));
      else if (r.interrupted) line(red("stopped (Ctrl-C)"));
      else if (r.code !== 0) line(red(r.code === null ? `ended by ${r.signal}` : `exit code ${r.code}`));
      else if (midLine) line("");
    } finally {
      process.off("SIGINT", onSignal);
      shellRun = undefined;
    }
    prompt();
  };

  const enqueue = (task: () => void | Promise<void>) => {
    queue = queue.then(task);
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
      const local = parseLocalLine(raw);
      if (local) {
        switch (local.kind) {
          case "shell":
            enqueue(() => shell(local.command));
            return;
          case "agent":
            enqueue(() => agent(local.id));
            return;
          case "agent-invalid":
            line(red(`/agent ${local.id}: not an agent id (${local.reason}, at most 64).`));
            prompt();
            return;
          case "thinking":
            // in turn, like /agent: it applies from the next reply on
            enqueue(() => {
              if (local.on !== undefined) showThinking = local.on;
              line(dim(`thinking display ${showThinking ? "on: the model's thinking shows dimmed after thinking>" : "off"}${local.on === undefined ? " (/thinking on|off)" : ""}`));
              prompt();
            });
            return;
          case "thinking-invalid":
            line(red(`/thinking ${local.value}: use /thinking on or /thinking off (the model's thinking level is /think).`));
            prompt();
            return;
          case "help":
            // chat's own commands, then the router's list
            enqueue(() => {
              for (const l of LOCAL_HELP) line(dim(l));
              return ask("/help");
            });
            return;
        }
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
        enqueue(() => ask(command));
      }
    });
    // Ctrl-C: stop the running !command, else quit now
    rl.on("SIGINT", () => {
      if (shellRun) {
        write("^C\n");
        midLine = false;
        shellRun.abort();
        return;
      }
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

function formatSec(ms: number): string {
  return ms >= 60_000 && ms % 60_000 === 0 ? `${ms / 60_000} min` : `${Math.round(ms / 100) / 10} s`;
}
