/**
 * Advanced mode's questions: the NATS URL, the workspace, the default agent's tool profile,
 * approvals for exec, the heartbeat, voice replies. QuickStart keeps what config.json says (or
 * the defaults); --non-interactive takes these from flags, else the same.
 */
import { isAbsolute } from "node:path";
import type { OnboardState, WizardSession, WizardStep } from "./session.js";

const advanced = (s: WizardSession) => s.state.mode === "advanced";

/** the default agent of a raw config (the one marked default, else the first) */
export function rawDefaultAgent(raw: Record<string, any>): Record<string, any> | undefined {
  const agents = Array.isArray(raw.agents) ? (raw.agents as Record<string, any>[]) : [];
  return agents.find((a) => a?.default === true) ?? agents[0];
}

function natsProblem(value: string): string | undefined {
  for (const server of value.split(",").map((v) => v.trim())) {
    try {
      const u = new URL(server.includes("://") ? server : `nats://${server}`);
      if (!["nats:", "tls:", "ws:", "wss:"].includes(u.protocol)) return `"${server}": use nats://host:port (or tls://)`;
      if (u.username || u.password) return "no user or password in the URL: each actor uses its own from credentials/nats.json";
    } catch {
      return `"${server}" is not a NATS URL, e.g. nats://127.0.0.1:4222`;
    }
  }
  return undefined;
}

function step(id: string, run: (s: WizardSession, a: OnboardState["advanced"]) => Promise<void>): WizardStep {
  return { id, when: advanced, run: (s) => run(s, s.state.advanced) };
}

export const ADVANCED_STEPS: WizardStep[] = [
  step("natsUrl", async (s, a) => {
    a.natsUrl = await s.prompt.text({ id: "natsUrl", message: "NATS URL (a local nats-server is started when none answers at a loopback URL)", default: s.state.raw.nats?.url ?? "nats://127.0.0.1:4222", validate: natsProblem });
  }),
  step("workspace", async (s, a) => {
    a.workspace = await s.prompt.text({
      id: "workspace", message: "Workspace (the agent's files; a relative path is inside LURKBOT_HOME)", default: s.state.raw.workspace ?? "workspace",
      validate: (v) => (v.includes("\0") ? "not a path" : isAbsolute(v) || !v.startsWith("~") ? undefined : "write the full path instead of ~"),
    });
  }),
  step("toolProfile", async (s, a) => {
    a.toolProfile = await s.prompt.select({
      id: "toolProfile", message: "Tool profile of the agent:", default: rawDefaultAgent(s.state.raw)?.toolProfile ?? "coding",
      choices: [
        { value: "minimal", label: "minimal", hint: "session status only" },
        { value: "coding", label: "coding", hint: "files, exec, memory, sessions (the default)" },
        { value: "messaging", label: "messaging", hint: "messages and sessions, no files or exec" },
        { value: "full", label: "full", hint: "every tool, the web tools and the browser included" },
      ],
    });
  }),
  step("execApproval", async (s, a) => {
    a.execAsk = await s.prompt.select({
      id: "execApproval", message: "Approvals for exec (commands the agent runs):", default: s.state.raw.tools?.exec?.ask ?? "off",
      choices: [
        { value: "off", label: "off", hint: "commands run in the sandbox without asking" },
        { value: "on-miss", label: "on-miss", hint: "ask for commands not on tools.exec.allowlist (ls, cat, echo, pwd)" },
        { value: "always", label: "always", hint: "ask for every command" },
      ],
    });
  }),
  step("heartbeat", async (s, a) => {
    a.heartbeat = await s.prompt.confirm({ id: "heartbeat", message: "Heartbeat: let the agent check HEARTBEAT.md periodically (every 30 minutes by default)?", default: s.state.raw.heartbeat?.enabled ?? true });
  }),
  step("tts", async (s, a) => {
    a.tts = await s.prompt.select({
      id: "tts", message: "Voice replies (text-to-speech through OpenAI's speech API):", default: s.state.raw.tts?.auto ?? "off",
      choices: [
        { value: "off", label: "off" },
        { value: "inbound", label: "inbound", hint: "answer a voice note with a voice reply" },
        { value: "tagged", label: "tagged", hint: "when the model asks for it" },
        { value: "always", label: "always", hint: "every reply" },
      ],
    });
  }),
];
