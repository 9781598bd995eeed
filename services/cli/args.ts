/**
 * A small command-line parser: `lurkbot <command> [options] [args]`, options as `--name`,
 * `--name value` or `--name=value`, `--` ends the options. Each command declares its options
 * and how many positional arguments it takes; anything else is a UsageError that names the
 * problem and points at the command's help.
 */
import { UsageError } from "./errors.js";

export interface OptionSpec {
  type: "boolean" | "string" | "number";
  /** placeholder in the usage text, e.g. NAME */
  value?: string;
  help: string;
}

export interface CommandSpec {
  name: string;
  /** e.g. `"text"` or `[filter]` */
  args: string;
  summary: string;
  /** extra lines under the command's usage */
  details?: string[];
  minArgs: number;
  maxArgs: number;
  options: Record<string, OptionSpec>;
}

export interface ParsedCommand {
  command: CommandSpec;
  args: string[];
  options: Record<string, string | number | boolean | undefined>;
  help: boolean;
}

export const COMMANDS: CommandSpec[] = [
  {
    name: "setup",
    args: "",
    summary: "create LURKBOT_HOME, the workspace, NATS credentials and nats.conf (idempotent)",
    details: ["With --systemd DIR it also writes systemd units and one env file per actor into DIR."],
    minArgs: 0,
    maxArgs: 0,
    options: {
      systemd: { type: "string", value: "DIR", help: "also write systemd units and per-actor env files into DIR" },
    },
  },
  {
    name: "onboard",
    args: "",
    summary: "first-time setup wizard: model (checked live), key, channels (Signal, Matrix and WhatsApp too), skills, hooks; writes config.json, runs setup and init",
    details: [
      "Asks on the terminal (or reads answers from a pipe, one per line; Enter takes the default). Keys and tokens are",
      "read without echo and stored in $LURKBOT_HOME/credentials/secrets.json (mode 600), never in config.json; the",
      "CLI hands them to the actors that need them, and a variable set in the environment wins over the stored one.",
      "config.json keeps what it had besides the answers, is validated before it is written, and written atomically.",
      "--non-interactive asks nothing: every answer is a flag, and a missing one is an error naming the flag (exit 64).",
      "Exit code 1 when cancelled (Ctrl-C, also during a live check, or end of input: nothing is written) or a live check fails",
      "(--non-interactive). A second Ctrl-C ends the command at once (exit 130).",
      "  e.g. OPENAI_API_KEY=sk-... npx lurkbot onboard --non-interactive --yes --provider openai --api-key-env OPENAI_API_KEY --channels web",
    ],
    minArgs: 0,
    maxArgs: 0,
    options: {
      advanced: { type: "boolean", help: "also ask for the NATS URL, workspace, tool profile, exec approvals, heartbeat, voice replies" },
      reset: { type: "boolean", help: "start over from an empty config (after a confirmation; the old one is kept as config.json.bak-<time>)" },
      "non-interactive": { type: "boolean", help: "ask nothing: answers come from the flags below, else their defaults" },
      yes: { type: "boolean", help: "accept the security notice (and --reset's confirmation)" },
      "skip-check": { type: "boolean", help: "do not check the model and channel tokens with live calls" },
      provider: { type: "string", value: "NAME", help: "openai, anthropic, openai-compatible or ollama" },
      model: { type: "string", value: "NAME", help: "the model (default gpt-4o-mini, claude-sonnet-4-5, llama3.2)" },
      "api-key-env": { type: "string", value: "NAME", help: "read the API key from this environment variable (never a key on the command line)" },
      "base-url": { type: "string", value: "URL", help: "the OpenAI-compatible server's base URL, or Ollama's host" },
      channels: { type: "string", value: "LIST", help: "chat channels to enable: web,telegram,discord,slack,signal,matrix,whatsapp or none" },
      "telegram-token-env": { type: "string", value: "NAME", help: "the variable holding the Telegram bot token" },
      "discord-token-env": { type: "string", value: "NAME", help: "the variable holding the Discord bot token" },
      "slack-bot-token-env": { type: "string", value: "NAME", help: "the variable holding the Slack bot token (xoxb-)" },
      "slack-app-token-env": { type: "string", value: "NAME", help: "the variable holding the Slack app-level token (xapp-)" },
      "dm-policy": { type: "string", value: "POLICY", help: "who may DM the bot on Telegram/Discord/Slack/Signal/Matrix/WhatsApp: pairing (default), allowlist, open, disabled" },
      "signal-account": { type: "string", value: "+NUMBER", help: "the bot's Signal number (with --channels …,signal)" },
      "signal-url": { type: "string", value: "URL", help: "signal-cli's HTTP daemon (default http://127.0.0.1:8080)" },
      "matrix-homeserver": { type: "string", value: "URL", help: "the Matrix homeserver (with --channels …,matrix)" },
      "matrix-user-id": { type: "string", value: "@BOT:SERVER", help: "the bot's Matrix user id" },
      "matrix-token-env": { type: "string", value: "NAME", help: "the variable holding the bot's Matrix access token" },
      "whatsapp-phone-number-id": { type: "string", value: "ID", help: "the WhatsApp business number's Phone number ID (with --channels …,whatsapp)" },
      "whatsapp-token-env": { type: "string", value: "NAME", help: "the variable holding the WhatsApp permanent access token" },
      "whatsapp-app-secret-env": { type: "string", value: "NAME", help: "the variable holding the Meta app's App secret" },
      "whatsapp-verify-token-env": { type: "string", value: "NAME", help: "the variable holding the webhook verify token (default: one is generated)" },
      hooks: { type: "string", value: "LIST", help: "bundled hooks to enable: command-logger,boot-md,session-memory or none (default: keep)" },
      "nats-url": { type: "string", value: "URL", help: "advanced: the NATS URL" },
      workspace: { type: "string", value: "DIR", help: "advanced: the workspace" },
      "tool-profile": { type: "string", value: "NAME", help: "advanced: minimal, coding, messaging or full" },
      "exec-approval": { type: "string", value: "MODE", help: "advanced: approvals for exec: off, on-miss or always" },
      heartbeat: { type: "string", value: "on|off", help: "advanced: the periodic HEARTBEAT.md check" },
      tts: { type: "string", value: "MODE", help: "advanced: voice replies: off, inbound, tagged or always" },
    },
  },
  {
    name: "init",
    args: "",
    summary: "create the agent workspace with starting files (SOUL.md, USER.md, AGENTS.md, ...)",
    details: ["Existing files are kept unless --force. Without --workspace: the configured workspace (LURKBOT_WORKSPACE or $LURKBOT_HOME/workspace)."],
    minArgs: 0,
    maxArgs: 0,
    options: {
      workspace: { type: "string", value: "DIR", help: "the workspace directory to create or fill" },
      force: { type: "boolean", help: "replace existing files with the templates" },
    },
  },
  {
    name: "start",
    args: "",
    summary: "start nats-server (if none answers) and every actor; Ctrl-C stops them all",
    minArgs: 0,
    maxArgs: 0,
    options: {
      "single-process": { type: "boolean", help: "host all actors in this process (each keeps its own NATS user)" },
      only: { type: "string", value: "A,B", help: "start only these actors (e.g. agent-runner on a second host)" },
    },
  },
  {
    name: "daemon",
    args: "install|uninstall|status|start|stop|restart",
    summary: "LurkBot as your own background service: a systemd user unit (Linux) or a launchd agent (macOS)",
    details: [
      "  daemon install [--dry-run]     write ~/.config/systemd/user/lurkbot.service (runs `lurkbot start`), enable and",
      "                                 start it, and `loginctl enable-linger $USER` so it runs without a login;",
      "                                 macOS: ~/Library/LaunchAgents/bot.lurk.gateway.plist, `launchctl bootstrap gui/<uid>`",
      "  daemon uninstall [--dry-run]   stop, disable and remove it",
      "  daemon status [--json]         the manager's state, main pid, since when, the last log lines; whether the bus answers",
      "  daemon start|stop|restart      through systemctl --user (launchctl on macOS)",
      "No root needed and no secrets in the unit: the launcher reads them from $LURKBOT_HOME/credentials/.",
      "For system units installed as root see `lurkbot setup --systemd DIR`. Exit code 1 when a step fails,",
      "and from status when the service is not running.",
    ],
    minArgs: 1,
    maxArgs: 1,
    options: {
      "dry-run": { type: "boolean", help: "print the unit and the commands; write and run nothing" },
      json: { type: "boolean", help: "status: print JSON" },
    },
  },
  {
    name: "status",
    args: "",
    summary: "list every running actor instance on the bus ($SRV INFO/STATS)",
    minArgs: 0,
    maxArgs: 0,
    options: { json: { type: "boolean", help: "print the instances as JSON" } },
  },
  {
    name: "tail",
    args: "[filter]",
    summary: "print actor and run events as they happen (Ctrl-C stops)",
    details: [
      "filter: a subject pattern (has '.', '*' or '>', e.g. lurk.evt.router.>) or a substring of subject and body.",
    ],
    minArgs: 0,
    maxArgs: 1,
    options: {},
  },
  {
    name: "send",
    args: "\"text\"",
    summary: "send one message through the terminal channel and print the reply",
    details: [
      "Exit code 1 when the reply is an error or none arrives in time.",
      "Files the agent sends back are saved under $LURKBOT_HOME/downloads/ (the path is printed).",
    ],
    minArgs: 0,
    maxArgs: 1,
    options: {
      session: { type: "string", value: "NAME", help: "session name (default: main)" },
      file: { type: "string", value: "PATH", help: "send this file with the message (an image the model sees, or a file for media_save)" },
      json: { type: "boolean", help: "print {reply, kind, runId, sessionKey, usage, files} as JSON" },
      timeout: { type: "number", value: "SEC", help: "seconds to wait for the reply (default 120)" },
    },
  },
  {
    name: "chat",
    args: "",
    summary: "talk to LurkBot in the terminal (/exit or Ctrl-D quits)",
    details: [
      "In chat: /help lists chat's commands and the router's; !COMMAND runs COMMAND in your own shell on this",
      "machine (no sandbox; output stays local, not sent to the agent; asked once per chat); /agent [ID] shows",
      "or switches the agent; /thinking on|off shows the model's thinking; /file PATH [text] sends a file.",
    ],
    minArgs: 0,
    maxArgs: 0,
    options: {
      session: { type: "string", value: "NAME", help: "session name (default: main)" },
      agent: { type: "string", value: "ID", help: "the agent that answers (default: the router's bindings, i.e. the default agent)" },
      thinking: { type: "boolean", help: "show the model's thinking as it streams, dimmed, apart from the answer" },
      "allow-shell": { type: "boolean", help: "run !COMMAND lines without asking (required when the input is not a terminal)" },
      "shell-timeout": { type: "number", value: "SEC", help: "time limit of one !COMMAND (default 600)" },
      timeout: { type: "number", value: "SEC", help: "seconds to wait for each reply (default 120)" },
    },
  },
  {
    name: "streams",
    args: "",
    summary: "create or update the JetStream streams as the admin user (start does this itself)",
    details: ["For deployments where the launcher does not run (systemd, several hosts)."],
    minArgs: 0,
    maxArgs: 0,
    options: {
      replicas: { type: "number", value: "N", help: "stream replicas in a NATS cluster (default: keep the current count, 1 for new streams)" },
      wait: { type: "number", value: "SEC", help: "wait this long for the server to answer (default 10)" },
    },
  },
  {
    name: "sessions",
    args: "list|show|reset|delete|export [KEY]",
    summary: "list sessions, show a transcript, reset (/new), delete or export a session",
    details: [
      "  sessions list [--agent ID] [--type T] [--json]   key, type, channel, records, tokens, model, updated",
      "  sessions show KEY [--limit N] [--json]           the entry and its newest transcript records",
      "  sessions reset KEY                               a fresh transcript; the old one stays on disk",
      "  sessions delete KEY [--yes]                      asks on a terminal; elsewhere needs --yes",
      "  sessions export KEY [--format jsonl|md] [--out FILE] [--session-id ID]",
      "                                                   the whole transcript: every transcript of the session (earlier",
      "                                                   resets' first), or one; to FILE (mode 600) or stdout",
      "Exit code 1 for an unknown KEY, 2 when the bus is down.",
    ],
    minArgs: 1,
    maxArgs: 2,
    options: {
      agent: { type: "string", value: "ID", help: "list: only this agent's sessions" },
      type: { type: "string", value: "T", help: "list: only this session type (main, dm, group, topic, thread, subagent, cron)" },
      limit: { type: "number", value: "N", help: "list: at most N sessions (default 100); show: the newest N records (default 20)" },
      yes: { type: "boolean", help: "delete: do not ask for confirmation" },
      format: { type: "string", value: "jsonl|md", help: "export: JSON Lines, one record per line as stored (default), or Markdown" },
      out: { type: "string", value: "FILE", help: "export: write FILE (mode 600) instead of stdout" },
      "session-id": { type: "string", value: "ID", help: "export: only this transcript (a reset's previous id)" },
      json: { type: "boolean", help: "print JSON" },
    },
  },
  {
    name: "usage",
    args: "",
    summary: "what the assistant spent: tokens, speech characters, audio seconds and USD per day, model, agent, channel, session type or purpose",
    details: [
      "  usage [--days N | --since DAY [--until DAY]] [--by day,model,agent,channel,type,purpose] [--agent ID] [--json]",
      "  usage --providers [--json]   the rate-limit headers of each auth profile's last response (agent-runners' memory)",
      "From the sessions actor's usage ledger: every model call's tokens, priced at its own model when booked",
      "(config models.entries.<provider/model>.cost overrides the built-in prices); DAY is YYYY-MM-DD, days are UTC.",
      "Purpose: turn (a run's own model calls), compaction, consolidation (memory), tts (a long reply's",
      "summary for speech), embedding (memory_search's vectors), speech (audio synthesized: CHARS, priced per",
      "million characters, cost.perMChars), transcription (audio transcribed: AUDIO seconds, priced per minute,",
      "cost.perAudioMinute). RUNS counts each run once, on its last model.",
      "Default: the last 30 days by day. The ledger starts with this version of LurkBot: earlier usage is",
      "only in each session's own totals (lurkbot sessions list). A report too large for one bus message",
      "is refused: narrow the days or group by fewer keys.",
      "Exit code 1 on an error reply, 2 when the bus is down, 64 for bad dates or keys.",
    ],
    minArgs: 0,
    maxArgs: 0,
    options: {
      days: { type: "number", value: "N", help: "the last N days, today included (default 30)" },
      since: { type: "string", value: "DAY", help: "the first day, YYYY-MM-DD (UTC)" },
      until: { type: "string", value: "DAY", help: "with --since: the last day (default today)" },
      by: { type: "string", value: "KEYS", help: "group by day, model, agent, channel, type, purpose (comma-separated, in this order; default day)" },
      agent: { type: "string", value: "ID", help: "only this agent's usage" },
      json: { type: "boolean", help: "print the report as JSON ({ from, to, groupBy, rows, totals, ledgerSince })" },
      providers: { type: "boolean", help: "instead: the providers' rate-limit windows (remaining/limit, reset) per auth profile, from the agent-runners" },
    },
  },
  {
    name: "tools",
    args: "",
    summary: "the tools an agent may use in a session, as the tool policy decides (--explain: why)",
    details: [
      "Without --session: the default (or --agent) agent's main session.",
      "--explain lists every known tool, allowed or denied, with the policy layer and rule that decided.",
      "Each tool once, with the actor serving it: the tools actor's and every other actor's (browser, extensions).",
    ],
    minArgs: 0,
    maxArgs: 0,
    options: {
      session: { type: "string", value: "KEY", help: "a session key, e.g. agent:main:telegram:group:42 or agent:main:subagent:c1" },
      agent: { type: "string", value: "ID", help: "the agent (default: the session key's, else the default agent)" },
      explain: { type: "boolean", help: "every tool with allowed/denied, layer and rule" },
      json: { type: "boolean", help: "print JSON" },
    },
  },
  {
    name: "cron",
    args: "add|list|edit|rm|run|runs|status [ID]",
    summary: "scheduled jobs: reminders in the main session or agent turns on a schedule",
    details: [
      "  cron add --name N (--every 10m [--anchor T] | --cron \"0 9 * * *\" [--tz Z] | --at T|+10m) --message TEXT",
      "           [--system-event [--wake now]] [--agent ID] [--model M] [--thinking L] [--timeout SEC]",
      "           [--deliver last|none|CHANNEL:TO] [--best-effort] [--post-to-main summary|full] [--delete-after-run] [--disabled]",
      "  cron list [--agent ID] [--json]        jobs with their next run and last outcome",
      "  cron edit ID [add's flags] [--enable|--disable]",
      "  cron rm ID                              remove a job and its run log",
      "  cron run ID [--due]                     fire now (--due: only if its time has come)",
      "  cron runs [ID] [--limit N] [--json]     the run log, newest first",
      "  cron status [--json]                    jobs, next run, whether this instance schedules",
      "Without --system-event the message is an agent turn in the job's own session (agent:<id>:cron:<job>);",
      "with it, a note injected into the agent's main session. T is ISO 8601, read in --tz when it has no offset.",
    ],
    minArgs: 1,
    maxArgs: 2,
    options: {
      name: { type: "string", value: "NAME", help: "add/edit: the job's name" },
      description: { type: "string", value: "TEXT", help: "add/edit: a longer description" },
      every: { type: "string", value: "DUR", help: "add/edit: run every DUR (30s, 10m, 1h30m, 2d)" },
      anchor: { type: "string", value: "TIME", help: "with --every: the time the interval counts from" },
      cron: { type: "string", value: "EXPR", help: "add/edit: a cron expression (5 fields, or 6 with seconds)" },
      tz: { type: "string", value: "ZONE", help: "the IANA time zone of --cron (default UTC) and of times without an offset" },
      at: { type: "string", value: "TIME", help: "add/edit: run once at TIME (ISO 8601) or +DUR from now" },
      message: { type: "string", value: "TEXT", help: "add/edit: the agent's task, or the note (--system-event)" },
      "system-event": { type: "boolean", help: "inject the message into the main session instead of an agent turn" },
      wake: { type: "string", value: "MODE", help: "system events: now (start a run) or next-heartbeat (default)" },
      agent: { type: "string", value: "ID", help: "the agent (default main); list: only its jobs" },
      model: { type: "string", value: "M", help: "agent turns: the model, e.g. openai/gpt-4o-mini" },
      thinking: { type: "string", value: "L", help: "agent turns: thinking level off, low, medium or high" },
      timeout: { type: "number", value: "SEC", help: "agent turns: seconds the run may take (default 3600)" },
      deliver: { type: "string", value: "TARGET", help: "agent turns: last (default), none, or CHANNEL:TO (e.g. telegram:123)" },
      "best-effort": { type: "boolean", help: "agent turns: run even when there is nowhere to deliver" },
      "post-to-main": { type: "string", value: "MODE", help: "agent turns: also post the reply (summary: its first paragraph, or full) into the main session" },
      "delete-after-run": { type: "boolean", help: "remove the job after its first successful run" },
      disabled: { type: "boolean", help: "add: create the job disabled" },
      enable: { type: "boolean", help: "edit: enable the job" },
      disable: { type: "boolean", help: "edit: disable the job" },
      due: { type: "boolean", help: "run: only if the job is due" },
      limit: { type: "number", value: "N", help: "runs: at most N entries (default 20)" },
      json: { type: "boolean", help: "print JSON" },
    },
  },
  {
    name: "approvals",
    args: "list|approve|deny [ID]",
    summary: "list tool-call approvals, approve or deny a pending one",
    details: [
      "  approvals list [--status S] [--json]   pending, approved, denied or expired approvals, newest first",
      "  approvals approve ID                    the tool call runs (decided by cli:<your user>)",
      "  approvals deny ID                       the tool call is refused (TOOL_DENIED)",
    ],
    minArgs: 1,
    maxArgs: 2,
    options: {
      status: { type: "string", value: "S", help: "list: only pending, approved, denied or expired" },
      limit: { type: "number", value: "N", help: "list: at most N approvals (default 100)" },
      json: { type: "boolean", help: "print JSON" },
    },
  },
  {
    name: "pairing",
    args: "list|approve|deny|revoke [CODE|CHANNEL:SENDER]",
    summary: "DM pairing: pending codes and approved senders; approve or deny a code",
    details: [
      "  pairing list [--json]           pending codes (channel, sender, expiry) and approved senders",
      "  pairing approve CODE            the sender may DM the bot from now on",
      "  pairing deny CODE               the code is dropped (the sender may ask again later)",
      "  pairing revoke CHANNEL:SENDER   an approved sender may no longer DM",
      "Codes are given to unknown DM senders when routing.dm.policy is \"pairing\" (valid 1 hour, 3 pending per channel).",
    ],
    minArgs: 1,
    maxArgs: 2,
    options: {
      json: { type: "boolean", help: "print JSON" },
    },
  },
  {
    name: "heartbeat",
    args: "[status|last|run|enable|disable]",
    summary: "periodic HEARTBEAT.md checks: state, last event, run one now, enable or disable",
    details: [
      "  heartbeat status [--agent ID] [--json]    enabled, interval, next due time, tokens spent, last event (default)",
      "  heartbeat last [--agent ID] [--json]      the last heartbeat event of the (default) agent",
      "  heartbeat run [--agent ID] [--json]       one heartbeat now (gates first; waits for the run)",
      "  heartbeat enable|disable [--agent ID]     every agent, or one; kept across restarts",
    ],
    minArgs: 0,
    maxArgs: 2,
    options: {
      agent: { type: "string", value: "ID", help: "one agent (default: all for status/enable/disable, the default agent for last/run)" },
      json: { type: "boolean", help: "print JSON" },
    },
  },
  {
    name: "mcp",
    args: "[list]",
    summary: "MCP servers whose tools the mcp actor serves: state, tools, last error",
    details: [
      "  mcp list [--tools] [--json]    each server's transport, state, tool count, connections and last error",
    ],
    minArgs: 0,
    maxArgs: 2,
    options: {
      tools: { type: "boolean", help: "also list each server's tools (catalog name, the server's name, side effects)" },
      json: { type: "boolean", help: "print JSON" },
    },
  },
  {
    name: "config",
    args: "get|set|unset|path|validate|set-secret [PATH] [VALUE]",
    summary: "read and change config.json: get, set and unset a key (validated before it is written), where it is, check it",
    details: [
      "  config get [PATH] [--json] [--effective]   a key of config.json (all of it without PATH); --effective: as loaded, defaults and environment applied",
      "  config set PATH VALUE [--json-value|--string]   VALUE is JSON when it parses (8790, true, [\"a\"], {\"k\":1}), else text",
      "  config unset PATH                          remove a key (its default applies again) or a list element",
      "  config path                                where config.json is",
      "  config validate                            load it as the actors do; unknown keys (typos) are reported too",
      "  config set-secret NAME                     store a key or token (read without echo, or from a pipe) in credentials/secrets.json",
      "PATH: dotted keys, [N] for a list element (N = the length appends), [field=value] for the element with that field,",
      "[\"a/b\"] for a key with dots or slashes: channels.web.port, agents[0].model, agents[id=main].model, models.entries[\"openai/gpt-4o\"].",
      "Every change is checked against the config schema first (nothing is written when it would not be valid), written",
      "atomically (mode 600) keeping the other keys and their order. Secrets (apiKey, token, botToken, accessToken, password, …)",
      "are never written by set: use set-secret or the environment; get shows them as ***.",
      "Exit code 1 for a key that is not set, 64 for a bad or unknown PATH or a secret, 78 for a value the schema refuses.",
    ],
    minArgs: 1,
    maxArgs: 3,
    options: {
      json: { type: "boolean", help: "get: print the value as JSON" },
      effective: { type: "boolean", help: "get: the config as loaded (defaults and environment applied), not config.json as written" },
      "json-value": { type: "boolean", help: "set: VALUE must be JSON" },
      string: { type: "boolean", help: "set: VALUE is text, even when it looks like JSON (e.g. \"123\" as a string)" },
    },
  },
  {
    name: "hooks",
    args: "list|info NAME|enable NAME|disable NAME|reload|install SOURCE|uninstall NAME|update [NAME]",
    summary: "event hooks: the hooks found (workspace, $LURKBOT_HOME/hooks, bundled), one hook's details, turn one on or off, reload, install",
    details: [
      "  hooks list [--agent ID] [--json]   name, source, events, enabled, requirements met or why not; folders that cannot be used",
      "  hooks info NAME [--agent ID] [--json]   one hook: its files, events, requirements, description",
      "  hooks enable NAME | disable NAME   sets hooks.entries.NAME.enabled in config.json (the running hooks actor picks it up)",
      "  hooks reload [--json]              the running hooks actor discovers its hooks again now (it also does on file changes and every 30 s)",
      "  hooks install SOURCE [--link] [--force] [--json]   into $LURKBOT_HOME/hooks: a hook folder, a hook pack (folder, .tgz/.tar.gz/.zip",
      "                                     with package.json \"lurkbot\": {\"hooks\": [...]}) or an npm package (name, name@version, @scope/name, file:PATH)",
      "  hooks uninstall NAME [--json]      removes $LURKBOT_HOME/hooks/NAME and hooks.installs.NAME, hooks.entries.NAME",
      "  hooks update [NAME | --all] [--json]   installs again from where it came from (npm: the spec's newest version)",
      "Bundled and workspace hooks are off until enabled; hooks in $LURKBOT_HOME/hooks are on (services/hooks/README.md).",
      "Events: command:<name> (command or command:* for all), session:start, session:reset, agent:bootstrap (change a run's SOUL.md, AGENTS.md, …), agent:run_end, gateway:startup.",
    ],
    minArgs: 0,
    maxArgs: 2,
    options: {
      agent: { type: "string", value: "ID", help: "the agent whose workspace hooks are read (default: the default agent)" },
      json: { type: "boolean", help: "print JSON" },
      link: { type: "boolean", help: "install: link the local folder instead of copying it" },
      force: { type: "boolean", help: "install: replace a hook of the same name in $LURKBOT_HOME/hooks" },
      all: { type: "boolean", help: "update: every hook installed with `hooks install`" },
    },
  },
  {
    name: "subagents",
    args: "list|stop [RUN_ID]",
    summary: "background subagents: list them, stop one or all of a session's",
    details: [
      "  subagents list [--session KEY] [--json]   children with status, label, duration (of one requester session)",
      "  subagents stop RUN_ID                     stop one child (it is not announced)",
      "  subagents stop --all --session KEY        stop every running child of that session",
    ],
    minArgs: 1,
    maxArgs: 3,
    options: {
      session: { type: "string", value: "KEY", help: "the requester session key, e.g. agent:main:cli:dm:tester" },
      all: { type: "boolean", help: "stop: every running child of --session" },
      json: { type: "boolean", help: "print JSON" },
    },
  },
  {
    name: "auth",
    args: "list|login|import|logout|probe [PROVIDER PROFILE]",
    summary: "auth profiles of the model providers: their state and cooldowns, a live check; log in to an OAuth one, import or delete its tokens",
    details: [
      "  auth list [--json]                           every profile: credential kind, endpoint, expiry, login state, and from the",
      "                                               agent-runners its cooldown, failures, last use, last success, rate limit",
      "  auth probe [PROVIDER[:PROFILE]] [--timeout SEC] [--json]",
      "                                               one free call per profile (the provider's models list) through an",
      "                                               agent-runner: ok, auth failed, rate limited, unreachable; an auth",
      "                                               failure disables the profile like a refused run's call (exit 1)",
      "  auth login PROVIDER PROFILE [--timeout SEC]  OAuth login in a browser (authorization code + PKCE): the",
      "                                               browser comes back to this command's loopback address, or",
      "                                               you paste the address it ends up at (a redirectUri elsewhere)",
      "  auth import PROVIDER PROFILE < FILE          a refresh token on stdin (bare, or JSON { \"refresh_token\": … }),",
      "                                               checked with one refresh before it is stored",
      "  auth logout PROVIDER PROFILE                 delete the stored tokens",
      "login and import need a profile with \"oauth\": { \"grant\": \"refresh_token\", \"tokenUrl\", \"clientId\", ... }",
      "(login also \"authorizeUrl\") in providers.<provider>.profiles of config.json. Tokens are kept in the",
      "lurk_auth bucket for every agent-runner, never taken from the command line and never printed.",
      "Exit code 2 when the bus is down (list still prints the profiles), 78 for a profile that cannot log in.",
    ],
    minArgs: 1,
    maxArgs: 3,
    options: {
      timeout: { type: "number", value: "SEC", help: "login: seconds to wait for the browser (default 300); probe: per profile (default 10)" },
      json: { type: "boolean", help: "list, probe: print JSON" },
    },
  },
  {
    name: "security",
    args: "audit",
    summary: "what in this setup is exposed or unsafe, why, and the exact fix (--deep, --fix, --json)",
    details: [
      "  security audit [--deep] [--fix] [--json]",
      "Checks the config, the environment and the files under LURKBOT_HOME: channels listening beyond",
      "loopback and their tokens, the NATS URL and nats.conf, file modes of the home and the secrets,",
      "secrets written in config.json, DM and group access, exec and other tools strangers can reach,",
      "the exec sandbox. --deep also checks the running system as the cli user: the actors and their",
      "versions, anonymous access to nats-server, the cli user's permissions. Findings are critical,",
      "warning or info, each with its fix; no secret is ever printed.",
      "--fix only changes file modes (chmod 700 the directories, 600 the secret files), lists what it",
      "changed, and audits again; config changes are printed, never made: a finding whose fix is one config",
      "change shows the command that makes it (run: npx lurkbot config set …; \"fixCommand\" in --json).",
      "Exit code 0: no critical finding; 1: a critical finding (after --fix: one that remains);",
      "2: --deep could not reach the bus (and no critical finding); 64: a bad command line;",
      "78: the config does not load.",
    ],
    minArgs: 1,
    maxArgs: 1,
    options: {
      deep: { type: "boolean", help: "also check the running system over the bus" },
      fix: { type: "boolean", help: "chmod what is too open, then audit again" },
      json: { type: "boolean", help: "print { home, deep, summary, findings[, fixes, before] } as JSON" },
    },
  },
  {
    name: "acp",
    args: "",
    summary: "serve the Agent Client Protocol on stdin/stdout for an editor (Zed, ...) to spawn",
    details: [
      "JSON-RPC 2.0, one message per line; logs go to stderr. Each ACP session is a LurkBot session of",
      "its own (agent:<agent>:cli:dm:<prefix><uuid>); tool approvals become the editor's permission prompts.",
      "See services/cli/acp/README.md.",
    ],
    minArgs: 0,
    maxArgs: 0,
    options: {
      agent: { type: "string", value: "ID", help: "the agent that answers (default: the router's bindings, i.e. the default agent)" },
      "session-prefix": { type: "string", value: "P", help: "the start of every session name this process makes (default acp-)" },
    },
  },
  {
    name: "help",
    args: "[command]",
    summary: "show this help, or a command's",
    minArgs: 0,
    maxArgs: 1,
    options: {},
  },
];

