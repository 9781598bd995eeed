/**
 * `lurkbot`: the operator's command. `setup`, `start` (the launcher), `status`, `tail`, `send`,
 * `chat`, `streams`, `sessions`, `usage`, `auth`, `security audit` and the other admin commands. Exit codes: 0 ok, 1 failed, 2 bus unreachable, 64 usage, 78 config.
 */
import { join } from "node:path";
import { loadConfig, type Env, type LurkConfig } from "../../shared/runtime/config.js";
import { ensureStreams } from "../../shared/runtime/streams.js";
import { MediaStore } from "../../shared/runtime/media.js";
import { agentIdSchema, type Attachment } from "../../shared/contract/index.js";
import { LURKBOT_VERSION } from "../../shared/runtime/version.js";
import { commandUsage, findCommand, parseArgs, usage, type ParsedCommand } from "./args.js";
import { configuredChannelActors, launcherActors, selectActors } from "./actors.js";
import { connectCli, currentStreamReplicas } from "./bus.js";
import { busLabel } from "./ssh-bus.js";
import { convertTables } from "../../shared/runtime/channel/tables.js";
import { TerminalChannel } from "./channel.js";
import { attachLocalFile, describeReceived, saveReceivedFiles, type ReceivedFile } from "./files.js";
import { chat } from "./chat.js";
import { EXIT, toCliError, UsageError } from "./errors.js";
import { Launcher } from "./launcher.js";
import { cmdInit } from "./init.js";
import { runSetup, writeSystemdFiles } from "./setup.js";
import { formatStatus, gatherStatus } from "./status.js";
import { tail } from "./tail.js";
import { cmdTools } from "./tools.js";
import { cmdSessions, ttyConfirm } from "./sessions.js";
import { cmdUsage } from "./usage.js";
import { cmdApprovals } from "./approvals.js";
import { cmdCron } from "./cron.js";
import { cmdPairing } from "./pairing.js";
import { cmdSubagents } from "./subagents.js";
import { cmdHeartbeat } from "./heartbeat.js";
import { cmdMcp } from "./mcp.js";
import { cmdHooks } from "./hooks.js";
import { cmdConfig } from "./config-cmd.js";
import { LinePrompter } from "./onboard/prompt.js";
import { cmdAuth } from "./auth.js";
import { cmdSecurity } from "./security-audit.js";
import { cmdDaemon } from "./daemon.js";
import { cmdOnboard } from "./onboard/command.js";
import { withStoredSecrets } from "./stored-secrets.js";
import { cmdAcp } from "./acp/command.js";

const out = (line: string) => process.stdout.write(line + "\n");
const err = (line: string) => process.stderr.write(line + "\n");

const DEFAULT_REPLY_TIMEOUT_SEC = 120;

function config(env: Env): LurkConfig {
  return loadConfig(env);
}

async function cmdSetup(p: ParsedCommand, env: Env): Promise<number> {
  const cfg = config(env);
  const result = runSetup(cfg, out);
  if (typeof p.options.systemd === "string") writeSystemdFiles(p.options.systemd, cfg, result, out, env);
  out(`LurkBot home: ${cfg.home} — next: \`npx lurkbot start\`${cfg.model ? "" : " (and set a model: LURKBOT_MODEL=openai/gpt-4o-mini with OPENAI_API_KEY, or \"model\" in config.json)"}`);
  return EXIT.ok;
}

async function cmdStart(p: ParsedCommand, env: Env): Promise<number> {
  const cfg = config(env);
  // --only names exactly what runs; otherwise the core (mcp when an MCP server is enabled) plus the enabled channels
  const only = p.options.only as string | undefined;
  const actors = only === undefined ? [...launcherActors(cfg), ...configuredChannelActors(cfg)] : selectActors(only);
  const launcher = new Launcher({
    config: cfg,
    env,
    actors,
    singleProcess: p.options["single-process"] === true,
    report: { say: out, warn: err },
  });
  return launcher.run();
}

async function cmdStatus(p: ParsedCommand, env: Env): Promise<number> {
  const cfg = config(env);
  const nc = await connectCli(cfg, env);
  try {
    const report = await gatherStatus(nc, busLabel(cfg), Date.now(), { prefix: cfg.nats.prefix, expected: launcherActors(cfg) });
    if (p.options.json) out(JSON.stringify(report, null, 2));
    else process.stdout.write(formatStatus(report));
    return EXIT.ok;
  } finally {
    await nc.close().catch(() => undefined);
  }
}

async function cmdTail(p: ParsedCommand, env: Env): Promise<number> {
  const cfg = config(env);
  const nc = await connectCli(cfg, env, { reconnect: true });
  const abort = new AbortController();
  const stop = () => abort.abort();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect") err(`(disconnected from NATS; reconnecting to ${busLabel(cfg)}…)`);
      else if (s.type === "reconnect") err("(reconnected)");
    }
  })().catch(() => undefined);
  const filter = p.args[0];
  const prefix = cfg.nats.prefix;
  await tail(nc, prefix, filter, (line) => process.stdout.write(line), abort.signal, () => {
    err(`listening on ${prefix}.evt.> and ${prefix}.run.evt.>${filter ? ` matching "${filter}"` : ""} at ${busLabel(cfg)} (Ctrl-C stops)`);
  });
  await nc.close().catch(() => undefined);
  return EXIT.ok;
}

