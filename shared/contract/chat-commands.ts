/**
 * The chat commands the router understands (seeds 001 §5.3), as `[usage, description]` pairs.
 * The router's /help prints them; channels that register native commands (Discord's slash
 * commands) describe them from this table, so there is one source for both.
 */
export const COMMAND_HELP: ReadonlyArray<readonly [usage: string, description: string]> = [
  ["/new, /reset [text]", "start a fresh session (the text, if any, is its first message)"],
  ["/stop", "abort the active run and drop queued messages"],
  ["/status", "session, model, settings, active run and queue"],
  ["/model [provider/model|default]", "show or set this session's model"],
  ["/think:off|low|medium|high (/t)", "thinking level (alone: for the session; with text: for that message)"],
  ["/verbose:off|on|high (/v)", "announce each tool call (on/low); high adds its result"],
  ["/reasoning:off|on|stream", "send the model's reasoning before the reply"],
  ["/tts:off|on|inbound|tagged", "voice replies: never, always, to voice notes, or when the model tags them"],
  ["/queue MODE [debounce:2s] [cap:N] [drop:old|new|summarize]", "steer, followup, collect, steer-backlog, interrupt or queue; /queue reset"],
  ["/compact [instructions]", "summarize older history now"],
  ["/approve ID, /deny ID", "decide a pending tool approval (owners)"],
  ["/subagents [list|stop KEY|all]", "child runs of this session"],
  ["/usage [days]", "what this agent spent: tokens and USD today, or over the last N days, by model (owners)"],
  ["/pair [list|approve CODE|deny CODE]", "pending DM pairing requests (owners)"],
  ["/sessions", "this agent's 20 most recent sessions: key, last activity, records; this one marked (owners)"],
  ["/help", "this list"],
];
