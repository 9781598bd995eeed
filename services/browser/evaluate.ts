/**
 * `browser_evaluate`: JavaScript in a tab (the serveTools gate has already had a human approve
 * this exact call). An expression is evaluated as is; a function (`() => ...`, `async () => ...`,
 * `function () {...}`) is called. The result comes back as JSON (undefined, BigInt, DOM nodes and
 * functions described), cut at `browser.maxSnapshotChars`; an exception in the page is a
 * TOOL_FAILED result; a script still running after `browser.navigationTimeoutMs` is TIMEOUT and
 * its tab is closed (a page stuck in a loop is of no further use).
 */
import { LurkError } from "../../shared/contract/index.js";
import { onTab, type ActionContext } from "./actions.js";
import type { EvaluateArgs } from "./schema.js";
import { cut, describeTab } from "./snapshot.js";

const FUNCTION_SOURCE = /^(async\s+)?(function\b|\([^)]*\)\s*=>|[A-Za-z_$][\w$]*\s*=>)/;

export function asScript(expression: string): string {
  const src = expression.trim();
  return FUNCTION_SOURCE.test(src) ? `(${src})()` : src;
}

function asJson(value: unknown): string {
  if (value === undefined) return "undefined";
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? `${v}n` : v), 2) ?? String(value);
}

export async function runEvaluate(a: EvaluateArgs, ctx: ActionContext): Promise<string> {
  return onTab(ctx, a.tabId, async (tab) => {
    let value: unknown;
    const limitMs = ctx.config.navigationTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        // a page stuck in the script cannot be used any more: its tab goes
        void tab.page.close({ runBeforeUnload: false }).catch(() => undefined);
        reject(new LurkError("TIMEOUT", `the script ran longer than ${limitMs} ms (browser.navigationTimeoutMs); tab ${tab.id} was closed`));
      }, limitMs);
    });
    try {
      value = await Promise.race([tab.page.evaluate(asScript(a.expression)), stuck]);
    } catch (err) {
      if (LurkError.is(err)) throw err;
      const text = ((err as Error)?.message ?? String(err)).split("\n")[0]!.replace(/^page\.evaluate: /, "").slice(0, 1000);
      if ((err as Error)?.name === "TimeoutError") throw new LurkError("TIMEOUT", `the script did not finish: ${text}`);
      throw new LurkError("TOOL_FAILED", `the script failed in tab ${tab.id}: ${text}`);
    } finally {
      clearTimeout(timer);
    }
    return `result in tab ${await describeTab(tab)}:\n${cut(asJson(value), ctx.config.maxSnapshotChars).text}`;
  });
}
