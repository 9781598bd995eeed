/**
 * The OpenAI Chat Completions wire format this channel speaks: the request subset it reads
 * (zod), the response, chunk, model list and error bodies it writes (the shapes of
 * api.openai.com, so any OpenAI SDK parses them).
 */
import { z } from "zod";
import type { Usage } from "../../shared/contract/index.js";

/** a content part; `image_url` parts carry `{ url }` (a data: URL or an http(s) URL) */
const contentPartSchema = z.object({
  type: z.string(),
  text: z.string().optional(),
  image_url: z.union([z.object({ url: z.string() }).loose(), z.string()]).optional(),
}).loose();

export const chatRequestSchema = z.object({
  model: z.string().min(1).max(200),
  messages: z.array(z.object({
    role: z.enum(["system", "developer", "user", "assistant", "tool", "function"]),
    content: z.union([z.string(), z.array(contentPartSchema), z.null()]).optional(),
  }).loose()).min(1).max(10_000),
  stream: z.boolean().optional(),
  stream_options: z.object({ include_usage: z.boolean().optional() }).loose().nullable().optional(),
  /** the session: one LurkBot session per `user` (or the X-LurkBot-Session header) */
  user: z.string().min(1).max(128).optional(),
}).loose();
export type ChatRequest = z.infer<typeof chatRequestSchema>;

export interface UserImage {
  url: string;
  /** where it is in the request, for errors: `messages[i].content[j].image_url.url` */
  param: string;
}

/** The text and images of the last user message (LurkBot keeps the session's history itself). */
export function lastUserMessage(req: ChatRequest): { text: string; images: UserImage[] } | null {
  for (let i = req.messages.length - 1; i >= 0; i--) {
    const m = req.messages[i]!;
    if (m.role !== "user") continue;
    if (typeof m.content === "string") return { text: m.content, images: [] };
    if (!Array.isArray(m.content)) return { text: "", images: [] };
    const text = m.content.filter((p) => p.type === "text" && typeof p.text === "string").map((p) => p.text).join("\n");
    const images = m.content.flatMap((p, j) => {
      if (p.type !== "image_url") return [];
      return [{ url: typeof p.image_url === "string" ? p.image_url : p.image_url?.url ?? "", param: `messages[${i}].content[${j}].image_url.url` }];
    });
    return { text, images };
  }
  return null;
}

export interface OpenAiUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export const toOpenAiUsage = (u: Usage | undefined): OpenAiUsage => ({
  prompt_tokens: u?.input ?? 0,
  completion_tokens: u?.output ?? 0,
  total_tokens: u?.total || (u?.input ?? 0) + (u?.output ?? 0),
});

export function completion(id: string, model: string, created: number, content: string, usage: OpenAiUsage) {
  return {
    id, object: "chat.completion", created, model,
    choices: [{ index: 0, message: { role: "assistant", content, refusal: null }, logprobs: null, finish_reason: "stop" }],
    usage,
  };
}

export function chunk(id: string, model: string, created: number, delta: Record<string, unknown>, finishReason: string | null = null) {
  return { id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] };
}

export function usageChunk(id: string, model: string, created: number, usage: OpenAiUsage) {
  return { id, object: "chat.completion.chunk", created, model, choices: [], usage };
}

export type OpenAiErrorType = "invalid_request_error" | "authentication_error" | "not_found_error" | "server_error" | "timeout";

export function errorBody(message: string, type: OpenAiErrorType, code: string | null = null, param: string | null = null) {
  return { error: { message, type, param, code } };
}