/** The commands that connect to the bus take `--ssh TARGET`: reach it through an SSH tunnel (config nats.ssh). */
export const SSH_COMMANDS = ["start", "status", "tail", "send", "chat", "streams", "sessions", "usage", "tools", "cron", "approvals", "pairing", "heartbeat", "hooks", "subagents", "auth", "security", "acp", "mcp"];
for (const command of COMMANDS) {
  if (SSH_COMMANDS.includes(command.name)) {
    command.options.ssh = { type: "string", value: "TARGET", help: "reach the bus of another host through ssh: user@host or a ~/.ssh/config alias (nats.ssh, LURKBOT_NATS_SSH)" };
  }
}

export function findCommand(name: string): CommandSpec | undefined {
  return COMMANDS.find((c) => c.name === name);
}

export function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => `${c.name} ${c.args}`.length));
  const lines = [
    "usage: lurkbot <command> [options]",
    "",
    "commands:",
    ...COMMANDS.map((c) => `  ${`${c.name} ${c.args}`.padEnd(width)}  ${c.summary}`),
    "",
    "Run `lurkbot <command> --help` for a command's options.",
    "Environment: LURKBOT_HOME (default ~/.lurkbot), LURKBOT_NATS_URL, LURKBOT_NATS_SSH, LURKBOT_MODEL, OPENAI_API_KEY, ANTHROPIC_API_KEY ...",
  ];
  return lines.join("\n") + "\n";
}