function timeoutMs(p: ParsedCommand): number {
  return Math.round(((p.options.timeout as number | undefined) ?? DEFAULT_REPLY_TIMEOUT_SEC) * 1000);
}

async function cmdSend(p: ParsedCommand, env: Env): Promise<number> {
  const cfg = config(env);
  const text = p.args[0] ?? "";
  const file = p.options.file as string | undefined;
  if (!text.trim() && !file) throw new UsageError("the message is empty; write the text to send, e.g. lurkbot send \"hello\", or send a file with --file PATH.", "send");
  const session = p.options.session as string | undefined;
  const nc = await connectCli(cfg, env, { reconnect: true });
  try {
    const media = new MediaStore(nc, cfg.media);
    const downloads = downloadsDir(cfg);
    const received: ReceivedFile[] = [];
    const receive = async (attachments: readonly Attachment[]) => {
      for (const f of await saveReceivedFiles(media, attachments, downloads)) {
        received.push(f);
        if (!p.options.json) err(`(${describeReceived(f)})`);
      }
    };
    const notices: Promise<void>[] = [];
    // notices of this conversation that arrive meanwhile (e.g. files the agent sends with the message tool)
    const channel = new TerminalChannel(nc, cfg.nats.prefix, session, (msg) => {
      if (msg.text && !p.options.json) err(`(${msg.kind}) ${msg.text}`);
      if (msg.attachments.length > 0) notices.push(receive(msg.attachments));
    });
    await channel.open();
    const attachments = file ? [await attachLocalFile(media, file)] : [];
    const result = await channel.send(text, timeoutMs(p), {
      onIntermediate: (msg) => err(`(${msg.kind}) ${msg.text}`),
    }, attachments);
    channel.close();
    await Promise.all(notices);
    await receive(result.attachments);
    if (p.options.json) {
      out(JSON.stringify({
        reply: result.reply,
        kind: result.kind,
        runId: result.runId,
        ...(result.sessionKey ? { sessionKey: result.sessionKey } : {}),
        ...(result.usage ? { usage: result.usage } : {}),
        ...(result.errorCode ? { errorCode: result.errorCode } : {}),
        ...(received.length > 0 ? { files: received } : {}),
      }));
    } else if (result.reply) {
      // markdown tables as a padded code block (a terminal renders none); --json keeps the reply as written
      out(convertTables(result.reply, "code"));
    }
    return result.kind === "error" ? EXIT.failed : EXIT.ok;
  } finally {
    await nc.close().catch(() => undefined);
  }
}

/** where the terminal saves the files it receives */
function downloadsDir(cfg: LurkConfig): string {
  return join(cfg.home, "downloads");
}

async function cmdChat(p: ParsedCommand, env: Env): Promise<number> {
  const agentId = p.options.agent as string | undefined;
  const validAgent = agentId === undefined ? undefined : agentIdSchema.safeParse(agentId);
  if (validAgent && !validAgent.success) throw new UsageError(`--agent "${agentId}" is not an agent id (${validAgent.error.issues[0]?.message}, at most 64).`, "chat");
  const cfg = config(env);
  const nc = await connectCli(cfg, env, { reconnect: true });
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect") err(`(disconnected from NATS at ${busLabel(cfg)}; reconnecting…)`);
      else if (s.type === "reconnect") err("(reconnected)");
    }
  })().catch(() => undefined);
  try {
    const session = p.options.session as string | undefined;
    const shellTimeout = p.options["shell-timeout"] as number | undefined;
    return await chat(nc, {
      prefix: cfg.nats.prefix, timeoutMs: timeoutMs(p), media: new MediaStore(nc, cfg.media), downloadsDir: downloadsDir(cfg),
      showThinking: p.options.thinking === true, allowShell: p.options["allow-shell"] === true,
      // !commands get the operator's own environment, not the secrets stored for LurkBot
      env: process.env,
      ...(session ? { session } : {}), ...(agentId ? { agentId } : {}),
      ...(shellTimeout !== undefined ? { shellTimeoutMs: Math.round(shellTimeout * 1000) } : {}),
    });
  } finally {
    await nc.close().catch(() => undefined);
  }
}

