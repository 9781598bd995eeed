/** The reply tokens of the seeds (5.6): one definition for the agent-runner, channels and heartbeat. */

export const HEARTBEAT_OK_TOKEN = "HEARTBEAT_OK";
export const SILENT_REPLY_TOKEN = "NO_REPLY";

/**
 * A silent reply is never delivered: its text ends with NO_REPLY, or starts with "/NO_REPLY"
 * (the model already answered through the message tool, or has nothing to say).
 */
export function isSilentReply(text: string | undefined): boolean {
  if (!text) return false;
  const t = text.trim();
  return t.endsWith(SILENT_REPLY_TOKEN) || t.startsWith(`/${SILENT_REPLY_TOKEN}`);
}