export function commandUsage(cmd: CommandSpec): string {
  const lines = [`usage: lurkbot ${cmd.name}${cmd.args ? ` ${cmd.args}` : ""}${Object.keys(cmd.options).length ? " [options]" : ""}`, "", cmd.summary];
  for (const d of cmd.details ?? []) lines.push(d);
  const opts = Object.entries(cmd.options);
  if (opts.length) {
    lines.push("", "options:");
    const label = (name: string, o: OptionSpec) => `--${name}${o.type === "boolean" ? "" : ` ${o.value ?? "VALUE"}`}`;
    const width = Math.max(...opts.map(([n, o]) => label(n, o).length));
    for (const [name, o] of opts) lines.push(`  ${label(name, o).padEnd(width)}  ${o.help}`);
  }
  return lines.join("\n") + "\n";
}

export function parseArgs(argv: string[]): ParsedCommand | { global: "help" | "version" } {
  const [first, ...rest] = argv;
  if (first === undefined || first === "--help" || first === "-h") return { global: "help" };
  if (first === "--version" || first === "-v") return { global: "version" };
  if (first.startsWith("-")) throw new UsageError(`"${first}" is not a command; put the command first, e.g. \`lurkbot status --json\`.`);
  const command = findCommand(first);
  if (!command) {
    const close = COMMANDS.filter((c) => c.name.startsWith(first.slice(0, 2))).map((c) => c.name);
    throw new UsageError(`unknown command "${first}"${close.length ? ` (did you mean ${close.join(" or ")}?)` : ""}.`);
  }
  const args: string[] = [];
  const options: ParsedCommand["options"] = {};
  let help = false;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg === "--") {
      args.push(...rest.slice(i + 1));
      break;
    }
    if (arg === "--help" || arg === "-h") {
      help = true;
      continue;
    }
    if (!arg.startsWith("--") || arg === "-") {
      if (arg.startsWith("-") && arg !== "-" && !/^-\d/.test(arg)) {
        throw new UsageError(`unknown option "${arg}" for \`lurkbot ${command.name}\`; options are spelled --name.`, command.name);
      }
      args.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = arg.slice(2, eq === -1 ? undefined : eq);
    const spec = command.options[name];
    if (!spec) {
      const known = Object.keys(command.options).map((n) => `--${n}`);
      throw new UsageError(`unknown option "--${name}" for \`lurkbot ${command.name}\`${known.length ? ` (it takes ${known.join(", ")})` : " (it takes no options)"}.`, command.name);
    }
    if (spec.type === "boolean") {
      if (eq !== -1) throw new UsageError(`--${name} is a switch and takes no value; write just --${name}.`, command.name);
      options[name] = true;
      continue;
    }
    let value: string | undefined;
    if (eq !== -1) value = arg.slice(eq + 1);
    else {
      value = rest[i + 1];
      if (value === undefined || value.startsWith("--")) throw new UsageError(`--${name} needs a value: --${name} ${spec.value ?? "VALUE"}.`, command.name);
      i++;
    }
    if (spec.type === "number") {
      const n = Number(value);
      if (value.trim() === "" || !Number.isFinite(n) || n <= 0) throw new UsageError(`--${name} must be a positive number, not "${value}".`, command.name);
      options[name] = n;
    } else {
      if (value === "") throw new UsageError(`--${name} must not be empty.`, command.name);
      options[name] = value;
    }
  }
  if (!help) {
    if (args.length < command.minArgs) {
      throw new UsageError(`\`lurkbot ${command.name}\` needs ${command.args}${command.name === "send" ? ", e.g. lurkbot send \"hello\"" : ""}.`, command.name);
    }
    if (args.length > command.maxArgs) {
      const extra = args.slice(command.maxArgs).map((a) => `"${a}"`).join(" ");
      throw new UsageError(`\`lurkbot ${command.name}\` takes ${command.maxArgs === 0 ? "no arguments" : `at most ${command.maxArgs} argument`}; unexpected ${extra}${command.name === "send" ? " (quote the text: lurkbot send \"two words\")" : ""}.`, command.name);
    }
  }
  return { command, args, options, help };
}