async function cmdStreams(p: ParsedCommand, env: Env): Promise<number> {
  const cfg = config(env);
  const waitMs = ((p.options.wait as number | undefined) ?? 10) * 1000;
  const deadline = Date.now() + waitMs;
  // systemd runs this right after nats-server starts: give the server time to listen
  for (;;) {
    try {
      const nc = await connectCli(cfg, env, { user: "admin" });
      try {
        const replicas = p.options.replicas === undefined ? await currentStreamReplicas(nc) : Math.round(p.options.replicas as number);
        await ensureStreams(nc, cfg.nats.prefix, replicas, cfg.media);
        out(`JetStream streams ready on ${busLabel(cfg)} (replicas ${replicas})`);
        return EXIT.ok;
      } finally {
        await nc.close().catch(() => undefined);
      }
    } catch (e) {
      const ce = toCliError(e);
      if (ce.exitCode !== EXIT.busDown || Date.now() > deadline) throw ce;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** One secret from stdin: without echo on a terminal, the first line of a pipe. */
async function readSecretLine(message: string): Promise<string> {
  const prompt = new LinePrompter(process.stdin, process.stderr);
  try {
    return await prompt.secret({ id: "secret", message, optional: true });
  } catch {
    return "";
  } finally {
    prompt.close();
  }
}

const HANDLERS: Record<string, (p: ParsedCommand, env: Env) => Promise<number>> = {
  setup: cmdSetup,
  init: (p, env) => cmdInit(p, env, out),
  start: cmdStart,
  status: cmdStatus,
  tail: cmdTail,
  send: cmdSend,
  chat: cmdChat,
  streams: cmdStreams,
  tools: (p, env) => cmdTools(p, env, { out }),
  sessions: (p, env) => cmdSessions(p, env, { out, err, confirm: ttyConfirm }),
  usage: (p, env) => cmdUsage(p, env, { out }),
  approvals: (p, env) => cmdApprovals(p, env, { out }),
  cron: (p, env) => cmdCron(p, env, { out }),
  pairing: (p, env) => cmdPairing(p, env, { out }),
  subagents: (p, env) => cmdSubagents(p, env, { out }),
  heartbeat: (p, env) => cmdHeartbeat(p, env, { out }),
  hooks: (p, env) => cmdHooks(p, env, { out }),
  mcp: (p, env) => cmdMcp(p, env, { out }),
  config: (p, env) => cmdConfig(p, env, { out, err, readSecret: (message) => readSecretLine(message) }),
  auth: (p, env) => cmdAuth(p, env, { out, input: process.stdin }),
  acp: (p, env) => cmdAcp(p, env),
  daemon: (p, env) => cmdDaemon(p, env, { out, err }),
  security: (p, env) => cmdSecurity(p, env, { out: (text) => process.stdout.write(text), color: process.stdout.isTTY === true && !env.NO_COLOR }),
  onboard: (p, env) => cmdOnboard(p, env, { out, err, input: process.stdin, output: process.stdout, start: (startEnv) => cmdStart(parseArgs(["start"]) as ParsedCommand, startEnv) }),
};

export async function main(argv: string[], env: Env = process.env): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs(argv);
  } catch (e) {
    const ce = toCliError(e);
    err(`lurkbot: ${ce.message}`);
    if (e instanceof UsageError) {
      const cmd = e.command ? findCommand(e.command) : undefined;
      process.stderr.write("\n" + (cmd ? commandUsage(cmd) : usage()));
    }
    return ce.exitCode;
  }
  if ("global" in parsed) {
    if (parsed.global === "version") out(`lurkbot ${LURKBOT_VERSION}`);
    else process.stdout.write(usage());
    return EXIT.ok;
  }
  if (parsed.help) {
    process.stdout.write(commandUsage(parsed.command));
    return EXIT.ok;
  }
  if (parsed.command.name === "help") {
    const name = parsed.args[0];
    if (name === undefined) {
      process.stdout.write(usage());
      return EXIT.ok;
    }
    const cmd = findCommand(name);
    if (!cmd) {
      err(`lurkbot: unknown command "${name}".`);
      process.stderr.write("\n" + usage());
      return EXIT.usage;
    }
    process.stdout.write(commandUsage(cmd));
    return EXIT.ok;
  }
  try {
    // the secrets `lurkbot onboard` stored (credentials/secrets.json) join the environment; onboard reads them itself
    const storedEnv = parsed.command.name === "onboard" ? env : withStoredSecrets(env);
    // --ssh TARGET: the bus of another host through an SSH tunnel (validated with the config)
    const commandEnv = typeof parsed.options.ssh === "string" ? { ...storedEnv, LURKBOT_NATS_SSH: parsed.options.ssh } : storedEnv;
    return await HANDLERS[parsed.command.name]!(parsed, commandEnv);
  } catch (e) {
    const ce = toCliError(e);
    err(`lurkbot ${parsed.command.name}: ${ce.message}`);
    if (e instanceof UsageError) process.stderr.write("\n" + commandUsage(parsed.command));
    return ce.exitCode;
  }
}

// run when executed (node dist/services/cli/main.js, or bin.mjs importing it)
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e) => {
    err(`lurkbot: unexpected failure: ${e instanceof Error ? e.stack ?? e.message : String(e)}`);
    process.exit(EXIT.failed);
  },
);
