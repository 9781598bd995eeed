/**
 * `web_search`: a web search through the API configured in tools.web.search: Brave Search
 * (GET <baseUrl>/res/v1/web/search, key in X-Subscription-Token) or a SearXNG instance
 * (GET <baseUrl>/search?format=json). With provider "none" (the default) it answers with an
 * error that says how to configure one. Results are a compact numbered list (title, URL,
 * snippet). The API key never appears in a result: it is only sent as a header, and every text
 * this tool returns is scrubbed of it anyway. Runs in the tools actor's main thread.
 */
import { z } from "zod";
import { LurkError } from "../../../shared/contract/index.js";
import type { WebConfig } from "../../../shared/runtime/config.js";
import { cutUtf8, errorResult } from "../content.js";
import { defineTool, type ToolResult } from "../tool.js";
import { decodeEntities } from "../web/html.js";
import { trustedFetch } from "../web/http.js";
import { webContext } from "../web/context.js";

export const BRAVE_DEFAULT_BASE_URL = "https://api.search.brave.com";
const MAX_RESPONSE_BYTES = 2 * 1024 * 1024;
const SNIPPET_CHARS = 400;

export interface SearchHit {
  title: string;
  url: string;
  snippet: string;
}

const parameters = z.object({
  query: z.string().trim().min(1).max(1000).describe("What to search the web for"),
  count: z.number().int().min(1).max(20).optional().describe("How many results to return (default 5, at most 20)"),
});

export const NOT_CONFIGURED_MESSAGE = "web_search is not configured: no search API is set up. An administrator can enable it in config.json with "
  + "tools.web.search = { \"provider\": \"brave\", \"apiKey\": \"<Brave Search API key>\" } or "
  + "{ \"provider\": \"searxng\", \"baseUrl\": \"http://<your SearXNG instance>\" }. Until then, use web_fetch on a URL you know, or tell the user.";

function plain(html: unknown): string {
  return typeof html === "string" ? decodeEntities(html.replace(/<[^>]*>/g, "")).replace(/\s+/g, " ").trim() : "";
}

function endpoint(base: string, path: string): URL {
  return new URL(`${base.replace(/\/+$/, "")}${path}`);
}

/** The hits of a Brave or SearXNG JSON answer. */
export function parseHits(provider: "brave" | "searxng", data: unknown): SearchHit[] {
  const list = provider === "brave"
    ? (data as { web?: { results?: unknown } } | null)?.web?.results
    : (data as { results?: unknown } | null)?.results;
  if (!Array.isArray(list)) return [];
  return list.flatMap((item: Record<string, unknown> | null) => {
    if (typeof item !== "object" || item === null || typeof item.url !== "string") return [];
    const snippet = provider === "brave" ? item.description : item.content;
    return [{ title: plain(item.title) || item.url, url: item.url, snippet: plain(snippet).slice(0, SNIPPET_CHARS) }];
  });
}

async function search(web: WebConfig, query: string, count: number, signal: AbortSignal): Promise<SearchHit[]> {
  const cfg = web.search;
  let url: URL;
  const headers: Record<string, string> = { accept: "application/json" };
  if (cfg.provider === "brave") {
    if (!cfg.apiKey) throw new LurkError("TOOL_FAILED", "web_search uses Brave Search but tools.web.search.apiKey is not set");
    url = endpoint(cfg.baseUrl ?? BRAVE_DEFAULT_BASE_URL, "/res/v1/web/search");
    url.searchParams.set("q", query);
    url.searchParams.set("count", String(count));
    headers["x-subscription-token"] = cfg.apiKey;
  } else if (cfg.provider === "searxng") {
    if (!cfg.baseUrl) throw new LurkError("TOOL_FAILED", "web_search uses SearXNG but tools.web.search.baseUrl (the instance's URL) is not set");
    url = endpoint(cfg.baseUrl, "/search");
    url.searchParams.set("q", query);
    url.searchParams.set("format", "json");
  } else {
    throw new LurkError("TOOL_FAILED", NOT_CONFIGURED_MESSAGE);
  }
  const res = await trustedFetch(url, { maxBytes: MAX_RESPONSE_BYTES, signal, headers });
  if (res.status !== 200) {
    const hint = res.status === 401 || res.status === 403 ? " (check the API key)" : res.status === 429 ? " (rate-limited; try again later)" : "";
    throw new LurkError("TOOL_FAILED", `the ${cfg.provider} search API answered HTTP ${res.status}${hint}`);
  }
  if (res.truncated) throw new LurkError("TOOL_FAILED", `the ${cfg.provider} search API sent more than ${MAX_RESPONSE_BYTES} bytes`);
  let data: unknown;
  try {
    data = JSON.parse(res.body.toString("utf8"));
  } catch {
    throw new LurkError("TOOL_FAILED", `the ${cfg.provider} search API did not answer with JSON${cfg.provider === "searxng" ? " (is format=json enabled in the instance's settings.yml search.formats?)" : ""}`);
  }
  return parseHits(cfg.provider, data).slice(0, count);
}

export function formatHits(query: string, hits: SearchHit[]): string {
  if (hits.length === 0) return `No results for "${query}".`;
  const lines = [`Results for "${query}":`];
  hits.forEach((h, i) => {
    lines.push(`${i + 1}. ${h.title}`, `   ${h.url}`);
    if (h.snippet) lines.push(`   ${h.snippet}`);
  });
  return lines.join("\n");
}

export const webSearchTool = defineTool({
  name: "web_search",
  description: "Search the web. Returns a numbered list of results, each with a title, URL and snippet; "
    + "use web_fetch on a result's URL to read the page.",
  parameters,
  sideEffects: false,
  parallelSafe: true,
  groups: ["group:web"],
  runsIn: "process",
  async execute(args, ctx): Promise<ToolResult> {
    const { web, signal } = webContext(ctx, "web_search");
    const key = web.search.apiKey;
    const scrub = (text: string) => (key ? text.replaceAll(key, "[redacted]") : text);
    if (web.search.provider === "none") return errorResult("TOOL_FAILED", NOT_CONFIGURED_MESSAGE);
    try {
      const hits = await search(web, args.query, args.count ?? 5, signal);
      return { content: [{ type: "text", text: cutUtf8(scrub(formatHits(args.query, hits)), ctx.limits.outputCapBytes) }] };
    } catch (err) {
      const e = LurkError.from(err, "TOOL_FAILED");
      return errorResult(e.code, scrub(e.message));
    }
  },
});
