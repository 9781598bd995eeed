/**
 * An ACP client for tests: spawns `lurkbot acp` (the compiled CLI) and speaks JSON-RPC over its
 * stdio as an editor would. Every stdout line must be a JSON-RPC message (anything else fails
 * `stray`); responses are matched by id, notifications collected, and the agent's requests
 * (session/request_permission) answered by `onRequest`.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { CLI_MAIN } from "./cli.js";

export interface RpcMessage {
  jsonrpc: "2.0";
  id?: string | number | null;
  method?: string;
  params?: any;
  result?: any;
  error?: { code: number; message: string; data?: unknown };
}

export interface UpdateOf {
  sessionId: string;
  update: { sessionUpdate: string; [k: string]: any };
}

export class AcpTestClient {
  readonly messages: RpcMessage[] = [];
  /** stdout lines that were not JSON-RPC messages (must stay empty) */
  readonly stray: string[] = [];
  private stderr = "";
  private nextId = 1;
  private readonly waiters = new Map<string | number | null, Array<(m: RpcMessage) => void>>();
  private readonly watchers: Array<(m: RpcMessage) => void> = [];
  /** answers the agent's requests (default: a JSON-RPC error) */
  onRequest: (m: RpcMessage) => Promise<unknown> | unknown = () => {
    throw new Error("no handler");
  };
  readonly exited: Promise<number | null>;

  private constructor(readonly child: ChildProcessWithoutNullStreams) {
    let buf = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (d: string) => {
      buf += d;
      for (let nl = buf.indexOf("\n"); nl !== -1; nl = buf.indexOf("\n")) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        this.onLine(line);
      }
    });
    child.stderr.on("data", (d: Buffer) => (this.stderr += d.toString()));
    this.exited = new Promise((resolve) => child.once("close", (code) => resolve(code)));
  }

  static start(env: Record<string, string>, args: string[] = []): AcpTestClient {
    return new AcpTestClient(spawn(process.execPath, [CLI_MAIN, "acp", ...args], { env, stdio: ["pipe", "pipe", "pipe"] }));
  }

  get logs(): string {
    return this.stderr;
  }

  private onLine(line: string): void {
    let m: RpcMessage;
    try {
      m = JSON.parse(line) as RpcMessage;
      if (m.jsonrpc !== "2.0") throw new Error("not JSON-RPC 2.0");
    } catch {
      this.stray.push(line);
      return;
    }
    this.messages.push(m);
    for (const w of this.watchers) w(m);
    if (m.method !== undefined && m.id !== undefined && m.id !== null) {
      void (async () => {
        try {
          const result = await this.onRequest(m);
          this.write({ jsonrpc: "2.0", id: m.id, result });
        } catch (err) {
          this.write({ jsonrpc: "2.0", id: m.id, error: { code: -32603, message: (err as Error).message } });
        }
      })();
      return;
    }
    if (m.method === undefined && m.id !== undefined) {
      const list = this.waiters.get(m.id);
      const w = list?.shift();
      if (w) w(m);
    }
  }

  /** Writes a raw line (malformed input on purpose). */
  writeLine(line: string): void {
    this.child.stdin.write(line + "\n");
  }

  write(message: object): void {
    this.writeLine(JSON.stringify(message));
  }

  /** The next response with this id (null: an error without an id). */
  response(id: string | number | null, timeoutMs = 30_000): Promise<RpcMessage> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no response ${id} within ${timeoutMs} ms; stderr:\n${this.stderr.slice(-3000)}`)), timeoutMs);
      const list = this.waiters.get(id) ?? [];
      list.push((m) => {
        clearTimeout(timer);
        resolve(m);
      });
      this.waiters.set(id, list);
    });
  }

  /** Sends a request; resolves with the whole response (result or error). */
  call(method: string, params: unknown, timeoutMs = 60_000): Promise<RpcMessage> {
    const id = this.nextId++;
    const r = this.response(id, timeoutMs);
    this.write({ jsonrpc: "2.0", id, method, params });
    return r;
  }

  /** Sends a request; resolves with its result, throws on an error response. */
  async ok(method: string, params: unknown, timeoutMs = 60_000): Promise<any> {
    const r = await this.call(method, params, timeoutMs);
    if (r.error) throw new Error(`${method}: ${r.error.code} ${r.error.message}`);
    return r.result;
  }

  notify(method: string, params: unknown): void {
    this.write({ jsonrpc: "2.0", method, params });
  }

  /** session/update notifications of one session, so far. */
  updates(sessionId: string): UpdateOf["update"][] {
    return this.messages.filter((m) => m.method === "session/update" && m.params?.sessionId === sessionId).map((m) => (m.params as UpdateOf).update);
  }

  /** Resolves with the first message (already seen or coming) that `test` accepts. */
  waitFor(test: (m: RpcMessage) => boolean, timeoutMs = 30_000, what = "message"): Promise<RpcMessage> {
    const seen = this.messages.find(test);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${what} within ${timeoutMs} ms; stderr:\n${this.stderr.slice(-3000)}`)), timeoutMs);
      const watcher = (m: RpcMessage) => {
        if (!test(m)) return;
        clearTimeout(timer);
        this.watchers.splice(this.watchers.indexOf(watcher), 1);
        resolve(m);
      };
      this.watchers.push(watcher);
    });
  }

  /** Closes stdin (the editor goes away) and waits for the exit code. */
  async close(): Promise<number | null> {
    if (this.child.exitCode !== null) return this.child.exitCode;
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    const code = await this.exited;
    clearTimeout(timer);
    return code;
  }
}

/** The text of a session's agent_message_chunk updates (or another chunk kind), joined. */
export function chunkText(updates: UpdateOf["update"][], kind = "agent_message_chunk"): string {
  return updates.filter((u) => u.sessionUpdate === kind).map((u) => u.content?.text ?? "").join("");
}
